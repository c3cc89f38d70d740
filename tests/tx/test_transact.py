"""Transactions on shared tables: every scheduler against the plain-Python serial reference."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tidal
from tidal import tx


def make_tables():
    a = tx.Table("a", 6, {"n": np.full(6, 30, dtype=np.int64), "m": "int64"})
    b = tx.Table("b", 4, {"x": np.linspace(0.5, 2.0, 4)})
    return a, b


def make_access(a, b):
    def access(e, t):
        t.read(a, e.k1, "n", name="a1")
        # a transfer: aborts when the source is short
        t.read_modify(a, e.k1, "n", lambda v: v - e.amt, condition=lambda v: v >= e.amt, when=e.kind == 0)
        t.read_modify(a, e.k2, "n", lambda v: v + e.amt, when=e.kind == 0)
        t.write(b, e.k3, "x", e.x, when=e.kind == 1)
        # depends on another record (a source in another table)
        t.read_modify(b, e.k3, "x", lambda v, s: v + s, source=(a, e.k2, "n"), when=e.kind == 2)
        t.read_modify(a, e.k2, "m", lambda v: (v * 3 + e.amt) % 97, condition=lambda v: v < 60, when=e.kind == 3)
        # several records, conditional on another table: a multi-record abort
        t.read_modify(a, e.k1, "m", lambda v: v + 1, when=e.kind >= 3)
        t.write(a, e.k2, "n", 7, condition=lambda v, s: s > 1.0 and v > 20, source=(b, e.k3, "x"), when=e.kind == 4)
        t.read(b, e.k3, "x", name="bx")

    return access


def post(e, r):
    return {"ok": r.committed, "a1": r.a1, "bx": r.bx}


def event_rows(kinds: int = 4, k1: int = 5, k2: int = 5, k3: int = 3):
    """Lists of (time step, kind, k1, k2, k3, amt, x) rows, keys drawn up to the given bounds."""
    return st.lists(
        st.tuples(
            st.integers(0, 3),  # time step
            st.integers(0, kinds),  # kind
            st.integers(0, k1),
            st.integers(0, k2),
            st.integers(0, k3),
            st.integers(0, 25),
            st.sampled_from([0.25, 1.5, -2.0, 3.0]),
        ),
        min_size=1,
        max_size=60,
    )


events = event_rows()


def to_table(rows, with_ts: bool = False) -> pa.Table:
    """The rows of :func:`event_rows` as events at their cumulative times (``ts``: the time again, as a column)."""
    t = np.cumsum([r[0] for r in rows])
    cols = list(zip(*rows, strict=True))
    ts = {"ts": t} if with_ts else {}
    return pa.table(
        {"t": t, **ts, "kind": cols[1], "k1": cols[2], "k2": cols[3], "k3": cols[4], "amt": cols[5], "x": cols[6]}
    )


def expected(data: pa.Table):
    a, b = make_tables()
    ref = tx.reference(data.rename_columns(["time", *data.column_names[1:]]), make_access(a, b), post)
    return ref, a.to_dict(), b.to_dict()


@settings(max_examples=40, deadline=None)
@given(events, st.sampled_from(tx.SCHEDULERS), st.integers(1, 40), st.integers(1, 3))
def test_every_scheduler_equals_the_serial_reference(rows, scheduler, interval, workers):
    data = to_table(rows)
    ref, ref_a, ref_b = expected(data)
    a, b = make_tables()
    s = tidal.from_arrow(data, time="t").transact(
        make_access(a, b), post, scheduler=scheduler, interval=interval, workers=workers
    )
    got = s.to_arrow()
    assert got.select(["ok", "a1", "bx"]).to_pylist() == ref
    assert a.to_dict() == ref_a and b.to_dict() == ref_b


def test_without_post_each_event_gets_committed():
    a, b = make_tables()
    data = pa.table({"t": [1, 2, 3], "kind": [0, 0, 0], "k1": [0, 0, 0], "k2": [1, 1, 1], "k3": [0, 0, 0],
                     "amt": [20, 20, 5], "x": [0.0, 0.0, 0.0]})  # fmt: skip
    out = tidal.from_arrow(data, time="t").transact(make_access(a, b)).to_arrow()
    assert out.column("committed").to_pylist() == [True, False, True]
    assert out.column("amt").to_pylist() == [20, 20, 5]
    assert a["n"][:2].tolist() == [5, 55]


def _check_error(access, data, scheduler, event: int, words: list[str]):
    """The error names the event; the tables hold the effect of a prefix of whole transactions."""
    a = tx.Table("a", 4, {"n": np.full(4, 10, dtype=np.int64)})
    with pytest.raises(tx.TransactionError) as info:
        tidal.from_arrow(data, time="t").transact(access(a), scheduler=scheduler, interval=2).to_arrow()
    msg = str(info.value)
    assert f"event {event} (time {data.column('t')[event].as_py()})" in msg and all(w in msg for w in words), msg
    prefixes = []
    for k in range(event + 1):
        ref = tx.Table("a", 4, {"n": np.full(4, 10, dtype=np.int64)})
        tx.reference(data.slice(0, k).rename_columns(["time", *data.column_names[1:]]), access(ref))
        prefixes.append(ref["n"].tolist())
    assert a["n"].tolist() in prefixes


DATA = pa.table({"t": [5, 6, 7, 8, 9], "k": [0, 1, 2, 9, 3], "d": [1, 1, 0, 1, 1], "y": [1.5] * 5})


@pytest.mark.parametrize("scheduler", tx.SCHEDULERS)
def test_a_key_outside_the_table_names_the_event(scheduler):
    def access(a):
        def fn(e, t):
            t.read_modify(a, 0, "n", lambda v: v + 100)
            t.read_modify(a, e.k, "n", lambda v: v + 1)

        return fn

    _check_error(access, DATA, scheduler, 3, ["outside table 'a'", "key 9"])


@pytest.mark.parametrize("scheduler", tx.SCHEDULERS)
def test_a_value_of_the_wrong_type_names_the_event(scheduler):
    def access(a):
        return lambda e, t: t.write(a, e.k % 4, "n", e.y, when=e.k == 1)

    _check_error(access, DATA, scheduler, 1, ["float", "int64"])


@pytest.mark.parametrize("scheduler", tx.SCHEDULERS)
def test_a_raising_lambda_names_the_event_and_nothing_is_half_applied(scheduler):
    def access(a):
        def fn(e, t):
            t.read_modify(a, 0, "n", lambda v: v + 1)
            t.read_modify(a, e.k % 4, "n", lambda v: v // e.d)

        return fn

    _check_error(access, DATA, scheduler, 2, ["division by zero"])


def test_untraceable_access_is_refused_with_the_reason():
    a = tx.Table("a", 4, {"n": "int64"})

    def branches(e, t):
        if e.k > 1:
            t.write(a, e.k, "n", 1)

    with pytest.raises(tx.TraceError, match="when="):
        tidal.from_arrow(pa.table({"t": [1], "k": [1]}), time="t").transact(branches)


@pytest.mark.parametrize("cut", [0, 1, 3, 7])
def test_tables_checkpoint_and_restore_with_the_query(cut):
    import pickle

    rows = [(1, k % 5, k % 6, (k * 5) % 6, k % 4, (k * 7) % 26, 1.5) for k in range(90)]
    data = to_table(rows)
    a, b = make_tables()
    s = tidal.from_arrow(data, time="t", batch_size=8).transact(make_access(a, b), post, interval=5)
    whole = s.to_arrow()
    final = (a.to_dict(), b.to_dict())
    a.restore({"n": np.full(6, 30), "m": np.zeros(6)})
    b.restore({"x": np.linspace(0.5, 2.0, 4)})
    first = s.query()
    first.run(max_messages=cut)
    state = pickle.loads(pickle.dumps(first.checkpoint()))
    a.restore({"n": np.full(6, -1), "m": np.full(6, -1)})  # whatever happened since, the checkpoint wins
    second = s.query()
    second.restore(state)
    assert second.run()
    combined = pa.concat_tables([first.sink.table(), second.sink.table()], promote_options="permissive")
    assert combined.to_pylist() == whole.to_pylist()
    assert (a.to_dict(), b.to_dict()) == final


def test_explain_shows_the_scheduler_and_chain_statistics():
    a, b = make_tables()
    data = to_table([(1, k % 5, k % 6, (k * 5) % 6, k % 4, 3, 1.5) for k in range(50)])
    s = tidal.from_arrow(data, time="t").transact(make_access(a, b), post, scheduler="chains", interval=10)
    assert "Transact [chains, interval 10" in s.explain()
    s.to_arrow()
    text = s.explain()
    assert "50 events, 5 intervals" in text and "chains" in text and "groups in 5 waves" in text


@pytest.mark.parametrize("scheduler", ["chains", "chains-lists", "lock", "pat"])
def test_the_parallel_schedulers_cut_work_into_many_groups(scheduler, monkeypatch):
    from tidal.tx import split
    from tidal.tx.apps import gs

    if scheduler.startswith("chains"):  # components of each interval, or owner lists of chains
        monkeypatch.setattr(split, "CHAINS", "lists" if scheduler == "chains-lists" else "components")
    if scheduler == "chains":
        tabs = gs.tables(100_000)  # records enough for Grep and Sum's intervals to fall apart
        data = gs.generate(2_000, size=100_000, skew=0.0, multi=0.25, partitions=2)
        s = tidal.from_arrow(data, time="t").transact(gs.access_for(tabs), scheduler="chains", workers=2)
        s.count()
        stats = s.node.box["last"].stats
        # one walk per run on both threads (tidal.tx.split), each with its share of the events
        assert stats["split_walks"] == stats["batches"] and stats["components"] > 1_000
        assert 0.5 <= stats["thread_share"] < 0.6
        return
    scheduler = scheduler.split("-")[0]
    tabs = gs.tables(1_000)
    data = gs.generate(2_000, size=1_000, skew=0.3, multi=0.25, partitions=2)
    s = tidal.from_arrow(data, time="t").transact(gs.access_for(tabs), scheduler=scheduler, workers=2, partitions=2)
    s.count()
    stats = s.node.box["last"].stats
    assert stats["events"] == 2_000 and stats["intervals"] == 4
    if scheduler == "chains":
        from tidal.tx.runs import LISTS

        # owner lists of chains (LISTS per thread), walked once (GS cannot abort): each has a share
        assert stats["groups"] == 2 * LISTS and stats["waves"] == 1
        share = stats["largest_group"] / stats["operations"]
        assert 1 / (2 * LISTS) <= share < 2 / (2 * LISTS)
        return
    # one walk per run on both threads (tidal.tx.locked), each with its share of the transactions:
    # lock hands out blocks of transactions in turn, pat each partition's transactions to one thread
    assert stats["locked_walks"] == stats["batches"] and stats["groups"] == 2 * stats["batches"]
    assert 0.5 <= stats["thread_share"] < 0.6


@pytest.mark.parametrize("scheduler", tx.SCHEDULERS)
def test_tables_keyed_by_strings_and_a_post_process_in_row_mode(scheduler):
    names = ["ann", "bob", "cy"]

    def tables():
        return tx.Table("stock", names, {"qty": np.array([5, 0, 9]), "price": np.array([1.5, 2.0, 0.5])})

    def access_for(stock):
        def access(e, t):
            t.read_modify(stock, e.who, "qty", lambda v: v - e.n, condition=lambda v: v >= e.n)
            t.read(stock, e.who, "price", name="price")

        return access

    def post(e, r):  # a def, not a lambda: called row by row
        return {"who": e.who, "cost": None if not r.committed else r.price * e.n}

    data = pa.table({"t": [1, 2, 3, 4, 5], "who": ["ann", "cy", "bob", "ann", "ann"], "n": [2, 4, 1, 3, 1]})
    ref_stock, stock = tables(), tables()
    want = tx.reference(data.rename_columns(["time", "who", "n"]), access_for(ref_stock), post)
    s = tidal.from_arrow(data, time="t").transact(access_for(stock), post, scheduler=scheduler, interval=2)
    assert s.to_arrow().select(["who", "cost"]).to_pylist() == want
    assert [w["cost"] for w in want] == [3.0, 2.0, None, 4.5, None]
    assert stock.to_dict() == ref_stock.to_dict()
    assert "post row mode" in s.explain()


def test_a_durable_run_continues_with_its_tables(tmp_path):
    """The run statistics explain() shows are not part of the plan's fingerprint: a second durable
    run of the same stream finds its checkpoint (and the tables it holds) instead of refusing it."""
    a = tx.Table("a", 4, {"n": np.full(4, 10, dtype=np.int64)})
    data = pa.table({"t": np.arange(100), "k": np.arange(100) % 4})
    s = tidal.from_arrow(data, time="t", batch_size=10).transact(
        lambda e, t: t.read_modify(a, e.k, "n", lambda v: v + 1), interval=7
    )
    out = s.run_durable(str(tmp_path / "out"), str(tmp_path / "state.sqlite"), every_messages=3)
    assert out.num_rows == 100 and a["n"].tolist() == [35] * 4
    again = s.run_durable(str(tmp_path / "out"), str(tmp_path / "state.sqlite"), every_messages=3)
    assert again.num_rows == 100 and a["n"].tolist() == [35] * 4  # finished: nothing applied twice


@pytest.mark.parametrize("scheduler", ["lock", "pat"])
def test_lock_and_pat_threads_hand_hot_records_on_in_timestamp_order(scheduler):
    from tidal.tx.apps import sl

    # few, hot records and half the transfers across partitions: the threads wait for each other often
    data = sl.generate(20_000, size=64, skew=1.0, multi=0.5, partitions=2)
    want_tabs, tabs = sl.tables(64), sl.tables(64)
    want = sl.python(data, want_tabs)
    s = sl.stream(tidal.from_arrow(data, time="t"), tabs, scheduler=scheduler, workers=2, partitions=2)
    assert s.to_arrow().select(["t", "committed"]).to_pylist() == want
    assert all(tabs[name].to_dict() == want_tabs[name].to_dict() for name in tabs)
    stats = s.node.inputs[0].box["last"].stats  # the transact under sl's select
    assert stats["locked_walks"] == stats["batches"] and 0 < stats["aborted"] < 20_000
