"""SQL semantics for expression trees, evaluated columnar with ``pyarrow.compute``.

Trees translated from SQL (:mod:`tidal.sql.expressions`) are evaluated over a dict of Arrow
arrays, one kernel call per node, never row by row. Scalars stay Arrow scalars and broadcast.
SQL null rules follow from Arrow's: arithmetic and comparisons with a null give null,
``AND``/``OR``/``NOT`` use Kleene logic, a null predicate does not keep a row. Division follows
DuckDB: ``/`` is floating point (IEEE: ``x / 0`` is infinite); ``//`` and ``%`` over integers
truncate toward zero, and a zero divisor is an error naming the expression (DuckDB 2's default).

Errors name the expression: a type mismatch raises :class:`SqlTypeError` with the SQL text of
the failing node (``texts``: id of a node -> its SQL, from the translator).
"""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pyarrow.compute as pc

from ..core.errors import PlanError
from . import sqldecimal as dec
from . import sqlints, sqlmore, sqltime
from .nodes import BinOp, BoolOp, Call, Case, Cast, Col, Compare, Const, IsNull, Like, Node, SqlCall, Unary
from .sqlextra import FUNCS as EXTRA_FUNCS
from .sqlmore import FUNCS as MORE_FUNCS
from .sqlmore import (
    _align,
    _date,
    _divided,
    _greatest,
    _numeric,
    _round,
    _temporal,
    as_text,
    cast_to,
    decimal_rounded,
    float_text,
    floor_ceil,
    reverse_text,
    sign,
    text_to_time,
    time_to_text,
    trunc,
)
from .sqlstrings import FUNCS as STRING_FUNCS
from .sqlstrings import SqlTypeError, like
from .sqltime import date_arith, epoch, microseconds, milliseconds, strftime, text_to_bool, text_to_number


def compare_values(op: str, a, b):
    """``a op b`` (aligned): a boolean next to a number compares as that number (DuckDB's 0 and 1)."""
    if pa.types.is_boolean(a.type) and _numeric(b.type):
        a = cast_to(a, b.type)
    elif pa.types.is_boolean(b.type) and _numeric(a.type):
        b = cast_to(b, a.type)
    if pa.types.is_floating(a.type) or pa.types.is_floating(b.type):
        return _compare_floats(op, a, b)
    return _CMP[op](*dec.comparable(*sqlints.comparable(a, b)))


def _compare_floats(op: str, a, b):
    """DuckDB orders floating-point values totally: NaN equals NaN and is larger than every other
    number (IEEE comparisons are false for NaN). Where either side is NaN the answer comes from which
    sides are NaN; elsewhere it is the plain comparison; NULL stays NULL."""
    no = pa.scalar(False)
    an = pc.is_nan(a) if pa.types.is_floating(a.type) else no
    bn = pc.is_nan(b) if pa.types.is_floating(b.type) else no
    by_nan = {
        "==": lambda: pc.and_(an, bn),
        "!=": lambda: pc.invert(pc.and_(an, bn)),
        "<": lambda: pc.and_(pc.invert(an), bn),
        "<=": lambda: bn,
        ">": lambda: pc.and_(an, pc.invert(bn)),
        ">=": lambda: an,
    }[op]()
    return pc.if_else(pc.or_(an, bn), by_nan, _CMP[op](a, b))


def _truth(v):
    """A value in a boolean context (a condition, ``AND``/``OR``/``NOT``) as DuckDB casts it
    implicitly: an untyped NULL is a NULL boolean, a number is true when not zero; other types are
    left as they are (the boolean kernels then refuse them)."""
    t = v.type
    if pa.types.is_null(t):
        return cast_to(v, pa.bool_())
    if _numeric(t):
        return pc.not_equal(v, pa.scalar(0, t))
    return v


def _nulls_as(values, nodes=None, columns=None):  # untyped NULLs cast to the common type (BIGINT: all NULL)
    values = sqlints.narrow_literals(values, nodes)
    target = next((v.type for v in values if not pa.types.is_null(v.type)), pa.int64())
    if (exact := dec.common_type([v.type for v in values], nodes, columns)) is not None:
        return [cast_to(v, exact) if v.type != exact else v for v in values]
    if _temporal(target):
        target = next((v.type for v in values if pa.types.is_timestamp(v.type)), target)
    if _numeric(target):  # integers beside reals: DOUBLE (Arrow's own cast refuses integers beyond 2**53)
        reals = sorted((v.type for v in values if pa.types.is_floating(v.type)), key=lambda t: -t.bit_width)
        target = reals[0] if reals else sqlints.common_int([v.type for v in values])
    cast = [pa.types.is_null(v.type) or _temporal(target) or _numeric(target) for v in values]
    return [cast_to(v, target) if c and v.type != target else v for v, c in zip(values, cast, strict=True)]


def const_scalar(value) -> pa.Scalar:
    """A SQL literal's Arrow scalar: integers are BIGINT, reals DOUBLE, NULL of the null type."""
    if value is None:
        return pa.scalar(None, pa.null())
    if isinstance(value, bool):
        return pa.scalar(value, pa.bool_())
    if isinstance(value, int):
        return pa.scalar(value, pa.int64())
    if isinstance(value, float):
        return pa.scalar(value, pa.float64())
    if isinstance(value, dec.DecimalLiteral):
        return value.scalar()
    if isinstance(value, str):
        return pa.scalar(value, pa.string())
    if isinstance(value, dt.timedelta):
        return pa.scalar(value, pa.duration("us"))
    raise PlanError(f"unsupported constant {value!r}")


_ARITH = {"+": pc.add, "-": pc.subtract, "*": pc.multiply}
_ARITH_CHECKED = {"+": pc.add_checked, "-": pc.subtract_checked, "*": pc.multiply_checked}
_CMP = {
    "==": pc.equal,
    "!=": pc.not_equal,
    ">": pc.greater,
    ">=": pc.greater_equal,
    "<": pc.less,
    "<=": pc.less_equal,
}
# date parts: one table for extract(part FROM t)/date_part and the one-argument functions of the same name
_PARTS = {
    "year": pc.year,
    "month": pc.month,
    "day": pc.day,
    "hour": sqltime.hours,
    "minute": pc.minute,
    "second": pc.second,
    "doy": pc.day_of_year,
    "week": pc.iso_week,
    "quarter": pc.quarter,
    "millisecond": milliseconds,  # within the minute, as DuckDB counts them
    "microsecond": microseconds,
}
_UNARY_FNS = {
    "floor": floor_ceil("floor"),
    "ceil": floor_ceil("ceil"),
    "trunc": trunc,
    "sign": sign,
    "upper": pc.utf8_upper,
    "lower": pc.utf8_lower,
    "reverse": reverse_text,  # by grapheme clusters
} | {k: _PARTS[k] for k in ("year", "month", "day", "hour", "minute", "second")}
_FLOAT_FNS = {"sqrt": pc.sqrt, "ln": pc.ln, "exp": pc.exp}
# the type an untyped NULL first argument takes (DuckDB casts its NULL type to the parameter's type);
# functions not named here keep refusing a NULL of no type where DuckDB does too (year(NULL)...)
_NULL_AS = {
    **dict.fromkeys(
        (
            "upper", "lower", "reverse", "length", "strlen", "replace", "trim", "starts_with", "ends_with", "contains",
            "regexp_like", "regexp_replace", "regexp_extract", "substring", "left", "right", "strptime",
            "left_grapheme", "right_grapheme", "substring_grapheme",
        ),
        pa.string(),
    ),
    "floor": pa.float64(),
    "ceil": pa.float64(),
    "sign": pa.int64(),
    "trunc": pa.int64(),
    "round": pa.int64(),
    "strftime": pa.timestamp("us"),
}  # fmt: skip


class SqlEvaluator:
    """Evaluates SQL trees over ``columns`` (name -> Arrow array) of ``n`` rows.

    ``subresults`` holds the materialised one-column results of IN subqueries, by number.
    """

    def __init__(self, columns: dict[str, pa.Array], n: int, subresults: dict | None = None, texts=None):
        self.columns = columns
        self.n = n
        self.subresults = subresults or {}
        self.texts = texts or {}
        self._want: dict[int, pa.DataType] = {}  # id of an argument node -> the type a NULL there takes

    def sql(self, node, part=None) -> str:
        text = self.texts.get(id(node) if part is None else (id(node), part))
        if text is None:
            return str(node)
        return text if isinstance(text, str) else text.sql()  # a sqlglot node: its text when needed

    def array(self, node: Node) -> pa.Array:
        """The expression's value for every row, as an Arrow array of length ``n``."""
        v = self.eval(node)
        if isinstance(v, pa.Scalar):
            return pa.repeat(v, self.n) if v.is_valid else pa.nulls(self.n, v.type)
        if isinstance(v, pa.ChunkedArray):
            return v.combine_chunks()
        return v

    def mask(self, node: Node) -> pa.Array:
        """A boolean keep-mask: null counts as false (SQL WHERE)."""
        v = _truth(self.array(node))
        if not pa.types.is_boolean(v.type):
            raise SqlTypeError(f"condition {self.sql(node)} is {v.type}, not boolean")
        return pc.fill_null(v, False)

    def eval(self, node: Node):
        try:
            v = self._eval(node)
        except (pa.ArrowNotImplementedError, pa.ArrowTypeError, pa.ArrowInvalid) as exc:
            raise self._error(exc, self.sql(node)) from None
        want = self._want.get(id(node))
        if want is not None and pa.types.is_null(v.type):
            v = cast_to(v, want)
        return v

    @staticmethod
    def _error(exc: Exception, text: str) -> SqlTypeError:
        first = str(exc).splitlines()[0]
        if isinstance(exc, pa.ArrowInvalid):
            return SqlTypeError(f"cannot evaluate {text}: {first}")
        return SqlTypeError(f"type error in {text}: {first}")

    def _eval(self, node: Node):
        if isinstance(node, Col):
            if node.name not in self.columns:
                raise PlanError(f"unknown column {self.sql(node)}; columns are {sorted(self.columns)}")
            return self.columns[node.name]
        if isinstance(node, Const):
            return const_scalar(node.value)
        if isinstance(node, BinOp):
            a, b = _align(self.eval(node.left), self.eval(node.right))
            if node.op != "/" and (pa.types.is_decimal(a.type) or pa.types.is_decimal(b.type)):  # DuckDB's DECIMAL
                exact = dec.arithmetic(node.op, a, b, node.left, node.right, self.columns)
                if exact is not None:
                    return exact
            if node.op != "/":
                if (dated := date_arith(node.op, a, b)) is not None:
                    return dated
                if pa.types.is_integer(a.type) and pa.types.is_integer(b.type):  # DuckDB: overflow is an error
                    return self._checked(_ARITH_CHECKED[node.op], node, *sqlints.int_operands(self, node, a, b))
                return _ARITH[node.op](a, b)
            if not (_numeric(a.type) and _numeric(b.type)):
                raise SqlTypeError(f"type error in {self.sql(node)}: cannot divide {a.type} by {b.type}")
            ts = (a.type, b.type)  # FLOAT / FLOAT (or an exact number): FLOAT
            real = pa.float32() if pa.float32() in ts and pa.float64() not in ts else pa.float64()
            return pc.divide(cast_to(a, real), cast_to(b, real))
        if isinstance(node, Compare):
            return self.compare(node.op, self.eval(node.left), self.eval(node.right))
        if isinstance(node, BoolOp):
            return self._bool(node)
        if isinstance(node, Unary):
            v = self.eval(node.operand)
            if node.op == "not":
                return pc.invert(_truth(v))
            return self._checked(pc.negate_checked, node, cast_to(v, pa.int64()) if pa.types.is_null(v.type) else v)
        if isinstance(node, Call) and node.func == "abs":
            v = self.eval(node.args[0])
            return self._checked(pc.abs_checked, node, cast_to(v, pa.int64()) if pa.types.is_null(v.type) else v)
        if isinstance(node, IsNull):
            return pc.is_null(self.eval(node.operand))
        if isinstance(node, Like):
            v = self.eval(node.operand)
            return like(cast_to(v, pa.string()) if pa.types.is_null(v.type) else v, node.pattern, node.ignore_case)
        if isinstance(node, Case):
            conds, values = [], []
            reach = None  # the rows no earlier WHEN took (None: every row)
            for cond, value in node.whens:
                taken = pc.fill_null(_truth(self.array(cond)), False)
                conds.append(taken)
                values.append(self._branch(value, taken if reach is None else pc.and_(reach, taken)))
                reach = pc.invert(taken) if reach is None else pc.and_not(reach, taken)
            values.append(self._branch(node.default, reach))
            return self._choose(conds, values, [v for _, v in node.whens] + [node.default])
        if isinstance(node, Cast):
            return self._try_cast(node) if node.safe else self._cast(self.eval(node.operand), node.to, self.sql(node))
        if isinstance(node, SqlCall):
            if node.func in _NULL_AS and node.args:
                self._want[id(node.args[0])] = _NULL_AS[node.func]
            fn = _FUNCS.get(node.func)
            if fn is not None:
                return fn(self, node)
            if node.func in _UNARY_FNS:
                return _UNARY_FNS[node.func](sqltime.check_calendar_range(self.eval(node.args[0]), node.func))
            if node.func in _FLOAT_FNS:
                return _FLOAT_FNS[node.func](cast_to(self.eval(node.args[0]), pa.float64()))
        raise PlanError(f"unsupported SQL expression: {self.sql(node)}")

    def _branch(self, node: Node, rows):
        """A CASE branch's (or AND/OR operand's) value over every row, or when that fails over only the ``rows``
        that reach it, NULL elsewhere: SQL is lazy (``CASE WHEN x = 'a' THEN 0 ELSE CAST(x AS INT) END``)."""
        try:
            return self.eval(node)
        except SqlTypeError:
            if rows is None or (isinstance(rows, pa.Scalar) and rows.as_py()):
                raise
            rows = pc.fill_null(rows if not isinstance(rows, pa.Scalar) else pa.repeat(rows, self.n), False)
            if pc.all(rows).as_py():
                raise
            columns = {k: pc.filter(v, rows) for k, v in self.columns.items()}
            sub = SqlEvaluator(columns, int(pc.sum(rows).as_py() or 0), self.subresults, self.texts)
            part = sub.array(node)
            return pc.replace_with_mask(pa.nulls(self.n, part.type), rows, part)

    def _checked(self, fn, node, *args):
        try:
            return fn(*args)
        except pa.ArrowInvalid as exc:
            if "overflow" not in str(exc):
                raise
            text = self.sql(node)
            raise SqlTypeError(f"cannot evaluate {text}: integer overflow (out of range of its type)") from None

    def _bool(self, node: BoolOp):
        """Kleene AND/OR, folded left to right as SQL nests ``a AND b AND c`` (so errors name the same part)."""
        f = pc.and_kleene if node.op == "and" else pc.or_kleene
        out = _truth(self.eval(node.operands[0]))
        for k, operand in enumerate(node.operands[1:], 2):
            # an operand is evaluated lazily as SQL does: rows already decided (false for AND, true for OR)
            # do not reach it, so its error over them is none (``i < 10 AND i * 2 > 0``)
            reach = pc.fill_null(out if node.op == "and" else pc.invert(out), True)
            b = _truth(self._branch(operand, reach))
            try:
                out = f(*_align(out, b))
            except (pa.ArrowNotImplementedError, pa.ArrowTypeError, pa.ArrowInvalid) as exc:
                part = None if k == len(node.operands) else k
                raise self._error(exc, self.sql(node, part)) from None
        return out

    # -- helpers shared by several functions ----------------------------------------------------
    @staticmethod
    def compare(op: str, a, b):
        return compare_values(op, *_align(a, b))

    def _args(self, node: SqlCall) -> list:
        return [self.eval(a) for a in node.args]

    def _broadcast(self, v):
        if isinstance(v, pa.Scalar):
            return pa.repeat(v, self.n) if v.is_valid else pa.nulls(self.n, v.type)
        return v

    def _choose(self, conds, values, nodes=None):
        values = sqlints.narrow_literals(values, nodes)
        target = dec.common_type([v.type for v in values], nodes, self.columns)
        values = [cast_to(v, target) if target is not None and v.type != target else v for v in values]
        target = None
        for v in values:
            t = v.type
            if pa.types.is_null(t):
                continue
            if target is None or (pa.types.is_integer(target) or target == pa.float32()) and pa.types.is_floating(t):
                target = t
            elif pa.types.is_integer(target) and pa.types.is_integer(t) and t != target:
                target = sqlints.common_int([target, t])  # integers of two widths: DuckDB's common type
            elif pa.types.is_date(target) and pa.types.is_timestamp(t):  # a date and a timestamp: timestamps
                target = t
        target = target or pa.null()
        values = [cast_to(v, target) if v.type != target else v for v in values]
        if len(conds) == 1 and isinstance(conds[0], pa.Array) and len(values) == 2:
            # one WHEN: an if_else over the condition (null is false), constants never made into columns
            cond = conds[0].fill_null(False) if conds[0].null_count else conds[0]
            return self._broadcast(pc.if_else(cond, values[0], values[1]))
        values = [self._broadcast(v) for v in values]
        if not conds:
            return values[-1]
        struct = pa.StructArray.from_arrays(conds, names=[f"c{i}" for i in range(len(conds))])
        return pc.case_when(struct, *values)

    @staticmethod
    def _cast(v, target: pa.DataType, text: str = "CAST"):
        if pa.types.is_decimal(target):
            return dec.cast_decimal(v, target, text)
        if _temporal(target) and (pa.types.is_string(v.type) or pa.types.is_large_string(v.type)):
            return text_to_time(v, target, text)
        if _temporal(target) and not (_temporal(v.type) or pa.types.is_null(v.type)):
            raise SqlTypeError(f"type error in {text}: cannot cast {v.type} to {target} (not supported)")
        sqltime.check_text_cast(v, target, text)
        if pa.types.is_timestamp(v.type) and v.type.tz is None and pa.types.is_string(target):
            return time_to_text(v)
        if pa.types.is_floating(v.type) and pa.types.is_string(target):
            return float_text(v)
        if pa.types.is_timestamp(v.type) and pa.types.is_date(target):
            return cast_to(pc.floor_temporal(v, unit="day"), target)
        if pa.types.is_string(v.type) and pa.types.is_boolean(target):
            return text_to_bool(v, text)
        if pa.types.is_string(v.type) and (pa.types.is_integer(target) or pa.types.is_floating(target)):
            return text_to_number(v, target, text)
        if pa.types.is_floating(v.type) and pa.types.is_integer(target):
            v = pc.round(v)  # DuckDB rounds a DOUBLE half to even when casting it to an integer
        if pa.types.is_decimal(v.type) and pa.types.is_integer(target):
            v = decimal_rounded(v, 0, "half_towards_infinity")  # a DECIMAL half away from zero
        out = cast_to(v, target)
        if pa.types.is_float32(target) and pa.types.is_float64(v.type):  # DuckDB: a finite DOUBLE beyond FLOAT errs
            if pc.any(pc.and_(pc.is_finite(v), pc.invert(pc.is_finite(out)))).as_py():
                raise SqlTypeError(f"cannot evaluate {text}: a DOUBLE is out of FLOAT's range (conversion error)")
        return out

    def _try_cast(self, node: Cast):
        try:
            return self._cast(self.eval(node.operand), node.to)
        except (pa.ArrowInvalid, SqlTypeError) as exc:
            values = self.array(node.operand)
            return sqltime.try_each(exc, values, node.to, lambda x: self._cast(pa.scalar(x, values.type), node.to))

    def in_values(self, v, scalars):
        """``v IN (constants)`` (SQL null rules)."""
        non_null = [s for s in scalars if s.is_valid]
        target = v.type
        value_set = pa.array([s.as_py() for s in non_null]) if non_null else pa.array([], target)
        if _temporal(target) or pa.types.is_null(value_set.type) is False and value_set.type != target:
            try:
                v, value_set = _in_types(v, sqlints.refuse_text_among_numbers(v.type, value_set))
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                pass
        hit = pc.is_in(*_zero_signless(v, value_set))
        # SQL: x IN (...) is null when x is null, or when no match and the list holds a null
        hit = pc.if_else(pc.is_null(v), pa.scalar(None, pa.bool_()), hit)
        if len(non_null) < len(scalars):
            hit = pc.if_else(hit, True, pa.scalar(None, pa.bool_()))
        return hit

    def in_array(self, v, values: pa.Array):
        """``v IN values`` for a materialised subquery result (SQL null rules)."""
        if len(values) == 0:  # x IN (no rows) is FALSE, even for a NULL x
            return pa.scalar(False) if isinstance(v, pa.Scalar) else pa.array([False] * len(v), pa.bool_())
        if pa.types.is_null(v.type):
            return pa.scalar(None, pa.bool_()) if isinstance(v, pa.Scalar) else pa.nulls(len(v), pa.bool_())
        has_null = values.null_count > 0
        values = values.drop_null()
        if values.type != v.type:
            v, values = _in_types(v, values)
        hit = pc.is_in(*_zero_signless(v, values))
        hit = pc.if_else(pc.is_null(v), pa.scalar(None, pa.bool_()), hit)
        if has_null:
            hit = pc.if_else(hit, True, pa.scalar(None, pa.bool_()))
        return hit


def _in_types(v, values):
    """``v`` and the ``values`` it is looked up in, in one type as DuckDB compares them: a DATE among
    TIMESTAMPs as the timestamp of its midnight, an integer among reals as a DOUBLE; else the values
    cast to ``v``'s type."""
    if pa.types.is_date(v.type) and pa.types.is_timestamp(values.type):
        return cast_to(v, values.type), values
    if pa.types.is_integer(v.type) and pa.types.is_floating(values.type):
        return cast_to(v, pa.float64()), cast_to(values, pa.float64())
    return v, cast_to(values, v.type)


def _zero_signless(v, values):
    """``(v, values)`` with -0.0 made 0.0 when floating: Arrow's is_in tells them apart by their bits
    (NaN already matches NaN), SQL does not."""
    if pa.types.is_floating(v.type) and pa.types.is_floating(values.type):
        return pc.add(v, 0.0), pc.add(values, 0.0)
    return v, values


# -- SQL functions: (evaluator, node) -> value ------------------------------------------------------
def _intdiv(ev: SqlEvaluator, node):
    return _divided(ev, node, "//")


def _mod(ev: SqlEvaluator, node):
    return _divided(ev, node, "%")


def _dpipe(ev: SqlEvaluator, node):
    a, b = _align(*ev._args(node))
    return pc.binary_join_element_wise(as_text(a), as_text(b), "")


def _is_bool(ev: SqlEvaluator, node):
    return pc.fill_null(pc.equal(ev.eval(node.args[0]), pa.scalar(node.params[0])), False)


def _in(ev: SqlEvaluator, node):
    v, *values = ev._args(node)
    if not all(isinstance(x, pa.Scalar) for x in values) or any(pa.types.is_decimal(x.type) for x in (v, *values)):
        out = None
        for x in values:
            eq = pc.equal(*_align(v, x))
            out = eq if out is None else pc.or_kleene(out, eq)
        return out
    return ev.in_values(v, values)


def _in_subquery(ev: SqlEvaluator, node):
    key = node.params[0]
    if key not in ev.subresults:
        # at plan time (type checks) the subquery has not run: a boolean of the right length
        return pa.nulls(ev.n, pa.bool_())
    return ev.in_array(ev.eval(node.args[0]), ev.subresults[key])


def _scalar_subquery(ev: SqlEvaluator, node):
    """A scalar subquery's value: NULL for no row, an error (as in DuckDB) for more than one."""
    key = node.params[0]
    if key not in ev.subresults:
        return pa.scalar(None)  # type checks run before the subquery: the builder typed it already
    values = ev.subresults[key]
    if len(values) > 1:
        raise SqlTypeError(f"more than one row returned by a subquery used as an expression ({len(values)} rows)")
    return values[0] if len(values) else pa.scalar(None, values.type)


def _coalesce(ev: SqlEvaluator, node):
    args = sqlints.narrow_literals(sqlmore.lazy_args(ev, node), node.args)
    if (exact := dec.common_type([a.type for a in args], node.args, ev.columns)) is not None:
        return pc.coalesce(*[ev._broadcast(cast_to(a, exact)) for a in args])
    target = next((a.type for a in args if not pa.types.is_null(a.type)), pa.null())
    if any(pa.types.is_floating(a.type) for a in args) and _numeric(target):
        target = pa.float64() if any(pa.types.is_float64(a.type) for a in args) else pa.float32()
    elif pa.types.is_integer(target) and any(pa.types.is_integer(a.type) and a.type != target for a in args):
        target = sqlints.common_int([a.type for a in args])  # integers of two widths: DuckDB's common type
    target = next((a.type for a in args if pa.types.is_timestamp(a.type)), target) if _temporal(target) else target
    return pc.coalesce(*[ev._broadcast(cast_to(a, target)) for a in args])


def _nullif(ev: SqlEvaluator, node):
    a, b = _align(*ev._args(node))
    return pc.if_else(pc.fill_null(pc.equal(a, b), False), pa.scalar(None, a.type), a)


def _concat(ev: SqlEvaluator, node):
    args = [as_text(ev._broadcast(ev.eval(e))) for e in node.args]
    return pc.binary_join_element_wise(*[pc.fill_null(a, "") for a in args], "")  # DuckDB's concat skips nulls


def _part(ev: SqlEvaluator, node):
    unit = node.params[0].lower()
    v = sqltime.check_calendar_range(ev.eval(node.args[0]), f"date part {unit!r}")
    if unit == "dow":
        return pc.day_of_week(v, count_from_zero=True, week_start=7)
    if unit == "epoch":  # seconds with their fraction (DuckDB's DOUBLE)
        return epoch(ev, SqlCall("epoch", node.args))
    if unit not in _PARTS:
        raise PlanError(f"unsupported date part {unit!r}")
    return _PARTS[unit](v)


def _first(f, result: pa.DataType | None = None):
    """A function of the first argument's value and the node's constant parameters; NULL when a
    parameter is NULL (SQL functions propagate NULL), of the first argument's type."""

    def run(ev, node):
        v = ev.eval(node.args[0])
        if any(p is None for p in node.params):
            return pa.scalar(None, result or v.type)
        return f(v, *node.params)

    return run


_FUNCS = (
    {
        "intdiv": _intdiv,
        "mod": _mod,
        "dpipe": _dpipe,
        "is_bool": _is_bool,
        "in": _in,
        "in_subquery": _in_subquery,
        "scalar_subquery": _scalar_subquery,
        "coalesce": _coalesce,
        "nullif": _nullif,
        "concat": _concat,
        "epoch_us": epoch,
        "epoch_ms": epoch,
        "epoch_ns": epoch,
        "epoch": epoch,
        "part": _part,
        "date": _date,
        # DuckDB's greatest/least skip NULLs (NULL only when every argument is)
        "greatest": lambda ev, node: _greatest(_nulls_as(ev._args(node), node.args, ev.columns)),
        "least": lambda ev, n: pc.min_element_wise(*_nulls_as(ev._args(n), n.args, ev.columns), skip_nulls=True),
        "pow": lambda ev, node: pc.power(*(cast_to(x, pa.float64()) for x in _align(*ev._args(node)))),
        # SQL rounds half away from zero
        "round": _first(lambda v, digits: _round(v, digits)),
        "length": _first(lambda v: cast_to(pc.utf8_length(v), pa.int64())),
        "date_trunc": _first(sqltime.date_trunc),
        "strptime": _first(sqltime.strptime, pa.timestamp("us")),
        "strftime": _first(strftime, pa.string()),
        "to_date": _first(lambda v: cast_to(v, pa.date32())),
        "current_timestamp": lambda ev, n: pa.scalar(dt.datetime.now(dt.UTC).replace(tzinfo=None), pa.timestamp("us")),
        "current_date": lambda ev, node: pa.scalar(dt.date.today(), pa.date32()),
    }
    | STRING_FUNCS
    | MORE_FUNCS
    | dec.FUNCS
    | EXTRA_FUNCS
)
