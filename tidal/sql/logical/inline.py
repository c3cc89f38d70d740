"""Rows written in the query itself: ``VALUES (...), (...)`` and ``range`` / ``generate_series``.

Both become a :class:`~.nodes.Scan` that carries its rows as an Arrow table, so projection and
filter pushdown, event time and every later stage treat them as they treat a file.
"""

from __future__ import annotations

import decimal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from ...core.errors import PlanError
from ...expr.sqldecimal import common_type
from ..expressions import Evaluator, SqlTypeError
from .nodes import Scan

MAX_SERIES_ROWS = 100_000_000


def _constant(value: exp.Expression, where: str) -> pa.Scalar:
    if value.find(exp.Column) is not None:
        raise PlanError(f"{where}: only constant values are supported, got {value.sql(dialect='duckdb')}")
    try:
        return Evaluator({}, 0).eval(value)
    except SqlTypeError as err:
        raise PlanError(f"{where}: {err}") from None


def _literal_type(s: pa.Scalar) -> pa.DataType:
    """A constant's type as DuckDB types its literal: an integer that fits one is an INTEGER."""
    if pa.types.is_int64(s.type) and s.is_valid and -(2**31) <= s.as_py() < 2**31:
        return pa.int32()
    return s.type


def _common_type(types: list[pa.DataType], where: str, literal_types=None) -> pa.DataType:
    known = [t for t in types if not pa.types.is_null(t)]
    literal_types = [t for t in literal_types or () if not pa.types.is_null(t)]
    if not known:
        return pa.null()
    if all(t == known[0] for t in known):
        return known[0]
    if all(pa.types.is_integer(t) for t in known):
        return pa.int64()
    if (exact := common_type(literal_types or known)) is not None:  # DECIMALs (integers beside them): DuckDB's
        return exact
    if all(pa.types.is_integer(t) or pa.types.is_floating(t) for t in known):
        return pa.float64()
    names = sorted({str(t) for t in known})
    raise PlanError(f"{where} mixes types {', '.join(names)}: not supported (cast the values to one type)")


def _scan(label: str, table: pa.Table) -> Scan:
    # the label names the rows (with a digest, so two different VALUES lists never compare equal);
    # hashlib loads OpenSSL: only here, not for every query
    import hashlib

    digest = hashlib.sha256(repr(table.to_pydict()).encode()).hexdigest()[:8]
    return Scan(
        path=f"{label} #{digest}",
        format="inline",
        names=tuple(table.column_names),
        scope=tuple((None, n) for n in table.column_names),
        types=tuple(table.schema.types),
        file_columns=tuple(table.column_names),
        rows=table,
    )


def inline_rows(values: exp.Values) -> Scan:
    """``VALUES (a, b), (c, d)``: columns ``col0, col1, ...`` (renamed by ``AS t(x, y)``)."""
    rows = [t.expressions if isinstance(t, exp.Tuple) else [t] for t in values.expressions]
    width = len(rows[0])
    if any(len(r) != width for r in rows):
        raise PlanError(f"VALUES rows have different numbers of values: {values.sql(dialect='duckdb')[:80]}")
    columns = {}
    for j in range(width):
        where = f"VALUES column {j + 1}"
        scalars = [_constant(r[j], where) for r in rows]
        typ = _common_type([s.type for s in scalars], where, [_literal_type(s) for s in scalars])
        values = [s.as_py() for s in scalars]
        if pa.types.is_floating(typ) or pa.types.is_decimal(typ):  # a DECIMAL among DOUBLEs, integers among DECIMALs
            values = [v if v is None else float(v) if pa.types.is_floating(typ) else decimal.Decimal(v) for v in values]
            columns[f"col{j}"] = (
                pc.cast(pa.array(values), typ) if any(v is not None for v in values) else pa.nulls(len(values), typ)
            )
        else:
            columns[f"col{j}"] = pa.array(values, typ)
    return _scan(f"VALUES ({len(rows)} rows)", pa.table(columns))


def number_series(call: exp.GenerateSeries) -> Scan:
    """``range(stop)``, ``range(start, stop[, step])`` (stop excluded) and ``generate_series`` (stop
    included), over integers; the column is named after the function, as in DuckDB."""
    exclusive = bool(call.args.get("is_end_exclusive"))
    name = "range" if exclusive else "generate_series"
    parts = {}
    for key in ("start", "end", "step"):
        value = call.args.get(key)
        if value is None:
            continue
        got = _constant(value, f"{name}(...)").as_py()
        if got is None:
            return _scan(f"{name}(NULL)", pa.table({name: pa.array([], pa.int64())}))
        if not isinstance(got, int) or isinstance(got, bool):
            raise PlanError(f"{name}(...) over {type(got).__name__} values is not supported (integers only)")
        parts[key] = got
    start, stop, step = parts.get("start", 0), parts["end"], parts.get("step", 1)
    if step == 0:
        raise PlanError(f"{name}(...): the step must not be 0")
    if not exclusive:
        stop += 1 if step > 0 else -1
    count = max(0, -(-(stop - start) // step)) if step > 0 else max(0, -(-(start - stop) // -step))
    if count > MAX_SERIES_ROWS:
        raise PlanError(f"{name}(...) would make {count:,} rows; at most {MAX_SERIES_ROWS:,} are supported")
    values = np.arange(start, stop, step, dtype=np.int64) if count else np.zeros(0, np.int64)
    return _scan(f"{name}({start}, {stop}, {step})", pa.table({name: values}))
