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


class HoppingWindow(PlanNode):
    """Windows of ``size`` ticks starting every ``hop`` ticks on the grid ``offset + k*hop``."""

    label = "HoppingWindow"

    def __init__(self, input: PlanNode, size: int, hop: int, offset: int = 0):
        size, hop, offset = positive("size", size), positive("hop", hop), int(offset)
        duration = size if hop > size or size % hop == 0 else None
        props = input.props.but(
            constant_duration=duration,
            constant_hop=(hop, offset % hop),
            start_edge_only=False,
            sorted_by=(),  # starts move: events of several sync times meet
        )
        super().__init__((input,), input.schema, props, size=size, hop=hop, offset=offset)

    @property
    def window(self) -> tuple[int, int, int]:
        return (self.size, self.hop, self.offset)

    def make(self) -> Operator:
        size, hop, offset = self.window
        start = lambda t: align_down(t, hop, offset)  # noqa: E731
        keep = None
        if hop > size:
            keep = lambda t: (t - offset) % hop < size  # noqa: E731
            duration: object = size
        elif size % hop == 0:
            duration = size
        else:
            duration = lambda t: align_down(t + size, hop, offset) - align_down(t, hop, offset)  # noqa: E731
        return AlterLifetimeOp(
            start,
            duration,
            keep=keep,
            label=f"window size {size}, hop {hop}, offset {offset}",
            grid=(hop, offset, size if hop > size else -1),
        )


class TumblingWindow(HoppingWindow):
    """Non-overlapping windows: a hopping window whose hop is its size."""

    label = "TumblingWindow"


def window(input: PlanNode, size: int, hop: int, offset: int = 0) -> HoppingWindow:
    return (TumblingWindow if size == hop else HoppingWindow)(input, size, hop, offset)


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
    label = "ExtendLifetime"

    def __init__(self, input: PlanNode, delta: int):
        cd = input.props.constant_duration
        props = input.props.but(constant_duration=None if cd is None else cd + int(delta), sorted_by=())
        super().__init__((input,), input.schema, props, delta=delta)

    def make(self) -> Operator:
        return ExtendLifetimeOp(self.delta)


class QuantizeLifetime(PlanNode):
    label = "QuantizeLifetime"

    def __init__(self, input: PlanNode, size: int, hop: int | None = None, offset: int = 0):
        size = positive("size", size)
        hop = size if hop is None else positive("hop", hop)
        props = input.props.but(constant_duration=None, constant_hop=(hop, int(offset) % hop), sorted_by=())
        super().__init__((input,), input.schema, props, size=size, hop=hop, offset=offset)

    def make(self) -> Operator:
        return QuantizeLifetimeOp(self.size, self.hop, self.offset)


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
