"""DECIMAL literals, sums and averages on Spark: the same answers and types as embedded, and as DuckDB's."""

from __future__ import annotations

from decimal import Decimal

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import tidal.spark
from tidal.sql import plan

QUERIES = [
    "SELECT k, sum(d) AS s, sum(d * 1.5) AS t, sum(i * 0.5) AS u, min(d) AS lo, count(*) AS n "
    "FROM 't.parquet' WHERE x > 1.5 OR i > 2.5 GROUP BY k ORDER BY k",
    "SELECT r, d * 1.1 AS a, x + 0.1 AS b, i * 1.1 AS c, 0.1 + 0.2 AS e FROM 't.parquet' WHERE d > 0.5 ORDER BY r",
]


@pytest.mark.parametrize("sql", QUERIES)
def test_decimal_queries_on_spark_match_embedded_and_duckdb(spark, tmp_path, monkeypatch, sql):
    n = 40
    table = pa.table(
        {
            "r": pa.array(range(n), pa.int64()),
            "k": pa.array([i % 3 for i in range(n)], pa.int64()),
            "i": pa.array([None if i % 7 == 0 else i for i in range(n)], pa.int64()),
            "x": pa.array([i * 0.25 for i in range(n)], pa.float64()),
            "d": pa.array(
                [None if i % 5 == 0 else Decimal(i * 37 - 300).scaleb(-2) for i in range(n)], pa.decimal128(7, 2)
            ),  # fmt: skip
        }
    )
    pq.write_table(table, tmp_path / "t.parquet")
    monkeypatch.chdir(tmp_path)
    want = duckdb.sql(sql).to_arrow_table()
    embedded = plan(sql).result()
    got = tidal.spark.run_query_on_spark(sql, spark=spark, partitions=2)
    assert got.schema.types == embedded.schema.types == want.schema.types
    assert got.to_pylist() == embedded.to_pylist() == want.to_pylist()


def test_sums_beyond_64_bits_on_spark_match_embedded_and_duckdb(spark, tmp_path, monkeypatch):
    # DuckDB's 128-bit DECIMAL sum: 32-bit limbs summed as BIGINTs in the map-side partials and the reduce
    n = 30
    big = [None if i % 7 == 0 else Decimal(f"{(-1) ** i * (10**18 - 1 - i)}E-2") for i in range(n)]
    wide = [Decimal(f"{(10**30 - 7 * i) * (1 if i % 3 else -1)}E-4") for i in range(n)]
    table = pa.table(
        {
            "k": pa.array([i % 2 for i in range(n)], pa.int64()),
            "b": pa.array([v if i % 4 else abs(v) if v is not None else None for i, v in enumerate(big)],
                          pa.decimal128(18, 2)),
            "w": pa.array(wide, pa.decimal128(32, 4)),
        }
    )  # fmt: skip
    pq.write_table(table, tmp_path / "t.parquet")
    monkeypatch.chdir(tmp_path)
    for sql in (
        "SELECT k, sum(b) AS s, sum(w) AS t, sum(b + b) AS u FROM 't.parquet' GROUP BY k ORDER BY k",
        "SELECT k, avg(b) AS a, avg(w) AS v FROM 't.parquet' GROUP BY k ORDER BY k",  # of the exact sums
    ):
        want = duckdb.sql(sql).to_arrow_table()
        embedded = plan(sql).result()
        got = tidal.spark.run_query_on_spark(sql, spark=spark, partitions=2)
        assert got.schema.types == embedded.schema.types == want.schema.types
        assert got.to_pylist() == embedded.to_pylist() == want.to_pylist()
