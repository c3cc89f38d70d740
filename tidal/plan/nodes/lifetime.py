"""Lifetime nodes: shifts, windows, clips, extensions, quantization, points at ends, chops
(``tidal.ops.lifetime`` states their semantics). Each derives the properties of its output."""

from __future__ import annotations

import numpy as np

from ...core.errors import PlanError
from ...core.time import align_down
from ...ops.base import Operator
from ...ops.lifetime import (
    AlterLifetimeOp,
    ChopOp,
    ClipDurationOp,
    ExtendLifetimeOp,
    PointAtEndOp,
    QuantizeLifetimeOp,
    ShiftLifetimeOp,
    UnorderedLifetimeOp,
)
from ...ops.shorten import ShortenLifetimeOp
from ..node import PlanNode


def positive(name: str, value: int) -> int:
    if not isinstance(value, int | np.integer) or value <= 0:
        raise PlanError(f"{name} must be a positive integer number of ticks, got {value!r}")
    return int(value)


class ShiftLifetime(PlanNode):
    label = "ShiftLifetime"

    def __init__(self, input: PlanNode, delta: int):
        hop = input.props.constant_hop
        props = input.props.but(constant_hop=None if hop is None else (hop[0], hop[1] + int(delta)))
        super().__init__((input,), input.schema, props, delta=delta)

    def make(self) -> Operator:
        return ShiftLifetimeOp(self.delta)


class AlterLifetime(PlanNode):
    """``[f(s), f(s)+d)``: ``start`` maps a start time (non-decreasing), ``duration`` is an int or f(s)."""

    label = "AlterLifetime"

    def __init__(self, input: PlanNode, start=None, duration=None):
        constant = isinstance(duration, int | np.integer)
        if duration is not None and constant:
            positive("duration", duration)
        props = input.props.but(
            constant_duration=int(duration) if constant else None,
            start_edge_only=input.props.start_edge_only and duration is None,
            constant_hop=None,
            # a new start function moves events of several sync times together; a duration alone moves none
            sorted_by=input.props.sorted_by if start is None else (),
        )
        super().__init__((input,), input.schema, props, start=start, duration=duration)

    def make(self) -> Operator:
        return AlterLifetimeOp(self.start, self.duration)


ALIGNS = ("start", "end")


def check_align(align: str, what: str) -> str:
    if align not in ALIGNS:
        raise PlanError(f"{what}: align must be 'start' or 'end', got {align!r}")
    return align


def window_lead(size: int, hop: int, align: str) -> int:
    """How far ``align="end"`` moves a start before it is snapped down to the grid.

    ``align="start"`` snaps a start ``t`` down to the grid: the window ``[w, w+size)`` holding
    ``t`` shows its result from ``w`` on. ``align="end"`` (Trill's ``HoppingWindowLifetime``)
    snaps it up: the window ``(w-size, w]`` shows its result from its end ``w`` on. Up-snapping is
    down-snapping of ``t + lead``: ``hop - 1`` when windows overlap or touch, and ``size - 1``
    when they leave gaps (an event at ``t`` is kept when ``t`` lies in some ``(w-size, w]``)."""
    if align == "start":
        return 0
    return hop - 1 if size >= hop else size - 1


class HoppingWindow(PlanNode):
    """Windows of ``size`` ticks starting every ``hop`` ticks on the grid ``offset + k*hop``.

    ``align="start"`` (the default) moves each start down to the grid, ``align="end"`` up to it
    (Trill's convention: a window's result becomes visible at the window's end)."""

    label = "HoppingWindow"

    def __init__(self, input: PlanNode, size: int, hop: int, offset: int = 0, align: str = "start"):
        size, hop, offset = positive("size", size), positive("hop", hop), int(offset)
        align = check_align(align, "hopping_window")
        duration = size if hop > size or size % hop == 0 else None
        props = input.props.but(
            constant_duration=duration,
            constant_hop=(hop, offset % hop),
            start_edge_only=False,
            sorted_by=(),  # starts move: events of several sync times meet
        )
        super().__init__((input,), input.schema, props, size=size, hop=hop, offset=offset, align=align)

    @property
    def window(self) -> tuple[int, int, int]:
        return (self.size, self.hop, self.offset)

    def make(self) -> Operator:
        size, hop, offset = self.window
        lead = window_lead(size, hop, self.align)
        start = lambda t: align_down(t + lead, hop, offset)  # noqa: E731
        keep = None
        if hop > size:
            keep = lambda t: (t + lead - offset) % hop < size  # noqa: E731
            duration: object = size
        elif size % hop == 0:
            duration = size
        else:
            duration = lambda t: align_down(t + lead + size, hop, offset) - align_down(t + lead, hop, offset)  # noqa: E731
        aligned = "" if self.align == "start" else ", align end"
        return AlterLifetimeOp(
            start,
            duration,
            keep=keep,
            label=f"window size {size}, hop {hop}, offset {offset}{aligned}",
            grid=(hop, offset, size if hop > size else -1, lead),
        )


class TumblingWindow(HoppingWindow):
    """Non-overlapping windows: a hopping window whose hop is its size."""

    label = "TumblingWindow"


def window(input: PlanNode, size: int, hop: int, offset: int = 0, align: str = "start") -> HoppingWindow:
    return (TumblingWindow if size == hop else HoppingWindow)(input, size, hop, offset, align)


class ClipDuration(PlanNode):
    label = "ClipDuration"

    def __init__(self, input: PlanNode, limit: int):
        limit = positive("limit", limit)
        cd = input.props.constant_duration
        props = input.props.but(
            constant_duration=min(cd, limit) if cd is not None else None, start_edge_only=False, sorted_by=()
        )
        super().__init__((input,), input.schema, props, limit=limit)

    def make(self) -> Operator:
        return ClipDurationOp(self.limit)


class ExtendLifetime(PlanNode):
    """``[s, e+d)``; a negative ``d`` shortens from the end (``tidal.ops.shorten``), emptied events vanish."""

    label = "ExtendLifetime"

    def __init__(self, input: PlanNode, delta: int):
        if not isinstance(delta, int | np.integer):
            raise PlanError(f"extend_lifetime takes an integer number of ticks, got {delta!r}")
        cd = input.props.constant_duration
        longer = None if cd is None or cd + int(delta) <= 0 else cd + int(delta)
        props = input.props.but(
            constant_duration=longer,
            sorted_by=(),
        )
        super().__init__((input,), input.schema, props, delta=int(delta))

    def make(self) -> Operator:
        return ExtendLifetimeOp(self.delta) if self.delta >= 0 else ShortenLifetimeOp(-self.delta)


class QuantizeLifetime(PlanNode):
    """Snap lifetimes to the hop grid: starts down (``align="start"``) or up (``align="end"``)."""

    label = "QuantizeLifetime"

    def __init__(self, input: PlanNode, size: int, hop: int | None = None, offset: int = 0, align: str = "start"):
        size = positive("size", size)
        hop = size if hop is None else positive("hop", hop)
        align = check_align(align, "quantize_lifetime")
        props = input.props.but(constant_duration=None, constant_hop=(hop, int(offset) % hop), sorted_by=())
        super().__init__((input,), input.schema, props, size=size, hop=hop, offset=offset, align=align)

    def make(self) -> Operator:
        return QuantizeLifetimeOp(self.size, self.hop, self.offset, self.align)


class PointAtEnd(PlanNode):
    label = "PointAtEnd"

    def __init__(self, input: PlanNode):
        props = input.props.but(constant_duration=1, constant_hop=None, start_edge_only=False, sorted_by=())
        super().__init__((input,), input.schema, props)

    def make(self) -> Operator:
        return PointAtEndOp()


class Chop(PlanNode):
    label = "Chop"

    def __init__(self, input: PlanNode, period: int, offset: int = 0):
        period = positive("period", period)
        props = input.props.but(constant_duration=None, sorted_by=())
        super().__init__((input,), input.schema, props, period=period, offset=offset)

    def make(self) -> Operator:
        return ChopOp(self.period, self.offset)


# per-event lifetime changes: they may run on arrival-ordered input, before a sort
PER_EVENT_LIFETIMES = (ShiftLifetime, AlterLifetime, HoppingWindow)


class BeforeSort(PlanNode):
    """A per-event lifetime change on arrival-ordered input (sort-as-needed): same node, no order needed."""

    def __init__(self, inner: PlanNode):
        if not isinstance(inner, PER_EVENT_LIFETIMES):
            raise PlanError(f"{inner.label} cannot run before the sort")
        super().__init__(inner.inputs, inner.schema, inner.props, inner=inner)

    @property
    def label(self) -> str:
        return self.inner.label

    def make(self) -> Operator:
        return UnorderedLifetimeOp(self.inner.make())
