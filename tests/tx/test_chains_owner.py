"""The ``chains`` scheduler by owner threads (no operation reads another record): the serial answer,
whatever the threads, the rounds after a wrong guess, and the serial rest after ``MAX_ROUNDS``."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tidal
from tidal import tx
from tidal.tx import runs, split


def make_tables(size: int, keyed: bool = False):
    # keyed: explicit keys, so compute mode runs in numpy and the owner lists come from its grids
    a = tx.Table(
        "a",
        list(range(size)) if keyed else size,
        {"n": np.full(size, 30, dtype=np.int64), "m": np.arange(size, dtype=np.int64)},
    )
    b = tx.Table("b", 4, {"x": np.linspace(0.5, 2.0, 4)})
    return a, b


def make_access(a, b):
    def access(e, t):
        t.read(a, e.k1, "n", name="a1")
        # a transfer over two tables: aborts when either source is short (a multi-record abort)
        t.read_modify(a, e.k1, "n", lambda v: v - e.amt, condition=lambda v: v >= e.amt, when=e.kind == 0)
        t.read_modify(b, e.k3, "x", lambda v: v - 0.5, condition=lambda v: v > 0.75, when=e.kind == 0)
        t.read_modify(a, e.k2, "n", lambda v: v + e.amt, when=e.kind == 0)
        t.write(b, e.k3, "x", e.x, when=e.kind == 1)
        # another column of the same record (a source that is not another record)
        t.read_modify(a, e.k2, "m", lambda v, s: v + s % 7, source=(a, e.k2, "n"), when=e.kind == 2)
        t.read_modify(a, e.k2, "m", lambda v: (v * 3 + e.amt) % 97, condition=lambda v: v < 60, when=e.kind == 3)
        # a condition after the transaction's own write to the same record
        t.read_modify(a, e.k1, "n", lambda v: v + 1, when=e.kind >= 3)
        t.read_modify(a, e.k1, "n", lambda v: v - 2 * e.amt, condition=lambda v: v > 25, when=e.kind == 4)
        t.read(b, e.k3, "x", name="bx")
        t.read(a, e.k2, "m", name="am")

    return access


def post(e, r):
    return {"ok": r.committed, "a1": r.a1, "bx": r.bx, "am": r.am}


events = st.lists(
    st.tuples(
        st.integers(0, 3),  # time step
        st.integers(0, 4),  # kind
        st.integers(0, 40),  # keys: drawn so that a few are hot
        st.integers(0, 40),
        st.integers(0, 3),
        st.integers(0, 25),
        st.sampled_from([0.25, 1.5, -2.0, 3.0]),
    ),
    min_size=1,
    max_size=120,
)


def to_table(rows, size: int) -> pa.Table:
    t = np.cumsum([r[0] for r in rows])
    cols = list(zip(*rows, strict=True))
    hot = lambda ks: [k % 3 if k < 20 else k % size for k in ks]  # noqa: E731
    return pa.table(
        {"t": t, "kind": cols[1], "k1": hot(cols[2]), "k2": hot(cols[3]), "k3": cols[4], "amt": cols[5], "x": cols[6]}
    )


def check(data: pa.Table, size: int, workers: int, interval: int, keyed: bool = False):
    saved, runs.PARALLEL_FROM = runs.PARALLEL_FROM, 0  # owner lists even for the smallest runs
    mode, split.CHAINS = split.CHAINS, "lists"  # owner lists, not components (tests/tx/test_chains_split.py)
    try:
        return _check(data, size, workers, interval, keyed)
    finally:
        runs.PARALLEL_FROM = saved
        split.CHAINS = mode


def _check(data: pa.Table, size: int, workers: int, interval: int, keyed: bool):
    a0, b0 = make_tables(size)
    want = tx.reference(data.rename_columns(["time", *data.column_names[1:]]), make_access(a0, b0), post)
    a, b = make_tables(size, keyed)
    s = tidal.from_arrow(data, time="t").transact(
        make_access(a, b), post, scheduler="chains", interval=interval, workers=workers
    )
    got = s.to_arrow()
    assert got.select(["ok", "a1", "bx", "am"]).to_pylist() == want
    assert a.to_dict() == a0.to_dict() and b.to_dict() == b0.to_dict()
    engine = s.node.box["last"]
    assert engine.owner_ok
    return engine.stats


@settings(max_examples=60, deadline=None)
@given(
    events,
    st.integers(1, 4),
    st.integers(1, 40),
    st.sampled_from([3, 17, 64]),
    st.sampled_from([1, 2, 4]),
    st.booleans(),
)
def test_chains_by_owner_threads_equal_the_serial_reference(rows, workers, interval, size, max_rounds, keyed):
    saved = runs.MAX_ROUNDS
    runs.MAX_ROUNDS = max_rounds
    try:
        check(to_table(rows, size), size, workers, interval, keyed)
    finally:
        runs.MAX_ROUNDS = saved


def _cascade(n: int, size: int) -> pa.Table:
    """Transfers whose aborts change later transfers' outcomes on records of other threads."""
    rng = np.random.default_rng(3)
    rows = [(1, 0, int(rng.integers(0, size)), int(rng.integers(0, size)), int(rng.integers(0, 4)),
             int(rng.integers(5, 26)), 1.5) for _ in range(n)]  # fmt: skip
    return to_table(rows, size)


@pytest.mark.parametrize("keyed", [False, True])
@pytest.mark.parametrize("max_rounds", [1, 2, 4, 1000])
def test_wrong_guesses_are_walked_again_or_finished_serially(max_rounds, keyed):
    saved = runs.MAX_ROUNDS
    runs.MAX_ROUNDS = max_rounds
    try:
        stats = check(_cascade(3_000, 64), 64, 4, 3_000, keyed)
    finally:
        runs.MAX_ROUNDS = saved
    assert stats["aborted"] > 100
    rest = stats.get("serial_rest", 0)
    assert stats["waves"] > 1 or rest > 0  # the first guess (every transaction commits) was wrong somewhere
    assert stats["waves"] <= max_rounds and (rest == 0 or stats["waves"] == max_rounds)
    if max_rounds == 1000:
        assert rest == 0


def test_one_events_grid_keeps_its_sources():
    # a grid of sources has a row per event; one event's grid was taken for the unsourced (1, k) one:
    # its operations' sources were never copied (uninitialised memory read as cells: a segfault)
    issued = np.ones((1, 3), np.bool_)
    cell2d, src2d = np.array([[3, 40, 7]], np.int64), np.array([[-1, 5, -1]], np.int64)
    lists, ptr, cells, srcs, _ = runs.fused.owner_lists(issued, cell2d, src2d, np.zeros(3, np.int64), 2, 2)
    assert srcs[np.argsort(lists)].tolist() == [-1, 5, -1]


@pytest.mark.parametrize("key", [5, 17, 33])
def test_a_one_event_batch_on_the_grid_path(monkeypatch, key):
    # the owner lists from compute mode's grids (not from the events), for a batch of one event whose
    # operation reads another column of its record (a source): the hypothesis test's segfault
    monkeypatch.setattr(runs, "owner_from_events", lambda *a: None)
    check(to_table([(1, 2, key, key + 1, 1, 3, 0.25)], 64), 64, 3, 1, keyed=True)
