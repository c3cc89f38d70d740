"""SUM, AVG, median and quantiles of DECIMALs against DuckDB: values and types.

DuckDB sums a DECIMAL exactly in 128 bits (a DECIMAL(38, s), its overflow error beyond 38 digits); tidal
sums the unscaled values in 32-bit limbs on every path (the relational grouping, window functions, the
engine's event-time windows with their retractions) and must give the same digits, or the same error.
AVG is that exact sum divided as DuckDB divides it: the same DOUBLE, bit for bit, where DuckDB's division
does not depend on the query's other aggregates (it shares a SUM or COUNT of the same column when there is
one, and then divides in DOUBLE: within one unit in the last place).
Random columns of every width (their extreme values too) are compared with DuckDB's answers;
``DECIMAL_EXAMPLES`` raises the number of random cases (default 25).
"""

from __future__ import annotations

import contextlib
import datetime as dt
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

_PROFILE = dict(
    max_examples=int(os.environ.get("DECIMAL_EXAMPLES", "25")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
BASE = dt.datetime(2024, 1, 1)


def _answers(sql: str, duck_sql: str | None = None):
    try:
        got = plan(sql).result()
    except TidalError as exc:
        got = exc
    try:
        want = duckdb.connect().sql(duck_sql or sql).to_arrow_table()
    except duckdb.Error as exc:
        want = exc
    return got, want


def assert_same(sql: str, duck_sql: str | None = None) -> None:
    got, want = _answers(sql, duck_sql)
    if isinstance(want, Exception) and "HUGEINT addition" in str(want) and not isinstance(got, Exception):
        return  # DuckDB's running sum passed 2**127 on its way (its order of adding): tidal's exact sum is
        # checked against Python's integers in test_a_sum_beyond_38_digits_is_duckdbs_overflow_error
    if isinstance(want, Exception):
        assert isinstance(got, Exception), f"{sql}: DuckDB refuses ({want}), tidal answers {got.to_pylist()}"
        assert "overflow" in str(got).lower() or "not supported" in str(got), got
        return
    assert not isinstance(got, Exception), f"{sql}: tidal refuses ({got}), DuckDB answers {want.to_pylist()}"
    assert got.schema.types == want.schema.types, f"{sql}\n tidal:  {got.schema}\n duckdb: {want.schema}"
    g, w = ([tuple(r.values()) for r in t.to_pylist()] for t in (got, want))
    same = [[a == b and str(a) == str(b) for a, b in zip(x, y, strict=True)] for x, y in zip(g, w, strict=True)]
    assert len(g) == len(w) and all(all(s) for s in same), f"{sql}\n tidal:  {g}\n duckdb: {w}"


@st.composite
def _columns(draw):
    """A DECIMAL(p, s) column (values near its limits and near limb boundaries), group keys, times."""
    p = draw(st.sampled_from([3, 9, 10, 15, 18, 19, 25, 38]))
    s = draw(st.integers(0, min(p, 6)))
    top = 10**p - 1
    edges = [top, -top, 2**31, 2**32 - 1, -(2**32), 2**63 - 1, -(2**63), 2**64 + 1, 1, -1, 0]
    unscaled = st.one_of(st.integers(-top, top), st.sampled_from([e for e in edges if abs(e) <= top]))
    n = draw(st.integers(1, 30))
    values = draw(st.lists(st.one_of(unscaled, st.none()), min_size=n, max_size=n))
    keys = draw(st.lists(st.integers(0, 2), min_size=n, max_size=n))
    minutes = sorted(draw(st.lists(st.integers(0, 40), min_size=n, max_size=n)))
    column = pa.array([None if v is None else Decimal(f"{v}E-{s}") for v in values], pa.decimal128(p, s))  # exact
    return pa.table(
        {
            "r": pa.array(range(n), pa.int64()),
            "k": pa.array(keys, pa.int64()),
            "v": column,
            "time": pa.array([BASE + dt.timedelta(minutes=m) for m in minutes], pa.timestamp("us")),
        }
    )


@contextlib.contextmanager
def _table(tmp_path, table):
    pq.write_table(table, tmp_path / "t.parquet")
    with contextlib.chdir(tmp_path):
        yield


_BIG = pa.table(
    {
        "r": pa.array(range(4), pa.int64()),
        "k": pa.array([0, 0, 1, 0], pa.int64()),
        "v": pa.array([Decimal("9999999999999999.99")] * 3 + [Decimal("-0.01")], pa.decimal128(18, 2)),
        "time": pa.array([BASE + dt.timedelta(minutes=m) for m in (1, 2, 6, 12)], pa.timestamp("us")),
    }
)


@settings(**_PROFILE)
@given(table=_columns())
@example(table=_BIG)
def test_sums_of_decimals_are_duckdbs_to_38_digits(tmp_path_factory, table):
    with _table(tmp_path_factory.mktemp("s"), table):
        assert_same("SELECT sum(v) AS s, count(v) AS c FROM 't.parquet'")
        assert_same("SELECT k, sum(v) AS s, sum(-v) AS m FROM 't.parquet' GROUP BY k ORDER BY k")
        assert_same(
            "SELECT r, sum(v) OVER (PARTITION BY k ORDER BY r ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS s "
            "FROM 't.parquet' ORDER BY r"
        )


@settings(**_PROFILE)
@given(table=_columns())
@example(table=_BIG)
def test_event_time_window_sums_of_decimals_are_duckdbs(tmp_path_factory, table):
    # hopping windows run on the engine's running sums, events leaving a window retracted (Deaccumulate)
    engine = (
        "SELECT window_start, k, sum(v) AS s FROM hop(source => TABLE('t.parquet'), time_field => DESCRIPTOR(time), "
        "window_length => INTERVAL 10 MINUTES, hop => INTERVAL 5 MINUTES) h GROUP BY window_start, k "
        "ORDER BY window_start, k"
    )
    duck = (
        "SELECT time_bucket(INTERVAL 5 MINUTES, time) - j * INTERVAL 5 MINUTES AS window_start, k, sum(v) AS s "
        "FROM 't.parquet', range(2) AS g(j) GROUP BY ALL ORDER BY window_start, k"
    )
    tumbling = (
        "SELECT window_start, sum(v) AS s FROM tumble(source => TABLE('t.parquet'), time_field => DESCRIPTOR(time), "
        "window_length => INTERVAL 10 MINUTES) w GROUP BY window_start ORDER BY window_start"
    )
    duck_tumbling = (
        "SELECT time_bucket(INTERVAL 10 MINUTES, time) AS window_start, sum(v) AS s FROM 't.parquet' "
        "GROUP BY ALL ORDER BY window_start"
    )
    with _table(tmp_path_factory.mktemp("w"), table):
        assert_same(engine, duck)
        assert_same(tumbling, duck_tumbling)


def _close(got, want) -> bool:
    return got == want or (got is not None and want is not None and abs(got - want) <= 2.3e-16 * abs(want))


@settings(**_PROFILE)
@given(table=_columns())
@example(table=_BIG)
def test_averages_of_decimals_are_duckdbs(tmp_path_factory, table):
    with _table(tmp_path_factory.mktemp("a"), table):
        assert_same("SELECT avg(v) AS a FROM 't.parquet'")
        assert_same("SELECT k, avg(v) AS a FROM 't.parquet' GROUP BY k ORDER BY k")
        # beside a SUM of the same column DuckDB divides that SUM in DOUBLE: the last bit may differ
        sql = "SELECT k, sum(v) AS s, avg(v) AS a FROM 't.parquet' GROUP BY k ORDER BY k"
        got, want = _answers(sql)
        if isinstance(got, Exception) or isinstance(want, Exception):  # the SUM's overflow: the same error
            return assert_same(sql)
        got, want = got.to_pylist(), want.to_pylist()
        assert [r["s"] for r in got] == [r["s"] for r in want]
        assert all(_close(g["a"], w["a"]) for g, w in zip(got, want, strict=True)), (got, want)


def test_the_average_of_a_decimal_is_of_its_exact_sum(tmp_path):
    # the average of DOUBLEs loses the 1 beside 10**20 (the old plan's 0.0); DuckDB: 0.3333333333333333
    values = pa.array([Decimal(10**20 + 1), Decimal(-(10**20)), Decimal(0)], pa.decimal128(38, 0))
    with _table(tmp_path, pa.table({"v": values, "k": [0, 0, 0]})):
        assert_same("SELECT k, avg(v) AS a FROM 't.parquet' GROUP BY k")
        assert plan("SELECT avg(v) AS a FROM 't.parquet'").result().to_pylist() == [{"a": 1 / 3}]


def test_a_sum_beyond_38_digits_is_duckdbs_overflow_error(tmp_path):
    top, bottom = Decimal(10**38 - 1), Decimal(-(10**38 - 1))  # (-top would round to 28 digits)
    values = pa.array([top, top, bottom, top], pa.decimal128(38, 0))
    with _table(tmp_path, pa.table({"v": values, "k": [0, 0, 0, 1]})):
        # a sum of 38 digits is an answer, whatever the running sum passed on its way (DuckDB's grouped sum
        # refuses this one: its running HUGEINT passed 2**127 after the first two values)
        got = plan("SELECT k, sum(v) AS s FROM 't.parquet' WHERE k = 0 GROUP BY k").result().to_pylist()
        assert got == [{"k": 0, "s": Decimal(2 * (10**38 - 1) - (10**38 - 1))}]
        with pytest.raises(TidalError, match="Overflow in SUM of DECIMAL"):
            plan("SELECT sum(v) AS s FROM 't.parquet'").result()


@st.composite
def _quantile_columns(draw):
    """A DECIMAL column of at most 15 digits (values close together: interpolation's truncation shows)."""
    p = draw(st.sampled_from([2, 3, 5, 9, 15]))
    s = draw(st.integers(0, p))
    top = 10**p - 1
    centre = draw(st.integers(-top, top))
    near = st.integers(max(-top, centre - 5), min(top, centre + 5))
    n = draw(st.integers(1, 12))
    values = draw(st.lists(st.one_of(near, st.integers(-top, top), st.none()), min_size=n, max_size=n))
    keys = draw(st.lists(st.integers(0, 1), min_size=n, max_size=n))
    column = pa.array([None if v is None else Decimal(f"{v}E-{s}") for v in values], pa.decimal128(p, s))
    return pa.table({"k": pa.array(keys, pa.int64()), "v": column})


@settings(**_PROFILE)
@given(table=_quantile_columns(), q=st.sampled_from([0.25, 0.5, 0.75, 1.0, 0.0, 0.125, 0.375]))
def test_quantiles_of_decimals_are_duckdbs(tmp_path_factory, table, q):
    if q in (0.125, 0.375) and table.schema.field("v").type.precision > 14:
        q = 0.5  # eighths of 15-digit values are refused (test_inexact_decimal_quantiles_are_refused_by_name)
    with _table(tmp_path_factory.mktemp("q"), table):
        assert_same(
            f"SELECT k, median(v) AS m, quantile_cont(v, {q}) AS c, quantile_disc(v, {q}) AS d "
            "FROM 't.parquet' GROUP BY k ORDER BY k"
        )


def test_the_median_of_a_decimal_truncates_as_duckdb(tmp_path):
    for values in (["2.62", "2.63"], ["-2.62", "-2.63"], ["-0.01", "0.00"], ["2.62", "2.63", "-1.07"], ["1", "2"]):
        rows = ", ".join(f"({v})" for v in values)
        assert_same(f"SELECT median(x) AS m, quantile_cont(x, 0.25) AS c FROM (VALUES {rows}) t(x)")
    assert plan("SELECT median(x) AS m FROM (VALUES (2.62), (2.63)) t(x)").result().to_pylist() == [
        {"m": Decimal("2.62")}
    ]


def test_inexact_decimal_quantiles_are_refused_by_name(tmp_path):
    # DuckDB: quantile_cont(x, 0.3) of -404 and 271 is 0 (one rounding of -404 + 675 * 0.6 = 0.99999...);
    # rounded twice it is 1.0: tidal refuses what it cannot round as DuckDB does
    values = pa.array([Decimal("-404"), Decimal("271"), Decimal("271")], pa.decimal128(3, 0))
    wide = pa.array([Decimal("1234567890123456.7"), Decimal("1234567890123456.8")], pa.decimal128(18, 1))
    with _table(tmp_path, pa.table({"v": values, "w": wide.take([0, 1, 1])})):
        with pytest.raises(TidalError, match=r"quantile_cont\(x, 0.3\) of DECIMAL\(3,0\) is not supported"):
            plan("SELECT quantile_cont(v, 0.3) AS m FROM 't.parquet'").result()
        with pytest.raises(TidalError, match=r"median of DECIMAL\(18,1\) is not supported"):
            plan("SELECT median(w) AS m FROM 't.parquet'").result()
        assert_same("SELECT quantile_disc(w, 0.5) AS d, quantile_disc(v, 0.3) AS e FROM 't.parquet'")  # any width
