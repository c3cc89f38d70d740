"""Impatience sort: incremental sorting of an out-of-order stream of int64 timestamps.

Guarantees of :class:`ImpatienceSorter`:

* Every pushed element receives a global row id: the number of elements pushed before it
  (0, 1, 2, ... across all ``push`` calls, late elements included).  The sorter only moves
  ``(time, row_id)`` pairs; callers gather payload columns with ``np.take(col, row_ids)``.
* ``punctuate(t)`` releases every buffered element with ``time <= t`` in non-decreasing time order.
  The release is stable: equal times come out in arrival (row id) order.  Across successive
  punctuations the concatenated output is also non-decreasing and stable.
* The *watermark* is the largest punctuation seen so far (initially ``INT64_MIN``).  A pushed element
  with ``time < watermark`` is *late*: it can no longer be released in order, so it is never placed
  into a run and never released.  ``push`` reports late elements through its returned mask; the
  caller decides the policy (drop, adjust, side-output).  An element with ``time == watermark`` is
  not late: it is buffered and released by the next punctuation (or ``flush_all``), which keeps the
  output non-decreasing because everything already released has ``time <= watermark``.
* Punctuations that go backwards are harmless: the watermark never decreases and such a call
  releases nothing.
* ``flush_all()`` releases everything (end of stream) without moving the watermark.

Algorithm (Impatience sort, after Chandramouli et al., "Impatience is a Virtue", ICDE 2018):
buffered elements live in sorted runs.  A new element goes to the first run (lowest index) whose
last time ("tail") is ``<= time``; tails therefore stay strictly descending across runs, so the
choice is a binary search, short-circuited by speculative checks of the run used last and of run 0.
If no run fits a new run is opened at the end.  On a punctuation each run gives up its prefix with
``time <= t`` (found by galloping search since runs are sorted), emptied runs are dropped, and the
prefixes are merged two at a time, always the two shortest first (Huffman order).  The merge
compares ``(time, row_id)`` so that ties keep arrival order whatever the merge tree looks like.

Storage: all runs share one growable pool (a (2, capacity) array: times and row ids).  Each run owns a
contiguous region ``[start, stop)`` with an allocation limit; a full region is relocated to the end of
the pool with doubled capacity, and a full pool is compacted into a fresh one.  Per-element work (the
placement loop, cutting and merging) runs in numba-compiled functions; Python only runs per batch and
per punctuation.
"""

from __future__ import annotations

import heapq

import numba as nb
import numpy as np

INT64_MIN = np.iinfo(np.int64).min
INT64_MAX = np.iinfo(np.int64).max

_MIN_CAP = 8  # smallest region given to a run in the pool
_LONG_SEGMENTS = 4096  # push_punctuate: events per punctuation from which separate calls cost nothing extra
# run metadata columns: meta[i] = (start, stop, limit, tail)
_START, _STOP, _LIMIT, _TAIL = 0, 1, 2, 3

# --------------------------------------------------------------------------------------------------
# numba kernels
# --------------------------------------------------------------------------------------------------


@nb.njit(cache=True, nogil=True)
def _compact_pool(pool, spare, meta, nruns, extra):
    """Copy every run into a fresh pool, each with capacity max(2 * live, _MIN_CAP).

    Pools are (2, size) arrays: row 0 times, row 1 row ids.  ``extra`` is room that the caller is about
    to need on top of that.  The spare pool (the one compacted away last time) is reused when its size
    fits, so memory is not faulted in again.  Returns (new pool, used, new spare)."""
    need = extra
    for i in range(nruns):
        live = meta[i, _STOP] - meta[i, _START]
        need += max(2 * live, _MIN_CAP)
    if spare.shape[1] >= need + need // 2 and spare.shape[1] <= 8 * need:
        new = spare
    else:
        new = np.empty((2, max(2 * need, 64)), dtype=np.int64)
    pos = 0
    for i in range(nruns):
        s = meta[i, _START]
        live = meta[i, _STOP] - s
        new[0, pos : pos + live] = pool[0, s : s + live]
        new[1, pos : pos + live] = pool[1, s : s + live]
        meta[i, _START] = pos
        meta[i, _STOP] = pos + live
        cap = max(2 * live, _MIN_CAP)
        meta[i, _LIMIT] = pos + cap
        pos += cap
    return new, pos, pool


@nb.njit(cache=True, nogil=True)
def _place(times, i0, row0, ids, late_bound, late, pool_t, pool_r, used, meta, nruns, last_run):
    """Place times[i0:] into runs until done or until storage must grow.

    Never reassigns an array (keeps numba's reference counting out of the hot loop).  Returns
    (next index, need, used, nruns, last_run): need == 0 when done, -1 when the run table is full,
    otherwise the pool room required for the element at the returned index.  Element i gets row id
    ``ids[i]``, or ``row0 + i`` when ``ids`` is empty."""
    n = times.shape[0]
    given = ids.shape[0] > 0
    pool_size = pool_t.shape[0]
    for i in range(i0, n):
        x = times[i]
        if x < late_bound:
            late[i] = True
            continue
        # ---- choose the run: the first run (lowest index) with tail <= x -------------------------
        r = last_run
        if r < nruns and meta[r, _TAIL] <= x and (r == 0 or meta[r - 1, _TAIL] > x):
            pass  # speculation on the previously used run hit
        elif nruns == 0 or meta[0, _TAIL] <= x:
            r = 0
        else:
            lo = 1
            hi = nruns
            while lo < hi:
                mid = (lo + hi) >> 1
                if meta[mid, _TAIL] <= x:
                    hi = mid
                else:
                    lo = mid + 1
            r = lo
        if r == nruns:
            # ---- open a new run at the end --------------------------------------------------------
            if nruns == meta.shape[0]:
                return i, -1, used, nruns, last_run
            if used + _MIN_CAP > pool_size:
                return i, _MIN_CAP, used, nruns, last_run
            meta[r, _START] = used
            meta[r, _STOP] = used
            meta[r, _LIMIT] = used + _MIN_CAP
            used += _MIN_CAP
            nruns += 1
        elif meta[r, _STOP] == meta[r, _LIMIT]:
            # ---- region full: move the run to the end of the pool with doubled capacity -----------
            s = meta[r, _START]
            live = meta[r, _STOP] - s
            cap = max(2 * live, _MIN_CAP)
            if used + cap > pool_size:
                return i, cap, used, nruns, last_run
            for j in range(live):
                pool_t[used + j] = pool_t[s + j]
                pool_r[used + j] = pool_r[s + j]
            meta[r, _START] = used
            meta[r, _STOP] = used + live
            meta[r, _LIMIT] = used + cap
            used += cap
        p = meta[r, _STOP]
        pool_t[p] = x
        pool_r[p] = ids[i] if given else row0 + i
        meta[r, _STOP] = p + 1
        meta[r, _TAIL] = x
        last_run = r
    return n, 0, used, nruns, last_run


_NO_IDS = np.empty(0, dtype=np.int64)

# scalar state shared with the kernels: st = [used, nruns, last_run, next_row, watermark]
_USED, _NRUNS, _LAST, _ROW0, _WM, _NEED, _NLATE = 0, 1, 2, 3, 4, 5, 6


@nb.njit(cache=True, nogil=True)
def _push_kernel(times, i0, late, pool, meta, st, ids):
    """Place ``times[i0:]`` into runs until done or until storage must grow.

    Returns the index reached; ``st[_NEED]`` is 0 when done, -1 when the run table is full, otherwise
    the pool room required (the caller grows storage and calls again from the returned index).  Only
    an int comes back: boxing arrays would cost more than placing a small batch."""
    i, need, used, nruns, last_run = _place(
        times, i0, st[_ROW0], ids, st[_WM], late, pool[0], pool[1], st[_USED], meta, st[_NRUNS], st[_LAST]
    )
    st[_USED] = used
    st[_NRUNS] = nruns
    st[_LAST] = last_run
    st[_NEED] = need
    if need == 0:
        st[_ROW0] = ids[ids.shape[0] - 1] + 1 if ids.shape[0] else st[_ROW0] + times.shape[0]
        nlate = 0
        for j in range(times.shape[0]):
            nlate += late[j]
        st[_NLATE] = nlate
    return i


@nb.njit(cache=True, nogil=True)
def _count_le(a, lo, hi, t):
    """Number of elements of sorted a[lo:hi] that are <= t (galloping from lo, then binary search)."""
    if hi <= lo or a[lo] > t:
        return 0
    if a[hi - 1] <= t:
        return hi - lo
    # a[lo] <= t < a[hi - 1]
    step = 1
    good = lo  # a[good] <= t
    probe = lo + 1
    while probe < hi - 1 and a[probe] <= t:
        good = probe
        step <<= 1
        probe = lo + step
    bad = min(probe, hi - 1)  # a[bad] > t
    while bad - good > 1:
        mid = (good + bad) >> 1
        if a[mid] <= t:
            good = mid
        else:
            bad = mid
    return good + 1 - lo


@nb.njit(cache=True, nogil=True)
def _merge2(at, ar, ao, an, bt, br, bo, bn, ot, orr):
    """Stable merge by (time, row) of a[ao:ao+an] and b[bo:bo+bn] into ot/orr (from 0)."""
    i = ao
    j = bo
    ie = ao + an
    je = bo + bn
    k = 0
    while i < ie and j < je:
        x = at[i]
        y = bt[j]
        if x < y or (x == y and ar[i] < br[j]):
            ot[k] = x
            orr[k] = ar[i]
            i += 1
        else:
            ot[k] = y
            orr[k] = br[j]
            j += 1
        k += 1
    while i < ie:
        ot[k] = at[i]
        orr[k] = ar[i]
        i += 1
        k += 1
    while j < je:
        ot[k] = bt[j]
        orr[k] = br[j]
        j += 1
        k += 1


@nb.njit(cache=True, nogil=True)
def _punctuate_kernel(t, pool, meta, st):
    """Cut the prefix <= t of every run, merge the prefixes in Huffman order, drop emptied runs.

    Returns (out_times, out_rows); updates st."""
    total = 0
    nruns = st[_NRUNS]
    for i in range(nruns):
        s = meta[i, _START]
        if pool[0, s] <= t:
            total += _count_le(pool[0], s, meta[i, _STOP], t)
    out_t = np.empty(total, dtype=np.int64)
    out_r = np.empty(total, dtype=np.int64)
    _release_into(t, pool, meta, st, out_t, out_r)
    return out_t, out_r


@nb.njit(cache=True, nogil=True)
def _release_into(t, pool, meta, st, out_t, out_r):
    """Like ``_punctuate_kernel``, writing the released elements to the front of ``out_t``/``out_r``
    (room for every buffered element); returns how many."""
    pool_t = pool[0]
    pool_r = pool[1]
    nruns = st[_NRUNS]
    last_run = st[_LAST]
    # ---- find the head runs ----------------------------------------------------------------------
    hstart = np.empty(nruns, dtype=np.int64)
    hlen = np.empty(nruns, dtype=np.int64)
    nh = 0
    total = 0
    for i in range(nruns):
        s = meta[i, _START]
        if pool_t[s] > t:  # runs are never empty, pool_t[s] is the run's head
            continue
        c = _count_le(pool_t, s, meta[i, _STOP], t)
        hstart[nh] = s
        hlen[nh] = c
        nh += 1
        total += c
        meta[i, _START] = s + c
    if nh == 0:
        return 0
    if nh == 1:
        s = hstart[0]
        for j in range(total):
            out_t[j] = pool_t[s + j]
            out_r[j] = pool_r[s + j]
    elif nh == 2:
        _merge2(pool_t, pool_r, hstart[0], hlen[0], pool_t, pool_r, hstart[1], hlen[1], out_t, out_r)
    else:
        # ---- Huffman merge: repeatedly merge the two shortest segments --------------------------
        # segment id < nh: head run in the pool; id >= nh: merged array bufs[id - nh]
        bufs_t = [np.empty(0, dtype=np.int64)]
        bufs_r = [np.empty(0, dtype=np.int64)]
        bufs_t.pop()
        bufs_r.pop()
        heap = [(hlen[i], i) for i in range(nh)]
        heapq.heapify(heap)
        while True:
            na, a = heapq.heappop(heap)
            nb_, b = heapq.heappop(heap)
            last = len(heap) == 0  # the final merge writes the output itself
            mt = out_t if last else np.empty(na + nb_, dtype=np.int64)
            mr = out_r if last else np.empty(na + nb_, dtype=np.int64)
            if a < nh:
                at, ar, ao = pool_t, pool_r, hstart[a]
            else:
                at, ar, ao = bufs_t[a - nh], bufs_r[a - nh], 0
            if b < nh:
                bt, br, bo = pool_t, pool_r, hstart[b]
            else:
                bt, br, bo = bufs_t[b - nh], bufs_r[b - nh], 0
            _merge2(at, ar, ao, na, bt, br, bo, nb_, mt, mr)
            if last:
                break
            if a >= nh:  # free merged inputs early
                bufs_t[a - nh] = np.empty(0, dtype=np.int64)
                bufs_r[a - nh] = np.empty(0, dtype=np.int64)
            if b >= nh:
                bufs_t[b - nh] = np.empty(0, dtype=np.int64)
                bufs_r[b - nh] = np.empty(0, dtype=np.int64)
            bufs_t.append(mt)
            bufs_r.append(mr)
            heapq.heappush(heap, (na + nb_, nh + len(bufs_t) - 1))
    # ---- drop emptied runs (order of the others is kept, so tails stay descending) --------------
    w = 0
    new_last = 0
    for i in range(nruns):
        if meta[i, _START] < meta[i, _STOP]:
            if w != i:
                meta[w] = meta[i]
            if i == last_run:
                new_last = w
            w += 1
    st[_NRUNS] = w
    st[_LAST] = new_last
    if w == 0:
        st[_USED] = 0  # the whole pool is free again
    return total


@nb.njit(cache=True, nogil=True)
def _fused_kernel(times, ends, puncts, seg, i, late, pool, meta, st, out_t, out_r, counts, written):
    """Push ``times[i:ends[seg]]``, punctuate at ``puncts[seg]``, and so on for the next segments, the
    released elements written from ``out_t[written]`` on, their number per segment in ``counts``.
    Stops early when storage must grow (``st[_NEED] != 0``); returns (segment, index, written) to go on."""
    while seg < ends.shape[0]:
        end = ends[seg]
        if i < end:
            i, need, used, nruns, last_run = _place(
                times[:end],
                i,
                st[_ROW0],
                times[:0],
                st[_WM],
                late,
                pool[0],
                pool[1],
                st[_USED],
                meta,
                st[_NRUNS],
                st[_LAST],
            )
            st[_USED] = used
            st[_NRUNS] = nruns
            st[_LAST] = last_run
            st[_NEED] = need
            if need != 0:
                return seg, i, written
        t = puncts[seg]
        if t > st[_WM]:
            st[_WM] = t
        c = _release_into(t, pool, meta, st, out_t[written:], out_r[written:]) if st[_NRUNS] > 0 else 0
        counts[seg] = c
        written += c
        seg += 1
    return seg, i, written


# --------------------------------------------------------------------------------------------------
# Python wrapper
# --------------------------------------------------------------------------------------------------


class ImpatienceSorter:
    """Incremental sorter of int64 times; see the module docstring for the guarantees."""

    __slots__ = ("_pool", "_spare", "_meta", "_st", "_watermark", "_next_row", "_buffered")

    def __init__(self, initial_capacity: int = 1024):
        cap = max(int(initial_capacity), 64)
        self._pool = np.empty((2, cap), dtype=np.int64)  # row 0: times, row 1: row ids
        self._spare = np.empty((2, 0), dtype=np.int64)
        self._meta = np.empty((16, 4), dtype=np.int64)
        self._st = np.zeros(7, dtype=np.int64)  # used, nruns, last_run, next_row, watermark, need, late
        self._watermark = int(INT64_MIN)
        self._st[_WM] = self._watermark
        self._next_row = 0
        self._buffered = 0

    # -- ingest -----------------------------------------------------------------------------------
    def push(self, times: np.ndarray, ids: np.ndarray | None = None) -> np.ndarray:
        """Insert a batch of int64 times given in arrival order.

        Returns a bool mask over the batch, True where the element is late (``time < watermark``);
        late elements are not buffered.  Row ids are assigned to all elements, late ones included:
        consecutive from ``next_row_id``, or ``ids`` (increasing, from ``next_row_id`` on; ids skipped
        are never used) when given."""
        if times.dtype != np.int64 or not times.flags.c_contiguous:
            times = np.ascontiguousarray(times, dtype=np.int64)
        if times.ndim != 1:
            raise ValueError("times must be one-dimensional")
        n = times.shape[0]
        late = np.zeros(n, dtype=np.bool_)
        if n == 0:
            return late
        st = self._st
        if ids is None:
            ids = _NO_IDS
        elif len(ids) != n or (n and int(ids[0]) < self._next_row):
            raise ValueError("ids must give each element an increasing row id from next_row_id on")
        i = _push_kernel(times, 0, late, self._pool, self._meta, st, ids)
        while st[_NEED] != 0:
            if st[_NEED] < 0:
                nruns = int(st[_NRUNS])
                bigger = np.empty((2 * self._meta.shape[0], 4), dtype=np.int64)
                bigger[:nruns] = self._meta[:nruns]
                self._meta = bigger
            else:
                # compaction leaves room for `need` more and gives every run spare capacity; room for twice the
                # rest of the batch too, so that one large batch does not compact the pool again and again
                extra = max(int(st[_NEED]), 2 * (n - i))
                pool, used, self._spare = _compact_pool(self._pool, self._spare, self._meta, st[_NRUNS], extra)
                self._pool = pool
                st[_USED] = used
            i = _push_kernel(times, i, late, self._pool, self._meta, st, ids)
        self._next_row = int(st[_ROW0])
        self._buffered += n - int(st[_NLATE])
        return late

    def skip_to(self, row: int) -> None:
        """Row ids below ``row`` are never given (the next element pushed gets ``row`` or more)."""
        if row > self._next_row:
            self._next_row = int(row)
            self._st[_ROW0] = self._next_row

    # -- release ----------------------------------------------------------------------------------
    def punctuate(self, t: int) -> tuple[np.ndarray, np.ndarray]:
        """Release every buffered element with ``time <= t``, sorted by (time, arrival).

        Afterwards the watermark is ``max(watermark, t)`` and pushed times ``< watermark`` are late.
        Returns ``(times, row_ids)`` as int64 arrays."""
        t = int(t)
        if t > self._watermark:
            self._watermark = t
            self._st[_WM] = t
        return self._release(t)

    def push_punctuate(self, times: np.ndarray, ends: np.ndarray, puncts: np.ndarray):
        """``push(times[prev:ends[k]])`` then ``punctuate(puncts[k])`` for each k (``prev`` the previous end,
        from 0), in one compiled call: for many small punctuations. ``ends`` must increase to at most
        ``len(times)``; elements after the last end are pushed too. Returns ``(late, times, row_ids,
        counts)``: the late mask over ``times``, everything released in order, and how many elements
        each punctuation released (consecutive slices of the released arrays)."""
        times = np.ascontiguousarray(times, dtype=np.int64)
        ends = np.ascontiguousarray(ends, dtype=np.int64)
        puncts = np.ascontiguousarray(puncts, dtype=np.int64)
        n = times.shape[0]
        if ends.shape != puncts.shape or ends.ndim != 1 or (len(ends) and (ends[-1] > n or (np.diff(ends) < 0).any())):
            raise ValueError("ends and puncts must be one increasing end per punctuation, within the times")
        if len(ends) and n >= _LONG_SEGMENTS * len(ends):  # few long segments: nothing to save per call
            return self._push_punctuate_calls(times, ends, puncts)
        late = np.zeros(n, dtype=np.bool_)
        out_t = np.empty(self._buffered + n, dtype=np.int64)
        out_r = np.empty(self._buffered + n, dtype=np.int64)
        counts = np.zeros(len(ends), dtype=np.int64)
        st = self._st
        row0 = int(st[_ROW0])
        seg, i, written = _fused_kernel(
            times, ends, puncts, 0, 0, late, self._pool, self._meta, st, out_t, out_r, counts, 0
        )
        while seg < len(ends):
            self._grow(int(ends[seg]) - i)
            seg, i, written = _fused_kernel(
                times, ends, puncts, seg, i, late, self._pool, self._meta, st, out_t, out_r, counts, written
            )
        if len(ends):
            self._watermark = max(self._watermark, int(puncts.max()))
            st[_WM] = self._watermark
        self._buffered += i - int(np.count_nonzero(late[:i])) - written
        self._next_row = row0 + i
        st[_ROW0] = self._next_row
        if i < n:  # the tail after the last punctuation
            late[i:] = self.push(times[i:])
        return late, out_t[:written], out_r[:written], counts

    def _push_punctuate_calls(self, times, ends, puncts):
        lates, ts, rs, counts = [], [], [], []
        start = 0
        for end, p in zip(ends.tolist(), puncts.tolist(), strict=True):
            lates.append(self.push(times[start:end]))
            t, r = self.punctuate(p)
            ts.append(t)
            rs.append(r)
            counts.append(len(t))
            start = end
        if start < len(times):
            lates.append(self.push(times[start:]))
        one = len(ts) == 1
        return (
            np.concatenate(lates),
            ts[0] if one else np.concatenate(ts),
            rs[0] if one else np.concatenate(rs),
            np.array(counts, dtype=np.int64),
        )

    def _grow(self, rest: int) -> None:
        st = self._st
        if st[_NEED] < 0:
            nruns = int(st[_NRUNS])
            bigger = np.empty((2 * self._meta.shape[0], 4), dtype=np.int64)
            bigger[:nruns] = self._meta[:nruns]
            self._meta = bigger
        else:
            extra = max(int(st[_NEED]), 2 * rest)
            pool, used, self._spare = _compact_pool(self._pool, self._spare, self._meta, st[_NRUNS], extra)
            self._pool = pool
            st[_USED] = used
        st[_NEED] = 0

    def flush_all(self) -> tuple[np.ndarray, np.ndarray]:
        """Release everything that is buffered (end of stream).  The watermark is not changed."""
        return self._release(int(INT64_MAX))

    def _release(self, t: int) -> tuple[np.ndarray, np.ndarray]:
        if self._buffered == 0:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
        out_t, out_r = _punctuate_kernel(t, self._pool, self._meta, self._st)
        self._buffered -= out_t.shape[0]
        return out_t, out_r

    # -- introspection ----------------------------------------------------------------------------
    @property
    def buffered(self) -> int:
        """Number of elements currently held (pushed, not late, not yet released)."""
        return self._buffered

    @property
    def num_runs(self) -> int:
        return int(self._st[_NRUNS])

    @property
    def watermark(self) -> int:
        """Largest punctuation seen so far (``INT64_MIN`` before the first one)."""
        return self._watermark

    @property
    def next_row_id(self) -> int:
        return self._next_row

    # -- checkpointing ----------------------------------------------------------------------------
    def snapshot(self) -> dict:
        """State as plain numpy arrays and ints: the runs in placement order, concatenated."""
        k = self.num_runs
        meta = self._meta[:k]
        lengths = (meta[:, _STOP] - meta[:, _START]).astype(np.int64)
        if k:
            idx = np.concatenate([np.arange(s, e, dtype=np.int64) for s, e in meta[:, :2]])
        else:
            idx = np.empty(0, dtype=np.int64)
        return {
            "version": 1,
            "times": self._pool[0, idx].copy(),
            "row_ids": self._pool[1, idx].copy(),
            "run_lengths": lengths,
            "last_run": int(self._st[_LAST]),
            "watermark": int(self._watermark),
            "next_row_id": int(self._next_row),
        }

    @classmethod
    def restore(cls, state: dict) -> ImpatienceSorter:
        if int(state.get("version", 1)) != 1:
            raise ValueError(f"unsupported ImpatienceSorter snapshot version {state['version']!r}")
        times = np.asarray(state["times"], dtype=np.int64)
        rows = np.asarray(state["row_ids"], dtype=np.int64)
        lengths = np.asarray(state["run_lengths"], dtype=np.int64)
        k = lengths.shape[0]
        if int(lengths.sum()) != times.shape[0] or rows.shape != times.shape or (lengths <= 0).any():
            raise ValueError("inconsistent ImpatienceSorter snapshot")
        self = cls(initial_capacity=2 * times.shape[0] + _MIN_CAP * k)
        caps = np.maximum(2 * lengths, _MIN_CAP)
        starts = np.zeros(k, dtype=np.int64)
        if k:
            starts[1:] = np.cumsum(caps)[:-1]
            src = np.zeros(k, dtype=np.int64)
            src[1:] = np.cumsum(lengths)[:-1]
            for s, d, n in zip(src.tolist(), starts.tolist(), lengths.tolist(), strict=True):
                self._pool[0, d : d + n] = times[s : s + n]
                self._pool[1, d : d + n] = rows[s : s + n]
        self._meta = np.empty((max(16, k), 4), dtype=np.int64)
        self._meta[:k, _START] = starts
        self._meta[:k, _STOP] = starts + lengths
        self._meta[:k, _LIMIT] = starts + caps
        self._meta[:k, _TAIL] = self._pool[0, starts + lengths - 1] if k else 0
        self._watermark = int(state["watermark"])
        self._next_row = int(state["next_row_id"])
        last = int(state["last_run"]) if k else 0
        self._st[:] = (int(caps.sum()), k, last, self._next_row, self._watermark, 0, 0)
        self._buffered = int(times.shape[0])
        return self
