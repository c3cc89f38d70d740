"""Rule: move filters below renaming projections, unions and joins, and into file scans; regroup a cross
join of three inputs that the filter joins pairwise (see _regrouped)."""

from __future__ import annotations

from dataclasses import replace

import pyarrow as pa
from sqlglot import exp

from ...expr.sqldecimal import DecimalLiteral, number_literal
from ..expressions import has_subquery, pushable_predicate
from ..logical import Filter, Join, Node, Project, Scan, UnionAll
from ..logical.exprs import _and, _col, _columns, _conjuncts, _transform
from .walk import bottom_up


def push_filters(root: Node) -> Node:
    """Move filters below projections that only rename columns, and into file scans."""

    def push(node):
        if not isinstance(node, Filter):
            return node
        child = node.input
        if isinstance(child, Filter):
            return push(Filter(child.input, exp.And(this=child.condition, expression=node.condition)))
        if isinstance(child, Project):
            renames = {n: e.name for n, e in child.exprs if isinstance(e, exp.Column)}
            parts = _conjuncts(node.condition)
            movable = [p for p in parts if _columns(p) <= set(renames) and not has_subquery(p)]
            if not movable:
                return node
            rest = [p for p in parts if p not in movable]

            def rename(e):
                return _transform(e.copy(), lambda x: _col(renames[x.name]) if isinstance(x, exp.Column) else None)

            below = push(Filter(child.input, _and([rename(p) for p in movable])))
            moved = replace(child, input=below)
            return Filter(moved, _and(rest)) if rest else moved
        if isinstance(child, UnionAll):
            return UnionAll(
                push(Filter(child.left, _rename_for(child.left, child, node.condition))),
                push(Filter(child.right, _rename_for(child.right, child, node.condition))),
            )
        if isinstance(child, Join):
            return _push_into_join(node, child, push)
        if isinstance(child, Scan):
            parts = _conjuncts(node.condition)
            file_of = dict(zip(child.names, child.file_columns, strict=True))
            types = dict(zip(child.names, child.types, strict=False))
            pushable = [
                p
                for p in parts
                if pushable_predicate(p) is not None and _columns(p) <= set(file_of) and _reader_casts_alike(p, types)
            ]
            if child.format == "postgres":  # a database: the filter becomes part of its SQL
                from .. import postgres

                pushable = [p for p in parts if not has_subquery(p) and postgres.pushable(p, child)]
            if not pushable:
                return node
            rest = [p for p in parts if p not in pushable]
            merged = pushable if child.predicate is None else [child.predicate, *pushable]
            scan = replace(child, predicate=_and(merged))
            return Filter(scan, _and(rest)) if rest else scan
        return node

    return bottom_up(root, push)


def _reader_casts_alike(p: exp.Expression, types: dict) -> bool:
    """Whether the file reader compares each ``column op number`` in ``p`` as SQL does: an integer
    column with an integer, a floating-point column with any number. Others it would cast its own
    way (a boolean is no number to it; an integer column beside a real turns into DOUBLE by Arrow's
    checked cast, which fails on integers beyond 2**53 that SQL converts), so they stay in SQL."""
    for x in p.walk():
        if not isinstance(x, exp.Binary) or not isinstance(x.this, exp.Column):
            continue
        lit = x.expression
        if not isinstance(lit, exp.Literal) or lit.is_string:
            continue
        t = types.get(x.this.name)
        if t is None or not (pa.types.is_floating(t) or pa.types.is_integer(t) and lit.is_int):
            return False
        if pa.types.is_float32(t) and isinstance(number_literal(lit.name), DecimalLiteral):
            return False  # a FLOAT meets a DECIMAL as a FLOAT (0.1 is the FLOAT 0.1), the reader as a DOUBLE
    return True


def _push_into_join(node: Filter, join: Join, push) -> Node:
    """A filter over a join: conjuncts over one side move to that side (for an inner or cross join
    either side; for a left outer join only the left, whose rows all survive it), and on an inner
    or cross join an equality between a left and a right column becomes a join key."""
    regrouped = _regrouped(node, join)
    if regrouped is not None:
        return push(regrouped)
    lnames, rnames = set(join.left.names), set(join.right.names)
    types = dict(zip(join.names, join.types, strict=True))
    inner = join.kind in ("inner", "cross")
    left_parts, right_parts, rest = [], [], []
    lkeys, rkeys = list(join.left_keys), list(join.right_keys)
    for part in _conjuncts(node.condition):
        cols = _columns(part)
        if has_subquery(part) or join.kind == "full":
            rest.append(part)
        elif cols and cols <= lnames and join.kind != "full":
            left_parts.append(part)
        elif cols and cols <= rnames and inner:
            right_parts.append(part)
        elif inner and isinstance(part, exp.EQ) and _key_pair(part, lnames, rnames, types):
            a, b = _key_pair(part, lnames, rnames, types)
            lkeys.append(a)
            rkeys.append(b)
        else:
            rest.append(part)
    if not (left_parts or right_parts or len(lkeys) > len(join.left_keys)):
        return node
    left = push(Filter(join.left, _and(left_parts))) if left_parts else join.left
    right = push(Filter(join.right, _and(right_parts))) if right_parts else join.right
    kind = "inner" if inner and lkeys else join.kind
    moved = replace(join, left=left, right=right, kind=kind, left_keys=tuple(lkeys), right_keys=tuple(rkeys))
    return Filter(moved, _and(rest)) if rest else moved


def _regrouped(node: Filter, join: Join) -> Node | None:
    """``(A x B) x C`` under a filter that joins C to A and to B and nothing to do with A and B together
    (FROM part, supplier, lineitem WHERE p = l_p AND s = l_s: TPC-H Q9) as ``(A x C) x B`` with the columns
    in their first order: the keys then join A with C and that with B, where A x B crossed every pair.
    None where that does not apply (inner joins reorder freely; only the rows' order can change)."""
    inner = join.left
    if not (join.kind == "cross" and isinstance(inner, Join) and inner.kind == "cross") or join.left_keys:
        return None
    if inner.left_keys or inner.condition is not None or join.condition is not None:
        return None
    a, b, c = set(inner.left.names), set(inner.right.names), set(join.right.names)
    types = dict(zip(join.names, join.types, strict=True))
    linked = set()
    for part in _conjuncts(node.condition):
        cols = _columns(part)
        if cols & a and cols & b and cols <= a | b:
            return None  # A and B meet in the filter: their join has keys of its own
        if isinstance(part, exp.EQ) and not has_subquery(part):
            for side, name in ((a, "a"), (b, "b")):
                if _key_pair(part, side, c, types):
                    linked.add(name)
    if linked != {"a", "b"}:
        return None
    regrouped = Join(Join(inner.left, join.right, "cross"), inner.right, "cross")
    ordered = Project(regrouped, tuple((n, _col(n)) for n in join.names), join.scope, join.types)
    return Filter(ordered, node.condition)


def _key_pair(part: exp.EQ, lnames: set, rnames: set, types: dict) -> tuple[str, str] | None:
    if not (isinstance(part.this, exp.Column) and isinstance(part.expression, exp.Column)):
        return None
    a, b = part.this.name, part.expression.name
    if b in lnames and a in rnames:
        a, b = b, a
    if a in lnames and b in rnames and types[a] is not None and types[a] == types[b]:
        return a, b
    return None


def _rename_for(side: Node, union: UnionAll, cond: exp.Expression) -> exp.Expression:
    mapping = dict(zip(union.names, side.names, strict=True))
    return _transform(cond.copy(), lambda x: _col(mapping[x.name]) if isinstance(x, exp.Column) else None)
