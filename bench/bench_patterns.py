"""Benchmark: row pattern matching (``Stream.detect``, SQL ``MATCH_RECOGNIZE``), A followed by B.

Usage::

    python bench/bench_patterns.py [--quick] [--events N] [--keys K] [--repeat R] [--out bench/results/patterns.json]

Data: N point events (ts strictly increasing by 1..3 ticks, key in [0, K), v in [0, 100)), in memory
as Arrow. Workloads, all per key, ``AFTER MATCH SKIP PAST LAST ROW``, ``WITHIN 1000`` ticks:

* ``a_then_b``: ``PATTERN (A B)``, A: ``v < 10``, B: ``v >= 90`` (conditions on the row alone: one
  columnar kernel per batch, then the automaton per event), measures ``first(A.ts)`` and ``last(B.v)``.
  Engines: tidal (``detect``), tidal-sql (``MATCH_RECOGNIZE`` over a Parquet file, including reading
  and sorting it) and a hand-written Python loop that finds the same matches (one dict per key).
* ``a_then_rising_b``: ``PATTERN (A B+)``, B: ``B.v > A.v`` (a condition that reads the A row:
  evaluated per partial match).

Throughput is input events per second of the median run, on one core.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import Results, add_common_args  # noqa: E402

import tidal  # noqa: E402

WITHIN = 1000


def make_data(n: int, keys: int, seed: int = 7) -> pa.Table:
    rng = np.random.default_rng(seed)
    ts = np.cumsum(rng.integers(1, 4, n)).astype(np.int64)
    return pa.table({"ts": ts, "key": rng.integers(0, keys, n), "v": rng.integers(0, 100, n)})


def a_then_b(table: pa.Table) -> int:
    s = tidal.from_arrow(table, time="ts")
    out = s.detect(
        "A B",
        {"A": lambda e: e.v < 10, "B": lambda e: e.v >= 90},
        {"start": "first(A.ts)", "b": "last(B.v)"},
        within=WITHIN,
        partition_by="key",
    )
    return out.count()


def a_then_rising_b(table: pa.Table) -> int:
    s = tidal.from_arrow(table, time="ts")
    out = s.detect(
        "A B+",
        {"A": lambda e: e.v < 10, "B": lambda e, A: e.v > A.v},
        {"start": "first(A.ts)", "n": "count(B)"},
        within=WITHIN,
        partition_by="key",
    )
    return out.count()


def sql_a_then_b(path: str) -> int:
    from tidal.sql import plan

    text = f"""SELECT * FROM '{path}' MATCH_RECOGNIZE (
        PARTITION BY key ORDER BY ts MEASURES FIRST(A.ts) AS start, LAST(B.v) AS b
        AFTER MATCH SKIP PAST LAST ROW PATTERN (A B) WITHIN INTERVAL '{WITHIN}' MICROSECOND
        DEFINE A AS v < 10, B AS v >= 90)"""
    return plan(text).result().num_rows


def python_a_then_b(table: pa.Table) -> int:
    """The same matches by hand: per key, the previous row when it was an A (a match needs B right after)."""
    ts, key, v = (table.column(c).to_pylist() for c in ("ts", "key", "v"))
    pending: dict = {}
    found = 0
    for t, k, x in zip(ts, key, v, strict=True):
        a = pending.pop(k, None)
        if a is not None and x >= 90 and t - a < WITHIN:
            found += 1
            continue  # past the last row: this B starts nothing
        if x < 10:
            pending[k] = t
    return found


def main(argv=None) -> None:
    ap = add_common_args(argparse.ArgumentParser(description=__doc__), "bench/results/patterns.json")
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--keys", type=int, default=1000)
    args = ap.parse_args(argv)
    n = 200_000 if args.quick else args.events
    table = make_data(n, args.keys)
    counts = {"tidal": a_then_b(table), "python": python_a_then_b(table)}
    res = Results()
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "events.parquet")
        pq.write_table(table, path)
        counts["tidal-sql"] = sql_a_then_b(path)
        if len(set(counts.values())) != 1:
            raise SystemExit(f"engines disagree on the matches: {counts}")
        res.note(f"a_then_b: {counts['tidal']:,} matches in {n:,} events over {args.keys} keys")
        res.run("a_then_b", "tidal", lambda: a_then_b(table), n, args.repeat)
        res.run("a_then_b", "tidal-sql", lambda: sql_a_then_b(path), n, args.repeat)
        res.run("a_then_b", "python-loop", lambda: python_a_then_b(table), n, args.repeat)
    res.run("a_then_rising_b", "tidal", lambda: a_then_rising_b(table), n, args.repeat)
    res.report(args.out, events=n, keys=args.keys, within=WITHIN)


if __name__ == "__main__":
    main()
