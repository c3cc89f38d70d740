"""A release of the reorder store as one compiled pass that merges, maps and copies every fixed-width column
(``tidal.ops.reorder_gather``): every Arrow type the kernel copies (integers of each width, floats, times,
booleans), nulls, sliced arrays, text beside them (taken by Arrow), interval and point pieces mixed, batch
sizes from one row up. Oracle: numpy's stable argsort of the released rows' times, then one take of the
pushed table."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from hypothesis import example, given, settings
from hypothesis import strategies as st

import tidal
from tidal.ops import reorder_gather
from tidal.ops.reorder_store import PayloadStore

TYPES = {
    "i8": pa.int8(),
    "u8": pa.uint8(),
    "i16": pa.int16(),
    "u16": pa.uint16(),
    "i32": pa.int32(),
    "i64": pa.int64(),
    "u64": pa.uint64(),
    "dur": pa.duration("ns"),
    "f32": pa.float32(),
    "f64": pa.float64(),
    "b": pa.bool_(),
    "ts": pa.timestamp("us"),
    "d": pa.date32(),
    "s": pa.string(),
}


def _column(rng, t: pa.DataType, n: int, nulls: float, offset: int) -> pa.Array:
    """``n`` values of type ``t`` (a fraction ``nulls`` of them null), as a slice at ``offset`` of a longer array."""
    m = n + offset + 3
    if pa.types.is_boolean(t):
        values = rng.random(m) < 0.5
    elif pa.types.is_string(t):
        values = np.array([f"v{x}" for x in rng.integers(0, 1000, m)], dtype=object)
    elif pa.types.is_floating(t):
        values = rng.standard_normal(m).astype(t.to_pandas_dtype())
    elif pa.types.is_timestamp(t) or pa.types.is_date(t) or pa.types.is_duration(t):
        values = rng.integers(0, 20_000, m).astype(np.int32 if pa.types.is_date(t) else np.int64)
        return pa.array(values, mask=rng.random(m) < nulls if nulls else None).view(t).slice(offset, n)
    else:
        info = np.iinfo(t.to_pandas_dtype())
        values = rng.integers(info.min, info.max, m, dtype=t.to_pandas_dtype(), endpoint=True)
    mask = rng.random(m) < nulls if nulls else None
    return pa.array(values, type=t, mask=mask).slice(offset, n)


@st.composite
def programs(draw):
    names = draw(st.lists(st.sampled_from(sorted(TYPES)), min_size=1, max_size=10, unique=True))
    steps = []
    for _ in range(draw(st.integers(1, 12))):
        if draw(st.booleans()):
            k = draw(st.sampled_from([1, 2, 7, 64, 300]))
            steps.append(
                ("add", k, draw(st.sampled_from([0.0, 0.0, 0.3, 1.0])), draw(st.integers(0, 9)), draw(st.booleans()))
            )
        else:
            steps.append(("release", draw(st.floats(0, 1)), draw(st.floats(0, 1))))
    modes = (draw(st.booleans()), draw(st.booleans()))  # streaming stores; points' other times written in the pass
    return names, steps, draw(st.integers(0, 2**32 - 1)), draw(st.sampled_from([0, 8, 65_536])), modes


@settings(max_examples=120, deadline=None)
@given(programs())
@example((["s"], [("add", 1, 0.0, 0, True), ("release", 0.0, 0.0)], 0, 0, (False, False)))  # text only: nothing copied
def test_a_fused_release_matches_a_stable_argsort_and_take(program):
    names, steps, seed, slack, (streaming, write_other) = program
    saved = reorder_gather._STREAM_FROM
    reorder_gather._STREAM_FROM = 0  # every release of a streaming store by non-temporal stores
    try:
        _check_fused_releases(names, steps, seed, slack, write_other, streaming)
    finally:
        reorder_gather._STREAM_FROM = saved


def _check_fused_releases(names, steps, seed, slack, write_other, streaming):
    rng = np.random.default_rng(seed)
    store = PayloadStore(slack=slack, fuse_from=0)
    store.write_other, store.streaming = write_other, streaming
    kinds = set()  # points or not, of the rows added
    pushed: list[pa.RecordBatch] = []  # row id -> its values (ids are consecutive: one batch per add)
    times, others, alive = [], [], []
    for step in steps:
        if step[0] == "add":
            _, k, nulls, offset, points = step
            cols = {n: _column(rng, TYPES[n], k, nulls, offset) for n in names}
            sync = rng.integers(0, 50, k).astype(np.int64) + 10 * len(times)  # out of order
            other = sync + 1 if points else sync + rng.integers(1, 9, k)
            store.add(None if points else other, cols, None, sync)
            kinds.add(points)
            pushed.append(pa.RecordBatch.from_arrays(list(cols.values()), names=names))
            times += sync.tolist()
            others += other.tolist()
            alive += [True] * k
            continue
        _, prefix, frac = step
        live = np.flatnonzero(alive)
        if not len(live):
            continue
        t = np.array(times, dtype=np.int64)
        head = live[: int(len(live) * prefix)]  # the queue: rows of a prefix at or above every row before them
        queued = head[t[head] >= np.maximum.accumulate(t[head])]
        rest = np.setdiff1d(live, queued)
        picked = np.sort(rng.choice(rest, int(len(rest) * frac), replace=False)) if len(rest) else rest
        if not len(picked):
            picked = live[-1:]  # the fused pass serves releases with rows from the sorter
            queued = queued[queued != picked[0]]
        sorter = picked[np.argsort(t[picked], kind="stable")]  # sorted by (time, row id)
        parts = store.release(t[sorter], sorter.astype(np.int64), t[queued], queued.astype(np.int64))
        assert len(parts) == 1
        got_t, got_other, got = parts[0]
        released = np.sort(np.concatenate([picked, queued]))
        order = released[np.argsort(t[released], kind="stable")]  # the oracle
        np.testing.assert_array_equal(got_t, t[order])
        want_other = np.array(others, dtype=np.int64)[order]
        np.testing.assert_array_equal(got_t + 1 if got_other is None else got_other, want_other)
        copied = any(TYPES[n] != pa.string() for n in names)  # else no fused pass: nothing for it to copy
        if write_other and kinds == {True} and copied:
            assert got_other is not None  # points' other times written by the pass, not left to be made
        want = pa.Table.from_batches(pushed).take(pa.array(order, pa.int64()))
        for n in names:
            assert got[n].type == TYPES[n]
            assert got[n].to_pylist() == want.column(n).to_pylist(), n
            got[n].validate(full=True)
        for r in released:
            alive[r] = False
        assert store.held == int(np.count_nonzero(alive))


def _late_model(t: np.ndarray, lat: int) -> np.ndarray:
    """The default policy's late events: below the punctuation (high watermark - latency) before them."""
    late, high, punct = np.zeros(len(t), dtype=bool), None, None
    for i, x in enumerate(t.tolist()):
        if punct is not None and x < punct:
            late[i] = True
            continue
        high = x if high is None else max(high, x)
        punct = high - lat if punct is None else max(punct, high - lat)
    return late


@settings(max_examples=12, deadline=None)
@given(
    st.integers(0, 2**32 - 1),
    st.sampled_from([5_000, 30_000]),
    st.sampled_from([0.0, 0.2]),
    st.sampled_from([None, 4_096]),
)
def test_to_arrow_of_every_column_after_the_disorder_stage_matches_numpy(seed, n, nulls, batch_size):
    """End to end, with releases large enough for the fused pass: every type, nulls, text beside."""
    rng = np.random.default_rng(seed)
    t = np.arange(n, dtype=np.int64) * 10
    moved = rng.random(n) < 0.1
    t[moved] -= rng.exponential(3_000, int(moved.sum())).astype(np.int64)
    table = pa.table({"t": t, **{name: _column(rng, ty, n, nulls, 1) for name, ty in TYPES.items()}})
    out = tidal.from_arrow(table, time="t", disorder="drop", reorder_latency=2_000, batch_size=batch_size).to_arrow()
    keep = np.flatnonzero(~_late_model(t, 2_000))
    want = table.take(pa.array(keep[np.argsort(t[keep], kind="stable")]))
    assert out.num_rows == want.num_rows
    np.testing.assert_array_equal(out.column("sync_time").to_numpy(), want.column("t").to_numpy())
    np.testing.assert_array_equal(out.column("other_time").to_numpy(), want.column("t").to_numpy() + 1)
    for name in table.column_names:
        assert out.column(name).combine_chunks().equals(want.column(name).combine_chunks()), name


@settings(max_examples=6, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_every_consumer_of_a_large_release_gets_the_same_events(seed):
    """A large release is written past the caches only for ``to_arrow()``'s sink, and points' other times in the
    pass only for sinks that read them: ``to_arrow()``, ``subscribe`` and a select after the sort agree with numpy."""
    rng = np.random.default_rng(seed)
    n = 60_000
    t = np.arange(n, dtype=np.int64) * 10
    moved = rng.random(n) < 0.05
    t[moved] -= rng.exponential(3_000, int(moved.sum())).astype(np.int64)
    table = pa.table({"t": t, "a": _column(rng, pa.int32(), n, 0.1, 0), "b": _column(rng, pa.float64(), n, 0.0, 2)})
    keep = np.flatnonzero(~_late_model(t, 2_000))
    want = table.take(pa.array(keep[np.argsort(t[keep], kind="stable")]))

    def stream():
        return tidal.from_arrow(table, time="t", disorder="drop", reorder_latency=2_000)

    got: list[pa.RecordBatch] = []
    stream().subscribe(got.append)
    outputs = {
        "to_arrow": stream().to_arrow(),
        "subscribe": pa.Table.from_batches(got),
        "select": stream().select(lambda e: {"a": e.a, "b": e.b, "t": e.t}).to_arrow(),
    }
    for name, out in outputs.items():
        np.testing.assert_array_equal(out.column("sync_time").to_numpy(), want.column("t").to_numpy(), err_msg=name)
        np.testing.assert_array_equal(out.column("other_time").to_numpy(), want.column("t").to_numpy() + 1, name)
        for col in ("t", "a", "b"):
            assert out.column(col).combine_chunks().equals(want.column(col).combine_chunks()), (name, col)
