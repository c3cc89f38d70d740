"""Top-N: ``WHERE rn <= N`` over ``ROW_NUMBER() OVER (PARTITION BY ... ORDER BY ...) AS rn``.

Numbering every row of a partition recomputes the partition at every change; with a constant bound on
the number only the first N rows of each partition matter, and the engine's per-partition Top-N
(``tidal/ops/rank.py``: the same numbers, rows tied on the ORDER BY keys ordered by all their columns)
keeps just those. The filter itself still applies above it.
"""

from __future__ import annotations

from sqlglot import exp

from .logical import Filter, Node, Project, Scan, WindowFunctions
from .logical.exprs import _conjuncts

_MIRROR = {exp.GTE: exp.LTE, exp.GT: exp.LT, exp.LTE: exp.GTE, exp.LT: exp.GT, exp.EQ: exp.EQ}


def _bound(part: exp.Expression, column: str) -> int | None:
    """The largest number ``part`` keeps (``n <= k``, ``n < k``, ``n = 1``, or mirrored), else None."""
    kind = type(part)
    if kind not in _MIRROR:
        return None
    left, right = part.this, part.expression
    if isinstance(right, exp.Column) and right.name == column:
        left, right, kind = right, left, _MIRROR[kind]
    if not (isinstance(left, exp.Column) and left.name == column and isinstance(right, exp.Literal)):
        return None
    if right.is_string or not right.name.lstrip("-").isdigit():
        return None
    k = int(right.name)
    if kind is exp.LTE:
        return max(k, 0)
    if kind is exp.LT:
        return max(k - 1, 0)
    if kind is exp.EQ and k == 1:
        return 1
    return None


def top_n(node: Filter):
    """``(window node, its row_number call, N)`` when ``node`` filters a lone frameless ROW_NUMBER() to
    numbers up to a constant N; else None."""
    window = node.input
    if not isinstance(window, WindowFunctions) or len(window.calls) != 1:
        return None
    call = window.calls[0]
    if call.function != "row_number" or call.frame is not None:
        return None
    bounds = [b for b in (_bound(p, call.output) for p in _conjuncts(node.condition)) if b is not None]
    return (window, call, min(bounds)) if bounds else None


def endless(node: Node) -> bool:
    """Whether ``node`` reads an input that may never end (a topic, a stream, a growing file or stdin)."""
    if isinstance(node, Scan):
        return bool(node.live) or node.format in ("kafka", "redis")
    return any(endless(i) for i in node.inputs)


def top_n_filters(node: Node) -> set[int]:
    """The Top-N filters (``WHERE rn <= N`` over ROW_NUMBER) reached from ``node`` through filters and
    projections only: a consumer of ``node`` that reads its final snapshot reads theirs."""
    found = set()
    while isinstance(node, Filter | Project):
        if isinstance(node, Filter) and top_n(node) is not None:
            found.add(id(node))
            return found
        node = node.input
    return found
