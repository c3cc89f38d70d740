"""Transact: each event runs a state transaction on shared tables (seed 004, TStream).

Temporal semantics: one output event per input event, with the input's lifetime (sync and other
time unchanged, so points stay points) and, as payload, the input's fields plus ``committed`` and
each read (a column per read name), or
what ``post(e, r)`` returns (``r.committed`` and the transaction's reads, ``r.<name>``; a read of
an aborted transaction is null). The effect on the tables, the reads and the commits are those of
running the transactions one at a time in event-time order, ties in arrival order, whatever the
scheduler. Dual-mode scheduling: events are buffered without touching state (compute mode) until
``interval`` events have arrived or a punctuation, flush or end of input comes; then the whole
buffer's transactions run (state access mode) and their events are post-processed and emitted.
Punctuations are forwarded after the events before them. The operator's checkpoint carries the
buffered events and the tables' values.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from ..core.batch import EventBatch, concat_batches
from ..core.errors import LambdaError
from ..expr import jit
from ..expr.compile import records_to_columns, row_class
from ..expr.kernels import Evaluator, record_fields, to_arrow_column
from ..expr.lambdas import Opaque, translate_rows
from ..expr.nodes import Col
from ..ops.base import Operator
from . import pipeline
from .engine import Engine

_NOT_FUSED = {"**", "<<", ">>"}  # Python raises where a compiled loop would silently differ


class Post:
    """``post(e, r)`` compiled by tidal's lambda compiler, or called per row when it cannot be."""

    def __init__(self, fn):
        self.fn = fn
        self._plans: dict = {}
        self._by_ids: dict = {}
        try:
            self.fields = record_fields(translate_rows(fn, ["", "r."]))
            self.reason = ""
        except Opaque as exc:
            self.fields = None
            self.reason = str(exc)

    def describe(self) -> str:
        return "post columnar" if self.fields is not None else f"post row mode ({self.reason})"

    def _plan(self, cols: dict[str, pa.Array]) -> list | None:
        """Per output field, for these input types: ``("col", name)`` (a field passed on), ``("jit", kernel,
        inputs, dtype)`` (a numeric tree in one compiled loop, ``tidal.expr.jit``) or ``("eval", node)``;
        None when no field compiles. Kept per input types; inputs with nulls are never compiled."""
        # every batch asks: the columns' type ids and null-freedom find the plan made for them
        ids = tuple((name, col.type.id, col.null_count == 0) for name, col in cols.items())
        made = self._by_ids.get(ids)
        if made is not None:
            return made[0]
        dtypes = {}
        for name, col in cols.items():
            if col.null_count == 0 and (pa.types.is_integer(col.type) or pa.types.is_floating(col.type)):
                dtypes[name] = np.dtype(col.type.to_pandas_dtype())
        key = tuple(sorted((k, v.str) for k, v in dtypes.items()))
        if key in self._plans:
            return self._plans[key]
        empty = Evaluator({c: pa.array([], type=pa.from_numpy_dtype(dt)) for c, dt in dtypes.items()}, 0)
        plan, compiled = [], False
        for name, node in self.fields:
            step = ("eval", node)
            if isinstance(node, Col) and node.name in cols:
                step = ("col", node.name)
            elif jit.numeric_only(node, dtypes) and not any(getattr(x, "op", None) in _NOT_FUSED for x in node.walk()):
                try:
                    value = empty.eval(node)
                except Exception:
                    value = None
                if isinstance(value, np.ndarray) and value.dtype.kind in "biuf":
                    used = sorted(node.columns())
                    step = (
                        "jit",
                        jit.compile_kernel(node, {c: dtypes[c] for c in used}, truth=False),
                        used,
                        value.dtype,
                    )
                    compiled = True
            plan.append((name, step))
        self._plans[key] = plan if compiled else None
        if all(pa.types.is_primitive(c.type) and not pa.types.is_temporal(c.type) for c in cols.values()):
            self._by_ids[ids] = (self._plans[key],)  # a primitive type is its id (no parameters)
        return self._plans[key]

    def _compiled(self, cols: dict[str, pa.Array], n: int) -> dict[str, pa.Array] | None:
        plan = self._plan(cols)
        if plan is None:
            return None
        out, ev = {}, None
        for name, step in plan:
            if step[0] == "col":
                out[name] = cols[step[1]]
            elif step[0] == "jit":
                _, kernel, used, dtype = step
                try:
                    values = kernel({c: cols[c].to_numpy() for c in used}, n, dtype)
                except ZeroDivisionError:  # Python's semantics: the general path decides
                    return None
                out[name] = pa.array(values)
            else:
                ev = ev or Evaluator(cols, n)
                out[name] = to_arrow_column(ev.eval(step[1]), n)
        return out

    def __call__(self, columns: dict[str, pa.Array], r: dict[str, pa.Array], n: int) -> dict[str, pa.Array]:
        if self.fields is not None:
            cols = {**columns, **{"r." + k: v for k, v in r.items()}}
            try:
                done = self._compiled(cols, n)
                if done is not None:
                    return done
            except Exception:  # the general path below decides (and names what went wrong)
                pass
            try:
                ev = Evaluator(cols, n)
                return {name: to_arrow_column(ev.eval(node), n) for name, node in self.fields}
            except Exception:  # nulls, zero divisors, mixed types: Python's semantics, row by row
                pass
        erow, rrow = row_class(tuple(columns)), row_class(tuple(r))
        ecols = [c.to_pylist() for c in columns.values()]
        rcols = [c.to_pylist() for c in r.values()]
        results = []
        for i in range(n):
            e = erow._make(c[i] for c in ecols)
            rr = rrow._make(c[i] for c in rcols)
            try:
                results.append(self.fn(e, rr))
            except Exception as exc:
                raise LambdaError(f"transact: post raised {type(exc).__name__}: {exc} on event {e}") from exc
        return records_to_columns(results)


def _bools(values: np.ndarray) -> pa.Array:
    """A numpy bool array as an Arrow one, packed by numpy (``pa.array`` packs it 10x slower)."""
    bits = np.packbits(values, bitorder="little")
    return pa.Array.from_buffers(pa.bool_(), len(values), [None, pa.py_buffer(bits)], null_count=0)


class TransactOp(Operator):
    name = "Transact"

    def __init__(self, engine: Engine, post: Post | None, read_names: dict[str, pa.DataType]):
        super().__init__()
        self.engine = engine
        self.post = post
        self.read_names = read_names
        self.pending: list[EventBatch] = []
        self.count = 0
        self.position = 0  # events whose transactions have run
        self.flight = None  # ``pipeline``: (batch, its walk started on the walker thread) not yet landed

    @property
    def variant(self) -> str:
        return self.engine.describe()

    def on_batch(self, batch: EventBatch) -> None:
        batch = batch.compact()
        if len(batch) == 0:
            return
        self.pending.append(batch)
        self.count += len(batch)
        interval = self.engine.interval
        if self.count >= interval:
            self._process(self.count - self.count % interval)

    def _process(self, upto: int | None = None) -> None:
        """Run the first ``upto`` buffered events (all by default). A short batch at the head (what
        the last run left) is joined with just enough of the next to fill an interval, not with the
        whole next batch: the rest of that one runs as it came, with no copy of its columns."""
        upto = self.count if upto is None else upto
        pending, done, interval = self.pending, 0, self.engine.interval
        while done < upto:
            first, want = pending[0], min(interval, upto - done)
            if len(first) < want and len(pending) > 1:
                nxt = pending[1]
                take = min(want - len(first), len(nxt))
                rest = [nxt.slice(take, len(nxt))] if take < len(nxt) else []
                pending = [concat_batches([first, nxt.slice(0, take)]), *rest, *pending[2:]]
                continue
            k = min(len(first), upto - done)
            now = first if k == len(first) else first.slice(0, k)
            pending = pending[1:] if k == len(first) else [first.slice(k, len(first)), *pending[1:]]
            self._run(now)  # an error leaves every event not yet run pending
            self.pending, self.count = pending, self.count - k
            done += k

    def _run(self, now: EventBatch) -> None:
        ready = None
        if self.engine.scheduler == "pipeline" and self.engine.workers > 1:
            # made ready while the batch before walks (the tables not read)
            ready = self.engine.prepare(now.columns, self.post, len(now))
        prev = self.flight
        if prev is not None and not prev[1].walked():  # an error in its walk (the tables put back)
            self._land()  # the general path names it
            prev = None
        # this batch's walk starts once the one before has walked; the one before is emitted while it
        # runs (its output is its own arrays: the tables are this walk's)
        flight = None if ready is None else pipeline.start(self.engine, ready)
        if prev is not None:
            try:
                self._land()
            except BaseException:
                if flight is not None:  # this batch has not run: its walk is undone
                    flight.undo()
                raise
        if flight is None:
            self._run_now(now)
        else:
            self.flight = (now, flight)

    def _land(self) -> None:
        """The batch in flight (``pipeline``) waited for and emitted; after an error in its walk (the
        tables put back), run by the general path, which names the event."""
        if self.flight is None:
            return
        now, flight = self.flight
        self.flight = None
        done = flight.land()
        if done is None:
            self._run_now(now)
            return
        kind, result = done
        self.position += len(now)
        if kind == "post":
            self.emit(EventBatch(now.sync, None if now.points else now.other, result))
        else:
            self._emit(now, *result)

    def _run_now(self, now: EventBatch) -> None:
        n = len(now)
        if self.post is not None:  # the post-process in the walk itself, where that applies
            payload = self.engine.run_post(now.columns, self.post, n)
            if payload is not None:
                self.position += n
                self.emit(EventBatch(now.sync, None if now.points else now.other, payload))
                return
        committed, reads = self.engine.run(now.columns, now.sync, self.position)
        self.position += len(now)
        self._emit(now, committed, reads)

    def _emit(self, now: EventBatch, committed, reads) -> None:
        n = len(now)
        # a read no event issued is all nulls (made only then: ``pa.nulls`` fills n values)
        if self.post is None:
            payload = {**now.columns, "committed": _bools(committed)}
            for name, dtype in self.read_names.items():
                payload[name] = reads[name] if name in reads else pa.nulls(n, dtype)
        else:
            r = {"committed": _bools(committed)}
            for name, dtype in self.read_names.items():
                r[name] = reads[name] if name in reads else pa.nulls(n, dtype)
            payload = self.post(now.columns, r, n)
        self.emit(EventBatch(now.sync, None if now.points else now.other, payload))

    def on_punctuation(self, time: int) -> None:
        self._process()
        self._land()
        self.emit_punctuation(time)

    def on_flush(self) -> None:
        self._process()
        self._land()
        self.emit_flush()

    def on_completed(self) -> None:
        self._process()
        self._land()
        pipeline.leave(self.engine)
        self.emit_completed()

    def snapshot(self) -> dict:
        """The buffered events and the tables; a batch in flight (``pipeline``) counts as buffered:
        the tables as they were before it (its walk waited for), the batch among the events."""
        batches, engine = self.pending, self.engine
        now = None
        if self.flight is not None:
            flight = self.flight[1]
            flight.wait()
            now = (engine.icells.copy(), engine.fcells.copy())
            engine.icells[:], engine.fcells[:] = flight.saved
            batches = [self.flight[0], *batches]
        try:
            pending = concat_batches(batches).to_record_batch() if batches else None
            tables = {f"{i}:{t.name}": t.snapshot() for i, t in enumerate(engine.tables)}
        finally:
            if now is not None:
                engine.icells[:], engine.fcells[:] = now
        return {"pending": pending, "position": self.position, "tables": tables}

    def restore(self, state: dict) -> None:
        rb = state.get("pending")
        self.pending = [] if rb is None else [EventBatch.from_record_batch(rb)]
        self.count = 0 if rb is None else rb.num_rows
        self.position = int(state["position"])
        self.flight = None
        for i, t in enumerate(self.engine.tables):
            t.restore({c: np.asarray(a) for c, a in state["tables"][f"{i}:{t.name}"].items()})
