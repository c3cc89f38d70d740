"""Findings of tests/sql/test_numeric_typing_fuzz.py (fuzz9), each pinned against the installed DuckDB: the same
values of the same type, an error where DuckDB errs."""

from __future__ import annotations

import math

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tidal.core.errors import TidalError
from tidal.sql import plan


@pytest.fixture
def numbers(in_dir):
    pq.write_table(
        pa.table(
            {
                "g": pa.array([1, 1, 2, 2], pa.int64()),
                "ti": pa.array([1, None, -1, 127], pa.int8()),
                "ii": pa.array([1, 2, 70000, None], pa.int32()),
                "db": pa.array([1.5, 2.5, -0.4, None], pa.float64()),
                "fl": pa.array([1.5, math.nan, None, 3.0], pa.float32()),
            }
        ),
        "t.parquet",
    )
    con = duckdb.connect()
    con.register("t", pq.read_table("t.parquet"))  # through Arrow: DuckDB's MIN/MAX of the file skip NaN
    return con


def _same(a, b) -> bool:
    return a == b or (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b))


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT TRY_CAST(ti AS UTINYINT) AS c FROM t",  # was 'unsupported type UTINYINT'
        "SELECT TRY_CAST(ii AS USMALLINT) AS c FROM t",
        "SELECT CAST(db AS UINTEGER) AS c, TRY_CAST(db AS UINTEGER) AS d FROM t",
        "SELECT CAST(ii AS UINTEGER) AS c FROM t",
        "SELECT min(fl) AS a, max(fl) AS b FROM t",  # was DOUBLE: the NaN beside MIN/MAX of FLOAT was a DOUBLE
        "SELECT g, min(fl) AS a, max(fl) AS b, sum(fl) AS s FROM t GROUP BY g",
    ],
)
def test_matches_duckdb_value_and_type(numbers, sql):
    got = plan(sql.replace("FROM t", "FROM 't.parquet'")).result()
    want = numbers.sql(sql).to_arrow_table()
    assert [f.type for f in got.schema] == [f.type for f in want.schema]
    key = lambda r: repr(r)  # noqa: E731
    g = sorted(zip(*(c.to_pylist() for c in got.columns), strict=True), key=key)
    w = sorted(zip(*(c.to_pylist() for c in want.columns), strict=True), key=key)
    assert len(g) == len(w) and all(
        _same(a, b) for rg, rw in zip(g, w, strict=True) for a, b in zip(rg, rw, strict=True)
    )


def test_a_cast_to_an_unsigned_type_out_of_range_is_an_error_as_in_duckdb(numbers):
    with pytest.raises(duckdb.Error):
        numbers.sql("SELECT CAST(ti AS USMALLINT) FROM t").fetchall()
    with pytest.raises(TidalError):
        plan("SELECT CAST(ti AS USMALLINT) FROM 't.parquet'").result()


def test_an_unknown_type_is_refused_by_name(in_dir):
    with pytest.raises(TidalError, match=r"TIMESTAMP\w*\(3\) is not supported"):
        plan("SELECT '2020-01-01 10:00:00.123456'::TIMESTAMP(3)").result()
