"""SUM/AVG(DISTINCT), named windows (WINDOW w AS (...)) and grapheme functions against DuckDB on the
same data; what DuckDB rejects tidal rejects, and what tidal cannot do exactly is refused by name."""

from __future__ import annotations

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tidal.core.errors import TidalError
from tidal.sql import plan

from .test_conformance_expressions import assert_same, assert_unsupported

DATA = pa.table(
    {
        "a": pa.array([1, 1, 2, 2, 2, 3, 1, 4], pa.int64()),
        "b": pa.array([1, 2, 3, 3, 4, None, 1, -5], pa.int32()),
        "y": pa.array([3.0, 1.0, float("nan"), float("nan"), 4.0, None, 3.0, -0.5], pa.float64()),
        "c": pa.array([True, False, True, None, True, None, True, False]),
    }
)


@pytest.fixture
def where(tmp_path):
    pq.write_table(DATA, tmp_path / "t.parquet")
    return tmp_path


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT a, SUM(DISTINCT b), AVG(DISTINCT b), SUM(b), COUNT(DISTINCT b), MIN(DISTINCT b), MAX(DISTINCT b) "
        "FROM 't.parquet' GROUP BY a",
        "SELECT a, SUM(DISTINCT y), AVG(DISTINCT y) FROM 't.parquet' GROUP BY a",  # NaN: one value, and NaN wins
        "SELECT SUM(DISTINCT b), AVG(DISTINCT b), SUM(DISTINCT c), SUM(DISTINCT b) FILTER (WHERE a = 1) "
        "FROM 't.parquet'",
        "SELECT SUM(DISTINCT b), AVG(DISTINCT b), COUNT(*) FROM 't.parquet' WHERE a > 5",
        "SELECT a, SUM(DISTINCT b) + 1 AS s FROM 't.parquet' GROUP BY a HAVING SUM(DISTINCT b) > 2",
        "SELECT SUM(DISTINCT b % 2), AVG(DISTINCT a * 2) FROM 't.parquet'",
    ],
)
def test_sum_and_avg_distinct(where, sql):
    assert_same(sql, where)


def test_sum_distinct_beyond_bigint_is_an_error(where):
    assert_unsupported(
        "SELECT SUM(DISTINCT x) FROM (SELECT 4611686018427387904 AS x UNION ALL SELECT 4611686018427387905)",
        where,
        "out of BIGINT's range",
    )
    assert_unsupported("SELECT STRING_AGG(DISTINCT CAST(a AS VARCHAR)) FROM 't.parquet'", where, "STRING_AGG")


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.integers(0, 2), st.one_of(st.none(), st.integers(-4, 4))), max_size=12))
def test_sum_distinct_random(tmp_path_factory, rows):
    where = tmp_path_factory.mktemp("sd")
    table = pa.table({"g": pa.array([g for g, _ in rows], pa.int64()), "v": pa.array([v for _, v in rows], pa.int64())})
    pq.write_table(table, where / "t.parquet")
    assert_same("SELECT g, SUM(DISTINCT v), AVG(DISTINCT v), SUM(v) FROM 't.parquet' GROUP BY g", where)


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT a, b, SUM(b) OVER w FROM 't.parquet' WINDOW w AS (PARTITION BY a ORDER BY b, c)",
        "SELECT a, b, SUM(b) OVER (w ORDER BY b DESC, c), rank() OVER w2 FROM 't.parquet' "
        "WINDOW w AS (PARTITION BY a), w2 AS (w ORDER BY b)",
        "SELECT a, b, SUM(b) OVER (w ROWS BETWEEN 1 PRECEDING AND CURRENT ROW), row_number() OVER w "
        "FROM 't.parquet' WHERE b IS NOT NULL WINDOW w AS (PARTITION BY a ORDER BY b, c)",
        "SELECT a, b FROM 't.parquet' WINDOW w AS (PARTITION BY a)",
        "SELECT a, b, SUM(b) OVER (w PARTITION BY a) FROM 't.parquet' WINDOW w AS (ORDER BY b, c)",
    ],
)
def test_named_windows(where, sql):
    assert_same(sql, where)


@pytest.mark.parametrize(
    ("sql", "named"),
    [
        (
            "SELECT SUM(b) OVER (w ORDER BY b) FROM 't.parquet' WINDOW w AS (PARTITION BY a ORDER BY c)",
            "Cannot override ORDER BY",
        ),
        ("SELECT SUM(b) OVER (w PARTITION BY b) FROM 't.parquet' WINDOW w AS (PARTITION BY a)", "PARTITION BY"),
        ("SELECT SUM(b) OVER v FROM 't.parquet' WINDOW w AS (PARTITION BY a)", 'window "v" does not exist'),
        ("SELECT 1 FROM 't.parquet' WINDOW w AS (PARTITION BY a), w AS (ORDER BY b)", "already defined"),
        (
            "SELECT (SELECT MAX(b) OVER w FROM 't.parquet' LIMIT 1) FROM 't.parquet' WINDOW w AS (PARTITION BY a)",
            'window "w" does not exist',
        ),
        (  # DuckDB takes OVER w and refuses OVER (w) here; sqlglot reads both the same
            "SELECT SUM(b) OVER w FROM 't.parquet' WINDOW w AS (ORDER BY b ROWS 1 PRECEDING)",
            "which has a frame clause, is not supported",
        ),
    ],
)
def test_named_windows_refused(where, sql, named):
    assert_unsupported(sql, where, named)
    if "not supported" not in named:  # DuckDB rejects it too
        with pytest.raises(duckdb.Error):
            duckdb.connect().sql(sql.replace("'t.parquet'", f"'{where / 't.parquet'}'")).fetchall()


def test_sum_distinct_over_a_window_is_refused(where):
    with pytest.raises(TidalError, match="DISTINCT in a window aggregate is not supported"):
        import os

        old = os.getcwd()
        os.chdir(where)
        try:
            plan("SELECT SUM(DISTINCT b) OVER (PARTITION BY a) FROM 't.parquet'").result()
        finally:
            os.chdir(old)


# -- grapheme clusters ----------------------------------------------------------------------------
_CLUSTERS = [
    "a",
    "B",
    "e\u0301",
    "\U0001f986",
    "\U0001f926\U0001f3fc\u200d\u2642\ufe0f",
    "S\u0308",
    "\r\n",
    "\ud55c",
    " ",
]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(st.one_of(st.none(), st.lists(st.sampled_from(_CLUSTERS), max_size=6).map("".join)), max_size=5),
    st.integers(-7, 7),
    st.integers(-7, 7),
)
def test_grapheme_functions(tmp_path_factory, texts, k, n):
    where = tmp_path_factory.mktemp("gr")
    pq.write_table(
        pa.table({"s": pa.array(texts, pa.string()), "k": pa.array([k] * len(texts), pa.int64())}), where / "t.parquet"
    )
    assert_same(
        f"SELECT s, left_grapheme(s, {k}), right_grapheme(s, k), substring_grapheme(s, {k}), "
        f"substring_grapheme(s, k, {n}), left_grapheme(s, NULL), substring_grapheme(s, k, NULL) FROM 't.parquet'",
        where,
    )


def test_grapheme_functions_arguments(where):
    assert_unsupported("SELECT left_grapheme('abc')", where, "takes 2 arguments")
    assert_unsupported("SELECT substring_grapheme('abc', 1, 2, 3)", where, "takes 2 or 3 arguments")
    assert_unsupported("SELECT left_grapheme('abc', 1.5)", where, "must be an integer")


# -- aggregates with ORDER BY, list / array_agg -----------------------------------------------------
ORDERED = pa.table(
    {
        "a": pa.array([1, 2, 3, None, 5, 6, 7], pa.int64()),
        "b": pa.array(["x", "y", None, "z", "w", "v", "u"]),
        "c": pa.array([3.0, None, 1.0, 2.0, 2.5, None, 0.5]),
        "g": pa.array(["g1", "g1", "g2", "g1", "g2", "g3", "g1"]),
    }
)


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT g, string_agg(b, ',' ORDER BY a DESC), list(a ORDER BY a DESC), list(a), "
        "array_agg(b ORDER BY c NULLS FIRST, a DESC), string_agg(b ORDER BY c, b) FROM 'o.parquet' GROUP BY g",
        "SELECT COUNT(1 ORDER BY 1), SUM(a ORDER BY abs(a)), MIN(a ORDER BY b), MAX(c ORDER BY a), "
        "string_agg(b, '-' ORDER BY b) FILTER (WHERE a > 1) FROM 'o.parquet'",
        "SELECT list(b ORDER BY b), string_agg(b ORDER BY a) FROM 'o.parquet' WHERE a > 100",
        "SELECT g, list(c), list(c ORDER BY c DESC NULLS LAST) FROM 'o.parquet' GROUP BY g",
    ],
)
def test_aggregates_with_order_by(tmp_path, sql):
    pq.write_table(ORDERED, tmp_path / "o.parquet")
    assert_same(sql, tmp_path)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(
        st.tuples(st.integers(0, 2), st.one_of(st.none(), st.integers(-5, 5))), max_size=10, unique_by=lambda r: r[1]
    )
)
def test_list_and_string_agg_ordered_random(tmp_path_factory, rows):
    where = tmp_path_factory.mktemp("la")
    table = pa.table({"g": pa.array([g for g, _ in rows], pa.int64()), "v": pa.array([v for _, v in rows], pa.int64())})
    pq.write_table(table, where / "t.parquet")
    assert_same(
        "SELECT g, list(v ORDER BY v DESC), string_agg(CAST(v AS VARCHAR), '/' ORDER BY v NULLS FIRST), "
        "list(v ORDER BY v NULLS FIRST) FROM 't.parquet' GROUP BY g",
        where,
    )


def test_order_by_inside_first_is_refused(where):
    assert_unsupported("SELECT first(a ORDER BY b) FROM 't.parquet'", where, "ORDER BY inside FIRST is not supported")


# -- NaN in aggregates: a value (the largest), not a NULL -------------------------------------------
@pytest.mark.parametrize(
    "sql",
    [
        "SELECT a, MAX(y), MIN(y), SUM(y), AVG(y), COUNT(y), COUNT(DISTINCT y) FROM 't.parquet' GROUP BY a",
        "SELECT MAX(y), MIN(y), SUM(y), COUNT(y), stddev(y), var_pop(y) FROM 't.parquet' WHERE a = 2",
        "SELECT COUNT(y), SUM(y), MIN(y) FROM 't.parquet' WHERE a > 10",
        "SELECT a, COUNT(y) + 1 AS n FROM 't.parquet' GROUP BY a HAVING COUNT(y) > 1 ORDER BY n",
        "SELECT isnan(y), isnan(a), isnan(NULL) FROM 't.parquet'",
        "SELECT median(y), FIRST(y) FROM 't.parquet' WHERE a = 1",
    ],
)
def test_nan_in_aggregates_as_duckdb(where, sql):
    assert_same(sql, where)


def test_nan_where_its_place_is_not_reproduced_is_an_error(where):
    assert_unsupported("SELECT median(y) FROM 't.parquet'", where, "MEDIAN(y): a NaN among its values is not supported")
