"""Translate a row-oriented Python lambda into an expression tree.

The lambda's own source text is found from its code object's positions (Python 3.11+),
parsed with :mod:`ast`, checked against the compiled bytecode (so we never translate the
wrong lambda on a line), and mapped node by node. Free names resolve to the closure and
globals the lambda sees: scalars become constants, known functions become calls.
Anything else makes the lambda *opaque*, and the operator runs it row at a time.
"""

from __future__ import annotations

import ast
import builtins
import dis
import linecache
import math
import types
from functools import lru_cache

import numpy as np

from .nodes import BinOp, BoolOp, Call, Col, Compare, Const, IfElse, Node, PyCall, Record, Unary


class Opaque(Exception):
    """The lambda cannot be translated; the message says why (shown by explain())."""


_BINOPS = {
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.Div: "/",
    ast.FloorDiv: "//",
    ast.Mod: "%",
    ast.Pow: "**",
    ast.BitAnd: "&",
    ast.BitOr: "|",
    ast.BitXor: "^",
    ast.LShift: "<<",
    ast.RShift: ">>",
}
_CMPOPS = {
    ast.Eq: "==",
    ast.NotEq: "!=",
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Gt: ">",
    ast.GtE: ">=",
    ast.In: "in",
    ast.NotIn: "notin",
    ast.Is: "is",
    ast.IsNot: "isnot",
}
_UNARY = {ast.USub: "-", ast.UAdd: "+", ast.Not: "not", ast.Invert: "~"}

# Functions a lambda may call in columnar mode, by identity of the Python object.
_KNOWN_FUNCS = {
    id(builtins.abs): "abs",
    id(builtins.len): "len",
    id(builtins.min): "min",
    id(builtins.max): "max",
    id(builtins.float): "float",
    id(builtins.int): "int",
    id(builtins.bool): "bool",
    id(math.sqrt): "sqrt",
    id(np.sqrt): "sqrt",
    id(math.floor): "floor",
    id(math.ceil): "ceil",
    id(np.abs): "abs",
    id(math.log): "log",
    id(np.log): "log",
    id(math.exp): "exp",
    id(np.exp): "exp",
}
_STR_METHODS = {"upper", "lower", "strip", "lstrip", "rstrip", "startswith", "endswith", "replace", "title", "find"}
_SCALARS = (int, float, bool, str, type(None))


def lambda_source(fn: types.FunctionType) -> str:
    """The source text of the lambda's body, located by its code positions."""
    code = fn.__code__
    spans = [p for p in code.co_positions() if p[0] is not None and p[2] is not None and (p[2], p[3]) != (0, 0)]
    if not spans:
        raise Opaque("no source positions")
    lines = linecache.getlines(code.co_filename)
    if not lines:
        raise Opaque("source not available")
    start = min((p[0], p[2]) for p in spans)
    end = max((p[1], p[3]) for p in spans)
    chunk = [line.encode() for line in lines[start[0] - 1 : end[0]]]
    if not chunk:
        raise Opaque("source not available")
    if len(chunk) == 1:
        text = chunk[0][start[1] : end[1]]
    else:
        text = chunk[0][start[1] :] + b"".join(chunk[1:-1]) + chunk[-1][: end[1]]
    return text.decode()


@lru_cache(maxsize=4096)
def _parse_body(code: types.CodeType, text: str) -> ast.expr:
    try:
        body = ast.parse("(" + text + ")", mode="eval").body
    except SyntaxError as exc:
        raise Opaque(f"could not parse lambda body: {exc.msg}") from None
    # Verify: the same body compiled with the same parameters must give the same bytecode.
    params = ", ".join(code.co_varnames[: code.co_argcount])
    free = ", ".join(code.co_freevars)
    src = f"def __probe({free}):\n return lambda {params}: ({text})\n"
    try:
        outer = compile(src, code.co_filename, "exec").co_consts[0]
    except SyntaxError:
        raise Opaque("lambda body is not a standalone expression") from None
    inner = next((c for c in outer.co_consts if isinstance(c, types.CodeType)), None)
    if inner is None or inner.co_names != code.co_names or _instructions(inner) != _instructions(code):
        raise Opaque("lambda source does not match its bytecode")
    return body


_JUMPS = frozenset(dis.hasjrel) | frozenset(dis.hasjabs)


def _instructions(code: types.CodeType) -> list[tuple]:
    """The instructions as (operation, argument), ignoring how a method is looked up: Python 3.11
    compiles ``module.f(x)`` differently when ``module`` is imported in the same file, so the
    probe compiled elsewhere may say LOAD_METHOD where the lambda says LOAD_ATTR."""
    out = []
    for ins in dis.get_instructions(code):
        name = "LOAD_ATTR" if ins.opname == "LOAD_METHOD" else ins.opname
        arg = ins.argval  # for LOAD_GLOBAL, the name without the push-NULL flag
        if isinstance(arg, types.CodeType):
            arg = "<code>"
        elif ins.opcode in _JUMPS:
            arg = None  # offsets move with the lengths of the instructions above
        out.append((name, arg if isinstance(arg, str | int | float | bool | bytes | type(None)) else repr(arg)))
    return out


def translate(fn, *, allow_record: bool = True) -> Node:
    """Translate ``fn`` (a one-parameter function over a row) into an expression tree."""
    if not isinstance(fn, types.FunctionType):
        raise Opaque(f"{type(fn).__name__} is not a Python function")
    code = fn.__code__
    if code.co_argcount != 1 or code.co_flags & (0x04 | 0x08):
        raise Opaque("expected a function of exactly one row argument")
    if fn.__name__ != "<lambda>":
        raise Opaque(f"function {fn.__name__!r} is not a lambda")
    body = _parse_body(code, lambda_source(fn))
    return _Translator(fn, allow_record).visit(body)


def row_field(node: ast.AST, param: str) -> str | None:
    """The field ``node`` reads when it is ``e.x`` or ``e["x"]`` of the row parameter ``param``."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == param:
        return node.attr
    if (
        isinstance(node, ast.Subscript)
        and isinstance(node.value, ast.Name)
        and node.value.id == param
        and isinstance(node.slice, ast.Constant)
        and isinstance(node.slice.value, str)
    ):
        return node.slice.value
    return None


def lambda_body(fn) -> tuple[ast.expr, str] | None:
    """``(body, row parameter)`` of a one-parameter lambda, or None when it is something else or its
    source cannot be found."""
    try:
        code = fn.__code__
        if code.co_argcount != 1 or fn.__name__ != "<lambda>":
            return None
        return _parse_body(code, lambda_source(fn)), code.co_varnames[0]
    except (Opaque, AttributeError, OSError, TypeError):
        return None


def fields_used(fn) -> set[str] | None:
    """The row fields a one-parameter lambda reads (``e.x``, ``e["x"]``), or None when it uses the
    row in any other way (passes it on, iterates it), so that row mode can build only those."""
    parsed = lambda_body(fn)
    if parsed is None:
        return None
    body, param = parsed
    fields: set[str] = set()
    covered: set[int] = set()
    for node in ast.walk(body):
        field = row_field(node, param)
        if field is not None:
            fields.add(field)
            covered.add(id(node.value))
    for node in ast.walk(body):
        if isinstance(node, ast.Name) and node.id == param and id(node) not in covered:
            return None
    return fields


def translate_params(fn, roles: list[str | None]) -> Node:
    """Translate a lambda of several parameters: ``roles[i]`` names the column parameter ``i`` stands
    for (a scalar such as an aggregate's state), or is None for the row parameter."""
    if not isinstance(fn, types.FunctionType) or fn.__name__ != "<lambda>":
        raise Opaque("not a lambda")
    code = fn.__code__
    if code.co_argcount != len(roles) or code.co_flags & (0x04 | 0x08):
        raise Opaque(f"expected a lambda of {len(roles)} parameters")
    body = _parse_body(code, lambda_source(fn))
    names = code.co_varnames[: code.co_argcount]
    row = [n for n, r in zip(names, roles, strict=True) if r is None]
    translator = _Translator(fn, allow_record=False, row_param=row[0] if row else "")
    translator.scalars = {n: r for n, r in zip(names, roles, strict=True) if r is not None}
    return translator.visit(body)


def translate_rows(fn, prefixes: list[str]) -> Node:
    """Translate a lambda of several row parameters (a join's ``result(l, r)``): field ``f`` of
    parameter ``i`` becomes the column ``prefixes[i] + f``."""
    if not isinstance(fn, types.FunctionType) or fn.__name__ != "<lambda>":
        raise Opaque("not a lambda")
    code = fn.__code__
    if code.co_argcount != len(prefixes) or code.co_flags & (0x04 | 0x08):
        raise Opaque(f"expected a lambda of {len(prefixes)} row parameters")
    body = _parse_body(code, lambda_source(fn))
    translator = _Translator(fn, allow_record=True, row_param="")
    translator.rows = dict(zip(code.co_varnames[: code.co_argcount], prefixes, strict=True))
    return translator.visit(body)


class _Translator:
    def __init__(self, fn: types.FunctionType, allow_record: bool, row_param: str | None = None):
        self.param = fn.__code__.co_varnames[0] if row_param is None else row_param
        self.scalars: dict[str, str] = {}
        self.rows: dict[str, str] = {}  # row parameters besides ``param``, and their column prefixes
        self.fn = fn
        self.allow_record = allow_record
        closure = {}
        if fn.__closure__:
            for name, cell in zip(fn.__code__.co_freevars, fn.__closure__, strict=True):
                try:
                    closure[name] = cell.cell_contents
                except ValueError:
                    pass
        self.closure = closure

    def resolve(self, name: str):
        if name in self.closure:
            return self.closure[name]
        if name in self.fn.__globals__:
            return self.fn.__globals__[name]
        if hasattr(builtins, name):
            return getattr(builtins, name)
        raise Opaque(f"unknown name {name!r}")

    def visit(self, node: ast.AST) -> Node:
        method = getattr(self, "visit_" + type(node).__name__, None)
        if method is None:
            raise Opaque(f"unsupported syntax: {type(node).__name__}")
        return method(node)

    def visit_Constant(self, node: ast.Constant) -> Node:
        if not isinstance(node.value, _SCALARS):
            raise Opaque(f"unsupported constant {node.value!r}")
        return Const(node.value)

    def visit_Name(self, node: ast.Name) -> Node:
        if node.id in self.scalars:
            return Col(self.scalars[node.id])
        if node.id == self.param or node.id in self.rows:
            raise Opaque("the row itself is used as a value")
        value = self.resolve(node.id)
        if isinstance(value, _SCALARS) or isinstance(value, np.generic):
            return Const(value.item() if isinstance(value, np.generic) else value)
        raise Opaque(f"name {node.id!r} is a {type(value).__name__}, not a scalar")

    def _field(self, node: ast.AST) -> str | None:
        if isinstance(node, ast.Attribute | ast.Subscript) and isinstance(node.value, ast.Name):
            prefix = self.rows.get(node.value.id)
            if prefix is not None:
                if isinstance(node, ast.Attribute):
                    return prefix + node.attr
                if isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
                    return prefix + node.slice.value
                return None
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == self.param:
            return node.attr
        if (
            isinstance(node, ast.Subscript)
            and isinstance(node.value, ast.Name)
            and node.value.id == self.param
            and isinstance(node.slice, ast.Constant)
            and isinstance(node.slice.value, str)
        ):
            return node.slice.value
        return None

    def visit_Attribute(self, node: ast.Attribute) -> Node:
        field = self._field(node)
        if field is not None:
            return Col(field)
        raise Opaque("attribute access on something other than the row")

    def visit_Subscript(self, node: ast.Subscript) -> Node:
        field = self._field(node)
        if field is not None:
            return Col(field)
        raise Opaque("subscript on something other than the row")

    def visit_BinOp(self, node: ast.BinOp) -> Node:
        op = _BINOPS.get(type(node.op))
        if op is None:
            raise Opaque(f"unsupported operator {type(node.op).__name__}")
        return BinOp(op, self.visit(node.left), self.visit(node.right))

    def visit_UnaryOp(self, node: ast.UnaryOp) -> Node:
        operand = self.visit(node.operand)
        if isinstance(operand, Const) and isinstance(node.op, ast.USub) and isinstance(operand.value, int | float):
            return Const(-operand.value)
        return Unary(_UNARY[type(node.op)], operand)

    def visit_BoolOp(self, node: ast.BoolOp) -> Node:
        return BoolOp("and" if isinstance(node.op, ast.And) else "or", tuple(self.visit(v) for v in node.values))

    def visit_Compare(self, node: ast.Compare) -> Node:
        parts = []
        left = self.visit(node.left)
        for op, comparator in zip(node.ops, node.comparators, strict=True):
            name = _CMPOPS.get(type(op))
            if name is None:
                raise Opaque(f"unsupported comparison {type(op).__name__}")
            right = self.visit(comparator)
            if name in ("is", "isnot") and right != Const(None):
                raise Opaque("'is' with something other than None")
            parts.append(Compare(name, left, right))
            left = right
        return parts[0] if len(parts) == 1 else BoolOp("and", tuple(parts))

    def visit_IfExp(self, node: ast.IfExp) -> Node:
        return IfElse(self.visit(node.test), self.visit(node.body), self.visit(node.orelse))

    def visit_Tuple(self, node: ast.Tuple) -> Node:
        # only as the right side of `in`: a tuple of constants
        values = [self.visit(e) for e in node.elts]
        if all(isinstance(v, Const) for v in values):
            return Const(tuple(v.value for v in values))
        raise Opaque("tuple of non-constants")

    visit_List = visit_Tuple

    def visit_Set(self, node: ast.Set) -> Node:
        return self.visit_Tuple(node)  # type: ignore[arg-type]

    def visit_Dict(self, node: ast.Dict) -> Node:
        if not self.allow_record:
            raise Opaque("a record is not allowed here")
        fields = []
        for k, v in zip(node.keys, node.values, strict=True):
            if not (isinstance(k, ast.Constant) and isinstance(k.value, str)):
                raise Opaque("record keys must be string literals")
            fields.append((k.value, self.visit(v)))
        return Record(tuple(fields))

    def visit_Call(self, node: ast.Call) -> Node:
        if node.keywords:
            raise Opaque("keyword arguments in a call")
        args = tuple(self.visit(a) for a in node.args)
        func = node.func
        if isinstance(func, ast.Attribute) and self._field(func) is None:
            # a method on a value (str methods) or a function in a module (math.sqrt)
            if isinstance(func.value, ast.Name) and func.value.id != self.param and func.value.id not in self.rows:
                target = self.resolve(func.value.id)
                if isinstance(target, types.ModuleType):
                    obj = getattr(target, func.attr, None)
                    name = _KNOWN_FUNCS.get(id(obj))
                    if name is None:
                        return _python_call(obj, f"{func.value.id}.{func.attr}", args)
                    return Call(name, args)
            if func.attr in _STR_METHODS:
                return Call("str." + func.attr, (self.visit(func.value),) + args)
            raise Opaque(f"method call .{func.attr}()")
        if isinstance(func, ast.Name):
            obj = self.resolve(func.id)
            name = _KNOWN_FUNCS.get(id(obj))
            if name is None:
                return _python_call(obj, func.id, args)
            return Call(name, args)
        raise Opaque("unsupported call")


def _python_call(obj, name: str, args: tuple[Node, ...]) -> PyCall:
    """A call tidal cannot compile: the function runs per row on argument values computed columnar."""
    builtin_type = isinstance(obj, type) and obj.__module__ == "builtins"  # str(x), round(x)...
    if not (builtin_type or isinstance(obj, types.FunctionType | types.BuiltinFunctionType)):
        raise Opaque(f"call to {name}, which is a {type(obj).__name__}")
    return PyCall(obj, name, args)


def translate_bound(fn, params: list[str], free_rows: dict[str, str]) -> Node:
    """Translate a lambda whose parameter ``i`` stands for the column ``params[i]`` (a scalar per row) and
    whose free names in ``free_rows`` are rows: field ``f`` of such a name becomes the column
    ``free_rows[name] + f`` (a transaction's ``lambda v: v - e.amount``, ``e`` from the enclosing scope)."""
    if not isinstance(fn, types.FunctionType) or fn.__name__ != "<lambda>":
        raise Opaque("not a lambda")
    code = fn.__code__
    if code.co_argcount != len(params) or code.co_flags & (0x04 | 0x08):
        raise Opaque(f"expected a lambda of {len(params)} parameter(s)")
    body = _parse_body(code, lambda_source(fn))
    translator = _Translator(fn, allow_record=False, row_param="")
    translator.scalars = dict(zip(code.co_varnames[: code.co_argcount], params, strict=True))
    translator.rows = dict(free_rows)
    return translator.visit(body)
