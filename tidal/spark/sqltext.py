"""Spark SQL expressions as text, and columns by name, for building DataFrame plans cheaply.

Every PySpark Column built with ``F.col``, ``F.lit``, ``F.when``... is one or more calls into
the JVM (a ``F.col`` is about twenty at the time of writing), and planning one tidal query
builds hundreds of them: a few tenths of a second before any data moves. An expression given
as SQL text is parsed by Spark in one call, so tidal's translation writes its projections,
filters and aggregates as text (``selectExpr``, ``where``, ``F.expr``) and refers to existing
columns as ``df[name]`` (one call). Names and literals are quoted here, nowhere else.
"""

from __future__ import annotations

import math


def ident(name: str) -> str:
    """A column name as a quoted SQL identifier (backticks; a backtick in the name is doubled)."""
    return "`" + name.replace("`", "``") + "`"


def string(text: str) -> str:
    """A SQL string literal (Spark's parser reads backslash escapes)."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def literal(value) -> str:
    """A SQL literal of the same type PySpark's ``F.lit`` gives: int or bigint, double, string, boolean."""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return str(value) if -(2**31) <= value < 2**31 else f"{value}L"
    if isinstance(value, float):
        # a bare 1.5 is a DECIMAL in Spark SQL; nan and infinities have no numeric spelling
        return f"CAST({string(repr(value))} AS DOUBLE)" if not math.isfinite(value) else f"{value!r}D"
    if isinstance(value, str):
        return string(value)
    raise TypeError(f"no SQL literal for {value!r}")


def columns(df, names) -> list:
    """``df``'s columns of these names (``df[name]``: one JVM call each)."""
    return [df[ident(n)] for n in names]
