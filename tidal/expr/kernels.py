"""Columnar evaluation of expression trees with Python's row semantics.

The rule: a lambda run in columnar mode gives exactly what it gives run on each row in
Python. Where numpy or Arrow would differ (nulls, division by zero, negative square roots,
non-ASCII case mapping, NaN in min/max), evaluation raises :class:`Fallback` and the
operator evaluates that batch row by row instead. Combinations that can never be columnar
(say ``str * int``) raise :class:`Unsupported`, found once at plan time by evaluating the
tree over empty columns of the input schema.

Known difference: integer arithmetic wraps at 64 bits, where Python's integers do not.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..core.errors import PlanError
from .nodes import BinOp, BoolOp, Call, Col, Compare, Const, IfElse, Node, PyCall, Record, Unary


class Unsupported(Exception):
    """The expression cannot run columnar for these input types."""


class Fallback(Exception):
    """This batch's data needs row-at-a-time evaluation to keep Python semantics."""


def _is_str(v) -> bool:
    return isinstance(v, str) or (
        isinstance(v, pa.Array)
        and pa.types.is_string(v.type)
        or isinstance(v, pa.Array)
        and pa.types.is_large_string(v.type)
    )


def _is_num(v) -> bool:
    if isinstance(v, np.ndarray):
        return v.dtype.kind in "biuf"
    return isinstance(v, bool | int | float) and not isinstance(v, str)


def _is_bool(v) -> bool:
    return (isinstance(v, np.ndarray) and v.dtype == np.bool_) or isinstance(v, bool)


def _as_int_if_bool(v):
    if isinstance(v, np.ndarray) and v.dtype == np.bool_:
        return v.astype(np.int64)
    if isinstance(v, bool):
        return int(v)
    return v


def _any_zero(v) -> bool:
    if isinstance(v, np.ndarray):
        return bool((v == 0).any())
    return v == 0


def _has_nan(v) -> bool:
    return isinstance(v, np.ndarray) and v.dtype.kind == "f" and bool(np.isnan(v).any())


def _to_bool_array(v) -> np.ndarray:
    if isinstance(v, pa.Array):
        return v.to_numpy(zero_copy_only=False).astype(bool, copy=False)
    return v


def _ascii_only(v) -> None:
    if isinstance(v, pa.Array) and len(v) and not pc.all(pc.string_is_ascii(v)).as_py():
        raise Fallback("non-ASCII text")
    if isinstance(v, str) and not v.isascii():
        raise Fallback("non-ASCII text")


_NUM_BINOPS = {
    "+": np.add,
    "-": np.subtract,
    "*": np.multiply,
    "/": np.true_divide,
    "//": np.floor_divide,
    "%": np.mod,
    "**": np.power,
    "&": np.bitwise_and,
    "|": np.bitwise_or,
    "^": np.bitwise_xor,
    "<<": np.left_shift,
    ">>": np.right_shift,
}
_ARITH = frozenset({"+", "-", "*", "/", "//", "%", "**"})
_CMP_NUM = {
    "==": np.equal,
    "!=": np.not_equal,
    "<": np.less,
    "<=": np.less_equal,
    ">": np.greater,
    ">=": np.greater_equal,
}
_CMP_ARROW = {
    "==": pc.equal,
    "!=": pc.not_equal,
    "<": pc.less,
    "<=": pc.less_equal,
    ">": pc.greater,
    ">=": pc.greater_equal,
}
_STR_UNARY = {
    "str.upper": pc.utf8_upper,
    "str.lower": pc.utf8_lower,
    "str.title": pc.utf8_title,
    "str.strip": pc.utf8_trim_whitespace,
    "str.lstrip": pc.utf8_ltrim_whitespace,
    "str.rstrip": pc.utf8_rtrim_whitespace,
}


class PyValues(list):
    """Per-row results of a Python call that are not one number, bool or text type: kept as objects."""


def _python_values(v, length: int) -> list:
    if isinstance(v, np.ndarray):
        return v.tolist()
    if isinstance(v, pa.Array | pa.ChunkedArray):
        return v.to_pylist()
    if isinstance(v, PyValues):
        return v
    return [v] * length


def _from_python_results(results: list):
    """Per-row results as a numpy column (numbers, bools), an Arrow column (text) or :class:`PyValues`."""
    kinds = set(map(type, results))
    if kinds <= {bool}:
        return np.array(results, dtype=np.bool_)
    if kinds <= {int, float} and kinds:
        arr = pa.array(results)
        if arr.null_count == 0 and (pa.types.is_int64(arr.type) or pa.types.is_float64(arr.type)):
            return arr.to_numpy()
    if kinds == {str}:
        return pa.array(results, type=pa.string())
    return PyValues(results)


class Evaluator:
    """Evaluates a tree over one batch's columns (a mapping name -> Arrow array)."""

    def __init__(self, columns: dict[str, pa.Array], length: int):
        self.columns = columns
        self.length = length
        self._cache: dict[str, object] = {}

    def column(self, name: str):
        if name in self._cache:
            return self._cache[name]
        try:
            col = self.columns[name]
        except KeyError:
            raise PlanError(f"unknown field {name!r}; the stream has {sorted(self.columns)}") from None
        t = col.type
        if col.null_count:
            raise Fallback(f"nulls in {name!r}")
        if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t):
            value = col.to_numpy(zero_copy_only=not pa.types.is_boolean(t))
        elif pa.types.is_string(t) or pa.types.is_large_string(t):
            value = col
        else:
            raise Unsupported(f"field {name!r} of type {t}")
        self._cache[name] = value
        return value

    def truth(self, node: Node):
        """The truthiness of ``node`` per row, as a numpy bool array or a Python bool."""
        if isinstance(node, BoolOp):
            parts = [self.truth(o) for o in node.operands]
            f = np.logical_and if node.op == "and" else np.logical_or
            out = parts[0]
            for p in parts[1:]:
                out = f(out, p)
            return out
        if isinstance(node, Unary) and node.op == "not":
            return np.logical_not(self.truth(node.operand))
        if isinstance(node, PyCall) and self.length:
            # only the truth of each result is needed: numpy takes it per value, as bool() would
            return self._call_per_row(node, lambda calls: np.fromiter(calls, dtype=np.bool_, count=self.length))
        v = self.eval(node)
        if isinstance(v, np.ndarray):
            return v if v.dtype == np.bool_ else v != 0
        if isinstance(v, PyValues):
            return np.fromiter(map(bool, v), dtype=np.bool_, count=len(v))
        if isinstance(v, pa.Array):
            if pa.types.is_boolean(v.type):
                return _to_bool_array(v)
            return _to_bool_array(pc.greater(pc.binary_length(v), 0))
        return bool(v)

    def eval(self, node: Node):
        if isinstance(node, Col):
            return self.column(node.name)
        if isinstance(node, Const):
            return node.value
        if isinstance(node, BinOp):
            return self._binop(node.op, self.eval(node.left), self.eval(node.right))
        if isinstance(node, Compare):
            return self._compare(node.op, self.eval(node.left), self.eval(node.right))
        if isinstance(node, BoolOp):
            values = [self.eval(o) for o in node.operands]
            if not all(_is_bool(v) for v in values):
                raise Unsupported("and/or over non-boolean values")
            return self.truth(node)
        if isinstance(node, Unary):
            return self._unary(node)
        if isinstance(node, IfElse):
            return self._ifelse(node)
        if isinstance(node, Call):
            return self._call(node.func, [self.eval(a) for a in node.args])
        if isinstance(node, PyCall):
            return self._python_call(node)
        raise Unsupported(f"{type(node).__name__} in a value position")

    def _python_call(self, node: PyCall):
        if self.length == 0:
            return PyValues()  # the function is not called to type-check
        return _from_python_results(self._call_per_row(node, list))

    def _call_per_row(self, node: PyCall, collect):
        """``collect`` applied to the function's calls, one per row, on the arguments' Python values."""
        args = [_python_values(self.eval(a), self.length) for a in node.args]
        try:
            return collect(map(node.func, *args))
        except Exception:
            raise Fallback(f"{node.name}() raised; row by row to name the row") from None

    def _binop(self, op: str, a, b):
        if isinstance(a, PyValues) or isinstance(b, PyValues):
            if len(a if isinstance(a, PyValues) else b) == 0:
                return PyValues()
            raise Fallback(f"operator {op} on Python objects")
        if _is_num(a) and _is_num(b):
            if op in _ARITH:
                a, b = _as_int_if_bool(a), _as_int_if_bool(b)
            elif op in ("<<", ">>") and (_is_bool(a) or _is_bool(b)):
                a, b = _as_int_if_bool(a), _as_int_if_bool(b)
            if op in ("/", "//", "%") and _any_zero(b):
                raise Fallback("division by zero")
            if op == "**" and (
                isinstance(b, np.ndarray) and b.dtype.kind in "iu" and (b < 0).any() or isinstance(b, int) and b < 0
            ):
                raise Fallback("negative integer power")
            if op in ("&", "|", "^", "<<", ">>") and (_float(a) or _float(b)):
                raise Unsupported("bitwise operator on floats")
            if op == "**" and (_float(a) or _float(b)):
                # Python raises or goes complex for negative bases with fractional exponents
                if isinstance(a, np.ndarray) and (a < 0).any() or isinstance(a, float | int) and a < 0:
                    raise Fallback("negative base to a float power")
            with np.errstate(all="raise"):
                try:
                    result = _NUM_BINOPS[op](a, b)
                except FloatingPointError:
                    raise Fallback("floating point overflow or invalid operation") from None
            if not isinstance(result, np.ndarray):
                result = result.item() if isinstance(result, np.generic) else result
            return result
        if _is_str(a) and _is_str(b) and op == "+":
            if isinstance(a, str) and isinstance(b, str):
                return a + b
            return pc.binary_join_element_wise(a, b, "")
        raise Unsupported(f"operator {op} on {_kind(a)} and {_kind(b)}")

    def _compare(self, op: str, a, b):
        if op in ("is", "isnot"):  # only `is None` / `is not None` get this far
            if isinstance(a, PyValues):
                out = np.fromiter((x is None for x in a), dtype=np.bool_, count=len(a))
            else:  # columns seen columnar hold no nulls: only a None constant is None
                out = np.full(self.length, a is None, dtype=np.bool_)
            return np.logical_not(out) if op == "isnot" else out
        if isinstance(a, PyValues) or isinstance(b, PyValues):
            if len(a if isinstance(a, PyValues) else b) == 0:
                return np.zeros(0, dtype=np.bool_)
            raise Fallback(f"comparison {op} on Python objects")
        if op in ("in", "notin"):
            result = self._contains(a, b)
            return np.logical_not(result) if op == "notin" else result
        if _is_num(a) and _is_num(b):
            return _CMP_NUM[op](a, b)
        if _is_str(a) and _is_str(b):
            if isinstance(a, str) and isinstance(b, str):
                return _CMP_NUM[op](a, b)
            return _to_bool_array(_CMP_ARROW[op](a, b))
        raise Unsupported(f"comparison {op} between {_kind(a)} and {_kind(b)}")

    def _contains(self, needle, hay):
        if isinstance(hay, tuple):
            if _is_num(needle) and all(isinstance(x, int | float) and not isinstance(x, bool) for x in hay):
                return np.isin(needle, np.array(hay))
            if _is_str(needle) and all(isinstance(x, str) for x in hay):
                if isinstance(needle, str):
                    return needle in hay
                return _to_bool_array(pc.is_in(needle, value_set=pa.array(list(hay), type=needle.type)))
            raise Unsupported("membership test over mixed constants")
        if isinstance(needle, str) and isinstance(hay, pa.Array) and _is_str(hay):
            return _to_bool_array(pc.match_substring(hay, needle))
        raise Unsupported("membership test")

    def _unary(self, node: Unary):
        if node.op == "not":
            return np.logical_not(self.truth(node.operand))
        v = self.eval(node.operand)
        if not _is_num(v):
            raise Unsupported(f"unary {node.op} on {_kind(v)}")
        if node.op == "~":
            if _is_bool(v) or _float(v):
                raise Unsupported("~ on a bool or float")
            return np.invert(v) if isinstance(v, np.ndarray) else ~v
        v = _as_int_if_bool(v)
        return -v if node.op == "-" else +v

    def _ifelse(self, node: IfElse):
        mask = self.truth(node.cond)
        then, other = self.eval(node.then), self.eval(node.otherwise)
        if not isinstance(mask, np.ndarray):
            return then if mask else other
        if _is_num(then) and _is_num(other):
            if _is_bool(then) != _is_bool(other):
                raise Unsupported("if/else mixing bool and number")
            return np.where(mask, then, other)
        if _is_str(then) and _is_str(other):
            return pc.if_else(pa.array(mask), then, other)
        raise Unsupported(f"if/else between {_kind(then)} and {_kind(other)}")

    def _call(self, func: str, args: list):
        if func in _STR_UNARY and len(args) == 1 and _is_str(args[0]):
            _ascii_only(args[0])
            if isinstance(args[0], str):
                return getattr(args[0], func[4:])()
            return _STR_UNARY[func](args[0])
        if func in ("str.startswith", "str.endswith") and len(args) == 2 and isinstance(args[1], str):
            target = args[0]
            if isinstance(target, str):
                return getattr(target, func[4:])(args[1])
            if _is_str(target):
                f = pc.starts_with if func == "str.startswith" else pc.ends_with
                return _to_bool_array(f(target, pattern=args[1]))
        if func == "str.replace" and len(args) == 3 and all(isinstance(a, str) for a in args[1:]) and args[1]:
            if _is_str(args[0]) and not isinstance(args[0], str):
                return pc.replace_substring(args[0], pattern=args[1], replacement=args[2])
        if func == "str.find" and len(args) == 2 and isinstance(args[1], str) and _is_str(args[0]):
            _ascii_only(args[0])  # Arrow counts bytes, Python code points: equal for ASCII
            _ascii_only(args[1])
            if isinstance(args[0], str):
                return args[0].find(args[1])
            return pc.find_substring(args[0], pattern=args[1]).to_numpy(zero_copy_only=False).astype(np.int64)
        if func == "len" and len(args) == 1 and _is_str(args[0]):
            v = args[0]
            if isinstance(v, str):
                return len(v)
            return pc.utf8_length(v).to_numpy(zero_copy_only=False).astype(np.int64)
        nums = all(_is_num(a) for a in args)
        if func == "abs" and len(args) == 1 and nums:
            return np.abs(_as_int_if_bool(args[0]))
        if func in ("min", "max") and len(args) >= 2 and nums:
            if any(_has_nan(a) for a in args) or any(isinstance(a, float) and a != a for a in args):
                raise Fallback("NaN in min/max")
            f = np.minimum if func == "min" else np.maximum
            out = args[0]
            for a in args[1:]:
                out = f(out, a)
            return out
        if func == "float" and len(args) == 1 and nums:
            v = args[0]
            return v.astype(np.float64) if isinstance(v, np.ndarray) else float(v)
        if func == "int" and len(args) == 1 and nums:
            v = args[0]
            if _float(v):
                if isinstance(v, np.ndarray) and not np.isfinite(v).all():
                    raise Fallback("int() of a non-finite float")
                return np.trunc(v).astype(np.int64) if isinstance(v, np.ndarray) else int(v)
            return _as_int_if_bool(v)
        if func == "bool" and len(args) == 1 and nums:
            v = args[0]
            return v.astype(bool) if isinstance(v, np.ndarray) else bool(v)
        if func in ("floor", "ceil") and len(args) == 1 and nums:
            v = args[0]
            if not _float(v):
                return _as_int_if_bool(v)
            if isinstance(v, np.ndarray) and not np.isfinite(v).all():
                raise Fallback("floor/ceil of a non-finite float")
            return (np.floor if func == "floor" else np.ceil)(v).astype(np.int64)
        if func in ("sqrt", "log", "exp") and len(args) == 1 and nums:
            v = np.asarray(args[0], dtype=np.float64)
            if func == "sqrt" and (v < 0).any() or func == "log" and (v <= 0).any():
                raise Fallback(f"{func} outside its domain")
            with np.errstate(all="raise"):
                try:
                    out = getattr(np, func)(v)
                except FloatingPointError:
                    raise Fallback(f"{func} overflow") from None
            return out if isinstance(args[0], np.ndarray) else float(out)
        raise Unsupported(f"{func}() on {', '.join(_kind(a) for a in args)}")


def _float(v) -> bool:
    return (isinstance(v, np.ndarray) and v.dtype.kind == "f") or isinstance(v, float)


def _kind(v) -> str:
    if isinstance(v, np.ndarray):
        return f"{v.dtype} column"
    if isinstance(v, pa.Array):
        return f"{v.type} column"
    return type(v).__name__


def to_arrow_column(value, length: int) -> pa.Array:
    """An evaluation result as an Arrow column of ``length`` rows (numpy wrapped without copying)."""
    if isinstance(value, pa.ChunkedArray):
        return value.combine_chunks()
    if isinstance(value, pa.Array):
        return value
    if isinstance(value, PyValues):
        try:
            return pa.array(value)
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            raise Fallback("results of mixed types") from None
    if isinstance(value, np.ndarray):
        return pa.array(value)
    if isinstance(value, str):
        return pa.array([value] * length, type=pa.string())
    return pa.array(np.full(length, value))


def record_fields(node: Node) -> tuple[tuple[str, Node], ...]:
    if isinstance(node, Record):
        return node.fields
    return (("value", node),)
