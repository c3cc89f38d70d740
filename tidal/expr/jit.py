"""Fused numba kernels for numeric expression trees.

Numpy evaluates ``(e.user_id % 100) < 5`` in two passes with a temporary array; the
generated kernel does it in one loop with the constants inlined, so LLVM turns the modulo
by a constant into multiplies and shifts. Python semantics hold inside numba (floor
division and modulo signs, ``and``/``or`` on booleans); division by a zero raises and the
batch falls back to row mode like any other evaluation error.
"""

from __future__ import annotations

import math

import numpy as np

from .nodes import BinOp, BoolOp, Call, Col, Compare, Const, IfElse, Node, Unary

_NUMERIC_KINDS = "iuf"
_OPS = {"+", "-", "*", "/", "//", "%", "**", "&", "|", "^", "<<", ">>"}
_CMPS = {"==", "!=", "<", "<=", ">", ">="}


def numeric_only(node: Node, dtypes: dict[str, np.dtype]) -> bool:
    """True when every part of the tree can be compiled: numeric columns and operators."""
    for n in node.walk():
        if isinstance(n, Col):
            dt = dtypes.get(n.name)
            if dt is None or dt.kind not in _NUMERIC_KINDS:
                return False
        elif isinstance(n, Const):
            v = n.value
            if isinstance(v, bool) or not isinstance(v, int | float) or (isinstance(v, float) and not math.isfinite(v)):
                return False
        elif isinstance(n, BinOp):
            if n.op not in _OPS:
                return False
        elif isinstance(n, Compare):
            if n.op not in _CMPS:
                return False
        elif isinstance(n, Unary):
            if n.op not in ("-", "+", "not"):
                return False
        elif isinstance(n, Call):
            if n.func != "abs":
                return False
        elif not isinstance(n, BoolOp | IfElse):
            return False
    return True


def _source(node: Node, names: dict[str, str]) -> str:
    if isinstance(node, Col):
        return f"{names[node.name]}[i]"
    if isinstance(node, Const):
        return repr(node.value)
    if isinstance(node, BinOp):
        return f"({_source(node.left, names)} {node.op} {_source(node.right, names)})"
    if isinstance(node, Compare):
        return f"({_source(node.left, names)} {node.op} {_source(node.right, names)})"
    if isinstance(node, BoolOp):
        return "(" + f" {node.op} ".join(f"bool({_source(o, names)})" for o in node.operands) + ")"
    if isinstance(node, Unary):
        inner = _source(node.operand, names)
        return f"(not {inner})" if node.op == "not" else f"({node.op}{inner})"
    if isinstance(node, IfElse):
        return f"({_source(node.then, names)} if {_source(node.cond, names)} else {_source(node.otherwise, names)})"
    if isinstance(node, Call):
        return f"abs({_source(node.args[0], names)})"
    raise TypeError(node)


_CACHE: dict[tuple, object] = {}


def compile_kernel(node: Node, dtypes: dict[str, np.dtype], truth: bool):
    """A function ``kernel(columns: dict[str, ndarray], n) -> ndarray`` for the tree."""
    import numba

    cols = sorted(node.columns())
    key = (str(node), tuple((c, str(dtypes[c])) for c in cols), truth)
    if key in _CACHE:
        return _CACHE[key]
    names = {c: f"c{i}" for i, c in enumerate(cols)}
    body = _source(node, names)
    if truth:
        body = f"bool({body})"
    params = ", ".join(names[c] for c in cols)
    src = f"def kernel(n, out{', ' if params else ''}{params}):\n    for i in range(n):\n        out[i] = {body}\n"
    scope: dict = {}
    exec(compile(src, f"<tidal-kernel {body}>", "exec"), scope)
    jitted = numba.njit(nogil=True)(scope["kernel"])

    def run(columns: dict[str, np.ndarray], n: int, out_dtype) -> np.ndarray:
        out = np.empty(n, dtype=out_dtype)
        jitted(n, out, *(columns[c] for c in cols))
        return out

    _CACHE[key] = run
    return run
