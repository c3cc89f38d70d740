"""Out-of-order input: disorder policies at ingress, sort-as-needed plans, the Impatience framework.

The oracle for lateness is ``late_bounds_model``: the punctuation rule stated one event at a
time. Query results are checked against the reference evaluator run on the sorted events.
(The worked example of the paper's section III-A is tested on the sorter itself in
tests/test_impatience.py::test_paper_example.)
"""

from __future__ import annotations

import pickle
import re
from unittest import mock

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tidal
from tidal import INFINITY
from tidal.core.batch import EventBatch
from tidal.core.time import EARLIEST, LATEST
from tidal.io.disorder import DisorderPolicy, late_bounds_model
from tidal.ops import reorder as reorder_mod
from tidal.ops.base import Consumer
from tidal.testing import Reference, assert_same_snapshots
from tidal.testing.reference import check_physical

# --------------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------------


def table(times, durations=None, values=None) -> pa.Table:
    n = len(times)
    cols = {
        "t": pa.array(times, pa.int64()),
        "i": pa.array(range(n), pa.int64()),
        "v": pa.array(values if values is not None else [x % 7 for x in range(n)], pa.int64()),
    }
    if durations is not None:
        cols["e"] = pa.array([t + d for t, d in zip(times, durations, strict=True)], pa.int64())
    return pa.table(cols)


def rows_of(result: pa.Table) -> list[tuple[int, int, int]]:
    return list(
        zip(
            result.column("sync_time").to_pylist(),
            result.column("other_time").to_pylist(),
            result.column("i").to_pylist(),
            strict=True,
        )
    )


def expected_sorted(times, ends, policy: DisorderPolicy, latency_index: int = -1):
    """(kept rows sorted by (time, arrival), late arrival indices) per the punctuation rule."""
    bounds = late_bounds_model(list(times), policy, latency_index % len(policy.latencies))
    kept, late = [], []
    for i, (t, e, b) in enumerate(zip(times, ends, bounds, strict=True)):
        if t >= b:
            kept.append((t, e, i))
        else:
            late.append(i)
            if policy.disorder == "adjust":
                kept.append((b, e if e == INFINITY else e + (b - t), i))
    kept.sort(key=lambda r: (r[0], r[2]))
    return kept, late


@st.composite
def arrivals(draw, max_events=40):
    """Arrival-ordered times: a sorted sequence with some events delayed, and durations; around 0 (-1
    and 0 are times, never markers), or moved far before 1970 or near either end of the range."""
    n = draw(st.integers(0, max_events))
    base = draw(st.sampled_from([0, 0, 0, -(2**40), EARLIEST + 60, LATEST - 130]))
    times = sorted(base + t for t in draw(st.lists(st.integers(-20, 120), min_size=n, max_size=n)))
    share = draw(st.sampled_from([0.0, 0.2, 0.6, 1.0]))
    delays = draw(st.lists(st.integers(0, 40), min_size=n, max_size=n))
    coins = draw(st.lists(st.floats(0, 1), min_size=n, max_size=n))
    times = [t - d if c < share else t for t, d, c in zip(times, delays, coins, strict=True)]
    durations = draw(st.lists(st.integers(1, 6), min_size=n, max_size=n))
    return times, durations


punctuation_modes = st.sampled_from(
    [{}, {"punctuate_every_events": 1}, {"punctuate_every_events": 4}, {"punctuate_every": 5}]
)
batch_sizes = st.sampled_from([1, 2, 3, 7, 80_000])


# --------------------------------------------------------------------------------------------------
# examples
# --------------------------------------------------------------------------------------------------


def test_in_order_input_still_required_by_default():
    with pytest.raises(tidal.InputError, match=r"row 2: sync time 5 .* earlier than the previous row's 6"):
        tidal.from_arrow(table([2, 6, 5]), time="t").to_arrow()


def test_drop_example_and_late_stream():
    # arrival 2 6 5 1 4 3 7 8, latency 1: punctuations trail the high watermark by 1
    s = tidal.from_arrow(table([2, 6, 5, 1, 4, 3, 7, 8]), time="t", disorder="drop", reorder_latency=1)
    out = s.to_arrow()
    assert out.column("sync_time").to_pylist() == [2, 5, 6, 7, 8]
    check_physical(out)
    assert s.late_count() == 3
    late = s.late_events().to_arrow()
    assert late.column("sync_time").to_pylist() == [1, 3, 4]  # original times, sorted
    assert late.column("i").to_pylist() == [3, 5, 4]
    (stats,) = s.disorder_stats()
    assert (stats.events, stats.late, stats.dropped, stats.adjusted) == (8, 3, 3, 0)


def test_nothing_late_within_the_latency():
    times = [2, 6, 5, 1, 4, 3, 7, 8]
    s = tidal.from_arrow(table(times), time="t", disorder="drop", reorder_latency=5)
    assert s.to_arrow().column("sync_time").to_pylist() == sorted(times)
    assert s.late_count() == 0
    assert s.late_events().to_arrow().num_rows == 0


def test_adjust_keeps_duration():
    # 1 arrives after the punctuation 5 (high watermark 6 - 1): it becomes [5, 5 + 3)
    t = table([2, 6, 1, 7], durations=[2, 2, 3, 2])
    s = tidal.from_arrow(t, time="t", end="e", disorder="adjust", reorder_latency=1)
    assert rows_of(s.to_arrow()) == [(2, 4, 0), (5, 8, 2), (6, 8, 1), (7, 9, 3)]
    assert s.late_count() == 1
    assert s.late_events().to_arrow().column("sync_time").to_pylist() == [1]


def test_adjust_start_edges_stay_open():
    s = tidal.from_arrow(table([4, 9, 2]), time="t", kind="start", disorder="adjust", reorder_latency=2)
    assert rows_of(s.to_arrow()) == [(4, INFINITY, 0), (7, INFINITY, 2), (9, INFINITY, 1)]


def test_throw_names_row_and_times():
    s = tidal.from_arrow(table([10, 20, 11, 30]), time="t", disorder="throw", reorder_latency=5)
    with pytest.raises(tidal.InputError) as err:
        s.to_arrow()
    msg = str(err.value)
    assert "row 2: time 11 is late" in msg and "punctuation 15" in msg and "high watermark then 20" in msg
    assert "reorder latency 5" in msg and "i=2" in msg


def test_from_records_and_pandas_take_the_policy():
    rows = [{"t": 5, "v": 1}, {"t": 3, "v": 2}, {"t": 9, "v": 3}]
    s = tidal.from_records(rows, time="t", disorder="drop", reorder_latency=10)
    assert s.to_arrow().column("v").to_pylist() == [2, 1, 3]
    df = pa.table({"t": [5, 3, 9], "v": [1, 2, 3]}).to_pandas()
    assert tidal.from_pandas(df, time="t", disorder="drop", reorder_latency=10).to_arrow().column("v").to_pylist() == [
        2,
        1,
        3,
    ]


def test_bad_policy_arguments():
    t = table([1, 2])
    with pytest.raises(tidal.PlanError, match="needs a disorder policy"):
        tidal.from_arrow(t, time="t", reorder_latency=3)
    with pytest.raises(tidal.PlanError, match="disorder must be one of"):
        tidal.from_arrow(t, time="t", disorder="ignore", reorder_latency=3)
    with pytest.raises(tidal.PlanError, match="non-negative"):
        tidal.from_arrow(t, time="t", disorder="drop", reorder_latency=-1)
    phys = pa.table({"s": [1], "o": [2]})
    with pytest.raises(tidal.PlanError, match="physical events"):
        tidal.from_arrow(phys, time="s", other="o", disorder="drop", reorder_latency=3)


def test_disordered_stream_offers_only_order_insensitive_operators():
    ds = tidal.from_arrow(table([3, 1, 2]), time="t", sorted=False)
    assert isinstance(ds, tidal.DisorderedStream)
    for name in ("union", "chop", "clip_duration", "to_arrow", "point_at_end"):
        with pytest.raises(tidal.PlanError, match="call to_stream"):
            getattr(ds, name)
    assert ds.to_stream(5).to_arrow().column("sync_time").to_pylist() == [1, 2, 3]


def test_explain_shows_where_the_sort_sits():
    ds = tidal.from_arrow(table([3, 1, 2]), time="t", sorted=False)
    q = ds.where(lambda e: e.v > 0).tumbling_window(10).to_stream(5, "drop").shift_lifetime(1)
    lines = [ln.strip() for ln in q.explain().splitlines() if "#" in ln]
    labels = [re.search(r"#\d+ (\w+)", ln).group(1) for ln in lines]
    assert labels == ["ShiftLifetime", "ImpatienceSort", "TumblingWindow", "Where", "Ingress"]
    assert "sorts here" in lines[1] and "reorder latency 5" in lines[1]
    assert "before the sort" in lines[2]
    assert "unsorted" in ds.explain().splitlines()[0]


def test_window_before_sort_keeps_grid_when_adjusting():
    # windows of 10; a late event's window start moves to the first grid point at/after the punctuation
    t = table([12, 45, 3, 50])
    s = tidal.from_arrow(t, time="t", sorted=False).tumbling_window(10).to_stream(5, "adjust")
    # after 45: window start 40, punctuation 35; the 3 -> window [0, 10) is late -> moved to [40, 50)
    assert rows_of(s.to_arrow()) == [(10, 20, 0), (40, 50, 1), (40, 50, 2), (50, 60, 3)]
    assert s.properties.constant_hop == (10, 0)


def test_sort_reads_the_filtered_stream():
    # late is decided on what reaches the sort: a filtered-out late event is not counted
    t = table([10, 20, 1, 2], values=[1, 1, 0, 1])
    s = tidal.from_arrow(t, time="t", sorted=False).where(lambda e: e.v == 1).to_stream(5, "drop")
    assert s.to_arrow().column("i").to_pylist() == [0, 1]
    assert s.late_count() == 1
    assert s.late_events().to_arrow().column("i").to_pylist() == [3]


def test_snapshot_restore_mid_stream():
    rng = np.random.default_rng(3)
    times = (np.arange(400) - rng.integers(0, 30, 400) * (rng.random(400) < 0.4)).tolist()
    policy = DisorderPolicy((10,), "drop")
    t = table(times)
    batches = [t.slice(i, 37) for i in range(0, 400, 37)]

    def run(split: int | None):
        got = []

        class Sink(Consumer):
            def on_batch(self, b):
                got.extend(b.sync.tolist())

        def feed(op, rb):
            sync = rb.column("t").to_numpy()
            op.on_batch(EventBatch(sync, sync + 1, {"i": rb.column("i").combine_chunks()}))

        op = reorder_mod.ReorderOp(policy)
        op.downstream.append(Sink())
        for k, rb in enumerate(batches):
            if k == split:
                state = op.snapshot()
                op = reorder_mod.ReorderOp(policy)
                op.restore(state)
                op.downstream.append(Sink())
            feed(op, rb)
        op.on_completed()
        return got

    whole = run(None)
    assert whole == sorted(whole)
    for split in (1, 5, 9):
        assert run(split) == whole


# --------------------------------------------------------------------------------------------------
# properties
# --------------------------------------------------------------------------------------------------


@given(
    arrivals(), st.sampled_from([0, 1, 3, 10, 40]), punctuation_modes, batch_sizes, st.sampled_from(["drop", "adjust"])
)
def test_policies_match_the_punctuation_rule(case, latency, punct, batch_size, disorder):
    times, durations = case
    ends = [t + d for t, d in zip(times, durations, strict=True)]
    policy = DisorderPolicy((latency,), disorder, **punct)
    s = tidal.from_arrow(
        table(times, durations),
        time="t",
        end="e",
        disorder=disorder,
        reorder_latency=latency,
        batch_size=batch_size,
        **punct,
    )
    out = s.to_arrow() if times else None
    kept, late = expected_sorted(times, ends, policy)
    if times:
        check_physical(out)
        assert rows_of(out) == kept  # sorted, stable, nothing within the latency lost
    # nothing within the latency is ever late
    high = -(2**63)
    for i, t in enumerate(times):
        if high - t <= latency:
            assert i not in late
        high = max(high, t)
    # every late event counted once and routed once, with its original time
    assert s.late_count() == len(late)
    (stats,) = s.disorder_stats()
    assert stats.events == len(times) and stats.late == len(late)
    assert (stats.dropped, stats.adjusted) == ((len(late), 0) if disorder == "drop" else (0, len(late)))
    assert sum(stats.per_band) == len(times) - stats.dropped
    if times:
        late_out = s.late_events().to_arrow()
        assert sorted(late_out.column("i").to_pylist()) == late
        assert late_out.column("sync_time").to_pylist() == sorted(times[i] for i in late)


@given(arrivals(max_events=25), st.sampled_from([0, 2, 10]), batch_sizes)
def test_throw_raises_exactly_when_something_is_late(case, latency, batch_size):
    times, _ = case
    policy = DisorderPolicy((latency,), "throw")
    _, late = expected_sorted(times, [t + 1 for t in times], policy)
    s = tidal.from_arrow(table(times), time="t", disorder="throw", reorder_latency=latency, batch_size=batch_size)
    if not times:
        return
    if late:
        with pytest.raises(tidal.InputError, match=rf"row {late[0]}: time {times[late[0]]} is late"):
            s.to_arrow()
    else:
        assert s.to_arrow().column("sync_time").to_pylist() == sorted(times)


@given(arrivals(), st.sampled_from([0, 3, 15, 1000]), batch_sizes, st.sampled_from([None, 4]), st.integers(1, 12))
def test_sort_as_needed_matches_reference(case, latency, batch_size, every, window):
    """where + select + window before the sort, then ordered operators: same as the reference on sorted input."""
    times, durations = case
    t = table(times, durations)
    pred = lambda e: e.v % 3 != 1
    proj = lambda e: {"i": e.i, "w": e.v * 2}
    q = (
        tidal.from_arrow(t, time="t", end="e", sorted=False, batch_size=batch_size, punctuate_every_events=every)
        .where(pred)
        .select(proj)
        .tumbling_window(window)
        .to_stream(latency, "drop")
        .shift_lifetime(2)
    )
    # the sort sees the filtered, windowed events in arrival order: lateness is decided on those
    vals = t.column("v").to_pylist()
    passed = [i for i in range(len(times)) if vals[i] % 3 != 1]
    starts = [times[i] - times[i] % window for i in passed]
    policy = DisorderPolicy((latency,), "drop", punctuate_every_events=every)
    bounds = late_bounds_model(starts, policy)
    keep = [i for i, s, b in zip(passed, starts, bounds, strict=True) if s >= b]
    ref = (
        Reference(("t", "i", "v"), [(times[i], times[i] + durations[i], (times[i], i, vals[i])) for i in keep])
        .select(proj)
        .tumbling_window(window)
        .shift_lifetime(2)
    )
    if times:
        out = q.to_arrow()
        check_physical(out)
        assert_same_snapshots(out, ref)
    assert q.late_count() == len(passed) - len(keep)


WINDOWS = [(5, 5, 0, "start"), (6, 2, 1, "start"), (2, 5, 1, "start"), (6, 3, 0, "end"), (3, 7, 2, "end")]
PUNCTUATIONS = [{}, {"punctuate_every_events": 2}, {"punctuate_every": 4}, {"punctuate_every": 1}]


@given(
    arrivals(max_events=30),
    st.sampled_from(WINDOWS),
    st.sampled_from([0, 3, 15]),
    st.sampled_from(["drop", "adjust"]),
    st.sampled_from(PUNCTUATIONS),
    batch_sizes,
    st.integers(0, 30),
)
def test_windows_before_the_sort_adjust_on_the_grid_and_restore(case, window, latency, disorder, punct, bs, cut):
    """Hopping/tumbling windows (either alignment, gaps included) before the sort: lateness is decided on the
    windowed starts, "adjust" moves a late one up to the first grid point at or after the punctuation
    (duration kept), and a query checkpointed mid-stream (through pickle) and restored continues exactly."""
    times, durations = case
    size, hop, offset, align = window
    q = (
        tidal.from_arrow(table(times, durations), time="t", end="e", sorted=False, batch_size=bs, **punct)
        .hopping_window(size, hop, offset, align)
        .to_stream(latency, disorder)
        .aggregate(tidal.agg.count(), tidal.agg.sum("i"))
    )
    names = ("t", "i", "v", "e")
    windowed = Reference(
        names, [(t, t + d, (t, i, i % 7, t + d)) for i, (t, d) in enumerate(zip(times, durations, strict=True))]
    ).hopping_window(size, hop, offset, align)  # one event each (none in a gap), in arrival order
    bounds = late_bounds_model([s for s, _, _ in windowed.events], DisorderPolicy((latency,), disorder, **punct))
    kept = []
    for (s, e, p), b in zip(windowed.events, bounds, strict=True):
        if s >= b:
            kept.append((s, e, p))
        elif disorder == "adjust":
            moved = b + (offset - b) % hop
            kept.append((moved, e + moved - s, p))
    expected = Reference(names, kept).aggregate(tidal.agg.count(), tidal.agg.sum("i"))
    if not times:
        return
    out = q.to_arrow()
    check_physical(out)
    assert_same_snapshots(out, expected)
    first = q.query()
    first.run(max_messages=cut)
    state = pickle.loads(pickle.dumps(first.checkpoint()))
    second = q.query()
    second.restore(state)
    assert second.run()
    parts = [t for t in (first.sink.table(), second.sink.table()) if t is not None]
    assert_same_snapshots(pa.concat_tables(parts, promote_options="permissive"), expected)


def _within(times, policy, j):
    bounds = late_bounds_model(list(times), policy, j)
    return [i for i, (t, b) in enumerate(zip(times, bounds, strict=True)) if t >= b]


@given(arrivals(), st.sampled_from([(0, 5, 30), (2, 8), (1,), (0, 1, 2, 3)]), batch_sizes, punctuation_modes)
def test_framework_outputs_hold_the_events_within_each_latency(case, latencies, batch_size, punct):
    times, durations = case
    t = table(times, durations)
    ds = tidal.from_arrow(t, time="t", end="e", sorted=False, batch_size=batch_size, **punct)
    streams = ds.to_streams(list(latencies), disorder="drop")
    assert len(streams) == len(latencies) and streams.latencies == tuple(latencies)
    policy = DisorderPolicy(tuple(latencies), "drop", **punct)
    if not times:
        return
    made = []
    original = reorder_mod.ReorderOp.__init__

    def counting(self, *args, **kwargs):
        made.append(self)
        original(self, *args, **kwargs)

    with mock.patch.object(reorder_mod.ReorderOp, "__init__", counting):
        tables = streams.to_arrow()
    assert len(made) == 1  # one sort pass feeds every output
    (stats,) = streams.disorder_stats()
    assert stats.events == len(times) and sum(stats.per_band) + stats.late == len(times)
    for j, out in enumerate(tables):
        check_physical(out)
        within = _within(times, policy, j)
        expected = sorted((times[i], times[i] + durations[i], i) for i in within)
        assert sorted(rows_of(out)) == expected
    # the bands are disjoint and together are the last output
    band_rows = [sorted(rows_of(b.to_arrow())) for b in streams.bands]
    assert sorted(r for b in band_rows for r in b) == sorted(rows_of(tables[-1]))
    assert streams.late_count() == len(times) - len(_within(times, policy, len(latencies) - 1))


@given(arrivals(), st.sampled_from([(0, 5, 30), (3, 12)]), batch_sizes, st.integers(2, 10))
def test_advanced_framework_equals_query_on_each_subset(case, latencies, batch_size, window):
    """piq per band, merge across bands: output j equals the query on the events within latency j."""
    times, durations = case
    t = table(times, durations)
    piq = lambda s: s.where(lambda e: e.v != 3).select(lambda e: {"i": e.i, "v": e.v}).chop(window)
    merge = lambda previous, partial: previous.union(partial)
    ds = tidal.from_arrow(t, time="t", end="e", sorted=False, batch_size=batch_size).tumbling_window(window)
    streams = ds.to_streams(list(latencies), piq=piq, merge=merge, disorder="drop")
    if not times:
        return
    starts = [x - x % window for x in times]
    policy = DisorderPolicy(tuple(latencies), "drop")
    vals = t.column("v").to_pylist()
    for j, out in enumerate(streams.to_arrow()):
        check_physical(out)
        within = _within(starts, policy, j)
        ref = (
            Reference(("t", "i", "v"), [(times[i], times[i] + durations[i], (times[i], i, vals[i])) for i in within])
            .tumbling_window(window)
            .where(lambda e: e.v != 3)
            .select(lambda e: {"i": e.i, "v": e.v})
            .chop(window)
        )
        assert_same_snapshots(out, ref)


def test_framework_needs_piq_and_merge_together():
    ds = tidal.from_arrow(table([1, 2]), time="t", sorted=False)
    with pytest.raises(tidal.PlanError, match="both piq and merge"):
        ds.to_streams([1, 2], piq=lambda s: s)
    with pytest.raises(tidal.PlanError, match="strictly increasing"):
        ds.to_streams([5, 2])


def _trace(stream):
    seq = []
    stream.subscribe(
        lambda rb: seq.append(("data", rb.column("sync_time").to_pylist())), lambda t: seq.append(("p", t))
    )
    return seq


def test_punctuations_trail_the_high_watermark_and_release_progressively():
    t = table(list(range(100)))
    seq = _trace(tidal.from_arrow(t, time="t", disorder="drop", reorder_latency=5, batch_size=10))
    puncts = [x for k, x in seq if k == "p"]
    assert puncts == [10 * k + 4 for k in range(10)] + [INFINITY]
    # every released event is at or after the punctuation before it and at or before the one after it
    last = -(2**63)
    for kind, x in seq:
        if kind == "p":
            last = x
        else:
            assert min(x) >= last
    first_data = next(i for i, (k, _) in enumerate(seq) if k == "data")
    assert seq[first_data][1] == list(range(5))  # released after the first input batch, not at the end


def test_punctuate_every_events_and_ticks_inside_one_batch():
    times = [5, 1, 9, 3, 14, 12, 20, 30, 22]
    s = tidal.from_arrow(table(times), time="t", disorder="drop", reorder_latency=2, punctuate_every_events=3)
    puncts = [x for k, x in _trace(s) if k == "p"]
    assert puncts == [7, 12, 28, INFINITY]  # after events 3, 6, 9: high watermark 9, 14, 30 minus 2
    s = tidal.from_arrow(table(times), time="t", disorder="drop", reorder_latency=2, punctuate_every=10)
    puncts = [x for k, x in _trace(s) if k == "p"]
    assert puncts == [0, 10, 20, INFINITY]  # grid points reached by high watermark - 2 (3, 12, 28)
