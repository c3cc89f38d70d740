"""The Python-state engine: the compiled engines' algorithm over per-group Python state objects.

It evaluates any aggregate (lists, strings, first/last, user-defined functions), one event at a
time. This class is the start-edge variant (nothing ends, no endpoint queue); the other
variants' modules subclass it with their queue or their window results.
"""

from __future__ import annotations

import math
import pickle
from collections import deque

import numpy as np
import pyarrow as pa

from ...core.batch import EventBatch
from ...core.errors import LambdaError, TidalError, describe_row
from ...core.time import INFINITY
from ...expr.compile import rows_of
from .base import MODE_NONE, _Engine
from .functions import new_state, result_type


def _row_error(name, fn, doing: str, start: int, value, exc: Exception) -> LambdaError:
    row = value._asdict() if hasattr(value, "_asdict") else {"value": value}
    return LambdaError(
        f"aggregate {name}={fn.describe()} raised {type(exc).__name__}: {exc} while {doing} the event at time "
        f"{start}: {{{describe_row(row)}}}"
    )


def _same_result(a: tuple, b: tuple) -> bool:
    """Equal results, a zero's sign included (-0.0 == 0.0 in Python: a product turning 0.0 would stay -0.0)."""
    return a == b and all(
        not isinstance(x, float) or x != 0.0 or math.copysign(1.0, x) == math.copysign(1.0, y)
        for x, y in zip(a, b, strict=True)
    )


class PythonEngine(_Engine):
    """The same algorithm over Python state objects: any aggregate, one event at a time."""

    mode = MODE_NONE
    # ``final_only`` (the start-edge variant, read only at end of input: a SQL GROUP BY without TRIGGER
    # over rows in time): results are computed once there, not at every tick. Each tick's result would
    # be retracted by the next one unread, and computing them cost the square of the input for
    # aggregates whose result is as large as their group (string_agg, list)

    def __init__(self, fns, args, window_len):
        self.fns, self.args, self.window_len = fns, args, int(window_len or 0)
        self.states: dict[int, list] = {}
        self.counts: dict[int, int] = {}
        self.held: dict[int, None] = {}
        self.open: dict[int, tuple[int, tuple]] = {}
        # the heap and FIFO variants' endpoint queues; every variant has both, as checkpoints hold both
        self.queue: list = []
        self.fifo: deque = deque()
        self.seq = 0
        self.cur = np.iinfo(np.int64).min
        self.types: list[pa.DataType | None] | None = None

    def _values(self, batch: EventBatch):
        cols = []
        for (_, fn), arg in zip(self.fns, self.args, strict=True):
            if fn.kind == "count":
                cols.append([None] * len(batch))
            elif fn.kind == "udf":
                cols.append(list(rows_of(batch)))
            else:
                cols.append(arg.values(batch).to_pylist())
        return list(zip(*cols, strict=True)) if cols else [()] * len(batch)

    def _state(self, g):
        got = self.states.get(g)
        if got is None:
            got = self.states[g] = [new_state(fn) for _, fn in self.fns]
            self.counts[g] = 0
        return got

    def _apply(self, g, sign, start, values):
        states = self._state(g)
        for (name, fn), s, v in zip(self.fns, states, values, strict=True):
            try:
                (s.add if sign > 0 else s.remove)(start, v)
            except TidalError:
                raise
            except Exception as exc:  # the user's function, or values the aggregate cannot take: name the row
                raise _row_error(name, fn, "adding" if sign > 0 else "removing", start, v, exc) from exc
        self.counts[g] += sign
        self.held[g] = None

    def _results(self, g, cur) -> tuple:
        out = []
        for (name, fn), s in zip(self.fns, self.states[g], strict=True):
            try:
                out.append(s.result())
            except TidalError:
                raise
            except Exception as exc:
                raise LambdaError(
                    f"aggregate {name}={fn.describe()} raised {type(exc).__name__}: {exc} computing its result at "
                    f"time {cur}"
                ) from exc
        return tuple(out)

    def _finalize(self, out):
        cur = self.cur
        for g in self.held:
            n = self.counts[g]
            result = self._results(g, cur) if n > 0 else None
            prev = self.open.get(g)
            if prev is not None and result is not None and _same_result(prev[1], result):
                continue
            if prev is not None:
                out.append((cur, prev[0], g, prev[1]))
            if result is not None:
                self.open[g] = (cur, result)
                out.append((cur, INFINITY, g, result))
            else:
                self.open.pop(g, None)
            if n == 0:
                del self.states[g]
        self.held.clear()

    def _pop_until(self, t, inclusive, out):
        """Apply the queued ends before ``t`` (or at it, when ``inclusive``): none without a queue."""

    def _enqueue(self, end, g, start, values):
        """Remember an event's end: nothing ends in this variant."""

    def run(self, batch, gids, upto):
        out: list = []
        if self.types is None and len(batch):
            self.types = [
                result_type(fn, None if fn.kind in ("count", "udf") else arg.values(batch).type)
                for (_, fn), arg in zip(self.fns, self.args, strict=True)
            ]
        rows = self._values(batch) if len(batch) else []
        for i, values in enumerate(rows):
            t, o, g = int(batch.sync[i]), int(batch.other[i]), int(gids[i])
            self._pop_until(t, True, out)
            if t != self.cur:
                if not self.final_only:
                    self._finalize(out)
                self.cur = t
            if o < t:
                self._apply(g, -1, o, values)
            else:
                self._apply(g, 1, t, values)
                if o != INFINITY:
                    self._enqueue(o, g, t, values)
        self._pop_until(upto, False, out)
        if self.cur < upto and (upto == INFINITY or not self.final_only):
            self._finalize(out)
        if not out:
            return None
        sync = np.array([r[0] for r in out], np.int64)
        other = np.array([r[1] for r in out], np.int64)
        gid = np.array([r[2] for r in out], np.int64)
        cols = {}
        for j, (name, _) in enumerate(self.fns):
            values = [r[3][j] for r in out]
            t = self.types[j] if self.types else None
            if t is None:  # user-defined: the first non-null result decides, later batches follow it
                arr = pa.array(values)
                if not pa.types.is_null(arr.type) and self.types:
                    self.types[j] = arr.type
                cols[name] = arr
            else:
                cols[name] = pa.array(values, type=t)
        return sync, other, gid, cols

    def snapshot(self) -> dict:
        # per-group states as plain data (user aggregates' own state values must pickle)
        states = {g: ([s.dump() for s in sts], self.counts[g]) for g, sts in self.states.items()}
        data = (states, list(self.held), self.open, self.queue, list(self.fifo), self.seq, self.cur, self.types)
        return {"python_state": pa.array([pickle.dumps(data)], pa.binary())}

    def restore(self, state: dict) -> None:
        data = pickle.loads(state["python_state"][0].as_py())
        states, held, self.open, self.queue, fifo, self.seq, self.cur, self.types = data
        self.states, self.counts = {}, {}
        for g, (dumps, count) in states.items():
            objs = self._state(g)
            for obj, dumped in zip(objs, dumps, strict=True):
                obj.load(dumped)
            self.counts[g] = count
        self.held = dict.fromkeys(held)
        self.fifo = deque(fifo)


class QueuedPythonEngine(PythonEngine):
    """The Python engine with an endpoint queue (the variant subclass says which: FIFO or heap)."""

    def _peek(self):
        """The earliest queued end, or None."""
        raise NotImplementedError

    def _pop(self):
        raise NotImplementedError

    def _push(self, entry) -> None:
        raise NotImplementedError

    def _pop_until(self, t, inclusive, out):
        while True:
            e = self._peek()
            if e is None or e > t or (not inclusive and e >= t):
                return
            if e != self.cur:
                self._finalize(out)
                self.cur = e
            _, _, g, start, values = self._pop()
            self._apply(g, -1, start, values)

    def _enqueue(self, end, g, start, values):
        self.seq += 1
        self._push((end, self.seq, g, start, values))
