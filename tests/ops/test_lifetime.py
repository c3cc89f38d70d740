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
    "tumbling_window_end": (
        lambda s: s.tumbling_window(10, 3, align="end"),
        lambda r: r.tumbling_window(10, 3, align="end"),
    ),
    "hopping_window_end": (
        lambda s: s.hopping_window(10, 5, align="end"),
        lambda r: r.hopping_window(10, 5, align="end"),
    ),
    "hopping_window_uneven_end": (
        lambda s: s.hopping_window(7, 3, 1, align="end"),
        lambda r: r.hopping_window(7, 3, 1, align="end"),
    ),
    "hopping_window_gaps_end": (
        lambda s: s.hopping_window(3, 8, 2, align="end"),
        lambda r: r.hopping_window(3, 8, 2, align="end"),
    ),
    "quantize_lifetime_end": (
        lambda s: s.quantize_lifetime(8, 4, 1, align="end"),
        lambda r: r.quantize_lifetime(8, 4, 1, align="end"),
    ),
    "clip_duration": (lambda s: s.clip_duration(6), lambda r: r.clip_duration(6)),
    "extend_lifetime": (lambda s: s.extend_lifetime(9), lambda r: r.extend_lifetime(9)),
    "shorten_lifetime": (lambda s: s.extend_lifetime(-4), lambda r: r.extend_lifetime(-4)),
    "shorten_then_aggregate": (
        lambda s: s.extend_lifetime(-3).group_aggregate("k", tidal.agg.count()),
        lambda r: r.extend_lifetime(-3).group_aggregate("k", tidal.agg.count()),
    ),
    "quantize_lifetime": (lambda s: s.quantize_lifetime(8, 4), lambda r: r.quantize_lifetime(8, 4)),
    "quantize_lifetime_gaps": (lambda s: s.quantize_lifetime(3, 5, 1), lambda r: r.quantize_lifetime(3, 5, 1)),
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


# -- window alignment (align="end": Trill's HoppingWindowLifetime snaps starts up) -------------------
@given(case=stream_cases(), size=st.integers(1, 12), hop=st.integers(1, 12), offset=st.integers(-5, 5))
def test_align_end_windows_and_their_aggregates_match_the_reference(case, size, hop, offset):
    from tidal import agg

    check_against_reference(
        case,
        lambda s: s.hopping_window(size, hop, offset, align="end").group_aggregate("k", agg.count(), agg.sum("v")),
        lambda r: r.hopping_window(size, hop, offset, align="end").group_aggregate("k", agg.count(), agg.sum("v")),
    )


def test_align_end_is_shown_and_not_fused():
    from tidal import agg

    s = tidal.from_records([{"t": t, "v": t % 3} for t in range(30)], time="t")
    plain = s.tumbling_window(10).aggregate(agg.count()).explain()
    ending = s.tumbling_window(10, align="end").aggregate(agg.count()).explain()
    assert "align end" in ending and "align end" not in plain
    assert "fused" in plain and "fused" not in ending  # the fused engines snap starts down
    import pytest

    from tidal.core.errors import PlanError

    with pytest.raises(PlanError, match="align='start'"):
        s.tumbling_window(10, align="end").aggregate(agg.count(), variant="fused")
    ref = Reference.points(("t", "v"), [(t, (t, t % 3)) for t in range(30)])
    assert_same_snapshots(
        s.tumbling_window(10, align="end").aggregate(agg.count()),
        ref.tumbling_window(10, align="end").aggregate(agg.count()),
    )
    # a filter moved below the window keeps its alignment
    q = s.tumbling_window(10, align="end").where(lambda e: e.v > 0)
    assert "align end" in q.explain()
    assert_same_snapshots(q, ref.tumbling_window(10, align="end").where(lambda e: e.v > 0))


def test_align_end_before_the_sort_matches_sorted_input():
    times = [5, 1, 12, 10, 3, 20, 19, 30]
    table = pa.table({"t": pa.array(times, pa.int64())})
    early = (
        tidal.from_arrow(table, time="t", sorted=False)
        .tumbling_window(10, align="end")
        .to_stream(disorder="drop", reorder_latency=100)
    )
    ref = Reference.points(("t",), [(t, (t,)) for t in times]).tumbling_window(10, align="end")
    assert_same_snapshots(early, ref)


def test_align_must_be_start_or_end():
    import pytest

    from tidal.core.errors import PlanError

    s = tidal.from_records([{"t": 1}], time="t")
    for make in (
        lambda: s.tumbling_window(10, align="middle"),
        lambda: s.hopping_window(10, 5, align="END"),
        lambda: s.quantize_lifetime(10, align=None),
    ):
        with pytest.raises(PlanError, match="align must be 'start' or 'end'"):
            make()


@given(case=stream_cases(), k=st.integers(1, 30))
def test_shortening_matches_the_reference(case, k):
    """``extend_lifetime(-k)`` (tidal.ops.shorten): ``[s, e-k)``, emptied events gone, edges held."""
    check_against_reference(case, lambda s: s.extend_lifetime(-k), lambda r: r.extend_lifetime(-k))


def test_quantize_smaller_than_its_hop_releases_end_edges_in_order():
    """Found porting Trill's tests: with size < hop an end edge can land before the grid point of
    its own arrival time; the operator used to release that far and then fail ("produced an event
    at sync time 3 after one at 4") when the end edge came in a later batch."""
    rows = [(0, INFINITY, 0), (4, INFINITY, 1), (4, 0, 0)]
    table = pa.table(
        {
            "sync_time": pa.array([r[0] for r in rows], pa.int64()),
            "other_time": pa.array([r[1] for r in rows], pa.int64()),
            "v": pa.array([r[2] for r in rows], pa.int64()),
        }
    )
    ref = Reference(("v",), [(0, 4, (0,)), (4, INFINITY, (1,))])
    for align in ("start", "end"):
        for batch in (1, 2, 3):
            s = tidal.from_arrow(table, time="sync_time", other="other_time", batch_size=batch)
            got = s.quantize_lifetime(1, 2, align=align).to_arrow()
            check_physical(got)
            assert_same_snapshots(got, ref.quantize_lifetime(1, 2, align=align))
