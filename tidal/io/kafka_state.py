"""The Kafka feed's bookkeeping: queued rows, per-partition offsets and watermarks (see :mod:`tidal.io.kafka`).

Rows wait in the queue until the feed's watermark (the minimum over unfinished partitions of the
largest time read, less the allowed delay) reaches them; ``take`` hands them out in (time,
partition, offset) order, chunk by chunk, updating before each chunk what ``snapshot`` reports:
per partition the first unhandled offset, the handled offsets after it with their times, and the
largest time before it.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from ..core.time import INFINITY


class FeedState:
    """The feed's bookkeeping: queued rows, per-partition offsets and watermarks (see the module docstring)."""

    def __init__(self, pos: dict, timed: bool):
        self.timed = timed
        self.emitted = pos["watermark"]
        self.end = None if pos["end"] is None else {int(p): o for p, o in pos["end"].items()}
        self.parts = sorted(int(p) for p in pos["parts"])
        self.low_, self.skip, self.high_low, self.high, self.next_off = {}, {}, {}, {}, {}
        for key, (low, skip, high_low) in pos["parts"].items():
            p = int(key)
            self.low_[p] = low
            self.skip[p] = {int(o): t for o, t in skip}
            self.high_low[p] = high_low
            known = [t for t in [high_low, *self.skip[p].values()] if t is not None]
            self.high[p] = max(known) if known else None
            self.next_off[p] = low
        self.caught_up: set[int] = set()
        self.finished: set[int] = set()
        self.tables: list[pa.Table] = []
        self.q_parts = np.zeros(0, np.int64)
        self.q_offs = np.zeros(0, np.int64)
        self.q_sync = np.zeros(0, np.int64)

    def done(self, p: int) -> bool:
        return self.end is not None and self.next_off[p] >= self.end[p]

    def all_done(self) -> bool:
        return self.end is not None and all(self.done(p) for p in self.parts)

    def watermark(self, max_delay: int):
        if not self.timed:
            return 0
        highs = [self.high[p] for p in self.parts if not self.done(p)]
        if any(h is None for h in highs):
            return self.emitted
        if not highs:
            return INFINITY
        w = min(highs) - max_delay
        return w if self.emitted is None else max(w, self.emitted)

    def low(self, p: int) -> int:
        mask = self.q_parts == p
        return int(self.q_offs[mask].min()) if mask.any() else self.next_off[p]

    def handle(self, p: int, o: int, t) -> None:
        self.skip[p][o] = t
        if t is not None:
            self.high[p] = t if self.high[p] is None else max(self.high[p], t)
        self._normalise(p)

    def _normalise(self, p: int) -> None:
        low = self.low(p)
        self.low_[p] = low
        below = [o for o in self.skip[p] if o < low]
        for o in below:
            t = self.skip[p].pop(o)
            if t is not None:
                self.high_low[p] = t if self.high_low[p] is None else max(self.high_low[p], t)

    def add(self, table: pa.Table, parts, offs, sync) -> None:
        for p in np.unique(parts).tolist():
            top = int(sync[parts == p].max())
            self.high[p] = top if self.high[p] is None else max(self.high[p], top)
        self.tables.append(table)
        self.q_parts = np.concatenate([self.q_parts, parts])
        self.q_offs = np.concatenate([self.q_offs, offs])
        self.q_sync = np.concatenate([self.q_sync, sync])

    def take(self, upto, size: int):
        """Yield (table, times) chunks of the queued rows before the watermark ``upto``, in (time,
        partition, offset) order; the bookkeeping is updated before each chunk is handed out.

        With event times only rows *before* the watermark go (rows at it wait): a partition whose
        largest time is W may still hold more rows at W, so releasing those would let the order of
        equal times depend on when messages arrived; this way the rows leave in the order of one
        global sort however the input is batched. Without event time every row (at 0) goes."""
        if upto is None or not len(self.q_sync):
            return
        ready = np.flatnonzero(self.q_sync < upto if self.timed and upto != INFINITY else self.q_sync <= upto)
        if not len(ready):
            return
        order = ready[np.lexsort((self.q_offs[ready], self.q_parts[ready], self.q_sync[ready]))]
        queued = pa.concat_tables(self.tables) if len(self.tables) > 1 else self.tables[0]
        rest = np.setdiff1d(np.arange(len(self.q_sync)), ready, assume_unique=True)
        out_parts, out_offs, out_sync = self.q_parts[order], self.q_offs[order], self.q_sync[order]
        out_table = queued.take(pa.array(order))
        # the rows not released stay queued; the released ones are handed out chunk by chunk
        self.tables = [queued.take(pa.array(rest))] if len(rest) else []
        keep_parts, keep_offs, keep_sync = self.q_parts[rest], self.q_offs[rest], self.q_sync[rest]
        touched = np.unique(out_parts).tolist()
        for start in range(0, len(order), size):
            stop = min(start + size, len(order))
            self.q_parts = np.concatenate([out_parts[stop:], keep_parts])
            self.q_offs = np.concatenate([out_offs[stop:], keep_offs])
            self.q_sync = np.concatenate([out_sync[stop:], keep_sync])
            cp, co, ct = out_parts[start:stop], out_offs[start:stop], out_sync[start:stop]
            for p in touched:
                mine = cp == p
                if not mine.any():
                    continue
                low = self.low(p)
                below = mine & (co < low)  # handled and before the first unhandled: folded into high_low
                if below.any():
                    top = int(ct[below].max())
                    self.high_low[p] = top if self.high_low[p] is None else max(self.high_low[p], top)
                for o, t in zip(co[mine & ~below].tolist(), ct[mine & ~below].tolist(), strict=True):
                    self.skip[p][o] = t
                self._normalise(p)
            yield out_table.slice(start, stop - start), ct
        self.q_parts, self.q_offs, self.q_sync = keep_parts, keep_offs, keep_sync

    def snapshot(self) -> dict:
        return {
            "watermark": self.emitted,
            "parts": {
                str(p): [self.low_[p], sorted([o, t] for o, t in self.skip[p].items()), self.high_low[p]]
                for p in self.parts
            },
            "end": None if self.end is None else {str(p): o for p, o in self.end.items()},
        }
