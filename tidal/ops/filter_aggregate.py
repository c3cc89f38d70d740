"""Where + Aggregate in one pass: a filter's predicate compiled into its aggregate's input loop.

Temporal semantics: exactly those of a where (keep the events whose payload satisfies the
predicate; lifetimes untouched) followed by the snapshot aggregate (``tidal.ops.aggregate``):
at every instant, per group, the aggregates of the kept events alive then. Only the physical
plan differs: for an aggregate over start edges (its variant has no endpoint queue: results
change only where events start, as in SQL's plans over rows), of count, count_not_null, sum,
average, variance, stddev, min, max and the order aggregates, over plain numeric fields, grouped
by at most one integer field, one compiled loop (:mod:`tidal.expr.fold`) reads only the columns
the predicate and the aggregates use, tests each row and adds what it contributes, and the
aggregate's sweep takes the compact result (one row per time and group where every contribution
adds exactly, else one per kept event). No positions array and no batch of kept rows exists
between the two.

A batch that this loop does not take (a column with nulls, a NaN comparison or an integer
overflow that SQL treats otherwise, a row grouped by ``group_apply``, a predicate not yet worth
compiling) goes the general way: the where hands the kept positions (or rows) on as before. A
division by zero re-runs the batch the general way too, which names the row.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from ..core.batch import EventBatch
from ..expr.fold import FoldKernel, FoldSpec
from .aggregate.base import MODE_NONE
from .aggregate.compiled import CompiledEngine
from .aggregate.operator import SnapshotAggregateOp
from .base import Consumer, Operator
from .selection import WhereOp, _fusable

_ORDER_KINDS = {"min": 0, "max": 1}  # order kinds merged in the loop; other order aggregates keep every value


def _plain_numeric(t: pa.DataType | None) -> bool:
    if t is None:
        return False
    return (
        pa.types.is_signed_integer(t) or pa.types.is_floating(t) or t in (pa.uint8(), pa.uint16(), pa.uint32())
    ) and (not pa.types.is_float16(t))


def foldable(aggregate: SnapshotAggregateOp, predicate, renames: dict[str, str], schema: pa.Schema | None) -> bool:
    """Whether a where with ``predicate`` feeding ``aggregate`` (fields renamed by ``renames``: the
    aggregate's name -> the where's input field) can run as one loop, from the plan alone."""
    if schema is None or predicate.mode != "columnar" or aggregate.user_results:
        return False
    if not isinstance(aggregate.engine, CompiledEngine) or aggregate.mode != MODE_NONE:
        return False
    if len(aggregate.key_fields) > 1:
        return False
    fields = [*aggregate.key_fields, *(fn.arg for _, fn in aggregate.fns if fn.arg is not None)]
    if any(not isinstance(f, str) or renames.get(f, f) not in schema.names for f in fields):
        return False
    if aggregate.key_fields:
        t = schema.field(renames.get(aggregate.key_fields[0], aggregate.key_fields[0])).type
        if not (pa.types.is_integer(t) and _plain_numeric(t)):  # not uint64: the loop keys by int64
            return False
    return all(_plain_numeric(schema.field(renames.get(f, f)).type) for f in fields[len(aggregate.key_fields) :])


class FilterAggregatePort(Consumer):
    """The input of a fused where and aggregate: each batch through the one loop when it can, else
    into the where (``entry``), whose general path feeds the same aggregate."""

    def __init__(self, entry: WhereOp, aggregate: SnapshotAggregateOp, renames: dict[str, str]):
        self.entry, self.aggregate, self.renames = entry, aggregate, dict(renames)
        self.predicate = entry.predicate
        self._spec: FoldSpec | None = None
        self._kernels: dict[tuple, FoldKernel | None] = {}
        self._waited = 0
        self._names: list[str] | None = None  # the columns the loop reads
        self.folded = 0  # batches that went through the one loop (for tests and explain)

    def _source(self, name: str) -> str:
        return self.renames.get(name, name)

    def _layout(self, batch: EventBatch) -> FoldSpec:
        engine = self.aggregate.engine
        if not engine._typed:
            engine._layout(
                [None if fn.arg is None else batch.columns[self._source(fn.arg)].type for _, fn in self.aggregate.fns]
            )
        if self._spec is None:
            args = self.aggregate.args
            col = {a: self._source(arg.arg) for a, arg in enumerate(args) if arg.arg is not None}
            orders = tuple(
                (col[a], _ORDER_KINDS.get(_kind_name(engine, j), 2)) for j, (a, _, _) in enumerate(engine.ms_slots)
            )
            key = self._source(self.aggregate.key_fields[0]) if self.aggregate.key_fields else None
            self._spec = FoldSpec(
                ints=tuple((what, col[a]) for what, a in engine.int_slots),
                floats=tuple((what, col[a]) for what, a in engine.flt_slots),
                orders=orders,
                key=key,
            )
        return self._spec

    def _kernel(self, batch: EventBatch) -> FoldKernel | None:
        if batch.key is not None or len(batch) == 0:
            return None
        spec = self._layout(batch)
        if self._names is None:
            self._names = sorted(set(self.predicate.node.columns()) | spec.columns())
        names = self._names
        try:
            cols = [batch.columns[c] for c in names]
        except KeyError:
            return None
        key = (batch.absent is not None, tuple((c.type, c.null_count > 0) for c in cols))
        if key not in self._kernels:
            self._kernels[key] = self._build(spec, names, cols, batch.absent is not None)
        kernel = self._kernels[key]
        if kernel is None:
            return None
        if getattr(self.predicate, "sql_way", None) and self.predicate.sql_way(batch.columns):
            return None  # SQL's NaN comparisons or an integer overflow's error: this batch goes the SQL way
        if kernel.fn is None:
            native = self.predicate.native
            native.claimed = True
            if not native.ready(kernel.body, pending=self._waited + len(batch)):
                self._waited += len(batch)  # events the general path ran while this loop was not worth compiling
                return None
            kernel.compile()
        return kernel

    def _build(self, spec: FoldSpec, names: list[str], cols: list[pa.Array], with_absent: bool) -> FoldKernel | None:
        if any(c.null_count for c in cols) or not self.predicate.kernel_ok(
            {n: c.type for n, c in zip(names, cols, strict=True)}
        ):
            return None
        if not all(_plain_numeric(c.type) for c in cols):
            return None
        dtypes = {n: np.dtype(c.type.to_pandas_dtype()) for n, c in zip(names, cols, strict=True)}
        if not _fusable(self.predicate.node, dtypes):
            return None
        return FoldKernel(self.predicate.node, spec, dtypes, with_absent)

    def on_batch(self, batch: EventBatch) -> None:
        kernel = self._kernel(batch)
        if kernel is not None:
            try:
                got = kernel.run(batch.columns, len(batch), batch.absent, batch.sync)
            except (ZeroDivisionError, ArithmeticError):
                got = None  # the general path finds the row (and says which) or evaluates it Python's way
            if got is not None:
                self.folded += 1
                self.aggregate.on_folded(*got)
                return
        self.entry.on_batch(batch)

    def on_punctuation(self, time: int) -> None:
        self.entry.on_punctuation(time)

    def on_low_watermark(self, time: int) -> None:
        self.entry.on_low_watermark(time)

    def on_flush(self) -> None:
        self.entry.on_flush()

    def on_completed(self) -> None:
        self.entry.on_completed()


def _kind_name(engine: CompiledEngine, j: int) -> str:
    """The aggregate kind of the engine's order slot ``j``."""
    for _, fn, parts in engine.plan:
        if parts is not None and parts.get("ms") == j:
            return fn.kind
    return ""


def link(where: WhereOp, middle: Operator | None, aggregate: SnapshotAggregateOp, renames) -> FilterAggregatePort:
    """Wire ``where`` (then ``middle``, a select of renamed fields, if any) into ``aggregate`` for the
    general path, and give the aggregate the fused input port."""
    if middle is None:
        where.downstream.append(aggregate)
    else:
        where.downstream.append(middle)
        where.fuse(middle)
        middle.downstream.append(aggregate)
    port = FilterAggregatePort(where, aggregate, renames)
    aggregate.ports = [port]
    return port
