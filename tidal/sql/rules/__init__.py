"""Rewrite rules on the logical plan: each a pure function from plan to plan.

``RULES`` is applied in order; :func:`optimize` records which rules changed the plan (shown by
``tidal explain``). None of them changes a query's answer: they only make the file readers do
the work early (read fewer columns, skip rows and row groups).

Each rule is a plain function in its own module (sqlglot's optimizer style).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..logical import Node
from .drop_identity_projections import drop_identity_projections
from .factor_disjunctions import factor_disjunctions
from .fold_constants import fold_constants
from .lookup_joins import lookup_joins
from .prune_columns import prune_columns
from .push_filters import push_filters

RULES = (fold_constants, factor_disjunctions, push_filters, lookup_joins, prune_columns, drop_identity_projections)


def explain_logical(node: Node, depth: int = 0) -> str:
    lines = ["  " * depth + ("└─ " if depth else "") + node.describe()]
    for child in node.inputs:
        lines.append(explain_logical(child, depth + 1))
    return "\n".join(lines)


class Applied(Sequence):
    """The names of the rules that changed a plan, in order: worked out when first read (``tidal explain``),
    from the plans each rule was given and returned (immutable nodes: the same answer whenever asked).
    A rule that returned a new plan with the same explain text changed nothing: it is not listed."""

    def __init__(self, steps: tuple = ()):
        self._steps = steps  # ((rule name, plan before, plan after), ...) for the rules that returned a new plan
        self._names: list[str] | None = None

    def _list(self) -> list[str]:
        if self._names is None:
            names, text = [], None
            for name, before, after in self._steps:
                text = explain_logical(before) if text is None else text
                after_text = explain_logical(after)
                if after_text != text:
                    names.append(name)
                text = after_text
            self._names = names
        return self._names

    def __getitem__(self, i):
        return self._list()[i]

    def __len__(self) -> int:
        return len(self._list())

    def __eq__(self, other) -> bool:
        if isinstance(other, Sequence) and not isinstance(other, str):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None

    def __repr__(self) -> str:
        return repr(self._list())


def optimize(root: Node) -> tuple[Node, Applied]:
    """Apply :data:`RULES` in order; also return the names of the rules that changed the plan (:class:`Applied`)."""
    steps = []
    for rule in RULES:
        new = rule(root)
        if new is not root:
            steps.append((rule.__name__, root, new))
        root = new
    return root, Applied(tuple(steps))
