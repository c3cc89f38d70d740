"""An aggregate read only at end of input (``final_only``, set by SQL for a GROUP BY without TRIGGER
over rows in time) computes each group's result once, at end of input: the same final snapshot as
the aggregate that computes every tick's result, one start edge per group and no retraction."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import tidal
from tidal import INFINITY, agg
from tidal.core.errors import PlanError
from tidal.core.time import EARLIEST
from tidal.stream.streamable import Stream
from tidal.testing.reference import canonical

# times around -1 and 0, far before 1970 and at the start of the range: no time is a marker
TIMES = st.integers(-20, 20) | st.integers(-(2**40), -(2**40) + 5) | st.integers(EARLIEST, EARLIEST + 3)
ROWS = st.lists(st.tuples(TIMES, st.integers(0, 3), st.sampled_from([None, "a", "b", "", "é"])), max_size=40)


def _table(rows) -> pa.Table:
    return pa.table(
        {
            "t": pa.array([r[0] for r in rows], pa.int64()),
            "k": pa.array([r[1] for r in rows], pa.int64()),
            "s": pa.array([r[2] for r in rows], pa.string()),
        }
    )


def _alive_at(table: pa.Table, t: int) -> list:
    return sorted((repr(p) for s, e, p in canonical(table) if s <= t < e))


@settings(max_examples=60, deadline=None)
@given(rows=ROWS, batch=st.integers(1, 7))
def test_final_only_gives_the_same_final_snapshot_in_one_result_per_group(rows, batch):
    rows = sorted(rows, key=lambda r: r[0])
    table = _table(rows)
    stream = tidal.from_arrow(table, time="t", kind="start", batch_size=batch)
    every_tick = stream.group_aggregate(
        "k", joined=agg.string_agg("s", "|"), values=agg.list_agg("s"), top=agg.mode("s"), n=agg.count()
    )
    assert "python" in every_tick.explain()  # the Python-state engine: the one final_only changes
    at_end = Stream(every_tick.node.but(final_only=True))
    assert "results at end of input only" in at_end.explain()
    got, want = at_end.to_arrow(), every_tick.to_arrow()
    last = max((r[0] for r in rows), default=0)
    assert _alive_at(got, last) == _alive_at(want, last)
    assert _alive_at(got, INFINITY - 1) == _alive_at(want, INFINITY - 1)
    # one start edge per group, nothing retracted
    assert got.num_rows == len({r[1] for r in rows})
    assert all(o == INFINITY for o in got.column("other_time").to_pylist())
    assert set(got.column("sync_time").to_pylist()) <= {last}  # stamped with the last input tick


@settings(max_examples=40, deadline=None)
@given(rows=ROWS, batch=st.integers(1, 7))
@example(rows=[(0, 0, "a"), (0, 0, "b"), (0, 0, "a")], batch=1)  # equal values at one time come out together
def test_list_agg_of_plain_values_lists_them_in_time_order(rows, batch):
    """``agg.list_agg(field)`` over plain values (not SQL's packed rows): each group's non-null values,
    earliest first (it returned each text's last character, and failed on numbers); rows at one time
    as its docstring says."""
    rows = sorted(rows, key=lambda r: r[0])
    table = _table(rows)
    stream = tidal.from_arrow(table, time="t", kind="start", batch_size=batch)
    out = stream.group_aggregate("k", texts=agg.list_agg("s"), keys=agg.list_agg("k"))
    final = {
        p[0]: tuple(None if v is None else list(v) for v in p[1:])
        for s, e, p in canonical(out.to_arrow())
        if e == INFINITY
    }
    # rows at one time are a multiset: equal values come out together, in the order each first arrived
    want = {}
    for t in sorted({r[0] for r in rows}):
        for k in sorted({r[1] for r in rows if r[0] == t}):
            texts, keys = want.setdefault(k, ([], []))
            values = [r[2] for r in rows if r[0] == t and r[1] == k]
            for v in dict.fromkeys(v for v in values if v is not None):
                texts.extend([v] * values.count(v))
            keys.extend([k] * len(values))
    # a group without a non-null value has no list (NULL), as every aggregate over no values
    assert final == {k: (texts or None, keys) for k, (texts, keys) in want.items()}


@pytest.mark.parametrize("order", ["i", (True, False), [("desc", False)], [(True,)], 3])
def test_list_agg_refuses_an_order_that_is_not_pairs_of_booleans(order):
    """``order`` is one (descending, nulls first) pair per key packed before the value: a field name failed at
    run time with a raw ``ValueError`` (a bool with a ``TypeError``) raised while computing the result."""
    with pytest.raises(PlanError, match=r"list_agg's order takes \(descending, nulls_first\) pairs of booleans"):
        agg.list_agg("s", order=order)


def test_list_agg_refuses_more_order_keys_than_its_argument_packs():
    """Two pairs over a plain value (one packed column) raised an ``IndexError`` at run time; one pair (numpy's
    booleans too) orders by the value, as before."""
    stream = tidal.from_arrow(_table([(0, 0, "a"), (1, 0, "c"), (2, 0, "b")]), time="t", kind="start")
    with pytest.raises(PlanError, match=r"order has 2 keys, x packs 1 column"):
        stream.group_aggregate("k", v=agg.list_agg("s", order=[(True, False), (False, False)]))
    out = stream.group_aggregate("k", v=agg.list_agg("s", order=[(np.True_, np.False_)])).to_arrow()
    assert [list(v) for s, e, (k, v) in canonical(out) if e == INFINITY] == [["c", "b", "a"]]
