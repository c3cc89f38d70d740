"""A window followed by a linear aggregate runs as one operator (``tidal.ops.aggregate.fused``).

The window node is kept for anything else that consumes it; the fused node reads the window's input."""

from __future__ import annotations

from ..node import PlanNode
from ..nodes.aggregate import Aggregate, FusedWindowAggregate, fusable
from ..nodes.lifetime import HoppingWindow


def fuse_window_aggregate(node: PlanNode, consumers: dict[int, int]) -> PlanNode:
    if isinstance(node, Aggregate) and isinstance(node.inputs[0], HoppingWindow):
        if fusable(node.inputs[0], node):
            return FusedWindowAggregate(node.inputs[0], node)
    return node
