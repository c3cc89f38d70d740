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
from ..expr import compile as compile_mod
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
        super().__init__()
        self.predicate = predicate
        self.then_select: SelectOp | None = None  # set by fuse_operators: the select this where feeds alone
        self._kernels: dict[tuple, object] = {}  # (absent?, input dtypes) -> filter kernel, or None: not compilable
        self._events = 0

    @property
    def variant(self) -> str:
        return self.predicate.describe()

    def fuse(self, select: SelectOp) -> None:
        """Compute ``select``'s fields in this where's loop (``select`` must be this where's only consumer)."""
        if select.projection.mode == "columnar":
            self.then_select = select
            self._kernels.clear()

    def on_batch(self, batch: EventBatch) -> None:
        run = self._kernel(batch) if self.predicate.mode == "columnar" else None
        if run is not None:
            try:
                self._run(run, batch)
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
        if len(kept) < COMPACT_BELOW * len(keep):
            self.emit(batch.take(kept))  # few survivors: gather them rather than carry the absent ones
        else:
            self.emit(batch.with_absent(~keep))

    # -- the compiled loop --------------------------------------------------------------
    def _outputs(self) -> list[tuple[str, Node]]:
        return list(record_fields(self.then_select.projection.node)) if self.then_select is not None else []

    def _kernel(self, batch: EventBatch):
        """The filter kernel for this batch's column types, once it is worth compiling (or already compiled)."""
        node = self.predicate.node
        outputs = self._outputs()
        used = set(node.columns()).union(*(n.columns() for _, n in outputs if not isinstance(n, Col)))
        dtypes = {}
        for c in sorted(used):
            col = batch.columns.get(c)
            if col is None or col.null_count or not (pa.types.is_integer(col.type) or pa.types.is_floating(col.type)):
                return None  # nulls need Python's semantics; other types are not compiled
            dtypes[c] = np.dtype(col.type.to_pandas_dtype())
        key = (batch.absent is not None, tuple(dtypes.items()))
        if key in self._kernels:
            return self._kernels[key]
        computed = [n for _, n in outputs if not isinstance(n, Col)]
        if not all(_fusable(n, dtypes) for n in [node, *computed]):
            self._kernels[key] = None
            return None
        empty = Evaluator({c: pa.array([], type=batch.columns[c].type) for c in dtypes}, 0)
        out_dtypes = []
        for n in computed:
            value = empty.eval(n)
            if not isinstance(value, np.ndarray):
                self._kernels[key] = None  # a constant field: the general path broadcasts it
                return None
            out_dtypes.append(value.dtype)
        body = jit.filter_body(node, computed, dtypes, key[0])
        # compiling costs about a second, once per machine (the kernel is cached on disk): worth it for long runs
        self._events += len(batch)
        if not jit.is_cached(body) and self._events < compile_mod.JIT_THRESHOLD:
            return None
        run = jit.compile_filter(node, computed, dtypes, out_dtypes, key[0])
        self._kernels[key] = run
        return run

    def _run(self, run, batch: EventBatch) -> None:
        n = len(batch)
        kept, computed = run(batch.columns, n, batch.absent)
        if len(kept) == 0:
            return
        if self.then_select is None:
            if len(kept) < COMPACT_BELOW * n:
                self.emit(batch.take(kept))
            else:
                absent = np.ones(n, dtype=bool)
                absent[kept] = False
                self.emit(batch.with_absent(absent))
            return
        values = iter(computed)
        outputs = self._outputs()
        columns = {
            name: gather(batch.columns[node.name], kept) if isinstance(node, Col) else pa.array(next(values))
            for name, node in outputs
        }
        out = EventBatch(
            sync=batch.sync[kept],
            other=None if batch.points else batch.other[kept],
            columns=columns,
            key=None if batch.key is None else gather(batch.key, kept),
            hash=None if batch.hash is None else batch.hash[kept],
        )
        self.then_select.emit(out)


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
