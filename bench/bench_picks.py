"""SQL's mode, arg_min/arg_max and product (tidal/sql/hashagg_picks.py), string_agg, list, first/last,
the DISTINCT aggregates and text min/max (tidal/sql/hashagg_values.py) on the relational path and on
the engine's Python state per group, and window functions over a file, against DuckDB at one thread.

    python bench/bench_picks.py [--quick] [--rows N] [--repeat 3] [--out bench/results/picks.json]

Data: a Parquet file of n rows (default 2M, 200k with ``--quick``): k (1000 groups), i (50 values),
f (random doubles), s (100 strings). Each query is ``SELECT k, <aggregate> FROM file GROUP BY k``;
tidal's answer is checked against DuckDB's before timing (mode: only groups whose most frequent
value is unique, as DuckDB's pick among ties is its hash table's). ``engine`` rows run the same
query with the relational path turned off (the stream engine's Python state per group), at a tenth
of the rows. Window function queries (one row per input row) are compared as sorted rows.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from harness import Results, add_common_args

from tidal.sql import plan
from tidal.sql.query import final_snapshot

QUERIES = {
    "mode(i)": "SELECT k, mode(i) AS v FROM 't.parquet' GROUP BY k",
    "arg_min(s, f)": "SELECT k, arg_min(s, f) AS v FROM 't.parquet' GROUP BY k",
    "max_by(i, s)": "SELECT k, max_by(i, s) AS v FROM 't.parquet' GROUP BY k",
    "product(f)": "SELECT k, product(f) AS v FROM 't.parquet' GROUP BY k",
    "string_agg(s)": "SELECT k, string_agg(s, ',') AS v FROM 't.parquet' GROUP BY k",
    "list(s)": "SELECT k, list(s) AS v FROM 't.parquet' GROUP BY k",
    "first(s)": "SELECT k, first(s) AS v FROM 't.parquet' GROUP BY k",
    "count(DISTINCT s)": "SELECT k, count(DISTINCT s) AS v FROM 't.parquet' GROUP BY k",
    "sum(DISTINCT i)": "SELECT k, sum(DISTINCT i) AS v FROM 't.parquet' GROUP BY k",
    "max(s)": "SELECT k, max(s) AS v FROM 't.parquet' GROUP BY k",
}

WINDOW_QUERIES = {
    "lag OVER": "SELECT k, f - lag(f) OVER (PARTITION BY k ORDER BY f) AS v FROM 't.parquet'",
    "sum OVER": "SELECT k, sum(f) OVER (PARTITION BY k) AS v FROM 't.parquet'",
    "row_number OVER": "SELECT k, row_number() OVER (PARTITION BY k ORDER BY f) AS v FROM 't.parquet'",
}


def _table(n: int) -> pa.Table:
    rng = np.random.default_rng(7)
    return pa.table(
        {
            "k": rng.integers(0, 1000, n),
            "i": rng.integers(0, 50, n),
            "f": rng.random(n) + 0.5,
            "s": pa.array(rng.integers(0, 100, n)).cast(pa.string()),
        }
    )


def _answer(table: pa.Table) -> dict:
    return dict(zip(table.column("k").to_pylist(), table.column("v").to_pylist(), strict=True))


def _close(a, b) -> bool:
    if a is None or b is None:
        return a is b
    if isinstance(a, float) and isinstance(b, float):
        return a == b or abs(a - b) <= 1e-9 * abs(b)
    return a == b


def _rows(table: pa.Table) -> list:
    return sorted((tuple(r.values()) for r in table.to_pylist()), key=lambda r: tuple((v is None, v or 0) for v in r))


def _check(name: str, got: dict, want: dict, table: pa.Table) -> None:
    if name.startswith("mode"):
        counts = table.group_by(["k", "i"]).aggregate([("i", "count")])
        top: dict = {}
        for k, c in zip(counts.column("k").to_pylist(), counts.column("i_count").to_pylist(), strict=True):
            top.setdefault(k, []).append(c)
        unique = {k for k, cs in top.items() if cs.count(max(cs)) == 1}
        got = {k: v for k, v in got.items() if k in unique}
        want = {k: v for k, v in want.items() if k in unique}
    same = got.keys() == want.keys() and all(_close(got[k], want[k]) for k in want)
    if not same:
        raise SystemExit(f"{name}: tidal's answer differs from DuckDB's")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=None, help="rows (default 2M, 200k with --quick)")
    add_common_args(ap, "bench/results/picks.json")
    args = ap.parse_args(argv)
    n = args.rows or (200_000 if args.quick else 2_000_000)
    table = _table(n)
    small = table.slice(0, n // 10)
    con = duckdb.connect()
    con.execute("SET threads=1")
    con.register("t_arrow", table)
    results = Results()
    with tempfile.TemporaryDirectory() as tmp, contextlib.chdir(tmp):
        pq.write_table(table, Path(tmp) / "t.parquet")
        pq.write_table(small, Path(tmp) / "small.parquet")
        for name, sql in QUERIES.items():
            duck_sql = sql.replace("'t.parquet'", "t_arrow")
            want = _answer(con.sql(duck_sql).to_arrow_table())
            _check(name, _answer(plan(sql).result()), want, table)
            small_sql = sql.replace("t.parquet", "small.parquet")

            def engine(small_sql=small_sql):
                q = plan(small_sql)
                return q.finish(final_snapshot(q.events()))

            results.run(name, "tidal", lambda sql=sql: plan(sql).result(), n, args.repeat)
            results.run(name, "duckdb", lambda duck_sql=duck_sql: con.sql(duck_sql).to_arrow_table(), n, args.repeat)
            results.run(name, "tidal-engine", engine, len(small), args.repeat)
        for name, sql in WINDOW_QUERIES.items():
            duck_sql = sql.replace("'t.parquet'", "t_arrow")
            got, want = _rows(plan(sql).result()), _rows(con.sql(duck_sql).to_arrow_table())
            same = len(got) == len(want) and all(
                a[0] == b[0] and _close(a[1], b[1]) for a, b in zip(got, want, strict=False)
            )
            if not same:
                raise SystemExit(f"{name}: tidal's answer differs from DuckDB's")
            results.run(name, "tidal", lambda sql=sql: plan(sql).result(), n, args.repeat)
            results.run(name, "duckdb", lambda duck_sql=duck_sql: con.sql(duck_sql).to_arrow_table(), n, args.repeat)
    results.report(args.out, rows=n, threads=1, quick=args.quick)
    return 0


if __name__ == "__main__":
    sys.exit(main())
