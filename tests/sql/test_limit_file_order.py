"""LIMIT/OFFSET without ORDER BY over one file's rows takes them in the file's order, as DuckDB does
(the same rows, in the same order), at the top and in subqueries; a scalar subquery with LIMIT and no
ORDER BY is then its first row. The changelog (``stream-json``) agrees: tests/sql/test_topk.py."""

from __future__ import annotations

import duckdb
import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq
import pytest

from tidal.sql import plan

ROWS = pa.table({"x": pa.array([(i * 7919) % 1000 for i in range(3000)], pa.int64()), "i": pa.array(range(3000))})


@pytest.fixture
def where(tmp_path, monkeypatch):
    pq.write_table(ROWS, tmp_path / "t.parquet", row_group_size=700)
    pcsv.write_csv(ROWS, tmp_path / "t.csv")
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT x FROM 't.parquet' LIMIT 5",
        "SELECT x, i FROM 't.csv' WHERE x > 500 LIMIT 3 OFFSET 2",
        "SELECT x * 2 AS y, i FROM 't.parquet' WHERE i % 3 = 1 LIMIT 4 OFFSET 900",
        "SELECT x FROM 't.parquet' OFFSET 2996",
        "SELECT * FROM range(10) LIMIT 3",
        "SELECT y FROM (SELECT x + 1 AS y FROM 't.parquet' WHERE i > 5 LIMIT 4) t",
        "SELECT COUNT(*), SUM(x) FROM (SELECT x FROM 't.csv' LIMIT 100 OFFSET 10) t",
        "SELECT (SELECT x FROM 't.parquet' WHERE i > 10 LIMIT 1), (SELECT i FROM 't.csv' LIMIT 1 OFFSET 7)",
    ],
)
def test_limit_without_order_by_takes_the_file_order(where, sql):
    got = [tuple(r.values()) for r in plan(sql).result().to_pylist()]
    assert got == duckdb.connect().sql(sql).fetchall(), sql


def test_limit_with_order_by_still_orders(where):
    sql = "SELECT x, i FROM 't.parquet' ORDER BY x DESC, i LIMIT 4"
    got = [tuple(r.values()) for r in plan(sql).result().to_pylist()]
    assert got == duckdb.connect().sql(sql).fetchall()
