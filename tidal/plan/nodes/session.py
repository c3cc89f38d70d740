"""Stateful lifetime nodes per group: session windows, stitch, distinct (``tidal.ops.session``)."""

from __future__ import annotations

from ...ops.base import Operator
from ...ops.session import DistinctOp, SessionWindowOp, StitchOp
from ..node import PlanNode
from .lifetime import positive


class _PerGroup(PlanNode):
    """A node whose state is per group: a distributed backend partitions its input by the grouping."""

    def __init__(self, input: PlanNode, props, **fields):
        super().__init__((input,), input.schema, props, partitioning=(input.props.grouping,), **fields)


class SessionWindow(_PerGroup):
    label = "SessionWindow"

    def __init__(self, input: PlanNode, timeout: int, max_duration: int | None = None, lifetime: str = "session"):
        timeout = positive("timeout", timeout)
        max_duration = None if max_duration is None else positive("max_duration", max_duration)
        props = input.props.but(constant_duration=None, constant_hop=None, start_edge_only=False, sorted_by=())
        super().__init__(input, props, timeout=timeout, max_duration=max_duration, lifetime=lifetime)
        self.probe  # noqa: B018  (validates the arguments now)

    def make(self) -> Operator:
        return SessionWindowOp(self.timeout, self.max_duration, self.lifetime)


class _Layers(_PerGroup):
    """A node whose operator rebuilds the snapshot layers of each payload (stitch, distinct)."""

    operator: type[Operator]

    def __init__(self, input: PlanNode):
        props = input.props.but(constant_duration=None, constant_hop=None, sorted_by=())
        super().__init__(input, props)

    def make(self) -> Operator:
        return self.operator()


class Stitch(_Layers):
    label = "Stitch"
    operator = StitchOp


class Distinct(_Layers):
    label = "Distinct"
    operator = DistinctOp
