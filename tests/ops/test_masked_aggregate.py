"""An aggregate over a filter: the filter hands the kept rows' positions to the aggregate, which gathers only
its keys and arguments (issue 19). Results equal the reference's at every batch size, selectivity, lifetime
shape (start edges, intervals, tumbling windows) and aggregate, and equal the same query with the filter's
rows gathered first; SQL's aggregate over a WHERE equals DuckDB's."""

from __future__ import annotations

import contextlib

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.csv as pv
import pyarrow.parquet as pq
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import tidal
from tidal import agg
from tidal.io.egress import CollectSink
from tidal.ops.aggregate.operator import SnapshotAggregateOp
from tidal.plan.rules import RULES
from tidal.plan.rules.fuse_where_aggregate import fuse_where_aggregate
from tidal.sql import plan
from tidal.stream.query import Query
from tidal.testing import Reference, assert_same_snapshots


def _aggs():
    return dict(n=agg.count(), total=agg.sum("v"), lo=agg.min("v"), cd=agg.count_distinct("v"), avg=agg.average("v"))


events = st.lists(
    st.tuples(st.integers(-20, 40), st.integers(1, 15), st.integers(0, 3), st.integers(-50, 50), st.integers(0, 9)),
    max_size=120,
)


@settings(max_examples=80, deadline=None)
@given(events, st.integers(0, 10), st.sampled_from([1, 2, 7, 80_000]), st.sampled_from(["start", "interval", "window"]))
def test_grouped_aggregate_over_a_filter_matches_the_reference(rows, cut, batch, shape):
    rows = sorted(rows)
    table = pa.table(
        {
            "t": pa.array([r[0] for r in rows], pa.int64()),
            "e": pa.array([r[0] + r[1] for r in rows], pa.int64()),
            "k": pa.array([r[2] for r in rows], pa.int64()),
            "v": pa.array([r[3] for r in rows], pa.int64()),
            "w": pa.array([r[4] for r in rows], pa.int64()),
            "s": pa.array([f"x{r[4]}" for r in rows]),  # a field no aggregate reads: never gathered
        }
    )
    names = ("k", "v", "w", "s")
    if shape == "interval":
        stream = tidal.from_arrow(table, time="t", end="e", batch_size=batch)
        ref = Reference(names, [(t, t + d, (k, v, w, f"x{w}")) for t, d, k, v, w in rows])
    else:
        stream = tidal.from_arrow(table, time="t", kind="start", batch_size=batch)
        ref = Reference(names, [(t, 2**63 - 1, (k, v, w, f"x{w}")) for t, _, k, v, w in rows])
    if shape == "window":
        stream = tidal.from_arrow(table, time="t", batch_size=batch).tumbling_window(10)
        ref = Reference.points(names, [(t, (k, v, w, f"x{w}")) for t, _, k, v, w in rows]).tumbling_window(10)
    got = stream.where(lambda e: e.w < cut).group_aggregate("k", **_aggs()).to_arrow()
    assert_same_snapshots(got, ref.where(lambda r: r.w < cut).group_aggregate("k", **_aggs()), digits=9)
    whole = stream.where(lambda e: e.w < cut).aggregate(n=agg.count(), total=agg.sum("v")).to_arrow()
    assert_same_snapshots(whole, ref.where(lambda r: r.w < cut).aggregate(n=agg.count(), total=agg.sum("v")))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.integers(-9, 9)), max_size=200), st.sampled_from([1, 5, 64]))
def test_a_filter_in_row_mode_and_one_over_a_string_also_hand_on_positions(rows, batch):
    table = pa.table(
        {
            "t": pa.array(range(len(rows)), pa.int64()),
            "k": pa.array([f"g{k}" for k, _ in rows]),
            "v": pa.array([v for _, v in rows], pa.int64()),
        }
    )
    ref = Reference.points(("k", "v"), [(i, (f"g{k}", v)) for i, (k, v) in enumerate(rows)]).tumbling_window(50)
    s = tidal.from_arrow(table, time="t", batch_size=batch).tumbling_window(50)
    got = s.where(lambda e: e.k != "g3" and abs(e.v) > 2).group_aggregate("k", total=agg.sum("v")).to_arrow()
    want = ref.where(lambda r: r.k != "g3" and abs(r.v) > 2).group_aggregate("k", total=agg.sum("v"))
    assert_same_snapshots(got, want)


def test_the_filter_hands_positions_to_an_aggregate_and_gathers_for_others():
    table = pa.table({"t": np.zeros(1000, np.int64), "v": np.arange(1000), "x": np.arange(1000) * 2})
    s = tidal.from_arrow(table, time="t", kind="start")
    seen: list = []
    original = SnapshotAggregateOp.on_rows

    def spy(self, batch, kept):
        seen.append((len(batch), len(kept)))
        return original(self, batch, kept)

    SnapshotAggregateOp.on_rows = spy
    try:
        # the general path: without the rule that runs the filter and the aggregate as one loop (that loop
        # takes a batch once its kernel is compiled; tests/ops/test_filter_aggregate.py)
        summed = s.where(lambda e: e.v % 10 == 0).aggregate(total=agg.sum("v"))
        sink = CollectSink(summed.schema)
        Query([summed.node], [sink], rules=tuple(r for r in RULES if r is not fuse_where_aggregate)).run()
        total = sink.table().column("total")
        rows = s.where(lambda e: e.v % 10 == 0).to_arrow()
    finally:
        SnapshotAggregateOp.on_rows = original
    assert total.to_pylist()[-1] == sum(range(0, 1000, 10))
    assert seen and sum(k for _, k in seen) == 100 and sum(n for n, _ in seen) == 1000
    assert rows.column("x").to_pylist() == [2 * v for v in range(0, 1000, 10)]


@settings(max_examples=25, deadline=None)
@given(
    rows=st.lists(st.tuples(st.sampled_from(["a", "b", "c", None]), st.integers(-5, 5) | st.none()), max_size=150),
    cut=st.integers(-5, 5),
    fmt=st.sampled_from(["parquet", "csv"]),
)
def test_sql_aggregate_over_a_where_matches_duckdb(tmp_path_factory, rows, cut, fmt):
    table = pa.table(
        {"k": pa.array([r[0] for r in rows], pa.string()), "v": pa.array([r[1] for r in rows], pa.int64())}
    )
    assume(fmt == "parquet" or any(v is not None for _, v in rows))  # a CSV column with no value reads as text
    directory = tmp_path_factory.mktemp("masked")
    if fmt == "parquet":
        pq.write_table(table, directory / "t.parquet")
    else:
        pv.write_csv(table, directory / "t.csv")
    query = (
        "SELECT k, COUNT(*) AS n, SUM(v) AS total, MIN(v) AS lo, COUNT(DISTINCT v) AS cd FROM {t} "
        f"WHERE v > {cut} OR k = 'a' GROUP BY k"
    )
    with contextlib.chdir(directory):
        got = plan(query.format(t=f"'t.{fmt}'")).result()
        con = duckdb.connect()
        want = con.sql(query.format(t=f"'t.{fmt}'")).fetchall()
    got_rows = list(zip(*(got.column(c).to_pylist() for c in ("k", "n", "total", "lo", "cd")), strict=True))
    assert sorted(got_rows, key=repr) == sorted(want, key=repr)
