"""Union: the temporal merge of two streams.

Semantics: the snapshot of the result at every instant is the multiset union of the two
inputs' snapshots. Physically, events from both sides come out in non-decreasing sync time:
each side's events are held until the other side has progressed as far (by data or by a
punctuation), then merged. The output punctuation is the smaller of the two sides'; the
result completes when both inputs have completed.
"""

from __future__ import annotations

import numpy as np

from ..core.batch import EventBatch, concat_batches
from ..core.time import INFINITY, MIN_TIME
from .base import Operator, two_ports


class UnionOp(Operator):
    name = "Union"
    variant = "temporal merge"

    @property
    def ports(self):
        return two_ports(self)

    def __init__(self):
        super().__init__()
        self.pending: list[list[EventBatch]] = [[], []]
        self.progress = [MIN_TIME, MIN_TIME]
        self.punctuation = [MIN_TIME, MIN_TIME]
        self.completed = [False, False]
        self.last_punctuation = MIN_TIME

    def on_side_batch(self, side: int, batch: EventBatch) -> None:
        batch = batch.compact()
        if len(batch) == 0:
            return
        self.pending[side].append(batch)
        self.progress[side] = max(self.progress[side], int(batch.sync[-1]))
        self._release()

    def on_side_punctuation(self, side: int, time: int) -> None:
        self.progress[side] = max(self.progress[side], time)
        self.punctuation[side] = max(self.punctuation[side], time)
        self._release()
        low = min(self.punctuation)
        if low > self.last_punctuation:
            self.last_punctuation = low
            self.emit_punctuation(low)

    def on_side_flush(self, side: int) -> None:
        self.emit_flush()

    def on_side_completed(self, side: int) -> None:
        self.completed[side] = True
        self.progress[side] = INFINITY
        self.punctuation[side] = INFINITY
        self._release()
        if all(self.completed):
            self.emit_completed()

    def _release(self) -> None:
        bound = min(self.progress)
        parts = []
        for side in (0, 1):
            if not self.pending[side]:
                continue
            whole = concat_batches(self.pending[side])
            cut = len(whole) if bound >= INFINITY else int(np.searchsorted(whole.sync, bound, side="right"))
            if cut:
                parts.append(whole.slice(0, cut))
            self.pending[side] = [whole.slice(cut, len(whole))] if cut < len(whole) else []
        if not parts:
            return
        merged = concat_batches(parts)
        if len(parts) > 1:
            merged = merged.take(np.argsort(merged.sync, kind="stable"))
        self.emit(merged)

    def snapshot(self) -> dict:
        return {
            "pending": [[b.to_record_batch(with_key=True) for b in side] for side in self.pending],
            "progress": list(self.progress),
            "punctuation": list(self.punctuation),
            "completed": list(self.completed),
            "last_punctuation": self.last_punctuation,
        }

    def restore(self, state: dict) -> None:
        self.pending = [[EventBatch.from_record_batch(rb) for rb in side] for side in state["pending"]]
        self.progress = list(state["progress"])
        self.punctuation = list(state["punctuation"])
        self.completed = list(state["completed"])
        self.last_punctuation = state["last_punctuation"]
