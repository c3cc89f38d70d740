"""Compile user lambdas for an operator: columnar when possible, row at a time otherwise.

:class:`CompiledLambda` is what operators hold. Its ``mode`` is ``"columnar"`` when the
lambda translated into an expression tree that runs over this input schema, else
``"row"`` (with ``reason`` saying why). Columnar evaluation goes through three tiers:
numpy/Arrow kernels from the first batch, and a fused numba loop once a numeric
expression has seen ``JIT_THRESHOLD`` events or its kernel is in the disk cache
(:class:`Native`, the one policy for this and a where's filter loop). A batch whose data needs
Python semantics (nulls, a zero divisor) is evaluated row at a time; results are the same
either way. A lambda's translation is kept with the function, so building a plan and running
it translate it once.
"""

from __future__ import annotations

import collections
import functools
import gc
import keyword
import sys
import weakref
from functools import lru_cache

import numpy as np
import pyarrow as pa

from ..core.batch import EventBatch
from ..core.errors import LambdaError, PlanError, describe_row
from . import jit
from .kernels import Evaluator, Fallback, PyValues, Unsupported, record_fields, to_arrow_column
from .lambdas import _SCALARS, Opaque, fields_used, translate
from .nodes import Col, Node, PyCall, Record

# Events evaluated in numpy before a numeric tree is fused with numba. Compiling takes about a
# second, once per machine: the kernel is cached on disk (tidal.expr.jit), and a kernel already
# there is used from the first batch.
JIT_THRESHOLD = 2_000_000


class Native:
    """The one policy for compiling an expression with numba, for a lambda's own kernel and a where's
    filter loop alike: a kernel is compiled once its module is in the disk cache (looked up once per
    kernel source) or once the expression has evaluated ``JIT_THRESHOLD`` events. One per operator,
    so the count is this run's."""

    def __init__(self):
        self.events = 0
        self.claimed = False  # a where compiles its own loop for this predicate: no second kernel
        self._on_disk: dict[str, bool] = {}

    def count(self, n: int) -> None:
        self.events += n

    def ready(self, body: str, pending: int = 0) -> bool:
        """Whether to compile the kernel of source ``body`` now, ``pending`` more events about to run."""
        on_disk = self._on_disk.get(body)
        if on_disk is None:
            on_disk = self._on_disk[body] = jit.is_cached(body)
        return on_disk or self.events + pending >= JIT_THRESHOLD


# fn -> {(schema, truth, allow_record): (node, mode, reason)}: building a plan and running it translate once
_TRANSLATED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


@lru_cache(maxsize=1024)
def row_class(names: tuple[str, ...]):
    """A namedtuple type for rows with these fields; ``row["field"]`` also works."""
    base = collections.namedtuple("Row", names, rename=True)
    index = {n: i for i, n in enumerate(names)}

    class Row(base):
        __slots__ = ()

        def __getitem__(self, item):
            if isinstance(item, str):
                try:
                    return tuple.__getitem__(self, index[item])
                except KeyError:
                    raise KeyError(f"no field {item!r}; fields are {list(names)}") from None
            return tuple.__getitem__(self, item)

        def __getattr__(self, item):
            raise AttributeError(f"no field {item!r}; fields are {list(names)}")

        def _asdict(self):
            return dict(zip(names, self, strict=True))

        def __reduce__(self):
            return (_make_row, (names, tuple(self)))

    Row.__name__ = "Row"
    return Row


@lru_cache(maxsize=256)
def row_loop(names: tuple[str, ...], truth: bool = False):
    """``loop(fn, columns, out)``: ``out[i] = fn(row i)`` (its truth with ``truth``) over Python lists of
    field values, with one row object refilled in place per call. Where ``fn`` kept a reference to the
    row (its reference count went up), the loop moves on to a fresh object, so a kept row never changes."""
    fields = [f"c{j}" for j in range(len(names))]
    lines = ["def loop(fn, columns, out, Row, refs):"]
    if fields:
        lines.append(f"    {', '.join(fields)}, = columns")
    lines += ["    row = Row()", "    base = refs(row)", "    for i in range(len(out)):"]
    lines += [f"        row.{n} = {c}[i]" for n, c in zip(names, fields, strict=True)]
    lines.append("        out[i] = True if fn(row) else False" if truth else "        out[i] = fn(row)")
    lines += ["        if refs(row) != base:", "            row = Row()", ""]
    src = "\n".join(lines)
    scope: dict = {}
    exec(compile(src, "<tidal row loop>", "exec"), scope)
    loop, cls = scope["loop"], reusable_row_class(names)
    return lambda fn, columns, out: loop(fn, columns, out, cls, sys.getrefcount)


@lru_cache(maxsize=256)
def reusable_row_class(names: tuple[str, ...]):
    """A slotted row type with the namedtuple row's reading interface (attributes, ``row["f"]``, ``_asdict``)."""
    valid = all(is_identifier(n) and not n.startswith("_") for n in names)
    if not valid:
        return None

    def getitem(self, item):
        if isinstance(item, str):
            if item not in names:
                raise KeyError(f"no field {item!r}; fields are {list(names)}")
            return getattr(self, item)
        return getattr(self, names[item])

    def getattr_(self, item):
        raise AttributeError(f"no field {item!r}; fields are {list(names)}")

    return type(
        "Row",
        (),
        {
            "__slots__": names,
            "_fields": names,
            "__getitem__": getitem,
            "__getattr__": getattr_,
            "__len__": lambda self: len(names),
            "__iter__": lambda self: (getattr(self, n) for n in names),
            "_asdict": lambda self: {n: getattr(self, n) for n in names},
            "__repr__": lambda self: "Row(" + ", ".join(f"{n}={getattr(self, n)!r}" for n in names) + ")",
        },
    )


def _make_row(names: tuple[str, ...], values: tuple):
    return row_class(names)._make(values)


def rows_of(batch: EventBatch, fields: list[str] | None = None):
    """Row objects for every event of ``batch`` (absent ones included; callers skip them)."""
    names = tuple(batch.columns) if fields is None else tuple(fields)
    cls = row_class(names)
    cols = [_pylist(batch.columns[n]) for n in names]
    if not cols:
        return [cls() for _ in range(len(batch))]
    make = functools.partial(tuple.__new__, cls)  # skips namedtuple's Python-level __new__
    enabled = gc.isenabled()
    gc.disable()  # a batch of fresh tuples would otherwise trigger repeated collections
    try:
        return list(map(make, zip(*cols, strict=True)))
    finally:
        if enabled:
            gc.enable()


def _pylist(col: pa.Array) -> list:
    """Python values of a column; numeric columns without nulls go through numpy (much faster)."""
    t = col.type
    if not col.null_count and (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t)):
        return col.to_numpy(zero_copy_only=False).tolist()
    return col.to_pylist()


def _lambda_text(fn) -> str:
    try:
        from .lambdas import lambda_source

        return "lambda: " + lambda_source(fn)
    except Exception:
        return getattr(fn, "__qualname__", repr(fn))


def raise_row_error(fn, exc: Exception, batch: EventBatch, i: int, row) -> None:
    values = row._asdict() if hasattr(row, "_asdict") else {"row": row}
    raise LambdaError(
        f"{_lambda_text(fn)} raised {type(exc).__name__}: {exc} on the event at sync_time={int(batch.sync[i])} "
        f"(batch position {i}) with payload {{{describe_row(values)}}}"
    ) from exc


def describe_columnar(node: Node, fused: bool = False) -> str:
    """How explain() shows a translated tree: columnar, naming the Python functions it calls per row."""
    calls = sorted({n.name for n in node.walk() if isinstance(n, PyCall)})
    if calls:
        return f"row mode for {', '.join(calls)} (called once per row on arguments computed columnar): {node}"
    return f"columnar{', fused' if fused else ''}: {node}"


def _bindings(fn) -> tuple:
    """What the free names of ``fn`` are bound to now. Translation turns scalars they name into
    constants, so a cached translation holds only while they are the same: a value changed between
    building a plan and running it is read again, as the row fallback (which calls ``fn``) would."""
    code = getattr(fn, "__code__", None)
    if code is None:
        return ()

    def value(v):
        return (type(v), v) if isinstance(v, _SCALARS | np.generic) else (type(v), id(v))

    out = []
    for name, cell in zip(code.co_freevars, fn.__closure__ or (), strict=False):
        try:
            out.append((name, value(cell.cell_contents)))
        except ValueError:  # a cell not yet filled
            out.append((name, None))
    names = fn.__globals__
    out.extend((name, value(names[name])) for name in code.co_names if name in names)
    return tuple(out)


class CompiledLambda:
    """A user lambda compiled for one operator and one input schema."""

    def __init__(self, fn, schema: pa.Schema | None, *, truth: bool, allow_record: bool = True):
        self.fn = fn
        self.truth = truth
        self.native = Native()
        self._jit = None
        self._jit_body: tuple | None = None  # (kernel source, column dtypes), from the first batch
        self._jit_failed = False
        key = cached = None
        try:
            key = (schema, truth, allow_record, _bindings(fn))
            cached = _TRANSLATED.get(fn, {}).get(key)
        except TypeError:  # a callable that is not hashable or weakly referable: not cached
            key = None
        if cached is None:
            self._translate(schema, allow_record)
            try:
                if key is not None:
                    _TRANSLATED.setdefault(fn, {})[key] = (self.node, self.mode, self.reason)
            except TypeError:
                pass
        else:
            self.node, self.mode, self.reason = cached

    def _translate(self, schema, allow_record: bool) -> None:
        self.node: Node | None = None
        self.reason = ""
        self.mode = "row"
        try:
            self.node = translate(self.fn, allow_record=allow_record)
        except Opaque as exc:
            self.reason = str(exc)
            return
        if isinstance(self.node, Record) and self.truth:
            self.node, self.reason = None, "a predicate must not return a record"
            return
        self.mode = "columnar"
        if schema is not None:
            self.check_schema(schema)

    def kernel_ok(self, types: dict[str, pa.DataType]) -> bool:
        """Whether the lambdas' kernels (numpy, numba) may evaluate this tree over columns of these
        types: always, for a lambda (its kernels fall back to rows where Python's semantics need)."""
        return True

    def check_schema(self, schema: pa.Schema) -> None:
        """Type-check by evaluating over empty columns; switch to row mode if unsupported."""
        if self.node is None:
            return
        empty = {f.name: pa.array([], type=f.type) for f in schema}
        missing = self.node.columns() - set(empty)
        if missing:
            raise PlanError(
                f"{_lambda_text(self.fn)} uses field(s) {sorted(missing)} not in the stream; fields are {schema.names}"
            )
        try:
            ev = Evaluator(empty, 0)
            for _, n in record_fields(self.node):
                ev.truth(n) if self.truth else ev.eval(n)
            self.mode = "columnar"
        except Unsupported as exc:
            self.mode, self.reason = "row", str(exc)
        except Fallback:
            pass

    def describe(self) -> str:
        if self.mode == "columnar":
            return describe_columnar(self.node, fused=self._jit is not None)
        return f"row mode ({self.reason})"

    # -- predicates -----------------------------------------------------------------
    def mask(self, batch: EventBatch) -> np.ndarray:
        """Truth of the lambda for each event of the batch (absent events: anything)."""
        n = len(batch)
        if self.mode == "columnar":
            try:
                return self._columnar_truth(batch, n)
            except Fallback:
                pass
            except Unsupported as exc:
                self.mode, self.reason = "row", str(exc)
        return self._row_truth(batch)

    def _columnar_truth(self, batch: EventBatch, n: int) -> np.ndarray:
        if self._jit is not None:
            try:
                cols = {c: batch.columns[c].to_numpy(zero_copy_only=True) for c in self._jit_cols}
                return self._jit(cols, n, np.bool_)
            except (ZeroDivisionError, pa.ArrowInvalid):
                raise Fallback("jit kernel error") from None
        value = Evaluator(batch.columns, n).truth(self.node)
        if not isinstance(value, np.ndarray):
            value = np.full(n, bool(value))
        self._count(batch, n)
        return value

    def _count(self, batch: EventBatch, n: int) -> None:
        native = self.native
        native.count(n)
        if self._jit is not None or self._jit_failed or native.claimed:
            return
        if self._jit_body is None:
            self._jit_body = self._kernel_source(batch)
            if self._jit_body is None:
                self._jit_failed = True
                return
        body, dtypes = self._jit_body
        if native.ready(body):
            self._jit = jit.compile_kernel(self.node, dtypes, truth=self.truth)
            self._jit_cols = sorted(dtypes)

    def _kernel_source(self, batch: EventBatch) -> tuple | None:
        """The numba kernel's source and column dtypes for this batch's columns, or None when the tree
        is not numeric over them."""
        node = self.node
        dtypes = {}
        for c in node.columns():
            col = batch.columns[c]
            if col.null_count or not (pa.types.is_integer(col.type) or pa.types.is_floating(col.type)):
                return None
            dtypes[c] = np.dtype(col.type.to_pandas_dtype())
        if isinstance(node, Record) or not jit.numeric_only(node, dtypes):
            return None
        return jit.value_body(node, dtypes, self.truth), dtypes

    def _row_fields(self, batch: EventBatch) -> list[str] | None:
        """Only the fields the lambda reads, when that is known: converting fewer columns is most of row mode."""
        if not hasattr(self, "_fields"):
            self._fields = fields_used(self.fn)
        if self._fields is None or not self._fields <= set(batch.columns):
            return None
        return [f for f in batch.columns if f in self._fields]

    def _row_truth(self, batch: EventBatch) -> np.ndarray:
        fields = self._row_fields(batch)
        fn = self.fn
        names = tuple(batch.columns) if fields is None else tuple(fields)
        if batch.absent is None and reusable_row_class(names) is not None:
            out = [None] * len(batch)
            enabled = gc.isenabled()
            gc.disable()  # the loop makes many short-lived objects
            try:
                row_loop(names, truth=True)(fn, [_pylist(batch.columns[f]) for f in names], out)
                return np.array(out, dtype=bool)
            except Exception:
                pass  # found again below, with the row named
            finally:
                if enabled:
                    gc.enable()
        rows = rows_of(batch, fields)
        present = batch.present_mask()
        i = 0
        try:
            if batch.absent is None:
                return np.fromiter(map(bool, map(fn, rows)), dtype=bool, count=len(rows))
            out = np.zeros(len(rows), dtype=bool)
            for i in np.flatnonzero(present).tolist():
                out[i] = bool(fn(rows[i]))
            return out
        except Exception:
            for i in np.flatnonzero(present).tolist():
                try:
                    fn(rows[i])
                except Exception as exc:
                    raise_row_error(fn, exc, batch, i, rows[i])
            raise

    # -- projections ----------------------------------------------------------------
    def project(self, batch: EventBatch) -> dict[str, pa.Array] | None:
        """Output columns for every event of the batch, or None when it must go row by row."""
        n = len(batch)
        if self.mode == "columnar":
            try:
                ev = Evaluator(batch.columns, n)
                out = {}
                for name, node in record_fields(self.node):
                    if isinstance(node, Col):
                        out[name] = batch.columns[node.name]  # pointer swing: share the column
                    else:
                        out[name] = to_arrow_column(ev.eval(node), n)
                return out
            except Fallback:
                return None
            except Unsupported as exc:
                self.mode, self.reason = "row", str(exc)
        return None

    def row_results(self, batch: EventBatch) -> list:
        rows = rows_of(batch, self._row_fields(batch))
        fn = self.fn
        i = 0
        try:
            return [fn(r) for r in rows]
        except Exception:
            for i, r in enumerate(rows):
                try:
                    fn(r)
                except Exception as exc:
                    raise_row_error(fn, exc, batch, i, r)
            raise

    def project_rows(self, batch: EventBatch) -> dict[str, pa.Array]:
        return records_to_columns(self.row_results(batch), self.output_types)

    output_types: dict[str, pa.DataType] | None = None


def projection_schema(fn: CompiledLambda, schema: pa.Schema | None) -> pa.Schema | None:
    """Output schema of a columnar projection, found by evaluating it over empty columns."""
    if schema is None or fn.mode != "columnar":
        return None
    empty = {f.name: pa.array([], type=f.type) for f in schema}
    ev = Evaluator(empty, 0)
    fields = []
    for name, node in record_fields(fn.node):
        try:
            value = ev.eval(node)
            if isinstance(value, PyValues):
                return None  # a Python function's result type is known only when it runs
            fields.append(pa.field(name, to_arrow_column(value, 0).type))
        except Exception:
            return None
    return pa.schema(fields)


def records_to_columns(results: list, types: dict[str, pa.DataType] | None = None) -> dict[str, pa.Array]:
    """Turn a list of per-row results (dicts, dataclasses, named tuples or scalars) into columns."""
    if not results:
        return {k: pa.array([], type=t) for k, t in (types or {}).items()}
    first = results[0]
    if isinstance(first, dict):
        names = list(first)
        cols = {k: [r[k] for r in results] for k in names}
    elif hasattr(first, "_asdict"):
        names = list(first._asdict())
        cols = {k: [getattr(r, k) for r in results] for k in names}
    elif hasattr(first, "__dataclass_fields__"):
        names = list(first.__dataclass_fields__)
        cols = {k: [getattr(r, k) for r in results] for k in names}
    else:
        cols = {"value": results}
    out = {}
    for k, values in cols.items():
        t = (types or {}).get(k)
        out[k] = pa.array(values, type=t) if t is not None else pa.array(values)
    return out


def is_identifier(name: str) -> bool:
    return name.isidentifier() and not keyword.iskeyword(name)
