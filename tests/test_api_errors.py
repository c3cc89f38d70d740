"""The Python API's edges (issue 16): errors that name the row, the field and the plan, never a raw
exception from inside tidal, and never a silent wrong answer."""

from __future__ import annotations

import decimal
import re
import warnings

import pyarrow as pa
import pytest

import tidal
from tidal import agg
from tidal.testing import Reference, assert_same_snapshots

ROWS = [{"t": i, "v": i, "s": f"x{i}", "d": decimal.Decimal(i) / 4} for i in range(6)]


def stream():
    return tidal.from_records(ROWS, time="t").alter_duration(3)


def test_a_user_defined_aggregate_that_raises_names_its_row():
    def accumulate(state, row):
        if row.v == 3:
            raise ValueError("boom")
        return state + [row.v]

    mine = agg.user_defined(lambda: [], accumulate, lambda state, row: [x for x in state if x != row.v])
    with pytest.raises(tidal.LambdaError) as err:
        stream().aggregate(mine=mine).to_arrow()
    text = str(err.value)
    assert "aggregate mine=" in text and "ValueError: boom" in text and "time 3" in text and "v=3" in text


def test_a_user_defined_result_that_raises_names_its_time():
    mine = agg.user_defined(
        lambda: 0, lambda st, r: st + r.v, lambda st, r: st - r.v, compute_result=lambda st: 1 // st
    )
    with pytest.raises(tidal.LambdaError, match="ZeroDivisionError.*computing its result at time 0"):
        stream().aggregate(mine=mine).to_arrow()


@pytest.mark.parametrize("kind", ["sum", "average", "variance", "stddev", "median"])
def test_arithmetic_aggregates_over_strings_are_type_errors(kind):
    with pytest.raises(tidal.errors.TidalTypeError, match="not defined for string"):
        stream().aggregate(getattr(agg, kind)("s")).to_arrow()


@pytest.mark.parametrize("kind", ["sum", "variance", "stddev", "median"])
def test_exact_decimal_arithmetic_is_not_supported_and_says_so(kind):
    with pytest.raises(tidal.errors.TidalTypeError, match="decimal128.*cast it to DOUBLE"):
        stream().aggregate(getattr(agg, kind)("d")).to_arrow()


@pytest.mark.parametrize("kind", ["min", "max", "first", "last", "count_distinct", "average"])
@pytest.mark.parametrize("field", ["s", "d"])
def test_aggregates_that_take_strings_and_decimals_agree_with_the_reference(kind, field):
    if kind == "average" and field == "s":
        pytest.skip("a type error (above)")
    got = stream().aggregate(getattr(agg, kind)(field)).to_arrow()
    names = ("t", "v", "s", "d")
    ref = Reference.points(names, [(r["t"], tuple(r[n] for n in names)) for r in ROWS]).alter_duration(3)
    assert_same_snapshots(got, ref.aggregate(getattr(agg, kind)(field)), digits=9)


def test_from_arrow_takes_a_polars_frame():
    pl = pytest.importorskip("polars")
    frame = pl.DataFrame({"t": [1, 2, 3], "v": [10, 20, 30]})
    got = tidal.from_arrow(frame, time="t").to_arrow()
    want = tidal.from_arrow(pa.table({"t": [1, 2, 3], "v": [10, 20, 30]}), time="t").to_arrow()
    assert got.equals(want)


def test_from_arrow_refuses_what_is_not_a_table():
    with pytest.raises(tidal.InputError, match="not dict"):
        tidal.from_arrow({"t": [1]}, time="t")


@pytest.mark.parametrize("lambdas", [False, True])
def test_an_int_key_never_joins_a_string_key(lambdas):
    left = tidal.from_records([{"t": 1, "k": 1, "a": "L"}], time="t").alter_duration(10)
    right = tidal.from_records([{"t": 1, "k": "1", "b": "R"}], time="t").alter_duration(10)
    keys = (lambda e: e.k, lambda e: e.k) if lambdas else ("k", "k")
    with pytest.raises(tidal.PlanError, match="join keys of different types: left.* int64, right.* string"):
        left.join(right, *keys).to_arrow()


def test_numeric_keys_of_different_widths_still_join():
    left = tidal.from_arrow(pa.table({"t": [1], "k": pa.array([1], pa.int32())}), time="t").alter_duration(10)
    right = tidal.from_arrow(pa.table({"t": [1], "k": pa.array([1], pa.int64())}), time="t").alter_duration(10)
    assert left.join(right, "k", "k").count() == 1


def test_restore_refuses_another_plans_checkpoint():
    source = tidal.from_records([{"t": i, "v": i} for i in range(6)], time="t")
    first = source.where(lambda e: e.v > 1).query()
    first.run(max_messages=1)
    state = first.checkpoint()
    with pytest.raises(tidal.errors.StateError, match="another plan"):
        source.where(lambda e: e.v > 2).query().restore(state)  # same shape, another predicate
    with pytest.raises(tidal.errors.StateError, match="another plan"):
        source.alter_duration(5).aggregate(agg.count()).query().restore(state)
    with pytest.raises(tidal.errors.StateError, match="not a checkpoint"):
        source.where(lambda e: e.v > 1).query().restore({"something": "else"})
    again = source.where(lambda e: e.v > 1).query()
    again.restore(state)  # the same plan continues
    again.run()


def test_a_session_that_never_closes_warns_with_its_size(monkeypatch):
    import tidal.ops.session as session

    monkeypatch.setattr(session, "SESSION_WARN_EVENTS", 1000)  # the threshold (a million) made small
    steady = tidal.from_records([{"t": t, "v": 1} for t in range(5000)], time="t", batch_size=500)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = steady.session_window(10).aggregate(n=agg.count()).to_intervals().to_pylist()
    assert got == [{"start": 0, "end": 5009, "n": 5000}]  # the answer itself is unchanged
    said = [str(w.message) for w in caught if issubclass(w.category, tidal.errors.TidalWarning)]
    assert [re.search(r"([\d,]+) events are held", m).group(1) for m in said] == ["1,000", "4,000"]  # grew 4x
    assert "oldest open session since time 0" in said[0] and "max_duration" in said[0]
    with warnings.catch_warnings():
        warnings.simplefilter("error", tidal.errors.TidalWarning)  # bounded sessions hold little: no warning
        steady.session_window(10, max_duration=500).aggregate(n=agg.count()).to_arrow()


def test_the_command_line_prints_a_warning_as_one_line(tmp_path, monkeypatch, capsys):
    import tidal.ops.session as session
    from tidal.cli.main import main as cli

    monkeypatch.setattr(session, "SESSION_WARN_EVENTS", 10)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ticks.csv").write_text("t\n" + "".join(f"2024-01-01 00:00:{s:02d}\n" for s in range(60)) * 1)
    sql = (
        "SELECT window_start, count(*) AS n FROM session(source => TABLE('ticks.csv'), time_field => DESCRIPTOR(t), "
        "gap => INTERVAL 5 SECONDS) s GROUP BY window_start"
    )
    capsys.readouterr()
    with monkeypatch.context() as m:
        m.setattr("warnings.filters", [])
        m.setattr("warnings.showwarning", warnings.showwarning)  # the command line replaces it: put it back after
        assert cli(["query", sql, "--format", "batch-csv"]) == 0
    got = capsys.readouterr()
    assert got.out.splitlines()[1:] == ["2024-01-01 00:00:00,60"]
    warned = [line for line in got.err.splitlines() if "warning" in line]
    assert len(warned) == 1 and warned[0].startswith("tidal: warning: session_window(timeout 5000000): 60 events")


@pytest.mark.parametrize("flip", [False, True])
def test_join_keys_of_different_kinds_are_refused_by_name(flip):
    """An integer key against a real one: the first batch's type used to win (2.5 could not be cast:
    a crash one way round; integers past 2**53 taken as reals the other): refused at plan time."""
    ints = tidal.from_arrow(pa.table({"t": [0, 1], "k": [1, 2], "x": [1, 2]}), time="t").alter_duration(10)
    reals = tidal.from_arrow(pa.table({"t": [0, 1], "k": [2.5, 2.0], "y": [1, 2]}), time="t").alter_duration(10)
    left, right = (reals, ints) if flip else (ints, reals)
    with pytest.raises(tidal.errors.PlanError, match="join keys 'k' .* different kinds: not supported"):
        left.join(right, "k", "k")
