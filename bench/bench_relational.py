"""Relational queries (Trill paper section 7.3) against DuckDB and Polars at the same thread count.

    python bench/bench_relational.py [--quick] [--rows N] [--repeat 3] [--out bench/results/relational.json]

Data: GenData(n, d, m) as in the paper: table T1 of n rows with two int64 columns, C1 sorted with
d distinct values and C2 holding the same d values in random order; table T2 of m rows whose C1
covers the d values (the rest random), C2 random. Sizes keep the paper's proportions
(600M, 20M, 150M): d = n / 30, m = n / 4. Default n = 20M, 2M with ``--quick``.

tidal runs relational queries on the fluent API by reading rows as start edges at time 0: a
running aggregate's final snapshot is the relational answer. Queries, the same in every engine:

* filter: rows with C2 % 100 < 30, counted at egress;
* sum: sum(C2); count: count(*);
* select: C1 + C2 for every row, materialised as Arrow;
* grouped sum on the sorted column (GROUP BY C1) and on the unsorted one (GROUP BY C2);
* distinct count: COUNT(DISTINCT C2) in 8 groups (C1 % 8), each of n / 8 rows;
* equi-join T1 with T2 on C1, result rows counted (needs ``Stream.join``; skipped with a note
  when this branch has no join operator).

DuckDB runs in memory with ``threads=1`` and Polars with ``POLARS_MAX_THREADS=1`` (tidal runs on
one core). Each engine's answer is checked equal to DuckDB's before timing. Throughput is input
rows per second of the median of ``--repeat`` runs.
"""

from __future__ import annotations

import argparse
import os
import sys

# Polars sizes its thread pool when imported: one thread, as for DuckDB and tidal.
os.environ.setdefault("POLARS_MAX_THREADS", "1")

import duckdb  # noqa: E402
import numpy as np  # noqa: E402
import polars as pl  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.compute as pc  # noqa: E402
from harness import Results, add_common_args  # noqa: E402

import tidal  # noqa: E402
from tidal import agg  # noqa: E402


def gen_data(n: int, d: int, m: int, seed: int = 11) -> tuple[pa.Table, pa.Table]:
    """GenData(n, d, m): T1 (C1 sorted, d distinct; C2 the same values shuffled) and T2 (m rows)."""
    rng = np.random.default_rng(seed)
    values = rng.choice(np.arange(d * 8, dtype=np.int64), d, replace=False)
    values.sort()
    c1 = np.repeat(values, np.diff(np.linspace(0, n, d + 1).astype(np.int64)))
    c2 = rng.permutation(c1)
    t2_c1 = np.concatenate([values, rng.integers(0, d * 8, m - d)])
    t2_c1.sort()
    t1 = pa.table({"t": np.zeros(n, np.int64), "c1": c1, "c2": c2})
    t2 = pa.table({"t": np.zeros(m, np.int64), "c1": t2_c1, "c2": rng.integers(0, 1 << 40, m)})
    return t1, t2


def scalar(table: pa.Table, column: str) -> int:
    return int(table.column(column)[0].as_py())


def grouped(table: pa.Table, key: str, value: str) -> dict:
    return dict(zip(table.column(key).to_pylist(), table.column(value).to_pylist(), strict=True))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=None, help="n, the rows of T1 (default 20M, 2M with --quick)")
    add_common_args(ap, "bench/results/relational.json")
    args = ap.parse_args(argv)
    n = args.rows or (2_000_000 if args.quick else 20_000_000)
    d, m = max(1, n // 30), max(1, n // 4)
    t1, t2 = gen_data(n, d, m)
    results = Results()

    con = duckdb.connect()
    con.execute("SET threads=1")
    con.register("t1", t1)
    con.register("t2", t2)
    df1, df2 = pl.from_arrow(t1), pl.from_arrow(t2)
    s1 = tidal.from_arrow(t1, time="t", kind="start")
    s2 = tidal.from_arrow(t2, time="t", kind="start")

    def duck(sql):
        return lambda: con.sql(sql).to_arrow_table()

    # Each query: (name, events, tidal fn, duckdb fn, polars fn, answer extractor per engine)
    queries = [
        (
            "filter",
            n,
            lambda: s1.where(lambda e: e.c2 % 100 < 30).count(),
            lambda: con.execute("SELECT count(*) FROM t1 WHERE c2 % 100 < 30").fetchall()[0][0],
            lambda: df1.filter(pl.col("c2") % 100 < 30).height,
        ),
        (
            "sum",
            n,
            lambda: scalar(s1.aggregate(agg.sum("c2")).to_arrow(), "sum"),
            lambda: con.execute("SELECT sum(c2) FROM t1").fetchall()[0][0],
            lambda: df1.select(pl.col("c2").sum()).item(),
        ),
        (
            "count",
            n,
            lambda: scalar(s1.aggregate(agg.count()).to_arrow(), "count"),
            lambda: con.execute("SELECT count(*) FROM t1").fetchall()[0][0],
            lambda: df1.select(pl.len()).item(),
        ),
        (
            "select c1 + c2",
            n,
            lambda: pc.sum(s1.select(lambda e: {"x": e.c1 + e.c2}).to_arrow().column("x")).as_py(),
            lambda: pc.sum(duck("SELECT c1 + c2 AS x FROM t1")().column("x")).as_py(),
            lambda: df1.select((pl.col("c1") + pl.col("c2")).alias("x")).to_series().sum(),
        ),
        (
            "grouped sum by sorted c1",
            n,
            lambda: grouped(s1.group_aggregate("c1", agg.sum("c2")).to_arrow(), "c1", "sum"),
            lambda: grouped(duck("SELECT c1, sum(c2) AS s FROM t1 GROUP BY c1")(), "c1", "s"),
            lambda: grouped(df1.group_by("c1").agg(pl.col("c2").sum().alias("s")).to_arrow(), "c1", "s"),
        ),
        (
            "grouped sum by unsorted c2",
            n,
            lambda: grouped(s1.group_aggregate("c2", agg.sum("c1")).to_arrow(), "c2", "sum"),
            lambda: grouped(duck("SELECT c2, sum(c1) AS s FROM t1 GROUP BY c2")(), "c2", "s"),
            lambda: grouped(df1.group_by("c2").agg(pl.col("c1").sum().alias("s")).to_arrow(), "c2", "s"),
        ),
        (
            "count distinct c2 by c1 % 8",
            n,
            lambda: grouped(
                s1.select(lambda e: {"g": e.c1 % 8, "c2": e.c2})
                .group_aggregate("g", cd=agg.count_distinct("c2"))
                .to_arrow(),
                "g",
                "cd",
            ),
            lambda: grouped(duck("SELECT c1 % 8 AS g, count(DISTINCT c2) AS cd FROM t1 GROUP BY g")(), "g", "cd"),
            lambda: grouped(
                df1.group_by((pl.col("c1") % 8).alias("g")).agg(pl.col("c2").n_unique().alias("cd")).to_arrow(),
                "g",
                "cd",
            ),
        ),
    ]
    if hasattr(tidal.Stream, "join"):
        queries.append(
            (
                "equi-join on c1",
                n + m,
                lambda: s1.join(s2, "c1", "c1").count(),
                lambda: con.execute("SELECT count(*) FROM t1 JOIN t2 USING (c1)").fetchall()[0][0],
                lambda: df1.join(df2, on="c1").height,
            )
        )
    else:
        results.note("equi-join skipped: this branch has no Stream.join yet (the join family lands with issue 3)")

    for name, events, tidal_fn, duck_fn, polars_fn in queries:
        want = duck_fn()
        for engine, fn in (("tidal", tidal_fn), ("polars", polars_fn)):
            got = fn()  # also warms compiled kernels
            if got != want:
                raise SystemExit(f"{name}: {engine} answered {str(got)[:200]} but DuckDB {str(want)[:200]}")
        results.run(name, "tidal", tidal_fn, events, args.repeat)
        results.run(name, "duckdb", duck_fn, events, args.repeat)
        results.run(name, "polars", polars_fn, events, args.repeat)

    results.report(args.out, rows_t1=n, distinct_d=d, rows_t2=m, threads=1, quick=args.quick)
    return 0


if __name__ == "__main__":
    sys.exit(main())
