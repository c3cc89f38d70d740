"""Stateless operators Spark can run itself, before any data crosses into Python.

Semantics are unchanged: a ``where`` keeps the rows (events, or both edges of a lifetime, which
share their payload) whose predicate is true; ``alter_duration(d)`` on intervals gives ``[s, s+d)``;
a ``multicast`` is the same rows. Only predicates whose meaning is the same in both engines are
pushed: comparisons of fields and constants, ``+ - *`` between them, and conjunctions. A SQL
predicate keeps SQL's rules, which Spark shares (a null predicate drops the row; NaN equals NaN and
is the largest double). A lambda keeps Python's, which Spark's are not: None equals only None, an
ordering or arithmetic on None raises, NaN compares false, ``and`` stops at its first false
operand, integers never overflow; so a pushed lambda is spelled to mean exactly that, raising
where Python raises (an overflow is refused by name). Anything else (a call, a division,
``or``/``not``, a lambda tidal runs row by row) stays in tidal's operators.
"""

from __future__ import annotations

import pyarrow as pa
from sqlglot import exp

from ..core.batch import OTHER_FIELD, SYNC_FIELD
from ..expr.compile import CompiledLambda
from ..expr.nodes import BinOp, BoolOp, Col, Compare, Const, Node
from ..plan.node import PlanNode
from ..plan.nodes import AlterLifetime, Multicast, Where
from .sqltext import column, ident, literal_expression, sql, string

COMPARE = {"==": exp.EQ, "!=": exp.NEQ, "<": exp.LT, "<=": exp.LTE, ">": exp.GT, ">=": exp.GTE}
ARITH = {"+": exp.Add, "-": exp.Sub, "*": exp.Mul}
TRY_ARITH = {"+": "try_add", "-": "try_subtract", "*": "try_multiply"}  # null on overflow


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


def spark_sql(node: Node, schema: pa.Schema, python: bool = False) -> str | None:
    """The Spark SQL text computing ``node``, or None when it is not one that means the same in Spark.

    ``python``: the predicate is a lambda, so it means what Python makes of it (see :func:`_python`);
    else it is SQL's, whose NULL and NaN rules Spark shares."""
    expression = _python(node, schema) if python else _expression(node, schema)
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
        if not all(isinstance(n, Compare | BoolOp) for n in node.operands):  # a bare value's truth: SQL's, not Spark's
            return None
        parts = [_expression(n, schema) for n in node.operands]
        if any(p is None for p in parts):
            return None
        return exp.Paren(this=exp.and_(*parts))
    return None


# -- lambdas: Python's meaning, spelled in Spark SQL -------------------------------------------------
# A lambda's comparison with None is False for ``==`` (True when both are None), True for ``!=``,
# and a TypeError for an ordering or arithmetic, which embedded raises: Spark raises too. NaN
# compares false (``!=``: true), where Spark's NaN equals NaN and is the largest double. ``and``
# stops at its first false operand. Integers do not overflow in Python: Spark's overflow (``try_``
# arithmetic gives null) is refused by name rather than answered.


def _raise(message: str, columns_: list[str]) -> exp.Expression:
    """Spark's ``raise_error``: the query fails with ``message`` and the fields the predicate reads."""
    fields = ", ".join(f"{string(c)}, {ident(c)}" for c in columns_)
    row = f"to_json(named_struct({fields}))" if columns_ else string("{}")
    return exp.maybe_parse(f"raise_error(concat({string('tidal: ' + message + ' in row ')}, {row}))", dialect="spark")


def _is_float(node: Node, schema: pa.Schema) -> bool:
    if isinstance(node, Col):
        return pa.types.is_floating(schema.field(node.name).type)
    if isinstance(node, Const):
        return isinstance(node.value, float)
    return isinstance(node, BinOp) and (_is_float(node.left, schema) or _is_float(node.right, schema))


def _value(node: Node, schema: pa.Schema, text: str, names: list[str]) -> exp.Expression | None:
    """An operand of an ordering or arithmetic: None there is Python's TypeError, raised."""
    if isinstance(node, Const):
        return literal_expression(node.value)
    if isinstance(node, Col):
        value = column(node.name)
    elif isinstance(node, BinOp) and node.op in ARITH and _kind(node, schema) == "num":
        left, right = _value(node.left, schema, text, names), _value(node.right, schema, text, names)
        if left is None or right is None:
            return None
        if _is_float(node, schema):  # IEEE arithmetic, the same in both
            return exp.Paren(this=ARITH[node.op](this=left, expression=right))
        checked = exp.Anonymous(this=TRY_ARITH[node.op], expressions=[left, right])
        overflow = _raise(f"not supported on Spark: {text} overflows 64-bit integers", names)
        return exp.Coalesce(this=checked, expressions=[overflow])
    else:
        return None
    failure = _raise(f"{text} raised TypeError (a None operand)", names)
    return exp.Case(ifs=[exp.If(this=exp.Is(this=value.copy(), expression=exp.Null()), true=failure)], default=value)


def _nan(operands: list[exp.Expression]) -> exp.Expression:
    return exp.or_(*[exp.Anonymous(this="isnan", expressions=[o.copy()]) for o in operands])


def _python(node: Node, schema: pa.Schema, text: str | None = None, names=None) -> exp.Expression | None:
    """A lambda predicate as Spark SQL that is true, false (never null), or raises where Python raises."""
    text = text if text is not None else f"where lambda {node}"
    names = names if names is not None else sorted(node.columns())
    if isinstance(node, BoolOp) and node.op == "and":
        parts = [_python(n, schema, text, names) for n in node.operands]
        if any(p is None for p in parts):
            return None
        out = parts[-1]
        for part in reversed(parts[:-1]):  # short-circuit: later operands only where earlier ones hold
            out = exp.Case(ifs=[exp.If(this=part, true=out)], default=exp.false())
        return out
    if not isinstance(node, Compare) or node.op not in COMPARE:
        return None
    kinds = {_kind(node.left, schema), _kind(node.right, schema)}
    if len(kinds) != 1 or None in kinds:
        return None
    floats = _is_float(node.left, schema) or _is_float(node.right, schema)
    if node.op in ("==", "!="):
        if isinstance(node.left, BinOp) or isinstance(node.right, BinOp):
            left, right = _value(node.left, schema, text, names), _value(node.right, schema, text, names)
        else:  # a None field compares equal to None only
            left, right = _expression(node.left, schema), _expression(node.right, schema)
        if left is None or right is None:
            return None
        equal = exp.NullSafeEQ(this=left, expression=right)
        if floats:
            equal = exp.and_(equal, exp.not_(_nan([left, right])))
        return exp.Paren(this=equal) if node.op == "==" else exp.not_(equal)
    left, right = _value(node.left, schema, text, names), _value(node.right, schema, text, names)
    if left is None or right is None:
        return None
    compare = exp.Paren(this=COMPARE[node.op](this=left, expression=right))
    if floats:
        return exp.Case(ifs=[exp.If(this=_nan([left, right]), true=exp.false())], default=compare)
    return compare


def push_down(node: PlanNode, df, schema: pa.Schema, intervals: bool):
    """``df`` with ``node`` applied by Spark, or None when tidal must run it."""
    if isinstance(node, Multicast):
        return df
    if isinstance(node, Where):
        predicate = node.make().predicate
        if predicate.mode != "columnar" or predicate.node is None:
            return None
        condition = spark_sql(predicate.node, schema, python=isinstance(predicate, CompiledLambda))
        return None if condition is None else df.where(condition)
    if isinstance(node, AlterLifetime) and intervals:
        op = node.make()
        if op.start_fn is None and op.keep is None and isinstance(op.duration, int) and op.duration > 0:
            end = exp.Add(this=column(SYNC_FIELD), expression=literal_expression(op.duration))
            other = sql(exp.alias_(end, exp.to_identifier(OTHER_FIELD, quoted=True)))
            return df.selectExpr(*[other if n == OTHER_FIELD else ident(n) for n in df.columns])
    return None
