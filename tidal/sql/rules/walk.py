"""Walking the logical plan for the rules."""

from __future__ import annotations

from ..logical import Node


def bottom_up(node: Node, fn) -> Node:
    """Apply ``fn`` bottom-up to every node."""
    new_inputs = tuple(bottom_up(i, fn) for i in node.inputs)
    if new_inputs != node.inputs:
        node = node.with_inputs(new_inputs)
    return fn(node)
