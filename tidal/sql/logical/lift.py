"""Lifting a correlated subquery's conditions on the outer query out of its FROM (a derived table's
WHERE, a filter under inner joins) up to the subquery's own WHERE, where :mod:`.correlated`
decorrelates them.

A filter commutes with a projection (its columns passed through, renamed), with another filter,
with an inner or cross join (on either side) and with a left join's preserved (left) side, so
``SELECT ... FROM (SELECT * FROM t WHERE t.k = o.k) s JOIN u ON ...`` is the same subquery as
``SELECT ... FROM (SELECT * FROM t) s JOIN u ON ... WHERE s.k = o.k``. Anything else that mentions
the outer query (an aggregate, a LIMIT, a union, a join's ON, a right side of an outer join, a
projected value) cannot be lifted: None, and the caller refuses the subquery.
"""

from __future__ import annotations

from dataclasses import replace

from sqlglot import exp

from .exprs import _and, _col, _conjuncts, _transform
from .nodes import Filter, Join, Node, Project


def lift(builder, node: Node, names: set, mentions) -> tuple[Node, list] | None:
    """``node`` without its conditions that mention ``names`` (placeholders of the outer query), and
    those conditions over the new node's columns; None when one cannot be lifted."""
    if not mentions(node, names):
        return node, []
    if isinstance(node, Filter):
        below = lift(builder, node.input, names, mentions)
        if below is None:
            return None
        inner, lifted = below
        parts = _conjuncts(node.condition)
        keep = [p for p in parts if not mentions(p, names)]
        return (Filter(inner, _and(keep)) if keep else inner), lifted + [p for p in parts if mentions(p, names)]
    if isinstance(node, Project):
        if mentions(node.exprs, names):
            return None
        below = lift(builder, node.input, names, mentions)
        if below is None:
            return None
        inner, lifted = below
        passed = {}
        for out, e in node.exprs:
            if isinstance(e, exp.Column) and e.name not in passed:
                passed[e.name] = out
        extra = []
        for p in lifted:
            for c in p.find_all(exp.Column):
                if c.name not in names and c.name not in passed:
                    passed[c.name] = builder.fresh("lift")
                    extra.append((passed[c.name], c.name))
        exprs = (*node.exprs, *((n, _col(c)) for n, c in extra))
        scope = (*node.scope, *((None, n) for n, _ in extra))
        types = (*node.types, *(inner.types[inner.names.index(c)] for _, c in extra))
        renamed = [
            _transform(
                p.copy(), lambda x: _col(passed[x.name]) if isinstance(x, exp.Column) and x.name in passed else None
            )
            for p in lifted
        ]
        return Project(inner, exprs, scope=scope, types=types), renamed
    if isinstance(node, Join) and node.kind in ("inner", "cross", "left"):
        if mentions(node.condition, names) or (node.kind == "left" and mentions(node.right, names)):
            return None
        left, right = lift(builder, node.left, names, mentions), lift(builder, node.right, names, mentions)
        if left is None or right is None:
            return None
        return replace(node, left=left[0], right=right[0]), left[1] + right[1]
    return None
