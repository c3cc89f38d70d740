"""Shortening lifetimes from their end: ``extend_lifetime(d)`` with ``d < 0`` (Trill's negative ExtendLifetime).

Semantics, on the interval view ``[s, e)`` of each event, with ``k = -d > 0``: the event becomes
``[s, e - k)``, and events that this empties (``e - k <= s``) vanish. Open lifetimes
(``e = INFINITY``) stay open.

Intervals are known whole when they arrive and are shortened at once. A start edge is held until
its fate is known: its end edge arrives within ``k`` ticks (the event is emptied, or becomes the
interval ``[s, e - k)``), or time passes ``s + k`` first, after which no end edge can empty it, so
the start edge is emitted and its end edge, when it comes at ``e``, is emitted at ``e - k``. Output
therefore trails input by up to ``k`` ticks: punctuations move back by ``k``. A start edge whose end
never comes is emitted when the input completes. Held start edges are part of the checkpoint.
"""

from __future__ import annotations

import numpy as np

from ..core.batch import EventBatch, concat_batches, event_kinds
from ..core.errors import PlanError
from ..core.time import INFINITY, MIN_TIME, check_span
from .lifetime import _EdgeStateOp, _OpenEdges


class ShortenLifetimeOp(_EdgeStateOp):
    """``[s, e)`` becomes ``[s, e - k)``; emptied events vanish (see the module docstring)."""

    name = "ExtendLifetime"

    def __init__(self, k: int):
        super().__init__()
        if k <= 0:
            raise PlanError(f"shortening needs a positive amount, got {k}")
        check_span(k, "extend_lifetime: the amount")
        self.k = int(k)
        self.variant = f"by {-self.k} (shortens from the end; start edges held up to {self.k} ticks)"
        self.edges = _OpenEdges()

    def frontier(self, t: int) -> int:
        return t if t in (INFINITY, MIN_TIME) else t - self.k

    def transform(self, batch: EventBatch) -> EventBatch:
        interval, start, end = event_kinds(batch.sync, batch.other)
        absent = batch.absent.copy() if batch.absent is not None else np.zeros(len(batch), bool)
        other = np.where(interval, batch.other - self.k, batch.other)
        absent |= interval & (other <= batch.sync)
        sync = batch.sync.copy()
        extra: list[EventBatch] = []
        present = ~absent
        for i in np.flatnonzero((start | end) & present).tolist():
            extra.extend(self.edges.expire_before(int(batch.sync[i]), self._release_start))
            if start[i]:
                self.edges.open(batch, i, int(batch.sync[i]) + self.k, state=int(batch.sync[i]))
                absent[i] = True  # held until its fate is known
                continue
            e, s = int(batch.sync[i]), int(batch.other[i])
            held = self.edges.close(batch, i)
            if held is None:  # its start edge was emitted: the end moves back
                sync[i] = e - self.k
            else:
                absent[i] = True
                if e - self.k > s:  # the start was still held: one interval
                    row = batch.slice(i, i + 1)
                    extra.append(row.replace(sync=np.array([s]), other=np.array([e - self.k])))
        extra.extend(self.edges.expire_before(self.progress, self._release_start))
        out = batch.replace(sync=sync, other=other).with_absent(absent)
        return concat_batches([out, *extra]) if extra else out

    @staticmethod
    def _release_start(row: EventBatch, due: int, s: int):
        return [row.replace(sync=np.array([s]), other=np.array([INFINITY]))], None

    def on_punctuation(self, time: int) -> None:
        extra = self.edges.expire_before(time, self._release_start)
        if extra:
            self.buffer.push(concat_batches(extra))
        super().on_punctuation(time)

    def on_completed(self) -> None:
        extra = self.edges.expire_before(INFINITY, self._release_start, inclusive=True)
        if extra:
            self.buffer.push(concat_batches(extra))
        super().on_completed()
