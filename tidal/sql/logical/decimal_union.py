"""The integer width DuckDB gives a set operation's column, for its common type with a DECIMAL.

tidal computes integer literals as BIGINT, but DuckDB types ``2`` an INTEGER: ``SELECT 1.5 UNION ALL
SELECT 2`` is a DECIMAL(11,1) there (10 integer digits), not DECIMAL(20,1). :func:`width_node` follows a
column down the projections that only rename it to the expression that made it and, when that is made of
integer literals, gives a constant of that width for ``sqldecimal.common_type`` to take.
"""

from __future__ import annotations

from sqlglot import exp

from ...expr.nodes import Const
from .nodes import Project


def width_node(node, name: str) -> Const | None:
    """A constant of DuckDB's INTEGER when ``name`` in ``node`` is made of integer literals that fit one
    (with ``+ - *`` and signs: DuckDB's INTEGER op INTEGER is an INTEGER), else None."""
    while isinstance(node, Project):
        e = dict(node.exprs).get(name)
        if isinstance(e, exp.Column) and not e.table:
            node, name = node.input, e.name
            continue
        return Const(0) if _is_integer(e) else None
    return None


def _is_integer(e, limit: int = 2**31) -> bool:
    if isinstance(e, exp.Paren | exp.Neg):  # -2147483648 is an INTEGER too
        return _is_integer(e.this, limit + isinstance(e, exp.Neg))
    if isinstance(e, exp.Add | exp.Sub | exp.Mul):
        return _is_integer(e.this) and _is_integer(e.expression)
    return isinstance(e, exp.Literal) and not e.is_string and e.name.isdigit() and int(e.name) < limit
