"""SQL scalar expressions evaluated columnar with ``pyarrow.compute``.

A bound expression (a sqlglot tree whose columns name physical batch columns) is evaluated
over a dict of Arrow arrays, one kernel call per node, never row by row. Scalars stay Arrow
scalars and broadcast. SQL null rules follow from Arrow's: arithmetic and comparisons with a
null give null, ``AND``/``OR`` use Kleene logic, a null predicate does not keep a row.
Division follows DuckDB: ``/`` is floating point (IEEE: ``x / 0`` is infinite); ``//`` is
integer division, where a zero divisor gives null.

Errors name the expression: a type mismatch raises :class:`SqlTypeError` with the SQL text of
the failing node, found at plan time by evaluating over empty columns of the input's types.
"""

from __future__ import annotations

import datetime as dt
import re

import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from ..core.errors import PlanError


class SqlTypeError(PlanError):
    """An expression cannot be evaluated on the types it is given."""


_UNIT_US = {
    "MICROSECOND": 1,
    "MILLISECOND": 1_000,
    "SECOND": 1_000_000,
    "MINUTE": 60_000_000,
    "HOUR": 3_600_000_000,
    "DAY": 86_400_000_000,
    "WEEK": 7 * 86_400_000_000,
}


def interval_micros(node: exp.Expression) -> int:
    """The length of an ``INTERVAL n UNIT`` literal (or a plain integer) in microseconds."""
    if isinstance(node, exp.Interval):
        unit = node.args.get("unit")
        value = node.this.name if isinstance(node.this, exp.Literal) else node.this.sql()
        unit_name = unit.name.upper() if unit is not None else ""
        if not unit_name:  # INTERVAL '5 seconds'
            parts = value.split()
            value, unit_name = parts[0], (parts[1].upper() if len(parts) > 1 else "SECOND")
        unit_name = unit_name.rstrip("S") if unit_name.endswith("S") else unit_name
        if unit_name not in _UNIT_US:
            raise PlanError(f"unsupported interval unit {unit_name!r} in {node.sql()}")
        return int(round(float(value) * _UNIT_US[unit_name]))
    if isinstance(node, exp.Literal) and not node.is_string:
        return int(node.name)
    raise PlanError(f"expected an INTERVAL literal, got {node.sql()}")


_TYPES = {
    "INT": pa.int32(),
    "INTEGER": pa.int32(),
    "SMALLINT": pa.int16(),
    "TINYINT": pa.int8(),
    "BIGINT": pa.int64(),
    "HUGEINT": pa.int64(),
    "UBIGINT": pa.uint64(),
    "FLOAT": pa.float32(),
    "DOUBLE": pa.float64(),
    "DECIMAL": pa.float64(),
    "VARCHAR": pa.string(),
    "TEXT": pa.string(),
    "CHAR": pa.string(),
    "BOOLEAN": pa.bool_(),
    "DATE": pa.date32(),
    "TIMESTAMP": pa.timestamp("us"),
    "DATETIME": pa.timestamp("us"),
    "TIMESTAMPTZ": pa.timestamp("us", "UTC"),
}


def arrow_type(node: exp.DataType) -> pa.DataType:
    name = node.this.name if hasattr(node.this, "name") else str(node.this)
    name = name.upper().replace("TYPE.", "")
    if name not in _TYPES:
        raise PlanError(f"unsupported type {node.sql()}")
    return _TYPES[name]


def _is_scalar(v) -> bool:
    return isinstance(v, pa.Scalar)


def _type(v) -> pa.DataType:
    return v.type


def _numeric(t) -> bool:
    return pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t)


def _temporal(t) -> bool:
    return pa.types.is_timestamp(t) or pa.types.is_date(t)


def _align(a, b):
    """Implicit casts SQL makes in comparisons and arithmetic: a string literal next to a time."""
    ta, tb = _type(a), _type(b)
    if _temporal(ta) and pa.types.is_string(tb):
        return a, pc.cast(b, ta if pa.types.is_timestamp(ta) else pa.date32())
    if _temporal(tb) and pa.types.is_string(ta):
        return pc.cast(a, tb if pa.types.is_timestamp(tb) else pa.date32()), b
    if pa.types.is_timestamp(ta) and pa.types.is_date(tb):
        return a, pc.cast(b, ta)
    if pa.types.is_date(ta) and pa.types.is_timestamp(tb):
        return pc.cast(a, tb), b
    if pa.types.is_null(ta) and not pa.types.is_null(tb):
        return pc.cast(a, tb), b
    if pa.types.is_null(tb) and not pa.types.is_null(ta):
        return a, pc.cast(b, ta)
    return a, b


def _like_pattern(pattern: str, escape: str | None = None) -> str:
    return pattern


IN_SUBQUERY = "in_subquery"


def in_subquery(value: exp.Expression, key: int) -> exp.Expression:
    """``value IN (subquery number key)``; the subquery's result is materialised before the query runs."""
    return exp.Anonymous(this=IN_SUBQUERY, expressions=[value, exp.Literal.number(key)])


def has_subquery(node: exp.Expression) -> bool:
    return any(isinstance(x, exp.Anonymous) and x.name == IN_SUBQUERY for x in node.walk())


class Evaluator:
    """Evaluates bound expressions over ``columns`` (name -> Arrow array) of ``n`` rows.

    ``subresults`` holds the materialised one-column results of IN subqueries, by number.
    """

    def __init__(self, columns: dict[str, pa.Array], n: int, subresults: dict | None = None):
        self.columns = columns
        self.n = n
        self.subresults = subresults or {}

    def _in_subquery(self, node):
        value, key = node.expressions[0], int(node.expressions[1].name)
        if key not in self.subresults:
            # at plan time (type checks) the subquery has not run: a boolean of the right length
            return pa.nulls(self.n, pa.bool_())
        return self.in_array(self.eval(value), self.subresults[key])

    def array(self, node: exp.Expression) -> pa.Array:
        """The expression's value for every row, as an Arrow array of length ``n``."""
        v = self.eval(node)
        if _is_scalar(v):
            return pa.repeat(v, self.n) if v.is_valid else pa.nulls(self.n, v.type)
        if isinstance(v, pa.ChunkedArray):
            return v.combine_chunks()
        return v

    def mask(self, node: exp.Expression) -> pa.Array:
        """A boolean keep-mask: null counts as false (SQL WHERE)."""
        v = self.array(node)
        if not pa.types.is_boolean(v.type):
            raise SqlTypeError(f"condition {node.sql()} is {v.type}, not boolean")
        return pc.fill_null(v, False)

    def eval(self, node: exp.Expression):
        method = getattr(self, "e_" + type(node).__name__, None)
        if method is None:
            raise PlanError(f"unsupported SQL expression: {node.sql()} ({type(node).__name__})")
        try:
            return method(node)
        except (pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
            raise SqlTypeError(f"type error in {node.sql()}: {str(exc).splitlines()[0]}") from None
        except pa.ArrowInvalid as exc:
            raise SqlTypeError(f"cannot evaluate {node.sql()}: {str(exc).splitlines()[0]}") from None

    # -- leaves --------------------------------------------------------------------------------
    def e_Column(self, node):
        name = node.name
        if name not in self.columns:
            raise PlanError(f"unknown column {node.sql()}; columns are {sorted(self.columns)}")
        return self.columns[name]

    def e_Literal(self, node):
        if node.is_string:
            return pa.scalar(node.name, pa.string())
        text = node.name
        if re.fullmatch(r"[+-]?\d+", text):
            return pa.scalar(int(text), pa.int64())
        return pa.scalar(float(text), pa.float64())

    def e_Null(self, node):
        return pa.scalar(None, pa.null())

    def e_Boolean(self, node):
        return pa.scalar(bool(node.this), pa.bool_())

    def e_Paren(self, node):
        return self.eval(node.this)

    def e_Alias(self, node):
        return self.eval(node.this)

    def e_Interval(self, node):
        return pa.scalar(interval_micros(node), pa.duration("us"))

    # -- arithmetic ------------------------------------------------------------------------
    def _binary(self, node):
        return _align(self.eval(node.this), self.eval(node.expression))

    def e_Add(self, node):
        a, b = self._binary(node)
        return pc.add(a, b)

    def e_Sub(self, node):
        a, b = self._binary(node)
        return pc.subtract(a, b)

    def e_Mul(self, node):
        return pc.multiply(*self._binary(node))

    def e_Div(self, node):
        a, b = self._binary(node)
        if not (_numeric(_type(a)) and _numeric(_type(b))):
            raise SqlTypeError(f"type error in {node.sql()}: cannot divide {_type(a)} by {_type(b)}")
        return pc.divide(pc.cast(a, pa.float64()), pc.cast(b, pa.float64()))

    def e_IntDiv(self, node):
        a, b = self._binary(node)
        b = pc.if_else(pc.equal(b, 0), pa.scalar(None, _type(b)), b)
        q = pc.divide(pc.cast(a, pa.float64()), pc.cast(b, pa.float64()))
        return pc.cast(pc.floor(q), pa.int64())

    def e_Mod(self, node):
        a, b = self._binary(node)
        if pa.types.is_integer(_type(a)) and pa.types.is_integer(_type(b)):
            b = pc.if_else(pc.equal(b, 0), pa.scalar(None, _type(b)), b)
            # SQL's remainder has the sign of the dividend (truncated division)
            q = pc.trunc(pc.divide(pc.cast(a, pa.float64()), pc.cast(b, pa.float64())))
            return pc.subtract(a, pc.multiply(pc.cast(q, pa.int64()), b))
        a, b = pc.cast(a, pa.float64()), pc.cast(b, pa.float64())
        return pc.subtract(a, pc.multiply(pc.trunc(pc.divide(a, b)), b))

    def e_Neg(self, node):
        return pc.negate(self.eval(node.this))

    def e_DPipe(self, node):
        a, b = self._binary(node)
        return pc.binary_join_element_wise(pc.cast(a, pa.string()), pc.cast(b, pa.string()), "")

    # -- comparison and logic ------------------------------------------------------------
    def e_EQ(self, node):
        return pc.equal(*self._binary(node))

    def e_NEQ(self, node):
        return pc.not_equal(*self._binary(node))

    def e_GT(self, node):
        return pc.greater(*self._binary(node))

    def e_GTE(self, node):
        return pc.greater_equal(*self._binary(node))

    def e_LT(self, node):
        return pc.less(*self._binary(node))

    def e_LTE(self, node):
        return pc.less_equal(*self._binary(node))

    def e_And(self, node):
        return pc.and_kleene(*self._binary(node))

    def e_Or(self, node):
        return pc.or_kleene(*self._binary(node))

    def e_Not(self, node):
        return pc.invert(self.eval(node.this))

    def e_Is(self, node):
        v = self.eval(node.this)
        target = node.expression
        if isinstance(target, exp.Null):
            return pc.is_null(v)
        if isinstance(target, exp.Boolean):
            return pc.fill_null(pc.equal(v, pa.scalar(bool(target.this))), False)
        raise PlanError(f"unsupported IS test: {node.sql()}")

    def e_Between(self, node):
        v = self.eval(node.this)
        lo = _align(v, self.eval(node.args["low"]))[1]
        hi = _align(v, self.eval(node.args["high"]))[1]
        return pc.and_kleene(pc.greater_equal(v, lo), pc.less_equal(v, hi))

    def e_In(self, node):
        v = self.eval(node.this)
        if node.args.get("query") is not None:
            raise PlanError(f"IN (subquery) must be planned before evaluation: {node.sql()}")
        values = [self.eval(e) for e in node.expressions]
        if not all(_is_scalar(x) for x in values):
            out = None
            for x in values:
                eq = pc.equal(*_align(v, x))
                out = eq if out is None else pc.or_kleene(out, eq)
            return out
        return self._in_values(v, [x for x in values])

    def _in_values(self, v, scalars):
        non_null = [s for s in scalars if s.is_valid]
        target = _type(v)
        value_set = pa.array([s.as_py() for s in non_null]) if non_null else pa.array([], target)
        if _temporal(target) or pa.types.is_null(value_set.type) is False and value_set.type != target:
            try:
                value_set = value_set.cast(target)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                pass
        hit = pc.is_in(v, value_set=value_set)
        # SQL: x IN (...) is null when x is null, or when no match and the list holds a null
        hit = pc.if_else(pc.is_null(v), pa.scalar(None, pa.bool_()), hit)
        if len(non_null) < len(scalars):
            hit = pc.if_else(hit, True, pa.scalar(None, pa.bool_()))
        return hit

    def in_array(self, v, values: pa.Array):
        """``v IN values`` for a materialised subquery result (SQL null rules)."""
        has_null = values.null_count > 0
        values = values.drop_null()
        if values.type != _type(v):
            values = values.cast(_type(v))
        hit = pc.is_in(v, value_set=values)
        hit = pc.if_else(pc.is_null(v), pa.scalar(None, pa.bool_()), hit)
        if has_null:
            hit = pc.if_else(hit, True, pa.scalar(None, pa.bool_()))
        return hit

    def e_Like(self, node):
        return self._like(node, ignore_case=False)

    def e_ILike(self, node):
        return self._like(node, ignore_case=True)

    def _like(self, node, ignore_case: bool):
        v = self.eval(node.this)
        pattern = node.expression
        if not (isinstance(pattern, exp.Literal) and pattern.is_string):
            raise PlanError(f"LIKE needs a constant pattern: {node.sql()}")
        return pc.match_like(v, pattern.name, ignore_case=ignore_case)

    def e_Escape(self, node):
        raise PlanError(f"LIKE ... ESCAPE is not supported: {node.sql()}")

    def e_RegexpLike(self, node):
        pattern = node.expression
        if not isinstance(pattern, exp.Literal):
            raise PlanError(f"regular expression must be a constant: {node.sql()}")
        return pc.match_substring_regex(self.eval(node.this), pattern.name)

    def e_RegexpReplace(self, node):
        flags = node.args.get("modifiers")
        count = None if flags is not None and "g" in flags.name else 1
        return pc.replace_substring_regex(
            self.eval(node.this), node.expression.name, node.args["replacement"].name, max_replacements=count
        )

    def e_RegexpExtract(self, node):
        pattern = node.expression.name
        group = int(node.args["group"].name) if node.args.get("group") is not None else 0
        v = self.array(node.this)
        # name the groups so pyarrow's extract_regex returns a struct of them
        count = [0]

        def name_group(m):
            count[0] += 1
            return f"(?P<g{count[0]}>"

        wrapped = "(?P<g0>" + re.sub(r"\((?!\?)", name_group, pattern) + ")"
        got = pc.extract_regex(v, wrapped)
        # DuckDB returns '' when nothing matches
        return (
            pc.fill_null(pc.if_else(pc.is_null(v), None, pc.struct_field(got, [group])), "")
            if len(v)
            else pa.array([], pa.string())
        )

    def e_Case(self, node):
        subject = node.this
        conds, values = [], []
        for when in node.args["ifs"]:
            c = when.this if subject is None else exp.EQ(this=subject, expression=when.this)
            conds.append(pc.fill_null(self.array(c), False))
            values.append(self.eval(when.args["true"]))
        default = node.args.get("default")
        values.append(self.eval(default) if default is not None else pa.scalar(None, pa.null()))
        return self._choose(conds, values)

    def _choose(self, conds, values):
        target = None
        for v in values:
            t = _type(v)
            if pa.types.is_null(t):
                continue
            if target is None or (pa.types.is_integer(target) and pa.types.is_floating(t)):
                target = t
        target = target or pa.null()
        values = [self._broadcast(pc.cast(v, target) if _type(v) != target else v) for v in values]
        if not conds:
            return values[-1]
        struct = pa.StructArray.from_arrays(conds, names=[f"c{i}" for i in range(len(conds))])
        return pc.case_when(struct, *values)

    def _broadcast(self, v):
        if _is_scalar(v):
            return pa.repeat(v, self.n) if v.is_valid else pa.nulls(self.n, v.type)
        return v

    def e_If(self, node):
        cond = pc.fill_null(self.array(node.this), False)
        false = node.args.get("false")
        values = [self.eval(node.args["true"]), self.eval(false) if false is not None else pa.scalar(None, pa.null())]
        return self._choose([cond], values)

    def e_Coalesce(self, node):
        args = [self.eval(node.this), *[self.eval(e) for e in node.expressions]]
        target = next((_type(a) for a in args if not pa.types.is_null(_type(a))), pa.null())
        if any(pa.types.is_floating(_type(a)) for a in args) and _numeric(target):
            target = pa.float64()
        return pc.coalesce(*[self._broadcast(pc.cast(a, target)) for a in args])

    def e_Nullif(self, node):
        a, b = self._binary(node)
        return pc.if_else(pc.fill_null(pc.equal(a, b), False), pa.scalar(None, _type(a)), a)

    def e_Greatest(self, node):
        args = [self.eval(node.this), *[self.eval(e) for e in node.expressions]]
        return pc.max_element_wise(*args, skip_nulls=False)

    def e_Least(self, node):
        args = [self.eval(node.this), *[self.eval(e) for e in node.expressions]]
        return pc.min_element_wise(*args, skip_nulls=False)

    def e_Cast(self, node):
        v = self.eval(node.this)
        target = arrow_type(node.to)
        if pa.types.is_string(_type(v)) and pa.types.is_boolean(target):
            return pc.equal(pc.utf8_lower(v), "true")
        if pa.types.is_floating(_type(v)) and pa.types.is_integer(target):
            v = pc.round(v)  # SQL rounds to the nearest integer when casting a float
        return pc.cast(v, target)

    def e_TryCast(self, node):
        try:
            return self.e_Cast(node)
        except (pa.ArrowInvalid, SqlTypeError):
            v = self.array(node.this)
            target = arrow_type(node.to)
            out = []
            for x in v.to_pylist():
                try:
                    out.append(pc.cast(pa.scalar(x), target).as_py())
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                    out.append(None)
            return pa.array(out, target)

    # -- numbers ----------------------------------------------------------------------------
    def e_Abs(self, node):
        return pc.abs(self.eval(node.this))

    def e_Round(self, node):
        digits = node.args.get("decimals")
        v = self.eval(node.this)
        nd = int(digits.name) if digits is not None else 0
        # SQL rounds half away from zero
        return pc.round(v, ndigits=nd, round_mode="half_towards_infinity")

    def e_Floor(self, node):
        return pc.floor(self.eval(node.this))

    def e_Ceil(self, node):
        return pc.ceil(self.eval(node.this))

    def e_Sqrt(self, node):
        return pc.sqrt(pc.cast(self.eval(node.this), pa.float64()))

    def e_Pow(self, node):
        a, b = self._binary(node)
        return pc.power(pc.cast(a, pa.float64()), pc.cast(b, pa.float64()))

    def e_Ln(self, node):
        return pc.ln(pc.cast(self.eval(node.this), pa.float64()))

    def e_Exp(self, node):
        return pc.exp(pc.cast(self.eval(node.this), pa.float64()))

    def e_Sign(self, node):
        return pc.sign(self.eval(node.this))

    # -- strings ----------------------------------------------------------------------------
    def e_Upper(self, node):
        return pc.utf8_upper(self.eval(node.this))

    def e_Lower(self, node):
        return pc.utf8_lower(self.eval(node.this))

    def e_Length(self, node):
        return pc.cast(pc.utf8_length(self.eval(node.this)), pa.int64())

    def e_Trim(self, node):
        v = self.eval(node.this)
        position = (node.args.get("position") or "").upper()
        if position == "LEADING":
            return pc.utf8_ltrim_whitespace(v)
        if position == "TRAILING":
            return pc.utf8_rtrim_whitespace(v)
        return pc.utf8_trim_whitespace(v)

    def e_Substring(self, node):
        v = self.array(node.this)
        start = int(node.args["start"].name) if node.args.get("start") is not None else 1
        length = node.args.get("length")
        begin = start - 1 if start > 0 else 0
        stop = (
            None if length is None else begin + int(length.name) if start > 0 else max(0, start - 1 + int(length.name))
        )
        return pc.utf8_slice_codeunits(v, begin, stop)

    def e_Concat(self, node):
        args = [pc.cast(self._broadcast(self.eval(e)), pa.string()) for e in node.expressions]
        # DuckDB's concat skips nulls
        args = [pc.fill_null(a, "") for a in args]
        return pc.binary_join_element_wise(*args, "")

    def e_Replace(self, node):
        return pc.replace_substring(self.eval(node.this), node.expression.name, node.args["replacement"].name)

    def e_StartsWith(self, node):
        return pc.starts_with(self.eval(node.this), node.expression.name)

    def e_EndsWith(self, node):
        return pc.ends_with(self.eval(node.this), node.expression.name)

    def e_Contains(self, node):
        return pc.match_substring(self.eval(node.this), node.expression.name)

    def e_Left(self, node):
        return pc.utf8_slice_codeunits(self.eval(node.this), 0, int(node.expression.name))

    def e_Right(self, node):
        n = int(node.expression.name)
        return (
            pc.utf8_slice_codeunits(self.eval(node.this), -n)
            if n
            else pc.utf8_slice_codeunits(self.eval(node.this), 0, 0)
        )

    def e_Reverse(self, node):
        return pc.utf8_reverse(self.eval(node.this))

    def e_Anonymous(self, node):
        name = node.name.lower()
        args = node.expressions
        if name == IN_SUBQUERY:
            return self._in_subquery(node)
        if name == "strlen":
            return pc.cast(pc.utf8_length(self.eval(args[0])), pa.int64())
        if name in ("epoch_us", "epoch_ms", "epoch"):
            v = pc.cast(pc.cast(self.eval(args[0]), pa.timestamp("us")), pa.int64())
            return {"epoch_us": v, "epoch_ms": pc.divide(v, 1000), "epoch": pc.divide(pc.cast(v, pa.float64()), 1e6)}[
                name
            ]
        raise PlanError(f"unknown function {node.sql()}")

    # -- date and time ---------------------------------------------------------------------
    def _part(self, unit: str, v):
        unit = unit.lower()
        fns = {
            "year": pc.year,
            "month": pc.month,
            "day": pc.day,
            "hour": pc.hour,
            "minute": pc.minute,
            "second": pc.second,
            "dow": pc.day_of_week,
            "doy": pc.day_of_year,
            "week": pc.iso_week,
            "quarter": pc.quarter,
            "millisecond": pc.millisecond,
            "microsecond": pc.microsecond,
            "epoch": None,
        }
        if unit not in fns:
            raise PlanError(f"unsupported date part {unit!r}")
        if unit == "dow":
            return pc.day_of_week(v, count_from_zero=True, week_start=7)
        if unit == "epoch":
            return pc.divide(pc.cast(pc.cast(v, pa.timestamp("us")), pa.int64()), 1_000_000)
        return fns[unit](v)

    def e_Extract(self, node):
        return self._part(node.this.name, self.eval(node.expression))

    def e_Year(self, node):
        return pc.year(self.eval(node.this))

    def e_Month(self, node):
        return pc.month(self.eval(node.this))

    def e_Day(self, node):
        return pc.day(self.eval(node.this))

    def e_Hour(self, node):
        return pc.hour(self.eval(node.this))

    def e_Minute(self, node):
        return pc.minute(self.eval(node.this))

    def e_Second(self, node):
        return pc.second(self.eval(node.this))

    def e_DatePart(self, node):
        return self._part(node.this.name, self.eval(node.expression))

    def e_TimestampTrunc(self, node):
        v = self.eval(node.this)
        unit = node.args["unit"].name.lower()
        return pc.floor_temporal(v, unit=unit)

    e_DateTrunc = e_TimestampTrunc

    def e_StrToTime(self, node):
        return pc.cast(pc.strptime(self.eval(node.this), node.args["format"].name, unit="us"), pa.timestamp("us"))

    def e_TimeToStr(self, node):
        return pc.strftime(self.eval(node.this), node.args["format"].name)

    def e_CurrentTimestamp(self, node):
        return pa.scalar(dt.datetime.now(dt.UTC).replace(tzinfo=None), pa.timestamp("us"))

    def e_CurrentDate(self, node):
        return pa.scalar(dt.date.today(), pa.date32())

    def e_TsOrDsToDate(self, node):
        return pc.cast(self.eval(node.this), pa.date32())

    def e_Date(self, node):
        v = self.eval(node.this)
        if pa.types.is_timestamp(_type(v)):
            return pc.cast(pc.floor_temporal(v, unit="day"), pa.date32())
        return pc.cast(v, pa.date32())


def scalar_to_sql(value: pa.Scalar) -> exp.Expression | None:
    """A literal for a folded constant, or None when it has no plain literal form."""
    py = value.as_py()
    if py is None:
        return exp.Null()
    if isinstance(py, bool):
        return exp.Boolean(this=py)
    if isinstance(py, int | float) and not isinstance(py, bool):
        if isinstance(py, float) and (py != py or py in (float("inf"), float("-inf"))):
            return None
        return exp.Literal.number(repr(py) if isinstance(py, float) else py)
    if isinstance(py, str):
        return exp.Literal.string(py)
    return None


def output_type(node: exp.Expression, schema: pa.Schema) -> pa.DataType:
    """The Arrow type of ``node`` over ``schema``: evaluates it on empty columns (finds type errors)."""
    ev = Evaluator({f.name: pa.array([], f.type) for f in schema}, 0)
    return ev.array(node).type


def pushable_predicate(node: exp.Expression) -> pc.Expression | None:
    """``node`` as a ``pyarrow.compute.Expression`` a file reader can apply, or None."""
    if isinstance(node, exp.Paren):
        return pushable_predicate(node.this)
    if isinstance(node, exp.And | exp.Or):
        a, b = pushable_predicate(node.this), pushable_predicate(node.expression)
        if a is None or b is None:
            return None
        return (a & b) if isinstance(node, exp.And) else (a | b)
    if isinstance(node, exp.Not):
        a = pushable_predicate(node.this)
        return None if a is None else ~a
    ops = {
        exp.EQ: "__eq__",
        exp.NEQ: "__ne__",
        exp.GT: "__gt__",
        exp.GTE: "__ge__",
        exp.LT: "__lt__",
        exp.LTE: "__le__",
    }
    for cls, method in ops.items():
        if isinstance(node, cls):
            col, lit = node.this, node.expression
            if isinstance(col, exp.Column) and isinstance(lit, exp.Literal):
                value = Evaluator({}, 0).eval(lit).as_py()
                if lit.is_string:
                    return None  # string vs timestamp columns need a cast the reader would not make
                return getattr(pc.field(col.name), method)(value)
            return None
    if isinstance(node, exp.Is) and isinstance(node.this, exp.Column) and isinstance(node.expression, exp.Null):
        return pc.field(node.this.name).is_null()
    return None
