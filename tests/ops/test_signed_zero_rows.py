"""TopK, window functions and ROW_NUMBER (tidal.ops.recomputed's operators) over rows that differ only in
the sign of a zero: -0.0 = 0.0 in SQL, so they tie under ORDER BY and share a partition, but each is its
own row and comes out with its own sign, as DuckDB keeps it. The operators kept their snapshot in a
multiset keyed by row values, where (-0.0,) and (0.0,) are one key: both rows came out with the first
one's sign, and a retraction of one removed the other.

Checked at every instant against a plain Python reference of the window (ORDER BY v, NULLs last, NaN
largest; ties in either order): the output holds the reference's rows up to the sign of zero, and only
rows alive in the input (signs kept), with a checkpoint taken and restored half way."""

from __future__ import annotations

import math
import pickle
from collections import Counter

import numpy as np
import pyarrow as pa
from hypothesis import example, given, settings
from hypothesis import strategies as st

from tidal.core.batch import EventBatch
from tidal.core.time import INFINITY
from tidal.ops.rank import RowNumberOp
from tidal.ops.topk import TopKOp
from tidal.ops.window_functions import WindowCall, WindowFunctionsOp

from .test_rank import Collect

SCHEMA = pa.schema([("v", pa.float64()), ("s", pa.string())])
VALUES = st.sampled_from([-0.0, 0.0, 1.5, -1.0, math.nan, None])


def _number(v) -> tuple:
    """A value's place among values: NaN after every number, -0.0 as 0.0."""
    return (1, 0.0) if v != v else (0, v + 0.0)


def _order(row: tuple, desc: bool) -> tuple:
    """ORDER BY v (NULLs last either way), then every column ascending (NULLs last)."""
    v, s = row
    if v is None:
        first = (1, (0, 0.0))
    else:
        n = _number(v)
        first = (0, (-n[0], -n[1]) if desc else n)
    return (first, (v is None, (0, 0.0) if v is None else _number(v)), (s is None, s or ""))


def _unsigned(row: tuple) -> tuple:
    """The row as SQL compares it: NaN as one value, -0.0 as 0.0."""
    return tuple(("nan",) if isinstance(v, float) and v != v else v + 0.0 if isinstance(v, float) else v for v in row)


def _signed(row: tuple) -> tuple:
    """The row with the sign of each zero kept."""
    signed = [(v + 0.0, math.copysign(1.0, v)) if isinstance(v, float) and v == v else None for v in row]
    return tuple(s if s is not None else _unsigned((v,))[0] for s, v in zip(signed, row, strict=True))


def _alive(events: list[tuple], t: int) -> Counter:
    """The rows of a changelog alive at ``t``, each by :func:`_signed` (sign of zero kept)."""
    alive = Counter()
    for sync, other, row in events:
        if sync > t:
            continue
        if other == INFINITY or other > sync:
            alive[_signed(row)] += 1 if t < other else 0
        else:  # an end edge
            alive[_signed(row)] -= 1
    return +alive


def _from_signed(row: tuple) -> tuple:
    return tuple(
        math.copysign(v[0], v[1]) if isinstance(v, tuple) and len(v) == 2 else math.nan if v == ("nan",) else v
        for v in row
    )


def _window(alive: Counter, desc: bool, limit: int) -> Counter:
    rows = [_from_signed(r) for r in alive.elements()]
    return Counter(_unsigned(r) for r in sorted(rows, key=lambda r: _order(r, desc))[:limit])


@st.composite
def _events(draw):
    n = draw(st.integers(1, 12))
    out = []
    for _ in range(n):
        start = draw(st.integers(-3, 6))  # around -1 and 0 too
        end = draw(st.one_of(st.just(INFINITY), st.integers(start + 1, 8)))
        out.append((start, end, (draw(VALUES), draw(st.sampled_from(["a", "b"])))))
    return sorted(out, key=lambda e: e[0])


def _batch(events: list[tuple]) -> EventBatch:
    cols = {
        "v": pa.array([e[2][0] for e in events], pa.float64()),
        "s": pa.array([e[2][1] for e in events], pa.string()),
    }
    return EventBatch(np.array([e[0] for e in events], np.int64), np.array([e[1] for e in events], np.int64), cols)


@settings(max_examples=200, deadline=None)
@given(events=_events(), desc=st.booleans(), limit=st.integers(1, 4), cut=st.integers(0, 12))
@example(events=[(0, INFINITY, (-0.0, "a")), (0, INFINITY, (0.0, "a"))], desc=False, limit=2, cut=0)
@example(events=[(0, 2, (-0.0, "a")), (0, INFINITY, (0.0, "a")), (1, INFINITY, (1.5, "b"))], desc=True, limit=3, cut=2)
# a checkpoint restored a row's NaN as another object than the rows' one NaN: rows no longer matched
@example(
    events=[(0, INFINITY, (-0.0, "a")), (0, INFINITY, (math.nan, "a")), (0, 1, (math.nan, "a")),
            (0, INFINITY, (-0.0, "a")), (0, INFINITY, (-0.0, "a")), (1, INFINITY, (-0.0, "a")),
            (2, INFINITY, (-0.0, "a"))],
    desc=True, limit=2, cut=6,
)  # fmt: skip
def test_topk_keeps_each_rows_sign_of_zero(events, desc, limit, cut):
    sink = Collect()
    op = TopKOp(SCHEMA, [("v", desc, False)], limit, 0)
    op.downstream.append(sink)
    cut = min(cut, len(events))
    first, rest = events[:cut], events[cut:]
    if first:
        op.on_batch(_batch(first))
    if rest and first and rest[0][0] > first[-1][0]:  # a checkpoint between ticks, restored into a new operator
        state = pickle.loads(pickle.dumps(op.snapshot()))
        op = TopKOp(SCHEMA, [("v", desc, False)], limit, 0)
        op.restore(state)
        op.downstream.append(sink)
    if rest:
        op.on_batch(_batch(rest))
    op.on_completed()
    for t in range(0, 9):
        alive_in, got = _alive(events, t), _alive(sink.events, t)
        assert Counter(_unsigned(_from_signed(r)) for r in got.elements()) == _window(alive_in, desc, limit), t
        assert not got - alive_in, t  # each row as it came in: its own sign


@settings(max_examples=100, deadline=None)
@given(events=_events(), by_value=st.booleans(), at_end=st.booleans())
@example(events=[(0, 1, (-0.0, "b")), (0, INFINITY, (0.0, "b"))], by_value=False, at_end=False)
def test_numbered_rows_keep_each_rows_sign_of_zero(events, by_value, at_end):
    """Every input row alive comes out once, with its own sign, numbered within its partition (by v:
    -0.0 and 0.0 are one partition, NaN one more)."""
    out = pa.schema([*SCHEMA, ("n", pa.int64())])
    partition = ["v"] if by_value else []
    window = WindowFunctionsOp(
        SCHEMA, [WindowCall("n", "row_number", (), tuple(partition), (("s", False, False),))], out, at_end
    )
    for op in (window, RowNumberOp(SCHEMA, partition, [("s", False, False)], None, "n", at_end=at_end)):
        sink = Collect()
        op.downstream.append(sink)
        op.on_batch(_batch(events))
        op.on_completed()
        for t in range(0, 9) if not at_end else [INFINITY - 1]:
            got = _alive(sink.events, t)
            assert Counter(r[:2] for r in got.elements()) == _alive(events, t), t
            numbers = Counter(_unsigned(_from_signed(r[:1])) if by_value else () for r in got.elements())
            assert sorted(r[2] for r in got.elements()) == sorted(i + 1 for n in numbers.values() for i in range(n)), t
