"""The A-then-B temporal join (Trill paper, query 7) against DuckDB and a pure-Python loop.

    python bench/bench_joins.py [--events N] [--python-events N] [--out bench/results/joins.json]

Data: N events (ts in seconds over 30 days, key = user in [0, 1000), value = term in [0, 100)),
in memory as Arrow. Query: for each user, every search for a term of set A (value < 25)
followed by a search for a term of set B (25 <= value < 50) within one hour. In tidal: the A
events get a one-hour lifetime and are joined on the user with the B events (points); each
output is one (A, B) pair. DuckDB runs the same query as a band join (threads=1); the Python
loop is event at a time with a per-user queue of recent A events. All three must agree on the
number of pairs (the Python loop on a prefix of the data). Throughput is input events per
second of the median of --repeat runs.

Note: tidal runs this query as its *window join* (``explain()`` names it): the A side has a
constant duration and the B side is points, so each B search walks its user's recent A
searches, and the pairs' payload columns are written by that walk. The machine is often
shared: compare tidal with the Python loop measured in the same run (the ratio column).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from collections import deque
from pathlib import Path

import numpy as np
import pyarrow as pa

import tidal

HOUR = 3600


def timed(fn, repeat: int):
    """Median wall seconds, their spread, median CPU seconds of this process, and fn's value."""
    runs, cpu, value = [], [], None
    for _ in range(repeat):
        start, start_cpu = time.perf_counter(), time.process_time()
        value = fn()
        runs.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return statistics.median(runs), max(runs) - min(runs), statistics.median(cpu), value


def make_data(n: int, seed: int = 5) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table(
        {
            "ts": (np.arange(n, dtype=np.int64) * (30 * 24 * HOUR)) // max(n, 1),
            "key": rng.integers(0, 1000, n),
            "value": rng.integers(0, 100, n),
        }
    )


def tidal_query(table: pa.Table, result: bool = False):
    shared = tidal.from_arrow(table, time="ts").multicast()
    a = shared.where(lambda e: e.value < 25).alter_duration(HOUR)
    b = shared.where(lambda e: e.value >= 25 and e.value < 50)
    if result:  # a two-row result lambda: compiled to columnar expressions
        return a.join(b, "key", "key", lambda x, y: {"key": x.key, "a": x.value, "b": y.value, "gap": y.ts - x.ts})
    return a.join(b, "key", "key")


def python_loop(ts, key, value) -> int:
    """Event at a time: each user's A searches of the last hour in a deque; each B pairs with them.

    A B search pairs with an A search at the same instant too, so the B searches of one
    instant are held until that instant's A searches are in.
    """
    recent: dict[int, deque] = {}
    held: list = []
    out = []

    def pair_held():
        for t, k, v in held:
            q = recent.get(k)
            if not q:
                continue
            while q and q[0][0] + HOUR <= t:
                q.popleft()
            for at, av in q:
                out.append((t, k, at, av, v))
        held.clear()

    now = None
    for t, k, v in zip(ts, key, value, strict=True):
        if t != now:
            pair_held()
            now = t
        if v < 25:
            recent.setdefault(k, deque()).append((t, v))
        elif v < 50:
            held.append((t, k, v))
    pair_held()
    return len(out)


DUCKDB_SQL = """
SELECT count(*) FROM t AS a JOIN t AS b
  ON a.key = b.key AND b.ts >= a.ts AND b.ts < a.ts + 3600
WHERE a.value < 25 AND b.value >= 25 AND b.value < 50
"""


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, default=10_000_000)
    ap.add_argument("--python-events", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default="bench/results/joins.json")
    ap.add_argument("--no-duckdb", action="store_true", help="skip DuckDB (its band join takes minutes at 10M)")
    args = ap.parse_args(argv)

    n = args.events
    table = make_data(n)
    query = tidal_query(table)
    print(query.explain())
    tidal_query(table.slice(0, 1_500_000)).count()  # compile the kernels (the lambdas fuse after 1M events)

    results = []

    def record(engine, seconds, spread, cpu, events, pairs):
        results.append(
            {
                "workload": "A then B within 1h per user (join)",
                "engine": engine,
                "seconds": seconds,
                "spread_s": spread,
                "cpu_seconds": cpu,
                "events": events,
                "events_per_s": events / seconds,
                "events_per_cpu_s": events / cpu,
                "pairs": pairs,
            }
        )
        rates = f"{events / seconds:>14,.0f} events/s (wall){events / cpu:>14,.0f} /cpu-s"
        print(f"{engine:<22}{rates}{pairs:>12,}", flush=True)

    seconds, spread, cpu, pairs = timed(lambda: tidal_query(table).count(), args.repeat)
    record("tidal", seconds, spread, cpu, n, pairs)
    seconds, spread, cpu, result_pairs = timed(lambda: tidal_query(table, result=True).count(), args.repeat)
    record("tidal, result lambda", seconds, spread, cpu, n, result_pairs)

    try:
        if args.no_duckdb:
            raise ImportError
        import duckdb

        con = duckdb.connect()
        con.execute("SET threads=1")
        con.register("t", table)
        seconds, spread, cpu, duck_pairs = timed(lambda: con.execute(DUCKDB_SQL).fetchone()[0], args.repeat)
        record("duckdb (threads=1)", seconds, spread, cpu, n, duck_pairs)
        if duck_pairs != pairs:
            raise SystemExit(f"tidal found {pairs} pairs but DuckDB {duck_pairs}")
    except ImportError:
        print("duckdb skipped (not installed, or --no-duckdb)")

    small = table.slice(0, args.python_events)
    cols = [small.column(c).to_pylist() for c in ("ts", "key", "value")]
    seconds, spread, cpu, py_pairs = timed(lambda: python_loop(*cols), 1)
    record("python loop", seconds, spread, cpu, small.num_rows, py_pairs)
    small_pairs = tidal_query(small).count()
    if small_pairs != py_pairs:
        raise SystemExit(f"tidal found {small_pairs} pairs on the prefix but the Python loop {py_pairs}")

    # the machine is shared: CPU seconds of this (single-threaded) process are the fairer clock
    tidal_rate, tidal_cpu_rate = results[0]["events_per_s"], results[0]["events_per_cpu_s"]
    print(f"{'engine':<22}{'events/s':>14}{'events/cpu-s':>14}{'tidal/peer (wall)':>19}{'(cpu)':>8}")
    for r in results:
        r["tidal_ratio"] = tidal_rate / r["events_per_s"]
        r["tidal_ratio_cpu"] = tidal_cpu_rate / r["events_per_cpu_s"]
        print(
            f"{r['engine']:<22}{r['events_per_s']:>14,.0f}{r['events_per_cpu_s']:>14,.0f}"
            f"{r['tidal_ratio']:>19.2f}{r['tidal_ratio_cpu']:>8.2f}"
        )
    out = {
        "machine": {
            "python": sys.version.split()[0],
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "numpy": np.__version__,
            "pyarrow": pa.__version__,
        },
        "events": n,
        "results": results,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=2))
    print(f"written {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
