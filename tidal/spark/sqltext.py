"""Spark SQL expressions as text, and columns by name, for building DataFrame plans cheaply.

Every PySpark Column built with ``F.col``, ``F.lit``, ``F.when``... is one or more calls into
the JVM (a ``F.col`` is about twenty at the time of writing), and planning one tidal query
builds hundreds of them: a few tenths of a second before any data moves. An expression given
as SQL text is parsed by Spark in one call, so tidal's translation writes its projections,
filters and aggregates as text (``selectExpr``, ``where``, ``F.expr``) and refers to existing
columns as ``df[name]`` (one call). Names and literals are quoted here, nowhere else, by
sqlglot's Spark SQL generator (from expressions built with ``sqlglot.exp``).
"""

from __future__ import annotations

from functools import lru_cache

from sqlglot import exp


def sql(expression: exp.Expression) -> str:
    """``expression`` as Spark SQL text."""
    return expression.sql(dialect="spark")


def column(name: str) -> exp.Column:
    """A column reference, its name always quoted (any character may appear in it)."""
    return exp.column(exp.to_identifier(name, quoted=True))


@lru_cache(maxsize=4096)  # the same few names are quoted over and over while a plan is built
def ident(name: str) -> str:
    """A column name as a quoted SQL identifier (backticks; a backtick in the name is doubled)."""
    return sql(exp.to_identifier(name, quoted=True))


def string(text: str) -> str:
    """A SQL string literal (Spark's parser reads backslash escapes)."""
    return sql(exp.Literal.string(text))


def literal_expression(value) -> exp.Expression:
    """A SQL literal of the same type PySpark's ``F.lit`` gives: int or bigint, double, string, boolean."""
    if isinstance(value, bool):
        return exp.true() if value else exp.false()
    if isinstance(value, int):
        number = exp.Literal.number(value)
        return number if -(2**31) <= value < 2**31 else exp.cast(number, exp.DataType.build("bigint"))
    if isinstance(value, float):
        # a bare 1.5 is a DECIMAL in Spark SQL (its cast to double may round differently), and nan and
        # infinities have no numeric spelling: the shortest repr cast from a string is the same double
        return exp.cast(exp.Literal.string(repr(value)), exp.DataType.build("double"))
    if isinstance(value, str):
        return exp.Literal.string(value)
    raise TypeError(f"no SQL literal for {value!r}")


def literal(value) -> str:
    """:func:`literal_expression` as text."""
    return sql(literal_expression(value))


def columns(df, names) -> list:
    """``df``'s columns of these names (``df[name]``: one JVM call each)."""
    return [df[ident(n)] for n in names]
