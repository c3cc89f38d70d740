"""Wrong answers and crashes that DuckDB's own logic tests (numeric, string, aggregate, decimal and
window files) found, each pinned against the installed DuckDB: the same answer, or an error where
DuckDB errs (or a refusal by name, where tidal does not do what DuckDB does)."""

from __future__ import annotations

import math

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tidal.core.errors import TidalError
from tidal.sql import plan


def _tidal(sql: str) -> list[tuple]:
    return [tuple(r.values()) for r in plan(sql).result().to_pylist()]


@pytest.fixture
def tables(in_dir):
    pq.write_table(pa.table({"v": ["a", "b", "b", "a"], "o": [1, 2, 3, 4], "i": [1, 2, 3, 4]}), "t.parquet")
    duckdb.sql("COPY (SELECT INTERVAL 1 YEAR AS j, 1 AS i) TO 'iv.parquet' (FORMAT parquet)")
    return in_dir


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT strlen('🤦🏼‍♂️'), strlen('S̈a'), strlen('abc'), strlen(NULL), length('🤦🏼‍♂️')",
        "SELECT strlen(v || '€') FROM 't.parquet'",
        "SELECT regexp_extract('foobarbaz', '(b..)(b..)', 3), regexp_extract('foobarbaz', '(b..)(b..)', 2)",
        "SELECT substring('hello', 0, 4294967295), substring('hello', -4294967296, 4294967295)",
        "SELECT LAG(v3, 10, 3) OVER (), LAG(v1, 1, 2.5) OVER (ORDER BY v1), LEAD(v1, 1, -2.5) OVER (ORDER BY v1) "
        "FROM (VALUES (0, 1::VARCHAR), (1, NULL)) AS v0(v1, v3)",
        "SELECT '1e-5'::DECIMAL, '12.5e1'::DECIMAL(5, 1)",
        "SELECT percentile_disc(0.25) WITHIN GROUP (ORDER BY i), COUNT(i), MIN(i), FIRST(i), "
        "string_agg(v, '-') FROM 't.parquet'",
    ],
)
def test_answers_as_duckdb(tables, sql):
    assert _tidal(sql) == duckdb.sql(sql).fetchall(), sql


@pytest.mark.parametrize(
    ("sql", "match"),
    [
        # DuckDB errs; tidal used to answer
        ("SELECT regexp_extract('foobarbaz', '(b..)(b..)', 42)", "group index"),
        ("SELECT regexp_extract('foobarbaz', '(b..)(b..)', -1)", "group index"),
        ("SELECT substring(v, 4294967296, 2) FROM 't.parquet'", "offset outside"),
        ("SELECT substring(v, 0, -4294967297) FROM 't.parquet'", "length outside"),
        ("SELECT substring_grapheme(v, 0, 4294967296) FROM 't.parquet'", "length outside"),
        ("SELECT COUNT(1, 2)", "COUNT takes one argument"),
        ("SELECT FIRST(i, 2) FROM 't.parquet'", "FIRST takes one argument"),
        ("SELECT LAST(i, 2) FROM 't.parquet' GROUP BY v", "LAST takes one argument"),
        ("SELECT string_agg('a', 'b', 'c')", "at most two"),
        ("SELECT percentile_cont(0.25, 0.5) WITHIN GROUP (ORDER BY i) FROM 't.parquet'", "one fraction"),
        ("SELECT '1'::INTEGER(1000)", "integer type takes no parameters"),
        ("SELECT 1::DECIMAL('32')", "integer constants"),
        ("SELECT 1::DECIMAL(18, '2')", "integer constants"),
        ("SELECT 1::DECIMAL(3.2)", "integer constants"),
        ("SELECT 1::DECIMAL(TRUE)", "integer constants"),
        ("SELECT '1e9999999999'::DECIMAL", "Could not cast"),
        ("SELECT '1e-9999999999'::DECIMAL", "Could not cast"),
        ("SELECT split_part('a')", "split_part takes 3"),
        ("SELECT row_number() OVER (RANGE BETWEEN UNBOUNDED FOLLOWING AND UNBOUNDED PRECEDING)", "UNBOUNDED"),
        ("SELECT row_number() OVER (RANGE BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED PRECEDING)", "UNBOUNDED"),
    ],
)
def test_errors_where_duckdb_errs(tables, sql, match):
    with pytest.raises(duckdb.Error):
        duckdb.sql(sql).fetchall()
    with pytest.raises(TidalError, match=match):
        plan(sql).result()


@pytest.mark.parametrize(
    ("sql", "match"),
    [
        # DuckDB answers differently from what tidal would: refused by name
        ("SELECT MIN(i, 2) FROM 't.parquet'", "MIN with a count"),
        ("SELECT MAX(i, 2) FROM 't.parquet'", "MAX with a count"),
        ("SELECT mode(v ORDER BY o DESC) FROM 't.parquet'", "ORDER BY inside mode"),
        ("SELECT i, cume_dist(ORDER BY o) OVER (ORDER BY i) FROM 't.parquet'", "ORDER BY inside a window"),
        ("SELECT i, rank(ORDER BY o DESC) OVER (ORDER BY i) FROM 't.parquet'", "ORDER BY inside a window"),
        ("SELECT median(x) FROM (VALUES (INTERVAL '1 day'), (INTERVAL '10 days')) v(x)", "MEDIAN of INTERVAL"),
        ("SELECT i FROM 'iv.parquet'", "Parquet INTERVAL"),
    ],
)
def test_refused_where_duckdb_answers_otherwise(tables, sql, match):
    duck = duckdb.sql(sql).fetchall()
    with pytest.raises(TidalError, match=match):
        plan(sql).result()
    assert duck  # DuckDB does answer


def test_mode_order_matters_in_duckdb():
    """Why mode(x ORDER BY k) is refused: the order breaks mode's ties."""
    sql = "SELECT mode(v ORDER BY o ASC NULLS LAST), mode(v ORDER BY o DESC NULLS FIRST) FROM d"
    values = "WITH d(v, o) AS (VALUES ('a', NULL), ('a', 4), ('b', 3), ('b', 5)) "
    [(asc, desc)] = duckdb.sql(values + sql).fetchall()
    assert asc != desc
    with pytest.raises(TidalError, match="ORDER BY inside mode"):
        plan(values + sql).result()


@pytest.mark.parametrize(
    "xs", [[1e301, -1e301], [1e301, -1e301, 1e301], [1e301, 1e301], [1e301, math.inf], [1e200, -1e200, None]]
)
def test_variance_past_float64_as_duckdb_on_both_paths(in_dir, xs):
    """Finite values whose squared deviations pass float64: DuckDB's variance is inf (tidal's shifted sums
    gave inf - inf = NaN); an infinite value still makes it NaN."""
    from tidal.sql.query import final_snapshot
    from tidal.sql.relational import applies

    table = pa.table({"k": [1] * len(xs), "x": pa.array(xs, pa.float64())})
    pq.write_table(table, "t.parquet")
    calls = "var_samp(x), var_pop(x), stddev_samp(x), stddev_pop(x)"
    q = plan(f"SELECT k, {calls} FROM 't.parquet' GROUP BY k")
    assert applies(q)
    relational = [tuple(r.values()) for r in q.result().to_pylist()]
    streamed = [tuple(r.values()) for r in q.finish(final_snapshot(q.events())).to_pylist()]
    duck = duckdb.sql(f"SELECT k, {calls} FROM 't.parquet' GROUP BY k").fetchall()
    assert repr(relational) == repr(streamed) == repr(duck)


def test_contains_of_untyped_null_constants_as_duckdb(tables):
    """DuckDB cannot choose between its text, list and map contains for two untyped constants; over a
    text column a NULL needle is NULL."""
    for sql in ("SELECT contains(NULL, NULL)", "SELECT contains('abc', NULL)"):
        with pytest.raises(duckdb.Error):
            duckdb.sql(sql).fetchall()
        with pytest.raises(TidalError, match="ambiguous"):
            plan(sql).result()
    sql = "SELECT contains(v, NULL), contains(NULL, 'a'), contains(v, 'a') FROM 't.parquet'"
    assert sorted(_tidal(sql), key=repr) == sorted(duckdb.sql(sql).fetchall(), key=repr)


def test_map_refused_by_name(tables):
    with pytest.raises(TidalError, match="MAP"):
        plan("SELECT map { 1: decimal 'b' }").result()
