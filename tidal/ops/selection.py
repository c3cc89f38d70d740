"""Where, Select and SelectMany: stateless per-event operators.

Temporal semantics: each works on the payload of every event and never touches its
lifetime. ``where`` keeps the events whose payload satisfies the predicate (it sets
absence bits; the batch is compacted only when most events are gone). ``select`` maps
each payload to a new payload with the same lifetime (columns passed through unchanged
are shared, not copied). ``select_many`` maps each payload to zero or more payloads, each
with the lifetime of the event it came from. End edges are transformed like their start
edges, so a deterministic lambda keeps edge pairs matched.

Physically, a numeric predicate becomes one compiled loop (see :mod:`tidal.expr.jit`) that
writes the positions of the kept rows; a where whose only consumer is a select is fused with
it when the query runs: the same loop computes the select's numeric fields for the kept rows
only, and the select's pass-through fields are gathered at those positions.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from ..core.batch import EventBatch, gather
from ..expr import jit
from ..expr.compile import CompiledLambda, records_to_columns
from ..expr.kernels import Evaluator, record_fields
from ..expr.nodes import Col, Node
from .base import Operator

COMPACT_BELOW = 0.25  # compact a filtered batch when fewer than this share of its events remain


_NOT_FUSABLE = {"**", "<<", ">>"}  # Python raises where a compiled loop would silently differ


def _fusable(node: Node, dtypes: dict[str, np.dtype]) -> bool:
    return jit.numeric_only(node, dtypes) and not any(getattr(n, "op", None) in _NOT_FUSABLE for n in node.walk())


class WhereOp(Operator):
    name = "Where"

    def __init__(self, predicate: CompiledLambda):
        """``predicate``: a compiled lambda or SQL condition (:class:`~tidal.expr.sqlcompile.CompiledSql`)."""
        super().__init__()
        self.predicate = predicate
        self.then_select: SelectOp | None = None  # set by fuse_operators: the select this where feeds alone
        self._plans: dict[tuple, _FilterPlan | None] = {}  # by input types; None: not compilable
        self._names: list[str] | None = None  # the fields the predicate and the fused select read

    @property
    def variant(self) -> str:
        return self.predicate.describe()

    def fuse(self, select: SelectOp) -> None:
        """Compute ``select``'s fields in this where's loop (``select`` must be this where's only consumer)."""
        # a select of no fields (SQL's count(*) input) has nothing to compute: the loop would not give its times
        if select.projection.mode == "columnar" and record_fields(select.projection.node):
            self.then_select = select
            self._plans.clear()
            self._names = None

    def on_batch(self, batch: EventBatch) -> None:
        plan = self._kernel(batch) if self.predicate.mode == "columnar" else None
        if plan is not None:
            try:
                self._run(plan, batch)
                return
            except (ZeroDivisionError, ArithmeticError):
                pass  # the general path finds the row (and says which) or evaluates it with Python's semantics
        self._filter(batch)

    def _filter(self, batch: EventBatch) -> None:
        keep = self.predicate.mask(batch)
        if batch.absent is not None:
            keep = keep & ~batch.absent
        kept = np.flatnonzero(keep)
        if len(kept) == 0:
            return
        if self.reads_masks():  # an aggregate: it gathers only the fields it reads
            self.emit_rows(batch, kept)
        elif len(kept) < COMPACT_BELOW * len(keep) and self.payload_read():
            self.emit(batch.take(kept))  # few survivors: gather them rather than carry the absent ones
        else:
            self.emit(batch.with_absent(~keep))

    def kept(self, batch: EventBatch) -> np.ndarray | None:
        """The positions of the rows the compiled loop keeps, or None where the loop does not take
        this batch (then ``predicate.mask`` decides): SQL's relational path filters with it."""
        plan = self._kernel(batch) if self.predicate.mode == "columnar" else None
        if plan is None:
            return None
        inputs = dict(batch.columns)
        inputs[_SYNC] = batch.sync
        if not batch.points:
            inputs[_OTHER] = batch.other
        try:
            return plan.run(inputs, len(batch), batch.absent)[0]
        except (ZeroDivisionError, ArithmeticError):
            return None

    # -- the compiled loop --------------------------------------------------------------
    def _kernel(self, batch: EventBatch) -> _FilterPlan | None:
        """The filter kernel for this batch's column types, once it is worth compiling (or already compiled)."""
        outputs = list(record_fields(self.then_select.projection.node)) if self.then_select is not None else []
        if self._names is None:
            self._names = sorted(set(self.predicate.node.columns()).union(*(n.columns() for _, n in outputs)))
        try:
            cols = [batch.columns[c] for c in self._names]
        except KeyError:
            return None
        key = (batch.absent is not None, batch.points, tuple((c.type, c.null_count > 0) for c in cols))
        if key not in self._plans:
            self._plans[key] = self._plan(key, cols, outputs)
        plan = self._plans[key]
        if plan is None:
            return None
        exprs = [self.predicate] + ([self.then_select.projection] if self.then_select is not None else [])
        if any(getattr(e, "sql_way", None) and e.sql_way(batch.columns) for e in exprs):
            return None  # SQL's NaN comparisons or an integer overflow's error: this batch goes the SQL way
        native = self.predicate.native  # the predicate's policy and event count (it counts what it evaluates)
        native.claimed = True
        if plan.run is None:
            if not native.ready(plan.body, pending=len(batch)):
                return None
            plan.compile()
        return plan

    def _plan(self, key: tuple, cols: list[pa.Array], outputs) -> _FilterPlan | None:
        types = {c: col.type for c, col in zip(self._names, cols, strict=True)}
        exprs = [self.predicate] + ([self.then_select.projection] if self.then_select is not None else [])
        if not all(e.kernel_ok(types) for e in exprs):
            return None
        types = {c: t for c, (t, nulls) in zip(self._names, key[2], strict=True) if not nulls}
        dtypes = {c: np.dtype(t.to_pandas_dtype()) for c, t in types.items() if _is_numeric(t)}
        return _FilterPlan.build(self.predicate.node, outputs, dtypes, with_absent=key[0], points=key[1])

    def _run(self, plan: _FilterPlan, batch: EventBatch) -> None:
        n = len(batch)
        inputs = dict(batch.columns)
        inputs[_SYNC] = batch.sync
        if not batch.points:
            inputs[_OTHER] = batch.other
        kept, values = plan.run(inputs, n, batch.absent)
        if len(kept) == 0:
            return
        if self.then_select is None:
            if self.reads_masks():
                self.emit_rows(batch, kept)
            elif len(kept) < COMPACT_BELOW * n and self.payload_read():
                self.emit(batch.take(kept))
            else:
                absent = np.ones(n, dtype=bool)
                absent[kept] = False
                self.emit(batch.with_absent(absent))
            return
        columns = {
            name: pa.array(values[j]) if j is not None else gather(batch.columns[field], kept)
            for name, j, field in plan.fields
        }
        out = EventBatch(
            sync=values[plan.sync],
            other=None if batch.points else values[plan.other],
            columns=columns,
            key=None if batch.key is None else gather(batch.key, kept),
            hash=None if batch.hash is None else batch.hash[kept],
        )
        self.then_select.emit(out)


_SYNC, _OTHER = "\0sync", "\0other"  # the control columns among a kernel's inputs (no field has these names)


def _is_numeric(t: pa.DataType) -> bool:
    return pa.types.is_integer(t) or pa.types.is_floating(t)


class _FilterPlan:
    """A compiled where (and select): which kernel output or gathered column makes each output field."""

    def __init__(self, predicate, outputs, dtypes, out_dtypes, with_absent, fields, sync, other):
        self.predicate, self.outputs, self.dtypes, self.out_dtypes = predicate, outputs, dtypes, out_dtypes
        self.with_absent = with_absent
        self.fields = fields  # (output name, kernel output index or None, field to gather when None)
        self.sync, self.other = sync, other  # kernel output indices of the control columns (fused only)
        self.body = jit.filter_body(predicate, outputs, dtypes, with_absent)
        self.run = None

    @classmethod
    def build(cls, predicate: Node, fields: list[tuple[str, Node]], dtypes, *, with_absent, points):
        """None when some tree cannot be compiled for these column types."""
        if not _fusable(predicate, dtypes):
            return None
        outputs: list[Node] = []
        out_dtypes: list[np.dtype] = []
        layout = []
        empty = Evaluator({c: pa.array([], type=pa.from_numpy_dtype(dt)) for c, dt in dtypes.items()}, 0)
        for name, node in fields:
            if isinstance(node, Col) and node.name not in dtypes:
                layout.append((name, None, node.name))  # a string or nullable field: gathered by Arrow
                continue
            if not _fusable(node, dtypes):
                return None
            value = empty.eval(node)
            if not isinstance(value, np.ndarray):
                return None  # a constant field: the general path broadcasts it
            layout.append((name, len(outputs), None))
            outputs.append(node)
            out_dtypes.append(value.dtype)
        sync = other = None
        kernel_dtypes = dict(dtypes)
        if fields:
            sync = len(outputs)
            outputs.append(Col(_SYNC))
            out_dtypes.append(np.dtype(np.int64))
            kernel_dtypes[_SYNC] = np.dtype(np.int64)
            if not points:
                other = len(outputs)
                outputs.append(Col(_OTHER))
                out_dtypes.append(np.dtype(np.int64))
                kernel_dtypes[_OTHER] = np.dtype(np.int64)
        used = predicate.columns().union(*(n.columns() for n in outputs))
        kernel_dtypes = {c: dt for c, dt in kernel_dtypes.items() if c in used}
        return cls(predicate, outputs, kernel_dtypes, out_dtypes, with_absent, layout, sync, other)

    def compile(self) -> None:
        self.run = jit.compile_filter(self.predicate, self.outputs, self.dtypes, self.out_dtypes, self.with_absent)


class SelectOp(Operator):
    name = "Select"

    def __init__(self, projection: CompiledLambda):
        super().__init__()
        self.projection = projection

    @property
    def variant(self) -> str:
        return self.projection.describe()

    def on_batch(self, batch: EventBatch) -> None:
        cols = self.projection.project(batch) if self.projection.mode == "columnar" else None
        if cols is not None:
            self.emit(batch.replace(columns=cols))
            return
        dense = batch.compact()
        self.emit(dense.replace(columns=self.projection.project_rows(dense)))


class SelectManyOp(Operator):
    name = "SelectMany"

    def __init__(self, fn: CompiledLambda):
        super().__init__()
        self.fn = fn

    variant = "row mode (each row yields a list)"

    def on_batch(self, batch: EventBatch) -> None:
        dense = batch.compact()
        results = [list(r) for r in self.fn.row_results(dense)]
        counts = np.fromiter((len(r) for r in results), dtype=np.int64, count=len(results))
        if counts.sum() == 0:
            return
        index = np.repeat(np.arange(len(dense)), counts)
        flat = [x for r in results for x in r]
        base = dense.take(index)
        self.emit(base.replace(columns=records_to_columns(flat, self.fn.output_types)))


def fuse_operators(operators: list[Operator]) -> None:
    """Fuse each columnar where with the plain select that is its only consumer (see :class:`WhereOp`)."""
    for op in operators:
        if type(op) is WhereOp and len(op.downstream) == 1 and type(op.downstream[0]) is SelectOp:
            op.fuse(op.downstream[0])
