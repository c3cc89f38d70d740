"""Lifetime operators (tidal.ops.lifetime) against the reference evaluator on random streams."""

from __future__ import annotations

import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st
from streams import check_against_reference, stream_cases

import tidal
from tidal import INFINITY
from tidal.testing import Reference, assert_same_snapshots
from tidal.testing.reference import canonical, check_physical

OPS = {
    "shift_lifetime": (lambda s: s.shift_lifetime(7), lambda r: r.shift_lifetime(7)),
    "shift_lifetime_back": (lambda s: s.shift_lifetime(-4), lambda r: r.shift_lifetime(-4)),
    "alter_duration": (lambda s: s.alter_duration(5), lambda r: r.alter_duration(5)),
    "alter_lifetime": (
        lambda s: s.alter_lifetime(lambda t: t - t % 3, 4),
        lambda r: r.alter_lifetime(lambda t: t - t % 3, 4),
    ),
    "tumbling_window": (lambda s: s.tumbling_window(10), lambda r: r.tumbling_window(10)),
    "tumbling_window_offset": (lambda s: s.tumbling_window(10, 3), lambda r: r.tumbling_window(10, 3)),
    "hopping_window": (lambda s: s.hopping_window(10, 5), lambda r: r.hopping_window(10, 5)),
    "hopping_window_uneven": (lambda s: s.hopping_window(7, 3, 1), lambda r: r.hopping_window(7, 3, 1)),
    "hopping_window_gaps": (lambda s: s.hopping_window(3, 8), lambda r: r.hopping_window(3, 8)),
    "clip_duration": (lambda s: s.clip_duration(6), lambda r: r.clip_duration(6)),
    "extend_lifetime": (lambda s: s.extend_lifetime(9), lambda r: r.extend_lifetime(9)),
    "quantize_lifetime": (lambda s: s.quantize_lifetime(8, 4), lambda r: r.quantize_lifetime(8, 4)),
    "point_at_end": (lambda s: s.point_at_end(), lambda r: r.point_at_end()),
    "chop": (lambda s: s.chop(6, 2), lambda r: r.chop(6, 2)),
    "chain": (
        lambda s: s.where(lambda e: e.k < 3).shift_lifetime(3).clip_duration(8).tumbling_window(5),
        lambda r: r.where(lambda e: e.k < 3).shift_lifetime(3).clip_duration(8).tumbling_window(5),
    ),
}


@given(case=stream_cases(), op=st.sampled_from(sorted(OPS)))
def test_operator_matches_reference(case, op):
    check_against_reference(case, *OPS[op])


@given(case=stream_cases(allow_edges=False))
def test_chop_pieces_stay_within_one_period(case):
    stream, _ = case
    t = stream.chop(6, 2).to_arrow()
    for s, e in zip(t.column("sync_time").to_pylist(), t.column("other_time").to_pylist(), strict=True):
        assert (s - 2) // 6 == (e - 1 - 2) // 6


@given(case=stream_cases(), period=st.integers(1, 9), offset=st.integers(-3, 3), limit=st.integers(1, 12))
def test_chop_then_clip_duration_splits_open_lifetimes(case, period, offset, limit):
    """An open lifetime is cut at every grid point, so each of its pieces is clipped (Trill's Chop).

    The engine cuts as time passes; by the end it has seen every start, so up to the latest
    start the pieces are all there, whatever the batching and punctuation."""
    stream, ref = case
    result = stream.chop(period, offset).clip_duration(limit).to_arrow()
    check_physical(result)
    horizon = max((s for s, _, _ in ref.events), default=0)
    expected = ref.chop(period, offset, horizon=horizon).clip_duration(limit)
    assert_same_snapshots(result, expected, until=horizon)


def test_chop_cuts_an_open_lifetime_at_each_grid_point_as_time_passes():
    table = pa.table({"t": [0, 5, 13, 20], "k": [1, 2, 2, 2], "v": [0, 0, 0, 0]})
    stream = tidal.from_arrow(table, time="t", kind="start").where(lambda e: e.k == 1)  # one start edge at 0
    got = stream.chop(6).clip_duration(2).to_arrow()
    # the lifetime [0, inf) is cut at 6, 12 and 18 (time reached 20); each piece keeps its first 2 ticks
    assert [(s, e) for s, e, _ in canonical(got)] == [(0, 2), (6, 8), (12, 14), (18, 20)]
    ref = Reference(("k", "v"), [(0, INFINITY, (1, 0))])
    assert_same_snapshots(got.drop_columns(["t"]), ref.chop(6, horizon=20).clip_duration(2))
