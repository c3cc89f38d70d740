"""Rewrite rules on the logical plan: each a pure function from plan to plan.

``RULES`` is applied in order; :func:`optimize` records which rules changed the plan (shown by
``tidal explain``). None of them changes a query's answer: they only make the file readers do
the work early (read fewer columns, skip rows and row groups).

Each rule is a plain function in its own module (sqlglot's optimizer style).
"""

from __future__ import annotations

from ..logical import Node
from .drop_identity_projections import drop_identity_projections
from .fold_constants import fold_constants
from .lookup_joins import lookup_joins
from .prune_columns import prune_columns
from .push_filters import push_filters

RULES = (fold_constants, push_filters, lookup_joins, prune_columns, drop_identity_projections)


def explain_logical(node: Node, depth: int = 0) -> str:
    lines = ["  " * depth + ("└─ " if depth else "") + node.describe()]
    for child in node.inputs:
        lines.append(explain_logical(child, depth + 1))
    return "\n".join(lines)


def optimize(root: Node) -> tuple[Node, list[str]]:
    """Apply :data:`RULES` in order; also return the names of the rules that changed the plan."""
    applied = []
    text = None  # the plan's explain text, made only when a rule returned a new plan
    for rule in RULES:
        new = rule(root)
        if new is not root:
            text = explain_logical(root) if text is None else text
            after = explain_logical(new)
            if after != text:
                applied.append(rule.__name__)
            text = after
        root = new
    return root, applied
