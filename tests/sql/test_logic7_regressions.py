"""Wrong answers and crashes that DuckDB's own logic tests of dates, timestamps, intervals, CTEs, Top-N and
DISTINCT found, each pinned against the installed DuckDB (its default settings: TimeZone UTC here): the
same answer, or an error where DuckDB errs, or a refusal by name where tidal cannot give DuckDB's answer."""

from __future__ import annotations

import datetime as dt

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tidal.core.errors import TidalError
from tidal.sql import plan


def _tidal(sql: str) -> list[tuple]:
    table = plan(sql).result()
    return list(zip(*(c.to_pylist() for c in table.columns), strict=True))


def _duck(sql: str) -> list[tuple]:
    return [tuple(r) for r in duckdb.sql(sql).fetchall()]


@pytest.fixture
def tables(in_dir):
    pq.write_table(pa.table({"i": [2, 4, 2], "j": [3, 5, 7], "k": [5, 6, 6]}), "integers.parquet")
    pq.write_table(pa.table({"g": [1, 1], "value": ["bad", "1"], "keep": [False, True]}), "fe.parquet")
    pq.write_table(pa.table({"key": [1, 1, 2], "v": [[1, 2], [0], None]}), "lists.parquet")
    for name, sql in {
        "far": "SELECT * FROM (VALUES ('-99999-01-01'::DATE), ('99999-01-01'::DATE), ('1992-03-03'::DATE)) v(d)",
        "bc": "SELECT * FROM (VALUES ('1994-08-14 (BC)'::DATE), ('2020-01-01'::DATE)) v(d)",
        # half a day before 0001-01-01: its day is 1 BC's last (days by floor division, not toward zero)
        "bcts": "SELECT * FROM (VALUES ('0001-12-31 (BC) 12:00:00'::TIMESTAMP), ('2020-01-01'::TIMESTAMP)) v(t)",
        "specials": "SELECT * FROM (VALUES ('infinity'::TIMESTAMP, 'infinity'::DATE), "
        "('1970-01-01'::TIMESTAMP, '1970-01-01'::DATE)) v(ts, dt)",
    }.items():
        duckdb.sql(f"COPY ({sql}) TO '{name}.parquet' (FORMAT parquet)")
    return in_dir


@pytest.mark.parametrize(
    "sql",
    [
        # DISTINCT ON (1) is the first select item, not the constant 1 (one row for the whole input)
        "SELECT DISTINCT ON (1) i, j FROM 'integers.parquet' ORDER BY i, j",
        "SELECT DISTINCT ON (2) i, j FROM 'integers.parquet' ORDER BY 2",
        "SELECT DISTINCT ON (1) i, j FROM 'integers.parquet' ORDER BY i, j LIMIT 1 OFFSET 1",
        # date_trunc of a DATE is a TIMESTAMP
        "SELECT date_trunc('month', DATE '1992-02-02'), date_trunc('week', DATE '1992-02-02')",
        # INTERVAL literals: a fraction of a microsecond dropped, of a second or millisecond kept
        "SELECT INTERVAL '1.5' MICROSECOND, INTERVAL '-1.5' MICROSECOND, INTERVAL '-1.5' MILLISECOND, "
        "INTERVAL '1.5' SECOND, INTERVAL '1 day 2.5 seconds'",
        # INTERVAL '1.5' DAY is 1 day (the fraction of a unit written apart dropped), INTERVAL '1.5 days' 36 hours
        "SELECT INTERVAL '1.5' DAY, INTERVAL '-1.5' HOUR, INTERVAL '1.5 days', INTERVAL '0.05 week', "
        "INTERVAL '0.0000000005 DAY'",
        # strptime: Python's strptime reads the fields DuckDB reads
        "SELECT strptime('2020-01-01 1:2:3 PM', '%Y-%m-%d %I:%M:%S %p'), strptime(' 2020-1-5 ', '%Y-%m-%d'), "
        "strptime('JANUARY 5 2020', '%B %d %Y'), strptime('69', '%y'), strptime(NULL, '%Y')",
        # text read as a date: outer blanks skipped; a day that does not exist is TRY_CAST's NULL
        "SELECT TRY_CAST(' 2001-02-28 ' AS DATE), TRY_CAST('2001-02-29' AS DATE), TRY_CAST('' AS DATE), "
        "TRY_CAST('1111-111-1' AS DATE), TRY_CAST('1111-11' AS DATE)",
        # TIMESTAMPTZ from text: the text's time in UTC
        "SELECT TIMESTAMPTZ '2021-11-15 02:30:00', '2021-11-15 02:30:00'::TIMESTAMP::TIMESTAMPTZ",
        "SELECT year(d), month(d), day(d) FROM 'far.parquet' WHERE d BETWEEN DATE '1000-01-01' AND DATE '3000-01-01'",
        "SELECT CAST(d AS VARCHAR) FROM 'bc.parquet' WHERE d > DATE '2000-01-01'",
        "DESCRIBE SELECT 42 AS a, 3000000000 AS b, 1 + 2 AS c, 'x' AS d",
        "SUMMARIZE SELECT 42 AS a",
        "SELECT g, count(DISTINCT TRY_CAST(value AS INTEGER)) FILTER (WHERE keep) FROM 'fe.parquet' GROUP BY g",
    ],
)
def test_answers_as_duckdb(tables, sql):
    assert _tidal(sql) == _duck(sql), sql


@pytest.mark.parametrize(
    ("sql", "match"),
    [
        ("WITH c AS (SELECT 42), c AS (SELECT 43) SELECT * FROM c", "duplicate CTE name"),
        ("SELECT DISTINCT ON (i, 'x') i FROM 'integers.parquet'", "non-integer literal"),
        ("SELECT DISTINCT ON (3) i FROM 'integers.parquet'", "position 3"),
        ("SELECT strftime(DATE '1992-01-01', '%')", "trailing format character"),
        ("SELECT strftime(DATE '1992-01-01', '')", "empty format"),
        ("SELECT strptime(NULL, '')", "empty format"),
        ("SELECT strptime('2001-02-30', '%Y-%m-%d')", "could not parse"),
        ("SELECT strptime('2000-10-01 23:59:60', '%Y-%m-%d %H:%M:%S')", "could not parse"),
        ("SELECT INTERVAL ''", "could not convert"),
        ("SELECT INTERVAL '9223372036854775807' HOURS", "out of the range"),
        ("SELECT INTERVAL '100000000000000000days'", "out of the range"),
        ("SELECT '2020-01-01'::TIMESTAMP(NULL)", "is not supported"),
    ],
)
def test_errs_where_duckdb_errs(tables, sql, match):
    with pytest.raises(duckdb.Error):
        duckdb.sql(sql).fetchall()
    with pytest.raises(TidalError, match=match):
        plan(sql).result()


@pytest.mark.parametrize(
    ("sql", "match"),
    [
        # week numbers, days of the year, zones, %g: read otherwise by Python than by DuckDB
        ("SELECT strptime('30', '%U')", "'%U'"),
        ("SELECT strptime('2021-19-4', '%G-%V-%u')", "'%G'"),
        ("SELECT strptime('30', '%j')", "'%j'"),
        ("SELECT strptime('2024-11-28 23:59:00.3', '%Y-%m-%d %H:%M:%S.%g')", "'%g'"),
        ("SELECT strptime('22:00:00 GMT+0000', '%X GMT%z')", "'%z'"),
        ("SELECT strptime('10:3:5 PM', '%H:%M:%S %p')", "%p without %I"),
        # tidal's INTERVAL is a duration: DuckDB's text keeps hours apart from days ('30:00:00')
        ("SELECT CAST(INTERVAL 30 HOURS AS VARCHAR)", "INTERVAL|duration"),
        ("SELECT CAST(d AS VARCHAR) FROM 'bc.parquet'", "VARCHAR is not supported"),
        ("SELECT CAST(t AS VARCHAR) FROM 'bcts.parquet'", "VARCHAR is not supported"),  # was '0000-12-31 12:00:00'
        ("SELECT '2020-01-01 10:00:00.123456'::TIMESTAMP(3)", "is not supported"),
        # text DuckDB reads as a date and tidal does not: refused, never TRY_CAST's NULL
        ("SELECT TRY_CAST('2004/02/29' AS DATE)", "not supported"),
        ("SELECT TRY_CAST('1111-11-11 (BC)' AS DATE)", "not supported"),
        ("SELECT TRY_CAST('infinity' AS TIMESTAMP)", "not supported"),
        ("SELECT TRY_CAST('5881580-07-10' AS DATE)", "not supported"),
        ("SELECT TRY_CAST('92-01-01' AS DATE)", "not supported"),
        ("SELECT TRY_CAST('2020-01-01 24:00:00' AS TIMESTAMP)", "not supported"),
        # Arrow's calendar holds years in 16 bits: year 99999 came back as -31073
        ("SELECT year(d) FROM 'far.parquet'", "beyond the years"),
        ("SELECT date_part('doy', d) FROM 'far.parquet'", "beyond the years"),
        ("SELECT date_trunc('year', d) FROM 'far.parquet'", "beyond the years"),
        ("SELECT strftime(d, '%Y') FROM 'far.parquet'", "beyond the years"),
        # DuckDB's infinities read as far-off times (isfinite said true, year 20599)
        ("SELECT isfinite(ts) FROM 'specials.parquet'", "infinite dates and timestamps"),
        ("SELECT year(dt) FROM 'specials.parquet'", "infinite dates and timestamps"),
        # lists: Arrow sorts none, and a row holding one is no key of a multiset
        ("SELECT v FROM 'lists.parquet' ORDER BY v LIMIT 5", "ORDER BY a LIST"),
        # a text read as a TIMESTAMP with blanks around it: DuckDB reads '2020-01-01 ' as a DATE only
        ("SELECT TRY_CAST('2020-01-01 10:00:00 PST' AS TIMESTAMP)", "not supported"),
        ("SELECT TRY_CAST('2020-01-01  10:00:00' AS TIMESTAMP)", "not supported"),
        ("SELECT DISTINCT ON (key) * FROM 'lists.parquet' ORDER BY key", "LIST or STRUCT"),
    ],
)
def test_refused_by_name(tables, sql, match):
    duckdb.sql(sql).fetchall()  # DuckDB answers
    with pytest.raises(TidalError, match=match):
        plan(sql).result()


def test_filter_casts_every_row_as_duckdb(tables):
    """DuckDB casts an aggregate's argument on the rows its FILTER drops too: 'bad' is an error."""
    sql = "SELECT g, count(DISTINCT value::INTEGER) FILTER (WHERE keep) FROM 'fe.parquet' GROUP BY g"
    with pytest.raises(duckdb.ConversionException):
        duckdb.sql(sql).fetchall()
    with pytest.raises(TidalError, match="bad"):
        plan(sql).result()


_FORMATS = ["%Y-%m-%d", "%Y-%m-%d %H:%M:%S", "%d/%m/%Y %I:%M %p", "%b %d %Y", "%Y%m%d", "%H:%M:%S.%f", "%y-%m-%d"]


@settings(max_examples=60, deadline=None)
@given(
    fmt=st.sampled_from(_FORMATS),
    when=st.datetimes(dt.datetime(1000, 1, 1), dt.datetime(9999, 12, 31)),
    mangle=st.sampled_from(["", "pad", "day31", "hour24", "trail"]),
)
def test_strptime_never_answers_otherwise_than_duckdb(fmt, when, mangle):
    """strptime over texts near its formats (and broken ones): tidal answers DuckDB's timestamp, or errs."""
    text = when.strftime(fmt)
    text = {
        "": text,
        "pad": f" {text} ",
        "day31": text.replace(when.strftime("%d"), "31", 1),
        "hour24": text.replace(when.strftime("%H"), "24", 1) if "%H" in fmt else text,
        "trail": text + "x",
    }[mangle]
    sql = f"SELECT strptime('{text}', '{fmt}')"
    try:
        got = _tidal(sql)
    except TidalError:
        return
    assert got == _duck(sql), sql
