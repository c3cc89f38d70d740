"""Edge values against DuckDB: integers near 2**63 and beyond 2**53 beside reals, DECIMAL rounding at
the edge of its width with NULLs present, NaN/-0.0/infinities, timestamps before 1970 through
``strftime``, date arithmetic, and HAVING over a global aggregate. Each case was a wrong answer (or
an error where DuckDB answers) found by drawing such values; the examples stay as fixed tests and
hypothesis draws more around them (``HYPOTHESIS_PROFILE=explore`` draws new ones each run)."""

from __future__ import annotations

import contextlib
import datetime as dt
import math
from decimal import Decimal

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tidal.core.errors import TidalError
from tidal.sql import plan
from tidal.sql.query import final_snapshot

I64 = 2**63 - 1
INTS = [I64, -I64 - 1, 2**62 + 1, 2**53 + 1, -(2**53) - 3, 0, 1, -7, None]
FLOATS = [math.nan, -math.inf, math.inf, -0.0, 0.0, 2.5, -2.5, 1e300, None]
DECIMALS = [Decimal(x) if x else None for x in ("99999.99", "-99999.99", "2.50", "-2.50", "0.05", "-0.01", None)]
TIMES = [
    dt.datetime(1969, 12, 31, 23, 59, 59, 999999),
    dt.datetime(1970, 1, 1),
    dt.datetime(1900, 1, 1, 12, 30, 0, 5000),
    dt.datetime(1969, 6, 15, 0, 0, 0, 500000),
    dt.datetime(1960, 2, 29, 13, 4, 5, 123456),
    dt.datetime(2024, 12, 31, 0, 0, 1),
    None,
]


def _table(rows: list[tuple]) -> pa.Table:
    i, f, d, ts = (list(c) for c in zip(*rows, strict=True)) if rows else ([], [], [], [])
    return pa.table(
        {
            "r": pa.array(range(len(rows)), pa.int64()),
            "i": pa.array(i, pa.int64()),
            "f": pa.array(f, pa.float64()),
            "d": pa.array(d, pa.decimal128(7, 2)),
            "ts": pa.array(ts, pa.timestamp("us")),
        }
    )


def _norm(v):
    """Values compared across the engines: a DECIMAL as its number, NaN as a string, -0.0 as 0.0."""
    if isinstance(v, Decimal):
        return float(v) if v != v.to_integral_value() else int(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "NaN"
        if v.is_integer() and abs(v) < 2**53:
            return int(v)
        return v + 0.0
    return v


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float | int) or isinstance(b, float) and isinstance(a, int):
        return math.isclose(float(a), float(b), rel_tol=1e-12, abs_tol=1e-12)
    return a == b


def _rows(table: pa.Table) -> list[tuple]:
    return sorted((tuple(_norm(v) for v in r.values()) for r in table.to_pylist()), key=repr)


def _answers(sql: str, table: pa.Table, directory) -> tuple:
    """(tidal's rows or its error, DuckDB's rows or its error) for ``sql`` over 't.parquet'."""
    pq.write_table(table, directory / "t.parquet")
    con = duckdb.connect()
    con.register("t_arrow", table)
    try:
        want = _rows(con.sql(sql.replace("'t.parquet'", "t_arrow")).to_arrow_table())
    except duckdb.Error as exc:
        want = exc
    try:
        with contextlib.chdir(directory):
            got = _rows(plan(sql).result())
    except (TidalError, ArithmeticError) as exc:
        got = exc
    return got, want


def _check(sql: str, table: pa.Table, directory, tidal_may_refuse: bool = False) -> None:
    got, want = _answers(sql, table, directory)
    if isinstance(want, Exception):  # DuckDB refuses (an overflow...): so must tidal, never an answer
        assert isinstance(got, Exception), f"{sql}: DuckDB refuses ({want}), tidal answers {got}"
        return
    if isinstance(got, Exception):
        assert tidal_may_refuse, f"{sql}: tidal refuses ({got}), DuckDB answers {want}"
        return
    assert len(got) == len(want) and all(
        len(g) == len(w) and all(_same(x, y) for x, y in zip(g, w, strict=True)) for g, w in zip(got, want, strict=True)
    ), f"{sql}\n tidal:  {got}\n DuckDB: {want}"


# -- integers beyond 2**53 beside reals ----------------------------------------------------------------
MIXED = [
    "CAST(i AS DOUBLE)",
    "i / 3",
    "i + f",
    "i * f",
    "i = f",
    "i < f",
    "greatest(i, f)",
    "least(i, f)",
    "coalesce(i, f)",
    "CASE WHEN f > 0 THEN i ELSE f END",
    "sqrt(abs(f) + i)",
    "sign(f)",
    "sign(i)",
]


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow], deadline=None)
@given(
    ints=st.lists(st.sampled_from(INTS), min_size=1, max_size=6),
    floats=st.lists(st.sampled_from(FLOATS), min_size=6, max_size=6),
    expr=st.sampled_from(MIXED),
)
@example(ints=[2**62 + 1, None], floats=[1.5] * 6, expr="i + f")  # Arrow's checked cast refused 2**62 + 1
@example(ints=[2**62 + 1], floats=[1.5] * 6, expr="CAST(i AS DOUBLE)")
@example(ints=[2**53 + 1, None], floats=[math.nan] * 6, expr="sign(f)")  # SIGN(NaN) is 0, a TINYINT
def test_big_integers_beside_reals_match_duckdb(tmp_path, ints, floats, expr):
    table = _table([(x, y, None, None) for x, y in zip(ints, floats, strict=False)])
    _check(f"SELECT r, {expr} AS v FROM 't.parquet'", table, tmp_path)


def test_an_integer_column_beside_a_real_literal_is_not_pushed_into_the_parquet_reader(tmp_path):
    # Arrow's filter would cast the column with its checked cast and fail on 2**62 + 1
    table = _table([(2**62 + 1, None, None, None), (3, None, None, None)])
    for op in ("=", "<", ">="):
        _check(f"SELECT r FROM 't.parquet' WHERE i {op} 4.0E18", table.drop_columns(["f"]), tmp_path)
    got, _ = _answers("SELECT r FROM 't.parquet' WHERE i > 2.5", table.drop_columns(["f"]), tmp_path)
    assert got == [(0,), (1,)]


# -- DECIMAL at the edge of its width ------------------------------------------------------------------
DECIMAL_EXPRS = [
    "round(d)",
    "round(d, 1)",
    "round(d, -1)",
    "floor(d)",
    "ceil(d)",
    "CAST(d AS INTEGER)",
    "CAST(d AS BIGINT)",
    "CAST(d AS DOUBLE)",
    "abs(d)",
    "-d",
    "sign(d)",
]


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow], deadline=None)
@given(decimals=st.lists(st.sampled_from(DECIMALS), min_size=1, max_size=6), expr=st.sampled_from(DECIMAL_EXPRS))
@example(decimals=[Decimal("99999.99"), None], expr="ceil(d)")  # was 0.00: Arrow's rounding overflowed silently
@example(decimals=[Decimal("99999.99"), None], expr="round(d, 1)")
@example(decimals=[Decimal("-2.50")], expr="CAST(d AS INTEGER)")  # was an error: DuckDB rounds half away
def test_decimal_rounding_matches_duckdb(tmp_path, decimals, expr):
    table = _table([(None, None, x, None) for x in decimals])
    _check(f"SELECT r, {expr} AS v FROM 't.parquet'", table, tmp_path)


def test_decimal_rounding_keeps_duckdbs_scale(in_dir):
    pq.write_table(_table([(None, None, Decimal("99999.99"), None), (None, None, None, None)]), "t.parquet")
    got = plan("SELECT round(d, 1) a, floor(d) b, ceil(d) c FROM 't.parquet'").result()
    assert [f.type for f in got.schema] == [pa.decimal128(7, 1), pa.decimal128(7, 0), pa.decimal128(7, 0)]
    assert got.to_pylist()[0] == {"a": Decimal("100000.0"), "b": Decimal("99999"), "c": Decimal("100000")}


def test_a_float_cast_to_an_integer_rounds_half_to_even_as_duckdb(tmp_path):
    table = _table([(None, x, None, None) for x in (2.5, -2.5, 0.5, 1.5, -0.5, None)])
    _check("SELECT r, CAST(f AS BIGINT) AS v, round(f) AS w FROM 't.parquet'", table, tmp_path)


# -- times: strftime's codes, date arithmetic ----------------------------------------------------------
# (not %n, nanoseconds: this DuckDB writes six digits and NUL bytes for it)
CODES = ["%Y", "%m", "%d", "%H", "%M", "%S", "%f", "%g", "%j", "%a", "%b", "%p", "%I", "%y", "%c", "%x"]
CODES += ["%X", "%T", "%z", "%Z", "%%", "%-d", "%-m", "%-H", "%-M", "%-S", "%-j", "%-y", "%-I", "%U", "%W", "%w"]


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow], deadline=None)
@given(
    times=st.lists(st.sampled_from(TIMES), min_size=1, max_size=5),
    codes=st.lists(st.sampled_from(CODES), min_size=1, max_size=4),
    sep=st.sampled_from(["", " ", ".", "-", ":"]),  # DuckDB writes a non-ASCII format as bad UTF-8
)
@example(times=[TIMES[0]], codes=["%S"], sep="")  # was 59.999999: Arrow's %S carries the fraction
@example(times=[TIMES[4]], codes=["%H", "%M", "%S", "%f"], sep=":")  # %f was passed through as text
@example(times=[TIMES[4]], codes=["%c"], sep="")  # C's %c, not DuckDB's
def test_strftime_matches_duckdb(tmp_path, times, codes, sep):
    table = _table([(None, None, None, x) for x in times])
    fmt = sep.join(codes)
    _check(
        f"SELECT r, strftime(ts, '{fmt}') AS v, strftime(CAST(ts AS DATE), '{fmt}') AS w FROM 't.parquet'",
        table,
        tmp_path,
    )


def test_strftime_with_a_code_duckdb_does_not_know_is_an_error(in_dir):
    pq.write_table(_table([(None, None, None, TIMES[0])]), "t.parquet")
    with pytest.raises(TidalError, match="'%e'.*not supported"):
        plan("SELECT strftime(ts, '%d %e') FROM 't.parquet'").result()


@pytest.mark.parametrize(
    "expr",
    [
        "CAST(ts AS DATE) - DATE '1970-01-01'",  # days (BIGINT), not a duration
        "CAST(ts AS DATE) - CAST(ts AS DATE)",
        "CAST(ts AS DATE) + 40",
        "CAST(ts AS DATE) - 400",
        "3 + CAST(ts AS DATE)",
    ],
)
def test_date_arithmetic_matches_duckdb(tmp_path, expr):
    _check(f"SELECT r, {expr} AS v FROM 't.parquet'", _table([(None, None, None, x) for x in TIMES]), tmp_path)


# -- HAVING over a global aggregate --------------------------------------------------------------------
@pytest.mark.parametrize(
    "sql",
    [
        "SELECT sum(i) FROM 't.parquet' HAVING sum(i) IS NULL",  # was one row of NULL: the default row
        "SELECT sum(i), count(*) FROM 't.parquet' HAVING NOT (sum(i) IS NOT NULL)",
        "SELECT sum(i) AS s FROM 't.parquet' HAVING s IS NULL",
        "SELECT * FROM (SELECT sum(i) s FROM 't.parquet') WHERE s IS NULL",
        "SELECT count(*) FROM 't.parquet' WHERE i > 5 HAVING count(*) = 0",  # no rows: the row is kept
        "SELECT sum(i) FROM 't.parquet' WHERE i > 5 HAVING sum(i) IS NULL",
        "SELECT max(f), count(*) FROM 't.parquet' HAVING count(*) > 1",
    ],
)
def test_having_over_a_global_aggregate_matches_duckdb(tmp_path, sql):
    _check(sql, _table([(1, 0.5, None, None), (2, None, None, None), (3, 1.5, None, None)]), tmp_path)
    with contextlib.chdir(tmp_path):  # the stream engine's answer (the plan's EmptyDefault row) is the same
        q = plan(sql)
        assert _rows(q.finish(final_snapshot(q.events()))) == _rows(q.result())


@pytest.mark.parametrize(
    "expr",
    [
        "epoch(ts)",  # sqlglot reads it as TimeToUnix, which tidal did not translate
        "epoch_ms(ts)",  # read as UnixToTime(ts, 3); DuckDB rounds half away from zero
        "epoch_us(ts)",
        "extract(epoch FROM ts)",  # seconds with their fraction (was whole seconds)
        "extract(millisecond FROM ts)",  # within the minute, seconds included (was 0-999)
        "extract(microsecond FROM ts)",
        "epoch(CAST(ts AS DATE))",
        "epoch_ms(r * 1500 - 1501)",  # of an integer: a TIMESTAMP
    ],
)
def test_epochs_and_sub_minute_parts_match_duckdb(tmp_path, expr):
    us = [-1, -499, -500, -501, -1000, -1001, 499, 500, 1499, 1500, -(10**15) - 500, 10**17 + 499_999]
    times = [dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=u) for u in us]
    _check(f"SELECT r, {expr} AS v FROM 't.parquet'", _table([(None, None, None, x) for x in [*times, None]]), tmp_path)


def test_a_file_naming_a_column_twice_is_an_error_naming_it(in_dir):
    (in_dir / "twice.csv").write_text("x,y,x\n1,2,3\n")  # was an internal KeyError
    with pytest.raises(TidalError, match=r"twice.csv: .*'x' \(not supported\)"):
        plan("SELECT * FROM 'twice.csv'").result()


def test_round_of_huge_doubles_matches_duckdb(tmp_path):
    # Arrow rounds v * 10**digits: near 1e308 that overflowed (an error where DuckDB answers)
    table = _table([(None, x, None, None) for x in (1e308, -1e308, 2.0**53 + 2, 2.25, math.nan, math.inf)])
    _check("SELECT r, round(f, 1) AS a, round(f, 2) AS b, round(f) AS c FROM 't.parquet'", table, tmp_path)


# -- casts of text, integers of two widths, dates in aggregates ---------------------------------------
BOOL_TEXT = ["true", "t", "yes", "y", "1", "TRUE", "True", "false", "f", "no", "n", "0", "on", "", " true ", "2", None]
INT_TEXT = ["2.5", "-2.5", "3.49", " 7 ", "1e2", "0x10", "+5", "1_000", "-0", "007", "1.", ".5", "0.5", "-0.5"]
INT_TEXT += ["1,000", "", "- 5", "x", "nan", "inf", "9223372036854775808", "300", None]


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow], deadline=None)
@given(
    texts=st.lists(st.sampled_from(BOOL_TEXT + INT_TEXT), min_size=1, max_size=5),
    to=st.sampled_from(["BOOLEAN", "BIGINT", "INTEGER", "TINYINT"]),
    cast=st.sampled_from(["CAST", "TRY_CAST"]),
)
@example(texts=["yes", "t", "1"], to="BOOLEAN", cast="CAST")  # was false: only 'true' was true
@example(texts=["2.5", " 7 ", "x"], to="BIGINT", cast="TRY_CAST")  # was NULL, NULL: DuckDB reads 3, 7
def test_text_cast_to_boolean_and_integers_matches_duckdb(tmp_path, texts, to, cast):
    table = pa.table({"r": pa.array(range(len(texts)), pa.int64()), "s": pa.array(texts, pa.string())})
    _check(f"SELECT r, {cast}(s AS {to}) AS v FROM 't.parquet'", table, tmp_path)


def test_integers_of_two_widths_and_dates_in_aggregates_match_duckdb(tmp_path):
    table = pa.table(
        {
            "r": pa.array(range(4), pa.int64()),
            "i": pa.array([1, 2, None, 2**60], pa.int64()),
            "h": pa.array([1, None, 3, 4], pa.int32()),
            "b": pa.array([True, False, None, True]),
            "d": pa.array([dt.date(1969, 12, 31), None, dt.date(2000, 2, 29), dt.date(1970, 1, 1)]),
        }
    )
    # an INTEGER branch beside a BIGINT one was cast to INTEGER (an error for 2**60)
    _check("SELECT r, CASE WHEN b THEN h ELSE i END AS v, coalesce(h, i) AS w FROM 't.parquet'", table, tmp_path)
    # a DATE in MIN/MAX/COUNT(DISTINCT) was an internal error (no cast from date32 to int64)
    _check("SELECT max(d), min(d), count(DISTINCT d) FROM 't.parquet'", table, tmp_path)
    _check("SELECT b, max(d) AS m FROM 't.parquet' GROUP BY b", table, tmp_path)


# -- aggregates over infinities, and exact integer averages in the Python-state path ------------------
AGG_FLOATS = [-math.inf, math.inf, 1.0, 2.5, -3.0, math.nan, None]  # (1e308: DuckDB's running variance is NaN)


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow], deadline=None)
@given(
    floats=st.lists(st.sampled_from(AGG_FLOATS), min_size=1, max_size=7),
    keys=st.lists(st.sampled_from([0, 1]), min_size=7, max_size=7),
    aggs=st.sampled_from(
        [
            "quantile_cont(f, 0.25) AS a, median(f) AS b, quantile_cont(f, 0.9) AS c",
            "sum(f) AS a, var_pop(f) AS b, stddev_samp(f) AS c",
            # string_agg keeps every aggregate of the query in Python state (another code path)
            "sum(f) AS a, var_samp(f) AS b, avg(f) AS c, string_agg(s, ',') AS d",
            "quantile_cont(f, 0.75) AS a, string_agg(s, ',') AS d",
        ]
    ),
)
@example(
    floats=[-math.inf, -math.inf, 1.0],
    keys=[0] * 7,
    aggs="quantile_cont(f, 0.25) AS a, median(f) AS b, quantile_cont(f, 0.9) AS c",
)  # was NaN
@example(
    floats=[1.5, math.inf, math.inf, math.inf],
    keys=[0] * 7,
    aggs="quantile_cont(f, 0.75) AS a, string_agg(s, ',') AS d",
)
@example(
    floats=[math.inf, -math.inf, 1.0],
    keys=[0] * 7,
    aggs="sum(f) AS a, var_samp(f) AS b, avg(f) AS c, string_agg(s, ',') AS d",
)  # was fsum's ValueError
@example(floats=[math.nan], keys=[0] * 7, aggs="sum(f) AS a, var_pop(f) AS b, stddev_samp(f) AS c")  # was NaN, not NULL
def test_aggregates_over_infinities_match_duckdb(tmp_path, floats, keys, aggs):
    if "quantile" in aggs:  # a NaN among a quantile's values is not supported (an error)
        floats = [f for f in floats if f is None or not math.isnan(f)] or [None]
    n = len(floats)
    table = pa.table(
        {"k": pa.array(keys[:n], pa.int64()), "f": pa.array(floats, pa.float64()), "s": pa.array(["x"] * n)}
    )
    _check(f"SELECT k, {aggs} FROM 't.parquet' GROUP BY k", table, tmp_path)


def test_float_sums_past_the_largest_double_in_python_state_match_duckdb(tmp_path):
    table = pa.table(
        {"f": pa.array([1e308, -1e308, 1e308, 1e308]), "r": pa.array([0, 1, 2, 3]), "s": pa.array(["a"] * 4)}
    )
    # fsum raised OverflowError (an internal error); the exact sum is 1e308, and inf once past the largest
    _check("SELECT sum(f) AS a, avg(f) AS b, string_agg(s, ',') AS c FROM 't.parquet' WHERE r < 3", table, tmp_path)
    _check("SELECT sum(f) AS a, string_agg(s, ',') AS c FROM 't.parquet'", table, tmp_path)


def test_integer_sums_and_averages_in_python_state_are_exact(tmp_path):
    big = pa.table({"g": pa.array([2**62 + 1, -(2**62), 2**62], pa.int64()), "s": pa.array(["a", "b", "c"])})
    # AVG divides the exact sum once (fsum of floats lost the 1: 0.0 for the first two rows' average)
    _check("SELECT avg(g) AS a, sum(g) AS b, string_agg(s, ',') AS c FROM 't.parquet' WHERE s <> 'c'", big, tmp_path)
    got, _ = _answers("SELECT sum(g), string_agg(s, ',') FROM 't.parquet' WHERE s <> 'b'", big, tmp_path)
    assert isinstance(got, ArithmeticError) and "out of BIGINT's range" in str(got)  # was a raw OverflowError


@pytest.mark.parametrize(
    "interval", ["'1 day 2 hours'", "'2 hours 30 minutes'", "'1 day -2 hours'", "'10 microseconds 5 milliseconds'"]
)
def test_an_interval_of_several_parts_counts_every_part(tmp_path, interval):
    # INTERVAL '1 day 2 hours' was one day: the parts after the first were dropped
    _check(
        f"SELECT r, ts + INTERVAL {interval} AS v FROM 't.parquet'",
        _table([(None, None, None, x) for x in TIMES]),
        tmp_path,
    )
    with contextlib.chdir(tmp_path), pytest.raises(TidalError, match="not supported"):
        plan("SELECT ts + INTERVAL '1 day 2' FROM 't.parquet'").result()


@pytest.mark.parametrize("fmt", ["batch-json", "stream-json"])
def test_json_output_writes_decimals_as_exact_numbers(in_dir, capsys, fmt):
    from tidal.cli.main import main as cli

    d = [Decimal("-0.01"), Decimal("99999.99"), None, Decimal("123456789012345678.1234567891")]
    pq.write_table(pa.table({"d": pa.array(d, pa.decimal128(28, 10))}), "t.parquet")
    assert cli(["query", "SELECT d FROM 't.parquet'", "--format", fmt]) == 0  # was an internal error
    lines = capsys.readouterr().out.splitlines()
    import json

    got = [json.loads(line, parse_float=Decimal)["d"] for line in lines]
    assert got == d  # every digit (a float would round the last one)


@pytest.mark.parametrize("nulls", [False, True])
def test_reverse_keeps_grapheme_clusters_as_duckdb(tmp_path, nulls):
    # an accent stayed behind its letter, a skin tone or a flag's halves were split apart
    texts = ["e\u0301x", "👍🏽!", "🇫🇷🇩🇪", "ab\r\n", "é\r\n", "Σσς", "", "plain", *([None] if nulls else [])]
    table = pa.table({"r": pa.array(range(len(texts)), pa.int64()), "s": pa.array(texts, pa.string())})
    _check("SELECT r, reverse(s) AS v FROM 't.parquet'", table, tmp_path)
    _check("SELECT r, reverse(s) AS v FROM 't.parquet' WHERE s <> 'x'", table, tmp_path)


@pytest.mark.parametrize(
    "sql",
    [
        # a DATE among TIMESTAMPs was compared as dates (1970-01-01 matched 1970-01-01 00:00:01)
        "SELECT r FROM 't.parquet' WHERE CAST(ts AS DATE) IN (TIMESTAMP '1970-01-01 00:00:01', TIMESTAMP '1969-12-31')",
        "SELECT r FROM 't.parquet' WHERE CAST(ts AS DATE) IN (SELECT ts + INTERVAL 1 SECOND FROM 't.parquet')",
        "SELECT r FROM 't.parquet' WHERE CAST(ts AS DATE) NOT IN (SELECT ts FROM 't.parquet' WHERE ts IS NOT NULL)",
        # an integer among reals: the reals were cast to integers (an error for 2.5)
        "SELECT r FROM 't.parquet' WHERE i IN (SELECT f FROM 't.parquet')",
    ],
)
def test_in_compares_as_duckdb_across_types(tmp_path, sql):
    rows = [(1, 1.0, None, TIMES[1]), (2, 2.5, None, TIMES[0]), (3, None, None, TIMES[2]), (None, 3.0, None, None)]
    _check(sql, _table(rows), tmp_path)


@pytest.mark.parametrize("fn", ["min(n)", "max(n)", "sum(n)", "avg(n)", "count(n)", "first_value(n)"])
@pytest.mark.parametrize(
    "over", ["()", "(ORDER BY r)", "(ORDER BY r ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING)"]
)
def test_window_aggregates_of_a_column_of_nulls_only_match_duckdb(tmp_path, fn, over):
    # a Parquet column of Arrow's null type: MIN/MAX/SUM/AVG windows were internal errors
    table = pa.table({"r": pa.array([0, 1, 2], pa.int64()), "n": pa.nulls(3)})
    _check(f"SELECT r, {fn} OVER {over} AS w FROM 't.parquet'", table, tmp_path)


def test_ranking_by_a_column_of_nulls_only_matches_duckdb(tmp_path):
    table = pa.table({"r": pa.array([0, 1, 2], pa.int64()), "n": pa.nulls(3)})  # was an internal error
    _check(
        "SELECT r, rank() OVER (ORDER BY n) AS a, dense_rank() OVER (ORDER BY n, r) AS b FROM 't.parquet'",
        table,
        tmp_path,
    )


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow], deadline=None)
@given(
    floats=st.lists(
        st.sampled_from([1e17, 1e300, 1.0, 0.1, -2.5, 3.0, None]), min_size=1, max_size=12
    ),  # (one sign of large)
    frame=st.sampled_from(
        [
            "ROWS BETWEEN 1 PRECEDING AND CURRENT ROW",
            "ROWS BETWEEN CURRENT ROW AND 2 FOLLOWING",
            "ROWS BETWEEN 3 PRECEDING AND 1 PRECEDING",
            "ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING",
        ]
    ),
    fn=st.sampled_from(["sum", "avg"]),
)
@example(floats=[1e17, 1.0, 1.0, 1.0], frame="ROWS BETWEEN 1 PRECEDING AND CURRENT ROW", fn="sum")  # was 0.0, 0.0
@example(floats=[0.1, 1e16, 1.0, 0.1], frame="ROWS BETWEEN CURRENT ROW AND 2 FOLLOWING", fn="avg")
def test_window_sums_after_a_large_value_match_duckdb(tmp_path, floats, frame, fn):
    # frame sums were differences of prefix sums: a large value before the frame swallowed its small ones
    table = pa.table({"r": pa.array(range(len(floats)), pa.int64()), "f": pa.array(floats, pa.float64())})
    _check(f"SELECT r, {fn}(f) OVER (ORDER BY r {frame}) AS w FROM 't.parquet'", table, tmp_path)
