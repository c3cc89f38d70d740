"""A filter above a window runs below it.

A filter reads payloads only and a window changes lifetimes only, so filtering first keeps the
same events; the window then does less work, and an aggregate above it can fuse with it."""

from __future__ import annotations

from ..node import PlanNode
from ..nodes.lifetime import HoppingWindow
from ..nodes.selection import Where


def filter_below_window(node: PlanNode, consumers: dict[int, int]) -> PlanNode:
    if isinstance(node, Where) and isinstance(node.inputs[0], HoppingWindow):
        window = node.inputs[0]
        return type(window)(Where(window.inputs[0], node.predicate), *window.window, align=window.align)
    return node
