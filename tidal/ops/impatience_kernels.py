"""The compiled kernels of Impatience sort (:mod:`tidal.ops.impatience` holds the sorter and its guarantees).

Runs share one pool, a (2, capacity) array of times and row ids; ``meta[i] = (start, stop, limit, tail)``
describes run ``i``; ``st`` holds the scalar state shared with the kernels. No temporal semantics here
beyond the sorter's: elements are placed into runs, prefixes cut at a punctuation and merged by
(time, row id).
"""

from __future__ import annotations

import heapq

import numba as nb
import numpy as np

from .impatience_chunks import exclusive_offsets

_MIN_CAP = 8  # smallest region given to a run in the pool
# run metadata columns: meta[i] = (start, stop, limit, tail)
_START, _STOP, _LIMIT, _TAIL = 0, 1, 2, 3

# --------------------------------------------------------------------------------------------------
# numba kernels
# --------------------------------------------------------------------------------------------------


@nb.njit(cache=True, nogil=True)
def _radix_pass(src_t, src_r, dst_t, dst_r, n, counts, ulo, shift, mask):
    """One stable scatter pass of a least-significant-digit radix sort: the first ``n`` times (and
    their row ids) to the slots ``counts`` (the digit's running offsets) give them."""
    for i in range(n):
        x = src_t[i]
        bucket = ((np.uint64(x) - ulo) >> shift) & mask
        d = counts[bucket]
        counts[bucket] = d + 1
        dst_t[d] = x
        dst_r[d] = src_r[i]


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


_SMALL_RELEASE = 128  # released elements up to which the prefixes are insertion sorted (no merge tree)


@nb.njit(cache=True, nogil=True)
def _insertion_heads(pool_t, pool_r, hstart, hlen, nh, out_t, out_r):
    """A few released elements: the runs' prefixes one after the other, then an insertion sort by
    (time, row id); nothing allocated, where a merge tree allocates for each merge."""
    k = 0
    for i in range(nh):
        s = hstart[i]
        for j in range(s, s + hlen[i]):
            x = pool_t[j]
            r = pool_r[j]
            q = k - 1
            while q >= 0 and (out_t[q] > x or (out_t[q] == x and out_r[q] > r)):
                out_t[q + 1] = out_t[q]
                out_r[q + 1] = out_r[q]
                q -= 1
            out_t[q + 1] = x
            out_r[q + 1] = r
            k += 1


_RADIX_MIN = 128  # released elements from which many runs' prefixes may be radix sorted instead of merged
_HEAD_DIGIT = 8  # bits per radix pass over released prefixes


@nb.njit(cache=True, nogil=True)
def _radix_heads(pool_t, pool_r, hstart, hlen, nh, total, t, out_t, out_r):
    """Sort the runs' released prefixes into ``out_*`` with a radix sort unless merging them is cheaper:
    the merge tree moves each element about ``log2(total / its prefix's length)`` times, a radix pass
    once, and a move of the merge costs about three of a radix pass (measured: a merge compares (time,
    row) with branches it cannot predict, and each merge of the tree allocates). Returns False, touching
    nothing, when the merge is chosen (one dominant prefix, or times spanning more than 32 bits). The
    prefixes are read in run order and LSD passes are stable, so equal times come out in run order, which
    is row id order: a later row with the same time can never sit in an earlier run (that run's tail was
    above the time when the earlier row was placed, tails only grow, and runs keep their order)."""
    lo = pool_t[hstart[0]]
    for i in range(1, nh):
        lo = min(lo, pool_t[hstart[i]])
    hi = lo
    for i in range(nh):
        hi = max(hi, pool_t[hstart[i] + hlen[i] - 1])
    passes = 0
    span = np.uint64(hi) - np.uint64(lo)
    while span > 0:
        passes += 1
        span >>= np.uint64(_HEAD_DIGIT)
    moves = 0.0  # the merge tree's cost in element moves, about sum(len * log2(total / len))
    for i in range(nh):
        moves += hlen[i] * np.log2(total / hlen[i])
    if passes == 0 or passes > 4 or 3.0 * moves < passes * total:
        return False
    size = 1 << _HEAD_DIGIT
    mask = np.uint64(size - 1)
    ulo = np.uint64(lo)
    hist = np.zeros((passes, size), dtype=np.int64)
    for i in range(nh):
        s = hstart[i]
        for j in range(s, s + hlen[i]):
            key = np.uint64(pool_t[j]) - ulo
            for p in range(passes):
                hist[p, (key >> np.uint64(p * _HEAD_DIGIT)) & mask] += 1
    exclusive_offsets(hist)
    # pass p writes into out_* when passes - p is odd, so that the last pass lands there
    a_t = out_t if passes % 2 == 1 else np.empty(total, dtype=np.int64)
    a_r = out_r if passes % 2 == 1 else np.empty(total, dtype=np.int64)
    for i in range(nh):  # pass 0 reads the prefixes in the pool
        s = hstart[i]
        for j in range(s, s + hlen[i]):
            x = pool_t[j]
            bucket = (np.uint64(x) - ulo) & mask
            d = hist[0, bucket]
            hist[0, bucket] = d + 1
            a_t[d] = x
            a_r[d] = pool_r[j]
    if passes > 1:
        b_t = np.empty(total, dtype=np.int64) if passes % 2 == 1 else out_t
        b_r = np.empty(total, dtype=np.int64) if passes % 2 == 1 else out_r
        for p in range(1, passes):
            src_t, src_r = (a_t, a_r) if p % 2 == 1 else (b_t, b_r)
            dst_t, dst_r = (b_t, b_r) if p % 2 == 1 else (a_t, a_r)
            _radix_pass(src_t, src_r, dst_t, dst_r, total, hist[p], ulo, np.uint64(p * _HEAD_DIGIT), mask)
    return True


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
    elif total <= _SMALL_RELEASE:
        _insertion_heads(pool_t, pool_r, hstart, hlen, nh, out_t, out_r)
    elif total >= _RADIX_MIN and _radix_heads(pool_t, pool_r, hstart, hlen, nh, total, t, out_t, out_r):
        pass
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
