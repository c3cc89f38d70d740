"""The reorder operator's payload store against a dictionary of rows: every row comes back once, with its
values, in the order asked, through packing, the switch to Arrow segments, and snapshot/restore."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from tidal.ops.reorder_store import DenseStore, PayloadStore, SegmentStore

KINDS = ("numbers", "strings", "nulls later")


def _columns(kind: str, start: int, k: int, step: int) -> dict[str, pa.Array]:
    ids = np.arange(start, start + k)
    cols = {
        "i": pa.array(ids.astype(np.int32)),
        "f": pa.array(ids * 0.5),
        "ts": pa.array(ids, pa.timestamp("ms")),
    }
    if kind == "strings":
        cols["s"] = pa.array([f"v{x}" for x in ids])
    if kind == "nulls later" and step >= 3:
        cols["f"] = pa.array([None if x % 2 else x * 0.5 for x in ids], pa.float64())
    return cols


@st.composite
def programs(draw):
    steps = []
    for _ in range(draw(st.integers(1, 25))):
        op = draw(st.sampled_from(["add", "add", "gather", "snapshot"]))
        if op == "add":
            k = draw(st.integers(0, 40))
            keep = draw(st.lists(st.booleans(), min_size=k, max_size=k)) if draw(st.booleans()) else None
            steps.append(("add", k, keep))
        elif op == "gather":
            steps.append(("gather", draw(st.floats(0, 1)), draw(st.randoms(use_true_random=False))))
        else:
            steps.append(("snapshot",))
    return steps


@settings(max_examples=150, deadline=None)
@given(programs(), st.sampled_from(KINDS), st.sampled_from([0, 1, 8, 65_536]))
def test_store_gives_back_each_row_once_with_its_values(program, kind, slack):
    store = PayloadStore(slack=slack)
    model: dict[int, tuple] = {}  # row id -> (other, payload dict)
    made = 0  # source rows generated (values are a function of this index)
    next_row = 0
    for i, step in enumerate(program):
        if step[0] == "add":
            _, k, keep = step
            cols = _columns(kind, made, k, i)
            other = np.arange(made, made + k, dtype=np.int64) * 10
            present = None if keep is None else np.flatnonzero(np.array(keep, dtype=bool))
            store.add(other, cols, present)
            for r in range(k) if present is None else present.tolist():
                model[next_row] = (int(other[r]), {n: c[r].as_py() for n, c in cols.items()})
                next_row += 1
            made += k
        elif step[0] == "gather":
            _, frac, rnd = step
            alive = sorted(model)
            rows = rnd.sample(alive, int(len(alive) * frac))
            if not rows:
                continue
            other, cols = store.gather(np.array(rows, dtype=np.int64))
            assert other.tolist() == [model[r][0] for r in rows]
            for name, col in cols.items():
                assert col.to_pylist() == [model[r][1][name] for r in rows], name
            for r in rows:
                del model[r]
        else:
            state = store.snapshot()
            store = PayloadStore(slack=slack)
            store.restore(state)
        assert store.held == len(model)
    if model:
        rows = sorted(model)
        other, cols = store.gather(np.array(rows, dtype=np.int64))
        assert other.tolist() == [model[r][0] for r in rows]
        assert set(cols) == set(model[rows[0]][1])
        for name, col in cols.items():
            assert col.to_pylist() == [model[r][1][name] for r in rows]
    assert store.held == 0


def test_numbers_stay_dense_and_packing_bounds_the_buffers():
    store = PayloadStore(slack=0)
    rng = np.random.default_rng(1)
    pinned = []
    for b in range(200):
        cols = _columns("numbers", b * 100, 100, 0)
        store.add(np.arange(100, dtype=np.int64), cols)
        first = store.next_row - 100
        pinned.append(first)  # one row of every batch stays: holes pile up unless packed
        rest = np.arange(first + 1, first + 100)
        store.gather(rng.permutation(rest))
    assert isinstance(store.impl, DenseStore)
    assert store.held == 200
    assert store.impl.size <= 2 * store.held + 100  # packed: the buffers do not keep the released rows
    other, cols = store.gather(np.array(pinned[::-1]))
    assert cols["i"].to_pylist() == [p // 100 * 100 for p in pinned[::-1]]


def test_strings_use_segments():
    store = PayloadStore()
    store.add(np.zeros(3, np.int64), _columns("strings", 0, 3, 0))
    assert isinstance(store.impl, SegmentStore)
