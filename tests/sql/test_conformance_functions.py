"""More of DuckDB's expressions against DuckDB on the same data: TIMESTAMP/DATE literals and casts,
IS [NOT] DISTINCT FROM, prefix/suffix/strpos/split_part/translate/ascii, logarithms, LIKE ... ESCAPE,
a boolean compared with a number. Each answer must equal DuckDB's, or be an error naming the construct."""

from __future__ import annotations

import datetime as dt
import os

import duckdb
import pyarrow as pa

from tidal.sql import plan

from .test_conformance_expressions import STRINGS, _write, assert_same, assert_unsupported

TIMES = pa.table(
    {
        "t": pa.array(
            [dt.datetime(2024, 6, 1, 18, 0, 30), dt.datetime(2024, 6, 1, 18, 0, 31, 500000), None,
             dt.datetime(1960, 1, 3, 0, 0, 0, 123000)],
            pa.timestamp("us"),
        ),
        "d": pa.array([dt.date(2024, 6, 1), None, dt.date(2024, 1, 3), dt.date(1960, 1, 3)], pa.date32()),
        "s": pa.array(["2024-01-03", "2024-01-03 12:00:00.5", None, "2024-06-01T18:00:30"], pa.string()),
        "b": pa.array([True, False, None, True], pa.bool_()),
        "i": pa.array([1, 0, 2, None], pa.int64()),
        "f": pa.array([1.5, 0.0, None, 1.0], pa.float64()),
    }
)  # fmt: skip


def test_timestamp_and_date_literals_and_casts(tmp_path):
    where = _write(tmp_path, TIMES)
    assert_same(
        "SELECT t, TIMESTAMP '2024-01-03', TIMESTAMP '2024-01-03 12:00:00.5', DATE '2024-01-03', "
        "CAST(s AS TIMESTAMP), s::TIMESTAMP, CAST(s AS DATE), CAST(d AS TIMESTAMP), CAST(t AS DATE), "
        "CAST(t AS VARCHAR), CAST(NULL AS TIMESTAMP), TRY_CAST('x' AS TIMESTAMP) FROM 't.parquet'",
        where,
    )
    assert_same("SELECT t FROM 't.parquet' WHERE t > TIMESTAMP '2024-06-01 18:00:30'", where)
    assert_same("SELECT t FROM 't.parquet' WHERE t >= CAST('2024-06-01' AS DATE) OR d = DATE '2024-01-03'", where)
    assert_same("SELECT coalesce(d, t), CASE WHEN b THEN d ELSE t END, greatest(d, t) FROM 't.parquet'", where)
    # a cast binds to the typed literal, not to its string (sqlglot alone reads it as text cast to TIMESTAMP)
    assert_same(
        "SELECT t, TIMESTAMP '2024-01-03 10:00:00'::VARCHAR, DATE '2024-01-03'::VARCHAR, "
        "'TIMESTAMP ''x''' FROM 't.parquet'",
        where,
    )


def test_casts_duckdb_refuses_or_reads_otherwise_are_errors(tmp_path):
    where = _write(tmp_path, TIMES)
    assert_unsupported("SELECT CAST('x' AS TIMESTAMP)", where, "not a timestamp")
    assert_unsupported("SELECT '2024-01-03 10:00:00+02'::TIMESTAMP", where, "not a timestamp")
    assert_unsupported("SELECT CAST(i AS TIMESTAMP) FROM 't.parquet'", where, "not supported")


def test_is_distinct_from(tmp_path):
    where = _write(tmp_path, TIMES)
    assert_same(
        "SELECT i IS DISTINCT FROM 1, i IS NOT DISTINCT FROM 1, i IS DISTINCT FROM NULL, "
        "NULL IS NOT DISTINCT FROM NULL, i IS NOT DISTINCT FROM f, s IS DISTINCT FROM 'x', "
        "t IS NOT DISTINCT FROM TIMESTAMP '2024-06-01 18:00:30', b IS DISTINCT FROM 2 FROM 't.parquet'",
        where,
    )


def test_string_functions(tmp_path):
    where = _write(tmp_path, STRINGS)
    assert_same(
        "SELECT id, prefix(s, 'He'), suffix(s, 'ld'), prefix(s, ''), prefix(s, NULL), strpos(s, 'l'), "
        "instr(s, 'o'), position('ö' IN s), strpos(s, ''), strpos(s, NULL), split_part(s, 'o', 2), "
        "split_part(s, 'o', -1), split_part(s, 'o', 0), split_part(s, 'o', 9), split_part(s, '', 2), "
        "split_part(s, '', -1), split_part(s, NULL, 1), split_part(s, 'o', NULL), translate(s, 'lo', 'L'), "
        "translate(s, 'll', 'xy'), translate(s, NULL, 'x'), ascii(s), ascii(''), ascii(NULL) FROM 't.parquet'",
        where,
    )


def test_logarithms(tmp_path):
    where = _write(tmp_path, STRINGS)
    assert_same(
        "SELECT id, log2(n), log10(n), ln(n), log(n), log(3, n), log2(8), log10(1000), log2(NULL) FROM 't.parquet'",
        where,
    )


def test_trunc_goes_toward_zero_in_the_arguments_type(tmp_path):
    table = pa.table(
        {
            "f": pa.array([-2.7, 2.7, -0.5, None, float("nan"), float("-inf"), 1e300, -1e-300]),
            "i": pa.array([1, -5, None, 7, 0, 3, 2, 9], pa.int64()),
            "r": pa.array([-12.5, 1.5, None, 0.0, -0.0, 3.9, 2.1, 1.0], pa.float32()),
        }
    )
    where = _write(tmp_path, table)
    assert_same(
        "SELECT trunc(f), trunc(i), trunc(r), trunc(NULL), trunc(-2.75), trunc(TRY_CAST(f AS DECIMAL(9, 2))) "
        "FROM 't.parquet' WHERE trunc(f) <> 0 OR f IS NULL OR trunc(f) = 0",
        where,
    )
    assert_unsupported("SELECT trunc(f, 1) FROM 't.parquet'", where, "trunc with a number of places")


def test_like_escape(tmp_path):
    where = _write(tmp_path, STRINGS)
    assert_same(
        "SELECT id, s LIKE 'foo!%%' ESCAPE '!', s LIKE '%!_%' ESCAPE '!', s LIKE 'a\\\\b%' ESCAPE '\\', "
        "s NOT LIKE 'foo!%%' ESCAPE '!', s ILIKE 'hello%' ESCAPE '!', s LIKE 'foo%' ESCAPE '', "
        "s LIKE '%' ESCAPE NULL FROM 't.parquet'",
        where,
    )
    assert_unsupported("SELECT s LIKE 'a!' ESCAPE '!' FROM 't.parquet'", where, "escape")
    assert_unsupported("SELECT s LIKE 'a' ESCAPE 'xy' FROM 't.parquet'", where, "escape")


def test_boolean_compared_with_a_number(tmp_path):
    where = _write(tmp_path, TIMES)
    assert_same(
        "SELECT b = 1, b = 0, b = 2, b = i, b < 1, b = 1.5, b = f, 1 = b, b <> 2, b > -1, "
        "b BETWEEN 0 AND 1 FROM 't.parquet'",
        where,
    )
    assert_same("SELECT i FROM 't.parquet' WHERE b = 1", where)


PAY = pa.table(
    {
        "g": pa.array(["m", "f", "m", None, "f", "m"]),
        "pay": pa.array([10, 20, None, 40, 5, 7], pa.int64()),
        "ok": pa.array([True, False, None, True, True, False]),
        "x": pa.array([1.5, None, -2.0, 3.0, 0.0, 1.5]),
    }
)


def test_aggregate_filter_clause(tmp_path):
    where = _write(tmp_path, PAY)
    assert_same(
        "SELECT SUM(pay) FILTER (WHERE g = 'm'), COUNT(*) FILTER (WHERE ok), COUNT(pay) FILTER (WHERE NOT ok), "
        "AVG(x) FILTER (WHERE pay > 6), MIN(x) FILTER (WHERE g IS NULL), COUNT(DISTINCT x) FILTER (WHERE pay < 30), "
        "quantile_cont(x, 0.5) FILTER (WHERE x > 0), MAX(pay) FILTER (WHERE FALSE) FROM 't.parquet'",
        where,
    )
    assert_same(
        "SELECT g, SUM(pay) FILTER (WHERE ok), COUNT(*) FILTER (WHERE x > 0) AS pos FROM 't.parquet' GROUP BY g",
        where,
    )
    assert_unsupported("SELECT FIRST(pay) FILTER (WHERE ok) FROM 't.parquet'", where, "FILTER", "not supported")


def test_bool_or_and_bool_and(tmp_path):
    where = _write(tmp_path, PAY)
    assert_same("SELECT bool_or(ok), bool_and(ok), bool_or(pay > 30), bool_and(x >= 0) FROM 't.parquet'", where)
    assert_same("SELECT g, bool_or(ok), bool_and(pay > 6) FROM 't.parquet' GROUP BY g", where)


def test_having_and_aggregate_arguments_may_name_select_aliases(tmp_path):
    where = _write(tmp_path, PAY)
    assert_same("SELECT g, SUM(pay) AS total FROM 't.parquet' GROUP BY g HAVING total > 15", where)
    assert_same("SELECT pay % 2 AS k, SUM(k) FROM 't.parquet' GROUP BY k", where)
    assert_same("SELECT pay % 2 AS k, COUNT(*) FROM 't.parquet' GROUP BY k HAVING k > 0", where)
    # an input column of the same name wins over the alias, as in DuckDB
    assert_same("SELECT g AS pay, SUM(pay) FROM 't.parquet' GROUP BY g", where)


def test_values_lists_and_column_aliases(tmp_path):
    where = _write(tmp_path, PAY)
    assert_same("SELECT * FROM (VALUES (1, 2), (3, 2)) AS t(a, b)", where)
    assert_same("VALUES (1, 'a'), (2, NULL), (NULL, 'c')", where)
    assert_same("SELECT col0 * 2, col1 FROM (VALUES (1, 2.5), (3, NULL), (NULL, -1.0))", where)
    assert_same("SELECT x, x IS NULL, x IS DISTINCT FROM NULL FROM (VALUES (NULL), (1), (2)) AS t(x)", where)
    assert_same("SELECT b, SUM(a) FROM (VALUES (1, 'x'), (2, 'y'), (3, 'x')) t(a, b) GROUP BY b", where)
    assert_same(
        "SELECT g, v.label FROM 't.parquet' JOIN (VALUES ('m', 'male'), ('f', 'female')) v(code, label) ON g = v.code",
        where,
    )
    assert_same("SELECT i, s FROM (SELECT pay, g || '_x' FROM 't.parquet') tbl(i, s) WHERE i > 6", where)
    assert_unsupported("SELECT * FROM (VALUES (1), ('x')) t(a)", where, "mixes types")
    assert_unsupported("SELECT * FROM (VALUES (1, 2)) t(a, b, c)", where, "3 column names for 2 columns")


def test_range_and_generate_series(tmp_path):
    where = _write(tmp_path, PAY)
    for sql in (
        "SELECT * FROM range(5)",
        "SELECT * FROM range(2, 9, 3)",
        "SELECT * FROM range(9, 2, -3)",
        "SELECT * FROM range(3, 3)",
        "SELECT * FROM generate_series(1, 5, 2)",
        "SELECT * FROM generate_series(5, 1, -2)",
        "SELECT SUM(range), COUNT(*), bool_or(range > 98) FROM range(100)",
        "SELECT i * 2 AS d FROM range(1, 4) t(i) WHERE i <> 2",
    ):
        assert_same(sql, where)
    assert_unsupported("SELECT * FROM range(1, 10, 0)", where, "step must not be 0")


def test_except_and_intersect_are_set_operations(tmp_path):
    where = _write(tmp_path, PAY)
    for sql in (
        "SELECT g FROM 't.parquet' EXCEPT SELECT 'f'",
        "SELECT g, ok FROM 't.parquet' INTERSECT SELECT g, ok FROM 't.parquet' WHERE pay > 6",
        "SELECT NULL EXCEPT SELECT NULL",
        "SELECT pay FROM 't.parquet' EXCEPT SELECT * FROM range(8, 30) ORDER BY 1",
        "SELECT x FROM 't.parquet' INTERSECT SELECT range FROM range(4) ORDER BY x DESC LIMIT 1",
        "SELECT * FROM (SELECT g FROM 't.parquet' EXCEPT SELECT 'm') t WHERE g IS NOT NULL",
        "SELECT g FROM 't.parquet' UNION SELECT 'z' EXCEPT SELECT 'm'",
    ):
        assert_same(sql, where)
    assert_same("SELECT g FROM 't.parquet' EXCEPT ALL SELECT 'f'", where)
    assert_same("SELECT g, ok FROM 't.parquet' INTERSECT ALL SELECT g, ok FROM 't.parquet' WHERE pay > 6", where)
    assert_unsupported("SELECT 1, 2 INTERSECT SELECT 1", where, "INTERSECT sides have 2 and 1 columns")


def test_uncorrelated_scalar_subqueries(tmp_path):
    where = _write(tmp_path, PAY)
    for sql in (
        "SELECT (SELECT 1), (SELECT NULL)",
        "SELECT pay FROM 't.parquet' WHERE pay > (SELECT AVG(pay) FROM 't.parquet')",
        "SELECT g, SUM(pay) FROM 't.parquet' GROUP BY g HAVING SUM(pay) > (SELECT SUM(pay) * 0.3 FROM 't.parquet')",
        "SELECT pay, (SELECT MAX(pay) FROM 't.parquet') - pay AS gap FROM 't.parquet'",
        "SELECT COUNT(*), (SELECT COUNT(*) FROM range(7)) FROM 't.parquet'",
        "SELECT (SELECT x FROM 't.parquet' WHERE x > 100) IS NULL",
        "SELECT g FROM 't.parquet' WHERE g = (SELECT g FROM 't.parquet' WHERE pay = 40) "
        "OR x = (SELECT MIN(x) FROM 't.parquet')",
    ):
        assert_same(sql, where)
    assert_unsupported("SELECT (SELECT pay FROM 't.parquet')", where, "more than one row")
    assert_same(  # correlated: tests/sql/test_correlated_subqueries.py
        "SELECT pay FROM 't.parquet' t1 WHERE pay > (SELECT AVG(pay) FROM 't.parquet' t2 WHERE t2.g = t1.g)", where
    )
    assert_unsupported("SELECT (SELECT pay, g FROM 't.parquet' LIMIT 1)", where, "one column")


def test_group_by_all_and_order_by_all(tmp_path):
    where = _write(tmp_path, PAY)
    for sql in (
        "SELECT g, ok, SUM(pay), COUNT(*) FROM 't.parquet' GROUP BY ALL ORDER BY ALL",
        "SELECT g, pay % 2 AS odd, MAX(x) FROM 't.parquet' GROUP BY ALL ORDER BY ALL DESC",
        "SELECT g, x FROM 't.parquet' ORDER BY ALL NULLS FIRST",
        "SELECT COUNT(*) FROM 't.parquet' GROUP BY ALL",
    ):
        assert_same(sql, where)
        if "ORDER BY" in sql:  # and in DuckDB's order, not only the same rows
            old = os.getcwd()
            os.chdir(where)
            try:
                got, want = plan(sql).result().to_pylist(), duckdb.connect().sql(sql).to_arrow_table().to_pylist()
            finally:
                os.chdir(old)
            assert [tuple(r.values()) for r in got] == [tuple(r.values()) for r in want], sql


def test_having_without_aggregates_and_where_naming_select_aliases(tmp_path):
    where = _write(tmp_path, PAY)
    for sql in (
        "SELECT 42 HAVING 42 > 20",
        "SELECT 42 HAVING 42 < 20",
        "SELECT 1 AS one FROM 't.parquet' HAVING 1 < 2",
        "SELECT 1 AS one FROM 't.parquet' WHERE pay > 1000 HAVING 1 < 2",
        "SELECT pay % 2 AS k FROM 't.parquet' WHERE k <> 0",
        "SELECT pay * 2 AS pay FROM 't.parquet' WHERE pay > 10",  # the input column wins over the alias
    ):
        assert_same(sql, where)


def test_string_agg_joins_values_in_input_order(tmp_path):
    where = _write(tmp_path, PAY)
    for sql in (
        "SELECT string_agg(g), string_agg(g, ' | '), string_agg(pay, ';'), string_agg(g, NULL) FROM 't.parquet'",
        "SELECT ok, string_agg(g, '-') FROM 't.parquet' GROUP BY ok",
        "SELECT string_agg(x) FILTER (WHERE pay > 6), group_concat(g) FROM 't.parquet'",
        "SELECT string_agg(g) FROM 't.parquet' WHERE pay > 1000",
    ):
        assert_same(sql, where)


def test_floats_as_text_print_as_duckdb_prints_them(tmp_path):
    where = _write(tmp_path, PAY)
    assert_same(
        "SELECT CAST(x AS VARCHAR), 'v' || x, concat(x, '!'), CAST(CAST(x AS REAL) AS VARCHAR), x::VARCHAR "
        "FROM (VALUES (3.0::DOUBLE), (0.1), (NULL), ('-0.0'::DOUBLE), ('inf'::DOUBLE), ('nan'::DOUBLE), (1e20), "
        "(1e-7), (123456789.125)) t(x)",
        where,
    )
    assert_same("SELECT CAST(x AS VARCHAR), x || '', CAST(pay AS VARCHAR) FROM 't.parquet'", where)
