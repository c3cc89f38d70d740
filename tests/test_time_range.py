"""Times near both ends of int64 (issue 16): event times leave room for durations.

Start times lie in [-2**62, 2**62 - 1], ends up to 2**62 (or INFINITY), spans at most 2**61. Ingress
rejects a time outside, naming the row; every lifetime operator and aggregate either gives the
reference evaluator's answer (plain Python integers, which never wrap) or, exactly when that answer
leaves the range, raises an error naming the event: never a wrapped time, never a hang.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tidal
from tidal import agg
from tidal.core.time import EARLIEST, INFINITY, LATEST, MAX_SPAN
from tidal.testing import Reference, assert_same_snapshots

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = int(os.environ.get("TIDAL_FUZZ_EXAMPLES", "0")) or 60


def _in_range(ref: Reference) -> bool:
    return all(EARLIEST <= s <= LATEST and (e == INFINITY or EARLIEST <= e <= LATEST + 1) for s, e, _ in ref.events)


near_ends = st.one_of(
    st.integers(EARLIEST, EARLIEST + 3000),
    st.integers(LATEST - 3000, LATEST),
    st.integers(-3000, 3000),
)
small = st.integers(1, 2500)
spans = st.one_of(small, st.sampled_from([MAX_SPAN, MAX_SPAN - 1, 2**40]))
shifts = st.one_of(st.integers(-2500, 2500), st.sampled_from([MAX_SPAN, -MAX_SPAN, 2**40, -(2**40)]))

# (name, strategy of arguments): each applies to a Stream and to a Reference alike
OPERATORS = {
    "shift_lifetime": st.tuples(shifts),
    "alter_duration": st.tuples(spans),
    "tumbling_window": st.tuples(spans),
    "hopping_window": st.tuples(small, small).map(lambda a: (max(a), min(a))),
    "clip_duration": st.tuples(spans),
    "extend_lifetime": st.tuples(spans),
    "quantize_lifetime": st.tuples(small, small).map(lambda a: (max(a), min(a))),
    "point_at_end": st.just(()),
    "chop": st.tuples(st.integers(50, 2500)),
    "session_window": st.tuples(spans),
}
AGGREGATES = {
    "count": lambda: agg.count(),
    "sum": lambda: agg.sum("v"),
    "min": lambda: agg.min("v"),
    "max": lambda: agg.max("v"),
    "average": lambda: agg.average("v"),
}


@st.composite
def pipelines(draw):
    times = sorted(draw(st.lists(near_ends, min_size=1, max_size=6)))
    steps = [("alter_duration", (draw(st.integers(1, 3000)),))] if draw(st.booleans()) else []
    for _ in range(draw(st.integers(1, 3))):
        name = draw(st.sampled_from(sorted(OPERATORS)))
        steps.append((name, draw(OPERATORS[name])))
    if any(name == "chop" for name, _ in steps):  # long lifetimes chopped are huge (the reference lists each piece)
        steps = [(name, tuple(a if abs(a) <= 2500 else 2500 for a in args)) for name, args in steps]
    aggregate = draw(st.sampled_from([None, *sorted(AGGREGATES)]))
    return times, steps, aggregate


def _apply(target, steps, aggregate):
    for name, args in steps:
        target = getattr(target, name)(*args)
    if aggregate is not None:
        target = target.aggregate(AGGREGATES[aggregate]())
    return target


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(pipelines())
def test_times_near_the_ends_through_every_lifetime_operator_and_aggregate(pipeline):
    times, steps, aggregate = pipeline
    rows = [{"t": t, "v": i % 3} for i, t in enumerate(times)]
    ref = Reference.points(("t", "v"), [(r["t"], (r["t"], r["v"])) for r in rows])
    fits = _in_range(ref)
    for k in range(len(steps)):  # every intermediate stream must fit, not only the last
        fits = fits and _in_range(_apply(ref, steps[: k + 1], None))
    expected = _apply(ref, steps, aggregate)
    fits = fits and _in_range(expected)
    stream = _apply(tidal.from_records(rows, time="t"), steps, aggregate)
    if fits:
        assert_same_snapshots(stream.to_arrow(), expected, digits=6)
    else:
        with pytest.raises((tidal.InputError, tidal.PlanError)) as err:
            stream.to_intervals()
        assert "range" in str(err.value) or "span" in str(err.value)


@pytest.mark.parametrize("t", [2**63 - 1, 2**63 - 2, LATEST + 1, -(2**63), EARLIEST - 1])
def test_ingress_rejects_times_outside_the_range_naming_the_row(t):
    rows = [{"t": min(t, 0), "v": 1}, {"t": 0, "v": 2}, {"t": max(t, 0), "v": 3}]
    bad = 0 if t < 0 else 2
    with pytest.raises(tidal.InputError) as err:
        tidal.from_records(rows, time="t").to_arrow()
    assert f"row {bad}: time {t} (field 't') is outside the range" in str(err.value)
    assert f"v={rows[bad]['v']}" in str(err.value)


def test_the_ends_of_the_range_are_accepted():
    rows = [{"t": EARLIEST, "v": 1}, {"t": LATEST, "v": 2}]
    got = tidal.from_records(rows, time="t").to_intervals().to_pylist()
    assert [(r["start"], r["end"]) for r in got] == [(EARLIEST, EARLIEST + 1), (LATEST, LATEST + 1)]
    ends = tidal.from_records([{"s": 0, "e": LATEST + 1}], time="s", end="e").to_intervals()
    assert ends.column("end").to_pylist() == [LATEST + 1]


@pytest.mark.parametrize(
    ("build", "named"),
    [
        (lambda s: s.alter_duration(1000), "AlterLifetime"),
        (lambda s: s.shift_lifetime(1000), "ShiftLifetime"),
        (lambda s: s.tumbling_window(1000), "window size 1000"),
        (lambda s: s.tumbling_window(1000).aggregate(agg.count()), "hopping_window(size 1000"),
        (lambda s: s.hopping_window(1000, 10).aggregate(agg.sum("v")), "hopping_window(size 1000, hop 10"),
        (lambda s: s.session_window(1000), "SessionWindow"),
        (lambda s: s.extend_lifetime(1000), "ExtendLifetime"),
    ],
)
def test_no_wraparound_near_the_latest_time(build, named):
    stream = build(tidal.from_records([{"t": LATEST - 100, "v": 7}], time="t"))
    with pytest.raises(tidal.InputError) as err:
        stream.to_arrow()
    assert named in str(err.value) and "v=7" in str(err.value) and "outside the range" in str(err.value)


@pytest.mark.parametrize(
    "build",
    [
        lambda s: s.shift_lifetime(2**62),
        lambda s: s.alter_duration(2**63 - 1),
        lambda s: s.tumbling_window(2**62),
        lambda s: s.session_window(2**62),
    ],
)
def test_spans_longer_than_the_room_are_refused(build):
    with pytest.raises(tidal.PlanError, match="longest supported span"):
        build(tidal.from_records([{"t": 0, "v": 7}], time="t")).to_arrow()


def test_a_duration_function_past_the_room_names_the_event():
    stream = tidal.from_records([{"t": 5, "v": 7}], time="t").alter_lifetime(duration=lambda s: s + 2**62)
    with pytest.raises(tidal.InputError, match="duration function gives"):
        stream.to_arrow()


def test_chop_into_too_many_pieces_is_a_resource_error():
    stream = tidal.from_records([{"t": 0, "v": 7}], time="t").alter_duration(2**60).chop(1)
    with pytest.raises(tidal.errors.ResourceError, match="pieces"):
        stream.count()


def _run_briefly(code: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT, capture_output=True, text=True, timeout=timeout
    )


def test_a_time_of_2_63_minus_2_before_a_tumbling_aggregate_ends_promptly():
    """Was a compiled loop that never ended (and held the interpreter lock against Ctrl-C)."""
    done = _run_briefly(
        """
        import tidal
        from tidal import agg
        s = tidal.from_records([{"t": 5, "v": 1}, {"t": 2**63 - 2, "v": 2}], time="t")
        try:
            s.tumbling_window(10).aggregate(agg.count()).to_intervals()
        except tidal.InputError as e:
            print("rejected:", e)
        """
    )
    assert done.returncode == 0, done.stderr
    assert "rejected: row 1: time 9223372036854775806" in done.stdout
