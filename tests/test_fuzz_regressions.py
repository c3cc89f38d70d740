"""Small fixed cases for wrong answers found by random testing (tests/test_fuzz_edges.py), each against
the reference evaluator."""

from __future__ import annotations

import pyarrow as pa
import pytest

import tidal
from tidal import INFINITY, agg
from tidal.core.time import EARLIEST
from tidal.testing import Reference, assert_same_snapshots

NAMES = ("k", "v")


def _physical(rows) -> pa.Table:
    """``rows`` are physical (sync, other, k, v) in sync order."""
    cols = list(zip(*rows, strict=True)) if rows else [[], [], [], []]
    names = ("sync_time", "other_time", "k", "v")
    return pa.table({n: pa.array(c, pa.int64()) for n, c in zip(names, cols, strict=True)})


def _stream(rows, batch_size=None):
    return tidal.from_arrow(_physical(rows), time="sync_time", other="other_time", batch_size=batch_size)


@pytest.mark.parametrize("base", [-20, EARLIEST])
def test_build_once_join_keeps_left_intervals_that_end_before_zero(base):
    # the built left marked end edges by an end of -1 and kept only ends >= 0: a left interval
    # ending at a negative time vanished from ``join(..., left_is_small=True)``
    left = [(base, base + 5, 1, 0)]
    right = [(base + 2, base + 30, 1, 7)]
    out = _stream(left).join(_stream(right), "k", "k", left_is_small=True).to_arrow()
    ref = Reference(NAMES, [(s, e, (k, v)) for s, e, k, v in left]).join(
        Reference(NAMES, [(s, e, (k, v)) for s, e, k, v in right]), "k", "k"
    )
    assert len(ref.events) == 1
    assert_same_snapshots(out, ref)


def test_build_once_join_with_left_edges_at_negative_times():
    # a start edge and its end edge, both before zero, on the built side
    left = [(-9, INFINITY, 1, 0), (-4, -9, 1, 0)]
    right = [(-7, 3, 1, 5)]
    out = _stream(left).join(_stream(right), "k", "k", left_is_small=True).to_arrow()
    assert out.to_pylist() == [{"sync_time": -7, "other_time": -4, "k": 1, "v": 0, "k_right": 1, "v_right": 5}]


@pytest.mark.parametrize("batch_size", [1, None])
def test_first_and_last_keep_a_null_after_the_values_at_its_tick(batch_size):
    # the reference evaluator skipped NULLs in FIRST/LAST while the engine keeps them (as DuckDB does)
    rows = [(0, INFINITY, None, None), (0, INFINITY, None, 0)]
    out = _stream(rows, batch_size).group_aggregate("k", f=agg.first("v"), la=agg.last("v")).to_arrow()
    assert [(r["f"], r["la"]) for r in out.to_pylist()] == [(0, None)]
    ref = Reference(NAMES, [(0, INFINITY, (None, None)), (0, INFINITY, (None, 0))])
    assert_same_snapshots(out, ref.group_aggregate("k", f=agg.first("v"), la=agg.last("v")))


def test_a_physical_event_with_other_time_equal_to_sync_time_is_refused():
    # it passed through as an empty lifetime that no operator's edge tests read the same way
    table = _physical([(1, 1, 0, 0), (2, 5, 0, 0)])
    with pytest.raises(tidal.InputError, match="row 0: other time 1 equals the sync time"):
        tidal.from_arrow(table, time="sync_time", other="other_time").to_arrow()


def test_snapshots_compare_payloads_holding_nan():
    # each NaN read back from Arrow is a new float object and NaN != NaN: an end edge never met its
    # start edge in the canonical form ("ends more often than it starts"), and equal answers differed
    nan = float("nan")
    table = pa.table(
        {"sync_time": [0, 3], "other_time": [INFINITY, 0], "k": [1, 1], "v": pa.array([nan, nan], pa.float64())}
    )
    stream = tidal.from_arrow(table, time="sync_time", other="other_time", batch_size=1)
    expected = Reference(NAMES, [(0, 3, (1, float("nan")))])
    assert_same_snapshots(stream.to_arrow(), expected)
    assert_same_snapshots(stream.group_aggregate("k", f=agg.first("v")).to_arrow(), expected, digits=6)
    with pytest.raises(AssertionError):
        assert_same_snapshots(stream.to_arrow(), Reference(NAMES, [(0, 4, (1, float("nan")))]))


@pytest.mark.parametrize("cut", [None, 1, 2])
def test_shortening_edges_with_a_nan_payload_empties_them(cut):
    # start and end edges were matched by payload with ==, and NaN != NaN: a start edge emptied by
    # extend_lifetime(-1) stayed open, and its end edge came out with other == sync
    nan = float("nan")
    table = pa.table(
        {
            "sync_time": [0, 0, 1, 5],
            "other_time": [INFINITY, INFINITY, 0, 0],
            "k": [None, 1, None, 1],
            "v": pa.array([nan, 1.0, nan, 1.0], pa.float64()),
        }
    )
    q = tidal.from_arrow(table, time="sync_time", other="other_time", batch_size=1).extend_lifetime(-1).stitch()
    if cut is None:
        out = q.to_arrow()
    else:  # a checkpoint while the NaN start edge is held
        import pickle

        first = q.query()
        first.run(max_messages=cut)
        second = q.query()
        second.restore(pickle.loads(pickle.dumps(first.checkpoint())))
        assert second.run()
        out = pa.concat_tables([first.sink.table(), second.sink.table()])
    assert out.to_pylist() == [
        {"sync_time": 0, "other_time": INFINITY, "k": 1, "v": 1.0},
        {"sync_time": 4, "other_time": 0, "k": 1, "v": 1.0},
    ]


def test_a_lambda_whose_first_batches_are_all_none_then_floats():
    # the sink cast every batch to the first one's schema: null (all None) could not take doubles
    table = pa.table({"t": [0, 1, 2], "v": pa.array([None, 0.0, 1.5])})
    s = tidal.from_arrow(table, time="t", batch_size=1).select(w=lambda e: None if e.v is None else e.v * 2 - 1)
    out = s.to_arrow()
    assert out.column("w").to_pylist() == [None, -1.0, 2.0]
    expected = Reference(("t", "v"), [(0, 1, (0, None)), (1, 2, (1, 0.0)), (2, 3, (2, 1.5))])
    assert_same_snapshots(out, expected.select(lambda e: {"w": None if e.v is None else e.v * 2 - 1}))


@pytest.mark.parametrize("as_edges", [False, True])
@pytest.mark.parametrize("op", ["stitch", "distinct", "count"])
def test_an_end_at_the_time_after_the_last_is_an_end_time(as_edges, op):
    # an event may end at LATEST + 1; operators that emit edges (stitch, distinct) refused its end edge
    # there, and so did ingress, which took the same event as an interval
    from tidal.core.time import LATEST

    s, e = LATEST - 2, LATEST + 1
    rows = [(s, INFINITY, 1, 1), (e, s, 1, 1)] if as_edges else [(s, e, 1, 1)]
    stream = _stream(rows)
    ref = Reference(NAMES, [(s, e, (1, 1))])
    run = {
        "stitch": lambda x: x.stitch(),
        "distinct": lambda x: x.distinct(),
        "count": lambda x: x.aggregate(n=agg.count()),
    }[op]
    assert_same_snapshots(run(stream).to_arrow(), run(ref))


def test_only_an_end_edge_may_stand_at_the_time_after_the_last():
    from tidal.core.time import LATEST

    with pytest.raises(tidal.InputError, match="row 0: sync time .* only an end edge"):
        _stream([(LATEST + 1, INFINITY, 1, 1)]).to_arrow()


def test_nan_keys_meet_as_one_key_in_the_reference_too():
    # the reference compared NaN keys with ==, so the answer hung on whether two NaNs were one object
    nan = float("nan")
    table = pa.table(
        {"sync_time": [0, 1], "other_time": [5, 6], "k": [1, 2], "v": pa.array([nan, float("nan")], pa.float64())}
    )
    s = tidal.from_arrow(table, time="sync_time", other="other_time")
    ref = Reference(NAMES, [(0, 5, (1, nan)), (1, 6, (2, float("nan")))])
    joined = s.join(s, "v", "v").to_arrow()
    assert joined.num_rows == 4
    assert_same_snapshots(joined, ref.join(ref, "v", "v"))
    counted = s.group_aggregate("v", n=agg.count()).to_arrow()
    assert_same_snapshots(counted, ref.group_aggregate("v", n=agg.count()))


def test_a_fused_hopping_aggregate_at_the_first_time_agrees_with_the_window_operator():
    # the fused window+aggregate refused an event at EARLIEST because an earlier window (that shows
    # nothing, as the output starts at floor(s)) began before it; the window operator takes it
    rows = [(EARLIEST, INFINITY, 2, 2), (EARLIEST, EARLIEST + 3, 1, 1)]
    ref = Reference(NAMES, [(EARLIEST, INFINITY, (2, 2)), (EARLIEST, EARLIEST + 3, (1, 1))]).hopping_window(4, 2)
    for variant in ("fused", "general"):
        out = _stream(rows).hopping_window(4, 2).aggregate(n=agg.count(), s=agg.sum("v"), variant=variant)
        assert_same_snapshots(out.to_arrow(), ref.aggregate(n=agg.count(), s=agg.sum("v")))
