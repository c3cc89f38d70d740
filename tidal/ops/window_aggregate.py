"""A window and the snapshot aggregate after it, fused: windows computed and aggregated in one pass.

Semantics: exactly those of ``hopping_window(size, hop, offset)`` followed by
``aggregate``/``group_aggregate``, for ``size <= hop`` (tumbling windows, or windows with gaps)
and for ``size`` a multiple of ``hop`` (hopping windows of ``k = size / hop`` hops):

* ``size <= hop``: every event starting in ``[w, w + size)`` (``w`` on the grid
  ``offset + k*hop``) belongs to window ``w``; each group with events there gets one result,
  the interval ``[w, w + size)`` carrying the aggregates over them. Events in the gap of a
  window shorter than its hop belong to no window.
* ``size = k * hop``: an event starting in hop slice ``[a, a + hop)`` lives ``[a, a + size)``,
  so at every instant of ``[p, p + hop)`` (``p`` on the grid) the alive events are those of the
  ``k`` slices starting at ``p - (k-1)*hop .. p``; each group with any gets the interval
  ``[p, p + hop)`` carrying the aggregates over them (the same snapshots as the unfused plan's
  start and end edges, as intervals).

End edges carry nothing new (a window fixes lifetimes at the start). Empty snapshots produce
nothing. Results leave once input progress passes their start: an event of a later slice, or a
punctuation (which leaves snapped down to the grid, as after the window operator).

Physically: one numba loop per batch gives each event its result row, one per (window, group),
numbered in order of first event (a division only when the window changes: inputs arrive in
sync-time order), counting as it goes; each other running sum is then one tight scatter-add
per column, and closed rows are the output columns (wrapped as Arrow without copies). This is
the tumbling-window variant of Trill's aggregate (no endpoint queue) without the window
operator's per-event lifetime rewrite. Hopping windows first aggregate per hop slice that way,
then slide: at each grid point the slice that fell out of the window is subtracted from
per-group totals and the new slice added (linear aggregates are invertible), and the groups
with a non-zero total are emitted. Linear aggregates only (count, count_not_null, sum, average,
variance, stddev, user-defined running sums); anything else runs unfused.
"""

from __future__ import annotations

import numba
import numpy as np
import pyarrow as pa

from ..core.batch import EventBatch, as_numpy
from ..core.time import INFINITY, MIN_TIME, align_down
from .aggfuncs import LINEAR
from .aggregate import CompiledEngine, SnapshotAggregateOp, _orderable_as_int

# scalar slots of the kernel's persistent state
CUR, HAS_CUR, NHELD, NCLOSED, NROWS = range(5)
# (the window node below a fused aggregate in explain() is not run for it: its input feeds the aggregate)
VARIANT = "fused tumbling window (this pass also does the window below; no endpoint queue)"
SLIDING = "fused hopping window (this pass also does the window below: per-hop partial sums, slid)"


@numba.njit(cache=True)
def window_rows(sync, other, gid, upto, hop, offset, size, st, row_of, held, out_w, out_gid, out_cnt, ev_row):
    """Give each event of one batch (sorted by sync time) its result row, then close windows before ``upto``.

    A result row is one (window, group) pair; rows are numbered in order of first event, so a
    window's rows are contiguous and a closed window is finished output. The ``NHELD`` rows of the
    open window come first (placed by the caller), and ``row_of[g]`` is group ``g``'s row in the
    open window (-1: none). ``ev_row[i]`` is event ``i``'s row, or the spare last row for events
    that belong to no window. Counts are kept here; sums are added per column afterwards.
    """
    cur = st[CUR]
    has_cur = st[HAS_CUR] != 0
    nheld = st[NHELD]
    wend = cur + hop if has_cur else cur
    o = nheld
    closed = 0
    spare = len(out_w) - 1
    n = len(sync)
    i = 0
    while True:
        if has_cur:  # the common case, kept tight: events of the open window
            inside = wend if size >= hop else cur + size
            while i < n:
                s = sync[i]
                if s >= inside or other[i] < s:
                    break
                g = gid[i]
                r = row_of[g]
                if r < 0:
                    r = o
                    o += 1
                    row_of[g] = r
                    held[nheld] = g
                    nheld += 1
                    out_w[r] = cur
                    out_gid[r] = g
                    out_cnt[r] = 0
                out_cnt[r] += 1
                ev_row[i] = r
                i += 1
        if i == n:
            break
        # event i is an end edge (its interval was counted at its start), in a gap, or of a later window
        s = sync[i]
        if other[i] < s:
            ev_row[i] = spare
            i += 1
            continue
        w = cur if has_cur and s < wend else s - (s - offset) % hop
        if s - w >= size:  # in the gap after a window shorter than its hop
            ev_row[i] = spare
            i += 1
            continue
        if nheld > 0:  # a later window closes the open one
            for h in range(nheld):
                row_of[held[h]] = -1
            nheld = 0
            closed = o
        cur = w
        wend = w + hop
        has_cur = True
    if nheld > 0 and cur < upto:  # progress passed the open window
        for h in range(nheld):
            row_of[held[h]] = -1
        nheld = 0
        closed = o
    for h in range(nheld):  # the open rows move to the front of the next call's rows
        row_of[held[h]] = h
    st[CUR] = cur
    st[HAS_CUR] = 1 if has_cur else 0
    st[NHELD] = nheld
    st[NCLOSED] = closed
    st[NROWS] = o


@numba.njit(cache=True)
def _add_int(ev_row, values, acc):
    for i in range(len(ev_row)):
        acc[ev_row[i]] += values[i]


@numba.njit(cache=True)
def _add_float(ev_row, values, acc):
    for i in range(len(ev_row)):
        acc[ev_row[i]] += values[i]


# scalar slots of the sliding kernel's persistent state
NEXT_P, HAS_P, QHEAD, QADD, QTAIL, NACTIVE, PREPARED, SOUT, FULL = range(9)


@numba.njit(cache=True)
def slide_hops(
    progress, hop, k, st, q_start, q_gid, q_cnt, q_int, q_flt, tot_cnt, tot_int, tot_flt, active, pos,
    out_p, out_gid, out_cnt, out_int, out_flt,
):  # fmt: skip
    """Hopping windows of ``k`` hops from per-hop partial sums (queued in start order).

    At each grid point ``p`` before ``progress``: the slices that no longer reach ``p`` (started
    ``k`` hops ago or more) are subtracted from the per-group totals, the slices starting at ``p``
    added, and every group with a non-zero total gets the result ``[p, p + hop)``. Grid points
    where nothing is alive are skipped. When the output is full it stops and says so (``FULL``);
    called again with more room, it goes on where it stopped.
    """
    ki = tot_int.shape[1]
    kf = tot_flt.shape[1]
    head, add, tail = st[QHEAD], st[QADD], st[QTAIL]
    nact = st[NACTIVE]
    p = st[NEXT_P]
    has_p = st[HAS_P] != 0
    prepared = st[PREPARED] != 0
    o = 0
    cap = len(out_p)
    full = False
    reach = k * hop
    while True:
        if not prepared:
            if nact == 0:  # nothing alive: the next result is at the next slice's start
                if add == tail:
                    has_p = False
                    break
                if not has_p or p < q_start[add]:
                    p = q_start[add]
                    has_p = True
            if p >= progress:
                break
            while head < add and q_start[head] + reach <= p:
                g = q_gid[head]
                tot_cnt[g] -= q_cnt[head]
                for j in range(ki):
                    tot_int[g, j] -= q_int[j, head]
                for j in range(kf):
                    tot_flt[g, j] -= q_flt[j, head]
                if tot_cnt[g] == 0:  # swap the last active group into its place
                    for j in range(kf):
                        tot_flt[g, j] = 0.0  # exactly empty, whatever rounding left
                    last = active[nact - 1]
                    active[pos[g]] = last
                    pos[last] = pos[g]
                    pos[g] = -1
                    nact -= 1
                head += 1
            while add < tail and q_start[add] <= p:
                g = q_gid[add]
                if tot_cnt[g] == 0:
                    pos[g] = nact
                    active[nact] = g
                    nact += 1
                tot_cnt[g] += q_cnt[add]
                for j in range(ki):
                    tot_int[g, j] += q_int[j, add]
                for j in range(kf):
                    tot_flt[g, j] += q_flt[j, add]
                add += 1
            prepared = True
        if o + nact > cap:
            full = True
            break
        for a in range(nact):
            g = active[a]
            out_p[o] = p
            out_gid[o] = g
            out_cnt[o] = tot_cnt[g]
            for j in range(ki):
                out_int[j, o] = tot_int[g, j]
            for j in range(kf):
                out_flt[j, o] = tot_flt[g, j]
            o += 1
        prepared = False
        p += hop
    st[QHEAD], st[QADD], st[NACTIVE] = head, add, nact
    st[NEXT_P] = p
    st[HAS_P] = 1 if has_p else 0
    st[PREPARED] = 1 if prepared else 0
    st[SOUT] = o
    st[FULL] = 1 if full else 0


class FusedWindowEngine(CompiledEngine):
    """The compiled engine's slot layout and result columns, run by :func:`window_rows` (then
    :func:`slide_hops` for hopping windows)."""

    def __init__(self, fns, args, size: int, hop: int, offset: int):
        super().__init__(fns, args, mode=-1, window_len=size)
        self.size, self.hop, self.offset = int(size), int(hop), int(offset)
        # hopping windows of k hops slide over per-hop slices; others (k = 1) are the slices themselves
        self.k = self.size // self.hop if self.size > self.hop else 1
        self.slice_len = min(self.size, self.hop)
        self.st = np.zeros(5, np.int64)
        self.st2 = np.zeros(9, np.int64)
        self.group_count: int | None = None  # groups known to the operator's key index (else: from the ids)

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
        self.ev_row = np.zeros(0, np.int64)
        # sliding (k > 1): queued slices, per-group totals over the last k, the groups with a non-zero total
        ki, kf = len(self.int_slots), len(self.flt_slots)
        self.q_start, self.q_gid, self.q_cnt = (np.zeros(0, np.int64) for _ in range(3))
        self.q_int, self.q_flt = np.zeros((ki, 0), np.int64), np.zeros((kf, 0), np.float64)
        self.tot_cnt = np.zeros(0, np.int64)
        self.tot_int, self.tot_flt = np.zeros((0, ki), np.int64), np.zeros((0, kf), np.float64)
        self.active, self.pos = np.zeros(0, np.int64), np.zeros(0, np.int64)

    def _grow_groups(self, count: int) -> None:
        old = len(self.row_of)
        if count <= old:
            return
        new = max(count, 2 * old, 64)
        self.row_of = np.concatenate([self.row_of, np.full(new - old, -1, np.int64)])
        self.held = np.concatenate([self.held, np.zeros(new - old, np.int64)])
        if self.k > 1:
            self.pos = np.concatenate([self.pos, np.full(new - old, -1, np.int64)])
            self.active = np.concatenate([self.active, np.zeros(new - old, np.int64)])
            self.tot_cnt = np.concatenate([self.tot_cnt, np.zeros(new - old, np.int64)])
            self.tot_int = np.concatenate([self.tot_int, np.zeros((new - old, self.tot_int.shape[1]), np.int64)])
            self.tot_flt = np.concatenate([self.tot_flt, np.zeros((new - old, self.tot_flt.shape[1]))])

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
        self.buf_int, self.buf_flt = grow(self.buf_int), grow(self.buf_flt)

    def _columns(self, batch: EventBatch):
        """Per int slot: an int64 column to add, or None (one per event: a valid count without nulls);
        per float slot: a float64 column to add."""
        cols = {a: arg.values(batch) for a, arg in enumerate(self.args) if a in self.arg_types}
        floats: dict[int, np.ndarray] = {}

        def as_float(a):
            if a not in floats:
                col = cols[a]
                if _orderable_as_int(col.type):
                    col = col.view(pa.int64()) if col.type.bit_width == 64 else col.cast(pa.int64())
                floats[a] = np.asarray(col.cast(pa.float64()).fill_null(np.nan).to_numpy(zero_copy_only=False))
            return floats[a]

        def valid_of(a):
            col = cols[a]
            ok = None if col.null_count == 0 else np.asarray(col.is_valid().to_numpy(zero_copy_only=False))
            if pa.types.is_floating(col.type):
                nan = np.isnan(as_float(a))
                if nan.any():
                    ok = ~nan if ok is None else ok & ~nan  # NaN counts as null for aggregates
            return ok

        ints = []
        for what, a in self.int_slots:
            col = cols[a]
            if what == "valid":
                ok = valid_of(a)
                ints.append(None if ok is None else ok.astype(np.int64))
            else:
                vals = col.cast(pa.int64()) if not pa.types.is_int64(col.type) else col
                ints.append(np.ascontiguousarray(as_numpy(vals.fill_null(0) if vals.null_count else vals)))
        floats_out = []
        for what, a in self.flt_slots:
            ok = valid_of(a)
            f = as_float(a) if ok is None else np.where(ok, as_float(a), 0.0)
            floats_out.append(np.ascontiguousarray(f * f if what == "square" else f))
        return ints, floats_out

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
        # the kernel reads ``other`` only to tell end edges (other < sync): points need no other column
        other = batch.sync if batch.points else batch.other
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
            ints, floats = self._columns(batch)
            added = None
            for j, col in enumerate(ints):
                if col is not None:
                    _add_int(ev_row, col, bint[j])
                    continue
                if added is None:  # events per row in this batch
                    added = bcnt[:rows].copy()
                    added[:m] -= before
                bint[j, :rows] += added
            for j, col in enumerate(floats):
                _add_float(ev_row, col, bflt[j])
        out = None
        if self.k > 1:
            if closed:
                self._queue(bw[:closed], bgid[:closed], bcnt[:closed], bint[:, :closed], bflt[:, :closed])
            progress = max(int(self.st[CUR]), upto) if self.st[HAS_CUR] else upto  # slices before it are final
            out = self._slide(progress)
        elif closed:
            sync = bw[:closed].copy()
            out = sync, bgid[:closed].copy(), bcnt[:closed].copy(), bint[:, :closed].copy(), bflt[:, :closed].copy()
        if closed:
            for a in (bw, bgid, bcnt, bint, bflt):  # the open rows move to the front
                a[..., : rows - closed] = a[..., closed:rows]
        if out is None:
            return None
        sync, gid, cnt, oi, of = out
        cols = self._finish(oi.T, of.T, cnt, None)
        return sync, sync + self.slice_len, gid, cols

    def _queue(self, start, gid, cnt, oi, of) -> None:
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
            self.q_int, self.q_flt = moved(self.q_int), moved(self.q_flt)
            st[QHEAD], st[QADD], st[QTAIL] = 0, st[QADD] - head, live
            tail = live
        self.q_start[tail : tail + m] = start
        self.q_gid[tail : tail + m] = gid
        self.q_cnt[tail : tail + m] = cnt
        self.q_int[:, tail : tail + m] = oi
        self.q_flt[:, tail : tail + m] = of
        st[QTAIL] = tail + m

    def _slide(self, progress: int):
        parts = []
        cap = 2 * (int(self.st2[NACTIVE]) + int(self.st2[QTAIL] - self.st2[QADD])) + 1024
        ki, kf = len(self.int_slots), len(self.flt_slots)
        while True:
            out = (
                np.empty(cap, np.int64), np.empty(cap, np.int64), np.empty(cap, np.int64),
                np.empty((ki, cap), np.int64), np.empty((kf, cap), np.float64),
            )  # fmt: skip
            slide_hops(
                progress, self.hop, self.k, self.st2, self.q_start, self.q_gid, self.q_cnt, self.q_int, self.q_flt,
                self.tot_cnt, self.tot_int, self.tot_flt, self.active, self.pos, *out,
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

    def snapshot(self) -> dict:
        if not self._typed:
            return {"typed": False}
        m = int(self.st[NHELD])
        arrays = {k: getattr(self, k).copy() for k in ("st", "row_of", "held")}
        arrays |= {k: getattr(self, k)[..., :m].copy() for k in ("buf_w", "buf_gid", "buf_cnt", "buf_int", "buf_flt")}
        arrays |= {k: getattr(self, k).copy() for k in ("st2", "tot_cnt", "tot_int", "tot_flt", "active", "pos")}
        arrays |= {k: getattr(self, k).copy() for k in ("q_start", "q_gid", "q_cnt", "q_int", "q_flt")}
        return {"typed": True, "types": self.layout_types, "arrays": arrays}

    def restore(self, state: dict) -> None:
        self._restore_arrays(state)


class FusedWindowAggregateOp(SnapshotAggregateOp):
    """``hopping_window(size, hop, offset)`` (``size <= hop``, or ``size`` a multiple of ``hop``) then the
    aggregate, as one operator."""

    name = "Aggregate"

    def __init__(self, fns, schema, props, key_fields, window: tuple[int, int, int]):
        """``props`` are the window's output properties; ``window`` is ``(size, hop, offset)``."""
        self.window = tuple(int(x) for x in window)
        super().__init__(fns, schema, props, key_fields, "window")
        self.engine = FusedWindowEngine(self.fns, self.args, *self.window)

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

    def on_punctuation(self, time: int) -> None:
        super().on_punctuation(self._frontier(time))
