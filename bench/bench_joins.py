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
    runs, value = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        value = fn()
        runs.append(time.perf_counter() - start)
    return statistics.median(runs), max(runs) - min(runs), value


def make_data(n: int, seed: int = 5) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table(
        {
            "ts": (np.arange(n, dtype=np.int64) * (30 * 24 * HOUR)) // max(n, 1),
            "key": rng.integers(0, 1000, n),
            "value": rng.integers(0, 100, n),
        }
    )


def tidal_query(table: pa.Table):
    shared = tidal.from_arrow(table, time="ts").multicast()
    a = shared.where(lambda e: e.value < 25).alter_duration(HOUR)
    b = shared.where(lambda e: e.value >= 25 and e.value < 50)
    return a.join(b, "key", "key")


def python_loop(ts, key, value) -> int:
    """Event at a time: each user's A searches of the last hour in a deque; each B pairs with them."""
    recent: dict[int, deque] = {}
    out = []
    for t, k, v in zip(ts, key, value, strict=True):
        if v < 25:
            recent.setdefault(k, deque()).append((t, v))
        elif v < 50:
            q = recent.get(k)
            if not q:
                continue
            while q and q[0][0] + HOUR <= t:
                q.popleft()
            for at, av in q:
                out.append((t, k, at, av, v))
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
    args = ap.parse_args(argv)

    n = args.events
    table = make_data(n)
    query = tidal_query(table)
    print(query.explain())
    tidal_query(table.slice(0, 200_000)).count()  # compile the kernels before timing

    results = []

    def record(engine, seconds, spread, events, pairs):
        results.append(
            {
                "workload": "A then B within 1h per user (join)",
                "engine": engine,
                "seconds": seconds,
                "spread_s": spread,
                "events": events,
                "events_per_s": events / seconds,
                "pairs": pairs,
            }
        )

    seconds, spread, pairs = timed(lambda: tidal_query(table).count(), args.repeat)
    record("tidal", seconds, spread, n, pairs)

    try:
        import duckdb

        con = duckdb.connect()
        con.execute("SET threads=1")
        con.register("t", table)
        seconds, spread, duck_pairs = timed(lambda: con.execute(DUCKDB_SQL).fetchone()[0], args.repeat)
        record("duckdb (threads=1)", seconds, spread, n, duck_pairs)
        if duck_pairs != pairs:
            raise SystemExit(f"tidal found {pairs} pairs but DuckDB {duck_pairs}")
    except ImportError:
        print("duckdb not installed: skipped")

    small = table.slice(0, args.python_events)
    cols = [small.column(c).to_pylist() for c in ("ts", "key", "value")]
    seconds, spread, py_pairs = timed(lambda: python_loop(*cols), max(1, args.repeat - 2))
    record("python loop", seconds, spread, small.num_rows, py_pairs)
    small_pairs = tidal_query(small).count()
    if small_pairs != py_pairs:
        raise SystemExit(f"tidal found {small_pairs} pairs on the prefix but the Python loop {py_pairs}")

    tidal_rate = results[0]["events_per_s"]
    print(f"{'engine':<22}{'events/s':>16}{'pairs':>14}{'tidal/peer':>12}")
    for r in results:
        r["tidal_ratio"] = tidal_rate / r["events_per_s"]
        print(f"{r['engine']:<22}{r['events_per_s']:>16,.0f}{r['pairs']:>14,}{r['tidal_ratio']:>12.2f}")
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
