"""SQL scalar expressions: translation of bound sqlglot trees into tidal's expression trees.

A bound expression (a sqlglot tree whose columns name physical batch columns) becomes a tree of
:mod:`tidal.expr.nodes`: the generic nodes where SQL and Python agree on non-null values
(arithmetic but ``%`` and ``//``, comparisons, ``AND``/``OR``/``NOT``, ``abs``), SQL nodes for
the rest. :mod:`tidal.expr.sqlkernels` evaluates them with SQL's null rules, and
:class:`tidal.expr.sqlcompile.CompiledSql` runs a filter's or projection's tree on the lambdas'
kernels when its columns allow (no nulls, 64-bit numbers).

Errors name the expression: a type mismatch raises :class:`SqlTypeError` with the SQL text of
the failing node, found at plan time by evaluating over empty columns of the input's types.
"""

from __future__ import annotations

import datetime as dt
import decimal
import functools
import re

import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from ..core.errors import PlanError
from ..core.frozen import Frozen, immutable, set_field
from ..expr.nodes import BinOp, BoolOp, Call, Case, Cast, Col, Compare, Const, IsNull, Like, Node, SqlCall, Unary
from ..expr.sqlcompile import CompiledSql
from ..expr.sqldecimal import DecimalLiteral, decimal_text, number_literal
from ..expr.sqlkernels import SqlEvaluator, SqlTypeError  # noqa: F401  (SqlTypeError: tidal.sql's, defined with its evaluator)
from .exprmore import MoreTranslations, interval_micros, regex_options, sql_text  # noqa: F401  (imported from here)

_TYPES = {
    "INT": pa.int32(),
    "INTEGER": pa.int32(),
    "SMALLINT": pa.int16(),
    "TINYINT": pa.int8(),
    "BIGINT": pa.int64(),
    "HUGEINT": pa.int64(),
    "UBIGINT": pa.uint64(),
    "UINT": pa.uint32(),
    "USMALLINT": pa.uint16(),
    "UTINYINT": pa.uint8(),
    "FLOAT": pa.float32(),
    "DOUBLE": pa.float64(),
    "DECIMAL": pa.float64(),
    "VARCHAR": pa.string(),
    "TEXT": pa.string(),
    "CHAR": pa.string(),
    "BOOLEAN": pa.bool_(),
    "DATE": pa.date32(),
    "TIMESTAMP": pa.timestamp("us"),
    "TIMESTAMPNTZ": pa.timestamp("us"),
    "DATETIME": pa.timestamp("us"),
    "TIMESTAMPTZ": pa.timestamp("us", "UTC"),
}


def arrow_type(node: exp.DataType) -> pa.DataType:
    name = node.this.name if hasattr(node.this, "name") else str(node.this)
    name = name.upper().replace("TYPE.", "")
    if name not in _TYPES or name.startswith(("TIMESTAMP", "DATE")) and node.expressions:
        raise PlanError(f"the type {node.sql()} is not supported")  # TIMESTAMP(3): DuckDB's TIMESTAMP_MS
    return _TYPES[name]


IN_SUBQUERY = "in_subquery"
_TRUNC_UNITS = {"year", "quarter", "month", "week", "day", "hour", "minute", "second", "millisecond", "microsecond"}


def in_subquery(value: exp.Expression, key: int) -> exp.Expression:
    """``value IN (subquery number key)``; the subquery's result is materialised before the query runs."""
    return exp.Anonymous(this=IN_SUBQUERY, expressions=[value, exp.Literal.number(key)])


SCALAR_SUBQUERY = "scalar_subquery"


def scalar_subquery(key: int) -> exp.Expression:
    """The one value of uncorrelated subquery number ``key``, materialised before the query runs."""
    return exp.Anonymous(this=SCALAR_SUBQUERY, expressions=[exp.Literal.number(key)])


def has_subquery(node: exp.Expression) -> bool:
    return any(isinstance(x, exp.Anonymous) and x.name in (IN_SUBQUERY, SCALAR_SUBQUERY) for x in node.walk())


@immutable
class SqlExpr(Frozen):
    """A translated expression: its tree, and what each node is in SQL (``texts``: id of a node, or
    (id, k) for the first k operands of a flattened AND/OR, -> its sqlglot node), for error messages."""

    node: Node
    texts: dict
    sql: str

    def __init__(self, node, texts, sql):
        set_field(self, "node", node)
        set_field(self, "texts", texts)
        set_field(self, "sql", sql)


def translate(node: exp.Expression) -> SqlExpr:
    tr = _Translator()
    return SqlExpr(tr.visit(node), tr.texts, node.sql())


def translate_record(exprs) -> SqlExpr:
    """A SELECT list ``((name, expression), ...)`` as one :class:`~tidal.expr.nodes.Record` tree."""
    from ..expr.nodes import Record

    tr = _Translator()
    fields = tuple((name, tr.visit(e)) for name, e in exprs)
    texts = [(n, e.sql()) for n, e in exprs]  # each expression's SQL made once
    text = ", ".join(t if t == f'"{n}"' else f"{t} AS {n}" for n, t in texts)
    return SqlExpr(Record(fields), tr.texts, text)


def compiled(expr: SqlExpr, *, truth: bool, schema=None, subresults=None, rewrite=None) -> CompiledSql:
    """A filter's (``truth``) or projection's compiled expression for one operator (per-run state)."""
    return CompiledSql(
        expr.node, expr.texts, truth=truth, schema=schema, subresults=subresults, rewrite=rewrite, text=expr.sql
    )


class _Translator(MoreTranslations):
    """sqlglot -> expression tree, one method per sqlglot class (``t_`` + its name)."""

    def __init__(self):
        self.texts: dict = {}

    def visit(self, e: exp.Expression) -> Node:
        method = getattr(self, "t_" + type(e).__name__, None)
        if method is None:
            raise PlanError(f"unsupported SQL expression: {e.sql()} ({type(e).__name__})")
        node = method(e)
        self.texts.setdefault(id(node), e)
        return node

    def _made(self, node: Node, e: exp.Expression) -> Node:
        self.texts[id(node)] = e
        return node

    def _call(self, func: str, e, args=(), params=()) -> SqlCall:
        return SqlCall(func, tuple(self.visit(a) for a in args), tuple(params))

    # -- leaves --------------------------------------------------------------------------------
    def t_Column(self, e):
        return Col(e.name)

    def t_Literal(self, e):
        if e.is_string:
            return Const(e.name)
        return Const(number_literal(e.name))  # an integer, a DECIMAL or a DOUBLE, as DuckDB types it

    def t_Null(self, e):
        return Const(None)

    def t_Boolean(self, e):
        return Const(bool(e.this))

    def t_Paren(self, e):
        return self.visit(e.this)

    t_Alias = t_Paren

    def t_Interval(self, e):
        return Const(dt.timedelta(microseconds=interval_micros(e)))

    # -- arithmetic, comparison, logic ---------------------------------------------------------
    def _binop(self, op, e):
        return BinOp(op, self.visit(e.this), self.visit(e.expression))

    def t_Add(self, e):
        return self._binop("+", e)

    def t_Sub(self, e):
        return self._binop("-", e)

    def t_Mul(self, e):
        return self._binop("*", e)

    def t_Div(self, e):
        return self._binop("/", e)

    def t_IntDiv(self, e):
        return self._made(self._call("intdiv", e, [e.this, e.expression]), e.sql(dialect="duckdb"))

    def t_Mod(self, e):
        return self._call("mod", e, [e.this, e.expression])

    def t_DPipe(self, e):
        return self._call("dpipe", e, [e.this, e.expression])

    def t_Neg(self, e):
        inner = self.visit(e.this)
        if isinstance(e.this, exp.Literal) and isinstance(inner.value, int | float | DecimalLiteral):
            return Const(-inner.value)  # a negative number, as Python's lambdas have it
        return Unary("-", inner)

    def _compare(self, op, e):
        return Compare(op, self.visit(e.this), self.visit(e.expression))

    def t_EQ(self, e):
        return self._compare("==", e)

    def t_NEQ(self, e):
        return self._compare("!=", e)

    def t_GT(self, e):
        return self._compare(">", e)

    def t_GTE(self, e):
        return self._compare(">=", e)

    def t_LT(self, e):
        return self._compare("<", e)

    def t_LTE(self, e):
        return self._compare("<=", e)

    def _bool(self, e):
        # a AND b AND c nests to the left in sqlglot; one BoolOp, as Python's ast has it
        chain = [e]
        while isinstance(chain[-1].this, type(e)):
            chain.append(chain[-1].this)
        operands = [self.visit(chain[-1].this)] + [self.visit(x.expression) for x in reversed(chain)]
        node = BoolOp("and" if isinstance(e, exp.And) else "or", tuple(operands))
        for k, x in enumerate(reversed(chain[1:]), 2):
            self.texts[(id(node), k)] = x
        return node

    t_And = t_Or = _bool

    def t_Not(self, e):
        return Unary("not", self.visit(e.this))

    def t_Is(self, e):
        target = e.expression
        if isinstance(target, exp.Null):
            return IsNull(self.visit(e.this))
        if isinstance(target, exp.Boolean):
            return self._call("is_bool", e, [e.this], [bool(target.this)])
        raise PlanError(f"unsupported IS test: {e.sql()}")

    def t_Between(self, e):
        v = self.visit(e.this)
        lo = self._made(Compare(">=", v, self.visit(e.args["low"])), e)
        hi = self._made(Compare("<=", v, self.visit(e.args["high"])), e)
        return BoolOp("and", (lo, hi))

    def t_In(self, e):
        if e.args.get("query") is not None:
            raise PlanError(f"IN (subquery) must be planned before evaluation: {e.sql()}")
        return self._call("in", e, [e.this, *e.expressions])

    def t_Like(self, e, ignore_case=False):
        pattern = e.expression
        if isinstance(pattern, exp.Null):
            node = SqlCall("null_of", (self.visit(e.this),), ("bool",))
        elif not (isinstance(pattern, exp.Literal) and pattern.is_string):
            raise PlanError(f"LIKE needs a constant pattern: {e.sql()}")
        else:
            node = Like(self.visit(e.this), pattern.name, ignore_case)
        if e.args.get("negate"):  # x NOT LIKE p (sqlglot keeps it a flag of the LIKE)
            return Unary("not", self._made(node, e))
        return node

    def t_ILike(self, e):
        return self.t_Like(e, ignore_case=True)

    def _const(self, e, arg, what: str):
        """A constant argument's value (None for NULL); a per-row one is not supported."""
        if isinstance(arg, exp.Paren):
            return self._const(e, arg.this, what)
        if isinstance(arg, exp.Null) or isinstance(arg, exp.Cast) and isinstance(arg.this, exp.Null):
            return None
        if isinstance(arg, exp.Literal):
            return arg.name if arg.is_string else int(arg.name) if re.fullmatch(r"\d+", arg.name) else float(arg.name)
        if isinstance(arg, exp.Neg) and isinstance(arg.this, exp.Literal) and not arg.this.is_string:
            return -self._const(e, arg.this, what)
        raise PlanError(f"{e.sql()}: the {what} must be a constant (a per-row {what} is not supported)")

    def _text(self, e, arg, what: str):
        value = self._const(e, arg, what)
        if value is not None and not isinstance(value, str):
            raise PlanError(f"{e.sql()}: the {what} must be a string")
        return value

    def _regex(self, e, func: str, args, pattern, flags, extra=()):
        options = regex_options(e, self._text(e, flags, "regex options") if flags is not None else "", func)
        return self._call(func, e, args, [self._text(e, pattern, "pattern"), *extra, options])

    def t_RegexpLike(self, e):
        return self._regex(e, "regexp_like", [e.this], e.expression, e.args.get("flag"))

    def t_RegexpReplace(self, e):
        replacement = self._text(e, e.args["replacement"], "replacement")
        return self._regex(e, "regexp_replace", [e.this], e.expression, e.args.get("modifiers"), (replacement,))

    def t_RegexpExtract(self, e):
        group = self._const(e, e.args["group"], "group") if e.args.get("group") is not None else 0
        if not isinstance(group, int):
            raise PlanError(f"{e.sql()}: the group must be a constant integer")
        return self._regex(e, "regexp_extract", [e.this], e.expression, e.args.get("parameters"), (group,))

    # -- conditionals and casts ----------------------------------------------------------------
    def t_Case(self, e):
        subject = e.this
        whens = []
        for when in e.args["ifs"]:
            if subject is None:
                cond = self.visit(when.this)
            else:
                eq = exp.EQ(this=subject.copy(), expression=when.this.copy())  # for its text only
                cond = self._made(Compare("==", self.visit(subject), self.visit(when.this)), eq)
            whens.append((cond, self.visit(when.args["true"])))
        default = e.args.get("default")
        return Case(tuple(whens), self.visit(default) if default is not None else Const(None))

    def t_If(self, e):
        false = e.args.get("false")
        otherwise = self.visit(false) if false is not None else Const(None)
        return Case(((self.visit(e.this), self.visit(e.args["true"])),), otherwise)

    def t_Coalesce(self, e):
        return self._call("coalesce", e, [e.this, *e.expressions])

    def t_Nullif(self, e):
        return self._call("nullif", e, [e.this, e.expression])

    def t_Greatest(self, e):
        return self._call("greatest", e, [e.this, *e.expressions])

    def t_Least(self, e):
        return self._call("least", e, [e.this, *e.expressions])

    def t_Cast(self, e):
        return Cast(self.visit(e.this), self._cast_type(e))

    def t_TryCast(self, e):
        return Cast(self.visit(e.this), self._cast_type(e), safe=True)

    def _cast_type(self, e) -> pa.DataType:
        if e.to.this != exp.DataType.Type.DECIMAL:
            if e.to.expressions and e.to.this in exp.DataType.INTEGER_TYPES:
                raise PlanError(f"{e.sql()}: an integer type takes no parameters")
            return arrow_type(e.to)
        # DECIMAL(p, s): DuckDB's DECIMAL alone is DECIMAL(18,3), DECIMAL(p) is DECIMAL(p,0)
        values = [p.this if isinstance(p, exp.DataTypeParam) else p for p in e.to.expressions]
        if bad := [v for v in values if not (isinstance(v, exp.Literal) and not v.is_string and v.name.isdigit())]:
            raise PlanError(f"{e.sql()}: DECIMAL's width and scale must be integer constants, not {bad[0].sql()}")
        params = [int(v.name) for v in values]
        precision = params[0] if params else 18
        scale = params[1] if len(params) > 1 else (3 if not params else 0)
        if not (0 <= scale <= precision <= 38 and precision >= 1):
            raise PlanError(f"{e.sql()}: DECIMAL's width must be 1-38 and its scale at most its width")
        return pa.decimal128(precision, scale)

    # -- numbers -------------------------------------------------------------------------------
    def t_Abs(self, e):
        return Call("abs", (self.visit(e.this),))

    def t_Round(self, e):
        digits = e.args.get("decimals")
        if digits is not None and digits.find(exp.Column) is None and not has_subquery(digits):
            digits = scalar_to_sql(Evaluator({}, 0).eval(digits)) or exp.Null()  # CAST(-2 AS INT): -2
        elif digits is not None:  # a number of digits per row
            return self._call("round_by", e, [e.this, digits])
        digits = self._const(e, digits, "number of digits") if digits is not None else 0
        if digits is not None and not isinstance(digits, int):
            raise PlanError(f"{e.sql()}: the number of digits must be an integer")
        return self._call("round", e, [e.this], [digits])

    def t_Pow(self, e):
        return self._call("pow", e, [e.this, e.expression])

    # -- strings -------------------------------------------------------------------------------
    def t_Trim(self, e):
        chars, position = e.args.get("expression"), (e.args.get("position") or "").upper()
        if chars is not None and chars.find(exp.Column) is not None:  # the characters per row
            return self._call("trim_by", e, [e.this, chars], [position])
        chars = self._text(e, chars, "characters") if chars is not None else " "
        return self._call("trim", e, [e.this], [position, chars])

    def t_Substring(self, e):
        start = e.args.get("start") or exp.Literal.number(1)
        length = e.args.get("length")
        return self._call("substring", e, [e.this, start] + ([length] if length is not None else []))

    def t_Concat(self, e):
        return self._call("concat", e, e.expressions)

    def t_Replace(self, e):
        params = [self._text(e, e.expression, "search string"), self._text(e, e.args["replacement"], "replacement")]
        return self._call("replace", e, [e.this], params)

    def t_Left(self, e):
        return self._call("left", e, [e.this, e.expression])

    def t_Right(self, e):
        return self._call("right", e, [e.this, e.expression])

    def t_Typeof(self, e):
        return self._call("typeof", e, [e.this])

    def t_Anonymous(self, e):
        name = e.name.lower()
        args = e.expressions
        if name == IN_SUBQUERY:
            return self._call(IN_SUBQUERY, e, [args[0]], [int(args[1].name)])
        if name == SCALAR_SUBQUERY:
            return self._call(SCALAR_SUBQUERY, e, [], [int(args[0].name)])
        if name in ("strlen", "epoch_us", "epoch_ms", "epoch_ns", "epoch") and len(args) != 1:
            raise PlanError(f"{e.sql()}: {name}() takes one argument, got {len(args)}")
        if name == "strlen":  # DuckDB's strlen counts bytes, length code points
            return self._call("strlen", e, [args[0]])
        if name in ("epoch_us", "epoch_ms", "epoch_ns", "epoch"):
            return self._call(name, e, [args[0]])
        if (node := self.more_function(name, e)) is not None:
            return node
        raise PlanError(f"unknown function {sql_text(e)}")

    # -- date and time -------------------------------------------------------------------------
    def t_TimeToUnix(self, e):  # DuckDB's epoch(t)
        return self._call("epoch", e, [e.this])

    def t_UnixToTime(self, e):  # epoch_ms(t) (scale 3) and to_timestamp(seconds) (no scale); make_timestamp is not
        scale = e.args.get("scale")
        if scale is None:
            return self._duck(self._call("to_timestamp", e, [e.this]), e)
        if scale.name != "3" or (isinstance(scale, exp.Literal) and scale.is_string):
            raise PlanError(f"{e.sql(dialect='duckdb')} is not supported")
        return self._call("epoch_ms", e, [e.this])

    def t_Extract(self, e):
        return self._call("part", e, [e.expression], [e.this.name])

    t_DatePart = t_Extract

    def t_TimestampTrunc(self, e):
        unit = e.args["unit"].name.lower() if e.args.get("unit") is not None else ""
        unit = unit[:-1] if unit.endswith("s") and unit[:-1] in _TRUNC_UNITS else unit  # 'hours' as DuckDB reads it
        if unit not in _TRUNC_UNITS:
            raise PlanError(f"{e.sql()}: unknown date part {unit!r}; one of {', '.join(sorted(_TRUNC_UNITS))}")
        return self._call("date_trunc", e, [e.this], [unit])

    t_DateTrunc = t_TimestampTrunc

    def _time_format(self, e):
        text = self._text(e, e.args["format"], "format")
        if text == "None":  # sqlglot reads the format '' as 'None': which one the query wrote is lost
            raise PlanError(f"{e.sql(dialect='duckdb')}: an empty format (or 'None') is not supported")
        return text

    def t_StrToTime(self, e):
        return self._call("strptime", e, [e.this], [self._time_format(e)])

    def t_TimeToStr(self, e):
        return self._call("strftime", e, [e.this], [self._time_format(e)])

    def t_CurrentTimestamp(self, e):
        return SqlCall("current_timestamp", ())

    def t_CurrentDate(self, e):
        return SqlCall("current_date", ())


def _with_this(func: str):
    return lambda self, e: self._call(func, e, [e.this])


def _with_param(func: str):
    return lambda self, e: self._call(func, e, [e.this], [self._text(e, e.expression, "second argument")])


_WITH_THIS = {
    "Floor": "floor", "Ceil": "ceil", "Sqrt": "sqrt", "Ln": "ln", "Exp": "exp", "Sign": "sign",
    "Upper": "upper", "Lower": "lower", "Length": "length", "Reverse": "reverse", "Year": "year", "Month": "month",
    "Day": "day", "Hour": "hour", "Minute": "minute", "Second": "second", "TsOrDsToDate": "to_date", "Date": "date",
}  # fmt: skip
for _cls, _func in _WITH_THIS.items():
    setattr(_Translator, "t_" + _cls, _with_this(_func))
for _cls, _func in {"StartsWith": "starts_with", "EndsWith": "ends_with"}.items():  # contains: exprmore.py
    setattr(_Translator, "t_" + _cls, _with_param(_func))


class Evaluator:
    """Evaluates bound sqlglot expressions over ``columns`` of ``n`` rows (translated, then evaluated
    by :class:`~tidal.expr.sqlkernels.SqlEvaluator`): for constants and one-off evaluations."""

    def __init__(self, columns: dict[str, pa.Array], n: int, subresults: dict | None = None):
        self.columns, self.n, self.subresults = columns, n, subresults

    def _run(self, node: exp.Expression, what: str):
        tr = _Translator()  # as translate(), without the text of the whole (errors name the failing part)
        tree = tr.visit(node)
        return getattr(SqlEvaluator(self.columns, self.n, self.subresults, tr.texts), what)(tree)

    def eval(self, node: exp.Expression):
        return self._run(node, "eval")

    def array(self, node: exp.Expression) -> pa.Array:
        return self._run(node, "array")

    def mask(self, node: exp.Expression) -> pa.Array:
        return self._run(node, "mask")


def scalar_to_sql(value: pa.Scalar, typed: bool = False) -> exp.Expression | None:
    """A literal for a folded constant, or None when it has no plain literal form. ``typed``: a number of a type other
    than BIGINT or DOUBLE (``CAST(120 AS TINYINT)``, a UTINYINT) stays a cast of its literal, so the arithmetic it meets
    keeps DuckDB's type; an INTEGER only when ``typed == "cast"`` (``2 + 3`` stays a literal: a column's type)."""
    if typed and value.is_valid and value.type in _NARROW and (typed == "cast" or value.type != pa.int32()):
        v = value.as_py()
        inner = scalar_to_sql(pa.scalar(v, pa.float64() if isinstance(v, float) else pa.int64())) if v < 2**63 else None
        return None if inner is None else exp.Cast(this=inner, to=exp.DataType.build(_NARROW[value.type]))
    try:
        py = value.as_py()
    except (OverflowError, ValueError):  # a date or time Python cannot hold (before year 1, after 9999)
        return None
    if py is None:  # a typed NULL (CAST(NULL AS VARCHAR)) keeps its type: a bare NULL has none
        return exp.Null() if pa.types.is_null(value.type) else None
    if isinstance(py, bool):
        return exp.Boolean(this=py)
    if isinstance(py, int | float) and not isinstance(py, bool):
        if isinstance(py, float) and (py != py or py in (float("inf"), float("-inf"))):
            return None
        if isinstance(py, float):  # written with an exponent: a DOUBLE (with a point alone it would be a DECIMAL)
            text = repr(py)
            return _signed_number(text if "e" in text else f"{text}e0")
        return exp.Literal.number(py)
    if isinstance(py, decimal.Decimal) and pa.types.is_decimal128(value.type):
        return _signed_number(decimal_text(py, value.type))
    if isinstance(py, str):
        return exp.Literal.string(py)
    return None


_NARROW = {
    pa.int8(): "TINYINT", pa.int16(): "SMALLINT", pa.int32(): "INTEGER", pa.float32(): "FLOAT",
    pa.uint8(): exp.DataType.Type.UTINYINT, pa.uint16(): exp.DataType.Type.USMALLINT,
    pa.uint32(): exp.DataType.Type.UINT, pa.uint64(): exp.DataType.Type.UBIGINT,
}  # fmt: skip


def _signed_number(text: str) -> exp.Expression:
    """A number literal of exactly this text (``Literal.number`` rewrites a negative one's digits)."""
    positive = exp.Literal(this=text.lstrip("-"), is_string=False)
    return exp.Neg(this=positive) if text.startswith("-") else positive


def output_type(node: exp.Expression, schema: pa.Schema) -> pa.DataType:
    """The Arrow type of ``node`` over ``schema``: evaluates it on empty columns (finds type errors)."""
    ev = Evaluator({f.name: _empty(f.type) for f in schema}, 0)
    return ev.array(node).type


@functools.cache
def _empty(t: pa.DataType) -> pa.Array:
    return pa.array([], t)  # made once per type: arrays are immutable


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
                if isinstance(value, decimal.Decimal):  # pushed only beside a DOUBLE column: DuckDB's DOUBLE
                    value = float(value)
                if lit.is_string:
                    return None  # string vs timestamp columns need a cast the reader would not make
                pushed = getattr(pc.field(col.name), method)(value)
                if method in ("__gt__", "__ge__"):  # NaN is larger than every number (DuckDB)
                    pushed = pushed | pc.field(col.name).is_nan()
                return pushed
            return None
    if isinstance(node, exp.Is) and isinstance(node.this, exp.Column) and isinstance(node.expression, exp.Null):
        return pc.field(node.this.name).is_null()
    return None
