"""Benchmark: SQL joins on generated Parquet files, tidal vs DuckDB in the same run.

Usage::

    python bench/bench_sql_join.py [--rows 1000000] [--customers 100000] [--repeat 3]

Files (written once into ``bench/data/``): ``orders`` (``--rows`` rows: id, cust, amount) and
``customers`` (``--customers`` rows: id, region; a tenth of the orders name no customer). Queries:
an inner join feeding a GROUP BY, and a LEFT JOIN returning every order. Each engine runs each
query ``--repeat`` times end to end (planning, reading, joining, the final answer); the median is
reported with the ratio to DuckDB. The answers are checked to agree (row counts and the grouped sums).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from harness import Results, add_common_args

from tidal.sql import plan

QUERIES = {
    "inner_join_group_by": "SELECT c.region, count(*) AS n, sum(o.amount) AS total FROM '{orders}' o"
    " JOIN '{customers}' c ON o.cust = c.id GROUP BY c.region",
    "left_join_rows": "SELECT o.id, o.amount, c.region FROM '{orders}' o LEFT JOIN '{customers}' c ON o.cust = c.id",
}


def ensure_files(rows: int, customers: int, folder: Path) -> dict[str, str]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = {
        "orders": folder / f"orders_{rows}_{customers}.parquet",
        "customers": folder / f"customers_{customers}.parquet",
    }
    if not all(p.exists() for p in paths.values()):
        rng = np.random.default_rng(5)
        cust = rng.integers(0, int(customers * 1.1), rows)  # ids past the table: orders without a customer
        pq.write_table(
            pa.table({"id": np.arange(rows), "cust": cust, "amount": np.round(rng.gamma(2.0, 20.0, rows), 2)}),
            paths["orders"],
        )
        regions = np.array([f"r{i}" for i in range(50)])
        pq.write_table(
            pa.table({"id": np.arange(customers), "region": regions[rng.integers(0, 50, customers)]}),
            paths["customers"],
        )
    return {k: str(v) for k, v in paths.items()}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--customers", type=int, default=100_000)
    add_common_args(ap, "bench/results/sql_join.json")
    args = ap.parse_args(argv)
    rows, customers = (100_000, 10_000) if args.quick else (args.rows, args.customers)
    paths = ensure_files(rows, customers, Path(__file__).parent / "data")
    print(f"orders {rows:,} rows, customers {customers:,} rows, cores {os.cpu_count()}")
    results = Results()
    for name, template in QUERIES.items():
        sql = template.format(**paths)
        got, expected = plan(sql).result(), duckdb.sql(sql).to_arrow_table()
        assert got.num_rows == expected.num_rows, (got.num_rows, expected.num_rows)
        if "total" in got.column_names:
            a = dict(zip(got.column("region").to_pylist(), got.column("total").to_pylist(), strict=True))
            b = dict(zip(expected.column("region").to_pylist(), expected.column("total").to_pylist(), strict=True))
            assert a.keys() == b.keys() and all(abs(a[k] - b[k]) < 1e-6 * max(1.0, abs(b[k])) for k in a)
        results.run(f"SQL {name}", "tidal", lambda sql=sql: plan(sql).result(), rows, args.repeat)
        results.run(f"SQL {name}", "duckdb", lambda sql=sql: duckdb.sql(sql).to_arrow_table(), rows, args.repeat)
    results.report(args.out, rows=rows, customers=customers)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
