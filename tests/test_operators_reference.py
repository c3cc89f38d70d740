"""Every stateless and lifetime operator against the reference evaluator on random streams."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from streams import stream_cases

from tidal.testing import assert_same_snapshots
from tidal.testing.reference import check_physical

OPS = {
    "where": (
        lambda s: s.where(lambda e: e.v % 2 == 0 and e.k != 1),
        lambda r: r.where(lambda e: e.v % 2 == 0 and e.k != 1),
    ),
    "where_row_mode": (
        lambda s: s.where(lambda e: _opaque(e.v)),
        lambda r: r.where(lambda e: _opaque(e.v)),
    ),
    "select": (
        lambda s: s.select(lambda e: {"k": e.k, "w": e.v * 3 - e.k}),
        lambda r: r.select(lambda e: {"k": e.k, "w": e.v * 3 - e.k}),
    ),
    "select_many": (
        lambda s: s.select_many(lambda e: [{"x": e.v}] * (e.k % 3)),
        lambda r: r.select_many(lambda e: [{"x": e.v}] * (e.k % 3)),
    ),
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


def _opaque(v):
    return v > 0


@given(case=stream_cases(), op=st.sampled_from(sorted(OPS)))
def test_operator_matches_reference(case, op):
    stream, ref = case
    engine_op, ref_op = OPS[op]
    result = engine_op(stream).to_arrow()
    check_physical(result)
    assert_same_snapshots(result, ref_op(ref))


@given(left=stream_cases(), right=stream_cases())
def test_union_matches_reference(left, right):
    result = left[0].union(right[0]).to_arrow()
    check_physical(result)
    assert_same_snapshots(result, left[1].union(right[1]))


@given(case=stream_cases())
def test_multicast_self_union(case):
    stream, ref = case
    shared = stream.multicast()
    q = shared.where(lambda e: e.k == 0).union(shared.where(lambda e: e.k != 0))
    assert_same_snapshots(q.to_arrow(), ref)
    assert_same_snapshots(stream.multicast(lambda s: s.union(s)), ref.union(ref))


@given(case=stream_cases(allow_edges=False))
def test_chop_pieces_stay_within_one_period(case):
    stream, _ = case
    t = stream.chop(6, 2).to_arrow()
    for s, e in zip(t.column("sync_time").to_pylist(), t.column("other_time").to_pylist(), strict=True):
        assert (s - 2) // 6 == (e - 1 - 2) // 6
