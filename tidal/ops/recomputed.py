"""Operators whose output snapshot is recomputed from the whole input snapshot (TopK, window functions).

Temporal semantics: at every instant ``T`` the output snapshot is ``f(input snapshot at T)`` for a
function ``f`` of the whole relation (its row order, ranks, neighbours). The input is start edges
(inserts), end edges (retractions) and intervals (an insert now, a retraction at the end). A tick
``t`` is complete once a later tick or a punctuation beyond it arrives; then its changes are
applied to the snapshot (a multiset of row tuples) and, if a subclass says they can matter,
``f`` is recomputed and the difference from the previous output is emitted at ``t``: an end edge
for each output row that left (a retraction of the row as emitted), a start edge for each row
that entered.

With ``at_end`` (a consumer reads only the final snapshot: SQL over event time without a live view,
as a grouped aggregate without a TRIGGER fires only at end of input) no tick is closed on the way:
the changes are kept, punctuations are held back, and at end of input every change is applied as one
tick, the last input tick, so ``f`` runs once. The final snapshot is the same; the changelog holds the
final rows only, stamped with the last input tick.
"""

from __future__ import annotations

import heapq
import math
from collections import Counter

import numpy as np
import pyarrow as pa

from ..core.batch import EventBatch
from ..core.errors import PlanError
from ..core.time import INFINITY
from .base import Operator

BULK = 2  # a heap entry's "delta" when its last item is a list of rows, each inserted (+1) at its tick


class _NaN(float):
    """The one NaN rows hold (:data:`NAN`): equal to itself as a tuple item (the same object), with one
    hash; a checkpoint restores it as that object (a plain NaN unpickled is another object, and a row
    holding it no longer matched its retraction)."""

    __slots__ = ()

    def __reduce__(self):
        return (_the_nan, ())


def _the_nan():
    return NAN


NAN = _NaN("nan")


class _NegativeZero(float):
    """-0.0 as an item of a row kept in a multiset of rows: a key apart from 0.0's (-0.0 == 0.0, so a row
    of -0.0 and one of 0.0 were one row counted twice, and both came out with the first one's sign),
    while ordered as 0.0 by ``<`` and ``>``. Pickled as itself (checkpoints)."""

    __slots__ = ()

    def __eq__(self, other):
        return type(other) is _NegativeZero

    def __ne__(self, other):
        return type(other) is not _NegativeZero

    def __hash__(self):
        return 0x2D30  # not hash(0.0)

    def __reduce__(self):
        return (_the_negative_zero, ())


def _the_negative_zero():
    return NEGATIVE_ZERO


NEGATIVE_ZERO = _NegativeZero(-0.0)


def partition_key(row: tuple, positions) -> tuple:
    """The values of ``row`` at ``positions`` as a partition's key: NEGATIVE_ZERO as 0.0, NaN as NAN."""
    return tuple(0.0 if row[i] is NEGATIVE_ZERO else NAN if row[i] != row[i] else row[i] for i in positions)


def row_values(column: pa.Array, signed_zeros: bool = False) -> list:
    """A column's Python values, every NaN the same object, so rows holding NaN compare equal (a
    retraction finds its insert, NaN partitions are one partition), as SQL's NaN = NaN; with
    ``signed_zeros``, every -0.0 is :data:`NEGATIVE_ZERO` (a row apart from the same row with 0.0)."""
    values = column.to_pylist()
    if pa.types.is_floating(column.type):
        if signed_zeros and _has_negative_zero(column):
            return [NAN if v != v else NEGATIVE_ZERO if v == 0 and math.copysign(1.0, v) < 0 else v for v in values]
        return [NAN if v != v else v for v in values]
    return values


def _has_negative_zero(column) -> bool:
    """Whether a float column holds -0.0 (one vectorised pass: most hold none, and skip the per-value test)."""
    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    for chunk in chunks:
        v = chunk.fill_null(1.0).to_numpy(zero_copy_only=False) if chunk.null_count else chunk.to_numpy(False)
        if bool(np.any(np.signbit(v) & (v == 0))):
            return True
    return False


class TickedChanges(Operator):
    """Turns input events into a heap of per-tick row changes (+1 at a start, -1 at an end) and
    hands every completed tick to ``_close(bound)``; TopK, window functions and ROW_NUMBER share it.
    A subclass that sets ``bulk_inserts`` takes a batch of start edges as one entry per tick
    (``BULK``, a list of rows) instead of one entry per row."""

    columnar = False  # subclasses that keep start edges in Arrow until end of input set it (``_keep_in_arrow``)

    bulk_inserts = False
    # rows of -0.0 kept apart from rows of 0.0 (NEGATIVE_ZERO), each emitted with its own sign; a partition
    # key is read with partition_key (-0.0 and 0.0 are one partition)
    signed_zeros = True

    def __init__(self, names: list[str], at_end: bool = False):
        super().__init__()
        self.names = list(names)
        self.changes: list[tuple[int, int, int, tuple]] = []  # heap of (tick, seq, +1/-1, row)
        self._seq = 0
        self.at_end = at_end  # apply every change at end of input, as one tick (module docstring)
        self.last: int | None = None  # the last input tick (at_end)

    def _closing(self, bound: int) -> None:
        if not self.at_end:
            self._close(bound)

    def _close_at_end(self) -> None:
        """Every kept change moved to the last input tick, then applied (``at_end``)."""
        if self.changes:
            last = self.last if self.last is not None else 0
            self.changes = [(last, seq, delta, row) for _, seq, delta, row in self.changes]
            heapq.heapify(self.changes)
        self._close(INFINITY)

    def admit(self, batch: EventBatch) -> EventBatch:
        """The part of a (compacted) batch worth keeping; all of it by default."""
        return batch

    def _close(self, bound: int) -> None:
        raise NotImplementedError

    def _push(self, tick: int, delta: int, row: tuple) -> None:
        self._seq += 1
        heapq.heappush(self.changes, (tick, self._seq, delta, row))

    def on_batch(self, batch: EventBatch) -> None:
        batch = batch.compact()
        if len(batch) == 0:
            return
        batch = self.admit(batch)
        if len(batch) == 0:
            return
        sync, other = batch.sync, batch.other
        self.last = int(sync[-1]) if self.last is None else max(self.last, int(sync[-1]))
        self._closing(int(sync[0]))  # every tick before this batch's first is complete
        for n in self.names:  # a list is no key of the multiset of rows
            if pa.types.is_nested(batch.columns[n].type):
                raise PlanError(f"ranking or DISTINCT ON rows with a LIST or STRUCT column ({n}) is not supported")
        rows = list(zip(*[row_values(batch.columns[n], self.signed_zeros) for n in self.names], strict=True))
        if self.bulk_inserts and bool((other == INFINITY).all()):
            bounds = np.flatnonzero(np.diff(sync)) + 1
            starts, stops = [0, *bounds.tolist()], [*bounds.tolist(), len(rows)]
            for lo, hi in zip(starts, stops, strict=True):
                self._seq += 1
                heapq.heappush(self.changes, (int(sync[lo]), self._seq, BULK, rows[lo:hi]))
            self._closing(int(sync[-1]))
            return
        for t, o, row in zip(sync.tolist(), other.tolist(), rows, strict=True):
            if o == INFINITY:
                self._push(t, 1, row)
            elif o < t:
                self._push(t, -1, row)
            else:
                self._push(t, 1, row)
                self._push(o, -1, row)
        self._closing(int(sync[-1]))

    def on_punctuation(self, time: int) -> None:
        if self.at_end:
            return  # held back: the rows come out at end of input, at the last input tick
        self._close(time)
        self.emit_punctuation(time)

    def on_completed(self) -> None:
        if self.at_end:
            self._close_at_end()
        else:
            self._close(INFINITY)
        self.emit_completed()

    def _keep_in_arrow(self, batch: EventBatch) -> int | None:
        """At end of input over start edges only (``self.columnar``): keep the batch's rows in Arrow
        (``self.kept``) and return how many; None when the batch must take the per-row way
        (``super().on_batch``): not columnar, or this batch holds other edges (then columnar mode ends)."""
        if not self.columnar:
            return None
        batch = batch.compact()
        if len(batch) == 0:
            return 0
        if not bool((batch.other == INFINITY).all()):
            self._leave_columnar()
            return None
        self.last = int(batch.sync[-1]) if self.last is None else max(self.last, int(batch.sync[-1]))
        self.kept.append(pa.table({n: batch.columns[n] for n in self.names}))
        return len(batch)


class RecomputedSnapshot(TickedChanges):
    """Keeps the input snapshot; subclasses give ``recompute()`` (the new output rows)."""

    bulk_inserts = True

    def __init__(self, schema: pa.Schema, out_schema: pa.Schema, at_end: bool = False):
        super().__init__(schema.names, at_end)
        self.schema, self.out_schema = schema, out_schema
        self.snapshot_rows: Counter = Counter()
        self.output: list[tuple] = []  # the output rows emitted and alive
        self.started: dict[tuple, list[int]] = {}  # output row -> start times of its emitted copies

    # -- hooks ------------------------------------------------------------------------------
    def matters(self, row: tuple) -> bool:
        """Whether a change of ``row`` can change the output."""
        return True

    def recompute(self) -> list[tuple]:
        raise NotImplementedError

    def _close(self, bound: int) -> None:
        """Apply and emit every tick before ``bound``."""
        out_sync, out_other, out_rows = [], [], []
        while self.changes and self.changes[0][0] < bound:
            tick = self.changes[0][0]
            moved = False
            while self.changes and self.changes[0][0] == tick:
                _, _, delta, row = heapq.heappop(self.changes)
                if delta == BULK:  # a list of inserted rows
                    self.snapshot_rows.update(row)
                    moved = moved or any(map(self.matters, row))
                    continue
                self.snapshot_rows[row] += delta
                if self.snapshot_rows[row] == 0:
                    del self.snapshot_rows[row]
                moved = moved or self.matters(row)
            if moved:
                self._emit_difference(tick, self.recompute(), out_sync, out_other, out_rows)
        self._emit_rows(out_sync, out_other, out_rows)

    def _emit_rows(self, out_sync: list, out_other: list, out_rows: list) -> None:
        if out_rows:
            cols = {
                n: pa.array([r[i] for r in out_rows], self.out_schema.field(n).type)
                for i, n in enumerate(self.out_schema.names)
            }
            self.emit(EventBatch(np.array(out_sync, np.int64), np.array(out_other, np.int64), cols))

    def _emit_difference(self, tick: int, new_output: list[tuple], out_sync, out_other, out_rows) -> None:
        self._emit_changes(tick, self.output, new_output, out_sync, out_other, out_rows)
        self.output = new_output

    def _emit_changes(self, tick: int, old_output: list, new_output: list, out_sync, out_other, out_rows) -> None:
        """An end edge for each output row that left (a retraction of the copy emitted last), a start
        edge for each row that entered."""
        old, new = Counter(old_output), Counter(new_output)
        for row, n in (old - new).items():
            for _ in range(n):
                out_sync.append(tick)
                out_other.append(self.started[row].pop())
                out_rows.append(row)
        for row, n in (new - old).items():
            for _ in range(n):
                self.started.setdefault(row, []).append(tick)
                out_sync.append(tick)
                out_other.append(INFINITY)
                out_rows.append(row)

    # -- checkpoints ------------------------------------------------------------------------
    def snapshot(self) -> dict:
        return {
            "rows": list(self.snapshot_rows.items()),
            "output": list(self.output),
            "started": {k: list(v) for k, v in self.started.items()},
            "changes": list(self.changes),
            "seq": self._seq,
            "last": self.last,
        }

    def restore(self, state: dict) -> None:
        self.last = state.get("last")
        self.snapshot_rows = Counter(dict(state["rows"]))
        self.output = list(state["output"])
        self.started = {k: list(v) for k, v in state["started"].items()}
        self.changes = list(state["changes"])
        heapq.heapify(self.changes)
        self._seq = state["seq"]
