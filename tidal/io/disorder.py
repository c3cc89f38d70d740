"""Out-of-order input: disorder policies, generated punctuations, and the unsorted ingress.

Semantics (one reorder latency ``L``):

* The *high watermark* is the largest sync time seen so far in arrival order.
* Punctuations are generated at ``high watermark - L``: after every event (the default),
  after every ``punctuate_every_events`` events, or, with ``punctuate_every=T`` ticks, each
  time ``high watermark - L`` crosses a multiple of ``T`` (the punctuation is then that grid
  point, so windows on the same grid close cleanly). A generated punctuation applies to the
  events that arrive *after* the one that produced it.
* An event is **late** when its sync time is earlier than the last punctuation generated
  before it arrived. So an event that trails the high watermark of the events before it by
  at most ``L`` ticks is never late; one that trails it by more may be. Whether an event is
  late depends only on the arrival sequence, never on how the input is batched.
* Late events are always counted and offered as a stream of their own (original times). The
  policy says what the sorted stream does with them: ``"drop"`` leaves them out;
  ``"adjust"`` moves the event's start up to the punctuation ``P`` and *keeps its duration*:
  a point stays a point ``[P, P+1)``, an interval ``[s, e)`` becomes ``[P, P + (e - s))``, a
  start edge stays a start edge at ``P``; on a stream with a window grid (constant hop) the
  start moves to the first grid point at or after ``P`` instead, so windows stay windows;
  ``"throw"`` raises :class:`InputError` naming the row, its time, the punctuation and the
  high watermark.

With several latencies ``L1 < L2 < ...`` (the Impatience framework) each latency has its own
punctuation sequence and an event's *delay band* is the first latency for which it is not
late; events late for the largest latency follow the policy above.

The unsorted ingress reads rows exactly like the in-order one (same time fields, lambdas,
kinds, null and end checks) but does not check order and emits no punctuations: the sort
operator generates them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

import pyarrow as pa

from ..core.batch import EventBatch
from ..core.messages import Completed
from ..ops.reorder import POLICIES, DisorderPolicy, PunctuationGenerator, late_bounds_model
from .ingress import KINDS, _time_column, other_times


def disordered_messages(
    batches: Callable[[], Iterable[pa.RecordBatch]], time, end=None, kind: str = "point"
) -> Iterator:
    """Event batches in arrival order (no order check, no punctuations), then ``Completed``."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    offset = 0
    for rb in batches():
        if rb.num_rows == 0:
            continue
        yield arrival_batch(rb, time, end, kind, offset)
        offset += rb.num_rows
    yield Completed()


def arrival_batch(rb: pa.RecordBatch, time, end=None, kind: str = "point", offset: int = 0) -> EventBatch:
    """One record batch as events in arrival order (``offset``: the number of rows before it, for errors)."""
    sync = _time_column(rb, time, "time", offset)
    oth = other_times(rb, sync, offset, end=end, kind=kind)
    return EventBatch(sync, oth, {n: rb.column(i) for i, n in enumerate(rb.schema.names)})


__all__ = [
    "POLICIES",
    "DisorderPolicy",
    "PunctuationGenerator",
    "arrival_batch",
    "disordered_messages",
    "late_bounds_model",
]
