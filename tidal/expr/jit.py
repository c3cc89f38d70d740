"""Fused numba kernels for numeric expression trees, cached on disk.

Numpy evaluates ``(e.user_id % 100) < 5`` in two passes with a temporary array; the
generated kernel does it in one loop with the constants inlined, so LLVM turns the modulo
by a constant into multiplies and shifts. Python semantics hold inside numba (floor
division and modulo signs, ``and``/``or`` on booleans); division by a zero raises and the
batch falls back to row mode like any other evaluation error.

Two kernel shapes: :func:`compile_kernel` (one value per row) and :func:`compile_filter`
(a where, optionally fused with the select after it: one pass evaluates the predicate and
writes the kept rows' positions and computed fields, with no mask and no gather of the
inputs of those fields).

Kernel source is written to a module file in the cache directory (``$TIDAL_CACHE_DIR``,
else ``$XDG_CACHE_HOME/tidal`` or ``~/.cache/tidal``; subfolder ``kernels``), named by a
hash of the source and imported with numba's ``cache=True``, so a later process loads the
machine code instead of compiling it. A file is created by linking a finished temporary file
into place, so two processes writing the same kernel never see half a file; numba writes its
own cache files the same way. Without a writable cache directory kernels compile in memory.
"""

from __future__ import annotations

import importlib.util
import math
import os
import sys
from pathlib import Path

import numpy as np

from ..core.trees import tree_depth
from .nodes import BinOp, BoolOp, Call, Col, Compare, Const, IfElse, Node, Unary

_NUMERIC_KINDS = "iuf"
_OPS = {"+", "-", "*", "/", "//", "%", "**", "&", "|", "^", "<<", ">>"}
_CMPS = {"==", "!=", "<", "<=", ">", ">="}


# Python's compiler refuses deeper nesting in a kernel's source (200 parentheses): deeper trees stay on numpy
MAX_KERNEL_DEPTH = 60


def depth(node: Node) -> int:
    """The number of levels of the tree (without recursion: trees from SQL can be deep)."""
    return tree_depth(node, Node.children)


def numeric_only(node: Node, dtypes: dict[str, np.dtype]) -> bool:
    """True when every part of the tree can be compiled: numeric columns and operators."""
    if depth(node) > MAX_KERNEL_DEPTH:
        return False
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


def _is_int(node: Node, dtypes: dict[str, np.dtype]) -> bool:
    """True when the tree computes an integer (what numba and numpy infer for these column types)."""
    if isinstance(node, Col):
        return dtypes[node.name].kind in "iu"
    if isinstance(node, Const):
        return isinstance(node.value, int) and not isinstance(node.value, bool)
    if isinstance(node, BinOp):
        return node.op not in ("/", "**") and _is_int(node.left, dtypes) and _is_int(node.right, dtypes)
    if isinstance(node, Unary):
        return node.op in ("-", "+") and _is_int(node.operand, dtypes)
    if isinstance(node, Call):
        return node.func == "abs" and _is_int(node.args[0], dtypes)
    if isinstance(node, IfElse):
        return _is_int(node.then, dtypes) and _is_int(node.otherwise, dtypes)
    return False


def _cannot_raise(node: Node) -> bool:
    """True when evaluating the tree cannot raise (no division or modulo but by a non-zero constant, no
    powers or shifts), so that ``and``/``or`` may evaluate every operand."""
    for n in node.walk():
        if isinstance(n, BinOp):
            if n.op in ("/", "//", "%"):
                if not (isinstance(n.right, Const) and isinstance(n.right.value, int | float) and n.right.value != 0):
                    return False
            elif n.op not in ("+", "-", "*", "&", "|", "^"):
                return False
        elif not isinstance(n, Col | Const | Compare | BoolOp | Unary):
            return False
    return True


def _source(node: Node, names: dict[str, str], dtypes: dict[str, np.dtype]) -> str:
    def src(n: Node) -> str:
        return _source(n, names, dtypes)

    if isinstance(node, Col):
        return f"{names[node.name]}[i]"
    if isinstance(node, Const):
        return repr(node.value)
    if isinstance(node, BinOp):
        right = node.right
        if (
            node.op == "%"
            and isinstance(right, Const)
            and _is_int(right, dtypes)
            and 0 < right.value < 2**62
            and _is_int(node.left, dtypes)
        ):
            # Python's modulo by a positive constant through unsigned division, which LLVM turns into a
            # multiply (its signed floor-modulo is twice as slow); negative x: C - 1 - ((-1 - x) % C)
            x, c = src(node.left), right.value
            return (
                f"(np.int64(np.uint64({x}) % np.uint64({c})) if {x} >= 0 "
                f"else {c - 1} - np.int64(np.uint64(-1 - {x}) % np.uint64({c})))"
            )
        return f"({src(node.left)} {node.op} {src(right)})"
    if isinstance(node, Compare):
        return f"({src(node.left)} {node.op} {src(node.right)})"
    if isinstance(node, BoolOp):
        if all(_cannot_raise(o) for o in node.operands):
            # nothing to short-circuit around: both sides evaluated, no branch to mispredict
            op = "&" if node.op == "and" else "|"
            return "(" + f" {op} ".join(f"bool({src(o)})" for o in node.operands) + ")"
        return "(" + f" {node.op} ".join(f"bool({src(o)})" for o in node.operands) + ")"
    if isinstance(node, Unary):
        inner = src(node.operand)
        return f"(not {inner})" if node.op == "not" else f"({node.op}{inner})"
    if isinstance(node, IfElse):
        return f"({src(node.then)} if {src(node.cond)} else {src(node.otherwise)})"
    if isinstance(node, Call):
        return f"abs({src(node.args[0])})"
    raise TypeError(node)


# -- the on-disk module cache ------------------------------------------------------------------
_HEADER = "# generated by tidal.expr.jit: a compiled kernel (safe to delete)\nimport numba\nimport numpy as np\n\n\n"
_DECORATOR = "@numba.njit(cache={cache}, nogil=True)\n"
_MODULES: dict[str, object] = {}  # module name -> the kernel function (this process)


def cache_dir() -> Path:
    """Where kernel modules and numba's compiled code for them live."""
    root = os.environ.get("TIDAL_CACHE_DIR")
    if not root:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        root = os.path.join(base, "tidal")
    return Path(root) / "kernels"


def _module_name(body: str) -> str:
    import hashlib  # here, not at import: a query that compiles nothing does not load it

    import numba

    stamp = f"{body}\n{numba.__version__}\n{sys.version}"
    return "tidal_kernel_" + hashlib.sha256(stamp.encode()).hexdigest()[:24]


def _write_once(path: Path, text: str) -> None:
    """Create ``path`` holding ``text`` unless it exists; never exposes a partly written file."""
    if path.exists():
        return
    import uuid

    tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
    tmp.write_text(text)
    try:
        os.link(tmp, path)  # atomic, and fails rather than replacing another process's file
    except FileExistsError:
        pass
    except OSError:
        os.replace(tmp, path)  # a file system without hard links: replace is still atomic
    finally:
        tmp.unlink(missing_ok=True)


def is_cached(body: str) -> bool:
    """True when the kernel with this body is loaded, or its module is in the cache directory."""
    name = _module_name(body)
    return name in _MODULES or (cache_dir() / f"{name}.py").exists()


def load_kernel(body: str, decorator: str | None = None):
    """The numba function ``kernel`` defined by ``body`` (a ``def kernel(...)`` source), compiled at most
    once per machine: from the module cache when possible, else in memory. ``decorator`` replaces the
    default ``@numba.njit(cache={cache}, nogil=True)`` line (a parallel kernel's, say)."""
    name = _module_name(body if decorator is None else decorator + body)
    decorator = decorator or _DECORATOR
    fn = _MODULES.get(name)
    if fn is not None:
        return fn
    source = _HEADER + decorator.format(cache=True) + body
    try:
        directory = cache_dir()
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / f"{name}.py"
        _write_once(path, source)
        if path.read_text() != source:
            raise OSError(f"{path} holds another kernel")
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # numba's cached code finds its globals by module name
        spec.loader.exec_module(module)
    except OSError:
        scope: dict = {}
        exec(compile(_HEADER + decorator.format(cache=False) + body, f"<{name}>", "exec"), scope)
        fn = scope["kernel"]
    else:
        fn = module.kernel
    _MODULES[name] = fn
    return fn


def _numpy(col) -> np.ndarray:
    return col if isinstance(col, np.ndarray) else col.to_numpy(zero_copy_only=True)


# -- kernel shapes ---------------------------------------------------------------------------
def value_body(node: Node, dtypes: dict[str, np.dtype], truth: bool) -> str:
    cols = sorted(node.columns())
    names = {c: f"c{i}" for i, c in enumerate(cols)}
    body = _source(node, names, dtypes)
    if truth:
        body = f"bool({body})"
    params = ", ".join(names[c] for c in cols)
    return f"def kernel(n, out{', ' if params else ''}{params}):\n    for i in range(n):\n        out[i] = {body}\n"


def compile_kernel(node: Node, dtypes: dict[str, np.dtype], truth: bool):
    """A function ``kernel(columns: dict[str, ndarray], n, out_dtype) -> ndarray`` for the tree."""
    cols = sorted(node.columns())
    jitted = load_kernel(value_body(node, dtypes, truth))

    def run(columns: dict[str, np.ndarray], n: int, out_dtype) -> np.ndarray:
        out = np.empty(n, dtype=out_dtype)
        jitted(n, out, *(columns[c] for c in cols))
        return out

    return run


def filter_body(predicate: Node, outputs: list[Node], dtypes: dict[str, np.dtype], with_absent: bool) -> str:
    """Source of a filter kernel over the columns ``sorted(dtypes)``.

    The first loop has no branch on the predicate (every position is written, the count
    advances when it holds), the second computes the outputs for the kept rows only.
    """
    cols = sorted(dtypes)
    names = {c: f"c{i}" for i, c in enumerate(cols)}
    params = ["n", "absent", "out_idx", *(names[c] for c in cols), *(f"o{j}" for j in range(len(outputs)))]
    lines = [f"def kernel({', '.join(params)}):", "    k = 0", "    for i in range(n):"]
    if with_absent:
        lines.append("        if absent[i]:\n            continue")
    lines += ["        out_idx[k] = i", f"        k += bool({_source(predicate, names, dtypes)})"]
    if outputs:
        lines += ["    for j in range(k):", "        i = out_idx[j]"]
        lines += [f"        o{j}[j] = {_source(o, names, dtypes)}" for j, o in enumerate(outputs)]
    lines += ["    return k", ""]
    return "\n".join(lines)


def compile_filter(predicate: Node, outputs: list[Node], dtypes: dict[str, np.dtype], out_dtypes, with_absent: bool):
    """``run(columns, n, absent) -> (kept positions, [output columns])``: rows where ``predicate`` holds
    (and not absent), each ``outputs`` expression evaluated for the kept rows only. ``dtypes``: the
    input columns (all the trees read) and their types."""
    cols = sorted(dtypes)
    jitted = load_kernel(filter_body(predicate, outputs, dtypes, with_absent))
    no_absent = np.zeros(0, dtype=np.bool_)

    def run(columns, n: int, absent):
        inputs = [_numpy(columns[c]) for c in cols]
        idx = np.empty(n, dtype=np.int64)
        outs = [np.empty(n, dtype=dt) for dt in out_dtypes]
        k = jitted(n, no_absent if absent is None else absent, idx, *inputs, *outs)
        return idx[:k], [o[:k] for o in outs]

    return run
