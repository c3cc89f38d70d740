"""A post-process over numbers runs as one compiled loop per field: its output equals the serial reference.

The loop applies only where the inputs have no nulls (a read of an aborted transaction is null: then
the general path runs), and a division by zero hands the batch back to the general path, whose
error names the event. Both cases are drawn below.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tidal
from tidal import tx


def make_table():
    return tx.Table("acc", 5, {"n": np.full(5, 20, dtype=np.int64), "f": np.linspace(0.5, 2.5, 5)})


def make_access(acc, conditional: bool):
    def access(e, t):
        cond = (lambda v: v >= e.amt) if conditional else None
        t.read_modify(acc, e.k, "n", lambda v: v - e.amt, condition=cond)
        t.read_modify(acc, e.j, "f", lambda v: v * 0.5 + e.amt)
        t.read(acc, e.k, "n", name="after")
        t.read(acc, e.j, "f", name="fj")

    return access


# numbers only: compiled field by field (the reads have no nulls without conditions); lambdas, as a
# def is called row by row
post = lambda e, r: {  # noqa: E731
    "t": e.ts,
    "toll": (r.after - 3) * 2 if r.fj < 4.0 and r.after > 5 else e.amt - 1,
    "share": r.fj / (e.amt + 1) + r.after // 3,
    "flag": r.after % 7 > 2,
}

# reads of aborted transactions are null (None in Python): the general path
guarded = lambda e, r: {  # noqa: E731
    "t": e.ts,
    "toll": (r.after - 3) * 2 if r.committed and r.fj < 4.0 and r.after > 5 else e.amt - 1,
    "share": r.fj / (e.amt + 1) + r.after // 3 if r.committed else -1.0,
    "flag": r.committed and r.after % 7 > 2,
}


rows = st.lists(st.tuples(st.integers(0, 4), st.integers(0, 4), st.integers(0, 12)), min_size=1, max_size=80)


def to_table(rs) -> pa.Table:
    k, j, amt = (list(c) for c in zip(*rs, strict=True))
    t = np.arange(len(rs), dtype=np.int64)
    return pa.table({"t": t, "ts": t, "k": k, "j": j, "amt": amt})


@settings(max_examples=40, deadline=None)
@given(rows, st.booleans(), st.sampled_from(["serial", "chains"]), st.integers(1, 30))
def test_compiled_post_equals_the_reference(rs, conditional, scheduler, interval):
    data = to_table(rs)
    ref_acc = make_table()
    fn = guarded if conditional else post
    want = tx.reference(data.rename_columns(["time", "ts", "k", "j", "amt"]), make_access(ref_acc, conditional), fn)
    acc = make_table()
    s = tidal.from_arrow(data, time="t").transact(
        make_access(acc, conditional), fn, scheduler=scheduler, interval=interval, workers=2
    )
    got = s.to_arrow()
    assert got.select(["t", "toll", "share", "flag"]).to_pylist() == want
    assert got.schema.field("toll").type == pa.int64() and got.schema.field("share").type == pa.float64()
    assert acc.to_dict() == ref_acc.to_dict()
    if not conditional:  # no nulls among the reads: the compiled loops ran
        assert s.node.post._plans and any(p is not None for p in s.node.post._plans.values())


def test_a_division_by_zero_in_the_post_names_the_event():
    acc = make_table()
    data = pa.table({"t": [0, 1, 2], "ts": [0, 1, 2], "k": [0, 1, 2], "j": [0, 0, 0], "amt": [1, -1, 2]})
    s = tidal.from_arrow(data, time="t").transact(
        make_access(acc, False), lambda e, r: {"q": r.after // (e.amt + 1)}, scheduler="serial"
    )
    with pytest.raises(Exception) as info:
        s.to_arrow()
    assert "ZeroDivisionError" in str(info.value) or "division" in str(info.value)
