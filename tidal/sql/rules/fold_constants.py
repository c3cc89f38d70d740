"""Rule: evaluate column-free subexpressions once; drop filters that are constantly true."""

from __future__ import annotations

from dataclasses import replace

import pyarrow as pa
from sqlglot import exp

from ..expressions import IN_SUBQUERY, SCALAR_SUBQUERY, Evaluator, has_subquery, scalar_to_sql
from ..logical import Filter, Node, Project
from ..logical.exprs import _transform
from .walk import bottom_up


def _contents(tree: exp.Expression) -> dict[int, tuple[bool, bool]]:
    """For each node of ``tree`` (by ``id``): whether its subtree holds a subquery, and a column (one
    pass from the leaves up: asking each node would take time quadratic in a long chain's length)."""
    out: dict[int, tuple[bool, bool]] = {}
    for n in reversed(list(tree.walk(bfs=True))):
        sub = isinstance(n, exp.Anonymous) and n.name in (IN_SUBQUERY, SCALAR_SUBQUERY)
        col = isinstance(n, exp.Column)
        for c in n.iter_expressions():
            csub, ccol = out.get(id(c), (False, False))
            sub, col = sub or csub, col or ccol
        out[id(n)] = (sub, col)
    return out


_KEPT = (exp.Column, exp.Literal, exp.Null, exp.Boolean, exp.Star, exp.Interval, exp.DataType)
_NO_VALUE = (*_KEPT, exp.Identifier)  # an identifier (a column's name) is no value: translating one fails


def _nan(n: exp.Expression) -> bool:
    """Whether ``n`` is ``CAST('nan' AS DOUBLE)`` (the NaN the SQL builder writes beside aggregates of DOUBLE
    columns): its value has no plain literal (:func:`scalar_to_sql` gives None), so folding leaves it as it is."""
    return (
        type(n) is exp.Cast
        and not any(v for k, v in n.args.items() if k not in ("this", "to"))  # no FORMAT, no TRY (safe)
        and isinstance(n.this, exp.Literal)
        and n.this.is_string
        and n.this.this == "nan"
        and isinstance(n.args.get("to"), exp.DataType)
        and n.args["to"].this == exp.DataType.Type.DOUBLE
        and not n.args["to"].expressions
    )


def _foldable(expr: exp.Expression) -> bool:
    """Whether ``expr`` has a column-free, subquery-free subexpression that is not a constant already
    (most have none: then it is kept as it is, not copied and compared)."""
    contents = _contents(expr)
    return any(not isinstance(n, _NO_VALUE) and contents[id(n)] == (False, False) and not _nan(n) for n in expr.walk())


def _fold(expr: exp.Expression) -> exp.Expression:
    if not _foldable(expr):
        return expr
    copied = expr.copy()
    contents = _contents(copied)
    folded = []  # the literals put in place of subexpressions (none: the tree is ``expr`` again)

    def visit(e):
        sub, col = contents.get(id(e)) or (has_subquery(e), e.find(exp.Column) is not None)
        if isinstance(e, exp.Column | exp.Literal | exp.Null | exp.Boolean | exp.Star) or sub:
            return e
        if not col and not isinstance(e, exp.Interval | exp.DataType):
            try:
                value = Evaluator({}, 0).eval(e)
            except Exception:
                return None
            if hasattr(value, "as_py"):
                typed = "cast" if isinstance(e, exp.Cast) else True  # (an explicit CAST keeps an INTEGER's type)
                lit = scalar_to_sql(value, typed) if not hasattr(value, "__len__") else None
                if lit is not None and pa.types.is_integer(value.type) and not _literal(e) and not _compared(e):
                    lit = _computed_integer(e, lit)
                if lit is not None:
                    folded.append(lit)
                return lit
        return None

    out = _transform(copied, visit)
    # nothing folded (a constant without a plain literal: CAST('nan' AS DOUBLE)): the copy is ``expr``
    # node for node, so ``expr`` itself is kept (the callers then compare no SQL texts)
    return out if folded else expr


def _literal(e: exp.Expression) -> bool:
    """Whether ``e`` is a number as DuckDB reads a literal: ``2``, ``-2``, ``(2)``."""
    while isinstance(e, exp.Paren | exp.Neg):
        e = e.this
    return isinstance(e, exp.Literal)


def _compared(e: exp.Expression) -> bool:
    """Whether ``e`` is a side of a comparison, where its integer type changes no answer (a literal keeps the
    comparison one that a scan can take: ``x > 1 + 0`` is pushed into the scan as ``x > 1``)."""
    return isinstance(e.parent, exp.EQ | exp.NEQ | exp.GT | exp.GTE | exp.LT | exp.LTE | exp.Between | exp.In)


def _computed_integer(e: exp.Expression, lit: exp.Expression) -> exp.Expression:
    """The folded integer ``lit`` of a computed ``e`` (``1 + 1``, ``abs(-2)``) as a cast to DuckDB's type of ``e``:
    a literal would take a narrower column's type beside it (``ti + (1 + 1)`` is an INTEGER in DuckDB, and
    ``ti + 2`` a TINYINT, which overflows at 127)."""
    name = Evaluator({}, 0).eval(exp.Typeof(this=e.copy())).as_py()
    if name not in ("INTEGER", "BIGINT") or isinstance(lit, exp.Cast):
        return lit
    return exp.Cast(this=lit, to=exp.DataType.build(name))


def fold_constants(root: Node) -> Node:
    """Evaluate column-free subexpressions once; drop filters that are constantly true."""

    def fn(node):
        if isinstance(node, Filter):
            cond = _fold(node.condition)
            if isinstance(cond, exp.Boolean) and cond.this:
                return node.input
            if cond is node.condition:
                return node
            return replace(node, condition=cond) if cond.sql() != node.condition.sql() else node
        if isinstance(node, Project):
            exprs = tuple((n, _fold(e)) for n, e in node.exprs)
            if all(a is b for (_, a), (_, b) in zip(exprs, node.exprs, strict=True)):
                return node
            if any(a is not b and a.sql() != b.sql() for (_, a), (_, b) in zip(exprs, node.exprs, strict=True)):
                return replace(node, exprs=exprs)  # (the SQL of the expressions not folded is the same)
        return node

    return bottom_up(root, fn)
