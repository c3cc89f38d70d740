"""The reorder operator's payload store against a dictionary of rows: every row comes back once, with its
values, in the order asked, through compaction, point events (no other times kept), and snapshot/restore."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from tidal.core.batch import START_EDGES
from tidal.core.time import INFINITY
from tidal.ops.reorder_store import PayloadStore

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


def _check_other(other, want: list[int]) -> None:
    """None stands for points: every released row's other time is then its sync time (10 * i) + 1;
    START_EDGES for start edges (every other time INFINITY)."""
    if other is None:
        assert all(w % 10 == 1 for w in want)
    elif other is START_EDGES:
        assert all(w == INFINITY for w in want)
    else:
        assert other.tolist() == want


@st.composite
def programs(draw):
    steps = []
    for _ in range(draw(st.integers(1, 25))):
        op = draw(st.sampled_from(["add", "add", "gather", "snapshot"]))
        if op == "add":
            k = draw(st.integers(0, 40))
            keep = draw(st.lists(st.booleans(), min_size=k, max_size=k)) if draw(st.booleans()) else None
            steps.append(
                ("add", k, keep, draw(st.sampled_from(["points", "intervals", "starts", "some starts", "lazy starts"])))
            )
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
    for i, step in enumerate(program):
        if step[0] == "add":
            _, k, keep, shape = step
            points = shape == "points"
            cols = _columns(kind, made, k, i)
            sync = np.arange(made, made + k, dtype=np.int64) * 10
            other = sync + 1 if points else sync * 3 + 7
            if shape in ("starts", "lazy starts"):  # start edges: every other time INFINITY
                other = np.full(k, INFINITY, dtype=np.int64)
            elif shape == "some starts":
                other = np.where(sync % 20 == 0, INFINITY, other)
            present = None if keep is None else np.flatnonzero(np.array(keep, dtype=bool))
            given = START_EDGES if shape == "lazy starts" else None if points else other  # START_EDGES: not made
            first = store.add(given, cols, present, sync)
            for r in range(k) if present is None else present.tolist():
                model[first + r] = (int(other[r]), {n: c[r].as_py() for n, c in cols.items()})
            made += k
        elif step[0] == "gather":
            _, frac, rnd = step
            alive = sorted(model)
            rows = rnd.sample(alive, int(len(alive) * frac))
            if not rows:
                continue
            other, cols = store.gather(np.array(rows, dtype=np.int64))
            _check_other(other, [model[r][0] for r in rows])
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
        _check_other(other, [model[r][0] for r in rows])
        assert set(cols) == set(model[rows[0]][1])
        for name, col in cols.items():
            assert col.to_pylist() == [model[r][1][name] for r in rows]
    assert store.held == 0


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(KINDS), st.integers(0, 64))
def test_compaction_bounds_the_rows_kept_alive(kind, slack):
    """One row of every batch stays: the pieces would pin every batch unless compacted."""
    store = PayloadStore(slack=slack)
    rng = np.random.default_rng(1)
    pinned = []
    for b in range(200):
        cols = _columns(kind, b * 100, 100, 0)
        store.add(np.arange(100, dtype=np.int64), cols)
        first = store.next_row - 100
        pinned.append(first)
        store.gather(rng.permutation(np.arange(first + 1, first + 100)))
        assert store.pinned <= 2 * store.held + slack + 100
    assert store.held == 200
    other, cols = store.gather(np.array(pinned[::-1]))
    assert cols["i"].to_pylist() == [p // 100 * 100 for p in pinned[::-1]]
    assert store.held == 0 and store.pinned == 0


def test_rows_released_in_arrival_order_are_not_copied():
    store = PayloadStore()
    cols = _columns("strings", 0, 1000, 0)
    sync = np.arange(1000, dtype=np.int64) * 10
    store.add(None, cols, None, sync)
    assert store.add(None, cols, np.arange(500, 1000), sync) == 1000
    other, got = store.gather(np.arange(100, 400))
    assert other is None  # points
    for name, col in got.items():  # slices of the arrays pushed: the same buffers
        assert col.buffers()[-1].address == cols[name].buffers()[-1].address, name
        assert col.to_pylist() == cols[name].to_pylist()[100:400]
    _, got = store.gather(np.arange(1500, 1600))  # rows 500.. of the second batch (ids 1000 + position)
    assert got["s"].to_pylist() == cols["s"].to_pylist()[500:600]
    assert got["s"].buffers()[-1].address == cols["s"].buffers()[-1].address
