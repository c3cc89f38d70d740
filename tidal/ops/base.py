"""The physical operator protocol and the pieces every operator family shares.

Operators form a push DAG. Each receives data batches (``on_batch``) and control messages
(``on_punctuation``, ``on_low_watermark``, ``on_flush``, ``on_completed``) and pushes its own
downstream. Data arrives in non-decreasing sync time; an operator's output is too.
Two-input operators expose one :class:`InputPort` per side.

Stateful operators implement ``snapshot()`` (state as Arrow/numpy data and plain values)
and ``restore(state)``; stateless ones have nothing to save.
"""

from __future__ import annotations

import weakref

import numpy as np

from ..core.batch import BatchSizer, EventBatch, concat_batches
from ..core.errors import InputError, describe_row
from ..core.time import INFINITY, LATEST, TIME_RANGE_TEXT, first_out_of_range


def check_time_range(out: EventBatch, what: str) -> None:
    """Every present event's times lie in the range of event times (``tidal.core.time``): an operator
    that would move one past it raises, naming the event, instead of wrapping around int64."""
    present = out.present_mask() if out.absent is not None else None
    sync = out.sync if present is None else out.sync[present]
    other = out.other if present is None else out.other[present]
    bad_sync = first_out_of_range(sync, latest=LATEST + 1)  # an end edge's sync time is an end time
    if bad_sync < 0 and len(sync) and int(sync.max()) == LATEST + 1:
        found = np.flatnonzero((sync == LATEST + 1) & (other >= sync))  # only end edges may stand there
        bad_sync = int(found[0]) if len(found) else -1
    bad_other = first_out_of_range(other, allow_infinity=True, latest=LATEST + 1)
    if bad_sync < 0 and bad_other < 0:
        return
    i = bad_sync if bad_sync >= 0 else bad_other
    at = int(np.flatnonzero(present)[i]) if present is not None else i
    from ..expr.compile import rows_of

    row = rows_of(out.slice(at, at + 1))[0]
    raise InputError(
        f"{what} moves the event {{{describe_row(row._asdict())}}} to sync time {int(sync[i])}, other time "
        f"{int(other[i])}: outside the range of event times {TIME_RANGE_TEXT}"
    )


class Consumer:
    """Anything that accepts a stream's messages."""

    # False for a consumer that reads only how many events are present (a count): a filter before it
    # then passes its mask on instead of gathering the kept rows' columns
    reads_payload = True
    # True for a consumer that reads every event's other time (a sink that collects them): an operator that
    # computes them on request (points: sync time + 1) may write them in a pass it makes anyway
    reads_other = False
    # True for a sink that keeps every batch as it is (to_arrow's): nothing reads a batch soon after it arrives,
    # so an operator may write a large output past the caches (non-temporal stores)
    collects = False

    def on_batch(self, batch: EventBatch) -> None:
        raise NotImplementedError

    def on_punctuation(self, time: int) -> None:
        pass

    def on_low_watermark(self, time: int) -> None:
        self.on_punctuation(time)

    def on_flush(self) -> None:
        pass

    def on_completed(self) -> None:
        pass


class Operator(Consumer):
    """A one-input operator with any number of downstream consumers (a multicast is just >1)."""

    name = "Operator"
    variant = ""

    def __init__(self):
        self.downstream: list[Consumer] = []

    # -- emission --------------------------------------------------------------------
    def payload_read(self) -> bool:
        """Whether a consumer reads the payload columns of this operator's output (a count does not)."""
        return any(getattr(d, "reads_payload", True) for d in self.downstream)

    def reads_masks(self) -> bool:
        """Whether every consumer takes the kept rows' positions (``on_rows(batch, kept)``) and gathers only
        what it reads (an aggregate): then a filter hands those on instead of gathering every field."""
        return bool(self.downstream) and all(getattr(d, "reads_masked", False) for d in self.downstream)

    def emit_rows(self, batch: EventBatch, kept: np.ndarray) -> None:
        """The events of ``batch`` at positions ``kept`` to consumers that :meth:`reads_masks`."""
        for d in self.downstream:
            d.on_rows(batch, kept)

    def emit(self, batch: EventBatch) -> None:
        if len(batch) == 0:
            return
        for d in self.downstream:
            d.on_batch(batch)

    def emit_punctuation(self, time: int) -> None:
        for d in self.downstream:
            d.on_punctuation(time)

    def emit_flush(self) -> None:
        for d in self.downstream:
            d.on_flush()

    def emit_completed(self) -> None:
        for d in self.downstream:
            d.on_completed()

    # -- default control behaviour: forward ------------------------------------------
    def on_punctuation(self, time: int) -> None:
        self.emit_punctuation(time)

    def on_flush(self) -> None:
        self.emit_flush()

    def on_completed(self) -> None:
        self.emit_completed()

    # -- state -----------------------------------------------------------------------
    def snapshot(self) -> dict:
        return {}

    def restore(self, state: dict) -> None:
        pass


class InputPort(Consumer):
    """One side of a two-input operator."""

    def __init__(self, owner, side: int):
        # the owner makes its ports when asked (``two_ports``) and does not keep them: a port held by
        # its owner would be a reference cycle, keeping a finished query alive until a collection
        self.owner = owner
        self.side = side

    def on_batch(self, batch: EventBatch) -> None:
        self.owner.on_side_batch(self.side, batch)

    def on_punctuation(self, time: int) -> None:
        self.owner.on_side_punctuation(self.side, time)

    def on_flush(self) -> None:
        self.owner.on_side_flush(self.side)

    def on_completed(self) -> None:
        self.owner.on_side_completed(self.side)


def two_ports(owner) -> tuple[InputPort, InputPort]:
    """A two-input operator's input ports (made per call: the ports hold the owner, not it them)."""
    return (InputPort(owner, 0), InputPort(owner, 1))


class OutputBuffer:
    """Holds an operator's output until a batch is full or a flush/punctuation comes.

    The batch size adapts (``BatchSizer``) to how many events arrive between flushes.
    """

    def __init__(self, op: Operator, sizer: BatchSizer | None = None):
        self.op = weakref.proxy(op)  # weak, as InputPort.owner: the operator holds its buffer
        self.sizer = sizer or BatchSizer()
        self.pending: list[EventBatch] = []
        self.count = 0
        self.since_flush = 0

    def add(self, batch: EventBatch) -> None:
        batch = batch.compact()
        n = len(batch)
        if n == 0:
            return
        self.sizer.on_events(n)
        self.since_flush += n
        self.pending.append(batch)
        self.count += n
        if self.count >= self.sizer.max_size:
            self._emit_full()

    def _emit_full(self) -> None:
        # the adaptive size says when to stop waiting for more events; events already here go out
        # together, up to the largest batch size: smaller pieces would only add per-batch work
        whole = concat_batches(self.pending)
        size = max(self.sizer.max_size, self.sizer.default)
        start = 0
        while len(whole) - start >= size:
            self.op.emit(whole.slice(start, start + size))
            start += size
        rest = whole.slice(start, len(whole)) if start < len(whole) else None
        self.pending = [rest] if rest is not None and len(rest) else []
        self.count = len(whole) - start

    def flush(self, punctuated: bool = True) -> None:
        if punctuated:
            self.sizer.on_flush(self.since_flush)
            self.since_flush = 0
        if self.pending:
            self.op.emit(concat_batches(self.pending))
        self.pending = []
        self.count = 0


class ReorderBuffer:
    """Events produced out of sync-time order, held sorted until progress allows release.

    Operators whose outputs can lie in the future (an end edge moved later, the end point
    of an interval) push them here and release everything at or before the time no later
    input can undercut.
    """

    def __init__(self):
        self.pending: EventBatch | None = None

    def __len__(self) -> int:
        return 0 if self.pending is None else len(self.pending)

    def push(self, batch: EventBatch) -> None:
        batch = batch.compact()
        if len(batch) == 0:
            return
        merged = batch if self.pending is None else concat_batches([self.pending, batch])
        if len(merged) > 1 and (np.diff(merged.sync) < 0).any():
            merged = merged.take(np.argsort(merged.sync, kind="stable"))
        self.pending = merged

    def release(self, upto: int) -> EventBatch | None:
        """Remove and return the events with sync time <= ``upto`` (sorted)."""
        if self.pending is None:
            return None
        cut = len(self.pending) if upto >= INFINITY else int(np.searchsorted(self.pending.sync, upto, side="right"))
        if cut == 0:
            return None
        out = self.pending.slice(0, cut)
        self.pending = self.pending.slice(cut, len(self.pending)) if cut < len(self.pending) else None
        return out

    def snapshot(self) -> dict:
        return {"pending": None if self.pending is None else self.pending.to_record_batch(with_key=True)}

    def restore(self, state: dict) -> None:
        rb = state.get("pending")
        self.pending = None if rb is None else EventBatch.from_record_batch(rb)


class PassThrough(Operator):
    """Forwards everything: the physical face of a source or a multicast point."""

    name = "PassThrough"

    def on_batch(self, batch: EventBatch) -> None:
        self.emit(batch)
