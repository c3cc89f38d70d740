"""ROW_NUMBER() OVER (PARTITION BY p ORDER BY o), optionally cut to the first ``limit`` rows: a Top-N
per partition over a changing result.

Temporal semantics: at every instant ``T``, the rows of the input snapshot at ``T`` are split by the
partition columns; each partition's rows are ordered by the ORDER BY keys (each ascending or descending,
nulls last unless ``NULLS FIRST``), rows equal on the keys by all their columns (ascending, nulls last,
as ``tidal.ops.topk`` orders them), and numbered from 1. The output snapshot at ``T`` holds each row
with its number, for numbers up to ``limit`` (all when ``limit`` is None). Which of several rows tied on
the ORDER BY keys gets the smaller number therefore depends only on the snapshot.

The input is start edges (inserts), end edges (retractions) and intervals. A tick ``t`` is complete
once a later tick or a punctuation beyond it arrives; then its changes are applied to each partition's
snapshot and, for each partition whose numbered window they can have changed, the window is recomputed
and the difference emitted at ``t``: an end edge for every (row, number) that left, a start edge for
every one that entered (a row whose number changes leaves under the old number and enters under the
new). A change that sorts after a full window's last row changes nothing and costs no recomputation.
When the input is start edges only and there is a limit, a row outside its partition's window can never
enter it later, so only the window's rows are kept.

With ``at_end`` (a consumer that reads only the final snapshot, see :mod:`.recomputed`) the numbers are
given once, at end of input, at the last input tick. Start edges of flat, non-floating columns with a limit
are then kept as Arrow batches and numbered by one sort per partition order (Arrow's, in the same order as
the tuples: ``tidal.ops.topk.order_indices``), cut to each partition's first ``limit`` rows whenever the
kept rows double, so the state stays one window per partition; other input takes the per-row path.
"""

from __future__ import annotations

import heapq
from collections import Counter

import numpy as np
import pyarrow as pa

from ..core.batch import EventBatch
from ..core.time import INFINITY
from .recomputed import TickedChanges, partition_key
from .topk import order_indices, row_order
from .window_functions import _changes

KEEP_AT_LEAST = 1 << 18  # rows kept (at_end) before the first cut to each partition's window


class _Partition:
    __slots__ = ("rows", "window", "started")

    def __init__(self):
        self.rows: Counter = Counter()  # the partition's snapshot (a multiset of rows)
        self.window: list[tuple] = []  # rows numbered 1.. len(window), as emitted
        self.started: dict[tuple, list[int]] = {}  # (row, number) -> start times of its emitted copies


class RowNumberOp(TickedChanges):
    """Each partition's rows numbered in order, up to ``limit`` (see the module docstring)."""

    name = "RowNumber"
    keep_at_least = KEEP_AT_LEAST  # (at_end, in Arrow) rows kept before the first cut

    def __init__(
        self,
        schema: pa.Schema,
        partition: list[str],
        order: list[tuple[str, bool, bool]],
        limit: int | None,
        number: str,
        start_edges_only: bool = False,
        at_end: bool = False,
    ):
        super().__init__(schema.names, at_end)
        self.out_schema = schema.append(pa.field(number, pa.int64()))
        self.part = [self.names.index(p) for p in partition]
        positions = [(self.names.index(n), desc, bool(nf)) for n, desc, nf in order]
        self.key = row_order(positions, len(self.names))
        self.limit = limit
        self.prune = start_edges_only and limit is not None
        self.partitions: dict[tuple, _Partition] = {}
        keys = ", ".join(f"{n} {'desc' if d else 'asc'}" for n, d, _ in order) or "(all columns)"
        self.variant = f"partition by {', '.join(partition) or '()'}; order by {keys}; numbers up to {limit}"
        self.schema = schema
        self.partition_names, self.order = list(partition), list(order)
        flat = all(not (pa.types.is_nested(f.type) or pa.types.is_floating(f.type)) for f in schema)
        self.columnar = at_end and self.prune and flat  # numbered in Arrow at end of input
        self.kept: list[pa.Table] = []  # (columnar) start edges not yet numbered
        self.kept_rows = 0
        self.cut_rows = 0  # rows left by the last cut
        if at_end:
            self.variant += "; numbered once at end of input" + (" (Arrow sort)" if self.columnar else "")

    # -- at end of input, in Arrow ---------------------------------------------------------------
    def on_batch(self, batch: EventBatch) -> None:
        kept = self._keep_in_arrow(batch)
        if kept is None:
            return super().on_batch(batch)
        self.kept_rows += kept
        if self.kept_rows >= max(2 * self.cut_rows, self.keep_at_least):
            self._cut()

    def _windows(self) -> tuple[pa.Table, np.ndarray]:
        """The kept rows cut to each partition's first ``limit``, and each one's number."""
        table = pa.concat_tables(self.kept).combine_chunks() if self.kept else self.schema.empty_table()
        n = table.num_rows
        if n == 0 or self.limit == 0:
            return table.slice(0, 0), np.zeros(0, np.int64)
        order = [(p, False, False) for p in self.partition_names] + self.order
        index = order_indices(table, order).to_numpy()
        ordered = table.take(index)
        new_part = _changes(ordered, tuple(self.partition_names), n)
        pos = np.arange(n)
        number = pos - np.maximum.accumulate(np.where(new_part, pos, 0)) + 1
        keep = number <= self.limit
        return ordered.filter(pa.array(keep)), number[keep]

    def _cut(self) -> None:
        table, _ = self._windows()
        self.kept, self.kept_rows = [table], table.num_rows
        self.cut_rows = table.num_rows

    def _leave_columnar(self) -> None:
        """Input that is not start edges: the kept rows join the per-row changes (one tick at the end)."""
        self.columnar = False
        for table in self.kept:
            rows = list(zip(*[table.column(n).to_pylist() for n in self.names], strict=True))
            for row in rows:
                self._push(self.last or 0, 1, row)
        self.kept, self.kept_rows = [], 0

    def on_completed(self) -> None:
        if not self.columnar:
            return super().on_completed()
        table, number = self._windows()
        self.kept, self.kept_rows = [], 0
        if table.num_rows:
            cols = {n: table.column(n).combine_chunks() for n in self.names}
            cols[self.out_schema.names[-1]] = pa.array(number, pa.int64())
            at = np.full(table.num_rows, self.last, np.int64)
            self.emit(EventBatch(at, np.full(table.num_rows, INFINITY, np.int64), cols))
        self.emit_completed()

    def _reaches_window(self, state: _Partition, row: tuple) -> bool:
        if self.limit == 0:
            return False
        if self.limit is None or len(state.window) < self.limit:
            return True
        return self.key(row) <= self.key(state.window[-1])

    def _close(self, bound: int) -> None:
        """Apply and emit every tick before ``bound``."""
        out: tuple[list, list, list] = ([], [], [])
        while self.changes and self.changes[0][0] < bound:
            tick = self.changes[0][0]
            dirty: dict[tuple, _Partition] = {}
            while self.changes and self.changes[0][0] == tick:
                _, _, delta, row = heapq.heappop(self.changes)
                part = partition_key(row, self.part)
                state = self.partitions.get(part)
                if state is None:
                    state = self.partitions[part] = _Partition()
                if delta > 0 and self.prune and not self._reaches_window(state, row):
                    continue  # start edges only: it can never be numbered within the limit
                state.rows[row] += delta
                if state.rows[row] == 0:
                    del state.rows[row]
                if part not in dirty and self._reaches_window(state, row):
                    dirty[part] = state
            for part, state in dirty.items():
                self._recompute(part, state, tick, out)
        if out[2]:
            sync, other, rows = out
            cols = {f.name: pa.array([r[i] for r in rows], f.type) for i, f in enumerate(self.out_schema)}
            self.emit(EventBatch(np.array(sync, np.int64), np.array(other, np.int64), cols))

    def _recompute(self, part: tuple, state: _Partition, tick: int, out) -> None:
        rows = list(state.rows.elements())
        if self.limit is None:
            ranked = sorted(rows, key=self.key)
        else:
            ranked = heapq.nsmallest(self.limit, rows, key=self.key)
        if self.prune:
            state.rows = Counter(ranked)
        old = Counter((row, i + 1) for i, row in enumerate(state.window))
        new = Counter((row, i + 1) for i, row in enumerate(ranked))
        sync, other, rows_out = out
        for item, n in (old - new).items():
            for _ in range(n):
                sync.append(tick)
                starts = state.started[item]
                other.append(starts.pop())
                if not starts:
                    del state.started[item]
                rows_out.append((*item[0], item[1]))
        for item, n in (new - old).items():
            for _ in range(n):
                state.started.setdefault(item, []).append(tick)
                sync.append(tick)
                other.append(INFINITY)
                rows_out.append((*item[0], item[1]))
        state.window = ranked
        if not state.rows and not state.window:
            del self.partitions[part]

    def snapshot(self) -> dict:
        return {
            "partitions": [
                (part, list(s.rows.items()), list(s.window), {k: list(v) for k, v in s.started.items()})
                for part, s in self.partitions.items()
            ],
            "changes": list(self.changes),
            "seq": self._seq,
            "last": self.last,
            "columnar": self.columnar,
            "kept": [list(zip(*[t.column(n).to_pylist() for n in self.names], strict=True)) for t in self.kept],
        }

    def restore(self, state: dict) -> None:
        self.last, self.columnar = state.get("last"), state.get("columnar", False)
        kept = [r for rows in state.get("kept", []) for r in rows]
        self.kept = [pa.table({n: pa.array([r[i] for r in kept], self.schema.field(n).type)
                               for i, n in enumerate(self.names)})] if kept else []  # fmt: skip
        self.kept_rows = self.cut_rows = len(kept)
        self.partitions = {}
        for part, rows, window, started in state["partitions"]:
            s = self.partitions[part] = _Partition()
            s.rows = Counter(dict(rows))
            s.window = list(window)
            s.started = {k: list(v) for k, v in started.items()}
        self.changes = list(state["changes"])
        heapq.heapify(self.changes)
        self._seq = state["seq"]
