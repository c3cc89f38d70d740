"""The join family against the reference evaluator: every operator, every variant, random streams."""

from __future__ import annotations

import heapq

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st
from streams import physical_table

import tidal
from tidal import INFINITY
from tidal.core.batch import EventBatch
from tidal.core.messages import Completed, Punctuation
from tidal.io.egress import CollectSink
from tidal.ops import join as join_ops
from tidal.ops.base import Operator
from tidal.ops.keys import stable_hash
from tidal.plan.node import PlanNode
from tidal.plan.nodes import Multicast
from tidal.stream.query import Query, deliver
from tidal.testing import Reference, assert_same_snapshots
from tidal.testing.reference import check_physical

# -- random inputs -------------------------------------------------------------------------
SHAPES = ("general", "start_edge_only", "constant_duration", "intervals")


@st.composite
def events(draw, shape="general", max_events=14, nulls=True, duration=6):
    """Logical events (start, end, (k, v), as_edges) of one of the shapes a variant needs."""
    n = draw(st.integers(0, max_events))
    out = []
    for _ in range(n):
        s = draw(st.integers(-3, 40))  # -1 included: a tick value kernels must not take for a marker
        if shape == "start_edge_only":
            e, edges = INFINITY, True
        elif shape == "constant_duration":
            e, edges = s + duration, False
        elif shape == "points":
            e, edges = s + 1, False
        elif shape == "intervals":
            e, edges = s + draw(st.integers(1, 15)), False
        else:
            open_ended = draw(st.integers(0, 7)) == 0
            e = INFINITY if open_ended else s + draw(st.integers(1, 15))
            edges = open_ended or draw(st.booleans())
        k = draw(st.integers(0, 3))
        if nulls and k == 3 and draw(st.booleans()):
            k = None
        out.append((s, e, (k, draw(st.integers(-3, 3))), edges))
    return out


def physical(evs, names=("k", "v"), key_sorted=False) -> pa.Table:
    return physical_table(evs, names, key_sorted)


def make_stream(evs, shape, batch_size, punct, names=("k", "v"), sorted_by=None):
    s = tidal.from_arrow(
        physical(evs, names, key_sorted=sorted_by is not None),
        time="sync_time",
        other="other_time",
        batch_size=batch_size,
        punctuate_every=punct,
        sorted_by=sorted_by,
    )
    # declare what the generator guarantees, so the join picks that variant
    if shape == "start_edge_only":
        s = tidal.Stream(s.node.but(props=s.node.props.but(start_edge_only=True)))
    elif shape == "constant_duration":
        s = tidal.Stream(s.node.but(props=s.node.props.but(constant_duration=6)))
    elif shape == "points":
        s = tidal.Stream(s.node.but(props=s.node.props.but(constant_duration=1)))
    return s


def reference(evs, names=("k", "v")) -> Reference:
    return Reference(tuple(names), [(s, e, p) for s, e, p, _ in evs])


@st.composite
def pairs(draw, shapes=SHAPES, nulls=True, sorted_by=None, right_shapes=None):
    """Two random inputs (engine streams and references), each of a random variant shape
    (the right's from ``right_shapes`` when given).

    With ``sorted_by``, each input's rows are in that field's order within each sync time and
    declare it (so a join on it merges)."""
    lshape, rshape = draw(st.sampled_from(shapes)), draw(st.sampled_from(right_shapes or shapes))
    le, re_ = draw(events(lshape, nulls=nulls)), draw(events(rshape, nulls=nulls))
    bs = (draw(st.sampled_from([1, 2, 3, 7, 1000])), draw(st.sampled_from([1, 2, 5, 1000])))
    pu = (draw(st.sampled_from([None, 1, 4, 13])), draw(st.sampled_from([None, 2, 9])))
    left = make_stream(le, lshape, bs[0], pu[0], sorted_by=sorted_by)
    right = make_stream(re_, rshape, bs[1], pu[1], sorted_by=sorted_by)
    return left, right, reference(le), reference(re_)


def _opaque_sub(a, b):
    return a - b


def _rows_sub(left, right):  # takes the rows themselves: the whole lambda runs row at a time
    return left.v - right.v


def _opaque_key(k):
    return None if k is None else k % 2


# each entry runs the same way on engine streams and on reference streams
OPS = {
    "join": lambda a, b: a.join(b, "k", "k"),
    "join_lambda_key": lambda a, b: a.join(b, lambda e: e.v % 3, lambda e: e.v + 1),
    "join_row_mode_key": lambda a, b: a.join(b, lambda e: _opaque_key(e.k), lambda e: _opaque_key(e.k)),
    "join_two_fields": lambda a, b: a.join(b, ["k", "v"], ["k", "v"]),
    "join_result": lambda a, b: a.join(b, "k", "k", lambda x, y: {"k": x.k, "s": x.v - y.v}),
    "join_result_row_mode": lambda a, b: a.join(b, "k", "k", lambda x, y: {"k": x.k, "s": _rows_sub(x, y)}),
    "join_result_python_call": lambda a, b: a.join(b, "k", "k", lambda x, y: {"k": x.k, "s": _opaque_sub(x.v, y.v)}),
    "join_build_once": lambda a, b: a.join(b, "k", "k", left_is_small=True),
    "join_build_once_result": lambda a, b: a.join(b, "v", "v", lambda x, y: {"k": x.k, "w": y.k}, left_is_small=True),
    "cross_join": lambda a, b: a.cross_join(b),
    "left_outer_join": lambda a, b: a.left_outer_join(b, "k", "k"),
    "full_outer_join": lambda a, b: a.full_outer_join(b, "k", "k"),
    "outer_result": lambda a, b: a.full_outer_join(b, "k", "k", lambda x, y: {"a": x.v, "b": y.v}),
    "where_exists": lambda a, b: a.where_exists(b, "k", "k"),
    "where_not_exists": lambda a, b: a.where_not_exists(b, "k", "k"),
    "clip": lambda a, b: a.clip(b, "k", "k"),
}


@pytest.mark.parametrize("op", sorted(OPS))
@given(case=pairs())
def test_join_family_matches_reference(op, case):
    left, right, lref, rref = case
    result = OPS[op](left, right).to_arrow()
    check_physical(result)
    assert_same_snapshots(result, OPS[op](lref, rref))
    assert OPS[op](left, right).count() == result.num_rows  # a count gets the pairs without their payload


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("op", ["join", "join_build_once", "where_not_exists", "clip", "full_outer_join"])
@given(data=st.data())
def test_each_variant_on_both_sides(shape, op, data):
    """Both inputs of one shape, so each variant (no queue, FIFO queue, heap) runs on both sides."""
    left, right, lref, rref = data.draw(pairs(shapes=(shape,)))
    result = OPS[op](left, right).to_arrow()
    check_physical(result)
    assert_same_snapshots(result, OPS[op](lref, rref))
    assert OPS[op](left, right).count() == result.num_rows


@pytest.mark.parametrize("op", ["join", "join_build_once", "cross_join", "full_outer_join", "where_exists", "clip"])
@given(case=pairs())
def test_tiny_output_buffer_resumes_kernels(op, case):
    """With room for one output at a time, kernels pause and resume mid-chunk: same answer."""
    left, right, lref, rref = case
    saved = join_ops._Core.out_capacity
    join_ops._Core.out_capacity = 1
    try:
        result = OPS[op](left, right).to_arrow()
    finally:
        join_ops._Core.out_capacity = saved
    check_physical(result)
    assert_same_snapshots(result, OPS[op](lref, rref))


def test_variant_names_follow_properties():
    a = make_stream([(0, INFINITY, (1, 1), True)], "start_edge_only", 10, None)
    b = make_stream([(0, 6, (1, 1), False)], "constant_duration", 10, None)
    c = make_stream([(0, 3, (1, 1), False)], "general", 10, None)
    text = a.join(b, "k", "k").explain()
    assert "left: start edges only (no endpoint queue)" in text
    assert "right: constant duration 6 (FIFO endpoint queue)" in text
    assert "general (priority endpoint queue)" in c.join(c, "k", "k").explain()
    assert "cross join" in a.cross_join(c).explain()
    assert "anti-join" in a.where_not_exists(c, "k", "k").explain()
    assert "clip" in a.clip(c, "k", "k").explain()
    assert "built once" in a.join(c, "k", "k", left_is_small=True).explain()
    assert a.join(b, "k", "k").node.partitioning == (("k",), ("k",))
    assert a.join(b, ["k", "v"], ["k", "v"]).node.partitioning == (("k", "v"), ("k", "v"))
    assert a.join(b, lambda e: e.k, lambda e: e.k).node.partitioning == ((), ())
    assert a.cross_join(b).node.partitioning == ((), ())
    assert a.join(a, "k", "k").properties.start_edge_only
    compiled = a.join(b, "k", "k", lambda x, y: {"k": x.k, "s": x.v - y["v"]}).explain()
    assert "result: columnar: {k: left.k, s: (left.v - right.v)}" in compiled
    assert "result: row mode (" in a.join(b, "k", "k", lambda x, y: {"s": _rows_sub(x, y)}).explain()
    calls = a.join(b, "k", "k", lambda x, y: {"s": _opaque_sub(x.v, y.v)}).explain()
    assert "result: row mode for _opaque_sub (called once per row" in calls
    with pytest.raises(tidal.PlanError, match="zzz"):
        a.join(b, "k", "k", lambda x, y: {"s": x.zzz})


@pytest.mark.parametrize("op", ["where_exists", "where_not_exists", "left_outer_join", "full_outer_join"])
@pytest.mark.parametrize("start", [-2, -1, 0])
def test_a_piece_starting_at_time_minus_one_is_closed(op, start):
    """The semi/anti-join kernel once took an output piece's start of -1 for "nothing to emit": a left event
    whose piece began at tick -1 never got its end edge when the right side's key appeared or vanished."""
    inf = INFINITY
    left = [(-1, inf, (0, 1), True), (start, 9, (1, 2), True)]
    right = [(-1, 3, (0, 5), True), (2, 6, (1, 7), False)]
    for bs in (1, 1000):
        result = OPS[op](make_stream(left, "general", bs, None), make_stream(right, "general", bs, None)).to_arrow()
        check_physical(result)
        assert_same_snapshots(result, OPS[op](reference(left), reference(right)))


def _pairs(g):
    """An A-then-B self-join: a positive ``v``, then a non-positive one within 3 ticks."""
    a, b = g.where(lambda e: e.v > 0), g.where(lambda e: e.v <= 0).alter_duration(3)
    return a.join(b, None, None, lambda x, y: {"a": x.v, "b": y.v})


def _pairs_within(g):  # an engine stream is read twice through one multicast
    return g.multicast(_pairs) if isinstance(g, tidal.Stream) else _pairs(g)


@pytest.mark.parametrize("bs", [1, 1000])
def test_nested_group_apply_of_a_self_join_matches_reference(bs):
    """Groups whose join gives no pair (so its result lambda never runs) once made the reference drop the
    result's fields from every group (the names came from the last group)."""
    inf = INFINITY
    evs = [(0, inf, (0, v), True) for v in (0, 1, 2, 0, 0, 0)] + [(4, 9, (1, 5), False)]
    query = lambda s: s.group_apply("k", lambda g: g.group_apply(lambda e: e.v % 2, _pairs_within))  # noqa: E731
    result = query(make_stream(evs, "general", bs, None)).to_arrow()
    check_physical(result)
    assert result.num_rows == 8
    assert_same_snapshots(result, query(reference(evs)))


def test_bad_keys_are_plan_errors():
    a = make_stream([(0, 3, (1, 1), False)], "general", 10, None)
    with pytest.raises(tidal.PlanError, match="nope"):
        a.join(a, "nope", "k")
    with pytest.raises(tidal.PlanError, match="different numbers"):
        a.join(a, ["k", "v"], "k")
    with pytest.raises(tidal.PlanError, match="field"):
        a.join(a, lambda e: e.zzz, "k")


# -- grouped inputs -------------------------------------------------------------------------
class _GroupByField(Operator):
    """Sets batch.key/hash from one field, as group_apply will (a stand-in for the tests)."""

    name = "Group"

    def __init__(self, field):
        super().__init__()
        self.field = field

    def on_batch(self, batch):
        col = batch.columns[self.field]
        key = pa.StructArray.from_arrays([col], names=[self.field])
        self.emit(batch.replace(key=key, hash=stable_hash([col])))


class _GroupByFieldNode(PlanNode):
    label = "Group"

    def __init__(self, input, field):
        super().__init__((input,), input.schema, input.props.but(grouping=(field,)), field=field)

    def make(self):
        return _GroupByField(self.field)


def grouped(stream, field):
    return tidal.Stream(_GroupByFieldNode(stream.node, field))


class _KeySink(CollectSink):
    def __init__(self):
        super().__init__()
        self.keys = []

    def on_batch(self, batch):
        super().on_batch(batch)
        b = batch.compact()
        self.keys.append((b.columns["k"], b.key.field(0), b.hash))


GROUPED_OPS = ["join", "join_build_once", "where_exists", "where_not_exists", "clip", "left_outer_join"]


@given(case=pairs(), op=st.sampled_from(GROUPED_OPS))
def test_grouped_inputs_join_within_groups(case, op):
    left, right, lref, rref = case
    gl, gr = grouped(left, "k"), grouped(right, "k")
    key = lambda e: e.v % 2  # noqa: E731
    ref_key = lambda e: (e.k, e.v % 2)  # noqa: E731  the group key joins the join key
    method, options = (op, {}) if op != "join_build_once" else ("join", {"left_is_small": True})
    engine = getattr(gl, method)(gr, key, key, **options)
    expected = getattr(lref, method)(rref, ref_key, ref_key)
    # the group key (null is an ordinary group value) is not a null join key
    if any(p[0] is None for _, _, p in lref.events + rref.events):
        expected = _grouped_null_reference(op, lref, rref)
    sink = _KeySink()
    tidal.stream.query.execute(engine.node, sink)
    table = sink.table()
    check_physical(table)
    assert_same_snapshots(table, expected)
    for k, key_col, hsh in sink.keys:  # outputs carry the left's group key and hash
        assert k.equals(key_col)
        assert len(hsh) == len(k)


def _grouped_null_reference(op, lref, rref):
    # replace the null group value by a sentinel so the reference treats it as a value
    sub = lambda ref: Reference(ref.names, [(s, e, (-99 if p[0] is None else p[0], p[1])) for s, e, p in ref.events])  # noqa: E731
    key = lambda e: (e.k, e.v % 2)  # noqa: E731
    out = getattr(sub(lref), "join" if op == "join_build_once" else op)(sub(rref), key, key)
    back = lambda p: tuple(None if x == -99 else x for x in p)  # noqa: E731  (v never reaches -99)
    return Reference(out.names, [(s, e, back(p)) for s, e, p in out.events])


# -- checkpoints ----------------------------------------------------------------------------
def _messages(stream):
    """The messages of a source stream, tagged with their time, as run_sources would order them."""
    out = []
    for msg in stream.node.open_messages():
        if isinstance(msg, EventBatch):
            t = int(msg.sync[0]) if len(msg) else -(2**63)
        elif isinstance(msg, Punctuation):
            t = msg.time
        else:
            t = INFINITY
        out.append((t, msg))
    return out


def _schedule(left, right):
    heap, order = [], []
    streams = [_messages(left), _messages(right)]
    pos = [0, 0]
    for side in (0, 1):
        if streams[side]:
            heapq.heappush(heap, (streams[side][0][0], side))
    while heap:
        _, side = heapq.heappop(heap)
        order.append((side, streams[side][pos[side]][1]))
        pos[side] += 1
        if pos[side] < len(streams[side]):
            heapq.heappush(heap, (streams[side][pos[side]][0], side))
        else:
            order.append((side, Completed()))
    return order


def _run(op, order, sink):
    op.downstream.append(sink)
    for side, msg in order:
        deliver(op.ports[side], msg)


@pytest.mark.parametrize("op", sorted(OPS))
@given(case=pairs(), cut=st.floats(0, 1))
def test_checkpoint_restore_continues_exactly(op, case, cut):
    left, right, _, _ = case
    _assert_restore_continues(OPS[op](left, right).node, _schedule(left, right), cut)


def _assert_restore_continues(node, order, cut: float) -> None:
    """Cut the schedule at ``cut``, snapshot, restore into a fresh operator from the plan: same output."""
    whole = CollectSink()
    _run(node.make(), order, whole)
    half = int(len(order) * cut)
    first = node.make()
    sink = CollectSink()
    _run(first, order[:half], sink)
    second = node.make()
    second.restore(first.snapshot())
    second.downstream.append(sink)
    for side, msg in order[half:]:
        deliver(second.ports[side], msg)
    assert sink.table().equals(whole.table())


@pytest.mark.parametrize("op", ["join", "join_build_once", "full_outer_join", "where_not_exists", "clip"])
@given(case=pairs(), cut=st.integers(0, 40))
def test_query_checkpoint_restores_joins_in_a_plan(op, case, cut):
    """The Query runtime checkpoints a plan with a join mid-stream; a new query continues exactly."""
    left, right, _, _ = case
    node = OPS[op](left.where(lambda e: e.v != 2), right.shift_lifetime(1)).node
    whole = CollectSink()
    Query([node], [whole]).run()
    sink = CollectSink()
    first = Query([node], [sink])
    first.run(max_messages=cut)
    state = first.checkpoint()
    second = Query([node], [sink])
    second.restore(state)
    second.run()
    assert sink.table().equals(whole.table())


# -- seed example: A followed by B within one hour, per user (Trill paper, query 7) ---------
def test_a_followed_by_b_within_one_hour_per_user():
    hour = 3600
    rng = np.random.default_rng(7)
    n = 400
    ts = np.sort(rng.integers(0, 6 * hour, n))
    user = rng.integers(0, 5, n)
    term = rng.integers(0, 4, n)  # 0: a term of set A, 1: of set B, else other terms
    searches = tidal.from_numpy({"ts": ts, "user": user, "term": term}, time="ts", batch_size=37)
    shared = searches.multicast()
    a = shared.where(lambda e: e.term == 0).alter_duration(hour)
    b = shared.where(lambda e: e.term == 1)
    q = a.join(b, "user", "user", lambda x, y: {"user": x.user}).to_arrow()
    got = sorted(zip(q.column("sync_time").to_pylist(), q.column("user").to_pylist(), strict=True))
    expected = sorted(
        (int(ts[j]), int(user[j]))
        for i in range(n)
        for j in range(n)
        if term[i] == 0 and term[j] == 1 and user[i] == user[j] and ts[i] <= ts[j] < ts[i] + hour
    )
    assert got == expected and expected
    assert set(q.column("other_time").to_pylist()) == {t + 1 for t, _ in got}


# -- window join: left intervals of one length, right points -------------------------------
WINDOW_OPS = [
    "join", "join_lambda_key", "join_row_mode_key", "join_two_fields", "join_result", "join_result_row_mode",
    "cross_join",
]  # fmt: skip


def window_pairs():
    return pairs(shapes=("constant_duration", "points"), right_shapes=("points",))


def _without_durations(stream):
    """The same stream, its durations not declared: the join falls back to the symmetric hash kernel."""
    shared = Multicast(stream.node)
    return tidal.Stream(shared.but(props=shared.props.but(constant_duration=None)))


def _run_with_output_capacity(query, core, capacity):
    """The query's physical result, its join kernel's output buffer starting at ``capacity`` rows
    (None: as it is); a buffer of one row makes every pair go through the buffer's growth."""
    saved = core.out_capacity
    core.out_capacity = saved if capacity is None else capacity
    try:
        result = query.to_arrow()
    finally:
        core.out_capacity = saved
    check_physical(result)
    return result


@pytest.mark.parametrize("op", WINDOW_OPS)
@given(case=window_pairs(), tiny=st.booleans())
def test_window_join_matches_reference_and_the_hash_kernel(op, case, tiny):
    """Right points probing a constant-duration left: the reference's answer, and the very batches
    (rows, order, columns) that the symmetric hash kernel gives, with any output buffer size."""
    left, right, lref, rref = case
    query = OPS[op](left, right)
    assert "points (each probes" in query.explain()
    result = _run_with_output_capacity(query, join_ops._WindowCore, 1 if tiny else None)
    assert_same_snapshots(result, OPS[op](lref, rref))
    general = OPS[op](left, _without_durations(right))
    assert "points (each probes" not in general.explain()
    assert result.equals(general.to_arrow())
    assert query.count() == result.num_rows


@st.composite
def tumbling_pairs(draw):
    """Two inputs in tumbling windows of one size on one grid (the window join's second case)."""
    left, right, lref, rref = draw(pairs(shapes=("points",), nulls=draw(st.booleans())))
    size, offset = draw(st.sampled_from([(1, 0), (3, 0), (7, 2), (10, 0)]))
    return (
        left.tumbling_window(size, offset),
        right.tumbling_window(size, offset),
        lref.tumbling_window(size, offset),
        rref.tumbling_window(size, offset),
    )


@pytest.mark.parametrize("op", WINDOW_OPS)
@given(case=tumbling_pairs(), tiny=st.booleans())
def test_window_join_of_tumbling_windows_matches_reference_and_the_hash_kernel(op, case, tiny):
    """Right windows probing the left's windows of the same grid: the reference's answer, and the very batches
    that the symmetric hash kernel gives."""
    left, right, lref, rref = case
    query = OPS[op](left, right)
    if op != "cross_join":
        assert "window join" in query.explain()  # (windows of 1 tick are points)
    result = _run_with_output_capacity(query, join_ops._WindowCore, 1 if tiny else None)
    assert_same_snapshots(result, OPS[op](lref, rref))
    general = OPS[op](left, _without_durations(right))
    assert "window join" not in general.explain()
    assert result.equals(general.to_arrow())
    assert query.count() == result.num_rows


def test_window_join_checks_the_grid_of_tumbling_windows():
    left = make_stream([(0, 1, (1, 1), False)], "points", 10, None).tumbling_window(6)
    right = make_stream([(2, 3, (1, 2), False)], "points", 10, None).alter_duration(6)
    right = tidal.Stream(right.node.but(props=right.node.props.but(constant_hop=(6, 0))))  # a false declaration
    with pytest.raises(tidal.PlanError, match="tumbling windows of 6 ticks"):
        left.join(right, "k", "k").to_arrow()


@pytest.mark.parametrize("op", ["join", "join_result"])
@given(case=window_pairs(), cut=st.floats(0, 1))
def test_window_join_checkpoint_restore_continues_exactly(op, case, cut):
    left, right, _, _ = case
    _assert_restore_continues(OPS[op](left, right).node, _schedule(left, right), cut)


@given(case=window_pairs())
def test_window_join_within_groups(case):
    left, right, lref, rref = case
    gl, gr = grouped(left, "k"), grouped(right, "k")
    key = lambda e: e.v % 2  # noqa: E731
    engine = gl.join(gr, key, key)
    assert "window join" in engine.explain()
    expected = _grouped_null_reference("join", lref, rref)
    sink = _KeySink()
    tidal.stream.query.execute(engine.node, sink)
    check_physical(sink.table())
    assert_same_snapshots(sink.table(), expected)


@pytest.mark.parametrize(
    "payload",
    ["wide", "narrow", "strings", "nulls"],  # 8-byte fields beyond three; an int32; a string; a null in a field
)
@pytest.mark.parametrize("result", [None, "left_only", "right_only", "both"])
def test_window_join_payload_kinds_match_the_hash_kernel(payload, result):
    rng = np.random.default_rng(3)
    n = 600
    cols = {"ts": np.sort(rng.integers(0, 400, n)), "k": rng.integers(0, 6, n), "v": rng.integers(0, 100, n)}
    table = pa.table(cols)
    if payload == "wide":
        for i in range(4):
            table = table.append_column(f"w{i}", pa.array(rng.random(n)))
        table = table.append_column("at", pa.array(cols["ts"].astype("datetime64[s]")))
    elif payload == "narrow":
        table = table.append_column("small", pa.array(cols["v"].astype(np.int32)))
    elif payload == "strings":
        table = table.append_column("name", pa.array([f"n{x % 7}" for x in cols["v"]]))
    else:
        table = table.append_column("maybe", pa.array([None if x % 5 == 0 else x for x in cols["v"]], pa.int64()))
    shared = tidal.from_arrow(table, time="ts", batch_size=37).multicast()
    left = shared.where(lambda e: e.v < 30).alter_duration(25)
    right = shared.where(lambda e: e.v >= 60)
    lam = {
        None: None,
        "left_only": lambda x, y: {"k": x.k, "v": x.v},
        "right_only": lambda x, y: {"v": y.v, "t": y.ts},
        "both": lambda x, y: {"gap": y.ts - x.ts, "v": x.v + y.v},
    }[result]
    window = left.join(right, "k", "k", lam)
    assert "points (each probes" in window.explain()
    got = window.to_arrow()
    assert got.num_rows > 0
    assert got.equals(left.join(_without_durations(right), "k", "k", lam).to_arrow())


def test_window_join_checks_the_declared_durations():
    left = make_stream([(0, 6, (1, 1), False)], "constant_duration", 10, None)
    right = make_stream([(2, 5, (1, 2), False)], "points", 10, None)  # not a point
    with pytest.raises(tidal.PlanError, match="points"):
        left.join(right, "k", "k").to_arrow()
    left = make_stream([(0, 7, (1, 1), False)], "constant_duration", 10, None)  # not 6 ticks
    with pytest.raises(tidal.PlanError, match="intervals of 6 ticks"):
        left.join(make_stream([(2, 3, (1, 2), False)], "points", 10, None), "k", "k").to_arrow()


# -- merge join: inputs sorted by the key within each sync time ------------------------------
MERGE_OPS = {
    "merge_join": lambda a, b: a.join(b, "k", "k"),
    "merge_join_result": lambda a, b: a.join(b, "k", "k", lambda x, y: {"k": x.k, "s": x.v - y.v}),
}


@pytest.mark.parametrize("op", sorted(MERGE_OPS))
@given(case=pairs(sorted_by="k"), tiny=st.booleans())
def test_merge_join_matches_reference(op, case, tiny):
    """Key-sorted inputs of every shape, random batches and punctuations: the merge join is chosen and is right."""
    left, right, lref, rref = case
    query = MERGE_OPS[op](left, right)
    assert "merge join" in query.explain()
    result = _run_with_output_capacity(query, join_ops._Core, 1 if tiny else None)
    assert_same_snapshots(result, MERGE_OPS[op](lref, rref))
    assert query.count() == result.num_rows


@pytest.mark.parametrize("shape", SHAPES)
@given(data=st.data())
def test_merge_join_each_shape_on_both_sides(shape, data):
    left, right, lref, rref = data.draw(pairs(shapes=(shape,), sorted_by="k"))
    result = left.join(right, "k", "k").to_arrow()
    check_physical(result)
    assert_same_snapshots(result, lref.join(rref, "k", "k"))


@given(case=pairs(sorted_by="k"), cut=st.floats(0, 1))
def test_merge_join_checkpoint_restore_continues_exactly(case, cut):
    left, right, _, _ = case
    node = left.join(right, "k", "k").node
    assert "merge join" in node.describe()
    _assert_restore_continues(node, _schedule(left, right), cut)


def test_merge_join_compacts_its_state():
    """Many short intervals: the stores compact, the sorted rows are renumbered, the answer holds."""
    n = 10_000  # past the 4096 rows at which a store starts compacting
    ts = np.repeat(np.arange(n // 10, dtype=np.int64), 10)
    key = np.tile(np.arange(10, dtype=np.int64), n // 10)
    data = pa.table({"ts": ts, "k": key, "v": np.arange(n)})
    a = tidal.from_arrow(data, time="ts", sorted_by="k", batch_size=777).alter_duration(3)
    b = tidal.from_arrow(data, time="ts", sorted_by="k", batch_size=1000)
    a = a.select("k", "v").where(lambda e: e.v >= 0)  # these keep the sort order (so does a new duration)
    assert a.properties.sorted_by == ("k",)
    merged = a.join(b, "k", "k").to_arrow()
    hashed = a.join(b, "k", "k", variant="hash").to_arrow()
    assert merged.num_rows == 3 * n - 3 * 10  # each B meets the A of its instant and the two before
    assert_same_snapshots(merged, hashed)


def test_sorted_by_is_checked_and_kept_only_where_it_holds():
    table = pa.table({"ts": [1, 1, 2, 2], "k": [1, 2, 5, 4], "v": [1, 2, 3, 4]})
    with pytest.raises(tidal.InputError, match=r"row 3: sorted_by=\['k'\].*sync time 2.*k=4.*k=5"):
        tidal.from_arrow(table, time="ts", sorted_by="k", batch_size=3).to_arrow()
    with pytest.raises(tidal.PlanError, match="not in the input"):
        tidal.from_arrow(table, time="ts", sorted_by="nope")
    ok = tidal.from_arrow(table.slice(0, 3), time="ts", sorted_by=["k", "v"])
    assert ok.properties.sorted_by == ("k", "v")
    assert "sorted by k, v within each sync time" in ok.explain()
    assert ok.where(lambda e: e.v > 0).shift_lifetime(3).properties.sorted_by == ("k", "v")
    assert ok.select(key="k", w="v").properties.sorted_by == ("key", "w")
    assert ok.select("v", "k").properties.sorted_by == ("k", "v")
    assert ok.select("v").properties.sorted_by == ()
    assert ok.select(lambda e: {"k": e.v}).properties.sorted_by == ()
    assert ok.alter_duration(3).properties.sorted_by == ("k", "v")
    for moved in (
        ok.alter_lifetime(start=lambda t: t // 2),
        ok.tumbling_window(5),
        ok.chop(2),
        ok.clip_duration(1),
        ok.union(ok),
    ):
        assert moved.properties.sorted_by == ()
    # the join merges when both keys are sorted, hashes otherwise, and can be forced either way
    assert "merge join" in ok.join(ok, "k", "k").explain()
    assert "merge join" not in ok.join(ok, "v", "v").explain()
    assert "merge join" not in ok.join(ok, "k", "k", variant="hash").explain()
    assert "merge join" not in ok.left_outer_join(ok, "k", "k").explain()
    with pytest.raises(tidal.PlanError, match="one key field"):
        ok.join(ok, ["k", "v"], ["k", "v"], variant="merge")


def test_forced_merge_join_on_unsorted_input_is_an_error():
    table = pa.table({"ts": [1, 1, 2], "k": [2, 1, 1], "v": [1, 2, 3]})
    a = tidal.from_arrow(table, time="ts")
    with pytest.raises(tidal.PlanError, match="not sorted by its join key"):
        a.join(a, "k", "k", variant="merge").to_arrow()
