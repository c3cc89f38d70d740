"""Variable conditions (DEFINE) and measures (MEASURES) of a row pattern.

A condition says whether a row may be mapped to its variable. A *local* condition reads only the
current row: it is evaluated over whole batches, columnar (a compiled lambda, or a SQL predicate).
A condition with *references* also reads earlier rows of the match: each :class:`Ref` becomes an
extra column ``__ref{k}`` of a batch of (row, partial match) pairs that the automaton builds when
it needs the answer:

* ``Ref("last", X, c)``: column ``c`` of the last row mapped to ``X`` so far (the current row when
  ``X`` is the condition's own variable); ``column=None`` gives True when there is such a row.
* ``Ref("first", X, c)``: the first row mapped to ``X`` (the current row when there is none yet and
  ``X`` is the condition's own variable).
* ``Ref("prev", X, c, n)``: the row ``n`` rows before the last ``X`` row in the partition, or before
  the current row when ``X`` is None or the own variable (it may lie outside the match).

A reference to a row that does not exist is null. A row is mapped only when its condition is true
(null is false). A variable without a condition accepts every row.

Measures (:class:`Measure`) are computed once per match over the rows mapped to a variable (every
row of the match when the variable is None): ``first``, ``last`` (the value at that row), ``count``
(rows, or non-null values of a column), ``sum``, ``avg``, ``min``, ``max`` (nulls ignored; null when
there are no values).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from ...core.batch import EventBatch
from ...core.errors import PlanError
from ...expr.compile import CompiledLambda, row_class
from ...expr.sqlcompile import CompiledSql


@dataclass(frozen=True)
class Ref:
    kind: str  # "last" | "first" | "prev"
    var: str | None
    column: str | None
    offset: int = 1


class LocalLambda:
    """``lambda e: ...`` over the current row, compiled to a columnar kernel where possible."""

    refs: tuple = ()

    def __init__(self, fn, schema: pa.Schema | None):
        self.compiled = CompiledLambda(fn, schema, truth=True)

    def mask(self, batch: EventBatch) -> np.ndarray:
        return self.compiled.mask(batch)

    def describe(self) -> str:
        return self.compiled.describe()


class RowLambda:
    """``lambda e, A, B: ...``: parameters after the first are the last rows mapped to the variables of
    their names (the current row for the condition's own variable); false while one of them has no
    row yet. Called row at a time, per partial match, with row objects (``e.price``, ``e["price"]``)."""

    direct = True

    def __init__(self, fn, names: list[str], schema: pa.Schema):
        self.fn = fn
        self.names = names
        self.row = row_class(tuple(schema.names))
        self.refs = tuple(Ref("last", v, None) for v in names)

    def test(self, current: tuple, earlier: list) -> bool:
        """``earlier``: per parameter after the first, the row's values, or None when there is no row."""
        if any(r is None for r in earlier):
            return False
        make = self.row
        return bool(self.fn(make(*current), *(make(*r) for r in earlier)))

    def describe(self) -> str:
        return f"row mode (reads the last rows of {', '.join(self.names)})"


class SqlCondition:
    """A SQL DEFINE expression, its references already replaced by ``__ref{k}`` columns."""

    def __init__(self, node, texts: dict, text: str, refs: tuple, schema: pa.Schema | None, rewrite=None):
        self.refs = tuple(refs)
        self.compiled = CompiledSql(node, texts, truth=True, schema=schema, rewrite=rewrite, text=text)

    def mask(self, batch: EventBatch) -> np.ndarray:
        return self.compiled.mask(batch)

    def describe(self) -> str:
        text = self.compiled.describe()
        return f"per partial match, {text}" if self.refs else text


def lambda_condition(fn, var: str, variables: list[str], schema: pa.Schema | None):
    """The condition a user lambda gives: local with one parameter, else a :class:`RowLambda`."""
    if not callable(fn):
        raise PlanError(f"the condition of {var} must be a lambda, got {fn!r}")
    code = getattr(fn, "__code__", None)
    argc = code.co_argcount if code is not None else 1
    if argc <= 1:
        return LocalLambda(fn, schema)
    names = list(code.co_varnames[1:argc])
    unknown = [n for n in names if n not in variables]
    if unknown:
        raise PlanError(
            f"the condition of {var} has parameter(s) {unknown} that name no pattern variable; "
            f"parameters after the row are the last rows of variables {variables}"
        )
    if schema is None:
        raise PlanError(f"the condition of {var} reads earlier rows: the stream's fields must be known")
    return RowLambda(fn, names, schema)


# -- measures ---------------------------------------------------------------------------------------
MEASURES = ("first", "last", "count", "sum", "avg", "min", "max")
_MEASURE = re.compile(r"^\s*(\w+)\s*\(\s*(?:(\w+)\s*\.\s*)?(\*|\w+)?\s*\)\s*$")


@dataclass(frozen=True)
class Measure:
    kind: str
    var: str | None
    column: str | None  # None: count of rows

    def text(self) -> str:
        inner = f"{self.var + '.' if self.var else ''}{self.column or '*'}"
        return f"{self.kind}({inner})"


def parse_measure(name: str, spec, variables: list[str], schema: pa.Schema | None) -> Measure:
    """``"first(A.price)"``, ``"last(t)"``, ``"count(*)"``, ``"count(B)"``, ``"sum(B.v)"``, ``"avg(v)"``..."""
    if isinstance(spec, Measure):
        m = spec
    else:
        found = _MEASURE.match(spec) if isinstance(spec, str) else None
        if found is None:
            raise PlanError(f"measure {name}={spec!r}: expected kind(VAR.field), e.g. 'first(A.price)', 'count(B)'")
        kind, var, column = found.group(1).lower(), found.group(2), found.group(3)
        if var is None and column in variables and kind == "count":
            var, column = column, None
        if column == "*":
            column = None
        m = Measure(kind, var, column)
    if m.kind not in MEASURES:
        raise PlanError(f"measure {name}: {m.kind} is not supported; measures are {', '.join(MEASURES)}")
    if m.var is not None and m.var not in variables:
        raise PlanError(f"measure {name}: {m.var} is not a pattern variable ({', '.join(variables)})")
    if m.column is None and m.kind != "count":
        raise PlanError(f"measure {name}: {m.kind} needs a field, e.g. {m.kind}({m.var or 'A'}.price)")
    if m.column is not None and schema is not None and m.column not in schema.names:
        raise PlanError(f"measure {name}: unknown field {m.column}; fields are {schema.names}")
    return m


def measure_type(m: Measure, schema: pa.Schema | None) -> pa.DataType | None:
    if m.kind == "count":
        return pa.int64()
    if m.kind == "avg":
        return pa.float64()
    if schema is None:
        return None
    t = schema.field(m.column).type
    if m.kind == "sum":
        if pa.types.is_integer(t) or pa.types.is_boolean(t):
            return pa.int64()
        if pa.types.is_floating(t):
            return pa.float64()
        raise PlanError(f"sum({m.column}): {t} values cannot be summed")
    return t


def measure_value(m: Measure, values: list):
    """The measure over ``values``: the column's values at the rows mapped to its variable, in order."""
    if m.kind == "first":
        return values[0] if values else None
    if m.kind == "last":
        return values[-1] if values else None
    present = [v for v in values if v is not None]
    if m.kind == "count":
        return len(values) if m.column is None else len(present)
    if not present:
        return None
    if m.kind == "sum":
        return sum(present)
    if m.kind == "avg":
        return sum(present) / len(present)
    return min(present) if m.kind == "min" else max(present)


class SqlDefine:
    """What a SQL DEFINE clause gives a plan: builds a fresh :class:`SqlCondition` per run."""

    def __init__(self, node, texts: dict, text: str, refs: tuple, schema: pa.Schema | None, rewrite=None):
        self.args = (node, texts, text, tuple(refs), schema, rewrite)

    def condition(self) -> SqlCondition:
        return SqlCondition(*self.args)
