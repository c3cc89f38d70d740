"""Names of unaliased select items over random expression trees, checked against DuckDB's own names.

Trees are drawn from what tidal/sql/logical/names.py spells (operators, comparisons, AND/OR chains, NOT,
IS [NOT] NULL/TRUE, BETWEEN, IN, LIKE, CASE, if, casts, negated numbers, functions, aggregates): each is
parsed by tidal's parser and named by ``duckdb_name``, and DuckDB names the same text. Spellings that
tidal's tree cannot tell apart (``**`` and ``^``, ``pow`` and ``power``, ``INT8`` and ``BIGINT``, ``TEXT``
and ``VARCHAR``, ``NOT x IS NULL`` and ``x IS NOT NULL``) are left out: names.py says which it writes.
"""

from __future__ import annotations

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tidal.sql.dialect import parse
from tidal.sql.logical.names import duckdb_name

INTS = st.sampled_from(["x", "n", "1", "0", "42", "-1", "-x", "t.x", "- -3", "-(0)", "-(-(2))"])
FLOATS = st.sampled_from(["y", "2.5", "1.50", "1e3", "-2.5", "-(0.1)", "- - 1.50"])
STRINGS = st.sampled_from(["s", "'a'", "'it''s'", '"A b"', "''", "t.s", "'%a_'"])
BOOLS = st.sampled_from(["b", "true", "false", "NULL", "(NOT b)"])
NUM_OPS = ["+", "-", "*", "/", "//", "%", "^"]
COMPARE = ["=", "<>", "!=", "<", "<=", ">", ">=", "IS DISTINCT FROM", "IS NOT DISTINCT FROM"]
CASTS = ["CAST({} AS {})", "{}::{}", "TRY_CAST({} AS {})"]
NUM_TYPES = ["INT", "INTEGER", "BIGINT", "DOUBLE", "DECIMAL(10,2)", "SMALLINT", "FLOAT", "REAL", "HUGEINT"]


def _f(template: str):
    return lambda parts: template.format(*parts)


def _numbers(num, boo, text):
    return st.one_of(
        st.tuples(num, st.sampled_from(NUM_OPS), num).map(_f("{} {} {}")),
        st.tuples(num, st.sampled_from(NUM_OPS), num).map(_f("({} {} {})")),
        num.map("-({})".format),
        st.tuples(st.sampled_from(["abs", "ABS", "sqrt", "ln", "floor", "ceil", "sign", "round"]), num).map(
            _f("{}({})")
        ),
        st.tuples(st.sampled_from(["round", "greatest", "least", "nullif", "coalesce", "ifnull"]), num, num).map(
            _f("{}({}, {})")
        ),
        st.tuples(st.sampled_from(["length", "strlen", "ascii"]), text).map(_f("{}({})")),
        st.tuples(st.sampled_from(CASTS), num, st.sampled_from(NUM_TYPES)).map(lambda t: t[0].format(t[1], t[2])),
        st.tuples(boo, num, num).map(_f("CASE WHEN {} THEN {} ELSE {} END")),
        st.tuples(boo, num).map(_f("CASE WHEN {} THEN {} END")),
        st.tuples(num, num, num, num).map(_f("CASE {} WHEN {} THEN {} ELSE {} END")),
        st.tuples(boo, num, num).map(_f("if({}, {}, {})")),
        st.sampled_from(["extract(year FROM d)", "extract(epoch FROM d)", "extract(millisecond FROM d)"]),
    )


def _booleans(num, boo, text):
    return st.one_of(
        st.tuples(num, st.sampled_from(COMPARE), num).map(_f("{} {} {}")),
        st.tuples(text, st.sampled_from(COMPARE), text).map(_f("{} {} {}")),
        st.tuples(boo, st.sampled_from(["AND", "OR"]), boo).map(_f("{} {} {}")),
        st.tuples(boo, st.sampled_from(["AND", "OR"]), boo).map(_f("({} {} {})")),
        boo.map("(NOT ({}))".format),  # bare, NOT x IS TRUE reads as x IS NOT TRUE
        st.tuples(num, st.sampled_from(["IS NULL", "IS NOT NULL"])).map(_f("{} {}")),
        st.tuples(boo, st.sampled_from(["IS TRUE", "IS FALSE", "IS NOT TRUE", "IS NOT FALSE"])).map(_f("{} {}")),
        st.tuples(num, st.sampled_from(["BETWEEN", "NOT BETWEEN"]), num, num).map(_f("{} {} {} AND {}")),
        st.tuples(num, st.sampled_from(["IN", "NOT IN"]), st.lists(num, min_size=1, max_size=3)).map(
            lambda t: f"{t[0]} {t[1]} ({', '.join(t[2])})"
        ),
        st.tuples(text, st.sampled_from(["LIKE", "NOT LIKE", "ILIKE", "NOT ILIKE", "GLOB", "SIMILAR TO"]), text).map(
            _f("{} {} {}")
        ),
        st.tuples(text, text).map(_f("contains({}, {})")),
        st.tuples(boo, boo, boo).map(_f("CASE WHEN {} THEN {} ELSE {} END")),
    )


def _strings(num, boo, text):
    return st.one_of(
        st.tuples(text, text).map(_f("{} || {}")),
        st.tuples(st.sampled_from(["upper", "lower", "UPPER", "trim", "reverse"]), text).map(_f("{}({})")),
        st.tuples(st.sampled_from(["concat", "coalesce", "nullif"]), text, text).map(_f("{}({}, {})")),
        st.tuples(st.sampled_from(["left", "right", "repeat", "substring"]), text, num).map(_f("{}({}, {})")),
        st.tuples(text, text, text).map(_f("replace({}, {}, {})")),
        st.tuples(st.sampled_from(CASTS), num, st.sampled_from(["VARCHAR", "VARCHAR"])).map(
            lambda t: t[0].format(t[1], t[2])
        ),
        st.tuples(boo, text, text).map(_f("CASE WHEN {} THEN {} ELSE {} END")),
    )


def _expressions(depth: int):
    num, boo, text = st.one_of(INTS, FLOATS), BOOLS, STRINGS
    for _ in range(depth):
        num, boo, text = (
            st.one_of(num, _numbers(num, boo, text)),
            st.one_of(boo, _booleans(num, boo, text)),
            st.one_of(text, _strings(num, boo, text)),
        )
    return num, boo, text


NUM, BOO, TEXT = _expressions(3)
AGGREGATES = st.one_of(
    st.tuples(
        st.sampled_from(["sum", "avg", "min", "max", "count", "SUM", "stddev", "median", "bool_and", "bool_or"]), NUM
    ).map(_f("{}({})")),
    st.tuples(NUM, BOO).map(_f("sum({}) FILTER (WHERE {})")),
    BOO.map("count(*) FILTER (WHERE {})".format),
    NUM.map("count(DISTINCT {})".format),
)


@pytest.fixture(scope="module")
def con():
    con = duckdb.connect()
    con.sql(
        "CREATE TABLE t AS SELECT 1 AS x, 2.5 AS y, 'a' AS s, true AS b, 'x' AS \"A b\", NULL::INT AS n, "
        "TIMESTAMP '2024-01-02 03:04:05' AS d"
    )
    return con


def _check(con, text: str) -> None:
    try:
        want = con.sql(f"SELECT {text} FROM t").columns[0]
    except duckdb.Error:
        return  # no such expression in DuckDB (a type mismatch drawn): nothing to compare
    node = parse(f"SELECT {text} FROM t").expressions[0]
    if type(node).__name__ == "Column":
        return  # a bare column is named by its name (tidal.sql.logical.exprs._display)
    assert duckdb_name(node) == want, text


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(st.one_of(NUM, BOO, TEXT))
def test_names_of_random_expressions_are_duckdbs(con, text):
    _check(con, text)


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(AGGREGATES)
def test_names_of_random_aggregates_are_duckdbs(con, text):
    _check(con, text)
