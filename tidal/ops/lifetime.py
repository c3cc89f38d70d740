"""Lifetime operators: they change when events are alive, never what they carry.

Semantics, on the interval view ``[s, e)`` of each event (a start edge with no end yet has
``e = INFINITY``; ``INFINITY`` is never moved):

* ``shift_lifetime(d)``: ``[s+d, e+d)``.
* ``alter_lifetime(start=f, duration=d)``: ``[f(s), f(s)+d)``; ``d`` is a constant or a
  function of ``s``; with no duration the length ``e-s`` is kept. ``f`` must be
  non-decreasing (windows, shifts); output that would go back in time is an error.
  With a duration, start edges become intervals and end edges are dropped.
* hopping/tumbling windows: ``alter_lifetime`` with ``f`` snapping ``s`` down to the hop
  grid (``offset + k*hop``), so every event lives through the windows that contain its
  start; events falling in the gaps of a window smaller than its hop are dropped.
  ``align="end"`` (Trill's ``HoppingWindowLifetime``) snaps ``s`` *up* instead: an event at
  ``t`` belongs to the windows ``(w-size, w]`` and a window's result shows from its end ``w``
  (``[up(s), up(s)+size)``; gaps are the ``t`` in no such window).
* ``clip_duration(limit)``: ``[s, min(e, s+limit))``.
* ``extend_lifetime(d)``: ``[s, e+d)``; a negative ``d`` shortens from the end and drops the
  events it empties (``tidal.ops.shorten``).
* ``quantize_lifetime(size, hop, offset)``: ``[snap(s), snap(e-1)+size)`` where ``snap``
  rounds down to the hop grid: starts move earlier, ends later. ``align="end"`` rounds up
  instead (``snap(t + hop - 1)``): a point becomes what ``hopping_window(..., align="end")`` makes.
* ``point_at_end()``: ``[e, e+1)`` for events that end (open start edges produce nothing).
* ``chop(period, offset)``: splits ``[s, e)`` at every grid point inside it, as Trill's Chop
  does; snapshots are unchanged, each output piece lies within one period. That includes
  lifetimes still open (start edges): ``[s, INFINITY)`` is the unending series of its
  one-period pieces, so what follows a chop (``clip_duration``, say) sees each of them. They
  are produced as time passes each grid point (by data or punctuation): the current piece
  is ended there by an end edge and the next opens as a start edge, until the event's own
  end edge closes the last one. When the input completes, the pieces up to the last time
  seen stand and the last stays open (a finite stream cannot carry the rest).

Empty lifetimes (``end <= start``) are dropped. Outputs that land in the future (an end
moved later) are held in a sorted buffer and released once input progress guarantees
order; punctuations are mapped through the same progress function.
"""

from __future__ import annotations

import heapq
import itertools

import numba
import numpy as np

from ..core.batch import EventBatch, concat_batches, event_kinds
from ..core.canonical import freeze
from ..core.errors import InputError, PlanError, ResourceError, describe_row
from ..core.time import INFINITY, MAX_SPAN, MIN_TIME, align_down, check_span
from ..expr.compile import rows_of
from .base import Operator, ReorderBuffer, check_time_range


def apply_time_fn(fn, times: np.ndarray) -> np.ndarray:
    """Apply a user function of a timestamp to an int64 array (vectorised when it allows)."""
    if isinstance(fn, int | np.integer):
        return np.full(len(times), int(fn), dtype=np.int64)
    try:
        out = fn(times)
        out = np.asarray(out)
        if out.shape == times.shape and out.dtype.kind in "iu":
            return out.astype(np.int64, copy=False)
        if out.shape == () and out.dtype.kind in "iu":
            return np.full(len(times), int(out), dtype=np.int64)
    except Exception:
        pass
    return np.fromiter((int(fn(int(t))) for t in times), dtype=np.int64, count=len(times))


class LifetimeOp(Operator):
    """Shared machinery: transform each batch, buffer what lands in the future, release in order.

    Subclasses implement ``transform(batch) -> EventBatch`` (events in any order) and
    ``frontier(t)``: the earliest output sync time any input at or after ``t`` can produce.
    """

    name = "Lifetime"
    reorders = True  # False when outputs are always in order and immediately releasable

    def __init__(self):
        super().__init__()
        self.buffer = ReorderBuffer()
        self.progress = MIN_TIME  # largest input sync time or punctuation seen
        self.last_out = MIN_TIME

    def frontier(self, t: int) -> int:
        return t

    def transform(self, batch: EventBatch) -> EventBatch:
        raise NotImplementedError

    def on_batch(self, batch: EventBatch) -> None:
        if len(batch):
            self.progress = max(self.progress, int(batch.sync[-1]))
        out = self.transform(batch)
        if not self.reorders and len(self.buffer) == 0:
            self._emit_ordered(out.compact())
            return
        self.buffer.push(out)
        self._release(self.frontier(self.progress))

    def _emit_ordered(self, out: EventBatch) -> None:
        if len(out) == 0:
            return
        check_time_range(out, f"{self.name} ({self.variant})")
        if int(out.sync[0]) < self.last_out or (len(out) > 1 and (np.diff(out.sync) < 0).any()):
            raise PlanError(
                f"{self.name} produced an event at sync time {int(out.sync.min())} after one at {self.last_out}: "
                "its start-time function must be non-decreasing"
            )
        self.last_out = int(out.sync[-1])
        self.emit(out)

    def _release(self, upto: int) -> None:
        ready = self.buffer.release(upto)
        if ready is not None:
            self._emit_ordered(ready)

    def on_punctuation(self, time: int) -> None:
        self.progress = max(self.progress, time)
        self._release(self.frontier(time))
        self.emit_punctuation(self.frontier(time))

    def on_completed(self) -> None:
        self._release(INFINITY)
        self.emit_completed()

    def snapshot(self) -> dict:
        return {"buffer": self.buffer.snapshot(), "progress": self.progress, "last_out": self.last_out}

    def restore(self, state: dict) -> None:
        self.buffer.restore(state["buffer"])
        self.progress = state["progress"]
        self.last_out = state["last_out"]


def _shift(times: np.ndarray, delta: int) -> np.ndarray:
    """times + delta, leaving INFINITY where it is."""
    out = times + delta
    out[times == INFINITY] = INFINITY
    return out


class ShiftLifetimeOp(LifetimeOp):
    name = "ShiftLifetime"
    reorders = False

    def __init__(self, delta: int):
        super().__init__()
        check_span(delta, "shift_lifetime: the shift")
        self.delta = int(delta)
        self.variant = f"by {self.delta}"

    def frontier(self, t: int) -> int:
        return t if t in (INFINITY, MIN_TIME) else t + self.delta

    def transform(self, batch: EventBatch) -> EventBatch:
        return batch.replace(sync=batch.sync + self.delta, other=_shift(batch.other, self.delta))


@numba.njit(cache=True)
def _grid_lifetimes(sync, other, absent_in, hop, offset, duration, gap_from, lead):
    """Windows in one pass: each start plus ``lead`` snapped down to the grid, a fixed duration, end
    edges and events in window gaps (``(s + lead - offset) % hop >= gap_from``, when ``gap_from >= 0``)
    absent."""
    n = len(sync)
    out_sync = np.empty(n, np.int64)
    out_other = np.empty(n, np.int64)
    absent = np.empty(n, np.bool_)
    any_absent = False
    for i in range(n):
        s = sync[i]
        is_end = other[i] < s
        start = (other[i] if is_end else s) + lead
        w = start - (start - offset) % hop
        out_sync[i] = w
        out_other[i] = w + duration
        a = absent_in[i] or is_end or (gap_from >= 0 and (s + lead - offset) % hop >= gap_from)
        absent[i] = a
        any_absent = any_absent or a
    return out_sync, out_other, absent, any_absent


class AlterLifetimeOp(LifetimeOp):
    """``[f(s), f(s)+d)``; ``keep`` filters events first (window gaps).

    Windows pass ``grid=(hop, offset, gap_from, lead)`` as well, so that the common case of a constant
    duration runs as one compiled pass (``start`` and ``keep`` describe the same mapping)."""

    name = "AlterLifetime"

    def __init__(self, start=None, duration=None, keep=None, label: str = "", grid=None):
        super().__init__()
        check_span(duration, "alter_lifetime: the duration")
        for value, what in zip(grid or (), ("hop", "offset"), strict=False):  # grid: hop, offset, gap, lead
            check_span(value, f"the window's {what}")
        self.grid = grid
        self.start_fn = start
        self.duration = duration
        self.keep = keep
        self.reorders = duration is None and start is not None
        self.variant = label or f"start={'same' if start is None else 'f(s)'}, duration={duration!r}"

    def frontier(self, t: int) -> int:
        if self.start_fn is None or t in (INFINITY, MIN_TIME):
            return t
        return int(apply_time_fn(self.start_fn, np.array([t], dtype=np.int64))[0])

    def transform(self, batch: EventBatch) -> EventBatch:
        if self.grid is not None and isinstance(self.duration, int | np.integer):
            hop, offset, gap_from, lead = self.grid
            absent_in = batch.absent if batch.absent is not None else np.zeros(len(batch), np.bool_)
            sync, other, absent, any_absent = _grid_lifetimes(
                batch.sync, batch.other, absent_in, hop, offset, int(self.duration), gap_from, lead
            )
            return batch.replace(sync=sync, other=other, absent=absent if any_absent else None)
        # each event's new lifetime depends on it alone: drop the absent ones first (the output is compacted anyway)
        batch = batch.compact()
        constant = isinstance(self.duration, int | np.integer) and self.duration > 0
        if batch.points and self.start_fn is None and self.keep is None and constant:
            return batch.replace(other=batch.sync + int(self.duration))  # points have no edges: [s, s+d)
        interval, start, end = event_kinds(batch.sync, batch.other)
        absent = batch.absent.copy() if batch.absent is not None else np.zeros(len(batch), bool)
        if self.keep is not None:
            absent |= ~self.keep(batch.sync)
        orig_start = np.where(end, batch.other, batch.sync)
        new_start = orig_start if self.start_fn is None else apply_time_fn(self.start_fn, orig_start)
        if self.duration is None:
            length = np.where(start, 0, batch.other - batch.sync)
            sync = np.where(end, new_start - length, new_start)  # end edge: sync = f(vs) + (ve - vs)
            other = np.where(start, INFINITY, np.where(end, new_start, new_start + length))
        else:
            dur = (
                np.full(len(batch), int(self.duration), dtype=np.int64)
                if isinstance(self.duration, int | np.integer)
                else apply_time_fn(self.duration, orig_start)
            )
            if len(dur) and (int(dur.max()) > MAX_SPAN or int(dur.min()) < -MAX_SPAN):
                i = int(np.flatnonzero((dur > MAX_SPAN) | (dur < -MAX_SPAN))[0])
                raise InputError(
                    f"{self.name}: the duration function gives {int(dur[i])} for the event at {int(orig_start[i])}, "
                    "longer than the longest supported span, 2**61 ticks"
                )
            absent |= end  # the lifetime is fixed at the start: end edges carry nothing new
            sync = new_start
            other = new_start + dur
            absent |= other <= sync
        return batch.replace(sync=sync, other=other).with_absent(absent)


class _EdgeStateOp(LifetimeOp):
    """A lifetime operator that also keeps per-open-edge state (``self.edges``) in its snapshot."""

    def snapshot(self) -> dict:
        return {**super().snapshot(), "edges": self.edges.snapshot()}

    def restore(self, state: dict) -> None:
        super().restore(state)
        self.edges.restore(state["edges"])


class ClipDurationOp(_EdgeStateOp):
    name = "ClipDuration"

    def __init__(self, limit: int):
        super().__init__()
        if limit <= 0:
            raise PlanError(f"clip_duration limit must be positive, got {limit}")
        check_span(limit, "clip_duration: the limit")
        self.limit = int(limit)
        self.variant = f"limit {self.limit}"
        self.edges = _OpenEdges()

    def transform(self, batch: EventBatch) -> EventBatch:
        interval, start, end = event_kinds(batch.sync, batch.other)
        other = np.where(interval, np.minimum(batch.other, batch.sync + self.limit), batch.other)
        out = batch.replace(other=other)
        if not (start.any() or end.any()):
            extra = self.edges.expire_before(self.progress, self._expire)
            return concat_batches([out, *extra]) if extra else out
        # edges need per-edge state: a start edge is clipped by a synthetic end edge unless
        # its real end edge comes first
        absent = out.absent.copy() if out.absent is not None else np.zeros(len(out), bool)
        extra = []
        present = out.present_mask()
        for i in np.flatnonzero((start | end) & present).tolist():
            s = int(out.sync[i])
            extra.extend(self.edges.expire_before(s, self._expire))
            if start[i]:
                self.edges.open(out, i, s + self.limit, state=s)
            elif self.edges.close(out, i) is None:
                absent[i] = True  # its clipped end was already emitted
        extra.extend(self.edges.expire_before(self.progress, self._expire))
        return concat_batches([out.with_absent(absent)] + extra)

    def _expire(self, row: EventBatch, when: int, vs: int):
        return [row.replace(sync=np.array([when]), other=np.array([vs]))], None

    def on_punctuation(self, time: int) -> None:
        extra = self.edges.expire_before(time, self._expire)
        if extra:
            self.buffer.push(concat_batches(extra))
        super().on_punctuation(time)

    def on_completed(self) -> None:
        extra = self.edges.expire_before(INFINITY, self._expire, inclusive=True)
        if extra:
            self.buffer.push(concat_batches(extra))
        super().on_completed()


MAX_CHOP_PIECES = 10_000_000  # pieces one batch of input may be cut into: more would not fit in memory


class ChopOp(_EdgeStateOp):
    name = "Chop"

    def __init__(self, period: int, offset: int = 0):
        super().__init__()
        if period <= 0:
            raise PlanError(f"chop period must be positive, got {period}")
        check_span(period, "chop: the period")
        check_span(offset, "chop: the offset")
        self.period, self.offset = int(period), int(offset)
        self.variant = f"period {self.period}, offset {self.offset}"
        self.edges = _OpenEdges()

    def _next_boundary(self, t: int) -> int:
        return int(align_down(t, self.period, self.offset)) + self.period

    def transform(self, batch: EventBatch) -> EventBatch:
        batch = batch.compact()
        interval, start, end = event_kinds(batch.sync, batch.other)
        pieces = [self._chop_intervals(batch.take(np.flatnonzero(interval)))] if interval.any() else []
        for i in np.flatnonzero(start | end).tolist():
            s = int(batch.sync[i])
            pieces.extend(self.edges.expire_before(s, self._split))
            if start[i]:
                pieces.append(batch.slice(i, i + 1))
                self.edges.open(batch, i, self._next_boundary(s), state=s)
            else:
                piece_start = self.edges.close(batch, i)
                row = batch.slice(i, i + 1)
                pieces.append(row if piece_start is None else row.replace(other=np.array([piece_start])))
        pieces.extend(self.edges.expire_before(self.progress, self._split))
        return concat_batches(pieces) if pieces else batch.slice(0, 0)

    def _split(self, row: EventBatch, when: int, piece_start: int):
        # close the current piece at the grid point and open the next one there
        closing = row.replace(sync=np.array([when]), other=np.array([piece_start]))
        opening = row.replace(sync=np.array([when]), other=np.array([INFINITY]))
        return [closing, opening], (when + self.period, when)

    def _chop_intervals(self, b: EventBatch) -> EventBatch:
        first_end = align_down(b.sync, self.period, self.offset) + self.period
        counts = np.where(b.other > first_end, (b.other - first_end - 1) // self.period + 2, 1)
        if len(counts) and counts.sum(dtype=np.float64) > MAX_CHOP_PIECES:
            i = int(np.argmax(counts))
            row = rows_of(b.slice(i, i + 1))[0]
            raise ResourceError(
                f"chop(period {self.period}) would cut the event [{int(b.sync[i])}, {int(b.other[i])}) "
                f"{{{describe_row(row._asdict())}}} into {int(counts[i]):,} pieces; at most "
                f"{MAX_CHOP_PIECES:,} pieces a batch are supported (use a longer period)"
            )
        idx = np.repeat(np.arange(len(b)), counts)
        rank = np.arange(len(idx)) - np.repeat(np.cumsum(counts) - counts, counts)
        starts = np.where(rank == 0, b.sync[idx], first_end[idx] + (rank - 1) * self.period)
        ends = np.minimum(first_end[idx] + rank * self.period, b.other[idx])
        return b.take(idx).replace(sync=starts, other=ends)

    def on_punctuation(self, time: int) -> None:
        if time < INFINITY:
            extra = self.edges.expire_before(time, self._split)
            if extra:
                self.buffer.push(concat_batches(extra))
        super().on_punctuation(time)


class ExtendLifetimeOp(LifetimeOp):
    name = "ExtendLifetime"

    def __init__(self, delta: int):
        super().__init__()
        if delta < 0:
            raise PlanError("ExtendLifetimeOp needs a non-negative amount (tidal.ops.shorten shortens)")
        check_span(delta, "extend_lifetime: the amount")
        self.delta = int(delta)
        self.variant = f"by {self.delta}"

    def transform(self, batch: EventBatch) -> EventBatch:
        interval, _, end = event_kinds(batch.sync, batch.other)
        other = np.where(interval, _shift(batch.other, self.delta), batch.other)
        sync = np.where(end, batch.sync + self.delta, batch.sync)
        return batch.replace(sync=sync, other=other)


class QuantizeLifetimeOp(LifetimeOp):
    name = "QuantizeLifetime"

    def __init__(self, size: int, hop: int, offset: int = 0, align: str = "start"):
        super().__init__()
        if size <= 0 or hop <= 0:
            raise PlanError("quantize_lifetime needs a positive size and hop")
        for value, what in ((size, "size"), (hop, "hop"), (offset, "offset")):
            check_span(value, f"quantize_lifetime: the {what}")
        self.size, self.hop, self.offset = int(size), int(hop), int(offset)
        self.lead = 0 if align == "start" else self.hop - 1  # align="end": snap up, ``snap(t + hop - 1)``
        self.variant = f"size {size}, hop {hop}, offset {offset}" + ("" if align == "start" else ", align end")

    def _snap(self, t):
        return align_down(t + self.lead, self.hop, self.offset)

    def frontier(self, t: int) -> int:
        # input at or after t: starts land at snap(t) or later, ends at snap(t-1)+size or later
        # (earlier than snap(t) when the size is smaller than the hop)
        return t if t in (INFINITY, MIN_TIME) else int(min(self._snap(t), self._snap(t - 1) + self.size))

    def _end(self, e: np.ndarray) -> np.ndarray:
        out = self._snap(e - 1) + self.size
        out[e == INFINITY] = INFINITY
        return out

    def transform(self, batch: EventBatch) -> EventBatch:
        interval, start, end = event_kinds(batch.sync, batch.other)
        vs = np.where(end, batch.other, batch.sync)
        new_vs = self._snap(vs)
        sync = np.where(end, self._end(batch.sync), new_vs)
        other = np.where(end, new_vs, np.where(start, INFINITY, self._end(batch.other)))
        return batch.replace(sync=sync, other=other)


class PointAtEndOp(LifetimeOp):
    name = "PointAtEnd"

    def transform(self, batch: EventBatch) -> EventBatch:
        interval, start, end = event_kinds(batch.sync, batch.other)
        at = np.where(end, batch.sync, batch.other)
        absent = start if batch.absent is None else (batch.absent | start)
        return batch.replace(sync=at, other=at + 1).with_absent(absent)


def _frozen_match(vs: int, key, row) -> tuple:
    """The match key of an edge; every NaN is one object (NaN != NaN kept an end edge from its start)."""
    frozen = freeze((key, *row))
    return (vs, frozen[0], frozen[1:])


class _OpenEdges:
    """Start edges still open, matched to their end edges by (start, key, payload).

    Each entry carries a due time and a small state; ``expire_before`` runs a callback for
    every entry due before a time, in due order, and the callback may re-arm it.
    """

    def __init__(self):
        self.by_match: dict[tuple, list[list]] = {}
        self.heap: list[tuple[int, int, list]] = []
        self.seq = itertools.count()

    @staticmethod
    def _match_key(batch: EventBatch, i: int, vs: int) -> tuple:
        row = rows_of(batch.slice(i, i + 1))[0]
        key = None if batch.key is None else batch.key[i].as_py()
        return _frozen_match(vs, key, row)

    def open(self, batch: EventBatch, i: int, due: int, state) -> None:
        match = self._match_key(batch, i, int(batch.sync[i]))
        entry = [due, state, batch.slice(i, i + 1), match, True]
        self.by_match.setdefault(match, []).append(entry)
        heapq.heappush(self.heap, (due, next(self.seq), entry))

    def close(self, batch: EventBatch, i: int):
        """Close the open edge matching end edge ``i``; returns its state, or None if none is open."""
        match = self._match_key(batch, i, int(batch.other[i]))
        entries = self.by_match.get(match)
        if not entries:
            return None
        entry = entries.pop(0)
        if not entries:
            del self.by_match[match]
        entry[4] = False
        return entry[1]

    def expire_before(self, t: int, callback, inclusive: bool = False) -> list[EventBatch]:
        out: list[EventBatch] = []
        while self.heap and (self.heap[0][0] < t or inclusive and self.heap[0][0] <= t):
            due, _, entry = heapq.heappop(self.heap)
            if not entry[4]:
                continue
            produced, rearm = callback(entry[2], due, entry[1])
            out.extend(produced)
            if rearm is None:
                entry[4] = False
                entries = self.by_match.get(entry[3], [])
                if entry in entries:
                    entries.remove(entry)
                    if not entries:
                        del self.by_match[entry[3]]
            else:
                entry[0], entry[1] = rearm
                heapq.heappush(self.heap, (entry[0], next(self.seq), entry))
        return out

    def snapshot(self) -> dict:
        live = [e for _, _, e in sorted(self.heap, key=lambda x: (x[0], x[1])) if e[4]]
        return {"entries": [(e[0], e[1], e[2].to_record_batch(with_key=True), e[3]) for e in live]}

    def restore(self, state: dict) -> None:
        self.__init__()
        for due, st, rb, match in state["entries"]:
            match = _frozen_match(*match)  # a NaN read back is a new object
            entry = [due, st, EventBatch.from_record_batch(rb), match, True]
            self.by_match.setdefault(match, []).append(entry)
            heapq.heappush(self.heap, (due, next(self.seq), entry))


class UnorderedLifetimeOp(Operator):
    """A per-event lifetime change applied to arrival-ordered input (before an Impatience sort):
    each event is transformed on its own, with no buffering and no order check."""

    name = "UnorderedLifetime"

    def __init__(self, inner: LifetimeOp):
        super().__init__()
        self.inner = inner
        self.variant = f"{inner.variant}; per event, before the sort"

    def on_batch(self, batch) -> None:
        out = self.inner.transform(batch)
        if out.present_count:
            check_time_range(out, f"{self.inner.name} ({self.inner.variant})")
            self.emit(out)
