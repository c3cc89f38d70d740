"""The snapshot aggregate operator: groups events, runs the variant's engine, and emits its results.

With ``final_only`` (start edges only, a consumer that reads the result only at end of input) the
Python-state engine computes each group's result once, at end of input, stamped with the last tick:
the final snapshot is the same, the intermediate values that every later tick retracts are not made.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...core.batch import EventBatch, gather
from ...core.errors import LambdaError
from ...core.time import INFINITY
from ...expr.compile import projection_schema
from ...expr.kernels import Evaluator, Fallback, to_arrow_column
from ..base import Operator, OutputBuffer
from ..keys import KeyIndex
from .base import MODE_FIFO, MODE_HEAP, MODE_NONE, MODE_WINDOW, VARIANTS, ArgumentColumn, _Engine, choose_mode
from .compiled import _ONE_EACH, CompiledEngine
from .fifo import FifoEngine, PythonFifoEngine
from .functions import AggregateFunction
from .heap import HeapEngine, PythonHeapEngine
from .picks import pair_type
from .start_edge import PythonStartEdgeEngine, StartEdgeEngine
from .window import PythonWindowEngine, WindowEngine

# each variant's (compiled, Python) engine: the variant is chosen once, when the operator is built
ENGINES = {
    MODE_NONE: (StartEdgeEngine, PythonStartEdgeEngine),
    MODE_FIFO: (FifoEngine, PythonFifoEngine),
    MODE_HEAP: (HeapEngine, PythonHeapEngine),
    MODE_WINDOW: (WindowEngine, PythonWindowEngine),
}


class SnapshotAggregateOp(Operator):
    """Aggregates per snapshot, per group (the batch's key, or payload key fields when fused)."""

    name = "Aggregate"

    def __init__(
        self,
        fns: list[tuple[str, AggregateFunction]],
        schema: pa.Schema | None,
        props,
        key_fields: tuple[str, ...] = (),
        force: str | None = None,
        engine: str | None = None,
        final_only: bool = False,
    ):
        super().__init__()
        self.user_results: dict[str, tuple] = {}  # linear user aggregates: name -> (initial, result tree)
        if engine != "python":
            fns = [self._linear_user_aggregate(name, fn) for name, fn in fns]
        self.fns = fns
        self.schema = schema
        self.mode = choose_mode(props, force)
        self.window_len = props.constant_duration or 0
        self.key_fields = tuple(key_fields)
        self.args = [ArgumentColumn(fn.arg, schema) for _, fn in fns]
        arg_types = [self._static_type(fn, arg) for (_, fn), arg in zip(fns, self.args, strict=True)]
        use_compiled = engine == "compiled" or (engine is None and CompiledEngine.supports(fns, arg_types))
        self.engine: _Engine = self._make_engine(use_compiled)
        if final_only and self.mode == MODE_NONE and not use_compiled:
            self.engine.final_only = True
        self.keys: KeyIndex | None = None
        self.out = OutputBuffer(self)
        self._folded: list[tuple] = []  # rows of a filter-and-accumulate loop not yet swept (see on_folded)
        self._folded_rows = 0

    def _make_engine(self, compiled: bool) -> _Engine:
        compiled_engine, python_engine = ENGINES[self.mode]
        return (compiled_engine if compiled else python_engine)(self.fns, self.args, self.window_len)

    def _linear_user_aggregate(self, name: str, fn: AggregateFunction) -> tuple[str, AggregateFunction]:
        """A user aggregate that is a running sum becomes ``sum`` of its compiled contribution."""
        if fn.kind != "udf":
            return name, fn
        form = fn.udf.linear_form()
        if form is None:
            return name, fn
        initial, contribution, result = form
        self.user_results[name] = (initial, result, fn.udf.compute_result)
        return name, AggregateFunction("sum", contribution)

    def _finish_user_results(self, cols: dict[str, pa.Array], sync: np.ndarray) -> dict[str, pa.Array]:
        for name, (initial, result, compute) in self.user_results.items():
            state = pc.add(cols[name].fill_null(0), initial)
            if result is not None:
                try:
                    state = to_arrow_column(Evaluator({"__state": state}, len(state)).eval(result), len(state))
                except Fallback:  # values numpy would treat otherwise (a zero divisor): the user's function, row by row
                    state = pa.array(self._user_results_by_row(name, compute, state.to_pylist(), sync))
            cols[name] = state
        return cols

    @staticmethod
    def _user_results_by_row(name: str, compute, states: list, sync: np.ndarray) -> list:
        out = []
        for state, t in zip(states, sync.tolist(), strict=True):
            try:
                out.append(compute(state))
            except Exception as exc:
                raise LambdaError(
                    f"aggregate {name}=user-defined raised {type(exc).__name__}: {exc} computing its result at time "
                    f"{t} (state {state!r})"
                ) from exc
        return out

    def _static_type(self, fn: AggregateFunction, arg: ArgumentColumn):
        if fn.kind == "count":
            return pa.int64()
        if self.schema is None:
            return None
        if isinstance(fn.arg, str):
            return self.schema.field(fn.arg).type
        if isinstance(fn.arg, tuple):
            return pair_type(fn.arg, self.schema)
        if arg.node is not None:
            empty = EventBatch.empty(self.schema)
            try:
                return arg.values(empty).type
            except Exception:
                return None
        if arg.fn is not None:
            out = projection_schema(arg.fn, self.schema)
            return None if out is None else out.field(0).type
        return None

    @property
    def variant(self) -> str:
        engine = "compiled" if isinstance(self.engine, CompiledEngine) else "python"
        aggs = ", ".join(
            f"{name}={'user-defined, compiled as ' if name in self.user_results else ''}{fn.describe()}"
            for name, fn in self.fns
        )
        keyed = f"grouped by {', '.join(self.key_fields)}; " if self.key_fields else ""
        final = "; results at end of input only" if self.engine.final_only else ""
        return f"{VARIANTS[self.mode]}, {engine}; {keyed}{aggs}{final}"

    def _gids(self, batch: EventBatch) -> np.ndarray:
        if self.key_fields:
            if self.keys is None:
                self.keys = KeyIndex(self.key_fields)
            return self.keys.ids([batch.columns[k] for k in self.key_fields])
        if batch.key is not None:
            if self.keys is None:
                self.keys = KeyIndex(tuple(batch.key.type[i].name for i in range(batch.key.type.num_fields)))
            return self.keys.ids(batch.key)
        return np.zeros(len(batch), np.int64)

    def _run(self, batch: EventBatch, upto: int) -> None:
        self._sweep_folded()
        gids = self._gids(batch) if len(batch) else np.zeros(0, np.int64)
        self._emit_results(self.engine.run(batch, gids, upto))

    def on_folded(self, sync, key, weight, ints, floats, orders) -> None:
        """Rows a filter-and-accumulate loop made (``tidal.ops.filter_aggregate``): times, group key values
        (integers), how many events each stands for (None: one each) and their contributions. They are
        kept (copied: the loop reuses its buffers) and swept in one call before anything else reaches the
        engine, before a punctuation, a flush or a checkpoint, or once ``FOLDED_ROWS`` wait: the rows and
        their order are the same, so the results are, with one sweep and one key lookup per run of
        batches instead of per batch."""
        n = len(sync)
        if n == 0:
            return
        copy = [a.copy() if a is not None else None for a in (sync, key, weight, ints, floats, orders)]
        self._folded.append(tuple(copy))
        self._folded_rows += n
        if self._folded_rows >= FOLDED_ROWS:
            self._sweep_folded()

    def _sweep_folded(self) -> None:
        if not self._folded:
            return
        parts, self._folded, self._folded_rows = self._folded, [], 0
        if len(parts) == 1:
            sync, key, weight, ints, floats, orders = parts[0]
        else:
            sync, key, ints, floats, orders = (np.concatenate([p[j] for p in parts]) for j in (0, 1, 3, 4, 5))
            weighted = any(p[2] is not None for p in parts)
            weight = (
                np.concatenate([p[2] if p[2] is not None else np.ones(len(p[0]), np.int64) for p in parts])
                if weighted
                else None
            )
        n = len(sync)
        if self.key_fields:
            if self.keys is None:
                self.keys = KeyIndex(self.key_fields)
            keys = pa.array(key)
            t = self.schema.field(self.key_fields[0]).type
            gids = self.keys.ids([keys if t == keys.type else keys.cast(t)])
        else:
            gids = np.zeros(n, np.int64)
        other = np.full(n, INFINITY, np.int64)  # start edges: the only variant that takes folded rows
        wt = _ONE_EACH if weight is None else weight
        self._emit_results(self.engine.sweep(sync, other, gids, ints, floats, orders, wt, _NO_TIME))

    def _emit_results(self, got) -> None:
        if got is None:
            return
        sync, other, gid, cols = got
        if self.user_results:
            cols = self._finish_user_results(cols, sync)
        key = hsh = None
        if self.keys is not None and self.key_fields:
            cols = dict(zip(self.key_fields, self.keys.key_columns(gid), strict=True)) | cols
        elif self.keys is not None:
            key, hsh = self.keys.key_struct(gid), self.keys.hashes(gid)
        self.out.add(EventBatch(sync, other, cols, key=key, hash=hsh))

    @property
    def reads_masked(self) -> bool:
        """A filter feeding this aggregate hands it the kept rows' positions (:meth:`on_rows`), not a batch
        of every field gathered at them: the aggregate gathers only the fields it reads (keys, arguments)."""
        return self._fields_read() is not None

    def _fields_read(self) -> set[str] | None:
        if not hasattr(self, "_fields"):
            fields: set[str] | None = set(self.key_fields)
            for arg in self.args:
                cols = arg.columns()
                fields = None if cols is None or fields is None else fields | cols
            self._fields = fields
        return self._fields

    def on_rows(self, batch: EventBatch, kept: np.ndarray) -> None:
        """The events of ``batch`` at positions ``kept`` (a filter's survivors, increasing)."""
        fields = self._fields_read()
        if fields is None or not fields.issubset(batch.columns):
            self.on_batch(batch.take(kept))
            return
        if len(kept):
            self.on_batch(
                EventBatch(
                    batch.sync[kept],
                    None if batch.points else batch.other[kept],
                    {name: gather(col, kept) for name, col in batch.columns.items() if name in fields},
                    key=None if batch.key is None else gather(batch.key, kept),
                    hash=None if batch.hash is None else batch.hash[kept],
                )
            )

    def on_batch(self, batch: EventBatch) -> None:
        if batch.absent is not None and self._fields_read() is not None:
            self.on_rows(batch, np.flatnonzero(~batch.absent))
            return
        batch = batch.compact()
        if len(batch):
            self._run(batch, np.iinfo(np.int64).min)

    def on_punctuation(self, time: int) -> None:
        self._run(_EMPTY, time)
        self.out.flush()
        if self.engine.final_only:
            # the results come at end of input, stamped with the last tick: a punctuation beyond it
            # would let a consumer (a join) finish a time those results then arrive at
            time = min(time, self.engine.cur)
        self.emit_punctuation(time)

    def on_flush(self) -> None:
        self._sweep_folded()
        self.out.flush(punctuated=False)
        self.emit_flush()

    def on_completed(self) -> None:
        self._run(_EMPTY, INFINITY)
        self.out.flush()
        self.emit_completed()

    def snapshot(self) -> dict:
        self._sweep_folded()  # the checkpoint holds their results (pending output), not the rows
        return {
            "engine": self.engine.snapshot(),
            "keys": None if self.keys is None else self.keys.snapshot(),
            "key_names": None if self.keys is None else list(self.keys.names),
            "pending": [b.to_record_batch(with_key=True) for b in self.out.pending],
        }

    def restore(self, state: dict) -> None:
        self.engine.restore(state["engine"])
        if state["keys"] is not None:
            self.keys = KeyIndex(tuple(state["key_names"]))
            self.keys.restore(state["keys"])
        self.out.pending = [EventBatch.from_record_batch(rb) for rb in state["pending"]]
        self.out.count = sum(len(b) for b in self.out.pending)


FOLDED_ROWS = 1 << 16  # folded rows kept before a sweep
_NO_TIME = int(np.iinfo(np.int64).min)  # progress before any time: the sweep emits only what time passed
_EMPTY = EventBatch(np.empty(0, np.int64), np.empty(0, np.int64), {})
