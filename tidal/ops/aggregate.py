"""Snapshot aggregation: one result row per group per snapshot.

Semantics: at every instant ``T`` and for every group whose snapshot at ``T`` is non-empty,
the output holds exactly one event whose payload is the aggregates over that snapshot (the
group's key fields first, when the operator groups by payload fields). Empty snapshots
produce nothing. Physically a result is a start edge when its snapshot begins and an end
edge when it changes or empties (Trill's output), except after tumbling windows, where each
result is the interval ``[w, w + duration)`` of its window.

The algorithm is Trill's (seed 001 section 5.2.1), compiled with numba and run over whole
batches: per group *aggregate state* (running sums, and sorted multisets for min/max-like
aggregates), a *held* list of the groups touched at the current sync time (cleared, not
rebuilt, when time moves on), and an *endpoint compensation queue* of future interval
ends. The queue's shape comes from stream properties:

==================  ===================================================================
variant             when
==================  ===================================================================
tumbling window     constant hop and constant duration <= hop: no queue; state resets
                    at each window and each result is an interval
start edges only    nothing ever ends: no queue
constant duration   ends arrive in start order: a FIFO queue
general             a binary-heap priority queue
==================  ===================================================================

A result changes only when the snapshot changes; a group touched at an instant whose state
comes out unchanged emits nothing. Aggregates the kernels cannot evaluate (lists, strings,
user-defined functions) run in the same algorithm with Python state objects per group.
"""

from __future__ import annotations

import heapq
import pickle
from collections import deque

import numba
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from numba.typed import List

from ..core.batch import EventBatch, as_numpy
from ..core.errors import PlanError
from ..core.time import INFINITY
from ..expr.compile import CompiledLambda, projection_schema, rows_of
from ..expr.kernels import Evaluator, to_arrow_column
from ..expr.nodes import Node
from .aggfuncs import LINEAR, ORDERED, AggregateFunction, new_state, result_type
from .base import Operator, OutputBuffer
from .keys import KeyIndex

MODE_NONE, MODE_FIFO, MODE_HEAP, MODE_WINDOW = 0, 1, 2, 3
VARIANTS = {
    MODE_NONE: "start edges only (no endpoint queue)",
    MODE_FIFO: "constant duration (FIFO endpoint queue)",
    MODE_HEAP: "general (priority endpoint queue)",
    MODE_WINDOW: "tumbling window (no endpoint queue)",
}
# scalar slots of the kernel's persistent state
CUR, NHELD, QHEAD, QSIZE, NOUT = range(5)


def choose_mode(props, force: str | None = None) -> int:
    """The physical variant for a stream with these properties (``force`` names one, for tests)."""
    if force is not None:
        names = {"start_edge": MODE_NONE, "fifo": MODE_FIFO, "general": MODE_HEAP, "window": MODE_WINDOW}
        if force not in names:
            raise PlanError(f"unknown aggregate variant {force!r}; variants are {sorted(names) + ['fused']}")
        return names[force]
    hop, dur = props.constant_hop, props.constant_duration
    if hop is not None and dur is not None and dur <= hop[0]:
        return MODE_WINDOW
    if props.start_edge_only:
        return MODE_NONE
    if dur is not None:
        return MODE_FIFO
    return MODE_HEAP


# -- compiled kernel ---------------------------------------------------------------------------
@numba.njit(cache=True, inline="always")
def _ms_insert(ms, ms_len, idx, v):
    arr = ms[idx]
    n = ms_len[idx]
    if n == len(arr):
        grown = np.empty(max(8, 2 * n), np.float64)
        grown[:n] = arr[:n]
        ms[idx] = grown
        arr = grown
    lo, hi = 0, n
    while lo < hi:
        mid = (lo + hi) >> 1
        if arr[mid] < v:
            lo = mid + 1
        else:
            hi = mid
    for k in range(n, lo, -1):
        arr[k] = arr[k - 1]
    arr[lo] = v
    ms_len[idx] = n + 1


# Typed-list work goes through these cached kernels: a typed List built or touched from Python
# compiles its methods in every new process (seconds per Spark worker), a cached kernel loads.
@numba.njit(cache=True)
def _empty_multisets():
    return List.empty_list(numba.types.float64[:])


@numba.njit(cache=True)
def _add_multisets(ms, count):
    for _ in range(count):
        ms.append(np.empty(8, np.float64))


@numba.njit(cache=True)
def _flatten_multisets(ms, lens):
    offsets = np.zeros(len(ms) + 1, np.int64)
    for i in range(len(ms)):
        offsets[i + 1] = offsets[i] + lens[i]
    flat = np.empty(offsets[-1], np.float64)
    for i in range(len(ms)):
        flat[offsets[i] : offsets[i + 1]] = ms[i][: lens[i]]
    return flat, offsets


@numba.njit(cache=True)
def _load_multisets(ms, flat, offsets):
    for i in range(len(offsets) - 1):
        n = offsets[i + 1] - offsets[i]
        arr = np.empty(max(8, n), np.float64)
        arr[:n] = flat[offsets[i] : offsets[i + 1]]
        ms.append(arr)


@numba.njit(cache=True, inline="always")
def _ms_remove(ms, ms_len, idx, v):
    arr = ms[idx]
    n = ms_len[idx]
    lo, hi = 0, n
    while lo < hi:
        mid = (lo + hi) >> 1
        if arr[mid] < v:
            lo = mid + 1
        else:
            hi = mid
    if lo < n and arr[lo] == v:
        for k in range(lo, n - 1):
            arr[k] = arr[k + 1]
        ms_len[idx] = n - 1


@numba.njit(cache=True, inline="always")
def _ms_result(arr, n, kind, p):
    if kind == 2:  # count distinct
        d = 0
        for k in range(n):
            if k == 0 or arr[k] != arr[k - 1]:
                d += 1
        return float(d)
    if n == 0:
        return np.nan
    if kind == 0:
        return arr[0]
    if kind == 1:
        return arr[n - 1]
    if kind == 3:
        pos = p * (n - 1)
        lo = int(np.floor(pos))
        hi = int(np.ceil(pos))
        return arr[lo] + (arr[hi] - arr[lo]) * (pos - lo)
    k = int(np.ceil(p * n)) - 1
    return arr[max(k, 0)]


@numba.njit(cache=True)
def _apply_multisets(g, sign, src_m, row, ms, ms_len, km):
    for j in range(km):
        v = src_m[row, j]
        if not np.isnan(v):
            if sign > 0:
                _ms_insert(ms, ms_len, g * km + j, v)
            else:
                _ms_remove(ms, ms_len, g * km + j, v)


@numba.njit(cache=True)
def sweep(
    sync, other, gid, ic, fc, mv, upto, mode, window_len,
    st, held, held_flag, g_int, g_flt, g_cnt, ms, ms_len, m_kind, m_param,
    q_time, q_gid, q_int, q_flt, q_mv,
    o_valid, o_start, o_int, o_flt, o_cnt, o_res,
    out_sync, out_other, out_gid, out_int, out_flt, out_cnt, out_res,
):  # fmt: skip
    """Feed one batch (sorted by sync time), then let progress reach ``upto``.

    Each step applies one delta: the earliest queued end if it is due, else the next event;
    when time moves on, the held groups' results are emitted first. Everything is written
    out in this one loop on purpose: in numba, calling a helper that takes arrays, or
    choosing between arrays in one variable, costs more than the work itself.
    """
    km = len(m_kind)
    ki = ic.shape[1]
    kf = fc.shape[1]
    n = len(sync)
    res = np.empty(km, np.float64)  # the current group's order-aggregate results
    i = 0
    while True:
        t = sync[i] if i < n else upto
        use_queue = False
        top = 0
        if st[QSIZE] > 0:
            top = st[QHEAD] if mode == 1 else 0
            e = q_time[top]
            use_queue = e <= t if i < n else e < t
            if use_queue:
                t = e
        done = not use_queue and i == n
        if st[NHELD] > 0 and ((done and st[CUR] < upto) or (not done and t != st[CUR])):
            # -- emit the held groups' results at the current time, then clear the held list --
            cur = st[CUR]
            o = st[NOUT]
            for h in range(st[NHELD]):
                g = held[h]
                held_flag[g] = False
                for j in range(km):
                    res[j] = _ms_result(ms[g * km + j], ms_len[g * km + j], m_kind[j], m_param[j])
                if mode == 3:  # tumbling window: the result is the window's interval; the state resets
                    if g_cnt[g] > 0:
                        out_sync[o] = cur
                        out_other[o] = cur + window_len
                        out_gid[o] = g
                        for j in range(ki):
                            out_int[o, j] = g_int[g, j]
                        for j in range(kf):
                            out_flt[o, j] = g_flt[g, j]
                        out_cnt[o] = g_cnt[g]
                        for j in range(km):
                            out_res[o, j] = res[j]
                        o += 1
                    for j in range(ki):
                        g_int[g, j] = 0
                    for j in range(kf):
                        g_flt[g, j] = 0.0
                    g_cnt[g] = 0
                    for j in range(km):
                        ms_len[g * km + j] = 0
                    continue
                if o_valid[g] and g_cnt[g] == o_cnt[g]:
                    same = True
                    for j in range(ki):
                        same = same and g_int[g, j] == o_int[g, j]
                    for j in range(kf):
                        same = same and g_flt[g, j] == o_flt[g, j]
                    for j in range(km):
                        same = same and res[j] == o_res[g, j]
                    if same:  # touched, but the result did not change
                        continue
                if o_valid[g]:  # end edge of the previous result
                    out_sync[o] = cur
                    out_other[o] = o_start[g]
                    out_gid[o] = g
                    for j in range(ki):
                        out_int[o, j] = o_int[g, j]
                    for j in range(kf):
                        out_flt[o, j] = o_flt[g, j]
                    out_cnt[o] = o_cnt[g]
                    for j in range(km):
                        out_res[o, j] = o_res[g, j]
                    o += 1
                if g_cnt[g] > 0:  # start edge of the new one, remembered as the open result
                    o_valid[g] = True
                    o_start[g] = cur
                    out_sync[o] = cur
                    out_other[o] = 9223372036854775807
                    out_gid[o] = g
                    for j in range(ki):
                        o_int[g, j] = g_int[g, j]
                        out_int[o, j] = g_int[g, j]
                    for j in range(kf):
                        o_flt[g, j] = g_flt[g, j]
                        out_flt[o, j] = g_flt[g, j]
                    o_cnt[g] = g_cnt[g]
                    out_cnt[o] = g_cnt[g]
                    for j in range(km):
                        o_res[g, j] = res[j]
                        out_res[o, j] = res[j]
                    o += 1
                else:
                    o_valid[g] = False
            st[NOUT] = o
            st[NHELD] = 0
        if done:
            break
        st[CUR] = t
        if use_queue:
            if mode == 1:
                row = top
                st[QHEAD] = top + 1
                st[QSIZE] -= 1
            else:  # heap: move the minimum just past the shrunken heap, then sift down
                row = st[QSIZE] - 1
                q_time[0], q_time[row] = q_time[row], q_time[0]
                q_gid[0], q_gid[row] = q_gid[row], q_gid[0]
                for j in range(ki):
                    q_int[0, j], q_int[row, j] = q_int[row, j], q_int[0, j]
                for j in range(kf):
                    q_flt[0, j], q_flt[row, j] = q_flt[row, j], q_flt[0, j]
                for j in range(km):
                    q_mv[0, j], q_mv[row, j] = q_mv[row, j], q_mv[0, j]
                st[QSIZE] = row
                pos = 0
                while True:
                    child = 2 * pos + 1
                    if child >= row:
                        break
                    if child + 1 < row and q_time[child + 1] < q_time[child]:
                        child += 1
                    if q_time[pos] <= q_time[child]:
                        break
                    q_time[pos], q_time[child] = q_time[child], q_time[pos]
                    q_gid[pos], q_gid[child] = q_gid[child], q_gid[pos]
                    for j in range(ki):
                        q_int[pos, j], q_int[child, j] = q_int[child, j], q_int[pos, j]
                    for j in range(kf):
                        q_flt[pos, j], q_flt[child, j] = q_flt[child, j], q_flt[pos, j]
                    for j in range(km):
                        q_mv[pos, j], q_mv[child, j] = q_mv[child, j], q_mv[pos, j]
                    pos = child
            g = q_gid[row]
            sign = -1
            for j in range(ki):
                g_int[g, j] -= q_int[row, j]
            for j in range(kf):
                g_flt[g, j] -= q_flt[row, j]
            if km > 0:
                _apply_multisets(g, sign, q_mv, row, ms, ms_len, km)
        else:
            row = i
            i += 1
            g = gid[row]
            o = other[row]
            sign = -1 if o < t else 1
            if sign > 0 and o != 9223372036854775807 and (mode == 1 or mode == 2):
                size = st[QSIZE]
                pos = st[QHEAD] + size if mode == 1 else size
                q_time[pos] = o
                q_gid[pos] = g
                for j in range(ki):
                    q_int[pos, j] = ic[row, j]
                for j in range(kf):
                    q_flt[pos, j] = fc[row, j]
                for j in range(km):
                    q_mv[pos, j] = mv[row, j]
                st[QSIZE] = size + 1
                if mode == 2:  # sift up
                    while pos > 0:
                        parent = (pos - 1) >> 1
                        if q_time[parent] <= q_time[pos]:
                            break
                        q_time[parent], q_time[pos] = q_time[pos], q_time[parent]
                        q_gid[parent], q_gid[pos] = q_gid[pos], q_gid[parent]
                        for j in range(ki):
                            q_int[parent, j], q_int[pos, j] = q_int[pos, j], q_int[parent, j]
                        for j in range(kf):
                            q_flt[parent, j], q_flt[pos, j] = q_flt[pos, j], q_flt[parent, j]
                        for j in range(km):
                            q_mv[parent, j], q_mv[pos, j] = q_mv[pos, j], q_mv[parent, j]
                        pos = parent
            for j in range(ki):
                g_int[g, j] += sign * ic[row, j]
            for j in range(kf):
                g_flt[g, j] += sign * fc[row, j]
            if km > 0:
                _apply_multisets(g, sign, mv, row, ms, ms_len, km)
        g_cnt[g] += sign
        if not held_flag[g]:
            held_flag[g] = True
            held[st[NHELD]] = g
            st[NHELD] += 1


# -- argument columns ----------------------------------------------------------------------------
class ArgumentColumn:
    """The column an aggregate reads: a field, or a row lambda compiled like any other."""

    def __init__(self, arg, schema: pa.Schema | None):
        self.arg = arg
        self.node = arg if isinstance(arg, Node) else None  # a user aggregate's compiled contribution
        plain = arg is None or isinstance(arg, str) or self.node is not None
        self.fn = None if plain else CompiledLambda(arg, schema, truth=False)
        if isinstance(arg, str) and schema is not None and arg not in schema.names:
            raise PlanError(f"aggregate argument {arg!r} is not a field; fields are {schema.names}")

    def values(self, batch: EventBatch) -> pa.Array:
        if isinstance(self.arg, str):
            return batch.columns[self.arg]
        if self.node is not None:
            cols = dict(batch.columns)
            cols["__time"] = pa.array(batch.sync, pa.int64())
            return to_arrow_column(Evaluator(cols, len(batch)).eval(self.node), len(batch))
        got = self.fn.project(batch) if self.fn.mode == "columnar" else None
        return (got or self.fn.project_rows(batch))["value"]


def _numeric(t: pa.DataType) -> bool:
    return pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t)


def _orderable_as_int(t: pa.DataType) -> bool:
    return pa.types.is_timestamp(t) or pa.types.is_date(t) or pa.types.is_duration(t)


class _Engine:
    """Shared interface of the compiled and the Python aggregation engines."""

    def run(self, batch: EventBatch, gids: np.ndarray, upto: int):
        """Returns (sync, other, gid, {field: array}) of the output events."""
        raise NotImplementedError


class CompiledEngine(_Engine):
    """Numeric built-ins: running sums and sorted multisets in numba kernels."""

    def __init__(self, fns: list[tuple[str, AggregateFunction]], args: list[ArgumentColumn], mode: int, window_len):
        self.fns, self.args, self.mode, self.window_len = fns, args, mode, int(window_len or 0)
        # slots: int sums (valid counts, integer sums) and float sums (float sums, squares), shared by aggregates
        self.int_slots: list[tuple[str, int]] = []
        self.flt_slots: list[tuple[str, int]] = []
        self.ms_slots: list[tuple[int, int, float]] = []  # (arg index, kind code, param)
        self.plan = []
        self.arg_types: dict[int, pa.DataType] = {}
        self._typed = False
        self.st = np.zeros(5, np.int64)
        self.st[CUR] = np.iinfo(np.int64).min
        self.groups = 0

    @staticmethod
    def supports(fns, arg_types: list[pa.DataType | None]) -> bool:
        for (_, fn), t in zip(fns, arg_types, strict=True):
            if fn.kind == "count":
                continue
            if fn.kind not in LINEAR and fn.kind not in ORDERED:
                return False
            if t is None:
                return False
            if fn.kind in LINEAR and fn.kind != "count_not_null" and not _numeric(t):
                return False
            if fn.kind in ORDERED and not (_numeric(t) or _orderable_as_int(t)):
                return False
        return True

    def _slot(self, slots, key) -> int:
        if key not in slots:
            slots.append(key)
        return slots.index(key)

    def _layout(self, types: list[pa.DataType]) -> None:
        self.layout_types = list(types)
        first_of: dict[str, int] = {}
        for (name, fn), a, t in zip(self.fns, range(len(self.args)), types, strict=True):
            if fn.kind == "count":
                self.plan.append((name, fn, None))
                continue
            if isinstance(fn.arg, str):  # aggregates of the same field share its sums (Average = Sum + Count)
                a = first_of.setdefault(fn.arg, a)
            self.arg_types[a] = t
            valid = self._slot(self.int_slots, ("valid", a))
            if fn.kind in ORDERED:
                self.ms_slots.append((a, ORDERED[fn.kind], float(fn.param or 0.0)))
                self.plan.append((name, fn, {"ms": len(self.ms_slots) - 1, "valid": valid, "arg": a}))
                continue
            parts = {"valid": valid}
            if fn.kind in ("sum",) and (pa.types.is_integer(t) or pa.types.is_boolean(t)):
                parts["isum"] = self._slot(self.int_slots, ("value", a))
            elif fn.kind in ("sum", "average", "variance", "stddev"):
                parts["fsum"] = self._slot(self.flt_slots, ("value", a))
            if fn.kind in ("variance", "stddev"):
                parts["fsq"] = self._slot(self.flt_slots, ("square", a))
            self.plan.append((name, fn, parts))
        ki, kf, km = len(self.int_slots), len(self.flt_slots), len(self.ms_slots)
        self.m_kind = np.array([k for _, k, _ in self.ms_slots], np.int64)
        self.m_param = np.array([p for _, _, p in self.ms_slots], np.float64)
        self.g_int = np.zeros((0, ki), np.int64)
        self.g_flt = np.zeros((0, kf), np.float64)
        self.g_cnt = np.zeros(0, np.int64)
        self.held = np.zeros(0, np.int64)
        self.held_flag = np.zeros(0, np.bool_)
        self.ms = _empty_multisets()
        self.ms_len = np.zeros(0, np.int64)
        self.o_valid = np.zeros(0, np.bool_)
        self.o_start = np.zeros(0, np.int64)
        self.o_int = np.zeros((0, ki), np.int64)
        self.o_flt = np.zeros((0, kf), np.float64)
        self.o_cnt = np.zeros(0, np.int64)
        self.o_res = np.zeros((0, km), np.float64)
        self.q_time = np.zeros(0, np.int64)
        self.q_gid = np.zeros(0, np.int64)
        self.q_int = np.zeros((0, ki), np.int64)
        self.q_flt = np.zeros((0, kf), np.float64)
        self.q_mv = np.zeros((0, km), np.float64)
        self._typed = True

    def _grow_groups(self, count: int) -> None:
        old = len(self.g_cnt)
        if count <= old:
            return
        new = max(count, 2 * old, 64)

        def grow(a, fill=0):
            out = np.full((new,) + a.shape[1:], fill, a.dtype)
            out[:old] = a
            return out

        self.g_int, self.g_flt, self.g_cnt = grow(self.g_int), grow(self.g_flt), grow(self.g_cnt)
        self.held, self.held_flag = grow(self.held), grow(self.held_flag)
        self.o_valid, self.o_start, self.o_int = grow(self.o_valid), grow(self.o_start), grow(self.o_int)
        self.o_flt, self.o_cnt, self.o_res = grow(self.o_flt), grow(self.o_cnt), grow(self.o_res)
        km = len(self.ms_slots)
        self.ms_len = grow(self.ms_len.reshape(-1, km) if km else np.zeros((old, 0), np.int64)).reshape(-1)
        if km:
            _add_multisets(self.ms, (new - old) * km)

    def _ensure_queue(self, extra: int) -> None:
        head, size = int(self.st[QHEAD]), int(self.st[QSIZE])
        if self.mode == MODE_FIFO and head > 0 and head + size + extra > len(self.q_time):
            for a in (self.q_time, self.q_gid, self.q_int, self.q_flt, self.q_mv):
                a[:size] = a[head : head + size]
            self.st[QHEAD] = 0
            head = 0
        need = head + size + extra
        if need <= len(self.q_time):
            return
        new = max(need, 2 * len(self.q_time), 1024)

        def grow(a):
            out = np.zeros((new,) + a.shape[1:], a.dtype)
            out[: len(a)] = a
            return out

        self.q_time, self.q_gid = grow(self.q_time), grow(self.q_gid)
        self.q_int, self.q_flt, self.q_mv = grow(self.q_int), grow(self.q_flt), grow(self.q_mv)

    def _contributions(self, batch: EventBatch, n: int):
        cols = {}
        for a, arg in enumerate(self.args):
            if a in self.arg_types:
                cols[a] = arg.values(batch)
        ic = np.zeros((n, len(self.int_slots)), np.int64)
        fc = np.zeros((n, len(self.flt_slots)), np.float64)
        mv = np.zeros((n, len(self.ms_slots)), np.float64)
        floats = {}

        def as_float(a):
            if a not in floats:
                col = cols[a]
                if _orderable_as_int(col.type):
                    col = col.view(pa.int64()) if col.type.bit_width == 64 else col.cast(pa.int64())
                f = np.asarray(col.cast(pa.float64()).fill_null(np.nan).to_numpy(zero_copy_only=False))
                floats[a] = f
            return floats[a]

        valids = {}

        def valid_of(a):
            if a not in valids:
                col = cols[a]
                ok = (
                    np.ones(n, bool)
                    if col.null_count == 0
                    else np.asarray(col.is_valid().to_numpy(zero_copy_only=False))
                )
                if pa.types.is_floating(col.type):
                    ok = ok & ~np.isnan(as_float(a))  # NaN counts as null for aggregates
                valids[a] = ok
            return valids[a]

        for j, (what, a) in enumerate(self.int_slots):
            col = cols[a]
            if what == "valid":
                ic[:, j] = valid_of(a)
            else:
                vals = col.cast(pa.int64()) if not pa.types.is_int64(col.type) else col
                ic[:, j] = as_numpy(vals.fill_null(0) if vals.null_count else vals)
        for j, (what, a) in enumerate(self.flt_slots):
            f = np.where(valid_of(a), as_float(a), 0.0)
            fc[:, j] = f * f if what == "square" else f
        for j, (a, _, _) in enumerate(self.ms_slots):
            mv[:, j] = as_float(a)
        return ic, fc, mv

    def _layout_from(self, batch) -> bool:
        """Lay out the slots from the first non-empty batch's argument types; False while unknown."""
        if not self._typed:
            if len(batch) == 0:
                return False
            pairs = zip(self.fns, self.args, strict=True)
            self._layout([None if fn.kind == "count" else arg.values(batch).type for (_, fn), arg in pairs])
        return True

    def run(self, batch, gids, upto):
        n = len(batch)
        if not self._layout_from(batch):
            return None
        self._grow_groups(int(gids.max()) + 1 if n else 0)
        if self.mode in (MODE_FIFO, MODE_HEAP):
            self._ensure_queue(n)
        if n:
            ic, fc, mv = self._contributions(batch, n)
        else:
            ic = np.zeros((0, len(self.int_slots)), np.int64)
            fc = np.zeros((0, len(self.flt_slots)), np.float64)
            mv = np.zeros((0, len(self.ms_slots)), np.float64)
        # rows: at most two per group touch; touches: events, queued ends (old and pushed now), held groups
        cap = 2 * (2 * n + int(self.st[QSIZE]) + int(self.st[NHELD])) + 1
        ki, kf, km = ic.shape[1], fc.shape[1], mv.shape[1]
        out = (
            np.empty(cap, np.int64),
            np.empty(cap, np.int64),
            np.empty(cap, np.int64),
            np.empty((cap, ki), np.int64),
            np.empty((cap, kf), np.float64),
            np.empty(cap, np.int64),
            np.empty((cap, km), np.float64),
        )
        self.st[NOUT] = 0
        sweep(
            batch.sync, batch.other, gids, ic, fc, mv, upto, self.mode, self.window_len,
            self.st, self.held, self.held_flag, self.g_int, self.g_flt, self.g_cnt,
            self.ms, self.ms_len, self.m_kind, self.m_param,
            self.q_time, self.q_gid, self.q_int, self.q_flt, self.q_mv,
            self.o_valid, self.o_start, self.o_int, self.o_flt, self.o_cnt, self.o_res, *out,
        )  # fmt: skip
        k = int(self.st[NOUT])
        if k == 0:
            return None
        sync, other, gid, oi, of, oc, orr = (a[:k] for a in out)
        return sync, other, gid, self._finish(oi, of, oc, orr)

    def _finish(self, oi, of, oc, orr) -> dict[str, pa.Array]:
        cols = {}
        for name, fn, parts in self.plan:
            kind = fn.kind
            if kind == "count":
                cols[name] = pa.array(oc, pa.int64())
                continue
            valid = oi[:, parts["valid"]]
            none = _mask(valid == 0)
            if kind == "count_not_null":
                cols[name] = pa.array(valid, pa.int64())
            elif "ms" in parts:
                res = orr[:, parts["ms"]]
                cols[name] = _ordered_result(kind, res, self.arg_types[parts["arg"]])
            elif kind == "sum":
                vals = oi[:, parts["isum"]] if "isum" in parts else of[:, parts["fsum"]]
                cols[name] = pa.array(vals, mask=none)
            elif kind == "average":
                with np.errstate(invalid="ignore", divide="ignore"):
                    cols[name] = pa.array(of[:, parts["fsum"]] / valid, mask=none)
            else:  # variance, stddev
                s, sq = of[:, parts["fsum"]], of[:, parts["fsq"]]
                with np.errstate(invalid="ignore", divide="ignore"):
                    var = np.maximum((sq - s * s / valid) / (valid - 1), 0.0)
                cols[name] = pa.array(var if kind == "variance" else np.sqrt(var), mask=_mask(valid < 2))
        return cols

    def snapshot(self) -> dict:
        if not self._typed:
            return {"typed": False}
        km = len(self.ms_slots)
        multisets = None
        if km:
            flat, offsets = _flatten_multisets(self.ms, self.ms_len)
            multisets = pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), pa.array(flat, pa.float64()))
        return {
            "typed": True,
            "types": self.layout_types,
            "arrays": {
                k: getattr(self, k).copy()
                for k in (
                    "st",
                    "g_int",
                    "g_flt",
                    "g_cnt",
                    "held",
                    "held_flag",
                    "ms_len",
                    "o_valid",
                    "o_start",
                    "o_int",
                    "o_flt",
                    "o_cnt",
                    "o_res",
                    "q_time",
                    "q_gid",
                    "q_int",
                    "q_flt",
                    "q_mv",
                )
            },  # fmt: skip
            "multisets": multisets,
        }

    def _restore_arrays(self, state: dict) -> bool:
        """Lay out the slots and put back the saved arrays; False when the state was taken before any data."""
        if not state["typed"]:
            return False
        self._layout(state["types"])
        for k, v in state["arrays"].items():
            setattr(self, k, v.copy())
        return True

    def restore(self, state: dict) -> None:
        if not self._restore_arrays(state):
            return
        self.ms = _empty_multisets()
        multisets = state["multisets"]
        if multisets is not None:
            offsets = multisets.offsets.to_numpy().astype(np.int64)
            flat = multisets.values.to_numpy(zero_copy_only=False).astype(np.float64)
            _load_multisets(self.ms, flat, offsets)


def _mask(missing: np.ndarray) -> np.ndarray | None:
    """A null mask for ``pa.array``, or None when nothing is missing (no bitmap to build)."""
    return missing if missing.any() else None


def _ordered_result(kind: str, res: np.ndarray, t: pa.DataType) -> pa.Array:
    missing = np.isnan(res)
    if kind == "count_distinct":
        return pa.array(res.astype(np.int64), pa.int64())
    if kind == "percentile_cont" and not _orderable_as_int(t):
        return pa.array(res, mask=missing)
    if pa.types.is_integer(t) or _orderable_as_int(t):
        ints = np.where(missing, 0, res).astype(np.int64)
        arr = pa.array(ints, mask=missing)
        if _orderable_as_int(t):
            arr = arr.cast(pa.int64()).view(t) if t.bit_width == 64 else arr.cast(pa.int32()).view(t)
            return arr
        return arr.cast(t)
    if pa.types.is_boolean(t):
        return pa.array(np.where(missing, 0, res).astype(bool), mask=missing)
    return pa.array(res, mask=missing).cast(t)


class PythonEngine(_Engine):
    """The same algorithm over Python state objects: any aggregate, one event at a time."""

    def __init__(self, fns, args, mode: int, window_len):
        self.fns, self.args, self.mode, self.window_len = fns, args, mode, int(window_len or 0)
        self.states: dict[int, list] = {}
        self.counts: dict[int, int] = {}
        self.held: dict[int, None] = {}
        self.open: dict[int, tuple[int, tuple]] = {}
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
        for s, v in zip(states, values, strict=True):
            (s.add if sign > 0 else s.remove)(start, v)
        self.counts[g] += sign
        self.held[g] = None

    def _finalize(self, out):
        cur = self.cur
        for g in self.held:
            n = self.counts[g]
            result = tuple(s.result() for s in self.states[g]) if n > 0 else None
            if self.mode == MODE_WINDOW:
                if result is not None:
                    out.append((cur, cur + self.window_len, g, result))
                del self.states[g]
                continue
            prev = self.open.get(g)
            if prev is not None and result is not None and prev[1] == result:
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
        while True:
            if self.mode == MODE_FIFO and self.fifo:
                e = self.fifo[0][0]
            elif self.mode == MODE_HEAP and self.queue:
                e = self.queue[0][0]
            else:
                return
            if e > t or (not inclusive and e >= t):
                return
            if e != self.cur:
                self._finalize(out)
                self.cur = e
            _, _, g, start, values = self.fifo.popleft() if self.mode == MODE_FIFO else heapq.heappop(self.queue)
            self._apply(g, -1, start, values)

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
                self._finalize(out)
                self.cur = t
            if o < t:
                self._apply(g, -1, o, values)
            else:
                self._apply(g, 1, t, values)
                if o != INFINITY and self.mode in (MODE_FIFO, MODE_HEAP):
                    self.seq += 1
                    entry = (o, self.seq, g, t, values)
                    self.fifo.append(entry) if self.mode == MODE_FIFO else heapq.heappush(self.queue, entry)
        self._pop_until(upto, False, out)
        if self.cur < upto:
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


# -- the operator ----------------------------------------------------------------------------------
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
        self.engine: _Engine = (CompiledEngine if use_compiled else PythonEngine)(
            fns, self.args, self.mode, self.window_len
        )
        self.keys: KeyIndex | None = None
        self.out = OutputBuffer(self)

    def _linear_user_aggregate(self, name: str, fn: AggregateFunction) -> tuple[str, AggregateFunction]:
        """A user aggregate that is a running sum becomes ``sum`` of its compiled contribution."""
        if fn.kind != "udf":
            return name, fn
        form = fn.udf.linear_form()
        if form is None:
            return name, fn
        initial, contribution, result = form
        self.user_results[name] = (initial, result)
        return name, AggregateFunction("sum", contribution)

    def _finish_user_results(self, cols: dict[str, pa.Array]) -> dict[str, pa.Array]:
        for name, (initial, result) in self.user_results.items():
            state = pc.add(cols[name].fill_null(0), initial)
            if result is not None:
                state = to_arrow_column(Evaluator({"__state": state}, len(state)).eval(result), len(state))
            cols[name] = state
        return cols

    def _static_type(self, fn: AggregateFunction, arg: ArgumentColumn):
        if fn.kind == "count":
            return pa.int64()
        if self.schema is None:
            return None
        if isinstance(fn.arg, str):
            return self.schema.field(fn.arg).type
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
        return f"{VARIANTS[self.mode]}, {engine}; {keyed}{aggs}"

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
        gids = self._gids(batch) if len(batch) else np.zeros(0, np.int64)
        got = self.engine.run(batch, gids, upto)
        if got is None:
            return
        sync, other, gid, cols = got
        if self.user_results:
            cols = self._finish_user_results(cols)
        key = hsh = None
        if self.keys is not None and self.key_fields:
            cols = dict(zip(self.key_fields, self.keys.key_columns(gid), strict=True)) | cols
        elif self.keys is not None:
            key, hsh = self.keys.key_struct(gid), self.keys.hashes(gid)
        self.out.add(EventBatch(sync, other, cols, key=key, hash=hsh))

    def on_batch(self, batch: EventBatch) -> None:
        batch = batch.compact()
        if len(batch):
            self._run(batch, np.iinfo(np.int64).min)

    def on_punctuation(self, time: int) -> None:
        self._run(_EMPTY, time)
        self.out.flush()
        self.emit_punctuation(time)

    def on_flush(self) -> None:
        self.out.flush(punctuated=False)
        self.emit_flush()

    def on_completed(self) -> None:
        self._run(_EMPTY, INFINITY)
        self.out.flush()
        self.emit_completed()

    def snapshot(self) -> dict:
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


_EMPTY = EventBatch(np.empty(0, np.int64), np.empty(0, np.int64), {})
