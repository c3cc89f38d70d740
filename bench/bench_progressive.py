"""Progressive relational queries (Trill paper section 7.4): time to first result and total time.

    python bench/bench_progressive.py [--quick] [--events N] [--repeat 3] [--out bench/results/progressive.json]

Data: a search log of (user, term) rows, 10M rows (1M with ``--quick``), 10,000 terms with a
Zipf-like popularity. Query: the popularity of each term, ``count(*) GROUP BY term``.

A progressive run reads the log in P equal slices: the rows of slice i are start edges at time i
(progress point i), with a punctuation after each slice, so the grouped running count emits an
updated answer (retraction + insertion per changed term) at every progress point. P = 1 is the
plain relational query: one answer at the end. For each P the figure is the time to the first
output batch (``subscribe``) and the total time; the final answer is checked against DuckDB's.
DuckDB (threads=1) has no progressive mode: its one answer comes at the end, so its first-result
time is its total time.
"""

from __future__ import annotations

import argparse
import sys
import time

import duckdb
import numpy as np
import pyarrow as pa
from harness import Results, add_common_args

import tidal
from tidal import agg

TERMS = 10_000


def make_log(n: int, seed: int = 4) -> pa.Table:
    rng = np.random.default_rng(seed)
    term = np.minimum(rng.zipf(1.3, n) - 1, TERMS - 1).astype(np.int64)
    return pa.table({"user": rng.integers(0, 1_000_000, n), "term": term})


def progressive_table(log: pa.Table, points: int) -> pa.Table:
    n = log.num_rows
    progress = (np.arange(n, dtype=np.int64) * points) // n
    return log.append_column("progress", pa.array(progress))


def run_progressive(table: pa.Table, points: int) -> tuple[float, float, dict]:
    """(seconds to the first output batch, total seconds, final count per term)."""
    # a punctuation after every slice (every n/P rows) makes each progress point's answer leave at once
    every = -(-table.num_rows // points)
    stream = tidal.from_arrow(table, time="progress", kind="start", punctuate_every_events=every)
    query = stream.group_aggregate("term", agg.count())
    first: list[float] = []
    outputs: list[pa.RecordBatch] = []

    def on_batch(batch):
        if not first:
            first.append(time.perf_counter())
        outputs.append(batch)

    start = time.perf_counter()
    query.subscribe(on_batch)
    total = time.perf_counter() - start
    final = {}
    for batch in outputs:  # the last start edge per term holds its final count
        live = batch.column("other_time").to_numpy() == tidal.INFINITY
        for term, count in zip(
            batch.column("term").to_numpy()[live], batch.column("count").to_numpy()[live], strict=True
        ):
            final[int(term)] = int(count)
    return first[0] - start, total, final


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=None, help="rows (default 10M, 1M with --quick)")
    ap.add_argument("--points", default=None, help="comma-separated progress point counts (default 1,10,100,1000)")
    add_common_args(ap, "bench/results/progressive.json")
    args = ap.parse_args(argv)
    n = args.events or (1_000_000 if args.quick else 10_000_000)
    points = [int(p) for p in args.points.split(",")] if args.points else [1, 10, 100, 1000]
    log = make_log(n)
    con = duckdb.connect()
    con.execute("SET threads=1")
    con.register("log", log)
    sql = "SELECT term, count(*) AS c FROM log GROUP BY term"
    want = dict(con.execute(sql).fetchall())
    results = Results()
    run_progressive(progressive_table(log.slice(0, 100_000), 10), 10)  # compile the kernels

    firsts, totals = [], []
    for p in points:
        table = progressive_table(log, p)
        runs = [run_progressive(table, p) for _ in range(max(1, args.repeat))]
        if runs[0][2] != want:
            raise SystemExit(f"P={p}: tidal's final counts differ from DuckDB's")
        first_runs = sorted(r[0] for r in runs)
        total_runs = sorted(r[1] for r in runs)
        first, total = first_runs[len(runs) // 2], total_runs[len(runs) // 2]
        firsts.append(first)
        totals.append(total)
        results.record(
            f"progressive count by term, {p} progress points",
            "tidal",
            total,
            total_runs[-1] - total_runs[0],
            n,
            total_runs,
            first_result_s=first,
            first_result_runs_s=first_runs,
        )
    duck = results.run(
        "progressive count by term (DuckDB: one answer)",
        "duckdb",
        lambda: con.sql(sql).to_arrow_table(),
        n,
        args.repeat,
    )
    results.add_series(
        "progressive: time to first result and total time",
        "progress points (result sets)",
        "seconds",
        points,
        {
            "tidal first result": firsts,
            "tidal total": totals,
            "duckdb (one answer)": [duck["seconds"]] * len(points),
        },
        log_x=True,
    )
    results.note(
        f"first result {firsts[0] / firsts[-1]:.1f}x sooner with {points[-1]} progress points than with {points[0]}; "
        f"total time {totals[-1] / totals[0]:.2f}x"
    )
    results.report(args.out, events=n, terms=TERMS, points=points, quick=args.quick)
    return 0


if __name__ == "__main__":
    sys.exit(main())
