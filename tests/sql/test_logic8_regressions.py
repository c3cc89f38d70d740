"""Wrong answers and crashes that DuckDB's own logic tests of floats, operators, overflow, numeric types, SELECT
and TIME found, each pinned against the installed DuckDB: the same answer (and type), an error where DuckDB errs,
or a refusal by name where tidal cannot give DuckDB's answer."""

from __future__ import annotations

import math

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


def _duck(con, sql: str) -> list[tuple]:
    return [tuple(r) for r in con.execute(sql).fetchall()]


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    return a == b


@pytest.fixture
def con(in_dir):
    """A DuckDB over the same Parquet files tidal reads (written by DuckDB, so their types are DuckDB's)."""
    c = duckdb.connect()
    for name, sql in {
        "tinyints": "SELECT i::TINYINT AS i FROM (VALUES (1), (10)) v(i)",
        "smallints": "SELECT i::SMALLINT AS i FROM (VALUES (1), (10)) v(i)",
        "floats": "SELECT f::FLOAT AS f, d::DOUBLE AS d, i::INTEGER AS i FROM (VALUES (2e38, 1e300, 1), "
        "('nan', 'nan', 2), (1.5, 1.5, 3)) v(f, d, i)",
        "times": "SELECT t::TIME AS t, n::TIME_NS AS n FROM (VALUES ('24:00:00', '24:00:00'), "
        "('23:59:59.999999', '23:59:59.123456789')) v(t, n)",
    }.items():
        c.execute(f"COPY ({sql}) TO '{name}.parquet' (FORMAT parquet)")
        c.execute(f"CREATE VIEW {name} AS FROM '{name}.parquet'")
    return c


def _outcome(run):
    try:
        return ("rows", run())
    except (TidalError, duckdb.Error) as exc:
        return ("error", type(exc).__name__)


@pytest.mark.parametrize(
    "sql",
    [
        # a constant cast to a narrow type keeps it when folded: TINYINT + TINYINT overflows at 127
        "SELECT i + 120::TINYINT FROM tinyints",
        "SELECT -120::TINYINT - i FROM tinyints",
        "SELECT (i * 10::TINYINT) * 10::TINYINT FROM tinyints",
        "SELECT i * 10000::SMALLINT FROM smallints",
        "SELECT i::TINYINT + 120::TINYINT FROM smallints",
        "SELECT a + b FROM (SELECT CAST(100 AS TINYINT) AS a, CAST(100 AS TINYINT) AS b) t",
        # an integer literal takes the narrow column's type where it fits (TINYINT + 120 overflows at 127), else
        # an INTEGER's (SMALLINT * 100000 is an INTEGER), and INTEGER literals overflow at 32 bits
        "SELECT i + 120 FROM tinyints",
        "SELECT i + 100, i - -100, i * 12 FROM tinyints",
        "SELECT i * 100000 FROM smallints",
        "SELECT i * 1000000 FROM tinyints",
        "SELECT i + 1 FROM tinyints",
        "SELECT 2000000000 + 2000000000",
        "SELECT 2000000000 + 3000000000, 2147483647 * 2",
        "SELECT i * 300000000 FROM floats",
        # FLOAT arithmetic is FLOAT: beyond about 3.4e38 it is infinite; FLOAT / a number is FLOAT
        "SELECT 2e38::FLOAT + 2e38::FLOAT, 2e38::FLOAT * 2, -2e38::REAL - 2e38::REAL",
        "SELECT 2e38::FLOAT / 0.1, 2e38::REAL / 0.1::REAL, 1::FLOAT / 3, 1 / 3::FLOAT",
        "SELECT f / 0.1, f + f, f * 2, f / 2 FROM floats",
        # FLOAT // and % with FLOAT or an exact number are FLOAT; a narrow integer // a literal keeps its type
        "SELECT f // 5::TINYINT, (f // 5::TINYINT) * 1.5, f % 1.5, i % f, 2::SMALLINT % 0.1::FLOAT FROM floats",
        "SELECT i // 1, typeof(i // 1), i % 7, typeof(i % 7), typeof(i // 1000) FROM tinyints",
        "SELECT typeof(f // 2), typeof(f % 2), typeof(f // 2::DOUBLE), typeof(d % f) FROM floats",
        # a narrow integer with a literal, then a DECIMAL: the DECIMAL's width is the narrow type's
        "SELECT (i + 100) - 1.5, typeof((i + 100) - 1.5), (i * 1) + 1.5, typeof((i * 1) + 1.5) FROM smallints",
        # a finite DOUBLE beyond FLOAT's range is a conversion error; an infinite one stays infinite
        "SELECT 1e308::REAL",
        "SELECT d::REAL FROM floats",
        "SELECT 1e1000::REAL, 'inf'::DOUBLE::REAL",
        # PARTITION BY and ORDER BY the same float column holding NaN (crashed)
        "SELECT f, i, SUM(i) OVER (PARTITION BY f ORDER BY f, i) FROM floats ORDER BY f, i",
        # sqlglot read 1e308+1e308 as the number '1e308+1' aliased e308 (crashed): the space is put in
        "SELECT 1e308+1e308, -1e308-1e308, 1e3+1, 1.5e2-1, 2e-1+1, 'x1e3+1'",
        # a TIME of 24:00:00 is hour 24
        "SELECT date_part('hour', t), hour(t), extract(hour FROM n), minute(t) FROM times ORDER BY t",
    ],
)
def test_as_duckdb(con, sql):
    want = _outcome(lambda: _duck(con, sql))
    got = _outcome(lambda: _tidal(sql))
    assert got[0] == want[0], (sql, got, want)
    if got[0] == "rows":
        assert len(got[1]) == len(want[1]) and all(
            len(g) == len(w) and all(_same(a, b) for a, b in zip(g, w, strict=True))
            for g, w in zip(sorted(got[1], key=repr), sorted(want[1], key=repr), strict=True)
        ), (sql, got, want)


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT typeof(i + 120::TINYINT) FROM tinyints WHERE i = 1",
        "SELECT typeof(CAST(1 AS INTEGER) + i) FROM tinyints",
        "SELECT typeof(i + 1), typeof(i + 1000), typeof(i + -1), typeof(i - (-1)), typeof(i * 3000000000) FROM "
        "tinyints WHERE i = 1",
        "SELECT typeof(1 + 1), typeof(3000000000 + 1)",
        "SELECT typeof(2e38::FLOAT + 2e38::FLOAT), typeof(1::FLOAT / 2), typeof(1::FLOAT / 2::DOUBLE)",
        "SELECT typeof(f / 0.1), typeof(f / i), typeof(d / f) FROM floats",
    ],
)
def test_types_as_duckdb(con, sql):
    assert _tidal(sql) == _duck(con, sql), sql


@pytest.mark.parametrize(
    ("sql", "match"),
    [
        # DuckDB's parser refuses chained comparisons; sqlglot reads them as a comparison of a boolean
        ("SELECT 1 = 1 = 1", "chained comparisons"),
        ("SELECT 1 < 2 < 3", "chained comparisons"),
        ("SELECT 1 IS DISTINCT FROM 2 IS DISTINCT FROM 3", "chained comparisons"),
        # a string is no prefix alias (DuckDB: a parser error; sqlglot took the string as the alias)
        ("SELECT 'j': 42", "not an alias"),
        # UBIGINT + 1 is UBIGINT in DuckDB (0::UBIGINT - 1 overflows), BIGINT in Arrow: refused by name
        ("SELECT 1::UBIGINT + 1", "unsigned integer .* not supported"),
        ("SELECT 1::UBIGINT + 1::TINYINT", "unsigned integer .* not supported"),
    ],
)
def test_refused_where_duckdb_differs(con, sql, match):
    with pytest.raises(TidalError, match=match):
        _tidal(sql)


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT (1 = 1) = true, (1 < 2) = (2 < 3)",
        "SELECT (1 IS DISTINCT FROM 2) IS DISTINCT FROM 3, 1 = 1 IS DISTINCT FROM 2",
        "SELECT j: 42, 1e308 + 1e308, -1e308 - 1e308",
        "SELECT 1 IS NOT DISTINCT FROM 2, 3 IS DISTINCT FROM 4 AND 5 IS DISTINCT FROM 6",
    ],
)
def test_what_is_not_chained_still_answers(con, sql):
    assert _tidal(sql) == _duck(con, sql), sql


SMALL = {"TINYINT": 2**7, "SMALLINT": 2**15, "INTEGER": 2**31}


@settings(max_examples=60, deadline=None)
@given(
    kind=st.sampled_from(sorted(SMALL)),
    xs=st.lists(st.integers(-(2**7), 2**7 - 1), min_size=1, max_size=4),
    c=st.integers(-(2**7), 2**7 - 1),
    op=st.sampled_from(["+", "-", "*"]),
    scale=st.sampled_from([1, 200, 2**15 - 1, 2**24]),
    typed=st.booleans(),
)
def test_narrow_integer_arithmetic_overflows_as_duckdb(tmp_path_factory, kind, xs, c, op, scale, typed):
    """A narrow integer column with a constant of its type (``typed``) or an integer literal: DuckDB's value and
    type, or both an overflow error."""
    import os

    d = tmp_path_factory.mktemp("narrow")
    half = SMALL[kind]
    vals = [max(-half, min(half - 1, x * scale)) for x in xs]
    const = max(-half, min(half - 1, c * scale)) if typed else c * scale  # (a literal may be wider)
    con = duckdb.connect()
    pq.write_table(pa.table({"x": pa.array(vals, pa.int64())}), d / "raw.parquet")
    con.execute(f"COPY (SELECT x::{kind} AS x FROM '{d / 'raw.parquet'}') TO '{d / 'n.parquet'}' (FORMAT parquet)")
    con.execute(f"CREATE VIEW n AS FROM '{d / 'n.parquet'}'")
    rhs = f"CAST({const} AS {kind})" if typed else str(const)
    sql = f"SELECT x {op} {rhs} AS v, typeof(x {op} {rhs}) AS t FROM n"
    old = os.getcwd()
    os.chdir(d)
    try:
        got = _outcome(lambda: sorted(_tidal(sql)))
    finally:
        os.chdir(old)
    want = _outcome(lambda: sorted(_duck(con, sql)))
    assert got[0] == want[0] and (got[0] == "error" or got[1] == want[1]), (sql, vals, got, want)
