"""Findings of tests/sql/test_numeric_typing_fuzz.py (fuzz9), each pinned against the installed DuckDB: the same
values of the same type, an error where DuckDB errs."""

from __future__ import annotations

import math
from decimal import Decimal

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
                "si": pa.array([1, -1, None, 300], pa.int16()),
                "d": pa.array([Decimal("1.5"), None, Decimal("-99.9"), Decimal("0.1")], pa.decimal128(4, 1)),
                "z": pa.array([0.0, 1.0, 2.0, 0.0], pa.float64()),
                "ut": pa.array([1, 200, 3, None], pa.uint8()),
                "ub": pa.array([2**64 - 1, 1, 3, 5], pa.uint64()),
                "bi": pa.array([2**63 - 1, -(2**63), 3, 5], pa.int64()),
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
        # a UBIGINT past 2**63 - 1 beside a signed integer was an error (both cast to BIGINT): compared exactly
        "SELECT ti = ub AS a, ti < ub AS b, bi >= ub AS c, ub > -1 AS d FROM t",
        "SELECT ub FROM t WHERE ub > bi",
        # integers of two widths were BIGINT: DuckDB's common type (UTINYINT and TINYINT meet in SMALLINT)
        "SELECT coalesce(ti, si) AS a, coalesce(ti, ut) AS b, greatest(ti, ut) AS c, least(si, ut) AS d FROM t",
        "SELECT CASE WHEN ti > 0 THEN ti ELSE ut END AS e, CASE WHEN ti > 0 THEN ti ELSE si END AS f FROM t",
        # a FLOAT beside a DOUBLE was FLOAT (the DOUBLE rounded to it); COALESCE of FLOATs was DOUBLE
        "SELECT greatest(fl, db) AS a, CASE WHEN ti > 0 THEN fl ELSE db END AS b, least(db, fl, ti) AS c FROM t",
        "SELECT coalesce(fl, 1) AS a, coalesce(fl, ti) AS b, coalesce(fl, db) AS c FROM t",
        # BIGINT's minimum beside a DECIMAL: |-2**63| wrapped in int64, passed the fast path's range check, and
        # -2**63 * 100 wrapped to 0 (2.25 - bi was 2.25)
        # a zero divisor of a real // was an error in a row whose dividend is NULL (DuckDB's NULL)
        "SELECT db // 0 AS a FROM t WHERE db IS NULL",
        "SELECT fl // 0 AS b, db % 0 AS c FROM t WHERE fl IS NULL",
        # COALESCE evaluated its later arguments in every row: DuckDB only where the earlier ones are NULL
        "SELECT coalesce(db, 1 // 0.0) AS a, coalesce(ii, CAST(ub AS INTEGER)) AS b FROM t WHERE db IS NOT NULL",
        # a constant cast to an unsigned type was folded to a BIGINT literal (max(CAST(2.25 AS USMALLINT)) a BIGINT)
        "SELECT g, max(CAST(2.25 AS USMALLINT)) AS a, min(CAST(7 AS UINTEGER)) AS b, max(CAST(5 AS UBIGINT)) AS c "
        "FROM t GROUP BY g",
        # the DECIMAL width of GREATEST/CASE of an unsigned and a signed integer: DuckDB's wider common type
        "SELECT (greatest(ut, ti) - (-d)) - ut AS a, (CASE WHEN db IS NULL THEN -ti ELSE ut END) * d AS b FROM t",
        # ROUND of an unsigned integer kept its type (round(ut, -2) of 255 was an error): DuckDB's is a BIGINT
        "SELECT round(ut, -2) AS a, round(ut) AS b, round(ut, 1) AS c FROM t",
        "SELECT 2.25 - bi AS a, bi + 0.5 AS b, bi * 1.5 AS c, bi + CAST(1.25 AS DECIMAL(18,2)) AS d FROM t",
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


@pytest.mark.parametrize(
    "expr", ["round(ub)", "greatest(ti, ub)", "CASE WHEN ub > 3 THEN ti ELSE ub END", "coalesce(bi, ub)"]
)
def test_a_ubigint_where_duckdb_answers_a_hugeint_is_refused_by_name(numbers, expr):
    assert str(numbers.sql(f"SELECT {expr} FROM t").types[0]) == "HUGEINT"  # a type tidal does not have
    with pytest.raises(TidalError, match="UBIGINT.*not supported"):
        plan(f"SELECT {expr} AS v FROM 't.parquet'").result()


@pytest.mark.parametrize("t", ["INTEGER", "UINTEGER"])
def test_an_integer_rescaled_to_a_wide_decimal_is_checked(in_dir, t):
    # 2**31 - 1 (or 2**32 - 1) * 10**29 wrapped in Arrow's 128-bit rescale: CAST gave 892143625.79..., not an error
    values = f"(VALUES (CAST(2147483647 AS {t})), (CAST(0 AS {t}))) v(i)"
    with pytest.raises(duckdb.Error):
        duckdb.sql(f"SELECT CAST(i AS DECIMAL(38,29)) FROM {values}").fetchall()
    with pytest.raises(TidalError, match="DECIMAL"):
        plan(f"SELECT CAST(i AS DECIMAL(38,29)) AS d FROM {values}").result()
    sql = f"SELECT TRY_CAST(i AS DECIMAL(38,29)) AS d FROM {values}"
    assert plan(sql).result().column("d").to_pylist() == [r[0] for r in duckdb.sql(sql).fetchall()]


@pytest.mark.parametrize(
    "sql",
    ["SELECT sum(ub) FROM {t}", "SELECT avg(ub) FROM {t}", "SELECT g, sum(ub) FROM {t} GROUP BY g"],
)
def test_an_aggregate_of_ubigint_values_above_bigint_is_refused_by_name(numbers, sql):
    """DuckDB sums a UBIGINT as a HUGEINT; tidal's sums are BIGINT: a value above 2**63 - 1 is refused by
    name (it was pyarrow's raw 'not in range' error)."""
    assert numbers.sql(sql.format(t="t")).fetchall()  # DuckDB answers
    with pytest.raises(TidalError, match="not supported"):
        plan(sql.format(t="'t.parquet'")).result()
