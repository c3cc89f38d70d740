"""Rewrite rules on the logical plan: each a pure function from plan to plan.

``RULES`` is applied in order; :func:`optimize` records which rules changed the plan (shown by
``tidal explain``). None of them changes a query's answer: they only make the file readers do
the work early (read fewer columns, skip rows and row groups).
"""

from __future__ import annotations

import math
import os
from dataclasses import replace

from sqlglot import exp

from .expressions import Evaluator, has_subquery, scalar_to_sql
from .logical import (
    Aggregate,
    EventTime,
    Filter,
    Join,
    Node,
    Project,
    Scan,
    Session,
    Tumble,
    UnionAll,
)
from .logical.exprs import _and, _col, _columns, _conjuncts, _transform


def _map(node: Node, fn) -> Node:
    """Apply ``fn`` bottom-up to every node."""
    new_inputs = tuple(_map(i, fn) for i in node.inputs)
    if new_inputs != node.inputs:
        node = node.with_inputs(new_inputs)
    return fn(node)


def _fold(expr: exp.Expression) -> exp.Expression:
    def visit(e):
        if isinstance(e, exp.Column | exp.Literal | exp.Null | exp.Boolean | exp.Star) or has_subquery(e):
            return e
        if e.find(exp.Column) is None and not isinstance(e, exp.Interval | exp.DataType):
            try:
                value = Evaluator({}, 0).eval(e)
            except Exception:
                return None
            if hasattr(value, "as_py"):
                lit = scalar_to_sql(value) if not hasattr(value, "__len__") else None
                return lit
        return None

    return _transform(expr.copy(), visit)


def fold_constants(root: Node) -> Node:
    """Evaluate column-free subexpressions once; drop filters that are constantly true."""

    def fn(node):
        if isinstance(node, Filter):
            cond = _fold(node.condition)
            if isinstance(cond, exp.Boolean) and cond.this:
                return node.input
            return replace(node, condition=cond) if cond.sql() != node.condition.sql() else node
        if isinstance(node, Project):
            exprs = tuple((n, _fold(e)) for n, e in node.exprs)
            if [e.sql() for _, e in exprs] != [e.sql() for _, e in node.exprs]:
                return replace(node, exprs=exprs)
        return node

    return _map(root, fn)


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
            from .expressions import pushable_predicate

            parts = _conjuncts(node.condition)
            file_of = dict(zip(child.names, child.file_columns, strict=True))
            pushable = [p for p in parts if pushable_predicate(p) is not None and _columns(p) <= set(file_of)]
            if not pushable:
                return node
            rest = [p for p in parts if p not in pushable]
            merged = pushable if child.predicate is None else [child.predicate, *pushable]
            scan = replace(child, predicate=_and(merged))
            return Filter(scan, _and(rest)) if rest else scan
        return node

    return _map(root, push)


def _push_into_join(node: Filter, join: Join, push) -> Node:
    """A filter over a join: conjuncts over one side move to that side (for an inner or cross join
    either side; for a left outer join only the left, whose rows all survive it), and on an inner
    or cross join an equality between a left and a right column becomes a join key."""
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


def prune_columns(root: Node) -> Node:
    """Read from each file only the columns the query uses."""

    def visit(node: Node, needed: set[str] | None) -> Node:
        # needed: the node's output columns its consumer uses (None = all)
        if isinstance(node, Scan):
            if needed is None:
                return node
            keep = [i for i, n in enumerate(node.names) if n in needed]
            if node.predicate is not None:
                pred_cols = _columns(node.predicate)
                keep = sorted(set(keep) | {i for i, n in enumerate(node.names) if n in pred_cols})
            if not keep:
                keep = [0]  # a count(*) still needs the rows: read the first column
            if len(keep) == len(node.names):
                return node
            return replace(
                node,
                names=tuple(node.names[i] for i in keep),
                scope=tuple(node.scope[i] for i in keep),
                types=tuple(node.types[i] for i in keep),
                file_columns=tuple(node.file_columns[i] for i in keep),
            )
        if isinstance(node, Project):
            exprs = node.exprs if needed is None else tuple((n, e) for n, e in node.exprs if n in needed)
            if len(exprs) != len(node.exprs):
                idx = [i for i, (n, _) in enumerate(node.exprs) if n in needed]
                node = replace(
                    node, exprs=exprs, scope=tuple(node.scope[i] for i in idx), types=tuple(node.types[i] for i in idx)
                )
            uses = set().union(*(_columns(e) for _, e in exprs)) if exprs else set()
            return replace(node, input=visit(node.input, uses))
        if isinstance(node, Filter):
            uses = _columns(node.condition) | (set(node.names) if needed is None else needed)
            return replace(node, input=visit(node.input, uses))
        if isinstance(node, Aggregate):
            uses = set(node.keys) | {a.argument for a in node.aggs if a.argument}
            return replace(node, input=visit(node.input, uses))
        if isinstance(node, EventTime):
            uses = None if needed is None else needed | {node.time_field}
            return replace(node, input=visit(node.input, uses))
        if isinstance(node, Tumble | Session):
            keys = node.keys if isinstance(node, Session) else ()
            uses = None if needed is None else (needed - {"window_start", "window_end"}) | {node.time_field, *keys}
            pruned = visit(node.input, uses)
            # the window columns follow the input's: the scope shrinks with it
            by_name = dict(zip(node.names, node.scope, strict=True))
            scope = tuple(by_name[n] for n in (*pruned.names, "window_start", "window_end"))
            return replace(node, input=pruned, scope=scope)
        if isinstance(node, UnionAll):
            return node.with_inputs((visit(node.left, None), visit(node.right, None)))
        if isinstance(node, Join):
            uses = (set(node.names) if needed is None else set(needed)) | set(node.left_keys) | set(node.right_keys)
            if node.condition is not None:
                uses |= _columns(node.condition)
            left = visit(node.left, uses & set(node.left.names))
            right = visit(node.right, uses & set(node.right.names))
            return node.with_inputs((left, right))
        return node.with_inputs(tuple(visit(i, None) for i in node.inputs))

    return visit(root, None)


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

    return _map(root, fn)


def _timed(node: Node) -> bool:
    return isinstance(node, EventTime | Tumble | Session) or any(_timed(i) for i in node.inputs)


def _file_bytes(node: Node) -> float:
    """The size of the files a subtree reads (unknown, e.g. standard input: infinite)."""
    if isinstance(node, Scan):
        return os.path.getsize(node.path) if os.path.isfile(node.path) else math.inf
    return sum((_file_bytes(i) for i in node.inputs), 0.0)


def lookup_joins(root: Node) -> Node:
    """An inner join of an event-time stream with a relational input (a table read whole, alive
    from time 0) becomes a lookup join: the table is indexed once and the stream's rows probe it
    without being stored. Of two relational inputs, the one read from fewer bytes is the table.
    The table goes on the left (the engine builds its left input); a projection puts the columns
    back in SQL order."""

    def fn(node):
        if not isinstance(node, Join) or node.kind != "inner" or node.build_left or not node.left_keys:
            return node
        left_timed, right_timed = _timed(node.left), _timed(node.right)
        if not left_timed and not right_timed:
            left_timed = _file_bytes(node.left) > _file_bytes(node.right)
            right_timed = not left_timed
        if not left_timed and right_timed:
            return replace(node, build_left=True)
        if left_timed and not right_timed:
            swapped = Join(node.right, node.left, "inner", node.right_keys, node.left_keys, build_left=True)
            return Project(swapped, tuple((n, _col(n)) for n in node.names), scope=node.scope, types=node.types)
        return node

    return _map(root, fn)


RULES = (fold_constants, push_filters, lookup_joins, prune_columns, drop_identity_projections)


def explain_logical(node: Node, depth: int = 0) -> str:
    lines = ["  " * depth + ("└─ " if depth else "") + node.describe()]
    for child in node.inputs:
        lines.append(explain_logical(child, depth + 1))
    return "\n".join(lines)


def optimize(root: Node) -> tuple[Node, list[str]]:
    """Apply :data:`RULES` in order; also return the names of the rules that changed the plan."""
    applied = []
    for rule in RULES:
        before = explain_logical(root)
        root = rule(root)
        if explain_logical(root) != before:
            applied.append(rule.__name__)
    return root, applied
