"""The numba kernels of the snapshot aggregate variants: sorted multisets, and the sweep (one per variant).

Numba caches compiled code on disk per function: one index file per source file, qualified name
and line, holding entries keyed by signature, bytecode and (for closures, such as the sweeps) the
closed-over values; the source file's time stamp invalidates them. All kernels live in this one
file so that a change to a helper invalidates the sweeps that inline it.
"""

from __future__ import annotations

import numba
import numpy as np

from .base import MODE_FIFO, MODE_HEAP, MODE_NONE, MODE_WINDOW

# scalar slots of the kernel's persistent state
CUR, NHELD, QHEAD, QSIZE, NOUT = range(5)
_NAMES = {MODE_NONE: "start_edge", MODE_FIFO: "fifo", MODE_HEAP: "heap", MODE_WINDOW: "window"}


# A multiset is a sorted prefix ``arr[:sorted]`` followed by values added since it was last read
# (``arr[sorted:len]``), plus a list of values removed since then. Reading it (a result is due)
# sorts the additions, merges them in and subtracts the removals in one pass. Inserting each
# value in place instead shifts half the array per event: quadratic in a group's size (a COUNT
# DISTINCT over 125k rows per group took 20 s). Values are int64 *order keys* (see
# ``ArgumentValues.order_keys``): integers as themselves, so ids beyond 2**53 stay exact; floats
# mapped to int64 preserving their order.
_FLIP = 0x7FFFFFFFFFFFFFFF


@numba.njit(cache=True)
def _normalize(ms, ms_len, ms_sorted, md, md_len, idx):
    """Bring multiset ``idx`` to its sorted form: additions merged in, removals taken out."""
    arr = ms[idx]
    n = ms_len[idx]
    s = ms_sorted[idx]
    if n > s:
        if n - s == 1:  # one addition: insert it (a binary search and a shift, no sort)
            v = arr[s]
            lo, hi = 0, s
            while lo < hi:
                mid = (lo + hi) >> 1
                if arr[mid] < v:
                    lo = mid + 1
                else:
                    hi = mid
            for k in range(s, lo, -1):
                arr[k] = arr[k - 1]
            arr[lo] = v
        else:  # merge the sorted additions in from the back, in place
            add = np.sort(arr[s:n])
            a, b, w = s - 1, n - s - 1, n - 1
            while b >= 0:
                if a >= 0 and arr[a] > add[b]:
                    arr[w] = arr[a]
                    a -= 1
                else:
                    arr[w] = add[b]
                    b -= 1
                w -= 1
    d = md_len[idx]
    if d > 0:
        gone = np.sort(md[idx][:d]) if d > 1 else md[idx][:1]
        j, w = 0, 0
        for r in range(n):
            v = arr[r]
            while j < d and gone[j] < v:
                j += 1
            if j < d and gone[j] == v:
                j += 1
                continue
            arr[w] = v
            w += 1
        n = w
        md_len[idx] = 0
    ms_len[idx] = n
    ms_sorted[idx] = n


@numba.njit(cache=True)
def _flatten_multisets(ms, ms_len, ms_sorted, md, md_len):
    offsets = np.zeros(len(ms) + 1, np.int64)
    for i in range(len(ms)):
        _normalize(ms, ms_len, ms_sorted, md, md_len, i)
        offsets[i + 1] = offsets[i] + ms_len[i]
    flat = np.empty(offsets[-1], np.int64)
    for i in range(len(ms)):
        flat[offsets[i] : offsets[i + 1]] = ms[i][: ms_len[i]]
    return flat, offsets


@numba.njit(cache=True, inline="always")
def _key_value(key, isfloat, fbuf, ibuf):
    """The number an order key stands for (``fbuf``/``ibuf``: one float64 and its int64 view)."""
    if not isfloat:
        return float(key)
    ibuf[0] = key if key >= 0 else key ^ _FLIP
    return fbuf[0]


RESIDUE = 2.0**-60  # a leaving sum is rebuilt when what its compensation rounded away passes this share of it
VISIBLE = 2.0**-40  # ... and refused when that passes this share and the values alive are not all queued


@numba.njit(cache=True, inline="always")
def _add_flt(g_flt, g, j, kf, v):
    """Add ``v`` to a group's running float sum ``j`` with Neumaier's compensation (column ``kf + j``
    collects what each addition rounds away): events leave a snapshot by subtraction, and a large
    value that enters and leaves would otherwise take the small ones added meanwhile with it. The
    compensation rounds too where three magnitudes meet (1e300, 1e16, 1.0): column ``2 * kf + j``
    adds up what it rounded away, a bound on how far the pair is from the exact sum (see _rebuild_sums)."""
    s = g_flt[g, j]
    t = s + v
    if np.isfinite(t):
        e = (s - t) + v if abs(s) >= abs(v) else (v - t) + s
        c = g_flt[g, kf + j]
        u = c + e
        r = (c - u) + e if abs(c) >= abs(e) else (e - u) + c
        g_flt[g, kf + j] = u
        if r != 0.0:
            g_flt[g, 2 * kf + j] += abs(r)
    g_flt[g, j] = t


@numba.njit(cache=True)
def _exact_pair(values, parts):
    """The exact sum of finite ``values`` as (sum, remainder, what the remainder rounded away: two doubles hold
    two magnitudes), via Shewchuk's partials (``parts``: room for 64); ok False if a partial sum overflows."""
    n = 0
    for q in range(len(values)):
        x = values[q]
        i = 0
        for k in range(n):
            y = parts[k]
            if abs(x) < abs(y):
                x, y = y, x
            hi = x + y
            lo = y - (hi - x)
            if lo != 0.0:
                parts[i] = lo
                i += 1
            x = hi
        if not np.isfinite(x):
            return 0.0, 0.0, 0.0, False
        parts[i] = x
        n = i + 1
    s, c, lost, k = parts[n - 1] if n > 0 else 0.0, 0.0, 0.0, n - 2
    while k >= 0:  # the partials grow in magnitude and do not overlap: Fast2Sum from the top
        y = parts[k]
        k -= 1
        t = s + y
        lo = y - (t - s)
        s = t
        if lo != 0.0:
            c = lo
            break
    while k >= 0:
        y = parts[k]
        k -= 1
        u = c + y
        r = (c - u) + y if abs(c) >= abs(y) else (y - u) + c
        c = u
        lost += abs(r)
    return s, c, lost, True


@numba.njit(cache=True)
def _rebuild_sums(g, g_flt, f_piv, q_gid, q_flt, lo, hi, kf, expect):
    """Rebuild group ``g``'s running float sums (not the shifted ones) from rows ``lo:hi`` of ``q_flt`` (an
    endpoint queue's values alive, or a hopping window's live slices' sums): each the exact sum of its
    parts. Only when those rows are all of the group's events alive (``expect``; -1: not checked): start
    edges, whose end edges come later as input, are not queued (see docs/operators/aggregates.md)."""
    rows = np.array([r for r in range(lo, hi) if q_gid[r] == g], np.int64)
    parts, vals = np.empty(64, np.float64), np.empty(len(rows), np.float64)
    stuck = False  # a residue that could show and cannot be rebuilt (the caller refuses the query)
    for j in range(kf):
        if f_piv[j] < 0:
            whole = expect < 0 or len(rows) == expect
            stuck = stuck or (not whole and g_flt[g, 2 * kf + j] > VISIBLE * abs(g_flt[g, j] + g_flt[g, kf + j]))
            g_flt[g, 2 * kf + j] = 0.0  # (if not rebuilt: not looked at until it rounds anew)
            for q in range(len(rows)):
                vals[q] = q_flt[rows[q], j]
            s, c, lost, ok = _exact_pair(vals, parts)
            if ok and whole:
                g_flt[g, j], g_flt[g, kf + j], g_flt[g, 2 * kf + j] = s, c, lost
    return stuck


@numba.njit(cache=True, inline="always")
def _flt_value(g_flt, g, j, kf):
    """A group's running float sum ``j``: the sum and its compensation (an infinity or NaN as it is)."""
    s = g_flt[g, j]
    return s + g_flt[g, kf + j] if np.isfinite(s) else s


VARIANCE = 5  # the multiset kind of a variance where values leave (see _ms_variance)


@numba.njit(cache=True)
def _ms_variance(arr, n, isfloat, fbuf, ibuf):
    """The sample variance of the sorted ``arr[:n]`` as a float64's bits: sums of ``d = x - K`` and ``d * d``
    with ``K`` the middle value (within a standard deviation of the mean, so nothing large cancels),
    ``(sum d² - (sum d)² / n) / (n - 1)``; NaN with an infinity (as DuckDB), 0 below two values (not read).
    Where values leave a snapshot, running sums would keep what leaving values rounded away (or a pivot
    far from the values alive): this reads only the values alive."""
    if n < 2:
        return 0
    lo = _key_value(arr[0], isfloat, fbuf, ibuf)
    hi = _key_value(arr[n - 1], isfloat, fbuf, ibuf)
    if not (np.isfinite(lo) and np.isfinite(hi)):
        fbuf[0] = np.nan
        return ibuf[0]
    k = _key_value(arr[n // 2], isfloat, fbuf, ibuf)
    s1 = 0.0
    s2 = 0.0
    for q in range(n):
        d = _key_value(arr[q], isfloat, fbuf, ibuf) - k
        s1 += d
        s2 += d * d
    fbuf[0] = max((s2 - s1 * s1 / n) / (n - 1), 0.0)
    return ibuf[0]


@numba.njit(cache=True, inline="always")
def _interpolate(a, b, d):
    """``a`` to ``b`` at ``d`` in [0, 1) as DuckDB's quantile_cont: equal values (infinities too) are
    themselves, an infinity beside a finite value wins (``a + (b - a) * d`` would be NaN)."""
    if a == b:
        return a
    if np.isfinite(a) and np.isfinite(b):
        return a + (b - a) * d
    return a * (1.0 - d) + b * d


@numba.njit(cache=True, inline="always")
def _ms_result(arr, n, kind, p, isfloat, fbuf, ibuf):
    """An order aggregate of the sorted ``arr[:n]`` as int64: a count, an order key, or (percentile_cont)
    a float64's bits. An empty multiset's result is never read (the group's valid count is 0)."""
    if kind == 2:  # count distinct
        d = 0
        for k in range(n):
            if k == 0 or arr[k] != arr[k - 1]:
                d += 1
        return d
    if n == 0:
        return 0
    if kind == VARIANCE:
        return _ms_variance(arr, n, isfloat, fbuf, ibuf)
    if kind == 0:
        return arr[0]
    if kind == 1:
        return arr[n - 1]
    if kind == 3:
        pos = p * (n - 1)
        lo = int(np.floor(pos))
        hi = int(np.ceil(pos))
        a = _key_value(arr[lo], isfloat, fbuf, ibuf)
        b = _key_value(arr[hi], isfloat, fbuf, ibuf)
        fbuf[0] = _interpolate(a, b, pos - lo)
        return ibuf[0]
    k = int(np.ceil(p * n)) - 1
    return arr[max(k, 0)]


@numba.njit(cache=True)
def _apply_multisets(g, sign, src_m, src_i, row, km, m_valid, stage_idx, stage_val, stage_n):
    """Stage one event's multiset values: additions in slot 0, removals in slot 1 of ``stage_n``; they
    reach the multisets in :func:`_flush_stage`, grouped per multiset (one typed-list access per
    multiset and flush, not one per value: that access costs more than the rest of an event's work)."""
    s = 0 if sign > 0 else 1
    for j in range(km):
        if src_i[row, m_valid[j]] != 0:
            k = stage_n[s]
            stage_idx[s, k] = g * km + j
            stage_val[s, k] = src_m[row, j]
            stage_n[s] = k + 1


@numba.njit(cache=True)
def _by_multiset(idx_arr, count, m):
    """The staged values' positions grouped by multiset: a counting sort (two linear passes) when the
    multisets are few next to the values (a COUNT DISTINCT over a big batch), else a sort."""
    if m > 4 * count:
        return np.argsort(idx_arr[:count])
    start = np.zeros(m + 1, np.int64)
    for q in range(count):
        start[idx_arr[q] + 1] += 1
    for k in range(m):
        start[k + 1] += start[k]
    order = np.empty(count, np.int64)
    for q in range(count):
        k = idx_arr[q]
        order[start[k]] = q
        start[k] += 1
    return order


@numba.njit(cache=True)
def _flush_into(ms, ms_len, idx_arr, val_arr, count):
    order = _by_multiset(idx_arr, count, len(ms))
    i = 0
    while i < count:
        idx = idx_arr[order[i]]
        j = i
        while j < count and idx_arr[order[j]] == idx:
            j += 1
        arr = ms[idx]
        n = ms_len[idx]
        if n + (j - i) > len(arr):
            grown = np.empty(max(8, 2 * (n + j - i)), np.int64)
            grown[:n] = arr[:n]
            ms[idx] = grown
            arr = grown
        for q in range(i, j):
            arr[n] = val_arr[order[q]]
            n += 1
        ms_len[idx] = n
        i = j


@numba.njit(cache=True)
def _flush_stage(ms, ms_len, md, md_len, stage_idx, stage_val, stage_n):
    """Move the staged additions into the multisets and the staged removals into their removal lists."""
    if stage_n[0] > 0:
        _flush_into(ms, ms_len, stage_idx[0], stage_val[0], stage_n[0])
        stage_n[0] = 0
    if stage_n[1] > 0:
        _flush_into(md, md_len, stage_idx[1], stage_val[1], stage_n[1])
        stage_n[1] = 0


@numba.njit(cache=True, inline="always")
def _q_swap(a, b, q_time, q_gid, q_int, q_flt, q_mv):
    """Swap two entries of the endpoint heap."""
    q_time[a], q_time[b] = q_time[b], q_time[a]
    q_gid[a], q_gid[b] = q_gid[b], q_gid[a]
    for j in range(q_int.shape[1]):
        q_int[a, j], q_int[b, j] = q_int[b, j], q_int[a, j]
    for j in range(q_flt.shape[1]):
        q_flt[a, j], q_flt[b, j] = q_flt[b, j], q_flt[a, j]
    for j in range(q_mv.shape[1]):
        q_mv[a, j], q_mv[b, j] = q_mv[b, j], q_mv[a, j]


def make_sweep(mode: int):
    """The sweep kernel of one variant. Its flags are closure constants, so numba compiles each
    variant's own loop with the other variants' branches folded away (Trill generates one
    operator per variant)."""
    window = mode == MODE_WINDOW
    fifo = mode == MODE_FIFO
    heap = mode == MODE_HEAP
    queued = fifo or heap
    # float sums carry Neumaier's compensation where events leave by subtraction (see _add_flt); with start
    # edges only nothing leaves, and the sum is the plain one in row order, as DuckDB's SUM over rows
    compensated = mode != MODE_NONE

    def sweep(
        sync, other, gid, ic, fc, mv, wt, upto, window_len,
        st, held, held_flag, g_int, g_flt, g_cnt, ms, ms_len, ms_sorted, md, md_len,
        m_kind, m_param, m_valid, m_float,
        q_time, q_gid, q_int, q_flt, q_mv,
        o_valid, o_start, o_int, o_flt, o_cnt, o_res,
        out_sync, out_other, out_gid, out_int, out_flt, out_cnt, out_res,
        stage_idx, stage_val, stage_n, f_piv, f_sq, p_valid, p_src, g_piv,
    ):  # fmt: skip
        """Feed one batch (sorted by sync time), then let progress reach ``upto``.

        ``wt``: empty when each row is one event, else how many events each row stands for (rows that
        a filter-and-accumulate loop merged: equal times and group, contributions added up; only the
        variants without an endpoint queue take them).

        Each step applies one delta: the earliest queued end if it is due, else the next event;
        when time moves on, the held groups' results are emitted first. It is written out in this
        one loop on purpose: in numba, helpers that take arrays (even inlined ones: measured 2-4x
        slower on the emit path), or choosing between arrays in one variable, cost more than the
        work itself. The heap swap's inlined helper measured free. Multiset values are staged
        (``stage_*``: room for every value this call can add or remove) and flushed before results
        are read and before returning.

        Shifted sums (variance, stddev): float slot ``j`` with ``f_piv[j] = p >= 0`` reads the raw value
        and adds ``d = x - K`` (``f_sq[j]``: ``d * d``), ``K = g_piv[g, p]`` the group's pivot: the first
        finite value to arrive while the group held no valid value of that argument (int slot
        ``p_valid[p]``; ``p_src[p]`` the float slot with the raw value). The pivot stays while any value
        is alive, so what an event removes is what it added (queued ends keep their shifted
        contributions); NaN as a pivot: none yet (only infinities alive, whose shift is themselves).
        """
        km = len(m_kind)
        ki = ic.shape[1]
        kf = fc.shape[1]
        n = len(sync)
        weighted = len(wt) > 0
        res = np.empty(km, np.int64)  # the current group's order-aggregate results
        fbuf = np.empty(1, np.float64)
        ibuf = fbuf.view(np.int64)
        npiv = len(p_valid)
        fr = np.empty(kf, np.float64)  # the current row's float contributions
        i = 0
        while True:
            t = sync[i] if i < n else upto
            use_queue = False
            top = 0
            if queued and st[QSIZE] > 0:
                top = st[QHEAD] if fifo else 0
                e = q_time[top]
                use_queue = e <= t if i < n else e < t
                if use_queue:
                    t = e
            done = not use_queue and i == n
            if st[NHELD] > 0 and ((done and st[CUR] < upto) or (not done and t != st[CUR])):
                # -- emit the held groups' results at the current time, then clear the held list --
                if km > 0:
                    _flush_stage(ms, ms_len, md, md_len, stage_idx, stage_val, stage_n)
                cur = st[CUR]
                o = st[NOUT]
                for h in range(st[NHELD]):
                    g = held[h]
                    held_flag[g] = False
                    if queued and kf > 0:  # a sum that may hold what values that left rounded away: rebuilt
                        if g_cnt[g] == 0:
                            for j in range(3 * kf):
                                g_flt[g, j] = 0.0
                        else:
                            for j in range(kf):
                                bound = RESIDUE * abs(g_flt[g, j] + g_flt[g, kf + j])
                                if f_piv[j] < 0 and g_flt[g, 2 * kf + j] > bound:
                                    lo = st[QHEAD] if fifo else 0
                                    if _rebuild_sums(g, g_flt, f_piv, q_gid, q_flt, lo, lo + st[QSIZE], kf, g_cnt[g]):
                                        stage_n[2] = 1
                                    break
                    for j in range(km):
                        idx = g * km + j
                        _normalize(ms, ms_len, ms_sorted, md, md_len, idx)
                        res[j] = _ms_result(ms[idx], ms_len[idx], m_kind[j], m_param[j], m_float[j], fbuf, ibuf)
                    if window:  # tumbling window: the result is the window's interval; the state resets
                        if g_cnt[g] > 0:
                            out_sync[o] = cur
                            out_other[o] = cur + window_len
                            out_gid[o] = g
                            for j in range(ki):
                                out_int[o, j] = g_int[g, j]
                            for j in range(kf):
                                out_flt[o, j] = _flt_value(g_flt, g, j, kf)
                            out_cnt[o] = g_cnt[g]
                            for j in range(km):
                                out_res[o, j] = res[j]
                            o += 1
                        for j in range(ki):
                            g_int[g, j] = 0
                        for j in range(3 * kf):
                            g_flt[g, j] = 0.0
                        g_cnt[g] = 0
                        for j in range(km):
                            ms_len[g * km + j] = 0
                            ms_sorted[g * km + j] = 0
                            md_len[g * km + j] = 0
                        continue
                    if o_valid[g] and g_cnt[g] == o_cnt[g]:
                        same = True
                        for j in range(ki):
                            same = same and g_int[g, j] == o_int[g, j]
                        for j in range(kf):
                            same = same and _flt_value(g_flt, g, j, kf) == o_flt[g, j]
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
                            o_flt[g, j] = _flt_value(g_flt, g, j, kf)
                            out_flt[o, j] = o_flt[g, j]
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
                if km > 0:
                    _flush_stage(ms, ms_len, md, md_len, stage_idx, stage_val, stage_n)
                break
            st[CUR] = t
            if use_queue:
                if fifo:
                    row = top
                    st[QHEAD] = top + 1
                    st[QSIZE] -= 1
                else:  # heap: move the minimum just past the shrunken heap, then sift down
                    row = st[QSIZE] - 1
                    _q_swap(0, row, q_time, q_gid, q_int, q_flt, q_mv)
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
                        _q_swap(pos, child, q_time, q_gid, q_int, q_flt, q_mv)
                        pos = child
                g = q_gid[row]
                sign = -1
                w = 1
                for j in range(ki):
                    g_int[g, j] -= q_int[row, j]
                for j in range(kf):
                    _add_flt(g_flt, g, j, kf, -q_flt[row, j])
                if km > 0:
                    _apply_multisets(g, sign, q_mv, q_int, row, km, m_valid, stage_idx, stage_val, stage_n)
            else:
                row = i
                i += 1
                g = gid[row]
                o = other[row]
                sign = -1 if o < t else 1
                w = wt[row] if weighted else 1
                for p in range(npiv):  # a group with no valid value alive takes this value as its pivot
                    if sign > 0 and ic[row, p_valid[p]] != 0:
                        piv = g_piv[g, p]
                        if g_int[g, p_valid[p]] == 0 or piv != piv:
                            x = fc[row, p_src[p]]
                            g_piv[g, p] = x if np.isfinite(x) else np.nan
                for j in range(kf):
                    v = fc[row, j]
                    p = f_piv[j]
                    if p >= 0:
                        if ic[row, p_valid[p]] == 0:
                            v = 0.0
                        else:
                            piv = g_piv[g, p]
                            if piv == piv:
                                v = v - piv
                            if f_sq[j]:
                                v = v * v
                    fr[j] = v
                if queued and sign > 0 and o != 9223372036854775807:
                    size = st[QSIZE]
                    pos = st[QHEAD] + size if fifo else size
                    q_time[pos] = o
                    q_gid[pos] = g
                    for j in range(ki):
                        q_int[pos, j] = ic[row, j]
                    for j in range(kf):
                        q_flt[pos, j] = fr[j]
                    for j in range(km):
                        q_mv[pos, j] = mv[row, j]
                    st[QSIZE] = size + 1
                    if heap:  # sift up
                        while pos > 0:
                            parent = (pos - 1) >> 1
                            if q_time[parent] <= q_time[pos]:
                                break
                            _q_swap(parent, pos, q_time, q_gid, q_int, q_flt, q_mv)
                            pos = parent
                for j in range(ki):
                    g_int[g, j] += sign * ic[row, j]
                for j in range(kf):
                    if compensated:
                        _add_flt(g_flt, g, j, kf, sign * fr[j])
                    else:  # start edges only: nothing leaves, the plain running sum in row order (DuckDB's SUM)
                        g_flt[g, j] += sign * fr[j]
                if km > 0:
                    _apply_multisets(g, sign, mv, ic, row, km, m_valid, stage_idx, stage_val, stage_n)
            g_cnt[g] += sign * w
            if not held_flag[g]:
                held_flag[g] = True
                held[st[NHELD]] = g
                st[NHELD] += 1

    # Each variant gets its own cache index file (named after the qualified name): processes that
    # compile different variants at once would otherwise number their data files alike, and with
    # equal signatures one could load another's code.
    sweep.__qualname__ = f"sweep_{_NAMES[mode]}"
    return numba.njit(cache=True)(sweep)
