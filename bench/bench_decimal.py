"""DECIMAL literals in SQL filters and sums: the same speed as DOUBLE literals, against DuckDB (one thread).

    python bench/bench_decimal.py [--quick] [--rows N] [--repeat 5] [--out bench/results/decimal.json]

Data: a Parquet file of ``x DOUBLE``, ``i BIGINT`` and ``d DECIMAL(9,2)``, 5M rows (1M with ``--quick``),
written once into ``bench/.data/``. Workloads, timed interleaved (medians):

* ``x > 100.5`` (a DECIMAL literal, made the DOUBLE 100.5 at plan time) beside ``x > 100.5e0`` (a DOUBLE
  literal): ``COUNT(*)`` under each; their ratio shows the DECIMAL literal keeps the compiled kernels;
* ``i > 2500.5`` (exactly ``i >= 2501``) beside ``i >= 2501``;
* ``SUM(d)`` (DuckDB's exact DECIMAL(38,2)) and ``SUM(d * 1.5)`` over the DECIMAL column.

DuckDB runs each at ``threads=1``; the answers are checked equal before timing.
"""

from __future__ import annotations

import argparse
from decimal import Decimal
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from harness import Results, add_common_args

from tidal.sql import plan

ROOT = Path(__file__).resolve().parent.parent


def data_file(rows: int) -> Path:
    path = ROOT / "bench" / ".data" / f"decimal_{rows}.parquet"
    if not path.exists():
        rng = np.random.default_rng(7)
        cents = rng.integers(-500_000, 500_000, rows)
        table = pa.table(
            {
                "x": rng.normal(100.0, 20.0, rows),
                "i": rng.integers(0, 5_000, rows),
                "d": pa.array([Decimal(int(c)).scaleb(-2) for c in cents], pa.decimal128(9, 2)),
            }
        )
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(table, path)
    return path


WORKLOADS = [
    ("x > 100.5 (DECIMAL literal)", "SELECT count(*) AS n FROM '{p}' WHERE x > 100.5"),
    ("x > 100.5e0 (DOUBLE literal)", "SELECT count(*) AS n FROM '{p}' WHERE x > 100.5e0"),
    ("i > 2500.5 (DECIMAL literal)", "SELECT count(*) AS n FROM '{p}' WHERE i > 2500.5"),
    ("i >= 2501 (INTEGER literal)", "SELECT count(*) AS n FROM '{p}' WHERE i >= 2501"),
    ("SUM(d)", "SELECT sum(d) AS s FROM '{p}'"),
    ("SUM(d * 1.5)", "SELECT sum(d * 1.5) AS s FROM '{p}'"),
]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=None, help="rows (default 5M, 1M with --quick)")
    add_common_args(ap, "bench/results/decimal.json")
    args = ap.parse_args(argv)
    rows = args.rows or (1_000_000 if args.quick else 5_000_000)
    path = data_file(rows)
    con = duckdb.connect()
    con.execute("SET threads=1")
    results = Results()
    entries = []
    for name, sql in WORKLOADS:
        query = sql.format(p=path)
        got, want = plan(query).result().to_pylist(), con.sql(query).to_arrow_table().to_pylist()
        assert got == want, (name, got, want)
        entries.append((name, "tidal", lambda q=query: plan(q).result(), rows))
        entries.append((name, "duckdb", lambda q=query: con.sql(q).fetchall(), rows))
    results.run_interleaved(entries, args.repeat)
    tidal_s = {r["workload"]: r["seconds"] for r in results.rows if r["engine"] == "tidal"}
    for a, b in ((0, 1), (2, 3)):
        ratio = tidal_s[WORKLOADS[a][0]] / tidal_s[WORKLOADS[b][0]]
        results.note(f"tidal {WORKLOADS[a][0]} / {WORKLOADS[b][0]}: {ratio:.2f} of the time")
    results.report(args.out, rows=rows, repeat=args.repeat)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
