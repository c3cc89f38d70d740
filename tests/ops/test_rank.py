"""ROW_NUMBER Top-N (tidal.ops.rank) and SQL window functions (tidal.ops.window_functions) computed once at
end of input (``at_end``): the final rows equal a plain Python numbering of the final input snapshot and the
per-tick operators' final snapshot, all at the last input tick, whatever the batching, with the kept rows
cut on the way, on input with retractions, and across a checkpoint."""

from __future__ import annotations

import functools
from collections import Counter

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from tidal.core.batch import EventBatch
from tidal.core.time import EARLIEST, INFINITY
from tidal.ops.base import Consumer
from tidal.ops.rank import RowNumberOp
from tidal.ops.window_functions import WindowCall, WindowFunctionsOp

SCHEMA = pa.schema([("p", pa.int64()), ("v", pa.int64()), ("s", pa.string())])
FLOATS = pa.schema([("p", pa.int64()), ("v", pa.float64()), ("s", pa.string())])


class Collect(Consumer):
    def __init__(self):
        self.events: list[tuple] = []  # (sync, other, row)
        self.completed = False

    def on_batch(self, batch: EventBatch) -> None:
        cols = [batch.columns[n].to_pylist() for n in batch.columns]
        rows = list(zip(*cols, strict=True))
        self.events += list(zip(batch.sync.tolist(), batch.other.tolist(), rows, strict=True))

    def on_completed(self) -> None:
        self.completed = True


def final(events: list[tuple]) -> Counter:
    """Rows alive at the end of time: start edges less the end edges retracting them."""
    alive = Counter()
    for sync, other, row in events:
        if other == INFINITY:
            alive[row] += 1
        elif other < sync:
            alive[row] -= 1
    return +alive


def reference_numbers(rows: list[tuple], limit, desc: bool) -> Counter:
    """Plain Python: each partition (column 0) ordered by v (nulls last), ties by every column ascending
    (nulls last), numbered from 1, cut to ``limit``."""

    def cmp(x, y):
        for i, d in [(1, desc), (0, False), (1, False), (2, False)]:
            a, b = x[i], y[i]
            if a == b:
                continue
            if a is None or b is None:
                return 1 if a is None else -1
            return (-1 if a < b else 1) * (-1 if d else 1)
        return 0

    out = Counter()
    parts: dict = {}
    for r in rows:
        parts.setdefault(r[0], []).append(r)
    for part in parts.values():
        ranked = sorted(part, key=functools.cmp_to_key(cmp))
        for i, r in enumerate(ranked[: len(ranked) if limit is None else limit]):
            out[(*r, i + 1)] += 1
    return out


values = st.one_of(st.none(), st.integers(-3, 3))
row = st.tuples(st.one_of(st.none(), st.integers(0, 3)), values, st.sampled_from(["a", "b", None]))


@st.composite
def inputs(draw, ends: bool):
    """Events in sync order: start edges, and (``ends``) intervals and end edges retracting earlier rows."""
    n = draw(st.integers(0, 40))
    rows = draw(st.lists(row, min_size=n, max_size=n))
    base = draw(st.sampled_from([0, 0, -6, -(2**40), EARLIEST]))  # times before 1970 too: -1 and 0 are no markers
    times = sorted(base + t for t in draw(st.lists(st.integers(0, 12), min_size=n, max_size=n)))
    events = []
    for t, r in zip(times, rows, strict=True):
        if ends and draw(st.booleans()):
            events.append((t, t + draw(st.integers(1, 6)), r))  # an interval
        else:
            events.append((t, INFINITY, r))
    if ends:  # end edges of some start edges, at a later tick
        for t, o, r in list(events):
            if o == INFINITY and draw(st.integers(0, 3)) == 0:
                events.append((t + draw(st.integers(1, 5)), t, r))
    events.sort(key=lambda e: e[0])
    cuts = sorted(set(draw(st.lists(st.integers(1, max(len(events), 1)), max_size=4))))
    return events, cuts


def feed(op, events, cuts, schema, restore_at=None):
    """``events`` to ``op`` in batches cut at ``cuts`` with a punctuation after each; optionally a checkpoint
    (``snapshot`` into a fresh operator made by ``restore_at``) after the first batch."""
    sink = Collect()
    op.downstream = [sink]
    bounds = [0, *[c for c in cuts if c < len(events)], len(events)]
    for k, (lo, hi) in enumerate(zip(bounds, bounds[1:], strict=False)):
        part = events[lo:hi]
        if part:
            cols = {f.name: pa.array([e[2][i] for e in part], f.type) for i, f in enumerate(schema)}
            op.on_batch(EventBatch(np.array([e[0] for e in part]), np.array([e[1] for e in part]), cols))
            op.on_punctuation(part[-1][0])
        if k == 0 and restore_at is not None:
            state = op.snapshot()
            op = restore_at()
            op.restore(state)
            op.downstream = [sink]
    op.on_completed()
    assert sink.completed
    return sink.events


def alive_input(events) -> list[tuple]:
    return list(final(events).elements())


@settings(max_examples=150, deadline=None)
@given(
    data=inputs(ends=False), limit=st.sampled_from([1, 2, 3]), desc=st.booleans(), keep=st.sampled_from([1, 4, 1000])
)
def test_top_n_at_end_over_start_edges_numbers_in_arrow(data, limit, desc, keep):
    events, cuts = data

    def make(at_end=True):
        op = RowNumberOp(SCHEMA, ["p"], [("v", desc, False)], limit, "n", start_edges_only=True, at_end=at_end)
        op.keep_at_least = keep  # cut the kept rows to each partition's window this often
        return op

    assert make().columnar
    out = feed(make(), events, cuts, SCHEMA, restore_at=make)
    assert final(out) == reference_numbers(alive_input(events), limit, desc)
    assert final(out) == final(feed(make(at_end=False), events, cuts, SCHEMA))
    if events:  # start edges only, all at the last input tick
        assert {(s, o) for s, o, _ in out} <= {(events[-1][0], INFINITY)}


@settings(max_examples=150, deadline=None)
@given(data=inputs(ends=True), limit=st.sampled_from([1, 2, None]), desc=st.booleans())
def test_row_number_at_end_over_changes_equals_the_per_tick_final_snapshot(data, limit, desc):
    events, cuts = data

    def make(at_end=True):
        return RowNumberOp(SCHEMA, ["p"], [("v", desc, False)], limit, "n", at_end=at_end)

    out = feed(make(), events, cuts, SCHEMA, restore_at=make)
    assert final(out) == reference_numbers(alive_input(events), limit, desc)
    assert final(out) == final(feed(make(at_end=False), events, cuts, SCHEMA))
    ends = [e for e in events if e[1] != INFINITY]
    if ends and events:
        assert {s for s, _, _ in out} <= {max(e[0] for e in events)}


@settings(max_examples=60, deadline=None)
@given(data=inputs(ends=False), limit=st.sampled_from([1, 2]))
def test_start_edges_that_turn_into_changes_leave_the_arrow_path(data, limit):
    """A batch with an end edge after start edges kept in Arrow: the kept rows join the per-row changes."""
    events, cuts = data
    if not events:
        return
    t = events[-1][0]
    events = [*events, (t + 1, events[0][0], events[0][2])]  # retract the first row
    op = RowNumberOp(SCHEMA, ["p"], [("v", False, False)], limit, "n", start_edges_only=True, at_end=True)
    out = feed(op, events, [*cuts, len(events) - 1], SCHEMA)
    assert not op.columnar
    assert final(out) == reference_numbers(alive_input(events), limit, False)


def test_floating_columns_take_the_per_row_path():
    op = RowNumberOp(FLOATS, ["p"], [("v", True, False)], 1, "n", start_edges_only=True, at_end=True)
    assert not op.columnar
    events = [(0, INFINITY, (1, 2.5, "a")), (1, INFINITY, (1, float("nan"), "b")), (2, INFINITY, (2, -0.0, None))]
    out = feed(op, events, [1], FLOATS)
    got = {(r[0], r[3]): r[1] for r in final(out)}
    assert np.isnan(got[(1, 1)]) and got[(2, 1)] == 0.0 and len(got) == 2


CALLS = [
    WindowCall("a", "avg", ("v",), ("p",), (("v", False, False),), ("rows", -2, 0)),
    WindowCall("r", "row_number", (), ("p",), (("s", True, False),)),
]
OUT = pa.schema([*SCHEMA, ("a", pa.float64()), ("r", pa.int64())])


@settings(max_examples=150, deadline=None)
@given(data=st.booleans().flatmap(lambda ends: inputs(ends=ends)))
def test_window_functions_at_end_equal_the_per_tick_final_snapshot(data):
    """Start edges only are computed in Arrow; ends switch to the per-row changes (kept rows included)."""
    events, cuts = data

    def make(at_end=True):
        return WindowFunctionsOp(SCHEMA, CALLS, OUT, at_end=at_end)

    out = feed(make(), events, cuts, SCHEMA, restore_at=make)
    per_tick = feed(make(at_end=False), events, cuts, SCHEMA)
    assert final(out) == final(per_tick)
    assert sum(final(out).values()) == len(alive_input(events))
    if events:
        assert {s for s, _, _ in out} <= {max(e[0] for e in events)}
        assert all(o == INFINITY for _, o, _ in out)  # computed once: nothing to retract


def snapshot_at(events: list[tuple], t: int) -> Counter:
    """The rows alive at instant ``t``: intervals covering it, start edges not yet retracted by an end edge."""
    alive = Counter()
    for sync, other, r in events:
        if sync > t:
            continue
        if other == INFINITY or other > t:  # a start edge, or an interval still alive at t
            alive[r] += 1
        elif other < sync:  # an end edge (an output end edge retracts the copy emitted at ``other``)
            alive[r] -= 1
    return +alive


PER_PARTITION = [
    WindowCall("n", "row_number", (), ("p",), (("v", False, False),)),
    WindowCall("c", "count_star", (), ("p", "s"), ()),
]
PER_PARTITION_OUT = pa.schema([*SCHEMA, ("n", pa.int64()), ("c", pa.int64())])


@settings(max_examples=150, deadline=None)
@given(data=inputs(ends=True), checkpoint=st.booleans())
def test_window_functions_recompute_only_touched_partitions_with_every_ticks_answer(data, checkpoint):
    """Live (per tick): a tick recomputes only the partitions of ``p`` (the columns every call partitions by)
    it changed, and the output snapshot at every instant is still the plain Python answer over the input
    snapshot at that instant: row_number by ``v`` per ``p`` and a count per (``p``, ``s``)."""
    events, cuts = data

    def make():
        return WindowFunctionsOp(SCHEMA, PER_PARTITION, PER_PARTITION_OUT)

    op = make()
    assert op.partition_index == (0,)
    out = feed(op, events, cuts, SCHEMA, restore_at=make if checkpoint else None)
    for t in sorted({e[0] for e in events} | {e[1] for e in events if e[1] != INFINITY}):
        rows = list(snapshot_at(events, t).elements())
        sizes = Counter((r[0], r[2]) for r in rows)
        want = Counter({(*r[:4], sizes[(r[0], r[2])]): n for r, n in reference_numbers(rows, None, False).items()})
        assert snapshot_at(out, t) == want, t
