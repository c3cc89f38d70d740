"""Checkpoint mid-stream, restore into a new query object, continue: the output is the uninterrupted run's."""

from __future__ import annotations

import pickle

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st
from streams import stream_cases

import tidal
from tidal import agg
from tidal.core.feed import Feed
from tidal.plan.nodes.source import Source
from tidal.plan.properties import Properties

STATEFUL = {
    "aggregate_general": lambda s: s.aggregate(agg.count(), agg.sum("v"), hi=agg.max("v")),
    "aggregate_python_engine": lambda s: s.group_aggregate("k", agg.count(), agg.top_k("v", 2)),
    "aggregate_fifo": lambda s: s.alter_duration(6).group_aggregate("k", agg.average("v"), agg.min("v")),
    "aggregate_window": lambda s: s.tumbling_window(10).group_aggregate(
        "k", agg.count(), p=agg.percentile_cont("v", 0.5)
    ),
    "aggregate_fused_window": lambda s: s.tumbling_window(10).group_aggregate(
        "k", agg.count(), agg.average("v"), variant="fused"
    ),
    "aggregate_fused_hopping": lambda s: s.hopping_window(9, 3).group_aggregate(
        "k", agg.sum("v"), sd=agg.stddev("v"), variant="fused"
    ),
    "aggregate_fused_gap_window": lambda s: s.hopping_window(3, 8, 1).aggregate(sd=agg.stddev("v"), variant="fused"),
    "aggregate_udf": lambda s: s.aggregate(initial_state=lambda: 0, accumulate=lambda c, e: c + e.v),
    "group_apply_nested": lambda s: s.group_apply(
        "k", lambda g: g.group_apply("v", lambda h: h.hopping_window(8, 4).aggregate(agg.count()))
    ),
    "union_and_lifetimes": lambda s: s.clip_duration(5).union(s.where(lambda e: e.k == 1).chop(4).extend_lifetime(3)),
    "quantize": lambda s: s.quantize_lifetime(8, 4).shift_lifetime(2),
    "shorten_and_align_end": lambda s: s.extend_lifetime(-4).hopping_window(6, 3, align="end"),
}


def _rows(table: pa.Table) -> list[tuple]:
    rows = list(zip(*(c.to_pylist() for c in table.columns), strict=True))
    return sorted(rows, key=repr)


@given(case=stream_cases(), which=st.sampled_from(sorted(STATEFUL)), cut=st.integers(0, 40))
def test_restored_query_continues_exactly(case, which, cut):
    stream, _ = case
    q = STATEFUL[which](stream)
    whole = q.to_arrow()

    first = q.query()
    first.run(max_messages=cut)
    state = pickle.loads(pickle.dumps(first.checkpoint()))  # a checkpoint is plain data
    second = q.query()
    second.restore(state)
    assert second.run()
    combined = pa.concat_tables([first.sink.table(), second.sink.table()], promote_options="permissive")
    assert _rows(combined) == _rows(whole)


def test_restore_refuses_a_checkpoint_of_another_plan():
    s = tidal.from_arrow(pa.table({"t": [1, 2], "v": [1, 2]}), time="t")
    state = s.aggregate(agg.count()).query().checkpoint()
    with pytest.raises(tidal.TidalError, match="another plan"):
        s.where(lambda e: e.v > 0).aggregate(agg.count()).query().restore(state)


class ListFeed(Feed):
    """A feed over a fixed list of messages whose position is an index, recording where it was opened."""

    def __init__(self, messages):
        self.messages, self.at, self.opened_at = list(messages), 0, []

    def open(self, position=None):
        self.opened_at.append(position)
        self.at = position or 0
        return self._read()

    def _read(self):
        while self.at < len(self.messages):
            msg = self.messages[self.at]
            self.at += 1
            yield msg

    def position(self):
        return self.at


@given(cut=st.integers(0, 30), batch=st.integers(1, 7))
def test_a_feed_reopens_at_its_stored_position(cut, batch):
    table = pa.table({"t": list(range(0, 60, 2)), "k": [i % 3 for i in range(30)], "v": list(range(30))})
    messages = list(tidal.from_arrow(table, time="t", batch_size=batch).node.open_messages())

    def query(feed):
        source = tidal.Stream(
            Source(None, pa.schema([("k", pa.int64()), ("v", pa.int64())]), Properties(), "feed", feed)
        )
        return source.tumbling_window(10).group_aggregate("k", agg.count(), agg.sum("v"))

    whole = query(ListFeed(messages)).to_arrow()
    first = query(ListFeed(messages)).query()
    first.run(max_messages=cut)
    state = pickle.loads(pickle.dumps(first.checkpoint()))
    feed = ListFeed(messages)
    second = query(feed).query()
    second.restore(state)
    assert second.run()
    assert feed.opened_at == [min(cut, len(messages)) or None]  # reopened where the first run stopped, not replayed
    combined = pa.concat_tables([first.sink.table(), second.sink.table()], promote_options="permissive")
    assert _rows(combined) == _rows(whole)
