"""Multi-operator temporal pipelines, checkpointed mid-stream and restored, against the reference evaluator.

Each operator family has its own reference test and its own checkpoint test (restored output equal to
the uninterrupted run's). Here whole plans chain them: a multicast A-then-B join, grouped sessions
feeding a join, an anti-join stitched and windowed, clip feeding sessions, a disordered source
sorted under a latency feeding grouped sessions. Each input has a random batch size and punctuation
period; the query is stopped after a random number of messages, its checkpoint goes through pickle
into a new query, which runs to the end. The two parts' output together must have the reference's
snapshots: batching and restoring never change a result.
"""

from __future__ import annotations

import pickle

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st
from streams import lifetimes, physical_table, reference_of

import tidal
from tidal import agg
from tidal.ops.reorder import DisorderPolicy, late_bounds_model
from tidal.testing import Reference, assert_same_snapshots
from tidal.testing.reference import check_physical

BATCHES = st.sampled_from([1, 2, 3, 7, 80_000])
PUNCTUATIONS = st.sampled_from([None, 1, 5, 17])


@st.composite
def sides(draw, n: int = 2, max_events: int = 18):
    """``n`` random inputs: (engine stream, reference) each, with its own batching and punctuation."""
    out = []
    for _ in range(n):
        evs = draw(lifetimes(max_events))
        stream = tidal.from_arrow(
            physical_table(evs),
            time="sync_time",
            other="other_time",
            batch_size=draw(BATCHES),
            punctuate_every=draw(PUNCTUATIONS),
        )
        out.append((stream, reference_of(evs)))
    return out


def _restarted(q: tidal.Stream, cut: int) -> pa.Table:
    """``q`` run for ``cut`` messages, its checkpoint pickled into a new query that runs to the end."""
    first = q.query()
    first.run(max_messages=cut)
    state = pickle.loads(pickle.dumps(first.checkpoint()))
    second = q.query()
    second.restore(state)
    assert second.run()
    return pa.concat_tables([first.sink.table(), second.sink.table()], promote_options="permissive")


def _a_then_b(s, _r):
    """Trill's query 7: an A followed within 6 ticks by a B with the same ``v`` (one source, shared)."""
    shared = s.multicast() if isinstance(s, tidal.Stream) else s
    a = shared.where(lambda e: e.k == 0).alter_duration(6)
    b = shared.where(lambda e: e.k == 1)
    return a.join(b, "v", "v", lambda x, y: {"v": x.v, "k": y.k})


PIPELINES = {
    "a_then_b": _a_then_b,
    "grouped_sessions_join": lambda s, r: s.group_apply("k", lambda g: g.session_window(4, max_duration=10)).join(
        r, "k", "k", lambda x, y: {"k": x.k, "d": x.v - y.v}
    ),
    # a join's output is defined per snapshot, so how it cuts lifetimes into events is its own choice; a
    # window (which moves each event by its start) reads that choice: stitch first, into canonical layers
    "anti_join_windowed_counts": lambda s, r: (
        s.where_not_exists(r, "k", "k")
        .stitch()
        .tumbling_window(8)
        .group_aggregate("k", agg.count(), total=agg.sum("v"))
    ),
    "clip_then_sessions": lambda s, r: s.clip(r, "k", "k").session_window(3, lifetime="event"),
    "outer_join_hopping_counts": lambda s, r: (
        s.left_outer_join(r, "k", "k", lambda x, y: {"k": x.k, "w": y.v})
        .stitch()
        .hopping_window(6, 3)
        .group_aggregate("k", agg.count())
    ),
    "union_distinct_sessions": lambda s, r: (
        s.union(r.shift_lifetime(2))
        .select(lambda e: {"k": e.k})
        .distinct()
        .stitch()
        .group_apply("k", lambda g: g.session_window(5).aggregate(agg.count()))
    ),
    "semi_join_stitch": lambda s, r: (
        s.where_exists(r.clip_duration(4), "k", "k").select(lambda e: {"k": e.k, "w": e.v % 2}).stitch()
    ),
}


@pytest.mark.parametrize("name", sorted(PIPELINES))
@given(inputs=sides(), cut=st.integers(0, 60))
def test_pipeline_restored_mid_stream_matches_reference(name, inputs, cut):
    (s, sref), (r, rref) = inputs
    q = PIPELINES[name](s, r)
    expected = PIPELINES[name](sref, rref)
    whole = q.to_arrow()
    check_physical(whole)
    assert_same_snapshots(whole, expected)
    restarted = _restarted(q, cut)
    check_physical(restarted)
    assert_same_snapshots(restarted, expected)


# -- a disordered source: the sort's buffer and watermark are in the checkpoint too ---------------------
@st.composite
def disordered(draw, max_events: int = 30):
    """Arrival-ordered (time, key, value) rows: sorted times with some delayed, and a reorder latency."""
    n = draw(st.integers(0, max_events))
    times = sorted(draw(st.lists(st.integers(0, 80), min_size=n, max_size=n)))
    delays = draw(st.lists(st.integers(0, 25), min_size=n, max_size=n))
    late = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    times = [t - d if c else t for t, d, c in zip(times, delays, late, strict=True)]
    keys = draw(st.lists(st.integers(0, 2), min_size=n, max_size=n))
    values = draw(st.lists(st.integers(-5, 5), min_size=n, max_size=n))
    return times, keys, values, draw(st.sampled_from([0, 3, 10, 100]))


@pytest.mark.parametrize("disorder", ["drop", "adjust"])
@given(case=disordered(), batch=BATCHES, every=st.sampled_from([None, 1, 4]), cut=st.integers(0, 50))
def test_disordered_sessions_restored_mid_stream_match_reference(disorder, case, batch, every, cut):
    times, keys, values, latency = case
    t = pa.table({"t": pa.array(times, pa.int64()), "k": keys, "v": values})
    q = tidal.from_arrow(
        t, time="t", disorder=disorder, reorder_latency=latency, batch_size=batch, punctuate_every_events=every
    ).group_apply("k", lambda g: g.session_window(4, max_duration=12).aggregate(agg.count(), agg.sum("v")))
    # which rows are late, and where "adjust" moves them, per the punctuation rule
    bounds = late_bounds_model(times, DisorderPolicy((latency,), disorder, punctuate_every_events=every))
    rows = []
    for time, k, v, bound in zip(times, keys, values, bounds, strict=True):
        if time >= bound:
            rows.append((time, (time, k, v)))
        elif disorder == "adjust":
            rows.append((bound, (time, k, v)))
    ref = Reference.points(("t", "k", "v"), rows).group_apply(
        "k", lambda g: g.session_window(4, max_duration=12).aggregate(agg.count(), agg.sum("v"))
    )
    if not times:
        return
    whole = q.to_arrow()
    check_physical(whole)
    assert_same_snapshots(whole, ref)
    restarted = _restarted(q, cut)
    check_physical(restarted)
    assert_same_snapshots(restarted, ref)
