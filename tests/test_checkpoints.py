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
