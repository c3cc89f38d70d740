"""A sort whose consumers read no payload (a count): the released events carry their times only, and they
are the very events, in the very order, that a payload-reading consumer receives. And a sort whose
Impatience sorters make chunks of the pushed batches (radix sorted, not placed) gives the same output.

The reference: the plain event-at-a-time punctuation rule of ``test_reorder_fast_paths`` (an event is late
below ``late_bounds_model``; the others sorted by (time, arrival))."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tidal
from tidal.core.batch import EventBatch
from tidal.core.time import INFINITY
from tidal.io.disorder import DisorderPolicy
from tidal.ops.impatience import ImpatienceSorter
from tidal.ops.reorder import BandTap

from .test_reorder_fast_paths import Sink, _batch, _expected, _feed, _op, batch_sizes, punctuations, streams


class CountSink(Sink):
    """Reads the events' times only, as a count does."""

    reads_payload = False

    def on_batch(self, b: EventBatch) -> None:
        assert not b.columns, "a consumer that reads no payload was handed columns"
        assert (np.diff(b.sync) >= 0).all()
        self.batches.append(b)
        other = (b.sync + 1 if b.points else b.other).tolist()
        self.rows.extend(zip(b.sync.tolist(), other, strict=True))


def _counted_op(policy: DisorderPolicy, slack: int, counted: set[int]):
    op, sinks = _op(policy, slack)
    for j in counted:
        sinks[j] = CountSink(j)
    op.downstream[:] = sinks
    return op, sinks


@settings(max_examples=80, deadline=None)
@given(
    streams(),
    st.sampled_from([(0,), (5,), (40,), (0, 5, 30)]),
    punctuations,
    batch_sizes,
    st.booleans(),
    st.sampled_from([0, 65_536]),
    st.integers(0, 20),
    st.sampled_from([{0}, {0, 1}, {1, 2}]),
)
def test_counted_bands_get_the_reference_events_without_columns(
    times, latencies, punct, batch_size, points, slack, split, counted
):
    policy = DisorderPolicy(latencies, "drop", **punct)
    counted = {j for j in counted if j < len(latencies)}
    # checkpointed at batch ``split`` (a store that keeps no columns), then on from a fresh operator
    op, sinks = _feed(times, batch_size, split, lambda: _counted_op(policy, slack, counted), points, False)
    want, late = _expected(times.tolist(), policy, points, False)
    for j in range(len(latencies)):
        expect = [r[:2] for r in want[j]] if j in counted else want[j]
        assert sinks[j].rows == expect, j
        assert sinks[j].puncts[-1] == INFINITY
    assert sorted(sinks[-1].rows, key=lambda r: (r[0], r[2])) == late  # late events keep their columns


@settings(max_examples=30, deadline=None)
@given(streams(), st.sampled_from([0, 5, 40]), st.sampled_from(["drop", "adjust"]), st.sampled_from([1, 7, 1000]))
def test_count_of_a_sorted_stream_equals_its_collected_rows(times, latency, disorder, batch_size):
    """``count()`` (no payload read) against the rows ``to_arrow()`` collects (every column gathered)."""
    table = pa.table({"t": times, "v": np.arange(len(times)), "s": [f"r{i}" for i in range(len(times))]})

    def stream():
        return tidal.from_arrow(table, time="t", disorder=disorder, reorder_latency=latency, batch_size=batch_size)

    collected = stream().to_arrow()
    want, late = _expected(times.tolist(), DisorderPolicy((latency,), disorder), True, False)
    if disorder == "drop":
        assert collected.num_rows == len(want[0])
    assert stream().count() == collected.num_rows


@pytest.mark.parametrize("latencies", [(0,), (40,), (0, 5, 30)])
@pytest.mark.parametrize("punct", [{}, {"punctuate_every_events": 10}, {"punctuate_every": 4}])
@pytest.mark.parametrize("batch_size,split", [(7, 3), (50, 2), (1000, 5)])
@pytest.mark.parametrize("points", [True, False])
def test_sorters_making_chunks_give_the_reference_output(latencies, punct, batch_size, split, points):
    """The sort's Impatience sorters radix sort every pushed batch of 2 or more into a chunk (a batch of
    8192 out-of-order events does so by default): the output is the reference's, before and after a
    checkpoint."""
    rng = np.random.default_rng(batch_size + len(latencies))
    n = 600
    times = np.arange(n, dtype=np.int64) // 2 - (rng.random(n) < 0.3) * rng.integers(0, 60, n)
    policy = DisorderPolicy(latencies, "drop", **punct)

    def make():
        op, sinks = _op(policy, 65_536)
        op.sorters = [ImpatienceSorter(chunk_min=2) for _ in op.sorters]
        return op, sinks

    def restored(op):
        for sorter in op.sorters:  # (restored sorters take the default chunk size)
            sorter._chunk_min = 2

    op, sinks = _feed(times, batch_size, split, make, points, True, restored)
    want, late = _expected(times.tolist(), policy, points, True)
    for j in range(len(latencies)):
        assert sinks[j].rows == want[j], j
    assert sorted(sinks[-1].rows, key=lambda r: (r[0], r[2])) == late


def test_a_band_tap_reads_the_payload_as_its_consumers_do():
    """Each band of a multi-latency sort behind its tap: the counted band keeps no columns, the other
    band gets the reference's rows with their columns."""
    rng = np.random.default_rng(3)
    n = 3000
    times = np.arange(n, dtype=np.int64) - (rng.random(n) < 0.2) * rng.integers(0, 80, n)
    policy = DisorderPolicy((5, 40), "drop")
    op, sinks = _op(policy, 65_536)
    taps = [BandTap(0), BandTap(1)]
    counted = CountSink(0)
    taps[0].downstream.append(counted)
    taps[1].downstream.append(sinks[1])
    op.downstream[:] = [*taps, sinks[-1]]
    assert not taps[0].reads_payload and taps[1].reads_payload
    for start in range(0, n, 300):
        op.on_batch(_batch(times[start : start + 300], start, False, True))
    op.on_completed()
    want, _ = _expected(times.tolist(), policy, False, True)
    assert counted.rows == [r[:2] for r in want[0]] and counted.batches
    assert sinks[1].rows == want[1] and sinks[1].rows
