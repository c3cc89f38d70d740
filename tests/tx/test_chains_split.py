"""The ``chains`` scheduler by components (``tidal.tx.split``): each interval's events split into sets
that share no record, walked on threads; the serial answer whatever the threads, intervals and
windows, from the events or from compute mode's grids, with errors named as the serial run names them."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tidal
from tidal import tx
from tidal.tx import runs, split
from tx.test_chains_owner import events, post, to_table


def make_tables(size: int, keyed: bool = False):
    # keyed: explicit keys, so compute mode runs in numpy and the components come from its grids
    keys = list(range(size)) if keyed else size
    a = tx.Table("a", keys, {"n": np.full(size, 30, dtype=np.int64), "m": np.arange(size, dtype=np.int64)})
    b = tx.Table("b", [10, 11, 12, 13] if keyed else 4, {"x": np.linspace(0.5, 2.0, 4)})
    return a, b


def make_access(a, b, keyed: bool = False):
    def access(e, t):
        k3 = e.k3 + 10 if keyed else e.k3
        t.read(a, e.k1, "n", name="a1")
        # a transfer over two tables: aborts when either source is short (a multi-record abort)
        t.read_modify(a, e.k1, "n", lambda v: v - e.amt, condition=lambda v: v >= e.amt, when=e.kind == 0)
        t.read_modify(b, k3, "x", lambda v: v - 0.5, condition=lambda v: v > 0.75, when=e.kind == 0)
        t.read_modify(a, e.k2, "n", lambda v: v + e.amt, when=e.kind == 0)
        t.write(b, k3, "x", e.x, when=e.kind == 1)
        # reads of other records: another table's, and another key's in the same table
        t.read_modify(b, k3, "x", lambda v, s: v + s, source=(a, e.k2, "n"), when=e.kind == 2)
        t.read_modify(a, e.k1, "m", lambda v, s: v + s % 7, source=(a, e.k2, "n"), when=e.kind == 2)
        t.read_modify(a, e.k2, "m", lambda v: (v * 3 + e.amt) % 97, condition=lambda v: v < 60, when=e.kind == 3)
        t.write(a, e.k2, "n", 7, condition=lambda v, s: s > 1.0 and v > 20, source=(b, k3, "x"), when=e.kind == 4)
        t.read(b, k3, "x", name="bx")
        t.read(a, e.k2, "m", name="am")

    return access


@pytest.fixture(autouse=True)
def components_always(monkeypatch):
    monkeypatch.setattr(runs, "PARALLEL_FROM", 0)  # components even for the smallest runs
    monkeypatch.setattr(split, "CHAINS", "components")


def run(data: pa.Table, size: int, workers: int, interval: int, keyed: bool):
    a0, b0 = make_tables(size)
    want = tx.reference(data.rename_columns(["time", *data.column_names[1:]]), make_access(a0, b0), post)
    a, b = make_tables(size, keyed)
    s = tidal.from_arrow(data, time="t").transact(
        make_access(a, b, keyed), post, scheduler="chains", interval=interval, workers=workers
    )
    got = s.to_arrow()
    assert got.select(["ok", "a1", "bx", "am"]).to_pylist() == want
    assert a.to_dict()["n"] == a0.to_dict()["n"] and a.to_dict()["m"] == a0.to_dict()["m"]
    assert b.to_dict()["x"] == b0.to_dict()["x"]
    engine = s.node.box["last"]
    assert (engine.split_events is None) == keyed  # from the events, or over the grids
    return engine.stats


@settings(max_examples=60, deadline=None)
@given(events, st.integers(2, 4), st.integers(1, 40), st.sampled_from([3, 17, 64]), st.booleans(), st.booleans())
def test_chains_by_components_equal_the_serial_reference(rows, workers, interval, size, keyed, wide):
    saved = split.WAIT_CELLS
    split.WAIT_CELLS = 8 if wide else saved  # windows of many intervals (few waits to keep)
    try:
        stats = run(to_table(rows, size), size, workers, interval, keyed)
    finally:
        split.WAIT_CELLS = saved
    assert stats["split_walks"] >= 1 and stats["components"] >= 1


def test_a_large_run_spreads_components_over_the_threads():
    from tidal.tx.apps import sl  # transfers between random accounts: an interval falls apart

    data = sl.generate(4_000, size=2_000, skew=0.6, multi=0.25, partitions=2, seed=3)
    want_tables, got_tables = sl.tables(2_000, balance=150), sl.tables(2_000, balance=150)
    want = sl.python(data, want_tables)
    s = tidal.from_arrow(data, time="t").transact(sl.access_for(got_tables), scheduler="chains", interval=50, workers=2)
    got = s.to_arrow()
    assert got.select(["t", "committed"]).to_pylist() == want
    for name, table in want_tables.items():
        assert got_tables[name].to_dict() == table.to_dict(), name
    stats = s.node.box["last"].stats
    assert stats["aborted"] > 0
    assert stats["components"] > 4_000 // 2 and stats["unexamined_windows"] == 0  # small components
    assert stats["thread_share"] < 0.6  # each thread walked about half the events


@pytest.mark.parametrize("keyed", [False, True])
def test_intervals_of_one_component_run_on_one_thread_mostly_unexamined(keyed):
    rng = np.random.default_rng(6)
    n, size = 4_000, 3  # three records: every interval is (nearly) one component
    rows = [(1, int(rng.integers(0, 5)), int(rng.integers(0, 41)), int(rng.integers(0, 41)), int(rng.integers(0, 4)),
             int(rng.integers(0, 26)), 1.5) for _ in range(n)]  # fmt: skip
    stats = run(to_table(rows, size), size, 2, 10, keyed)
    assert stats["unexamined_windows"] >= (n // 10) * split.PROBE // (split.PROBE + 1) - 12
    assert stats["thread_share"] > 0.9


def _dividing(d):
    a = tx.Table("a", 8, {"n": np.full(8, 100, dtype=np.int64)})
    access = lambda e, t: t.read_modify(a, e.k, "n", lambda v: v // e.d + 1)  # noqa: E731
    data = pa.table({"t": np.arange(len(d)), "k": np.arange(len(d)) % 8, "d": d})
    return a, access, data


@pytest.mark.parametrize("scheduler", ["serial", "chains"])
def test_a_division_by_zero_on_either_thread_names_the_first_event(scheduler):
    d = [3] * 50 + [0] + [2] * 20 + [0] + [5] * 10
    a, access, data = _dividing(d)
    before = a.to_dict()
    with pytest.raises(tx.TransactionError, match=r"event 50 \(time 50\).*division by zero"):
        tidal.from_arrow(data, time="t").transact(access, scheduler=scheduler, interval=4, workers=2).to_arrow()
    assert a.to_dict() == before  # nothing half-applied


@pytest.mark.parametrize("lead", [20, 60])  # 60: the bad key lies in a window the plan left unexamined
def test_a_key_outside_the_table_names_the_event_and_nothing_is_applied(lead):
    a = tx.Table("a", 8, {"n": np.zeros(8, dtype=np.int64)})
    data = pa.table({"t": np.arange(lead + 10), "k": [1] * lead + [9] + [2] * 9})
    s = tidal.from_arrow(data, time="t").transact(
        lambda e, t: t.read_modify(a, e.k, "n", lambda v: v + 1), scheduler="chains", interval=3, workers=2
    )
    with pytest.raises(tx.TransactionError, match=rf"event {lead} \(time {lead}\).*outside table 'a'"):
        s.to_arrow()
    assert a.to_dict()["n"] == [0] * 8
