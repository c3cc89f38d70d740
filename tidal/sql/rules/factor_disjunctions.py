"""Rule: take the conjuncts every branch of an OR shares out of it (``(a AND b) OR (a AND c)`` is
``a AND (b OR c)``), so that a join key written in each branch (TPC-H's Q19) becomes a join key.

The rewrite holds in SQL's three-valued logic (AND and OR distribute over each other there too); a
branch left with nothing makes the OR true, so it goes. Shared parts that call a volatile function
(two calls of ``random()`` are two values) or hold a subquery stay where they are.
"""

from __future__ import annotations

from sqlglot import exp

from ..expressions import has_subquery
from ..logical import Filter, Node
from ..logical.exprs import _and, _conjuncts
from .walk import bottom_up

_VOLATILE = tuple(c for n in ("Rand", "Randn", "Random", "Uuid") if isinstance(c := getattr(exp, n, None), type))
_VOLATILE_NAMES = {"random", "rand", "uuid", "gen_random_uuid", "setseed"}


def factor_disjunctions(root: Node) -> Node:
    """Each filter's ORs with the conjuncts shared by all their branches taken out."""

    def fn(node):
        if not isinstance(node, Filter):
            return node
        parts = _conjuncts(node.condition)
        factored = [q for p in parts for q in _factored(p)]
        if len(factored) == len(parts) and all(a is b for a, b in zip(factored, parts, strict=True)):
            return node
        return Filter(node.input, _and(factored))

    return bottom_up(root, fn)


def _disjuncts(e: exp.Expression) -> list[exp.Expression]:
    if isinstance(e, exp.Paren):
        return _disjuncts(e.this)
    if isinstance(e, exp.Or):
        return _disjuncts(e.this) + _disjuncts(e.expression)
    return [e]


def _fixed(e: exp.Expression) -> bool:
    """Whether ``e`` has one value per row wherever it is evaluated (no volatile call, no subquery)."""
    if has_subquery(e):
        return False
    for x in e.walk():
        if isinstance(x, _VOLATILE) or isinstance(x, exp.Anonymous) and x.name.lower() in _VOLATILE_NAMES:
            return False
    return True


def _same(a: exp.Expression, b: exp.Expression) -> bool:
    """Whether two conjuncts are the same condition (``x = y`` and ``y = x`` are)."""
    if a == b:
        return True
    return isinstance(a, exp.EQ) and isinstance(b, exp.EQ) and a.this == b.expression and a.expression == b.this


def _factored(part: exp.Expression) -> list[exp.Expression]:
    """``part`` as conjuncts: an OR's shared conjuncts first, then the OR of what is left of its branches."""
    branches = _disjuncts(part)
    if len(branches) < 2:
        return [part]
    split = [_conjuncts(b) for b in branches]
    shared = [c for c in split[0] if _fixed(c) and all(any(_same(c, d) for d in other) for other in split[1:])]
    if not shared:
        return [part]
    rests = [[c for c in conj if not any(_same(c, s) for s in shared)] for conj in split]
    if any(not rest for rest in rests):  # a branch that was only shared conjuncts: the OR is true
        return shared
    rest = exp.Paren(this=_and(rests[0]))
    for other in rests[1:]:
        rest = exp.Or(this=rest, expression=exp.Paren(this=_and(other)))
    return [*shared, exp.Paren(this=rest)]  # parenthesised: its SQL text reads as the tree does
