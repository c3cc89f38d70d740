"""Where + Aggregate as one loop (issue 19, ``tidal.ops.filter_aggregate``): the predicate is compiled into
the aggregate's input loop. Results equal the reference evaluator's over random streams, batch sizes,
NULL and NaN values, and equal the unfused plan's physical output event for event (same float bits,
same order); the loop really runs (batches counted) and the plan says so in explain(); SQL's
aggregate over a WHERE on the engine path equals DuckDB's."""

from __future__ import annotations

import contextlib
import math

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import tidal
from tidal import agg
from tidal.expr import compile as compile_mod
from tidal.expr.fold import FoldKernel
from tidal.io import egress
from tidal.ops.aggregate.operator import SnapshotAggregateOp
from tidal.ops.filter_aggregate import FilterAggregatePort
from tidal.plan.rules import RULES
from tidal.plan.rules.fuse_where_aggregate import fuse_where_aggregate
from tidal.sql import plan
from tidal.sql.query import final_snapshot
from tidal.stream.query import Query
from tidal.testing import Reference, assert_same_snapshots

UNFUSED = tuple(r for r in RULES if r is not fuse_where_aggregate)
NAMES = ("k", "v", "f", "w")


@contextlib.contextmanager
def compiled():
    """Loops compiled from the first batch (not after 2M events)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(compile_mod, "JIT_THRESHOLD", 1)
        yield


def run(stream, rules=RULES):
    """The physical output, and the fused input port when the plan has one."""
    sink = egress.CollectSink(stream.schema)
    q = Query([stream.node], [sink], rules=rules)
    q.run()
    q.close()
    ports = [p for op in q.operators for p in getattr(op, "ports", []) if isinstance(p, FilterAggregatePort)]
    return sink.table(), (ports[0] if ports else None)


def _aggs(kind: str):
    if kind == "ints":  # every contribution adds exactly: equal-time rows of a group merged in the loop
        return dict(n=agg.count(), total=agg.sum("v"), avg=agg.average("v"), lo=agg.min("v"), hi=agg.max("v"))
    if kind == "floats":  # float sums keep the row order: one row per kept event
        return dict(
            n=agg.count(), fs=agg.sum("f"), fa=agg.average("f"), fn=agg.count_not_null("f"), fv=agg.variance("f")
        )
    return dict(lo=agg.min("f"), hi=agg.max("f"), cd=agg.count_distinct("v"), med=agg.median("v"))


rows_strategy = st.lists(
    st.tuples(
        st.integers(0, 6),  # time step
        st.integers(-2, 3),  # key
        st.integers(-50, 50) | st.sampled_from([2**40, -(2**40) + 3]),
        st.sampled_from([-1.5, 0.0, -0.0, 2.25, 1000.5, math.nan, 7.0, 0.1]),
        st.integers(0, 9),
    ),
    max_size=150,
)


@settings(max_examples=60, deadline=None)
@given(
    rows=rows_strategy,
    cut=st.integers(0, 10),
    batch=st.sampled_from([1, 2, 7, 80_000]),
    kind=st.sampled_from(["ints", "floats", "orders"]),
    nulls=st.sampled_from(["none", "v", "f", "k"]),
    keyed=st.booleans(),
)
@example(  # a variance of 233607.699321428|48 (sums of squares) beside the reference's ...42857 (two passes)
    rows=[(0, 0, 0, x, 0) for x in [-1.5] * 4 + [0.0] * 5 + [2.25] * 2 + [1000.5] * 7 + [0.1] * 3],
    cut=1,
    batch=1,
    kind="floats",
    nulls="none",
    keyed=False,
)
def test_the_one_loop_matches_the_reference_and_the_unfused_plan(rows, cut, batch, kind, nulls, keyed):
    times = np.cumsum([r[0] // 4 for r in rows], dtype=np.int64) - 3  # many equal times, -1 and 0 among them
    null_at = [i % 5 == 2 for i in range(len(rows))]

    def maybe(values, field):
        return [None if (nulls == field and null_at[i]) else x for i, x in enumerate(values)]

    k = maybe([r[1] for r in rows], "k")
    v = maybe([r[2] for r in rows], "v")
    f = maybe([r[3] for r in rows], "f")
    w = [r[4] for r in rows]
    table = pa.table(
        {
            "t": pa.array(times, pa.int64()),
            "k": pa.array(k, pa.int32()),
            "v": pa.array(v, pa.int64()),
            "f": pa.array(f, pa.float64()),
            "w": pa.array(w, pa.int64()),
        }
    )
    stream = tidal.from_arrow(table, time="t", kind="start", batch_size=batch).where(lambda e: e.w < cut)
    stream = stream.group_aggregate("k", **_aggs(kind)) if keyed else stream.aggregate(**_aggs(kind))
    with compiled():
        got, port = run(stream)
        unfused, none = run(stream, UNFUSED)
    assert port is not None and none is None
    if (
        nulls == "none"
        or (nulls == "k" and not keyed)
        or (nulls == "f" and kind == "ints")
        or (nulls == "v" and kind == "floats")
    ):
        assert port.folded > 0 or not rows
    payloads = zip(k, v, f, w, strict=True)
    ref = Reference(NAMES, [(int(t), 2**63 - 1, p) for t, p in zip(times.tolist(), payloads, strict=True)])
    ref = ref.where(lambda r: r.w < cut)
    want = ref.group_aggregate("k", **_aggs(kind)) if keyed else ref.aggregate(**_aggs(kind))
    assert_same_snapshots(got, want, digits=9, rel_tol=1e-12)  # (a variance: sums of squares, not two passes)
    # the unfused plan's events, bit for bit (float sums in row order, -0.0, NaN, the order of rows)
    assert _bits(got) == _bits(unfused)


def _bits(table: pa.Table) -> list:
    out = []
    for col in table.columns:
        if pa.types.is_floating(col.type):
            arr = col.combine_chunks()
            vals = arr.fill_null(0).to_numpy(zero_copy_only=False).view(np.int64).tolist()
            out.append(list(zip(vals, arr.is_valid().to_pylist(), strict=True)))
        else:
            out.append(col.to_pylist())
    return out


def test_explain_names_the_loop_and_the_plans_it_does_not_take():
    table = pa.table({"t": np.arange(10), "k": np.arange(10) % 3, "v": np.arange(10), "s": [str(i) for i in range(10)]})
    starts = tidal.from_arrow(table, time="t", kind="start")
    fused = starts.where(lambda e: e.v > 2).group_aggregate("k", total=agg.sum("v"))
    assert "Where+Aggregate" in fused.explain() and "no kept positions" in fused.explain()
    not_fused = [
        tidal.from_arrow(table, time="t").where(lambda e: e.v > 2).aggregate(n=agg.count()),  # points: a FIFO queue
        starts.where(lambda e: e.v > 2).group_aggregate("s", n=agg.count()),  # a text key
        starts.where(lambda e: e.v > 2).aggregate(n=agg.sum(lambda e: e.v * 2)),  # a computed argument
        starts.where(lambda e: e.v > 2).aggregate(n=agg.sum("v"), engine="python"),
    ]
    for stream in not_fused:
        assert "Where+Aggregate" not in stream.explain()
        assert stream.to_arrow().num_rows > 0


def test_the_loop_reads_no_positions_and_gathers_no_rows():
    n = 50_000
    table = pa.table({"t": np.zeros(n, np.int64), "k": np.arange(n) % 7, "v": np.arange(n), "x": np.arange(n) * 2})
    s = tidal.from_arrow(table, time="t", kind="start", batch_size=5_000)
    calls: list = []
    original = SnapshotAggregateOp.on_rows

    def spy(self, batch, kept):
        calls.append(len(kept))
        return original(self, batch, kept)

    with compiled(), pytest.MonkeyPatch.context() as mp:
        mp.setattr(SnapshotAggregateOp, "on_rows", spy)
        mp.setattr(SnapshotAggregateOp, "on_batch", lambda self, batch: calls.append(("batch", len(batch))))
        got, port = run(s.where(lambda e: e.v % 10 == 3).group_aggregate("k", total=agg.sum("v"), n=agg.count()))
    assert calls == [] and port.folded == 10
    last = {k: (t, c) for k, t, c in zip(*(got.column(c).to_pylist() for c in ("k", "total", "n")), strict=True)}
    for key in range(7):
        kept = [v for v in range(n) if v % 10 == 3 and v % 7 == key]
        assert last[key] == (sum(kept), len(kept))


def test_more_groups_in_one_instant_than_the_table_starts_with():
    n = 30_000  # 15,000 distinct keys at one time: the key table grows (and the batch runs again)
    table = pa.table({"t": np.zeros(n, np.int64), "k": np.arange(n) // 2, "v": np.arange(n)})
    s = tidal.from_arrow(table, time="t", kind="start", batch_size=n)
    with compiled():
        got, port = run(s.where(lambda e: e.v >= 0).group_aggregate("k", total=agg.sum("v")))
    assert port.folded == 1
    assert got.column("k").to_pylist() == list(range(n // 2))
    assert got.column("total").to_pylist() == [4 * k + 1 for k in range(n // 2)]


def test_a_zero_divisor_goes_the_general_way_and_names_the_row():
    table = pa.table({"t": np.zeros(4, np.int64), "v": [4, 2, 0, 1]})
    s = tidal.from_arrow(table, time="t", kind="start").where(lambda e: 8 // e.v > 1).aggregate(n=agg.count())
    with compiled():
        with pytest.raises(Exception) as fused:
            run(s)
        with pytest.raises(Exception) as unfused:
            run(s, UNFUSED)
    assert type(fused.value) is type(unfused.value) and str(fused.value) == str(unfused.value)


def test_a_checkpoint_in_the_middle_restores_the_same_answer():
    n = 20_000
    rng = np.random.default_rng(5)
    table = pa.table({"t": np.sort(rng.integers(0, 50, n)), "k": rng.integers(0, 9, n), "v": rng.integers(-9, 9, n)})
    s = tidal.from_arrow(table, time="t", kind="start", batch_size=1000)
    s = s.where(lambda e: e.v > 0).group_aggregate("k", total=agg.sum("v"), lo=agg.min("v"))
    with compiled():
        whole = s.to_arrow()
        first = s.query()
        first.run(max_messages=7)
        state = first.checkpoint()
        second = s.query()
        second.restore(state)
        second.run()
    both = pa.concat_tables([first.sink.table(), second.sink.table()])
    assert both.equals(whole)


@settings(max_examples=25, deadline=None)
@given(
    rows=st.lists(
        st.tuples(st.integers(0, 4) | st.none(), st.integers(-5, 5), st.sampled_from([1.5, -2.0, math.nan, 0.25])),
        max_size=150,
    ),
    cut=st.integers(-5, 5),
)
def test_sql_on_the_engine_path_matches_duckdb(tmp_path_factory, rows, cut):
    table = pa.table(
        {
            "k": pa.array([r[0] for r in rows], pa.int64()),
            "v": pa.array([r[1] for r in rows], pa.int64()),
            "f": pa.array([r[2] for r in rows], pa.float64()),
        }
    )
    directory = tmp_path_factory.mktemp("fold")
    pq.write_table(table, directory / "t.parquet")
    queries = [
        "SELECT k, COUNT(*) AS n, SUM(v) AS total, MIN(v) AS lo, AVG(v) AS a "
        f"FROM 't.parquet' WHERE v * 2 > {cut} GROUP BY k",
        f"SELECT COUNT(*) AS n, SUM(v) AS total, MAX(v) AS hi FROM 't.parquet' WHERE v - k <> {cut}",
    ]
    con = duckdb.connect()
    loops: list = []
    original = FoldKernel.run

    def spy(self, *args):
        loops.append(1)
        return original(self, *args)

    with contextlib.chdir(directory), compiled(), pytest.MonkeyPatch.context() as mp:
        mp.setattr(FoldKernel, "run", spy)
        for sql in queries:
            q = plan(sql)
            assert "Where+Aggregate" in q.explain()
            got = q.finish(final_snapshot(q.events()))
            want = con.sql(sql).fetchall()
            names = got.column_names
            got_rows = list(zip(*(got.column(c).to_pylist() for c in names), strict=True))
            assert sorted(got_rows, key=repr) == sorted(want, key=repr), sql
    assert loops or not rows or any(r[0] is None for r in rows)  # nulls in k: the general path


@settings(max_examples=30, deadline=None)
@given(
    values=st.lists(st.tuples(st.integers(0, 3), st.integers(-20, 20)), max_size=200),
    batch=st.sampled_from([3, 64, 80_000]),
)
@example(values=[(0, 3)], batch=3)  # the first where drops every row: no batch reaches the loop
def test_a_filter_after_a_filter_skips_the_rows_the_first_one_dropped(values, batch):
    # the first where marks dropped rows absent (most rows stay): the loop reads the absence vector
    times = np.cumsum([t // 3 for t, _ in values], dtype=np.int64)
    table = pa.table({"t": times, "v": pa.array([v for _, v in values], pa.int64())})
    stream = tidal.from_arrow(table, time="t", kind="start", batch_size=batch)
    fused = stream.where(lambda e: e.v != 3).where(lambda e: e.v > -15).aggregate(n=agg.count(), total=agg.sum("v"))
    with compiled():
        got, port = run(fused)
    assert port is not None and (port.folded > 0) == any(v != 3 for _, v in values)
    ref = Reference(("v",), [(int(t), 2**63 - 1, (v,)) for t, (_, v) in zip(times.tolist(), values, strict=True)])
    want = ref.where(lambda r: r.v != 3).where(lambda r: r.v > -15).aggregate(n=agg.count(), total=agg.sum("v"))
    assert_same_snapshots(got, want)
