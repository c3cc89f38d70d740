"""Stateful operators (issue 3) against DuckDB and a pure-Python event-at-a-time loop.

    python bench/bench_stateful.py [--quick] [--events 10000000] [--repeat 3]

Data: ``--events`` events (ts in seconds, about four per second; key in [0, 1000); value),
in memory as Arrow, time-ordered. Workloads, each the same query in every engine:

* tumbling 1h count+sum grouped by key;
* hopping 1h window every 10 min, count (ungrouped);
* hopping 1h/10min sum grouped by key.

DuckDB runs in memory with ``threads=1`` on the same Arrow table; the Python loop is the
event-at-a-time engine of the Trill paper (dicts of running state), on ``--python-events``.
``--quick``: 2M events, 200k for the loop.
tidal's figure includes ingress from Arrow and collecting the result as Arrow. Each row also
records process CPU time (``cpu_s``, ``events_per_cpu_s``, printed as notes), steadier than wall
time when the machine is shared; the load average at the end is in the parameters.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections import defaultdict

import duckdb
import numpy as np
import pyarrow as pa
from harness import Results, add_common_args

import tidal
from tidal import agg

HOUR, TEN_MIN = 3600, 600


def make_data(n: int, seed: int = 7) -> pa.Table:
    rng = np.random.default_rng(seed)
    ts = np.sort(rng.integers(0, n // 4, n)).astype(np.int64)
    return pa.table({"ts": ts, "key": rng.integers(0, 1000, n), "value": rng.integers(0, 100, n)})


def python_tumbling(ts, key, value):
    out, cur, state = [], None, {}
    for t, k, v in zip(ts, key, value, strict=True):
        w = t - t % HOUR
        if w != cur:
            out.extend((cur, g, c, s) for g, (c, s) in state.items())
            cur, state = w, {}
        c_s = state.get(k)
        state[k] = (1, v) if c_s is None else (c_s[0] + 1, c_s[1] + v)
    out.extend((cur, g, c, s) for g, (c, s) in state.items())
    return out


def python_hopping_count(ts):
    counts = defaultdict(int)
    for t in ts:
        first = t - t % TEN_MIN
        for w in range(first - HOUR + TEN_MIN, first + 1, TEN_MIN):
            counts[w] += 1
    return counts


def python_hopping_sum(ts, key, value):
    sums = defaultdict(int)
    for t, k, v in zip(ts, key, value, strict=True):
        first = t - t % TEN_MIN
        for w in range(first - HOUR + TEN_MIN, first + 1, TEN_MIN):
            sums[(w, k)] += v
    return sums


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, default=None, help="events (default 10M, 2M with --quick)")
    ap.add_argument("--python-events", type=int, default=None, help="events for the Python loop (1M / 200k)")
    add_common_args(ap, "bench/results/stateful.json")
    args = ap.parse_args(argv)

    n = args.events or (2_000_000 if args.quick else 10_000_000)
    table = make_data(n)
    small_n = min(args.python_events or (200_000 if args.quick else 1_000_000), n)
    small = table.slice(0, small_n)
    py_cols = [small.column(c).to_pylist() for c in ("ts", "key", "value")]
    stream = tidal.from_arrow(table, time="ts")
    con = duckdb.connect()
    con.sql("SET threads=1")
    con.register("events", table)
    results = Results()

    def run(workload, engine, fn, events):
        cpu = []  # process CPU seconds per run: steadier than wall time on a shared machine

        def timed():
            start = time.process_time()
            fn()
            cpu.append(time.process_time() - start)

        row = results.run(workload, engine, timed, events, args.repeat)
        row["cpu_s"] = statistics.median(cpu)
        row["events_per_cpu_s"] = events / row["cpu_s"] if row["cpu_s"] > 0 else float("inf")

    tumbling = stream.tumbling_window(HOUR).group_aggregate("key", agg.count(), agg.sum("value"))
    tumbling.to_arrow()  # compile the kernels once
    hop_count = stream.hopping_window(HOUR, TEN_MIN).aggregate(agg.count())
    hop_sum = stream.hopping_window(HOUR, TEN_MIN).group_aggregate("key", agg.sum("value"))
    hop_count.to_arrow()

    # correctness spot check: tidal and DuckDB agree on the tumbling query
    got = tumbling.to_arrow()
    want = con.sql(
        f"SELECT ts - ts % {HOUR} AS w, key, count(*) AS c, sum(value) AS s FROM events GROUP BY ALL"
    ).to_arrow_table()
    assert got.num_rows == want.num_rows and pc_sum(got, "count") == pc_sum(want, "c"), "tidal and DuckDB disagree"

    name = "tumbling 1h count+sum by key"
    run(name, "tidal", lambda: tumbling.to_arrow(), n)
    run(
        name,
        "duckdb",
        lambda: con.sql(
            f"SELECT ts - ts % {HOUR} AS w, key, count(*), sum(value) FROM events GROUP BY ALL"
        ).to_arrow_table(),
        n,
    )
    run(name, "python loop", lambda: python_tumbling(*py_cols), small_n)

    name = "hopping 1h/10min count"
    run(name, "tidal", lambda: hop_count.to_arrow(), n)
    hop_sql = (
        "SELECT w, {aggs} FROM (SELECT ts - ts % 600 - k * 600 AS w, key, value FROM events, range(6) r(k)) "
        "GROUP BY ALL"
    )
    run(name, "duckdb", lambda: con.sql(hop_sql.format(aggs="count(*)")).to_arrow_table(), n)
    run(name, "python loop", lambda: python_hopping_count(py_cols[0]), small_n)

    name = "hopping 1h/10min sum by key"
    run(name, "tidal", lambda: hop_sum.to_arrow(), n)
    run(
        name,
        "duckdb",
        lambda: con.sql(hop_sql.replace("SELECT w,", "SELECT w, key,").format(aggs="sum(value)")).to_arrow_table(),
        n,
    )
    run(name, "python loop", lambda: python_hopping_sum(*py_cols), small_n)

    by_cpu = {(r["workload"], r["engine"]): r["events_per_cpu_s"] for r in results.rows}
    for r in results.rows:
        mine = by_cpu[(r["workload"], "tidal")]
        results.note(
            f"CPU time: {r['workload']}, {r['engine']}: {r['events_per_cpu_s']:,.0f} events/s "
            f"(tidal/peer {mine / r['events_per_cpu_s']:.2f})"
        )
    results.report(args.out, events=n, python_events=small_n, quick=args.quick, load_average=os.getloadavg())
    return 0


def pc_sum(table, column: str) -> int:
    return int(pa.compute.sum(table.column(column)).as_py())


if __name__ == "__main__":
    sys.exit(main())
