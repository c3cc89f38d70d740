"""The row of a global aggregate over no rows (SQL: ``SELECT count(*) FROM empty`` is one row, 0).

Temporal semantics: the output is the input, plus one default row (counts 0, other aggregates
NULL) as a start edge when the input's final snapshot is empty: at end of input (completion, or a
punctuation at ``INFINITY``), at the last time the input reached (an event's sync time or a
punctuation; times may be negative), or at tick 0 (where SQL's relational rows sit) when it reached
none. Only for relational input (rows that start and never end, or are retracted and replaced at one
tick), where the final snapshot is the answer; event-time aggregates keep Trill's rule that an empty
snapshot has no result.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from ..core.batch import EventBatch
from ..core.time import INFINITY
from .base import Operator


class EmptyDefaultOp(Operator):
    """Input passed on; ``row`` (one value per column) added at the end when nothing is left alive."""

    name = "EmptyDefault"

    def __init__(self, schema: pa.Schema, row: dict):
        super().__init__()
        self.schema, self.row = schema, dict(row)
        self.alive = 0  # start edges minus end edges: rows alive in the final snapshot
        self.last: int | None = None  # the latest time reached (None: none yet; 0 is no marker, times may be negative)
        self.done = False
        self.variant = "one default row when the result is empty"

    def on_batch(self, batch: EventBatch) -> None:
        dense = batch.compact()
        if len(dense):
            self.alive += int(np.count_nonzero(dense.other == INFINITY)) - int(
                np.count_nonzero(dense.other < dense.sync)
            )
            self.last = self._later(int(dense.sync[-1]))
        self.emit(batch)

    def _later(self, t: int) -> int:
        return t if self.last is None else max(self.last, t)

    def _fill(self) -> None:
        if self.done:
            return
        self.done = True
        if self.alive == 0:
            cols = {f.name: pa.array([self.row.get(f.name)], f.type) for f in self.schema}
            at = 0 if self.last is None else self.last
            self.emit(EventBatch(np.array([at], np.int64), np.array([INFINITY], np.int64), cols))

    def on_punctuation(self, time: int) -> None:
        if time >= INFINITY:
            self._fill()
        else:
            self.last = self._later(int(time))
        self.emit_punctuation(time)

    def on_completed(self) -> None:
        self._fill()
        self.emit_completed()

    def snapshot(self) -> dict:
        return {"alive": self.alive, "last": self.last, "done": self.done}

    def restore(self, state: dict) -> None:
        self.alive, self.last, self.done = state["alive"], state["last"], state["done"]
