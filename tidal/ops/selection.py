"""Where, Select and SelectMany: stateless per-event operators.

Temporal semantics: each works on the payload of every event and never touches its
lifetime. ``where`` keeps the events whose payload satisfies the predicate (it sets
absence bits; the batch is compacted only when most events are gone). ``select`` maps
each payload to a new payload with the same lifetime (columns passed through unchanged
are shared, not copied). ``select_many`` maps each payload to zero or more payloads, each
with the lifetime of the event it came from. End edges are transformed like their start
edges, so a deterministic lambda keeps edge pairs matched.
"""

from __future__ import annotations

import numpy as np

from ..core.batch import EventBatch
from ..expr.compile import CompiledLambda, records_to_columns
from .base import Operator

COMPACT_BELOW = 0.25  # compact a filtered batch when fewer than this share of its events remain


class WhereOp(Operator):
    name = "Where"

    def __init__(self, predicate: CompiledLambda):
        super().__init__()
        self.predicate = predicate

    @property
    def variant(self) -> str:
        return self.predicate.describe()

    def on_batch(self, batch: EventBatch) -> None:
        keep = self.predicate.mask(batch)
        if batch.absent is not None:
            keep = keep & ~batch.absent
        kept = np.flatnonzero(keep)
        if len(kept) == 0:
            return
        if len(kept) < COMPACT_BELOW * len(keep):
            self.emit(batch.take(kept))  # few survivors: gather them rather than carry the absent ones
        else:
            self.emit(batch.with_absent(~keep))


class SelectOp(Operator):
    name = "Select"

    def __init__(self, projection: CompiledLambda):
        super().__init__()
        self.projection = projection

    @property
    def variant(self) -> str:
        return self.projection.describe()

    def on_batch(self, batch: EventBatch) -> None:
        cols = self.projection.project(batch) if self.projection.mode == "columnar" else None
        if cols is not None:
            self.emit(batch.replace(columns=cols))
            return
        dense = batch.compact()
        self.emit(dense.replace(columns=self.projection.project_rows(dense)))


class SelectManyOp(Operator):
    name = "SelectMany"

    def __init__(self, fn: CompiledLambda):
        super().__init__()
        self.fn = fn

    variant = "row mode (each row yields a list)"

    def on_batch(self, batch: EventBatch) -> None:
        dense = batch.compact()
        results = [list(r) for r in self.fn.row_results(dense)]
        counts = np.fromiter((len(r) for r in results), dtype=np.int64, count=len(results))
        if counts.sum() == 0:
            return
        index = np.repeat(np.arange(len(dense)), counts)
        flat = [x for r in results for x in r]
        base = dense.take(index)
        self.emit(base.replace(columns=records_to_columns(flat, self.fn.output_types)))
