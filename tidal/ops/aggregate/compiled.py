"""The compiled engine's shared base: slot layout, argument contributions, result columns and checkpoints.

The variants (``start_edge``, ``fifo``, ``heap``, ``window``) differ in their endpoint queue
and in the sweep kernel compiled for them; the fused window engine reuses the layout and the
result columns with its own kernels.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from ...core.batch import EventBatch
from ...core.errors import TidalError
from .base import (
    INF_NEG,
    MODE_FIFO,
    MODE_HEAP,
    ArgumentColumn,
    ArgumentValues,
    _Engine,
    _mask,
    _numeric,
    _orderable_as_int,
    float_keyed,
    key_floats,
)
from .functions import LINEAR, ORDERED, AggregateFunction, SumOverflowError
from .kernels import (
    CUR,
    NHELD,
    NOUT,
    QSIZE,
    VARIANCE,
    _flatten_multisets,
)
from .state_kernels import _add_multisets, _empty_multisets, _load_multisets, combine_infinities

_ONE_EACH = np.zeros(0, np.int64)  # the sweep's weights when each row is one event


def _check_int_sum(name: str, fn: AggregateFunction, wrapped: np.ndarray, approx: np.ndarray) -> None:
    """The exact sum is ``wrapped + k * 2**64`` (int64 arithmetic wraps) and near ``approx`` (a float
    sum, off by far less than 2**63): ``k`` is 0 unless the sum overflowed BIGINT."""
    far = np.abs(approx - wrapped.astype(np.float64)) > 2.0**63
    if far.any():
        i = int(np.flatnonzero(far)[0])
        internal = not isinstance(fn.arg, str) or fn.arg.startswith("__")  # a SQL query's own column
        what = "SUM of an integer column" if internal else fn.describe()
        raise SumOverflowError(
            f"{what}: the sum (about {approx[i]:.6g}) is out of BIGINT's range; "
            "integer sums beyond 64 bits (DuckDB's HUGEINT) are not supported"
        )


def exact_int_average(wrapped: np.ndarray, approx: np.ndarray, count: np.ndarray) -> np.ndarray:
    """Integer averages from exact sums: ``wrapped`` (int64 sums, wrapping) plus the multiple of
    2**64 that ``approx`` (the float sums) says they wrapped by, divided by ``count`` (0: NaN, masked
    by the caller). Where a sum needs more than 53 bits the quotient is Python's correctly rounded
    ``int / int`` (as DuckDB divides its HUGEINT sum); elsewhere one numpy division, exact already."""
    out = np.full(len(wrapped), np.nan)
    has = count > 0
    out[has] = wrapped[has].astype(np.float64) / count[has]
    wraps = np.rint((approx - wrapped.astype(np.float64)) / 2.0**64)
    for i in np.flatnonzero(has & ((np.abs(wrapped) >= 2**53) | (wraps != 0))):
        out[i] = (int(wrapped[i]) + int(wraps[i]) * 2**64) / int(count[i])
    return out


def with_infinities(name: str, fn: AggregateFunction, finite, packed, valid) -> np.ndarray:
    """Float sums where values leave from the sum of the finite values alive and the counts of +inf and
    -inf alive (``packed``: +inf counts 1, -inf ``INF_NEG``; ``valid``: the values alive): NaN with both
    infinities, else the infinity alive, else the finite sum (NaN itself never enters: the engine skips it
    as NULL; SQL counts it apart, as an integer sum). A finite sum that passed DOUBLE's range cannot be
    undone by subtracting exactly: an error, never a stale infinity."""
    out, status = combine_infinities(finite, packed, valid, INF_NEG)
    if status == 2:
        raise SumOverflowError(f"{fn.describe()}: 2**32 values or more alive in one group; not supported")
    if status == 1:
        internal = not isinstance(fn.arg, str) or fn.arg.startswith("__")  # a SQL query's own column
        what = "SUM/AVG of a DOUBLE column" if internal else f"{name}={fn.describe()}"
        raise SumOverflowError(
            f"{what}: the running sum of the values alive passed DOUBLE's range (about 1.8e308) while "
            "values leave the snapshot (sliding windows, durations); not supported: scale the values down"
        )
    return out


def shifted_variance(dev: np.ndarray, dev2: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Sample variances from sums of ``d = x - K`` and ``d * d`` over ``n`` values (``K`` any pivot near
    the values, so nothing large cancels): ``(sum d² - (sum d)² / n) / (n - 1)``, never below 0; where the
    squares overflow (``sum d²`` is inf, ``sum d`` finite: finite values past float64's range) inf, as DuckDB's."""
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        var = np.maximum((dev2 - dev * dev / n) / (n - 1), 0.0)
        return np.where(np.isposinf(dev2) & np.isfinite(dev) & (n > 1), np.inf, var)


class CompiledEngine(_Engine):
    """Numeric built-ins: running sums and sorted multisets in numba kernels (a variant subclass gives the
    sweep kernel and its endpoint queue's upkeep)."""

    kernel = None  # the variant's sweep (kernels.make_sweep)
    slices_compensated = False  # (fused hopping windows: slices sum with a compensation slot)

    @property
    def values_leave(self) -> bool:
        """Whether events leave a group's running sums by subtraction (endpoint queues; hopping slices)."""
        return getattr(self, "mode", None) in (MODE_FIFO, MODE_HEAP)

    def __init__(self, fns: list[tuple[str, AggregateFunction]], args: list[ArgumentColumn], window_len):
        self.fns, self.args, self.window_len = fns, args, int(window_len or 0)
        # slots: int sums (valid counts, integer sums) and float sums (float sums; variance's shifted sums of
        # deviations and squared deviations from a pivot, see kernels.make_sweep), shared by aggregates
        self.int_slots: list[tuple[str, int]] = []
        self.flt_slots: list[tuple[str, int]] = []
        self.ms_slots: list[tuple[int, int, float]] = []  # (arg index, kind code, param)
        self.ms_valid: list[int] = []  # per multiset: the int slot saying which events count
        self.plan = []
        self.arg_types: dict[int, pa.DataType] = {}
        self._typed = False
        self.st = np.zeros(5, np.int64)
        self.st[CUR] = np.iinfo(np.int64).min

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
        self.finite_args: set[int] = set()  # float arguments summed as finite part + infinity counts
        first_of: dict[str, int] = {}
        for (name, fn), a, t in zip(self.fns, range(len(self.args)), types, strict=True):
            if fn.kind == "count":
                self.plan.append((name, fn, None))
                continue
            if isinstance(fn.arg, str):  # aggregates of the same field share its sums (Average = Sum + Count)
                a = first_of.setdefault(fn.arg, a)
            self.arg_types[a] = t
            valid = self._slot(self.int_slots, ("valid", a))
            # where values leave (endpoint queues), a variance reads the multiset of alive values
            leaves = getattr(self, "mode", None) in (MODE_FIFO, MODE_HEAP) and fn.kind in ("variance", "stddev")
            if fn.kind in ORDERED or leaves:
                self.ms_slots.append((a, VARIANCE if leaves else ORDERED[fn.kind], float(fn.param or 0.0)))
                self.ms_valid.append(valid)
                self.plan.append((name, fn, {"ms": len(self.ms_slots) - 1, "valid": valid, "arg": a}))
                continue
            parts = {"valid": valid}
            # an integer AVG divides the exact sum too (DuckDB's HUGEINT sum): floats lose the low digits past 2**53
            if fn.kind in ("sum", "average") and (pa.types.is_integer(t) or pa.types.is_boolean(t)):
                parts["isum"] = self._slot(self.int_slots, ("value", a))
                # the same sum in floats: an int64 sum that wrapped is 2**64 away from it (never silently wrong)
                parts["fsum"] = self._slot(self.flt_slots, ("value", a))
            elif fn.kind in ("sum", "average"):
                parts["fsum"] = self._slot(self.flt_slots, ("value", a))
                if self.values_leave and pa.types.is_floating(t):
                    # an infinity would make the running sum NaN when it leaves (inf - inf): the float slot
                    # sums the finite values, int slots count the infinities alive (see with_infinities)
                    parts["inf"] = self._slot(self.int_slots, ("inf", a))
                    self.finite_args.add(a)
                    if self.slices_compensated:  # what a slice's sum rounded away, slid beside it
                        parts["fcomp"] = self._slot(self.flt_slots, ("comp", a))
            if fn.kind in ("variance", "stddev"):  # sums of x - K and (x - K)**2, K the group's pivot
                parts["dev"] = self._slot(self.flt_slots, ("dev", a))
                parts["dev2"] = self._slot(self.flt_slots, ("dev2", a))
            self.plan.append((name, fn, parts))
        ki, kf, km = len(self.int_slots), len(self.flt_slots), len(self.ms_slots)
        pivoted = list(dict.fromkeys(a for what, a in self.flt_slots if what in ("dev", "dev2")))
        self.f_piv = np.array([pivoted.index(a) if w in ("dev", "dev2") else -1 for w, a in self.flt_slots], np.int64)
        self.f_sq = np.array([w == "dev2" for w, _ in self.flt_slots], np.bool_)
        self.p_valid = np.array([self.int_slots.index(("valid", a)) for a in pivoted], np.int64)
        self.p_src = np.array([self.flt_slots.index(("dev", a)) for a in pivoted], np.int64)
        self.g_piv = np.zeros((0, len(pivoted)), np.float64)  # per group and pivoted argument (NaN: none)
        self.m_kind = np.array([k for _, k, _ in self.ms_slots], np.int64)
        self.m_param = np.array([p for _, _, p in self.ms_slots], np.float64)
        self.m_valid = np.array(self.ms_valid, np.int64)
        self.m_float = np.array([float_keyed(self.arg_types[a]) for a, _, _ in self.ms_slots], np.bool_)
        self.g_int = np.zeros((0, ki), np.int64)
        self.g_flt = np.zeros((0, 3 * kf), np.float64)  # running sums, their compensations, what those rounded
        self.g_cnt = np.zeros(0, np.int64)
        self.held = np.zeros(0, np.int64)
        self.held_flag = np.zeros(0, np.bool_)
        self.ms, self.md = _empty_multisets(), _empty_multisets()
        self.ms_len = np.zeros(0, np.int64)
        self.ms_sorted = np.zeros(0, np.int64)
        self.md_len = np.zeros(0, np.int64)
        self.o_valid = np.zeros(0, np.bool_)
        self.o_start = np.zeros(0, np.int64)
        self.o_int = np.zeros((0, ki), np.int64)
        self.o_flt = np.zeros((0, kf), np.float64)
        self.o_cnt = np.zeros(0, np.int64)
        self.o_res = np.zeros((0, km), np.int64)
        self.q_time = np.zeros(0, np.int64)
        self.q_gid = np.zeros(0, np.int64)
        self.q_int = np.zeros((0, ki), np.int64)
        self.q_flt = np.zeros((0, kf), np.float64)
        self.q_mv = np.zeros((0, km), np.int64)
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
        self.g_piv = grow(self.g_piv, np.nan)
        self.held, self.held_flag = grow(self.held), grow(self.held_flag)
        self.o_valid, self.o_start, self.o_int = grow(self.o_valid), grow(self.o_start), grow(self.o_int)
        self.o_flt, self.o_cnt, self.o_res = grow(self.o_flt), grow(self.o_cnt), grow(self.o_res)
        km = len(self.ms_slots)
        for name in ("ms_len", "ms_sorted", "md_len"):
            per_group = getattr(self, name).reshape(-1, km) if km else np.zeros((old, 0), np.int64)
            setattr(self, name, grow(per_group).reshape(-1))
        if km:
            _add_multisets(self.ms, (new - old) * km)
            _add_multisets(self.md, (new - old) * km)

    def _prepare_queue(self, extra: int) -> None:
        """Room for ``extra`` more queued ends (variants without an endpoint queue have none to make)."""

    def _grow_queue(self, need: int) -> None:
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
        vals = ArgumentValues(self.args, self.arg_types, batch)
        ic = np.zeros((n, len(self.int_slots)), np.int64)
        fc = np.zeros((n, len(self.flt_slots)), np.float64)
        mv = np.zeros((n, len(self.ms_slots)), np.int64)
        for j, (what, a) in enumerate(self.int_slots):
            if what == "valid":
                ok = vals.valid(a)
                ic[:, j] = 1 if ok is None else ok
            elif what == "inf":  # (zeros already where the batch holds no infinity)
                inf = vals.infinities(a)
                if inf is not None:
                    ic[:, j] = inf
            else:
                ic[:, j] = vals.ints(a)
        for j, (what, a) in enumerate(self.flt_slots):
            if what == "value" and a in self.finite_args:
                fc[:, j] = vals.finite_floats(a)
            else:
                fc[:, j] = vals.summed_floats(a, False)  # shifted slots: the kernel shifts (and squares) the value
        for j, (a, _, _) in enumerate(self.ms_slots):
            mv[:, j] = vals.order_keys(a)
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
        if n:
            ic, fc, mv = self._contributions(batch, n)
        else:
            ic = np.zeros((0, len(self.int_slots)), np.int64)
            fc = np.zeros((0, len(self.flt_slots)), np.float64)
            mv = np.zeros((0, len(self.ms_slots)), np.int64)
        return self.sweep(batch.sync, batch.other, gids, ic, fc, mv, _ONE_EACH, upto)

    def sweep(self, sync, other, gids, ic, fc, mv, wt, upto):
        """Run the variant's sweep over rows given by their contributions (``wt``: how many events each
        row stands for, or empty: one each); the slots must be laid out."""
        n = len(sync)
        self._grow_groups(int(gids.max()) + 1 if n else 0)
        self._prepare_queue(n)
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
            np.empty((cap, km), np.int64),
        )
        self.st[NOUT] = 0
        # multiset values staged between flushes, per multiset: an addition or removal per event, a removal
        # per end queued before or during this call
        room = (2 * n + int(self.st[QSIZE]) + 1) * km
        stage = (np.empty((2, room), np.int64), np.empty((2, room), np.int64), np.zeros(3, np.int64))
        self.kernel(
            sync, other, gids, ic, fc, mv, wt, upto, self.window_len,
            self.st, self.held, self.held_flag, self.g_int, self.g_flt, self.g_cnt,
            self.ms, self.ms_len, self.ms_sorted, self.md, self.md_len,
            self.m_kind, self.m_param, self.m_valid, self.m_float,
            self.q_time, self.q_gid, self.q_int, self.q_flt, self.q_mv,
            self.o_valid, self.o_start, self.o_int, self.o_flt, self.o_cnt, self.o_res, *out, *stage,
            self.f_piv, self.f_sq, self.p_valid, self.p_src, self.g_piv,
        )  # fmt: skip
        if stage[2][2]:  # (kernels._rebuild_sums)
            raise SumOverflowError(
                "SUM/AVG of floats where values leave as start edges and later end edges (such as a GROUP BY over "
                "retractions): values of three or more magnitudes alive together left a rounding residue that the "
                "values queued cannot rebuild; not supported"
            )
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
            elif "ms" in parts and kind in ("variance", "stddev"):
                var = orr[:, parts["ms"]].view(np.float64)
                cols[name] = pa.array(var if kind == "variance" else np.sqrt(var), mask=_mask(valid < 2))
            elif "ms" in parts:
                res = orr[:, parts["ms"]]
                cols[name] = _ordered_result(kind, res, valid == 0, self.arg_types[parts["arg"]])
            elif kind == "sum":
                vals = oi[:, parts["isum"]] if "isum" in parts else of[:, parts["fsum"]]
                if "fcomp" in parts:
                    vals = vals + of[:, parts["fcomp"]]
                if "isum" in parts:
                    _check_int_sum(name, fn, vals, of[:, parts["fsum"]])
                if "inf" in parts:
                    vals = with_infinities(name, fn, vals, oi[:, parts["inf"]], valid)
                cols[name] = pa.array(vals, mask=none)
            elif kind == "average" and "isum" in parts:
                cols[name] = pa.array(exact_int_average(oi[:, parts["isum"]], of[:, parts["fsum"]], valid), mask=none)
            elif kind == "average":
                total = of[:, parts["fsum"]]
                if "fcomp" in parts:
                    total = total + of[:, parts["fcomp"]]
                if "inf" in parts:
                    total = with_infinities(name, fn, total, oi[:, parts["inf"]], valid)
                with np.errstate(invalid="ignore", divide="ignore"):
                    cols[name] = pa.array(total / valid, mask=none)
            else:  # variance, stddev
                var = shifted_variance(of[:, parts["dev"]], of[:, parts["dev2"]], valid)
                cols[name] = pa.array(var if kind == "variance" else np.sqrt(var), mask=_mask(valid < 2))
        return cols

    def snapshot(self) -> dict:
        if not self._typed:
            return {"typed": False}
        km = len(self.ms_slots)
        multisets = None
        if km:
            # flattening reads (normalizes) every multiset: what is saved is sorted, with nothing pending
            flat, offsets = _flatten_multisets(self.ms, self.ms_len, self.ms_sorted, self.md, self.md_len)
            multisets = pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), pa.array(flat, pa.int64()))
        return {
            "typed": True,
            "shifted": True,  # variance state as shifted sums (older checkpoints kept sums of squares)
            "inf_counts": True,  # leaving float sums as finite part + infinity counts (older: one float sum)
            "residue": True,  # g_flt: sums, compensations, what those rounded (older: no third part)
            "types": self.layout_types,
            "arrays": {
                k: getattr(self, k).copy()
                for k in (
                    "st",
                    "g_piv",
                    "g_int",
                    "g_flt",
                    "g_cnt",
                    "held",
                    "held_flag",
                    "ms_len",
                    "ms_sorted",
                    "md_len",
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
        if "shifted" not in state and any(fn.kind in ("variance", "stddev") for _, fn, _ in self.plan):
            raise TidalError(
                "checkpoint from an older tidal: its variance/stddev state (sums of values and squares) cannot "
                "be continued exactly; not supported: start the query again from its input"
            )
        if "inf_counts" not in state and self.finite_args:
            raise TidalError(
                "checkpoint from an older tidal: its SUM/AVG state over float values that leave the snapshot (one "
                "running sum, which an infinity leaving turned NaN) cannot be continued exactly; not supported: "
                "start the query again from its input"
            )
        if "residue" not in state and self.values_leave and len(self.flt_slots) and _has_sums(state):
            raise TidalError(
                "checkpoint from an older tidal: its running float sums where values leave the snapshot (no record "
                "of what their compensation rounded away, so a residue of values that left could stay) cannot be "
                "continued exactly; not supported: start the query again from its input"
            )
        for k, v in state["arrays"].items():
            setattr(self, k, v.copy())
        if "g_piv" not in state["arrays"]:  # (no pivoted argument: none to restore)
            self.g_piv = np.full((len(self.g_cnt), len(self.p_valid)), np.nan)
        kf = len(self.flt_slots)
        for name, parts in (("g_flt", 3), ("tot_flt", 3)):  # saved before compensations (or their residue): none
            sums = getattr(self, name, None)
            if sums is not None and kf and sums.shape[1] < parts * kf:
                pad = np.zeros((len(sums), parts * kf - sums.shape[1]), np.float64)
                setattr(self, name, np.concatenate([sums, pad], axis=1))
        return True

    def restore(self, state: dict) -> None:
        if not self._restore_arrays(state):
            return
        self.ms, self.md = _empty_multisets(), _empty_multisets()
        multisets = state["multisets"]
        if multisets is not None:
            if not pa.types.is_int64(multisets.type.value_type):
                raise TidalError("checkpoint from an older tidal: its MIN/MAX/COUNT(DISTINCT) state cannot be read")
            offsets = multisets.offsets.to_numpy().astype(np.int64)
            flat = multisets.values.to_numpy(zero_copy_only=False).astype(np.int64)
            _load_multisets(self.ms, flat, offsets)
            _add_multisets(self.md, len(offsets) - 1)


def _has_sums(state: dict) -> bool:
    """Whether a checkpoint holds running float sums (a group's or a hopping window's sliding totals)."""
    arrays = state["arrays"]
    return any(k in arrays and arrays[k].shape[1] > 0 for k in ("g_flt", "tot_flt"))


def _ordered_result(kind: str, res: np.ndarray, missing: np.ndarray, t: pa.DataType) -> pa.Array:
    """Result column of an order aggregate from the kernel's int64 results (see ``kernels._ms_result``)."""
    if kind == "count_distinct":
        return pa.array(res, pa.int64())
    if kind == "percentile_cont":
        values = res.view(np.float64)
        if not _orderable_as_int(t):
            return pa.array(values, mask=_mask(missing))
        res = np.where(missing, 0.0, values).astype(np.int64)
    elif float_keyed(t):
        return pa.array(key_floats(np.where(missing, 0, res)), mask=_mask(missing)).cast(t)
    arr = pa.array(np.where(missing, 0, res), mask=_mask(missing))
    if _orderable_as_int(t):
        return arr.view(t) if t.bit_width == 64 else arr.cast(pa.int32()).view(t)
    if pa.types.is_boolean(t):
        return arr.cast(pa.bool_())
    return arr.cast(t)
