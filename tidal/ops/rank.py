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
"""

from __future__ import annotations

import heapq
from collections import Counter

import numpy as np
import pyarrow as pa

from ..core.batch import EventBatch
from ..core.time import INFINITY
from .recomputed import TickedChanges
from .topk import row_order


class _Partition:
    __slots__ = ("rows", "window", "started")

    def __init__(self):
        self.rows: Counter = Counter()  # the partition's snapshot (a multiset of rows)
        self.window: list[tuple] = []  # rows numbered 1.. len(window), as emitted
        self.started: dict[tuple, list[int]] = {}  # (row, number) -> start times of its emitted copies


class RowNumberOp(TickedChanges):
    """Each partition's rows numbered in order, up to ``limit`` (see the module docstring)."""

    name = "RowNumber"

    def __init__(
        self,
        schema: pa.Schema,
        partition: list[str],
        order: list[tuple[str, bool, bool]],
        limit: int | None,
        number: str,
        start_edges_only: bool = False,
    ):
        super().__init__(schema.names)
        self.out_schema = schema.append(pa.field(number, pa.int64()))
        self.part = [self.names.index(p) for p in partition]
        positions = [(self.names.index(n), desc, bool(nf)) for n, desc, nf in order]
        self.key = row_order(positions, len(self.names))
        self.limit = limit
        self.prune = start_edges_only and limit is not None
        self.partitions: dict[tuple, _Partition] = {}
        keys = ", ".join(f"{n} {'desc' if d else 'asc'}" for n, d, _ in order) or "(all columns)"
        self.variant = f"partition by {', '.join(partition) or '()'}; order by {keys}; numbers up to {limit}"

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
                part = tuple(row[i] for i in self.part)
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
        }

    def restore(self, state: dict) -> None:
        self.partitions = {}
        for part, rows, window, started in state["partitions"]:
            s = self.partitions[part] = _Partition()
            s.rows = Counter(dict(rows))
            s.window = list(window)
            s.started = {k: list(v) for k, v in started.items()}
        self.changes = list(state["changes"])
        heapq.heapify(self.changes)
        self._seq = state["seq"]
