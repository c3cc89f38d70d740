"""ORDER BY ... LIMIT/OFFSET over a changing result: the rows of each snapshot's window.

Temporal semantics: at every instant ``T`` the output snapshot holds the rows at positions
``offset .. offset + limit - 1`` of the input snapshot at ``T``, ordered by the ORDER BY keys
(each ascending or descending, nulls last unless ``NULLS FIRST``); rows equal on the keys are
ordered by all their columns (ascending, nulls last), so which of several tied rows make the
cut depends only on the snapshot. Without ORDER BY the order is that tie-break alone.

The input is start edges (inserts), end edges (retractions) and intervals (an insert now, a
retraction at the end). A tick ``t`` is complete once a later tick or a punctuation beyond it
arrives; then its changes are applied to the snapshot (a multiset of rows) and, if they can
have moved the window, the window is recomputed and the difference is emitted at ``t``: an end
edge for each row that left (a retraction of the row as emitted), a start edge for each row
that entered. A change entirely after the window's last row (the window full) moves nothing
and costs no recomputation, so a long stream whose new rows sort late is cheap; other ticks
cost a pass over the snapshot. When the input is start edges only (nothing is ever retracted),
a row outside the window can never enter it later: each tick's new rows are first cut to the
window's size by an Arrow sort (so a large relational result costs one columnar sort, not a
Python pass over every row), and the snapshot keeps only the window's rows.
"""

from __future__ import annotations

import functools
import heapq
from collections import Counter

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..core.batch import EventBatch
from ..core.time import INFINITY
from .base import Operator


def _compare_values(a, b) -> int:
    if a == b:
        return 0
    return -1 if a < b else 1


def row_order(positions: list[tuple[int, bool, bool]], width: int):
    """A sort key for row tuples: ``positions`` are (column index, descending, nulls first) for
    the ORDER BY keys; then every column ascending, nulls last."""

    keys = list(positions) + [(i, False, False) for i in range(width)]

    def compare(x: tuple, y: tuple) -> int:
        for i, desc, nulls_first in keys:
            a, b = x[i], y[i]
            if a is None or b is None:
                if a is None and b is None:
                    continue
                null_before = -1 if nulls_first else 1  # where a null goes relative to a value
                return null_before if a is None else -null_before
            c = _compare_values(a, b)
            if c:
                return -c if desc else c
        return 0

    return functools.cmp_to_key(compare)


PER_KEY_NULL_PLACEMENT = int(pa.__version__.split(".")[0]) >= 25


def order_indices(table: pa.Table, order) -> pa.Array:
    """ORDER BY's row order: each key ascending or descending, nulls last unless NULLS FIRST; rows
    tied on the keys by every (flat) column ascending, as the changelog's TopK orders them."""
    keys = [(name, "descending" if desc else "ascending", "at_start" if nf else "at_end") for name, desc, nf in order]
    keys += [
        (f.name, "ascending", "at_end")
        for f in table.schema
        if not pa.types.is_nested(f.type) and f.name not in {k[0] for k in keys}
    ]
    if PER_KEY_NULL_PLACEMENT:
        return pc.sort_indices(table, sort_keys=keys)
    # older pyarrow: one null placement for all keys (the first key's)
    return pc.sort_indices(table, sort_keys=[k[:2] for k in keys], null_placement=keys[0][2])


class TopKOp(Operator):
    """The rows ``offset .. offset + limit - 1`` of every snapshot (see the module docstring)."""

    name = "TopK"

    def __init__(
        self,
        schema: pa.Schema,
        order: list[tuple[str, bool, bool]],
        limit: int | None,
        offset: int,
        start_edges_only: bool = False,
    ):
        super().__init__()
        self.order = order
        self.prune = start_edges_only and limit is not None
        self.schema = schema
        self.names = schema.names
        positions = [(self.names.index(n), desc, bool(nulls_first)) for n, desc, nulls_first in order]
        self.key = row_order(positions, len(self.names))
        self.limit, self.offset = limit, offset
        self.snapshot_rows: Counter = Counter()
        self.window: list[tuple] = []  # rows emitted, in order
        self.started: dict[tuple, list[int]] = {}  # row -> start times of its emitted copies
        self.changes: list[tuple[int, int, int, tuple]] = []  # heap of (tick, seq, +1/-1, row)
        self._seq = 0
        keys = ", ".join(f"{n} {'desc' if d else 'asc'}" for n, d, _ in order) or "(all columns)"
        self.variant = (
            f"order by {keys}; offset {offset}, limit {limit}; window recomputed only when a change reaches it"
        )

    def _push(self, tick: int, delta: int, row: tuple) -> None:
        self._seq += 1
        heapq.heappush(self.changes, (tick, self._seq, delta, row))

    def on_batch(self, batch: EventBatch) -> None:
        batch = batch.compact()
        if len(batch) == 0:
            return
        if self.prune:
            batch = self._cut(batch)
            if len(batch) == 0:  # LIMIT 0: no row can be in the window
                return
        sync, other = batch.sync, batch.other
        self._close(int(sync[0]))  # every tick before this batch's first is complete
        rows = list(zip(*[batch.columns[n].to_pylist() for n in self.names], strict=True))
        for t, o, row in zip(sync.tolist(), other.tolist(), rows, strict=True):
            if o == INFINITY:
                self._push(t, 1, row)
            elif o < t:
                self._push(t, -1, row)
            else:
                self._push(t, 1, row)
                self._push(o, -1, row)
        self._close(int(sync[-1]))

    def _cut(self, batch: EventBatch) -> EventBatch:
        """Start edges only: each tick's rows beyond the first ``offset + limit`` (in window order)
        can never be in the window."""
        stop = self.offset + self.limit
        bounds = np.flatnonzero(np.diff(batch.sync)) + 1
        starts, ends = np.concatenate([[0], bounds]), np.concatenate([bounds, [len(batch)]])
        if all(e - s <= stop for s, e in zip(starts, ends, strict=True)):
            return batch
        table = pa.table({n: batch.columns[n] for n in self.names})
        keep = []
        for s, e in zip(starts.tolist(), ends.tolist(), strict=True):
            if e - s <= stop:
                keep.append(np.arange(s, e))
            else:
                part = order_indices(table.slice(s, e - s), self.order).to_numpy()[:stop]
                keep.append(np.sort(part) + s)
        return batch.take(np.concatenate(keep))

    def on_punctuation(self, time: int) -> None:
        self._close(time)
        self.emit_punctuation(time)

    def on_completed(self) -> None:
        self._close(INFINITY)
        self.emit_completed()

    def _close(self, bound: int) -> None:
        """Apply and emit every tick before ``bound``."""
        out_sync, out_other, out_rows = [], [], []
        while self.changes and self.changes[0][0] < bound:
            tick = self.changes[0][0]
            moved = False
            while self.changes and self.changes[0][0] == tick:
                _, _, delta, row = heapq.heappop(self.changes)
                self.snapshot_rows[row] += delta
                if self.snapshot_rows[row] == 0:
                    del self.snapshot_rows[row]
                moved = moved or self._reaches_window(row)
            if moved:
                self._recompute(tick, out_sync, out_other, out_rows)
        if out_rows:
            cols = {n: pa.array([r[i] for r in out_rows], self.schema.field(n).type) for i, n in enumerate(self.names)}
            self.emit(EventBatch(np.array(out_sync, np.int64), np.array(out_other, np.int64), cols))

    def _reaches_window(self, row: tuple) -> bool:
        """Whether a change of ``row`` can change the window: not when the window is full and the
        row sorts after its last row."""
        if self.limit == 0:  # the window is always empty
            return False
        if self.limit is None or len(self.window) < self.limit:
            return True
        return self.key(row) <= self.key(self.window[-1])

    def _recompute(self, tick: int, out_sync: list, out_other: list, out_rows: list) -> None:
        rows = list(self.snapshot_rows.elements())
        stop = None if self.limit is None else self.offset + self.limit
        ranked = sorted(rows, key=self.key) if stop is None else heapq.nsmallest(stop, rows, key=self.key)
        new_window = ranked[self.offset : stop]
        if self.prune:  # nothing is retracted: rows after the window are never needed again
            self.snapshot_rows = Counter(ranked)
        old, new = Counter(self.window), Counter(new_window)
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
        self.window = new_window

    def snapshot(self) -> dict:
        return {
            "rows": list(self.snapshot_rows.items()),
            "window": list(self.window),
            "started": {k: list(v) for k, v in self.started.items()},
            "changes": list(self.changes),
            "seq": self._seq,
        }

    def restore(self, state: dict) -> None:
        self.snapshot_rows = Counter(dict(state["rows"]))
        self.window = list(state["window"])
        self.started = {k: list(v) for k, v in state["started"].items()}
        self.changes = list(state["changes"])
        heapq.heapify(self.changes)
        self._seq = state["seq"]
