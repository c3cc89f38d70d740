"""A window and the snapshot aggregate after it, fused: windows computed and aggregated in one pass.

Semantics: the package docstring's (those of the window then the aggregate).

Physically: one numba loop per batch gives each event its result row, one per (window, group),
numbered in order of first event (a division only when the window changes: inputs arrive in
sync-time order), counting as it goes; each other running sum is then one tight scatter-add
per column, and closed rows are the output columns (wrapped as Arrow without copies). This is
the tumbling-window variant of Trill's aggregate (no endpoint queue) without the window
operator's per-event lifetime rewrite. Hopping windows first aggregate per hop slice that way,
then slide: at each grid point the slice that fell out of the window is subtracted from
per-group totals and the new slice added (linear aggregates are invertible), and the groups
with a non-zero total are emitted (a variance's slices are never subtracted: each group's live
slices are merged at each grid point, see ``slide_hops``; a float SUM/AVG slides the sum of its finite
values, each slice's with Neumaier's compensation beside it, and counts its infinities apart, see
``compiled.with_infinities``). Linear aggregates only (count,
count_not_null, sum, average, variance, stddev, user-defined running sums); anything else runs
unfused.
"""

from __future__ import annotations

import numpy as np

from ...core.batch import EventBatch
from ...core.time import EARLIEST, INFINITY, LATEST, MIN_TIME, align_down
from ..base import check_time_range
from .base import ArgumentValues
from .compiled import CompiledEngine
from .functions import LINEAR
from .fused_kernels import (
    CUR,
    FULL,
    HAS_CUR,
    NACTIVE,
    NCLOSED,
    NHELD,
    NROWS,
    QADD,
    QHEAD,
    QTAIL,
    SOUT,
    add_compensated,
    add_float,
    add_int,
    add_shifted,
    slide_hops,
    window_rows,
)
from .operator import SnapshotAggregateOp

# (the window node below a fused aggregate in explain() is not run for it: its input feeds the aggregate)
VARIANT = "fused tumbling window (this pass also does the window below; no endpoint queue)"
SLIDING = "fused hopping window (this pass also does the window below: per-hop partial sums, slid)"


class FusedWindowEngine(CompiledEngine):
    """The compiled engine's slot layout and result columns, run by :func:`window_rows`: tumbling
    windows (``size <= hop``), each closed row a result."""

    def __init__(self, fns, args, size: int, hop: int, offset: int):
        super().__init__(fns, args, window_len=size)
        self.size, self.hop, self.offset = int(size), int(hop), int(offset)
        # hopping windows of k hops slide over per-hop slices; others (k = 1) are the slices themselves
        self.k = self.size // self.hop if self.size > self.hop else 1
        self.slice_len = min(self.size, self.hop)
        self.st = np.zeros(5, np.int64)
        self.st2 = np.zeros(9, np.int64)
        self.group_count: int | None = None  # groups known to the operator's key index (else: from the ids)

    @property
    def values_leave(self) -> bool:
        """Hopping windows subtract the slices that slid out; tumbling ones only add."""
        return self.k > 1

    @property
    def slices_compensated(self) -> bool:
        """A hopping window's slice sums carry Neumaier's compensation (a ``comp`` slot beside each): a large
        value in a slice would otherwise round the small ones away before the slice is slid over."""
        return self.k > 1

    @staticmethod
    def fusable(fns) -> bool:
        return all(fn.kind == "count" or fn.kind in LINEAR for _, fn in fns)

    def _layout(self, types) -> None:
        super()._layout(types)
        self.row_of = np.zeros(0, np.int64)
        self.held = np.zeros(0, np.int64)
        # work buffers, kept between batches: result rows (the open window's first) and event rows
        self.buf_w = np.zeros(0, np.int64)
        self.buf_gid = np.zeros(0, np.int64)
        self.buf_cnt = np.zeros(0, np.int64)
        self.buf_int = np.zeros((len(self.int_slots), 0), np.int64)
        self.buf_flt = np.zeros((len(self.flt_slots), 0), np.float64)
        self.buf_piv = np.zeros((len(self.p_valid), 0), np.float64)  # each row's pivot per variance argument
        self.ev_row = np.zeros(0, np.int64)
        # sliding (k > 1): queued slices, per-group totals over the last k, the groups with a non-zero total
        ki, kf = len(self.int_slots), len(self.flt_slots)
        self.q_start, self.q_gid, self.q_cnt = (np.zeros(0, np.int64) for _ in range(3))
        self.q_int, self.q_flt = np.zeros((ki, 0), np.int64), np.zeros((kf, 0), np.float64)
        self.q_piv = np.zeros((len(self.p_valid), 0), np.float64)
        self.p_dev = np.array([self.flt_slots.index(("dev", a)) for w, a in self.flt_slots if w == "dev"], np.int64)
        self.p_dev2 = np.array([self.flt_slots.index(("dev2", a)) for w, a in self.flt_slots if w == "dev"], np.int64)
        self.acc = np.zeros((0, len(self.p_valid), 4))  # slide_hops' per-group merges (scratch)
        self.tot_cnt = np.zeros(0, np.int64)
        self.tot_int = np.zeros((0, ki), np.int64)
        self.tot_flt = np.zeros((0, 3 * kf), np.float64)  # totals, compensations, what those rounded away
        self.active, self.pos = np.zeros(0, np.int64), np.zeros(0, np.int64)

    def _grow_groups(self, count: int) -> None:
        old = len(self.row_of)
        if count <= old:
            return
        new = max(count, 2 * old, 64)
        self.row_of = np.concatenate([self.row_of, np.full(new - old, -1, np.int64)])
        self.held = np.concatenate([self.held, np.zeros(new - old, np.int64)])
        self._grow_totals(old, new)

    def _grow_totals(self, old: int, new: int) -> None:
        """Per-group totals (hopping windows only)."""

    def _room(self, rows: int, events: int) -> None:
        if len(self.ev_row) < events:
            self.ev_row = np.empty(max(events, 2 * len(self.ev_row)), np.int64)
        old = len(self.buf_w)
        if old >= rows:
            return
        new = max(rows, 2 * old, 1024)

        def grow(a):
            out = np.empty(a.shape[:-1] + (new,), a.dtype)
            out[..., :old] = a
            return out

        self.buf_w, self.buf_gid, self.buf_cnt = grow(self.buf_w), grow(self.buf_gid), grow(self.buf_cnt)
        self.buf_int, self.buf_flt, self.buf_piv = grow(self.buf_int), grow(self.buf_flt), grow(self.buf_piv)

    def _columns(self, batch: EventBatch):
        """Per int slot: an int64 column to add, or None (one per event: a valid count without nulls);
        per float slot: a float64 column to add."""
        vals = ArgumentValues(self.args, self.arg_types, batch)
        ints = []
        for what, a in self.int_slots:
            if what == "valid":
                ok = vals.valid(a)
                ints.append(None if ok is None else ok.astype(np.int64))
            elif what == "inf":  # packed infinity counts; False: none in this batch, nothing to add
                inf = vals.infinities(a)
                ints.append(False if inf is None else inf)
            else:
                ints.append(np.ascontiguousarray(vals.ints(a)))
        floats = []
        for what, a in self.flt_slots:
            if what in ("dev2", "comp"):  # added with its "dev" / "value" slot
                floats.append(None)
            elif what == "dev":  # raw values and which count: add_shifted shifts them
                ok = vals.valid(a)
                floats.append((vals.floats(a), np.zeros(0, np.bool_) if ok is None else ok))
            elif a in self.finite_args:  # infinities counted apart (int slots): a slice's sum is finite
                floats.append(np.ascontiguousarray(vals.finite_floats(a)))
            else:
                floats.append(np.ascontiguousarray(vals.summed_floats(a, False)))
        return ints, floats

    def run(self, batch, gids, upto):
        n = len(batch)
        if not self._layout_from(batch):
            return None
        groups = self.group_count
        if groups is None:
            groups = int(gids.max()) + 1 if n else 0
        self._grow_groups(groups)
        m = int(self.st[NHELD])
        self._room(m + n + 1, n)  # the open rows, at most one new row per event, and a spare row
        bw, bgid, bcnt, bint, bflt = self.buf_w, self.buf_gid, self.buf_cnt, self.buf_int, self.buf_flt
        spare = len(bw) - 1
        before = bcnt[:m].copy()
        ev_row = self.ev_row[:n]
        # the kernel reads ``other`` only to tell end edges (other < sync): points and start edges need no
        # other column
        other = batch.sync if batch.points or batch.starts else batch.other
        window_rows(
            batch.sync, other, gids, upto, self.hop, self.offset, self.slice_len,
            self.st, self.row_of, self.held, bw, bgid, bcnt, ev_row,
        )  # fmt: skip
        rows, closed = int(self.st[NROWS]), int(self.st[NCLOSED])
        if n:
            bint[:, m:rows] = 0  # the new rows and the spare row start empty
            bint[:, spare] = 0
            bflt[:, m:rows] = 0.0
            bflt[:, spare] = 0.0
            self.buf_piv[:, m:rows] = np.nan
            self.buf_piv[:, spare] = np.nan
            ints, floats = self._columns(batch)
            added = None
            for j, col in enumerate(ints):
                if col is False:
                    continue
                if col is not None:
                    add_int(ev_row, col, bint[j])
                    continue
                if added is None:  # events per row in this batch
                    added = bcnt[:rows].copy()
                    added[:m] -= before
                bint[j, :rows] += added
            for j, col in enumerate(floats):
                if isinstance(col, tuple):
                    a = self.flt_slots[j][1]
                    sq = self.flt_slots.index(("dev2", a))
                    p = int(self.f_piv[j])
                    add_shifted(ev_row, np.ascontiguousarray(col[0]), col[1], self.buf_piv[p], bflt[j], bflt[sq])
                elif col is not None and ("comp", self.flt_slots[j][1]) in self.flt_slots:
                    add_compensated(ev_row, col, bflt[j], bflt[self.flt_slots.index(("comp", self.flt_slots[j][1]))])
                elif col is not None:
                    add_float(ev_row, col, bflt[j])
        out = self._results(closed, upto)
        if closed:
            for a in (bw, bgid, bcnt, bint, bflt, self.buf_piv):  # the open rows move to the front
                a[..., : rows - closed] = a[..., closed:rows]
        if out is None:
            return None
        sync, gid, cnt, oi, of = out[:5]
        cols = self._finish(oi.T, of.T, cnt, None)
        return sync, sync + self.slice_len, gid, cols

    def _results(self, closed: int, upto: int):
        """(start, gid, count, int sums, float sums) of the results the closed rows make, or None."""
        return tuple(a.copy() for a in self._closed_rows(closed)) if closed else None

    def _closed_rows(self, closed: int):
        return tuple(
            a[..., :closed] for a in (self.buf_w, self.buf_gid, self.buf_cnt, self.buf_int, self.buf_flt, self.buf_piv)
        )

    def snapshot(self) -> dict:
        if not self._typed:
            return {"typed": False}
        m = int(self.st[NHELD])
        arrays = {k: getattr(self, k).copy() for k in ("st", "row_of", "held")}
        bufs = ("buf_w", "buf_gid", "buf_cnt", "buf_int", "buf_flt", "buf_piv")
        arrays |= {k: getattr(self, k)[..., :m].copy() for k in bufs}
        arrays |= {k: getattr(self, k).copy() for k in ("st2", "tot_cnt", "tot_int", "tot_flt", "active")}
        arrays |= {k: getattr(self, k).copy() for k in ("pos", "q_start", "q_gid", "q_cnt", "q_int", "q_flt", "q_piv")}
        marks = {"typed": True, "shifted": True, "inf_counts": True, "residue": True}
        return marks | {"types": self.layout_types, "arrays": arrays}

    def restore(self, state: dict) -> None:
        if self._restore_arrays(state) and "buf_piv" not in state["arrays"]:  # (saved with no pivots: none)
            npiv = len(self.p_valid)
            self.buf_piv = np.zeros((npiv, len(self.buf_w)))
            self.q_piv = np.zeros((npiv, len(self.q_start)))


class FusedHoppingEngine(FusedWindowEngine):
    """Hopping windows of ``k = size / hop`` hops: the closed rows are hop slices, queued and slid over
    by :func:`slide_hops`."""

    def _grow_totals(self, old: int, new: int) -> None:
        self.pos = np.concatenate([self.pos, np.full(new - old, -1, np.int64)])
        self.active = np.concatenate([self.active, np.zeros(new - old, np.int64)])
        self.tot_cnt = np.concatenate([self.tot_cnt, np.zeros(new - old, np.int64)])
        self.tot_int = np.concatenate([self.tot_int, np.zeros((new - old, self.tot_int.shape[1]), np.int64)])
        self.tot_flt = np.concatenate([self.tot_flt, np.zeros((new - old, self.tot_flt.shape[1]))])

    def _results(self, closed: int, upto: int):
        if closed:
            self._queue(*self._closed_rows(closed))
        progress = max(int(self.st[CUR]), upto) if self.st[HAS_CUR] else upto  # slices before it are final
        return self._slide(progress)

    def _queue(self, start, gid, cnt, oi, of, piv) -> None:
        """Append closed slices to the sliding queue (dropping the expired ones before it when short of room)."""
        st = self.st2
        head, tail, m = int(st[QHEAD]), int(st[QTAIL]), len(start)
        if tail + m > len(self.q_start):
            live = tail - head
            new = max(2 * (live + m), 1024)

            def moved(a):
                out = np.empty(a.shape[:-1] + (new,), a.dtype)
                out[..., :live] = a[..., head:tail]
                return out

            self.q_start, self.q_gid, self.q_cnt = moved(self.q_start), moved(self.q_gid), moved(self.q_cnt)
            self.q_int, self.q_flt, self.q_piv = moved(self.q_int), moved(self.q_flt), moved(self.q_piv)
            st[QHEAD], st[QADD], st[QTAIL] = 0, st[QADD] - head, live
            tail = live
        self.q_start[tail : tail + m] = start
        self.q_gid[tail : tail + m] = gid
        self.q_cnt[tail : tail + m] = cnt
        self.q_int[:, tail : tail + m] = oi
        self.q_flt[:, tail : tail + m] = of
        self.q_piv[:, tail : tail + m] = piv
        st[QTAIL] = tail + m

    def _slide(self, progress: int):
        parts = []
        cap = 2 * (int(self.st2[NACTIVE]) + int(self.st2[QTAIL] - self.st2[QADD])) + 1024
        ki, kf = len(self.int_slots), len(self.flt_slots)
        if len(self.acc) < len(self.tot_cnt):
            self.acc = np.zeros((len(self.tot_cnt), len(self.p_valid), 4))
        while True:
            out = (
                np.empty(cap, np.int64), np.empty(cap, np.int64), np.empty(cap, np.int64),
                np.empty((ki, cap), np.int64), np.empty((kf, cap), np.float64),
            )  # fmt: skip
            slide_hops(
                progress, self.hop, self.k, self.st2, self.q_start, self.q_gid, self.q_cnt, self.q_int, self.q_flt,
                self.tot_cnt, self.tot_int, self.tot_flt, self.active, self.pos, *out,
                self.f_piv, self.f_sq, self.p_valid, self.p_dev, self.p_dev2, self.q_piv, self.acc,
            )  # fmt: skip
            o = int(self.st2[SOUT])
            if o:
                parts.append(tuple(a[..., :o] for a in out))
            if not self.st2[FULL]:
                break
            cap *= 2
        if not parts:
            return None
        if len(parts) == 1:
            return parts[0]
        return tuple(np.concatenate([p[i] for p in parts], axis=-1) for i in range(5))


class FusedWindowAggregateOp(SnapshotAggregateOp):
    """``hopping_window(size, hop, offset)`` (``size <= hop``, or ``size`` a multiple of ``hop``) then the
    aggregate, as one operator."""

    name = "Aggregate"

    def __init__(self, fns, schema, props, key_fields, window: tuple[int, int, int]):
        """``props`` are the window's output properties; ``window`` is ``(size, hop, offset)``."""
        self.window = tuple(int(x) for x in window)
        super().__init__(fns, schema, props, key_fields, "window")

    def _make_engine(self, compiled: bool) -> FusedWindowEngine:
        size, hop, _ = self.window
        return (FusedHoppingEngine if size > hop else FusedWindowEngine)(self.fns, self.args, *self.window)

    @staticmethod
    def fusable(op: SnapshotAggregateOp) -> bool:
        """Whether an aggregate built for the window's output can run fused with the window."""
        if not isinstance(op.engine, CompiledEngine) or not FusedWindowEngine.fusable(op.fns):
            return False
        # a user aggregate reading the timestamp sees the window start: only the window operator knows it
        return not any("__time" in arg.node.columns() for arg in op.args if arg.node is not None)

    @property
    def variant(self) -> str:
        size, hop, offset = self.window
        what = VARIANT if size <= hop else SLIDING
        return super().variant.replace(
            "tumbling window (no endpoint queue)", f"{what}; window size {size}, hop {hop}, offset {offset}"
        )

    def _gids(self, batch: EventBatch) -> np.ndarray:
        gids = super()._gids(batch)
        self.engine.group_count = len(self.keys) if self.keys is not None else 1
        return gids

    def _frontier(self, t: int) -> int:
        if t in (INFINITY, MIN_TIME):
            return t
        return int(align_down(t, self.window[1], self.window[2]))

    def on_batch(self, batch: EventBatch) -> None:
        batch = batch.compact()
        if len(batch):  # every event's windows lie in the range of event times (what the window operator checks)
            size, hop, offset = self.window
            starts = align_down(batch.sync[[0, -1]], hop, offset)
            # the window operator's lifetimes: [floor(s), floor(s) + size), or up to floor(s + size) when
            # size is not a multiple of hop (its first instant is floor(s): the earlier windows need no time)
            lowest, highest = int(starts[0]), int(starts[1]) + size
            if hop < size and size % hop:
                highest = int(align_down(int(batch.sync[-1]) + size, hop, offset))
            if lowest < EARLIEST or highest > LATEST + 1:
                at = 0 if lowest < EARLIEST else len(batch) - 1
                check_time_range(
                    batch.slice(at, at + 1).replace(
                        sync=np.array([min(lowest, int(starts[0]))]), other=np.array([max(highest, int(starts[1]))])
                    ),
                    f"hopping_window(size {size}, hop {hop}, offset {offset})",
                )
        super().on_batch(batch)

    def on_punctuation(self, time: int) -> None:
        super().on_punctuation(self._frontier(time))
