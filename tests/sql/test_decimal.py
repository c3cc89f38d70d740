"""DECIMAL literals and arithmetic against DuckDB: values and types.

A number with a decimal point is a DECIMAL(width, scale) in DuckDB (a DOUBLE with an exponent or over 38
digits); its arithmetic with integers and DECIMALs stays DECIMAL by DuckDB's width/scale rules, with a
DOUBLE it is a DOUBLE, ``/`` always a DOUBLE; SUM is an exact DECIMAL(38, s). Random expressions over
literals and integer, DOUBLE and DECIMAL columns (with NULLs) are compared with DuckDB's answers, value
and Arrow type; the explicit cases are the wrong answers this fixed. ``DECIMAL_EXAMPLES`` raises the
number of random expressions (default 60).
"""

from __future__ import annotations

import contextlib
import math
import os
from decimal import Decimal

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tidal.core.errors import TidalError
from tidal.sql import plan

ROWS = pa.table(
    {
        "r": pa.array(range(6), pa.int64()),
        "i": pa.array([1, -7, None, 12, 0, 4000], pa.int64()),
        "z": pa.array([None, None, 2, None, None, None], pa.int64()),
        "big": pa.array([1, -(2**62), None, 9007199254740992, 0, 9007199254740993], pa.int64()),
        "n": pa.array([3, None, -2, 5, 0, 1], pa.int32()),
        "x": pa.array([1.5, -0.25, 100.5, None, 0.0, 2.675], pa.float64()),
        "d": pa.array(
            [Decimal(v) if v else None for v in ("1.10", "-2.25", None, "999.99", "0.00", "0.05")], pa.decimal128(5, 2)
        ),  # fmt: skip
        "e": pa.array(
            [Decimal(v) if v else None for v in ("12.3456", None, "-0.0001", "7", "1", "-3.5")], pa.decimal128(12, 4)
        ),  # fmt: skip
    }
)


@pytest.fixture
def table_dir(tmp_path):
    pq.write_table(ROWS, tmp_path / "t.parquet")
    with contextlib.chdir(tmp_path):
        yield tmp_path


def _norm_type(t: pa.DataType) -> str:
    # integers: DuckDB types an integer literal INTEGER, tidal BIGINT (a known difference, not DECIMAL's)
    return "integer" if pa.types.is_integer(t) else str(t)


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return a == b or math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-300)
    if isinstance(a, Decimal) or isinstance(b, Decimal):
        return type(a) is type(b) and a == b and a.as_tuple().exponent == b.as_tuple().exponent
    return a == b


def _answers(sql: str):
    try:
        got = plan(sql).result()
    except TidalError as exc:
        got = exc
    try:
        want = duckdb.connect().sql(sql).to_arrow_table()
    except duckdb.Error as exc:
        want = exc
    return got, want


def assert_same(sql: str, *, types: bool = True) -> None:
    got, want = _answers(sql)
    if isinstance(want, Exception):  # DuckDB refuses (an overflow, a division by zero): so must tidal
        assert isinstance(got, Exception), f"{sql}: DuckDB refuses ({want}), tidal answers {got.to_pylist()}"
        return
    assert not isinstance(got, Exception), f"{sql}: tidal refuses ({got}), DuckDB answers {want.to_pylist()}"
    if types:
        # an operation on an untyped NULL is of DuckDB's NULL type; tidal types it as the other operand
        kept = [not pa.types.is_null(t) for t in want.schema.types]
        pairs = zip(got.schema.types, want.schema.types, kept, strict=True)
        assert all(_norm_type(a) == _norm_type(b) for a, b, k in pairs if k), (
            f"{sql}\n tidal:  {got.schema}\n duckdb: {want.schema}"
        )
    g, w = ([tuple(r.values()) for r in t.to_pylist()] for t in (got, want))
    assert len(g) == len(w) and all(
        all(_same(a, b) for a, b in zip(x, y, strict=True)) for x, y in zip(g, w, strict=True)
    ), f"{sql}\n tidal:  {g}\n duckdb: {w}"


# -- the wrong answers of the issue ----------------------------------------------------------------------
@pytest.mark.parametrize(
    "sql",
    [
        "SELECT 0.1 + 0.2 AS v",
        "SELECT r, i * 1.1 AS v FROM 't.parquet' ORDER BY r",
        "SELECT r, d * 1.5 AS v FROM 't.parquet' ORDER BY r",
        "SELECT sum(d) AS s, sum(e) AS t, min(d) AS lo, max(e) AS hi, avg(d) AS a FROM 't.parquet'",
        "SELECT typeof(1.5) a, typeof(1.5 * 2) b, typeof(0.1 + 0.2) c, typeof(1.5 / 2) d, typeof(1.5 % 2) e, "
        "typeof(1.5 * 1::BIGINT) f, typeof(1e2) g, typeof(1.5 + 1.0::DOUBLE) h, typeof(1.5 + 1.0::FLOAT) i",
        "SELECT 1.50 AS a, 0.0000001 AS b, 00001.5 AS c, 1.500000000000000000000000000000000000000 AS d, "
        "1.5e0 AS e, -1.5 AS f, 5. AS g",
        # DECIMAL op DOUBLE is DOUBLE; DECIMAL / DECIMAL is DOUBLE; % keeps DECIMAL
        "SELECT r, x + 0.1 AS a, d / 1.5 AS b, d % 0.4 AS c, i % 1.5 AS e, e * d AS f, -d AS g "
        "FROM 't.parquet' ORDER BY r",
        "SELECT r, round(d, 1) a, ceil(d) b, floor(e) c, abs(d) f, round(1.55) g FROM 't.parquet' ORDER BY r",
        "SELECT r, coalesce(d, 1.5) a, coalesce(d, 2) b, coalesce(d, x) c, CASE WHEN i > 0 THEN d ELSE 2.5 END k, "
        "CASE WHEN i > 0 THEN 1.5 ELSE 2 END m, greatest(d, e) g, least(d, 1) l, nullif(d, 1.1) z "
        "FROM 't.parquet' ORDER BY r",
        "SELECT CAST(1.25 AS DECIMAL(3,1)) a, CAST(-1.25 AS DECIMAL(3,1)) b, CAST('2.675' AS DECIMAL(5,2)) c, "
        "CAST(2.675::DOUBLE AS DECIMAL(9,2)) d, CAST(1 AS DECIMAL) e, CAST(1.5 AS DOUBLE) f, CAST(2.5 AS INTEGER) g",
        # a set operation's common type: DuckDB's INTEGER literal is 10 digits wide (tidal computes a BIGINT)
        "SELECT 1.5 AS v UNION ALL SELECT 2 UNION ALL SELECT -2147483648 UNION ALL SELECT (1 + 2) * 3",
        "SELECT typeof(v) t FROM (SELECT 1.5 AS v UNION ALL SELECT 2) UNION ALL SELECT typeof(1.5) "
        "UNION ALL SELECT typeof(v) FROM (SELECT 0.25 AS v UNION ALL SELECT 3000000000)",
        "SELECT r, d IN (1.1, 2) a, i IN (1, 2.5) b, x IN (1.5, 3) c, d = 1.10 e, d > 1 f, e < x g "
        "FROM 't.parquet' ORDER BY r",
    ],
)
def test_decimal_answers_and_types_are_duckdbs(table_dir, sql):
    assert_same(sql)


def test_overflow_and_division_by_zero_are_errors_as_in_duckdb(table_dir):
    for sql in (
        "SELECT 99999999999999999.9 * 99999999999999999.9 AS v",
        "SELECT 1.5 % 0 AS v",
        "SELECT CAST(999.96 AS DECIMAL(4,1)) AS v",
        "SELECT d % 0.0 AS v FROM 't.parquet'",
    ):
        assert_same(sql)


def test_an_integer_column_against_a_decimal_literal_compares_exactly(table_dir):
    # 2**53 + 1 as a DOUBLE is 2**53: a comparison made in floating point would drop or keep the wrong rows
    for op in ("<", "<=", ">", ">=", "=", "<>"):
        assert_same(f"SELECT r FROM 't.parquet' WHERE big {op} 9007199254740992.5 ORDER BY r")
        assert_same(f"SELECT r FROM 't.parquet' WHERE 12.0 {op} i ORDER BY r")
        assert_same(f"SELECT r, n {op} -2.5 AS v FROM 't.parquet' ORDER BY r")
    assert_same("SELECT r FROM 't.parquet' WHERE big < 99999999999999999999.5 ORDER BY r")  # beyond BIGINT
    assert_same("SELECT r FROM 't.parquet' WHERE big > -99999999999999999999.5 ORDER BY r")
    assert_same("SELECT r, big * 0.5 AS h, big + 0.5 AS p FROM 't.parquet' ORDER BY r")


def test_a_double_filter_with_a_decimal_literal_keeps_the_compiled_kernels(table_dir):
    q = plan("SELECT r FROM 't.parquet' WHERE x > 100.5 OR x * 1.5 < -0.1")
    text = q.explain()
    assert "columnar: ((x > 100.5) or ((x * 1.5) < -0.1))" in text, text  # float constants: the kernels' tree
    assert "pyarrow.compute" not in text, text
    integer = plan("SELECT r FROM 't.parquet' WHERE i > 2.5").explain()
    assert "(i >= 3)" in integer, integer
    assert_same("SELECT r FROM 't.parquet' WHERE x > 100.5 OR x * 1.5 < -0.1 ORDER BY r")


def test_window_and_grouped_decimal_aggregates(table_dir):
    assert_same("SELECT r, sum(d) OVER (ORDER BY r) s, avg(d) OVER () a, min(e) OVER () m FROM 't.parquet' ORDER BY r")
    assert_same("SELECT r % 2 AS k, sum(d) s, sum(i * 0.5) t, sum(DISTINCT d) u FROM 't.parquet' GROUP BY k ORDER BY k")


def test_event_time_aggregates_of_decimals_match_duckdb(tmp_path):
    import datetime as dt

    base = dt.datetime(2024, 1, 1)
    table = ROWS.append_column("time", pa.array([base + dt.timedelta(minutes=m) for m in (1, 2, 12, 13, 25, 26)]))
    pq.write_table(table, tmp_path / "e.parquet")
    aggs = "sum(d) s, min(d) lo, max(e) hi, avg(d) a, sum(d * 1.5) t, sum(i * 0.5) u, count(d) c"
    engine = (
        f"SELECT window_start, {aggs} FROM tumble(source => TABLE('e.parquet'), time_field => DESCRIPTOR(time), "
        "window_length => INTERVAL 10 MINUTES) e GROUP BY window_start ORDER BY window_start"
    )
    duck = f"SELECT time_bucket(INTERVAL 10 MINUTES, time) w, {aggs} FROM 'e.parquet' GROUP BY w ORDER BY w"
    with contextlib.chdir(tmp_path):
        got = plan(engine).result()
        want = duckdb.sql(duck).to_arrow_table()
    assert got.schema.types == want.schema.types
    assert [tuple(r.values()) for r in got.to_pylist()] == [tuple(r.values()) for r in want.to_pylist()]


def test_csv_output_prints_the_scale_as_duckdb(table_dir, capsys):
    from tidal.cli.main import main as cli

    sql = "SELECT 1.50 AS a, 0.1 + 0.2 AS b, CAST(1 AS DECIMAL(9,2)) AS c, sum(d) AS s FROM 't.parquet'"
    assert cli(["query", sql, "--format", "batch-csv"]) == 0
    got = capsys.readouterr().out.splitlines()[-1]
    duckdb.sql(f"COPY ({sql}) TO 'o.csv' (HEADER)")
    want = (table_dir / "o.csv").read_text().splitlines()[-1]
    assert got == want == "1.50,0.3,1.00,998.89"


# -- random expressions ------------------------------------------------------------------------------
_DEC_DIGITS = st.tuples(st.integers(0, 9999), st.integers(0, 4)).map(
    lambda p: f"{p[0] // 10 ** p[1]}.{p[0] % 10 ** p[1]:0{p[1]}d}" if p[1] else f"{p[0]}."
)
_LEAVES = st.one_of(
    # z is mostly NULLs (not a bare NULL, nor all NULLs: DuckDB never evaluates x in NULL < x then, by
    # folding or by the file's statistics, so x's errors would differ)
    st.sampled_from(["i", "n", "x", "d", "e", "z"]),
    st.integers(-20, 20).map(str),
    _DEC_DIGITS,
    _DEC_DIGITS.map(lambda t: f"(-{t})"),
    st.sampled_from(["1.5e0", "CAST(2.5 AS DOUBLE)", "CAST(n AS DECIMAL(6,1))", "CAST(x AS DECIMAL(9,3))"]),
)


def _expressions(depth: int):
    if depth == 0:
        return _LEAVES
    sub = _expressions(depth - 1)
    return st.one_of(
        _LEAVES,
        st.tuples(sub, st.sampled_from(["+", "-", "*", "/", "%"]), sub).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
        st.tuples(st.sampled_from(["abs", "round", "ceil", "floor", "-"]), sub).map(lambda t: f"{t[0]}({t[1]})"),
        st.tuples(sub, sub).map(lambda t: f"coalesce({t[0]}, {t[1]})"),
        st.tuples(sub, st.sampled_from(["<", ">=", "=", "<>"]), sub, sub, sub).map(
            lambda t: f"CASE WHEN {t[0]} {t[1]} {t[2]} THEN {t[3]} ELSE {t[4]} END"
        ),
    )


_PROFILE = dict(
    max_examples=int(os.environ.get("DECIMAL_EXAMPLES", "60")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@settings(**_PROFILE)
@given(expr=_expressions(2))
@example(expr="(d * 1.5)")
@example(expr="coalesce(d, (i % 1.5))")
@example(expr="CASE WHEN x < 0.5 THEN d ELSE 2 END")
def test_random_expressions_match_duckdb(table_dir, expr):
    assert_same(f"SELECT r, {expr} AS v FROM 't.parquet' ORDER BY r")


@settings(**_PROFILE)
@given(left=_expressions(1), op=st.sampled_from(["<", "<=", ">", ">=", "=", "<>"]), right=_expressions(1))
@example(left="x", op=">", right="100.5")
@example(left="big", op=">", right="9007199254740992.5")
def test_random_filters_match_duckdb(table_dir, left, op, right):
    assert_same(f"SELECT r FROM 't.parquet' WHERE {left} {op} {right} ORDER BY r")


def test_integer_expressions_take_duckdbs_integer_width(table_dir):
    # DuckDB types 1 an INTEGER and INTEGER + INTEGER an INTEGER (tidal computes both as BIGINT): a DECIMAL
    # beside such an expression is as wide as DuckDB's, and typeof names DuckDB's type
    assert_same("SELECT r, n * 1.5 AS a, n + 0.25 AS b, 1.5 * 2 AS c, (n + 1) * 1.5 AS v FROM 't.parquet' ORDER BY r")
    assert_same("SELECT r, coalesce(d, coalesce(NULL, 0)) AS v, greatest(d, i + 1) AS g, i % 1.5 AS m "
                "FROM 't.parquet' ORDER BY r")  # fmt: skip
    assert_same("SELECT typeof(1 + 2) a, typeof(1) b, typeof(2147483648) c, typeof(1.5 * (1 + 2)) d, typeof(-1) f")


def test_a_float_column_meets_a_decimal_literal_as_a_float(tmp_path):
    # DuckDB casts 0.1 to FLOAT beside a FLOAT column: the row holding FLOAT 0.1 equals it (as DOUBLEs they differ)
    pq.write_table(pa.table({"f": pa.array([0.1, 0.2, 1.5, None], pa.float32())}), tmp_path / "t.parquet")
    with contextlib.chdir(tmp_path):
        assert_same("SELECT f FROM 't.parquet' WHERE f = 0.1")
        assert_same("SELECT f FROM 't.parquet' WHERE f > 0.1 AND f < 1.5")
        assert_same("SELECT f + 0.1 AS g, f * 1.5 AS h, f = 0.2 AS e FROM 't.parquet'")


def test_json_output_writes_decimals_as_duckdb(table_dir, capsys):
    import json

    from tidal.cli.main import main as cli

    # DuckDB writes a DECIMAL of at most 15 digits as its DOUBLE (1.50 as 1.5), a wider one with its scale
    sql = (
        "SELECT CAST(5 AS DECIMAL(9,0)) a, 1.50 AS b, CAST(-0.001 AS DECIMAL(9,3)) c, "
        "CAST(1e17 AS DECIMAL(38,2)) d, CAST(0.0000001 AS DECIMAL(18,9)) e, sum(d) AS s FROM 't.parquet'"
    )
    assert cli(["query", sql, "--format", "batch-json"]) == 0
    got = json.loads(capsys.readouterr().out.splitlines()[-1], parse_float=str)
    duckdb.sql(f"COPY ({sql}) TO 'o.json'")
    want = json.loads((table_dir / "o.json").read_text().splitlines()[0], parse_float=str)
    assert got == want == {"a": "5.0", "b": "1.5", "c": "-0.001", "d": "100000000000000000.00", "e": "0.000000100",
                           "s": "998.89"}  # fmt: skip


def test_stream_json_writes_decimals_as_batch_json(table_dir, capsys):
    import json

    from tidal.cli.main import main as cli

    sql = "SELECT 1.50 AS b, CAST(1e17 AS DECIMAL(38,2)) d, d AS c, sum(e) OVER (ORDER BY r) s FROM 't.parquet'"
    lines = {}
    for fmt in ("batch-json", "stream-json"):
        assert cli(["query", sql, "--format", fmt]) == 0
        lines[fmt] = [json.loads(x, parse_float=str) for x in capsys.readouterr().out.splitlines() if x.startswith("{")]
    duckdb.sql(f"COPY ({sql}) TO 'o.json'")
    want = [json.loads(x, parse_float=str) for x in (table_dir / "o.json").read_text().splitlines()]
    key = lambda r: json.dumps(r, sort_keys=True)  # noqa: E731
    assert sorted(lines["stream-json"], key=key) == sorted(lines["batch-json"], key=key) == sorted(want, key=key)
    assert {"b": "1.5", "d": "100000000000000000.00", "c": "1.1", "s": "12.3456"} in want
