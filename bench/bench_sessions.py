"""Benchmark: session windows, distinct and stitch against DuckDB and a Python event-at-a-time loop.

Usage::

    python bench/bench_sessions.py [--events N] [--repeat R] [--out bench/results/sessions.json]

Data: N point events (ts strictly increasing by 1..3 ticks, key in [0, 1000), value), in memory
as Arrow. Queries, each run by tidal, by DuckDB (in memory, threads=1) where SQL can say it,
and by a plain Python loop over the rows:

* ``session_count``: per key, sessions with a timeout of 2000 ticks; count and sum per session
  (tidal: ``group_apply(key, session_window(2000).aggregate(count, sum))``; DuckDB: the classic
  gap-and-island window query; Python: one dict entry per key).
* ``session_window``: the lifetime change alone (each event gets its session's lifetime).
* ``distinct``: keys alive in a 100-tick sliding window, each once per snapshot.
* ``stitch``: the same lifetimes coalesced per key.

Throughput is input events per second of the median run; the single-threaded figures are
comparable (tidal runs on one core).
"""

from __future__ import annotations

import argparse
import heapq
import json
import os
import platform
import statistics
import time

import numpy as np
import pyarrow as pa

import tidal
from tidal import agg

TIMEOUT = 2000
WINDOW = 100


def make_data(n: int, seed: int = 7) -> pa.Table:
    rng = np.random.default_rng(seed)
    ts = np.cumsum(rng.integers(1, 4, n)).astype(np.int64)
    return pa.table({"ts": ts, "key": rng.integers(0, 1000, n), "value": rng.integers(0, 100, n)})


def timed(fn, repeat: int) -> float:
    runs = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - start)
    return statistics.median(runs)


# -- tidal --------------------------------------------------------------------------------------------
def tidal_queries(table: pa.Table) -> dict:
    s = tidal.from_arrow(table, time="ts")
    keys = s.select(lambda e: {"key": e.key}).alter_duration(WINDOW)
    return {
        "session_count": lambda: s.group_apply(
            "key", lambda g: g.session_window(TIMEOUT).aggregate(agg.count(), agg.sum("value"))
        ).count(),
        "session_window": lambda: s.group_apply("key", lambda g: g.session_window(TIMEOUT)).count(),
        "distinct": lambda: keys.distinct().count(),
        "stitch": lambda: keys.stitch().count(),
    }


# -- DuckDB ------------------------------------------------------------------------------------------
SESSION_SQL = f"""
WITH flagged AS (
  SELECT key, ts, value,
         CASE WHEN ts - lag(ts) OVER (PARTITION BY key ORDER BY ts) < {TIMEOUT} THEN 0 ELSE 1 END AS fresh
  FROM events),
numbered AS (
  SELECT key, ts, value, sum(fresh) OVER (PARTITION BY key ORDER BY ts ROWS UNBOUNDED PRECEDING) AS sid
  FROM flagged)
SELECT key, min(ts) AS start, max(ts) + {TIMEOUT} AS "end", count(*) AS count, sum(value) AS sum
FROM numbered GROUP BY key, sid
"""

SESSION_LIFETIME_SQL = SESSION_SQL.replace(
    f'SELECT key, min(ts) AS start, max(ts) + {TIMEOUT} AS "end", count(*) AS count, sum(value) AS sum\n'
    "FROM numbered GROUP BY key, sid",
    f'SELECT key, ts, value, min(ts) OVER w AS start, max(ts) OVER w + {TIMEOUT} AS "end"\n'
    "FROM numbered WINDOW w AS (PARTITION BY key, sid)",
)


def duckdb_queries(table: pa.Table) -> dict:
    try:
        import duckdb
    except ImportError:
        return {}
    con = duckdb.connect(config={"threads": 1})
    con.register("events", table)
    return {
        "session_count": lambda: con.execute(f"SELECT count(*) FROM ({SESSION_SQL})").fetchone(),
        # sum the lifetimes so that the window functions cannot be optimised away
        "session_window": lambda: con.execute(f'SELECT sum("end" - start) FROM ({SESSION_LIFETIME_SQL})').fetchone(),
    }


# -- a Python loop, one event at a time -------------------------------------------------------------------
def python_queries(table: pa.Table) -> dict:
    ts, key, value = (table.column(c).to_pylist() for c in ("ts", "key", "value"))

    def session_count():
        open_: dict = {}
        out = []
        for t, k, v in zip(ts, key, value, strict=True):
            cur = open_.get(k)
            if cur is not None and t < cur[1] + TIMEOUT:
                cur[1] = t
                cur[2] += 1
                cur[3] += v
            else:
                if cur is not None:
                    out.append((k, cur[0], cur[1] + TIMEOUT, cur[2], cur[3]))
                open_[k] = [t, t, 1, v]
        out.extend((k, c[0], c[1] + TIMEOUT, c[2], c[3]) for k, c in open_.items())
        return len(out)

    def session_window():
        open_: dict = {}
        out = []
        for t, k, v in zip(ts, key, value, strict=True):
            cur = open_.get(k)
            if cur is not None and t < cur[1] + TIMEOUT:
                cur[1] = t
                cur[2].append((t, v))
            else:
                if cur is not None:
                    out.extend((cur[0], cur[1] + TIMEOUT, k, e) for e in cur[2])
                open_[k] = [t, t, [(t, v)]]
        for k, c in open_.items():
            out.extend((c[0], c[1] + TIMEOUT, k, e) for e in c[2])
        return len(out)

    def distinct():
        count: dict = {}
        ends: list = []
        out = 0
        for t, k in zip(ts, key, strict=True):
            while ends and ends[0][0] <= t:
                _, old = heapq.heappop(ends)
                count[old] -= 1
                out += count[old] == 0
            count[k] = count.get(k, 0) + 1
            out += count[k] == 1
            heapq.heappush(ends, (t + WINDOW, k))
        return out

    return {"session_count": session_count, "session_window": session_window, "distinct": distinct}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=2_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", default="bench/results/sessions.json")
    args = parser.parse_args()
    table = make_data(args.events)
    engines = {"tidal": tidal_queries(table), "duckdb": duckdb_queries(table), "python": python_queries(table)}
    results: dict = {}
    for engine, queries in engines.items():
        for name, fn in queries.items():
            fn()  # warm up: numba compilation, DuckDB plan cache
            seconds = timed(fn, args.repeat if engine != "python" else 1)
            results.setdefault(name, {})[engine] = {"seconds": seconds, "events_per_s": args.events / seconds}
            rate = args.events / seconds / 1e6
            print(f"{name:15s} {engine:7s} {rate:8.2f} M events/s  ({seconds:.3f} s)", flush=True)
    for name, row in results.items():
        base = row["tidal"]["events_per_s"]
        ratios = {f"tidal/{e}": base / r["events_per_s"] for e, r in row.items() if e != "tidal"}
        row["ratios"] = ratios
        print(f"{name:15s} " + "  ".join(f"{k} = {v:.1f}x" for k, v in ratios.items()))
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(
            {"events": args.events, "machine": platform.platform(), "cpu_count": os.cpu_count(), "results": results},
            f,
            indent=2,
        )


if __name__ == "__main__":
    main()
