"""A SQL filter's or projection's expression compiled for one operator.

:class:`CompiledSql` has the interface of :class:`~tidal.expr.compile.CompiledLambda` that
``WhereOp`` and ``SelectOp`` use (``mode``, ``node``, ``mask``, ``project``...), so SQL's WHERE
and SELECT are those operators. Its tree is evaluated two ways:

* on the lambdas' kernels (:mod:`tidal.expr.kernels`; a where's numba loop, by the one policy of
  :class:`~tidal.expr.compile.Native`) when every node is one whose meaning SQL and Python share
  for non-null values, and every column it reads is a 64-bit number, a boolean or text (narrower
  types would take Python's promotion of constants, not SQL's). A batch whose columns hold nulls
  raises :class:`~tidal.expr.kernels.Fallback` there and goes the other way;
* otherwise with SQL's null rules by :class:`~tidal.expr.sqlkernels.SqlEvaluator`.

Which way is decided once per input types, by evaluating over empty columns both ways: the kernels
are used only where SQL's own evaluation type-checks and both give the same Arrow type.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..core.batch import EventBatch
from ..core.errors import PlanError
from .compile import Native, describe_columnar
from .kernels import Evaluator, Fallback, Unsupported, record_fields, to_arrow_column
from .nodes import BinOp, BoolOp, Call, Case, Col, Compare, Const, Node, SqlCall, Unary
from .sqldecimal import fold_for_types
from .sqlkernels import SqlEvaluator, SqlTypeError

_SHARED_OPS = {"+", "-", "*", "/", "==", "!=", "<", "<=", ">", ">=", "and", "or", "not"}
_SHARED_TYPES = (pa.int64(), pa.float64(), pa.bool_(), pa.string(), pa.large_string())


def _shared(node: Node) -> bool:
    """True when every node means the same in SQL and Python for non-null values."""
    for n in node.walk():
        if isinstance(n, Const):
            v = n.value
            if not isinstance(v, bool | int | float | str) or isinstance(v, int) and not -(2**63) <= v < 2**63:
                return False
        elif isinstance(n, BinOp | Compare | BoolOp | Unary):
            if n.op not in _SHARED_OPS:
                return False
        elif isinstance(n, Call):
            if n.func != "abs":
                return False
        elif not isinstance(n, Col):
            return False
    return True


def _nan_from_arithmetic(compare: Compare, types: dict[str, pa.DataType]) -> bool:
    """Whether a division under ``compare`` can make a NaN from finite values (0 / 0): SQL compares NaN
    as DuckDB does, which the lambdas' kernels cannot. Non-finite values in the columns themselves are
    found per batch (:meth:`CompiledSql.nan_compared`); from finite ones, + - * make NaN only after
    overflowing twice (inf - inf), which is left to IEEE."""
    for n in compare.walk():
        if isinstance(n, BinOp) and n.op == "/" and not (isinstance(n.right, Const) and n.right.value):
            return True
    return False


_INT64 = (-(2**63), 2**63 - 1)


def _nan_count_of(node: Node) -> str | None:
    """The column ``x`` when ``node`` is ``CASE WHEN isnan(x) THEN 1 ELSE 0 END`` (the NaN count the SQL
    builder puts beside an aggregate of a DOUBLE column), else None."""
    if not (isinstance(node, Case) and len(node.whens) == 1):
        return None
    (test, then), default = node.whens[0], node.default
    if not (isinstance(test, SqlCall) and test.func == "isnan" and len(test.args) == 1 and not test.params):
        return None
    ones = [isinstance(c, Const) and type(c.value) is int and c.value == v for c, v in ((then, 1), (default, 0))]
    return test.args[0].name if isinstance(test.args[0], Col) and all(ones) else None


_FLOATS = {pa.float64(): np.float64, pa.float32(): np.float32}


def _nan_count(col: pa.Array) -> pa.Array:
    """``CASE WHEN isnan(col) THEN 1 ELSE 0 END`` over a float column (NULL is not NaN: 0), by numpy."""
    n = len(col)
    values = np.frombuffer(col.buffers()[1], _FLOATS[col.type], count=n, offset=col.offset * col.type.byte_width)
    nan = np.isnan(values)
    if col.null_count:
        nan &= np.asarray(col.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    return pa.array(nan.astype(np.int64), pa.int64())


def _bounds(node: Node, columns: dict, cache: dict) -> tuple[int, int] | None:
    """The smallest and largest value an integer expression can take over these columns (interval
    arithmetic in Python integers, exact), or None when it is not an integer expression."""
    key = ("column", node.name) if isinstance(node, Col) else id(node)  # one pass per column, however often named
    if key in cache:
        return cache[key]
    out = None
    if isinstance(node, Const):
        v = node.value
        out = (v, v) if isinstance(v, int) and not isinstance(v, bool) else None
    elif isinstance(node, Col):
        col = columns.get(node.name)
        if col is not None and pa.types.is_integer(col.type):
            low, high = pc.min_max(col).values()
            out = (low.as_py(), high.as_py()) if low.is_valid else (0, 0)
    elif isinstance(node, BinOp) and node.op in ("+", "-", "*"):
        a, b = _bounds(node.left, columns, cache), _bounds(node.right, columns, cache)
        if a is not None and b is not None:
            if node.op == "+":
                out = (a[0] + b[0], a[1] + b[1])
            elif node.op == "-":
                out = (a[0] - b[1], a[1] - b[0])
            else:
                corners = [x * y for x in a for y in b]
                out = (min(corners), max(corners))
    elif isinstance(node, Unary) and node.op == "-":
        a = _bounds(node.operand, columns, cache)
        out = None if a is None else (-a[1], -a[0])
    elif isinstance(node, Call) and node.func == "abs":
        a = _bounds(node.args[0], columns, cache)
        out = None if a is None else (0 if a[0] <= 0 <= a[1] else min(abs(a[0]), abs(a[1])), max(abs(a[0]), abs(a[1])))
    cache[key] = out
    return out


class CompiledSql:
    """A SQL predicate (``truth``) or projection (a :class:`~tidal.expr.nodes.Record`) over one input.

    ``texts`` names each node's SQL for error messages; ``subresults`` holds IN subqueries' results;
    ``rewrite`` turns an error message into the user's terms; ``schema``, when known, decides the
    kernels at plan time (for explain()).
    """

    mode = "columnar"

    def __init__(self, node: Node, texts: dict, *, truth: bool, schema=None, subresults=None, rewrite=None, text=""):
        if schema is not None:  # DECIMAL literals beside DOUBLEs made DOUBLEs, as DuckDB does (see sqldecimal)
            node = fold_for_types(node, {f.name: f.type for f in schema})
        self.node = node
        self.texts = texts
        self.truth = truth
        self.subresults = subresults if subresults is not None else {}
        self.rewrite = rewrite
        self.text = text or str(node)
        self.native = Native()
        self._fields = record_fields(node) if not truth else (("value", node),)
        self._nan_counts = {name: c for name, n in self._fields if (c := _nan_count_of(n)) is not None}
        self._shared = tuple(_shared(n) for _, n in self._fields)
        self._ways: dict[tuple, tuple[bool, ...]] = {}  # input types -> per field: the lambdas' kernels?
        self._schema = schema
        # columns whose NaN SQL compares otherwise than Python (DuckDB: NaN equals NaN, the largest number)
        self._compared = {c for _, n in self._fields for m in n.walk() if isinstance(m, Compare) for c in m.columns()}
        # integer arithmetic: the kernels wrap around on overflow where SQL raises an error
        self._arithmetic = [
            m
            for _, n in self._fields
            for m in n.walk()
            if isinstance(m, BinOp) and m.op in ("+", "-", "*") or isinstance(m, Unary) and m.op == "-"
            or isinstance(m, Call) and m.func == "abs"
        ]  # fmt: skip

    # -- which way -------------------------------------------------------------------------
    def _kernels_for(self, types: dict[str, pa.DataType]) -> tuple[bool, ...]:
        key = tuple(sorted((c, types.get(c)) for c in self.node.columns()))
        ways = self._ways.get(key)
        if ways is None:
            ways = self._ways[key] = tuple(
                shared and self._same_type(n, types) for (_, n), shared in zip(self._fields, self._shared, strict=True)
            )
        return ways

    def _same_type(self, node: Node, types: dict[str, pa.DataType]) -> bool:
        cols = node.columns()
        if any(types.get(c) not in _SHARED_TYPES for c in cols):
            return False
        if any(_nan_from_arithmetic(n, types) for n in node.walk() if isinstance(n, Compare)):
            return False
        empty = {c: pa.array([], types[c]) for c in cols}
        try:
            want = SqlEvaluator(empty, 0, self.subresults).array(node).type
            ev = Evaluator(empty, 0)
            if self.truth:
                ev.truth(node)
                return pa.types.is_boolean(want)
            return to_arrow_column(ev.eval(node), 0).type == want
        except (Unsupported, Fallback, PlanError, pa.ArrowException):
            return False

    def nan_compared(self, columns: dict[str, pa.Array]) -> bool:
        """Whether a floating-point column this expression compares holds NaN or an infinity in this
        batch: the lambdas' kernels compare as Python (NaN never equal, never larger), so such a batch
        takes SQL's way."""
        for name in self._compared:
            col = columns.get(name)
            if col is not None and pa.types.is_floating(col.type) and len(col):
                values = col.to_numpy(zero_copy_only=False)
                # NaN, or infinities whose arithmetic may make one: a finite sum has neither (one pass,
                # no mask made); a sum that overflowed only sends the batch the SQL way
                with np.errstate(invalid="ignore", over="ignore"):
                    total = np.sum(values)
                if not np.isfinite(total):
                    return True
        return False

    def may_overflow(self, columns: dict[str, pa.Array]) -> bool:
        """Whether integer arithmetic here could leave BIGINT's range over this batch (bounds from the
        columns' minima and maxima): such a batch takes SQL's way, which raises an error if a row does."""
        cache: dict = {}
        for node in self._arithmetic:
            b = _bounds(node, columns, cache)
            if b is not None and (b[0] < _INT64[0] or b[1] > _INT64[1]):
                return True
        return False

    def sql_way(self, columns: dict[str, pa.Array]) -> bool:
        """Whether this batch must be evaluated by SQL's evaluator, not the lambdas' kernels."""
        return self.nan_compared(columns) or (bool(self._arithmetic) and self.may_overflow(columns))

    def kernel_ok(self, types: dict[str, pa.DataType]) -> bool:
        """Whether the lambdas' kernels may evaluate every part of this expression over these types."""
        return all(self._kernels_for(types))

    def describe(self) -> str:
        if self._schema is not None and self.kernel_ok({f.name: f.type for f in self._schema}):
            return describe_columnar(self.node)  # as a lambda of the same tree shows
        return f"columnar (pyarrow.compute): {self.text}"

    def _sql(self, columns, n: int) -> SqlEvaluator:
        return SqlEvaluator(columns, n, self.subresults, self.texts)

    def _user_error(self, err: SqlTypeError) -> SqlTypeError:
        # a value the expression cannot take (a bad cast): in the user's terms
        return SqlTypeError(self.rewrite(str(err))) if self.rewrite is not None else err

    # -- predicates ------------------------------------------------------------------------
    def mask(self, batch: EventBatch) -> np.ndarray:
        """SQL WHERE for each event of the batch: null is false (absent events: anything)."""
        n = len(batch)
        if self._kernels_for({c: a.type for c, a in batch.columns.items()})[0] and not self.sql_way(batch.columns):
            try:
                value = Evaluator(batch.columns, n).truth(self.node)
                self.native.count(n)
                return value if isinstance(value, np.ndarray) else np.full(n, bool(value))
            except (Fallback, Unsupported):
                pass
        dense = batch.compact()  # absent events' values never reach SQL (a bad cast there is no error)
        try:
            keep = self._sql(dense.columns, len(dense)).mask(self.node)
        except SqlTypeError as err:
            raise self._user_error(err) from None
        keep = np.asarray(keep.to_numpy(zero_copy_only=False), dtype=bool)
        if dense is batch:
            return keep
        out = np.zeros(n, dtype=bool)
        out[np.flatnonzero(batch.present_mask())] = keep
        return out

    # -- projections -----------------------------------------------------------------------
    def project(self, batch: EventBatch) -> dict[str, pa.Array] | None:
        """Output columns for every event when the lambdas' kernels compute them all, else None (the
        operator then calls :meth:`project_rows` on the batch's present events)."""
        n = len(batch)
        types = {c: a.type for c, a in batch.columns.items()}
        ways = self._kernels_for(types)
        # a bare column (shared as it is, of any type) and a NaN count of a float column (numpy) need no kernel
        direct = (isinstance(f, Col) or types.get(self._nan_counts.get(name)) in _FLOATS for name, f in self._fields)
        if not all(w or d for w, d in zip(ways, direct, strict=True)) or self.sql_way(batch.columns):
            return None
        try:
            return self._columns(batch, n, ways)
        except (Fallback, Unsupported):
            return None

    def project_rows(self, batch: EventBatch) -> dict[str, pa.Array]:
        """Output columns of a batch without absent events: each field by the kernels or by SQL."""
        n = len(batch)
        ways = self._kernels_for({c: a.type for c, a in batch.columns.items()})
        if self.sql_way(batch.columns):
            ways = tuple(False for _ in ways)
        try:
            return self._columns(batch, n, ways, sql=self._sql(batch.columns, n))
        except SqlTypeError as err:
            raise self._user_error(err) from None

    def _columns(self, batch: EventBatch, n: int, ways, sql: SqlEvaluator | None = None) -> dict[str, pa.Array]:
        ev = Evaluator(batch.columns, n)
        out = {}
        for (name, node), fast in zip(self._fields, ways, strict=True):
            if isinstance(node, Col):
                out[name] = batch.columns[node.name]  # pointer swing: share the column
                continue
            counted = batch.columns.get(self._nan_counts.get(name))
            if counted is not None and counted.type in _FLOATS:
                out[name] = _nan_count(counted)
                continue
            if fast:
                try:
                    out[name] = to_arrow_column(ev.eval(node), n)
                    continue
                except (Fallback, Unsupported):
                    if sql is None:
                        raise
            out[name] = sql.array(node)
        return out
