"""Rule: remove projections that pass every input column through unchanged."""

from __future__ import annotations

from sqlglot import exp

from ..logical import Node, Project
from .walk import bottom_up


def drop_identity_projections(root: Node) -> Node:
    """Remove projections that pass every input column through unchanged (left by aliases and CTEs)."""

    def fn(node):
        if isinstance(node, Project) and len(node.exprs) == len(node.input.names):
            same = all(
                isinstance(e, exp.Column) and e.name == n == src
                for (n, e), src in zip(node.exprs, node.input.names, strict=True)
            )
            if same:
                return node.input
        return node

    return bottom_up(root, fn)
