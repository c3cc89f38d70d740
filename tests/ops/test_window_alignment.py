"""Window alignment: ``align="start"`` (tidal's default: a start moves down to its window's start)
and ``align="end"`` (Trill's TumblingWindowLifetime/HoppingWindowLifetime: a start moves up to the
next boundary, so a window's result shows from the end of the span its events fell in), checked on
the examples of Trill's own documentation of those operators and against the reference evaluator."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tidal
from tidal import agg
from tidal.core.errors import PlanError
from tidal.testing import Reference
from tidal.testing.reference import canonical


def _points(times):
    return [{"t": t, "v": i} for i, t in enumerate(times)]


def _intervals(stream):
    t = stream.to_intervals()
    return list(zip(t.column("start").to_pylist(), t.column("end").to_pylist(), t.column("n").to_pylist(), strict=True))


def test_trill_tumbling_example_one_point_one_output_of_the_window_length():
    # Trill's TumblingWindowLifetime(100): a single point event gives one aggregate output 100 ticks long
    for t in (1, 37, 100):
        s = tidal.from_records(_points([t]), time="t")
        ((start, end, n),) = _intervals(s.tumbling_window(100, align="end").aggregate(n=agg.count()))
        assert (end - start, n) == (100, 1)
        assert start == -(-t // 100) * 100  # moved up to the next boundary (a boundary stays)


def test_trill_hopping_example_window_100_period_2():
    # Trill's HoppingWindowLifetime(100, 2): one point event, one aggregate output 100 ticks long
    s = tidal.from_records(_points([5]), time="t")
    assert _intervals(s.hopping_window(100, 2, align="end").aggregate(n=agg.count())) == [(6, 106, 1)]


def test_end_alignment_shows_a_window_when_it_ends():
    s = tidal.from_records(_points([5, 50, 100, 150]), time="t")
    counted = lambda align: _intervals(s.tumbling_window(100, align=align).aggregate(n=agg.count()))  # noqa: E731
    # start: [0, 100) holds 5 and 50, [100, 200) holds 100 and 150 (equal counts coalesce)
    assert counted("start") == [(0, 200, 2)]
    # end (Trill): 5, 50 and 100 fall in (0, 100], visible over [100, 200); 150 over [200, 300)
    assert counted("end") == [(100, 200, 3), (200, 300, 1)]


@settings(max_examples=40, deadline=None)
@given(
    times=st.lists(st.integers(0, 60), min_size=1, max_size=12).map(sorted),
    size=st.integers(1, 12),
    hops=st.integers(1, 4),
    offset=st.integers(-5, 5),
)
def test_end_alignment_matches_the_reference(times, size, hops, offset):
    hop = max(1, size // hops)
    rows = _points(times)
    got = tidal.from_records(rows, time="t").hopping_window(size, hop, offset, align="end")
    want = Reference.points(("t", "v"), [(r["t"], (r["t"], r["v"])) for r in rows])
    assert canonical(got) == canonical(want.hopping_window(size, hop, offset, "end"))


def test_bad_alignments_are_refused():
    s = tidal.from_records(_points([1]), time="t")
    with pytest.raises(PlanError, match="align is 'start' or 'end'"):
        s.tumbling_window(10, align="middle")
    with pytest.raises(PlanError, match="not supported"):
        s.hopping_window(3, 8, align="end")
