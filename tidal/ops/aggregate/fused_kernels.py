"""The numba kernels of the fused window aggregate: result rows per (window, group), then sliding hops."""

from __future__ import annotations

import numba
import numpy as np

from .kernels import RESIDUE, _add_flt, _flt_value, _rebuild_sums

# scalar slots of the kernel's persistent state
CUR, HAS_CUR, NHELD, NCLOSED, NROWS = range(5)


@numba.njit(cache=True, inline="always")
def _release(row_of, held, nheld):
    """The open window's groups no longer have a row in it."""
    for h in range(nheld):
        row_of[held[h]] = -1


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
            _release(row_of, held, nheld)
            nheld = 0
            closed = o
        cur = w
        wend = w + hop
        has_cur = True
    if nheld > 0 and cur < upto:  # progress passed the open window
        _release(row_of, held, nheld)
        nheld = 0
        closed = o
    for h in range(nheld):  # the open rows move to the front of the next call's rows
        row_of[held[h]] = h
    st[CUR] = cur
    st[HAS_CUR] = 1 if has_cur else 0
    st[NHELD] = nheld
    st[NCLOSED] = closed
    st[NROWS] = o


# Two functions, not one with two signatures: each keeps its own cache index, so processes compiling
# them at once cannot number their cached code alike (see kernels.make_sweep).
@numba.njit(cache=True)
def add_int(ev_row, values, acc):
    """Add each event's value to its row's sum."""
    for i in range(len(ev_row)):
        acc[ev_row[i]] += values[i]


@numba.njit(cache=True)
def add_float(ev_row, values, acc):
    for i in range(len(ev_row)):
        acc[ev_row[i]] += values[i]


@numba.njit(cache=True)
def add_compensated(ev_row, values, acc, comp):
    """Add each event's value to its row's sum, what each addition rounds away to ``comp`` (Neumaier's)."""
    for i in range(len(ev_row)):
        r = ev_row[i]
        s = acc[r]
        v = values[i]
        t = s + v
        if abs(s) >= abs(v):
            comp[r] += (s - t) + v
        else:
            comp[r] += (v - t) + s
        acc[r] = t


@numba.njit(cache=True)
def add_shifted(ev_row, values, ok, piv, dev, dev2):
    """A variance's shifted sums: each valid event (``ok`` empty: all) adds ``d = x - K`` to ``dev`` and
    ``d * d`` to ``dev2`` of its row, ``K = piv[row]`` the row's first finite value (NaN until one comes;
    an infinity's shift is itself)."""
    every = len(ok) == 0
    for i in range(len(ev_row)):
        if not every and not ok[i]:
            continue
        r = ev_row[i]
        v = values[i]
        k = piv[r]
        if k != k and np.isfinite(v):
            piv[r] = v
            k = v
        d = v - k if k == k else v
        dev[r] += d
        dev2[r] += d * d


# scalar slots of the sliding kernel's persistent state
NEXT_P, HAS_P, QHEAD, QADD, QTAIL, NACTIVE, PREPARED, SOUT, FULL = range(9)


@numba.njit(cache=True)
def slide_hops(
    progress, hop, k, st, q_start, q_gid, q_cnt, q_int, q_flt, tot_cnt, tot_int, tot_flt, active, pos,
    out_p, out_gid, out_cnt, out_int, out_flt, f_piv, f_sq, p_valid, p_dev, p_dev2, q_piv, acc,
):  # fmt: skip
    """Hopping windows of ``k`` hops from per-hop partial sums (queued in start order).

    At each grid point ``p`` before ``progress``: the slices that no longer reach ``p`` (started
    ``k`` hops ago or more) are subtracted from the per-group totals, the slices starting at ``p``
    added, and every group with a non-zero total gets the result ``[p, p + hop)``. Grid points
    where nothing is alive are skipped. When the output is full it stops and says so (``FULL``);
    called again with more room, it goes on where it stopped.

    A variance's shifted sums (float slots ``j`` with ``f_piv[j] = p >= 0``: sums of ``x - K`` and their
    squares, ``K = q_piv[p, slice]`` the slice's first finite value) are never subtracted: a value leaving
    would leave its rounding behind. At each grid point each group's live slices are merged in start
    order, each as (count, mean about the first slice's pivot, sum of squared deviations), by Chan et
    al.'s pairwise formula (``acc``: per group and argument); the result row carries 0 and the merged
    sum of squared deviations.
    """
    npiv = len(p_valid)
    ki = tot_int.shape[1]
    kf = q_flt.shape[0]  # tot_flt holds the totals, then their compensations (see kernels._add_flt)
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
                    if f_piv[j] < 0:
                        _add_flt(tot_flt, g, j, kf, -q_flt[j, head])
                if tot_cnt[g] == 0:  # swap the last active group into its place
                    for j in range(3 * kf):
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
                    if f_piv[j] < 0:
                        _add_flt(tot_flt, g, j, kf, q_flt[j, add])
                add += 1
            prepared = True
        if o + nact > cap:
            full = True
            break
        if npiv > 0:  # merge the live slices (head..add) per group: count, mean, squared deviations
            for a in range(nact):
                for pv in range(npiv):
                    acc[active[a], pv, 0] = 0.0
                    acc[active[a], pv, 1] = 0.0
                    acc[active[a], pv, 2] = 0.0
                    acc[active[a], pv, 3] = 0.0
            for q in range(head, add):
                g = q_gid[q]
                for pv in range(npiv):
                    nb = float(q_int[p_valid[pv], q])
                    if nb == 0.0:
                        continue
                    s1 = q_flt[p_dev[pv], q]
                    kb = q_piv[pv, q]
                    kb = kb if kb == kb else 0.0
                    m2b = q_flt[p_dev2[pv], q] - s1 * s1 / nb if np.isfinite(s1) else np.nan
                    na = acc[g, pv, 0]
                    if na == 0.0:  # means are kept about the first slice's pivot (never rounded at their size)
                        acc[g, pv, 0], acc[g, pv, 1], acc[g, pv, 2], acc[g, pv, 3] = nb, s1 / nb, m2b, kb
                        continue
                    n = na + nb
                    delta = (kb - acc[g, pv, 3]) + s1 / nb - acc[g, pv, 1]
                    acc[g, pv, 1] += delta * (nb / n)
                    acc[g, pv, 2] += m2b + delta * delta * (na * nb / n)
                    acc[g, pv, 0] = n
        for a in range(nact):
            g = active[a]
            for j in range(kf):  # a total that may hold what slices that slid out rounded away: rebuilt
                if f_piv[j] < 0 and tot_flt[g, 2 * kf + j] > RESIDUE * abs(tot_flt[g, j] + tot_flt[g, kf + j]):
                    _rebuild_sums(g, tot_flt, f_piv, q_gid, q_flt.T, head, add, kf, -1)
                    break
            out_p[o] = p
            out_gid[o] = g
            out_cnt[o] = tot_cnt[g]
            for j in range(ki):
                out_int[j, o] = tot_int[g, j]
            for j in range(kf):
                pv = f_piv[j]
                if pv < 0:
                    out_flt[j, o] = _flt_value(tot_flt, g, j, kf)
                else:
                    out_flt[j, o] = acc[g, pv, 2] if f_sq[j] else 0.0
            o += 1
        prepared = False
        p += hop
    st[QHEAD], st[QADD], st[NACTIVE] = head, add, nact
    st[NEXT_P] = p
    st[HAS_P] = 1 if has_p else 0
    st[PREPARED] = 1 if prepared else 0
    st[SOUT] = o
    st[FULL] = 1 if full else 0
