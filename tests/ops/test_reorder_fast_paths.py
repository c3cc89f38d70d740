"""The reorder operator's fast paths against a plain reference: events that arrive in order skip the sorter
(a queue merged at each release), one compiled pass per batch for the default policy, payloads kept by
reference and taken once (zero-copy slices for in-order runs), compaction, and snapshot/restore in between.

The reference: an event is late below ``late_bounds_model`` (the event-at-a-time punctuation rule); the
output is the other events sorted by (time, arrival), with their payloads, points staying points."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from tidal.core.batch import EventBatch
from tidal.core.time import INFINITY
from tidal.io.disorder import DisorderPolicy, late_bounds_model
from tidal.ops.base import Consumer
from tidal.ops.reorder import LATE, ReorderOp
from tidal.ops.reorder_store import PayloadStore


class Sink(Consumer):
    def __init__(self, band: int = 0):
        super().__init__()
        self.band = band
        self.rows: list[tuple] = []
        self.batches: list[EventBatch] = []
        self.puncts: list[int] = []

    def on_batch(self, b: EventBatch) -> None:
        if self.band != LATE:
            if self.puncts:  # nothing released behind a punctuation already given
                assert int(b.sync.min()) >= self.puncts[-1]
            assert (np.diff(b.sync) >= 0).all()
        self.batches.append(b)
        cols = [b.columns[k].to_pylist() for k in ("i", "s")]
        other = (b.sync + 1 if b.points else b.other).tolist()  # (reading b.other would make it explicit)
        self.rows.extend(zip(b.sync.tolist(), other, *cols, strict=True))

    def on_punctuation(self, t: int) -> None:
        if self.puncts:
            assert t >= self.puncts[-1]
        self.puncts.append(t)


def _op(policy: DisorderPolicy, slack: int) -> tuple[ReorderOp, list[Sink]]:
    op = ReorderOp(policy)
    op.stores = [PayloadStore(slack=slack) for _ in op.stores]
    sinks = [Sink(j) for j in range(len(policy.latencies))] + [Sink(LATE)]
    op.downstream.extend(sinks)
    return op, sinks


def _batch(times: np.ndarray, first: int, points: bool, strings: bool) -> EventBatch:
    n = len(times)
    ids = np.arange(first, first + n)
    cols = {"i": pa.array(ids), "s": pa.array([f"r{x}" for x in ids]) if strings else pa.array(ids * 2)}
    return EventBatch(times, None if points else times + 1 + ids % 3, cols)


def _expected(times: list[int], policy: DisorderPolicy, points: bool, strings: bool, band: int = -1):
    """Per band (the events late for the latencies before it but not for its own), sorted by (time, arrival)."""
    k = len(policy.latencies)
    bounds = [late_bounds_model(times, policy, j) for j in range(k)]
    out = {j: [] for j in range(k)}
    late = []
    for i, t in enumerate(times):
        late_for = sum(t < bounds[j][i] for j in range(k))
        row = (t, t + 1 if points else t + 1 + i % 3, i, f"r{i}" if strings else 2 * i)
        (late.append(row) if late_for == k else out[late_for].append(row))
    for rows in out.values():
        rows.sort(key=lambda r: (r[0], r[2]))
    return out, sorted(late, key=lambda r: (r[0], r[2]))


def _feed(times: np.ndarray, batch_size: int, split: int, make, points: bool, strings: bool, restored=None):
    """Push ``times`` in batches of ``batch_size`` into ``make()``'s operator; before batch ``split``, checkpoint
    it and go on from a fresh one (``restored(op)`` adjusts it), its sinks taking over what the old ones got.
    Returns the operator and its sinks once completed."""
    op, sinks = make()
    for b, start in enumerate(range(0, len(times), batch_size)):
        if b == split:
            state = op.snapshot()
            old = sinks
            op, sinks = make()
            op.restore(state)
            if restored is not None:
                restored(op)
            for s, o in zip(sinks, old, strict=True):
                s.rows, s.puncts = o.rows, o.puncts
        op.on_batch(_batch(times[start : start + batch_size], start, points, strings))
    op.on_completed()
    return op, sinks


@st.composite
def streams(draw):
    """Arrival-ordered times: runs in order with some events delayed (sometimes a lot), or all in order."""
    n = draw(st.integers(1, 400))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    share = draw(st.sampled_from([0.0, 0.0, 0.05, 0.3, 1.0]))
    step = draw(st.sampled_from([0, 1, 3]))
    times = np.cumsum(rng.integers(0, step + 1, n)).astype(np.int64) + draw(st.integers(-50, 50))
    moved = rng.random(n) < share
    times[moved] -= rng.integers(0, draw(st.sampled_from([3, 30, 300])), int(moved.sum()))
    return times


batch_sizes = st.sampled_from([1, 2, 7, 50, 1000])
punctuations = st.sampled_from(
    [{}, {}, {"punctuate_every_events": 1}, {"punctuate_every_events": 10}, {"punctuate_every": 4}]
)


@settings(max_examples=100, deadline=None)
@given(
    streams(),
    st.sampled_from([(0,), (5,), (40,), (0, 5, 30)]),
    punctuations,
    batch_sizes,
    st.booleans(),
    st.booleans(),
    st.sampled_from([0, 3, 65_536]),
    st.integers(0, 20),
)
def test_sorted_output_equals_the_reference(times, latencies, punct, batch_size, points, strings, slack, split):
    policy = DisorderPolicy(latencies, "drop", **punct)
    starts = list(range(0, len(times), batch_size))
    op, sinks = _feed(times, batch_size, split, lambda: _op(policy, slack), points, strings)
    want, late = _expected(times.tolist(), policy, points, strings)
    for j in range(len(latencies)):
        assert sinks[j].rows == want[j], j
        assert sinks[j].puncts[-1] == INFINITY
    assert sorted(sinks[-1].rows, key=lambda r: (r[0], r[2])) == late
    if split >= len(starts):  # (statistics are per run: a restored operator counts from the restore)
        assert op.stats.dropped == len(late) and op.stats.events == len(times)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 3000), batch_sizes, st.sampled_from([0, 10, 100]), st.booleans())
def test_in_order_input_is_passed_on_without_copies(n, batch_size, latency, strings):
    """Input already in order: every output batch's columns are slices of the input batches' buffers."""
    times = np.arange(n, dtype=np.int64) // 2
    op, sinks = _op(DisorderPolicy((latency,), "drop"), 65_536)
    inputs = []
    for start in range(0, n, batch_size):
        b = _batch(times[start : start + batch_size], start, True, strings)
        inputs.append(b)
        op.on_batch(b)
    op.on_completed()
    assert [r[2] for r in sinks[0].rows] == list(range(n))
    buffers = {b.columns["s"].buffers()[-1].address for b in inputs}
    for out in sinks[0].batches:
        assert out.points
        assert out.columns["s"].buffers()[-1].address in buffers  # a view of an input, not a copy


def test_pinned_batches_stay_bounded_by_the_live_events():
    """Some events are delayed a long way: their batches would stay pinned; compaction copies them out."""
    rng = np.random.default_rng(5)
    n = 20_000
    times = np.arange(n, dtype=np.int64) * 10
    delayed = rng.random(n) < 0.02
    times[delayed] -= rng.integers(0, 50_000, int(delayed.sum()))
    policy = DisorderPolicy((30_000,), "drop")
    op, sinks = _op(policy, 0)
    for start in range(0, n, 500):
        op.on_batch(_batch(times[start : start + 500], start, False, True))
        store = op.stores[0]
        assert store.pinned <= 2 * store.held + 500
    op.on_completed()
    want, late = _expected(times.tolist(), policy, False, True)
    assert sinks[0].rows == want[0] and late


def test_batches_larger_than_the_slack_are_not_compacted_after_each_release():
    """Batches of 3,000 events, 5% of them a little late, a latency of 200 events: each punctuation releases the batch
    before and most of the newest; compacting the newest's rest after every batch (it pinned more than twice the live
    rows plus the slack) made every release read the compact piece by binary search. The bound still holds with the
    newest batch left out, and the output is the reference's."""
    rng = np.random.default_rng(7)
    n, size = 30_000, 3_000
    times = np.arange(n, dtype=np.int64) * 10
    late = rng.random(n) < 0.05
    times[late] -= rng.integers(0, 3_000, int(late.sum()))  # some later than the latency: dropped
    policy = DisorderPolicy((2_000,), "drop")
    op, sinks = _op(policy, 0)
    for start in range(0, n, size):
        op.on_batch(_batch(times[start : start + size], start, True, False))
        store = op.stores[0]
        assert all(p.rows is None for p in store.pieces)  # no compact piece
        assert store.pinned <= 2 * store.held + size
    op.on_completed()
    want, dropped = _expected(times.tolist(), policy, True, False)
    assert sinks[0].rows == want[0] and dropped
