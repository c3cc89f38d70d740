"""The plan layer: immutable typed nodes, and rewrite rules that never change a result."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st
from streams import stream_cases

import tidal
from tidal import agg
from tidal.io.egress import CollectSink
from tidal.plan import RULES, nodes, optimize, walk
from tidal.stream.query import Query
from tidal.testing import assert_same_snapshots


def _run(stream, rules) -> object:
    sink = CollectSink(stream.schema)
    Query([stream.node], [sink], rules=rules).run()
    return sink.table()


def test_plan_nodes_are_immutable():
    stream = tidal.from_arrow(pa.table({"t": [1, 2], "v": [3, 4]}), time="t").where(lambda e: e.v > 3)
    with pytest.raises(AttributeError, match="immutable"):
        stream.node.predicate = None
    changed = stream.node.but(props=stream.node.props.but(constant_duration=5))
    assert changed.props.constant_duration == 5 and stream.node.props.constant_duration == 1


QUERIES = {
    "where after a window": lambda s: s.tumbling_window(10).where(lambda e: e.v > 0),
    "where after a window, then an aggregate": lambda s: (
        s.hopping_window(10, 5).where(lambda e: e.k != 1).group_aggregate("k", n=agg.count(), total=agg.sum("v"))
    ),
    "window then aggregate": lambda s: s.tumbling_window(7, 2).aggregate(n=agg.count()),
    "where then select": lambda s: s.where(lambda e: e.v % 2 == 0).select(lambda e: {"k": e.k, "w": e.v * 2}),
    "shared where, one consumer a select": lambda s: s.where(lambda e: e.v > -3).multicast(
        lambda m: m.select(lambda e: {"k": e.k, "v": e.v + 1}).union(m)
    ),
}


@given(case=stream_cases(), name=st.sampled_from(sorted(QUERIES)))
def test_rules_never_change_a_result(case, name):
    stream, _ = case
    query = QUERIES[name](stream)
    assert_same_snapshots(_run(query, rules=RULES), _run(query, rules=()))


def test_rules_rewrite_the_plan_shape():
    s = tidal.from_arrow(pa.table({"t": [1, 2], "k": [1, 2], "v": [3, 4]}), time="t")
    fused = s.tumbling_window(10).where(lambda e: e.v > 3).group_aggregate("k", n=agg.count()).plan()
    assert isinstance(fused, nodes.FusedWindowAggregate)
    assert isinstance(fused.inputs[0], nodes.Where)  # the filter moved below the window, into the fused input
    pair = s.where(lambda e: e.v > 3).select(lambda e: {"w": e.v}).plan()
    assert isinstance(pair, nodes.WhereSelect)
    shared = s.where(lambda e: e.v > 3).multicast()
    both = shared.select(lambda e: {"w": e.v}).union(shared.select(lambda e: {"w": e.k}))
    plan = optimize([both.node])[0]
    assert not any(isinstance(n, nodes.WhereSelect) for n in walk([plan]))  # the where has two consumers
    assert "Where+Select" not in both.explain()
    assert "#1 Where+Select [where: " in s.where(lambda e: e.v > 3).select(lambda e: {"w": e.v}).explain()
