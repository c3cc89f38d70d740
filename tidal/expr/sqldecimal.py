"""SQL's DECIMAL as DuckDB types and computes it: literals, arithmetic, common types, plan-time folding.

A number literal with a decimal point and no exponent is a DECIMAL(width, scale) in DuckDB: the width
is the count of its digits (leading zeros too), the scale the count after the point; one of more than
38 digits, or one written with an exponent, is a DOUBLE. Arithmetic follows DuckDB's binder, where an
integer operand counts as DECIMAL(w, 0) for its type's digits (TINYINT 3, SMALLINT 5, INTEGER 10, BIGINT 19,
UBIGINT 20; an integer literal is an INTEGER when it fits one, else a BIGINT):

* ``+``/``-``: scale ``max(s1, s2)``, width ``max(p1 - s1, p2 - s2) + scale + 1``, at most 38;
* ``*``: scale ``s1 + s2`` (beyond 38 an error), width ``p1 + p2``; 18 when both operands have at most 18
  digits and the scale is under 18 (DuckDB keeps such products in 64 bits, checking overflow); at most 38;
* ``%``: scale ``max(s1, s2)``, width ``max(p1 - s1, p2 - s2) + scale``; beyond 38 digits a DOUBLE;
* ``/`` is a DOUBLE, as is any operation with a DOUBLE (with a FLOAT: a FLOAT);
* the common type of branches (CASE, COALESCE, GREATEST...) holds the most integer digits and the largest
  scale, cut to 38 digits by dropping scale.

A value that does not fit its result type is an error (DuckDB's overflow), never a wrong value.
:func:`fold_for_types` rewrites, at plan time for the input types, a DECIMAL literal that meets a DOUBLE into
that DOUBLE (DuckDB converts it so), and a comparison of an integer column with one into an exact integer
comparison, so such expressions keep the compiled kernels' constants (bool, int, float, str).
"""

from __future__ import annotations

import decimal
import math
import re
from decimal import Decimal

import pyarrow as pa
import pyarrow.compute as pc

from ..core.frozen import Frozen, immutable, set_field
from . import decimal_ints, decimal_sum
from .sqltime import number_text

MAX_WIDTH = 38
_INT_WIDTH = {8: 3, 16: 5, 32: 10}


@immutable
class DecimalLiteral(Frozen):
    """A DECIMAL(width, scale) constant (``value`` has exactly ``scale`` digits after its point)."""

    value: Decimal
    width: int
    scale: int

    def __init__(self, value, width, scale):
        set_field(self, "value", value)
        set_field(self, "width", width)
        set_field(self, "scale", scale)

    def __neg__(self) -> DecimalLiteral:
        return DecimalLiteral(-self.value, self.width, self.scale)

    def __repr__(self) -> str:
        return str(self.value)

    @property
    def type(self) -> pa.DataType:
        return pa.decimal128(self.width, self.scale)

    def scalar(self) -> pa.Scalar:
        return pa.scalar(self.value, self.type)


def number_literal(text: str) -> int | float | DecimalLiteral:
    """A SQL number literal's value as DuckDB types it: an integer, a DECIMAL or a DOUBLE."""
    digits = text[1:] if text[:1] in ("+", "-") else text
    if digits.isdecimal():  # re.fullmatch(r"[+-]?\d+", text) without compiling it (\d is isdecimal's set)
        return int(text)
    m = re.fullmatch(r"[+-]?(\d*)\.(\d*)", text)
    if m is not None and len(m.group(1)) + len(m.group(2)) <= MAX_WIDTH:
        width = max(1, len(m.group(1)) + len(m.group(2)))
        return DecimalLiteral(Decimal(text), width, len(m.group(2)))
    return float(text)


def decimal_text(value: Decimal, t: pa.DataType) -> str:
    """A literal that :func:`number_literal` reads back as ``value`` of DECIMAL type ``t`` (zeros in front
    make up its width: 0.3 in DECIMAL(3,1) is ``00.3``)."""
    with decimal.localcontext() as ctx:
        ctx.prec = 80
        sign, digits, _ = value.quantize(Decimal(1).scaleb(-t.scale)).as_tuple()
    text = "".join(map(str, digits)).rjust(t.precision, "0")
    whole, fraction = text[: len(text) - t.scale], text[len(text) - t.scale :]
    return ("-" if sign else "") + f"{whole}.{fraction}"


def int_width(t: pa.DataType, literal: int | None = None) -> int:
    """The digits of an integer type as DuckDB casts it to DECIMAL (a literal: INTEGER when it fits)."""
    if literal is not None:
        return 10 if -(2**31) <= literal < 2**31 else 19 if -(2**63) <= literal < 2**63 else MAX_WIDTH
    if t.bit_width in _INT_WIDTH:
        return _INT_WIDTH[t.bit_width]
    return 20 if pa.types.is_uint64(t) else 19


def as_decimal_type(t: pa.DataType, width: int | None = None) -> tuple[int, int] | None:
    """(width, scale) of a DECIMAL or integer operand (``width``: its integer type's digits as DuckDB types
    the expression, when known); None for other types."""
    if pa.types.is_decimal(t):
        return t.precision, t.scale
    if pa.types.is_integer(t):
        return width or int_width(t), 0
    return None


_SAME_INT = {"coalesce", "greatest", "least", "nullif", "intdiv", "mod"}


def expr_int_width(node, columns) -> int | None:
    """The digits of the integer type DuckDB gives expression ``node`` (tidal computes integers as BIGINT;
    DuckDB types an integer literal INTEGER, and INTEGER op INTEGER is an INTEGER): None when not known."""
    from .nodes import BinOp, Call, Case, Col, Const, SqlCall, Unary

    if node is None:
        return None
    if isinstance(node, Const):
        v = node.value
        return int_width(pa.int64(), v) if isinstance(v, int) and not isinstance(v, bool) else None
    if isinstance(node, Col):
        col = columns.get(node.name) if columns is not None else None
        return int_width(col.type) if col is not None and pa.types.is_integer(col.type) else None
    if isinstance(node, BinOp) and node.op in ("+", "-", "*"):
        parts = (node.left, node.right)
        lits = [p.value for p in parts if isinstance(p, Const) and type(p.value) is int]
        if len(lits) == 1:  # a literal takes the other operand's type where it fits in it (tinyint_col + 1: TINYINT)
            other = expr_int_width(parts[1] if isinstance(parts[0], Const) else parts[0], columns)
            bits = {3: 8, 5: 16, 10: 32, 19: 64}.get(other) if other is not None else None
            if bits is not None and -(2 ** (bits - 1)) <= lits[0] < 2 ** (bits - 1):
                return other
    elif isinstance(node, Unary) and node.op == "-" or isinstance(node, Call) and node.func == "abs":
        parts = node.children()
    elif isinstance(node, SqlCall) and node.func in _SAME_INT:
        parts = node.args
    elif isinstance(node, Case):
        parts = (*(v for _, v in node.whens), node.default)
    else:
        return None
    parts = [p for p in parts if not (isinstance(p, Const) and p.value is None)]
    literals = [p.value for p in parts if isinstance(p, Const) and type(p.value) is int]
    others = [p for p in parts if not (isinstance(p, Const) and type(p.value) is int)]
    if literals and others:  # a literal takes the others' type where it fits in it (coalesce(ti, 1): TINYINT)
        widths = [expr_int_width(p, columns) for p in others]
        bits = {3: 8, 5: 16, 10: 32, 19: 64}.get(max(widths)) if None not in widths else None
        if bits is None or any(_unsigned(p, columns) for p in others):
            return None  # (unsigned, or not known: the value's own type)
        outside = [v for v in literals if not -(2 ** (bits - 1)) <= v < 2 ** (bits - 1)]
        return max([max(widths), *(int_width(pa.int64(), v) for v in outside)])
    if len(parts) > 1 and len({_unsigned(p, columns) for p in parts}) > 1:
        return None  # unsigned beside signed: DuckDB's common type is wider than either (the value's own type)
    widths = [expr_int_width(p, columns) for p in parts]
    return max(widths) if widths and None not in widths else None


def _unsigned(node, columns) -> bool:
    from .nodes import Cast, Col

    if isinstance(node, Cast):
        return pa.types.is_unsigned_integer(node.to)
    col = columns.get(node.name) if isinstance(node, Col) and columns is not None else None
    return col is not None and pa.types.is_unsigned_integer(col.type)


def result_type(op: str, a: tuple[int, int], b: tuple[int, int]) -> pa.DataType:
    """DuckDB's result type of ``a op b`` for DECIMAL (or integer) operands of (width, scale) ``a``, ``b``."""
    (p1, s1), (p2, s2) = a, b
    if op in ("+", "-"):
        scale = max(s1, s2)
        return pa.decimal128(min(MAX_WIDTH, max(p1 - s1, p2 - s2) + scale + 1), scale)
    if op == "*":
        scale = s1 + s2
        if scale > MAX_WIDTH:
            raise pa.ArrowInvalid(
                f"Needed scale {scale} to accurately represent the multiplication result, but this is out of "
                f"range of the DECIMAL type (at most {MAX_WIDTH})"
            )
        width = p1 + p2
        if width > 18 and max(p1, p2) <= 18 and scale < 18:
            width = 18
        return pa.decimal128(min(MAX_WIDTH, width), scale)
    if op == "%":
        scale = max(s1, s2)
        width = max(p1 - s1, p2 - s2) + scale
        return pa.decimal128(width, scale) if width <= MAX_WIDTH else pa.float64()
    return pa.float64()


def arithmetic(op: str, a, b, left=None, right=None, columns=None):
    """``a op b`` (``+ - * %``) where one side is a DECIMAL and the other a DECIMAL or an integer (the
    nodes ``left``/``right``: an integer literal's width is its own); None when DuckDB computes it
    otherwise (a DOUBLE or FLOAT beside it: the caller's floating-point way)."""
    ta, tb = (as_decimal_type(v.type, expr_int_width(n, columns)) for v, n in ((a, left), (b, right)))
    if ta is None or tb is None:
        return None
    target = result_type(op, ta, tb)
    if pa.types.is_floating(target):  # % too wide for a DECIMAL: fmod of DOUBLEs
        return None
    if op != "%" and (fast := decimal_ints.arithmetic(op, a, b, target)) is not None:
        return fast  # over int64 unscaled values, where every value fits
    a, b = _as_decimal(a, ta), _as_decimal(b, tb)
    if op == "%":
        return _modulo(a, b, target)
    # computed in 256 bits (Arrow's own result type would be wider than DuckDB's), then checked into the target
    wide = [pc.cast(x, pa.decimal256(x.type.precision, x.type.scale)) for x in (a, b)]
    fn = {"+": pc.add_checked, "-": pc.subtract_checked, "*": pc.multiply_checked}[op]
    out = fn(*wide)
    try:
        return pc.cast(out, target)
    except pa.ArrowInvalid:
        raise pa.ArrowInvalid(
            f"Overflow in {op} of DECIMAL: the result does not fit in DECIMAL({target.precision},{target.scale})"
        ) from None


def _as_decimal(v, ws: tuple[int, int]):
    """An integer as a DECIMAL(w, 0) wide enough for its type (Arrow's cast wants every digit of it)."""
    if pa.types.is_decimal(v.type):
        return v
    return pc.cast(v, pa.decimal128(max(ws[0], int_width(v.type)), 0))


def _modulo(a, b, target: pa.DataType):
    """Truncated remainder (its sign the dividend's), exact, by Python's decimals; a zero divisor is an error."""
    scalar = isinstance(a, pa.Scalar) and isinstance(b, pa.Scalar)
    n = 1 if scalar else len(b if isinstance(a, pa.Scalar) else a)
    xs = [a.as_py()] * n if isinstance(a, pa.Scalar) else a.to_pylist()
    ys = [b.as_py()] * n if isinstance(b, pa.Scalar) else b.to_pylist()
    out = []
    with decimal.localcontext() as ctx:
        ctx.prec = 80
        for x, y in zip(xs, ys, strict=True):
            if x is None or y is None:
                out.append(None)
            elif y == 0:
                raise pa.ArrowInvalid("division by zero")
            else:
                out.append(x % y)  # Decimal's % truncates, as DuckDB's
    arr = pa.array(out, pa.decimal256(MAX_WIDTH + 2, target.scale) if out else target)
    arr = pc.cast(arr, target)
    return arr[0] if scalar else arr


def common_type(types: list[pa.DataType], nodes=None, columns=None) -> pa.DataType | None:
    """The common type of branches when one is a DECIMAL: a DOUBLE/FLOAT beside it wins; DECIMALs and
    integers meet in a DECIMAL with the most integer digits and the largest scale (cut to 38 digits by
    dropping scale). None when no branch is a DECIMAL (the caller's own rule)."""
    if not any(pa.types.is_decimal(t) for t in types):
        return None
    floats = [t for t in types if pa.types.is_floating(t)]
    if floats:
        return pa.float64() if any(pa.types.is_float64(t) for t in floats) else pa.float32()
    digits, scale = 0, 0
    nodes = nodes if nodes is not None else [None] * len(types)
    for t, node in zip(types, nodes, strict=True):
        ws = as_decimal_type(t, expr_int_width(node, columns))
        if ws is None:
            continue
        digits, scale = max(digits, ws[0] - ws[1]), max(scale, ws[1])
    scale = min(scale, MAX_WIDTH - digits)
    return pa.decimal128(min(MAX_WIDTH, digits + scale), scale)


def comparable(a, b):
    """``a`` and ``b`` for a comparison as DuckDB binds one of a DECIMAL with a DECIMAL or an integer: in a
    DECIMAL with the most integer digits and the largest scale; past 38 digits DECIMAL(38, that scale), where
    a value with more integer digits than it holds is an error (DuckDB's failed cast), never a wrong answer.
    Within 38 digits (or other types) they are returned as they are: Arrow compares those exactly itself."""
    ta, tb = as_decimal_type(a.type), as_decimal_type(b.type)
    if ta is None or tb is None or not (pa.types.is_decimal(a.type) or pa.types.is_decimal(b.type)):
        return a, b
    scale = max(ta[1], tb[1])
    if max(ta[0] - ta[1], tb[0] - tb[1]) + scale <= MAX_WIDTH:
        return a, b
    target = pa.decimal128(MAX_WIDTH, scale)
    return cast_decimal(a, target, "comparison"), cast_decimal(b, target, "comparison")


def cast_decimal(v, target: pa.DataType, text: str):
    """A value cast to DECIMAL(p, s) as DuckDB casts: rounded half away from zero to ``s`` digits, an error
    for a value with more than ``p - s`` integer digits (or a NaN, an infinity, a bad text)."""
    t = v.type
    if pa.types.is_null(t):
        return pc.cast(v, target)
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return _from_python(v, target, text, lambda s: Decimal(number_text(s.strip())))
    if pa.types.is_floating(t):
        return _from_python(v, target, text, lambda x: Decimal(repr(float(x))) if math.isfinite(x) else None)
    if pa.types.is_boolean(t):
        v = pc.cast(v, pa.int8())
        t = v.type
    if pa.types.is_integer(t):
        v = _as_decimal(v, (int_width(t), 0))
        t = v.type
    if not pa.types.is_decimal(t):
        raise pa.ArrowNotImplementedError(f"cannot cast {t} to {target}")
    if t.scale > target.scale:
        wide = pa.decimal256(min(76, t.precision + 1), t.scale)
        v = pc.round(pc.cast(v, wide), ndigits=target.scale, round_mode="half_towards_infinity")
    elif t.scale < target.scale:  # rescaled in 256 bits: Arrow's 128-bit rescale wraps (2**32 * 10**29)
        v = pc.cast(pc.cast(v, pa.decimal256(t.precision, t.scale)), pa.decimal256(76, target.scale))
    try:
        return pc.cast(v, target)
    except pa.ArrowInvalid:
        bad = _first_unfit(v, target)
        raise pa.ArrowInvalid(f"Could not cast value {bad} to DECIMAL({target.precision},{target.scale})") from None


def _first_unfit(v, target):
    limit = Decimal(10) ** (target.precision - target.scale)
    values = [v.as_py()] if isinstance(v, pa.Scalar) else v.to_pylist()
    return next((x for x in values if x is not None and abs(x) >= limit), "")


def _from_python(v, target: pa.DataType, text: str, parse):
    """Cast through Python's decimals (text, floats): each distinct value once."""
    scalar = isinstance(v, pa.Scalar)
    values = [v.as_py()] if scalar else v.to_pylist()
    quantum = Decimal(1).scaleb(-target.scale)
    limit = Decimal(10) ** (target.precision - target.scale)
    done: dict = {}
    out = []
    with decimal.localcontext() as ctx:
        ctx.prec = 200
        for x in values:
            if x is None:
                out.append(None)
                continue
            if x not in done:
                try:
                    d = parse(x)
                except (decimal.InvalidOperation, ValueError):
                    d = None
                if d is not None and d.is_finite() and abs(d.adjusted()) > ctx.Emax:
                    d = None  # an exponent beyond any DECIMAL (1e9999999999, 1e-9999999999): DuckDB errs
                if d is not None and d.is_finite() and abs(d) < limit:  # (1e300 would not fit the context)
                    d = d.quantize(quantum, rounding=decimal.ROUND_HALF_UP)
                if d is None or not d.is_finite() or abs(d) >= limit:
                    raise pa.ArrowInvalid(f"Could not cast value {x} to DECIMAL({target.precision},{target.scale})")
                done[x] = d
            out.append(done[x])
    arr = pa.array(out, target)
    return arr[0] if scalar else arr


# -- plan time: DECIMAL constants where DuckDB makes them DOUBLE or compares them with integers ---------
def fold_for_types(node, types: dict[str, pa.DataType]):
    """``node`` with each DECIMAL literal that meets a DOUBLE (an operand of ``+ - * /``, a comparison)
    made that DOUBLE, and each comparison of an integer expression with one made an exact integer
    comparison (``i > 100.5`` is ``i >= 101``); the tree unchanged when there is none."""
    from .nodes import Const

    if not any(isinstance(n, Const) and isinstance(n.value, DecimalLiteral) for n in node.walk()):
        return node
    return _Folder(types).visit(node)


class _Folder:
    def __init__(self, types):
        self.types = types

    def kind(self, node) -> str | None:
        """'float', 'int', 'decimal' or None (unknown) for an expression over these columns."""
        from .nodes import BinOp, Call, Col, Const, Unary

        if isinstance(node, Col):
            t = self.types.get(node.name)
            if t is None:
                return None
            if pa.types.is_floating(t):  # a FLOAT meets a DECIMAL as a FLOAT: left to the evaluator
                return "float" if pa.types.is_float64(t) else None
            if pa.types.is_integer(t):
                return "int"
            return "decimal" if pa.types.is_decimal(t) else None
        if isinstance(node, Const):
            v = node.value
            if isinstance(v, bool):
                return None
            return {int: "int", float: "float", DecimalLiteral: "decimal"}.get(type(v))
        if isinstance(node, BinOp):
            a, b = self.kind(node.left), self.kind(node.right)
            if node.op == "/":
                return "float" if a is not None and b is not None else None
            if "float" in (a, b) and None not in (a, b):
                return "float"
            if node.op in ("+", "-", "*") and a == b == "int":
                return "int"
            return "decimal" if {a, b} <= {"int", "decimal"} else None
        if isinstance(node, Unary) and node.op == "-" or isinstance(node, Call) and node.func == "abs":
            return self.kind(node.children()[0])
        return None

    def visit(self, node):
        from .nodes import BinOp, Compare, Const

        node = _rebuilt(node, [self.visit(c) for c in node.children()])
        if isinstance(node, BinOp | Compare) and node.op in ("+", "-", "*", "/", "==", "!=", "<", "<=", ">", ">="):
            left, right = node.left, node.right
            lk, rk = self.kind(left), self.kind(right)
            if isinstance(right, Const) and isinstance(right.value, DecimalLiteral):
                if lk == "float" or node.op == "/" and lk is not None:  # (a FLOAT's kind is None: FLOAT / 0.1 is FLOAT)
                    return _replace(node, right=Const(float(right.value.value)))
                if lk == "int" and isinstance(node, Compare):
                    return _int_compare(node.op, left, right.value.value, flipped=False)
            if isinstance(left, Const) and isinstance(left.value, DecimalLiteral):
                if rk == "float" or node.op == "/" and rk is not None:
                    return _replace(node, left=Const(float(left.value.value)))
                if rk == "int" and isinstance(node, Compare):
                    return _int_compare(node.op, right, left.value.value, flipped=True)
        return node


_FLIP = {"==": "==", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}


def _int_compare(op: str, expr, d: Decimal, flipped: bool):
    """``expr op d`` (``d op expr`` when ``flipped``) for an integer ``expr``, as an integer comparison."""
    from .nodes import Compare, Const, SqlCall

    if flipped:
        op = _FLIP[op]
    whole = d == d.to_integral_value()
    if op in ("==", "!="):
        if whole and -(2**63) <= int(d) < 2**63:
            return Compare(op, expr, Const(int(d)))
        # never equal: false (true for !=), NULL where expr is NULL
        return SqlCall("null_or", (expr,), (op == "!=",))
    bound = int(d.to_integral_value(decimal.ROUND_FLOOR if op in ("<", "<=") else decimal.ROUND_CEILING))
    if not whole:
        op = {"<": "<=", "<=": "<=", ">": ">=", ">=": ">="}[op]
    if not -(2**63) <= bound < 2**63:  # beyond BIGINT: every integer is on one side
        above = bound >= 2**63
        return SqlCall("null_or", (expr,), ((op in ("<", "<=")) == above,))
    return Compare(op, expr, Const(bound))


def null_or(ev, node):
    """A constant boolean, NULL where the argument is NULL (a comparison decided by types alone)."""
    v = ev.eval(node.args[0])
    value = pa.scalar(bool(node.params[0]), pa.bool_())
    if isinstance(v, pa.Scalar):
        return value if v.is_valid else pa.scalar(None, pa.bool_())
    return pc.if_else(pc.is_valid(v), value, pa.scalar(None, pa.bool_()))


def _replace(node, **changes):
    from dataclasses import replace

    return replace(node, **changes)


def _rebuilt(node, children):
    """``node`` with new children (itself when they are the same objects)."""
    from dataclasses import fields, replace

    from .nodes import Case, Node, Record

    if all(a is b for a, b in zip(node.children(), children, strict=True)):
        return node
    if isinstance(node, Case):
        pairs = tuple((children[2 * i], children[2 * i + 1]) for i in range(len(node.whens)))
        return replace(node, whens=pairs, default=children[-1])
    if isinstance(node, Record):
        return replace(node, fields=tuple((k, c) for (k, _), c in zip(node.fields, children, strict=True)))
    it = iter(children)
    changes = {}
    for f in fields(node):
        value = getattr(node, f.name)
        if isinstance(value, Node):
            changes[f.name] = next(it)
        elif isinstance(value, tuple) and value and all(isinstance(x, Node) for x in value):
            changes[f.name] = tuple(next(it) for _ in value)
    return replace(node, **changes)


# -- typeof ------------------------------------------------------------------------------------------
def type_name(t: pa.DataType) -> str:
    """DuckDB's name of a value's type, as ``typeof`` gives it."""
    if pa.types.is_decimal(t):
        return f"DECIMAL({t.precision},{t.scale})"
    names = {
        pa.int8(): "TINYINT", pa.int16(): "SMALLINT", pa.int32(): "INTEGER", pa.int64(): "BIGINT",
        pa.uint8(): "UTINYINT", pa.uint16(): "USMALLINT", pa.uint32(): "UINTEGER", pa.uint64(): "UBIGINT",
        pa.float32(): "FLOAT", pa.float64(): "DOUBLE", pa.bool_(): "BOOLEAN", pa.string(): "VARCHAR",
        pa.large_string(): "VARCHAR", pa.date32(): "DATE", pa.null(): '"NULL"', pa.duration("us"): "INTERVAL",
    }  # fmt: skip
    if t in names:
        return names[t]
    if pa.types.is_timestamp(t):
        return "TIMESTAMP WITH TIME ZONE" if t.tz else "TIMESTAMP" if t.unit == "us" else f"TIMESTAMP_{t.unit.upper()}"
    return str(t).upper()


def typeof(ev, node):
    """``typeof(x)``: DuckDB's name of x's type (an integer literal is an INTEGER when it fits one, and so
    are INTEGER expressions tidal computes as BIGINT)."""
    t = ev.eval(node.args[0]).type
    width = expr_int_width(node.args[0], ev.columns) if pa.types.is_int64(t) else None
    return pa.scalar("INTEGER" if width == 10 else type_name(t), pa.string())


def _reinterpreted(v, t: pa.DataType):
    """A DECIMAL array's 128-bit unscaled integers read as type ``t`` (another DECIMAL128 scale)."""
    if isinstance(v, pa.Scalar):
        return _reinterpreted(pa.array([v.as_py()], v.type), t)[0]
    v = v.combine_chunks() if isinstance(v, pa.ChunkedArray) else v
    return pa.Array.from_buffers(t, len(v), v.buffers()[:2], null_count=v.null_count, offset=v.offset)


def decimal_unscaled(ev, node):
    """A DECIMAL of at most 18 digits as its unscaled BIGINT (1.25 in DECIMAL(5,2) is 125)."""
    v = ev.eval(node.args[0])
    if pa.types.is_null(v.type):
        return pc.cast(v, pa.int64())
    if v.type.precision <= 18 and not isinstance(v, pa.Scalar):
        values, mask, _ = decimal_ints.unscaled(v, len(v))
        return pa.array(values, pa.int64(), mask=mask if mask.any() else None)
    wide = pc.cast(v, pa.decimal128(MAX_WIDTH, v.type.scale))
    try:
        return pc.cast(_reinterpreted(wide, pa.decimal128(MAX_WIDTH, 0)), pa.int64())
    except pa.ArrowInvalid:
        raise pa.ArrowInvalid(
            f"a SUM of {type_name(v.type)} over a value with more than 18 digits is not supported"
        ) from None


def decimal_scaled(ev, node):
    """A BIGINT of unscaled values as DECIMAL(38, scale): the exact sum of :func:`decimal_unscaled`'s."""
    v = ev.eval(node.args[0])
    target = pa.decimal128(MAX_WIDTH, node.params[0])
    if pa.types.is_null(v.type):
        return pc.cast(v, target)
    return _reinterpreted(pc.cast(v, pa.decimal128(MAX_WIDTH, 0)), target)


FUNCS = {
    "typeof": typeof, "null_or": null_or, "decimal_unscaled": decimal_unscaled, "decimal_scaled": decimal_scaled,
    **decimal_sum.FUNCS,
}  # fmt: skip
