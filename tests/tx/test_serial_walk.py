"""The serial walk's code shape (``when`` groups, shared validity bits) and the translation cache, each
against the plain-Python serial reference (``tx.reference``)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

import tidal
from tidal import tx
from tidal.tx.codegen import _Source
from tidal.tx.fused import read_bit_rows, when_groups
from tidal.tx.trace import trace


def make_table():
    return tx.Table("a", 5, {"n": np.full(5, 20, dtype=np.int64), "f": np.linspace(1.0, 3.0, 5)})


def make_access(a):
    """Templates under ``e.kind == 0/1/2`` interleaved (as Online Bidding's), reads under one ``when``
    (they share validity bits), a condition that aborts in the middle of a group, and a ``when`` that
    excludes nothing (``e.y > 1``) between them, which no template may be moved across."""

    def access(e, t):
        t.read(a, e.k1, "n", name="r1", when=e.kind == 0)
        t.write(a, e.k1, "n", e.y + 1, when=e.kind == 1)
        t.read(a, e.k2, "n", name="r2", when=e.kind == 0)
        t.read_modify(a, e.k2, "n", lambda v: v + e.y, when=e.kind == 2)
        t.read_modify(a, e.k1, "n", lambda v: v - e.y, condition=lambda v: v >= e.y, when=e.kind == 0)
        t.read(a, e.k1, "f", name="r3", when=e.kind == 0)
        t.read_modify(a, e.k2, "n", lambda v: v % 7 + e.y, when=e.y > 1)
        t.write(a, e.k2, "n", e.y * 2, when=e.kind == 1)
        t.read(a, e.k2, "n", name="r4", when=e.kind == 0)
        t.read(a, e.k1, "n", name="r5")

    return access


def post(e, r):
    return {"ok": r.committed, "r1": r.r1, "r2": r.r2, "r3": r.r3, "r4": r.r4, "r5": r.r5}


events = st.lists(
    st.tuples(st.integers(0, 2), st.integers(0, 2), st.integers(0, 4), st.integers(0, 4), st.integers(0, 9)),
    min_size=1,
    max_size=80,
)


def to_table(rows) -> pa.Table:
    cols = list(zip(*rows, strict=True))
    t = np.cumsum(cols[0])
    return pa.table({"t": t, "kind": cols[1], "k1": cols[2], "k2": cols[3], "y": cols[4]})


@settings(max_examples=40, deadline=None)
@given(events, st.sampled_from(tx.SCHEDULERS), st.integers(1, 30), st.integers(1, 2))
def test_grouped_whens_and_shared_bits_equal_the_serial_reference(rows, scheduler, interval, workers):
    data = to_table(rows)
    a = make_table()
    ref = tx.reference(data.rename_columns(["time", *data.column_names[1:]]), make_access(a), post)
    b = make_table()
    got = tidal.from_arrow(data, time="t").transact(
        make_access(b), post, scheduler=scheduler, interval=interval, workers=workers
    )
    assert got.to_arrow().select(["ok", "r1", "r2", "r3", "r4", "r5"]).to_pylist() == ref
    assert b.to_dict() == a.to_dict()


def test_when_groups_move_templates_only_across_excluding_whens():
    ops = trace(make_access(make_table()), None).ops
    groups = [ks for _, ks in when_groups(ops, _Source({}))]
    # kind == 0: 0, 2, 4, 5 (5 after the condition 4: still in order); kind == 1: 1, then 7 cannot
    # join it across the e.y > 1 template (6); kind == 2: 3; 8 starts a new kind == 0 group after 6
    assert groups == [[0, 2, 4, 5], [1], [3], [6], [7], [8], [9]]
    slots = [-1] * len(ops)
    for s, k in enumerate(k for k, t in enumerate(ops) if t.name is not None):
        slots[k] = s
    # r1, r2, r3 share r1's bits; r4 (another group) and r5 (no when) have their own
    assert read_bit_rows(ops, slots, {}) == [0, 0, 0, 3, 4]


def test_a_lambda_is_translated_again_when_its_free_values_change():
    a = tx.Table("a", 3, {"n": np.zeros(3, dtype=np.int64)})

    def make(step):
        return lambda e, t: t.read_modify(a, e.k, "n", lambda v: v + step)

    data = pa.table({"t": [1, 2, 3], "k": [0, 1, 0]})
    for step in (1, 5, 1):
        a.columns["n"][:] = 0
        tidal.from_arrow(data, time="t").transact(make(step), scheduler="serial").count()
        assert a.to_dict()["n"] == [2 * step, step, 0]
