"""Window columns (``window_start``/``window_end``) for tumbling and hopping windows.

Temporal semantics: lifetimes are unchanged, unlike the windows of :mod:`tidal.ops.lifetime`,
which move them. Each row stays alive exactly when it was and carries the bounds of the window
holding its time (under a hop, one copy per window holding it); the window end is the event-time
field a trigger on the watermark waits for. Details: :class:`TumbleOp`. ``align="end"``
(Trill's ``TumblingWindowLifetime``/``HoppingWindowLifetime``) holds a time ``t`` in the windows
``(w - length, w]`` with ``w`` on the grid instead, so a time on the grid closes its window.

:class:`WindowRowsOp` goes the other way for a window aggregate's results (SQL's ``GROUP BY
window_start, window_end`` run on the engine's windows): each result interval, one window of a
tumbling window or one hop of a hopping one, becomes a row that starts at its window's end and
never ends, with that window's bounds as columns, which is when the window's value is final.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from ..core.batch import EventBatch
from ..core.errors import InternalError
from ..core.time import INFINITY, align_up
from .base import Operator


class TumbleOp(Operator):
    """Adds ``window_start``/``window_end`` from the event time; lifetimes are unchanged.

    Tumbling windows are ``[offset + k*length, offset + (k+1)*length)`` (start inclusive, end
    exclusive). With ``hop`` (``hop(...)``), windows of ``length`` start every ``hop``, and a row
    is copied once into every window containing its time (in place, so the stream stays in
    time order). The window end becomes the row's *event time field* (what ``TRIGGER ON
    WATERMARK`` waits for when grouping by it), while the row keeps its own time in the
    stream, so a trigger can also materialise a window's value before the window ends.

    ``align="end"``: windows are ``(w - length, w]`` for window ends ``w = offset + k*hop`` (``k*length``
    when tumbling): ``t`` is in the windows whose end is the grid point at or after ``t`` and the next
    ones while ``w - length < t`` (Trill's convention: an event's start moves *up* to the grid).
    """

    name = "Tumble"

    def __init__(self, length: int, offset: int, hop: int | None = None, align: str = "start"):
        super().__init__()
        if align not in ("start", "end"):
            raise InternalError(f"window align is 'start' or 'end', got {align!r}")
        self.length, self.offset, self.hop, self.align = length, offset, hop, align
        tail = "" if align == "start" else ", align end"
        if hop is None:
            self.variant = f"length {length} us, offset {offset} us{tail}"
        else:
            self.name = "Hop"
            self.variant = f"length {length} us every {hop} us, offset {offset} us{tail}"

    def window_end(self, t: np.ndarray) -> np.ndarray:
        if self.align == "end":
            return align_up(t, self.length, self.offset)
        return (t - self.offset) // self.length * self.length + self.offset + self.length

    def on_batch(self, batch: EventBatch) -> None:
        dense = batch.compact()
        if self.hop is None:
            end = self.window_end(dense.sync)
        elif self.align == "end":
            # the first window end at or after t, then later ones while the window still holds t
            first = align_up(dense.sync, self.hop, self.offset)
            copies = -(-self.length // self.hop)
            rows = np.repeat(np.arange(len(dense)), copies)
            end = first[rows] + np.tile(np.arange(copies), len(dense)) * self.hop
            keep = end - self.length < dense.sync[rows]
            rows, end = rows[keep], end[keep]
            dense = dense.take(rows)
        else:
            # the latest window start at or before t, then earlier ones while the window still holds t
            last = (dense.sync - self.offset) // self.hop * self.hop + self.offset
            copies = -(-self.length // self.hop)
            rows = np.repeat(np.arange(len(dense)), copies)
            starts = last[rows] - np.tile(np.arange(copies), len(dense)) * self.hop
            keep = starts + self.length > dense.sync[rows]
            rows, starts = rows[keep], starts[keep]
            dense = dense.take(rows)
            end = starts + self.length
        cols = dict(dense.columns)
        cols["window_start"] = pa.array(end - self.length, pa.int64()).cast(pa.timestamp("us"))
        cols["window_end"] = pa.array(end, pa.int64()).cast(pa.timestamp("us"))
        self.emit(dense.replace(columns=cols))


class WindowRowsOp(Operator):
    """A window aggregate's results as rows, each a start edge at its window's end.

    The input holds the results of ``tumbling_window(length)`` or ``hopping_window(length, step)``
    followed by an aggregate, as intervals of exactly ``step`` ticks (``step == length`` for a
    tumbling window): a result over ``[e - step, e)`` is the value of the window ``[e - length, e)``.
    Each becomes ``[e, INFINITY)`` with the columns named in ``columns`` (``window_start``,
    ``window_end`` as ``timestamp[us]``) added. Every time moves forward by ``step``, so the output
    stays in time order and a punctuation ``p`` becomes ``p + step``. An interval of any other
    length is an internal error (the plan chose this operator for a window aggregate).

    After windows with ``align="end"`` a result over ``[w, w + step)`` is the value of the window
    ``(w - length, w]``: it becomes ``[w, INFINITY)`` (times and punctuations are unchanged).
    """

    name = "WindowRows"

    def __init__(self, length: int, step: int, columns: tuple[str, ...], align: str = "start"):
        super().__init__()
        self.length, self.step, self.columns = length, step, tuple(columns)
        self.shift = step if align == "start" else 0  # how far a result's start is from its window's end
        tail = "" if align == "start" else " (align end)"
        self.variant = f"window length {length}, results every {step}{tail}; adds {', '.join(columns)}"

    def on_batch(self, batch: EventBatch) -> None:
        dense = batch.compact()
        n = len(dense)
        if n == 0:
            return
        if np.any(dense.other - dense.sync != self.step):
            raise InternalError(f"WindowRows expects window results lasting {self.step} ticks")
        end = dense.sync + self.shift
        cols = dict(dense.columns)
        for name in self.columns:
            value = end - self.length if name == "window_start" else end
            cols[name] = pa.array(value, pa.int64()).cast(pa.timestamp("us"))
        self.emit(dense.replace(sync=end, other=np.full(n, INFINITY, np.int64), columns=cols))

    def on_punctuation(self, time: int) -> None:
        self.emit_punctuation(INFINITY if time >= INFINITY - self.shift else time + self.shift)
