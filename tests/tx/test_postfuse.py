"""The post-process in the serial walk (``tidal.tx.postfuse``) and operations without a branch on their
``when`` (``tidal.tx.fused._predicated``): outputs and tables equal the serial reference.

The fused walk applies where nothing aborts and every read is issued by every event; the tests
check that it ran there (the engine's statistics) and that the other cases (a condition, a read
under a ``when``, a post-process reading ``r.committed`` or dividing by a field) still equal the
reference by the general path.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tidal
from tidal import tx

from .test_transact import event_rows
from .test_transact import to_table as events_table


def make_tables():
    a = tx.Table("a", 5, {"n": np.arange(5, dtype=np.int64) * 3, "f": np.linspace(0.5, 2.5, 5)})
    b = tx.Table("b", 4, {"x": np.zeros(4)})
    return a, b


def make_access(a, b, variant: str = "fused"):
    def access(e, t):
        # each alone under its when, no condition: run without a branch in the one-thread walk
        t.read_modify(a, e.k1, "n", lambda v: v + e.amt, when=e.kind == 0)
        t.write(b, e.k2 % 4, "x", e.x * 2.0, when=e.kind == 1)
        t.read_modify(a, e.k3, "f", lambda v: v * 0.5 + e.amt, when=e.kind >= 1)
        if variant == "condition":  # can abort: no fused post
            t.read_modify(a, e.k3, "n", lambda v: v - e.amt, condition=lambda v: v >= e.amt, when=e.kind == 2)
        t.read(a, e.k1, "n", name="n1", **({"when": e.kind != 1} if variant == "read_when" else {}))
        t.read(b, e.k2 % 4, "x", name="bx")
        t.read(a, e.k3, "f", name="f3")

    return access


# fields passed on and numbers that cannot raise: compiled into the walk
fused_post = lambda e, r: {  # noqa: E731
    "t": e.ts,
    "y": r.n1 * 2 + e.amt if r.f3 < 3.0 and r.bx >= 0 else r.n1 - 1,
    "z": r.bx + r.f3 * 0.5 - e.x,
    "q": r.n1 // 3 + r.n1 % 7,
    "flag": r.n1 % 5 > 2,
    "f3": r.f3,
}
# reads that may be null (an abort, a read under a when): the general path
null_safe_post = lambda e, r: {"t": e.ts, "n1": r.n1, "f3": r.f3, "ok": r.committed}  # noqa: E731
# the general path: r.committed, a division by a field
committed_post = lambda e, r: {"t": e.ts, "y": r.n1 * 2 if r.committed else -1}  # noqa: E731
dividing_post = lambda e, r: {"t": e.ts, "z": r.f3 / (e.amt + 1)}  # noqa: E731

events = event_rows(kinds=2, k1=4, k2=7, k3=4)


def to_table(rows) -> pa.Table:
    return events_table(rows, with_ts=True)


def check(data, variant, post, scheduler, interval, workers):
    ra, rb = make_tables()
    want = tx.reference(data.rename_columns(["time", *data.column_names[1:]]), make_access(ra, rb, variant), post)
    a, b = make_tables()
    s = tidal.from_arrow(data, time="t").transact(
        make_access(a, b, variant), post, scheduler=scheduler, interval=interval, workers=workers
    )
    got = s.to_arrow().drop_columns(["sync_time", "other_time"])
    if post is None:  # each event with committed and its reads: the reference gives those
        got = got.select(list(want[0]))
    assert got.to_pylist() == want
    assert a.to_dict() == ra.to_dict() and b.to_dict() == rb.to_dict()
    return s, got


@settings(max_examples=40, deadline=None)
@given(
    events, st.sampled_from(["fused", "condition", "read_when"]), st.sampled_from(tx.SCHEDULERS),
    st.integers(1, 40), st.integers(1, 3),
)  # fmt: skip
def test_fused_post_equals_the_serial_reference(rows, variant, scheduler, interval, workers):
    data = to_table(rows)
    post = fused_post if variant == "fused" else null_safe_post
    s, got = check(data, variant, post, scheduler, interval, workers)
    if variant == "fused":
        assert got.schema.field("y").type == pa.int64() and got.schema.field("flag").type == pa.bool_()
        assert got.schema.field("f3").type == pa.float64()
    fused = s.node.box["last"].stats.get("post_fused", 0)
    if scheduler == "serial" and variant == "fused":
        assert fused > 0 and "with the post-process in the walk" in s.explain()
    if variant != "fused" or scheduler in ("lock", "pat"):
        assert fused == 0


@settings(max_examples=25, deadline=None)
@given(events, st.sampled_from([committed_post, dividing_post, None]), st.integers(1, 40))
def test_other_post_processes_take_the_general_path(rows, post, interval):
    data = to_table(rows)
    s, _ = check(data, "fused", post, "serial", interval, 1)
    assert s.node.box["last"].stats.get("post_fused", 0) == 0


@pytest.mark.parametrize("fail", ["key", "division"])
def test_an_error_in_a_fused_run_names_the_event_and_changes_nothing(fail):
    a, b = make_tables()
    before = (a.to_dict(), b.to_dict())

    def access(e, t):
        t.read_modify(a, e.k1, "n", lambda v: v + e.amt, when=e.kind == 0)
        t.read_modify(a, e.k3, "f", (lambda v: v / e.amt) if fail == "division" else (lambda v: v + 1.0))
        t.read(a, e.k1, "n", name="n1")

    rows = [(0, 0, 1, 0, 1, 3, 0.0), (1, 0, 2, 0, 2, 5, 0.0), (1, 1, 9 if fail == "key" else 3, 0, 1, 0, 0.0)]
    data = to_table(rows)
    s = tidal.from_arrow(data, time="t").transact(access, lambda e, r: {"y": r.n1 + 1}, scheduler="serial")
    with pytest.raises(tx.TransactionError, match="event 2 \\(time 2\\)"):
        s.to_arrow()
    assert (a.to_dict(), b.to_dict()) == before


@pytest.mark.parametrize("dtype", ["uint64", "uint32", "int8", "int64"])
@pytest.mark.parametrize("scheduler", ["serial", "pipeline", "chains"])
def test_keys_of_every_integer_type_in_the_branch_free_walk(dtype, scheduler):
    keys = pa.array([0, 1, 2, 3, 4, 1, 4, 0, 2], type=dtype)
    data = pa.table({"t": np.arange(9), "ts": np.arange(9), "k": keys, "w": [1, 0, 1] * 3})

    def run(fn):
        a = tx.Table("a", 5, {"n": np.zeros(5, dtype=np.int64)})

        def access(e, t):
            t.read_modify(a, e.k, "n", lambda v: v + 2, when=e.w == 1)  # alone under its when: no branch
            t.read(a, e.k, "n", name="r")

        return fn(access), a.to_dict()

    post = lambda e, r: {"ts": e.ts, "r2": r.r * 2}  # noqa: E731
    want = run(lambda access: tx.reference(data.rename_columns(["time", "ts", "k", "w"]), access, post))
    got = run(
        lambda access: (
            tidal.from_arrow(data, time="t")
            .transact(access, post, scheduler=scheduler, workers=2)
            .to_arrow()
            .select(["ts", "r2"])
            .to_pylist()
        )
    )
    assert got == want
