"""Stateless operators Spark can run itself, before any data crosses into Python.

Semantics are unchanged: a ``where`` keeps the rows (events, or both edges of a lifetime, which
share their payload) whose predicate is true, and a row whose predicate is null is dropped by
Spark's filter as by tidal's; ``alter_duration(d)`` on intervals gives ``[s, s+d)``; a
``multicast`` is the same rows. Only predicates whose meaning is the same in both engines are
pushed: comparisons of fields and constants, ``+ - *`` between them, and conjunctions (``and``
drops a row exactly when one side is false or null, in both). Anything else (a call, a
division, ``or``/``not`` with their three-valued differences, a lambda tidal runs row by row)
stays in tidal's operators.
"""

from __future__ import annotations

import pyarrow as pa
from sqlglot import exp

from ..core.batch import OTHER_FIELD, SYNC_FIELD
from ..expr.nodes import BinOp, BoolOp, Col, Compare, Const, Node
from ..plan.node import PlanNode
from ..plan.nodes import AlterLifetime, Multicast, Where
from .sqltext import column, ident, literal_expression, sql

COMPARE = {"==": exp.EQ, "!=": exp.NEQ, "<": exp.LT, "<=": exp.LTE, ">": exp.GT, ">=": exp.GTE}
ARITH = {"+": exp.Add, "-": exp.Sub, "*": exp.Mul}


def _kind(node: Node, schema: pa.Schema) -> str | None:
    """ "num" or "str" for a field or constant (comparisons and arithmetic only within one kind:
    Spark would cast across kinds where tidal would not)."""
    if isinstance(node, Col):
        t = schema.field(node.name).type if node.name in schema.names else None
        if t is not None and (pa.types.is_integer(t) or pa.types.is_floating(t)):
            return "num"
        return "str" if t is not None and (pa.types.is_string(t) or pa.types.is_large_string(t)) else None
    if isinstance(node, Const):
        if isinstance(node.value, bool):
            return None
        return "num" if isinstance(node.value, int | float) else "str" if isinstance(node.value, str) else None
    if isinstance(node, BinOp) and node.op in ARITH:
        kinds = {_kind(node.left, schema), _kind(node.right, schema)}
        return "num" if kinds == {"num"} else None
    return None


def spark_sql(node: Node, schema: pa.Schema) -> str | None:
    """The Spark SQL text computing ``node``, or None when it is not one that means the same in Spark."""
    expression = _expression(node, schema)
    return None if expression is None else sql(expression)


def _expression(node: Node, schema: pa.Schema) -> exp.Expression | None:
    if isinstance(node, Col):
        return column(node.name) if _kind(node, schema) is not None else None
    if isinstance(node, Const):
        return literal_expression(node.value) if _kind(node, schema) is not None else None
    if isinstance(node, Compare | BinOp):
        table = COMPARE if isinstance(node, Compare) else ARITH
        if node.op not in table:
            return None
        kinds = {_kind(node.left, schema), _kind(node.right, schema)}
        if len(kinds) != 1 or None in kinds or (isinstance(node, BinOp) and kinds != {"num"}):
            return None
        left, right = _expression(node.left, schema), _expression(node.right, schema)
        if left is None or right is None:
            return None
        # sqlglot writes the tree as built, adding no parentheses: every operation brings its own
        return exp.Paren(this=table[node.op](this=left, expression=right))
    if isinstance(node, BoolOp) and node.op == "and":
        parts = [_expression(n, schema) for n in node.operands]
        if any(p is None for p in parts):
            return None
        return exp.Paren(this=exp.and_(*parts))
    return None


def push_down(node: PlanNode, df, schema: pa.Schema, intervals: bool):
    """``df`` with ``node`` applied by Spark, or None when tidal must run it."""
    if isinstance(node, Multicast):
        return df
    if isinstance(node, Where):
        predicate = node.make().predicate
        if predicate.mode != "columnar" or predicate.node is None:
            return None
        condition = spark_sql(predicate.node, schema)
        return None if condition is None else df.where(condition)
    if isinstance(node, AlterLifetime) and intervals:
        op = node.make()
        if op.start_fn is None and op.keep is None and isinstance(op.duration, int) and op.duration > 0:
            end = exp.Add(this=column(SYNC_FIELD), expression=literal_expression(op.duration))
            other = sql(exp.alias_(end, exp.to_identifier(OTHER_FIELD, quoted=True)))
            return df.selectExpr(*[other if n == OTHER_FIELD else ident(n) for n in df.columns])
    return None
