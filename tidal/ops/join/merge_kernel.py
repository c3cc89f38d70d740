"""The merge join's kernel (flat on purpose, like every join kernel: see :mod:`.hash_kernels`).

It grows its output buffer itself, so it runs under numba's runtime and spells out its queue operations
rather than splicing in :mod:`.kernel_parts` (whose pieces would be reference counted here: see there)."""

from __future__ import annotations

import numba
import numpy as np

from ...core.time import INFINITY, MIN_TIME
from .kinds import _ERR_FIFO, _ERR_ORDER, END, FIFO, START


@numba.njit(cache=True)
def merge_join_kernel(
    e_kind, e_sync, e_other, e_key, e_row, e_ph, n0, bound, out,
    st, en, ph, kc, inl, srt, m, tmp, qt, qv, qmeta, qkind, alive,
):  # fmt: skip
    """Merge join over both sides' events (side 0 then side 1, each key-sorted within a sync time).

    Each side keeps its alive events in ``srt``, row numbers sorted by key: a time step's new
    events, already in key order, find their partners by a forward (galloping) walk over the
    other side's sorted rows, meet the other side's new events by a merge of the two runs,
    and are merged into their own side's sorted rows in one linear pass. Ends go first, as in
    the hash join. Returns (out, n, err); ``out`` grows as needed.
    """
    n_ev = len(e_kind)
    n = 0
    err = 0
    p0 = 0
    p1 = n0
    while True:
        t = INFINITY
        if p0 < n0:
            t = e_sync[p0]
        if p1 < n_ev and e_sync[p1] < t:
            t = e_sync[p1]
        qs = -1
        qtime = INFINITY
        if qmeta[0, 1] > qmeta[0, 0]:
            qs = 0
            qtime = qt[0, qmeta[0, 0]]
        if qmeta[1, 1] > qmeta[1, 0] and (qs < 0 or qt[1, qmeta[1, 0]] < qtime):
            qs = 1
            qtime = qt[1, qmeta[1, 0]]
        if qs >= 0 and qtime < bound and qtime < t:
            t = qtime
        if t == INFINITY or t >= bound:
            break
        # 1. interval ends due now (either side): pairs with an open start edge end here
        while True:
            qs = -1
            qtime = INFINITY
            if qmeta[0, 1] > qmeta[0, 0]:
                qs = 0
                qtime = qt[0, qmeta[0, 0]]
            if qmeta[1, 1] > qmeta[1, 0] and (qs < 0 or qt[1, qmeta[1, 0]] < qtime):
                qs = 1
                qtime = qt[1, qmeta[1, 0]]
            if qs < 0 or qtime != t:
                break
            s = qs
            if qkind[s] == FIFO:
                x = qv[s, qmeta[s, 0]]
                qmeta[s, 0] += 1
            else:
                x = qv[s, 0]
                mm = qmeta[s, 1] - 1
                qmeta[s, 1] = mm
                if mm > 0:
                    lt = qt[s, mm]
                    lv = qv[s, mm]
                    j = 0
                    while True:
                        c = 2 * j + 1
                        if c >= mm:
                            break
                        if c + 1 < mm and qt[s, c + 1] < qt[s, c]:
                            c += 1
                        if qt[s, c] >= lt:
                            break
                        qt[s, j] = qt[s, c]
                        qv[s, j] = qv[s, c]
                        j = c
                    qt[s, j] = lt
                    qv[s, j] = lv
            if not inl[s, x]:
                continue
            inl[s, x] = False
            alive[s] -= 1
            o = 1 - s
            key = kc[s, x]
            lo = 0
            hi = m[o]
            while lo < hi:
                mid = (lo + hi) >> 1
                if kc[o, srt[o, mid]] < key:
                    lo = mid + 1
                else:
                    hi = mid
            while lo < m[o] and kc[o, srt[o, lo]] == key:
                y = srt[o, lo]
                lo += 1
                if inl[o, y] and en[o, y] == INFINITY:
                    if n >= out.shape[1]:
                        bigger = np.empty((4, 2 * out.shape[1] + 1), np.int64)
                        bigger[:, :n] = out[:, :n]
                        out = bigger
                    out[0, n] = t
                    out[1, n] = max(st[s, x], st[o, y])
                    out[2, n] = x if s == 0 else y
                    out[3, n] = y if s == 0 else x
                    n += 1
        # the runs of events at t: [a0, b0) and [a1, b1)
        a0 = p0
        while p0 < n0 and e_sync[p0] == t:
            p0 += 1
        a1 = p1
        while p1 < n_ev and e_sync[p1] == t:
            p1 += 1
        # 2. end edges at t: find their start edge among the side's sorted rows
        for s in range(2):
            a = a0 if s == 0 else a1
            b = p0 if s == 0 else p1
            o = 1 - s
            prev_key = MIN_TIME
            for i in range(a, b):
                key = e_key[i]
                if key < prev_key:
                    err = _ERR_ORDER
                    return out, n, err
                prev_key = key
                if e_kind[i] != END:
                    continue
                lo = 0
                hi = m[s]
                while lo < hi:
                    mid = (lo + hi) >> 1
                    if kc[s, srt[s, mid]] < key:
                        lo = mid + 1
                    else:
                        hi = mid
                x = -1
                while lo < m[s] and kc[s, srt[s, lo]] == key:
                    y = srt[s, lo]
                    lo += 1
                    if inl[s, y] and st[s, y] == e_other[i] and en[s, y] == INFINITY and ph[s, y] == e_ph[i]:
                        x = y
                        break
                if x < 0:
                    continue
                inl[s, x] = False
                alive[s] -= 1
                lo = 0
                hi = m[o]
                while lo < hi:
                    mid = (lo + hi) >> 1
                    if kc[o, srt[o, mid]] < key:
                        lo = mid + 1
                    else:
                        hi = mid
                while lo < m[o] and kc[o, srt[o, lo]] == key:
                    y = srt[o, lo]
                    lo += 1
                    if inl[o, y]:
                        if n >= out.shape[1]:
                            bigger = np.empty((4, 2 * out.shape[1] + 1), np.int64)
                            bigger[:, :n] = out[:, :n]
                            out = bigger
                        out[0, n] = t
                        out[1, n] = max(st[s, x], st[o, y])
                        out[2, n] = x if s == 0 else y
                        out[3, n] = y if s == 0 else x
                        n += 1
        # 3. starts at t: register them, then meet the other side's older rows by a forward walk
        for s in range(2):
            a = a0 if s == 0 else a1
            b = p0 if s == 0 else p1
            o = 1 - s
            lo = 0
            for i in range(a, b):
                k = e_kind[i]
                if k == END:
                    continue
                x = e_row[i]
                key = e_key[i]
                st[s, x] = t
                kc[s, x] = key
                ph[s, x] = e_ph[i]
                inl[s, x] = True
                alive[s] += 1
                if k == START:
                    en[s, x] = INFINITY
                else:
                    other_time = e_other[i]
                    en[s, x] = other_time
                    j = qmeta[s, 1]
                    if qkind[s] == FIFO:
                        if j > qmeta[s, 0] and qt[s, j - 1] > other_time:
                            err = _ERR_FIFO
                        qt[s, j] = other_time
                        qv[s, j] = x
                        qmeta[s, 1] = j + 1
                    else:
                        qmeta[s, 1] = j + 1
                        while j > 0:
                            pj = (j - 1) >> 1
                            if qt[s, pj] <= other_time:
                                break
                            qt[s, j] = qt[s, pj]
                            qv[s, j] = qv[s, pj]
                            j = pj
                        qt[s, j] = other_time
                        qv[s, j] = x
                # gallop: keys only grow along the run, so the walk never goes back
                step = 1
                while lo + step < m[o] and kc[o, srt[o, lo + step - 1]] < key:
                    step *= 2
                hi = min(lo + step, m[o])
                while lo < hi:
                    mid = (lo + hi) >> 1
                    if kc[o, srt[o, mid]] < key:
                        lo = mid + 1
                    else:
                        hi = mid
                xe = en[s, x]
                q = lo
                while q < m[o] and kc[o, srt[o, q]] == key:
                    y = srt[o, q]
                    q += 1
                    if inl[o, y]:
                        ye = en[o, y]
                        if n >= out.shape[1]:
                            bigger = np.empty((4, 2 * out.shape[1] + 1), np.int64)
                            bigger[:, :n] = out[:, :n]
                            out = bigger
                        out[0, n] = t
                        out[1, n] = min(xe, ye) if (xe != INFINITY and ye != INFINITY) else INFINITY
                        out[2, n] = x if s == 0 else y
                        out[3, n] = y if s == 0 else x
                        n += 1
        # 4. the two new runs meet each other: a merge of two key-sorted runs
        i = a0
        j = a1
        while i < p0 and j < p1:
            if e_kind[i] == END:
                i += 1
                continue
            if e_kind[j] == END:
                j += 1
                continue
            if e_key[i] < e_key[j]:
                i += 1
            elif e_key[i] > e_key[j]:
                j += 1
            else:
                key = e_key[i]
                i_end = i
                while i_end < p0 and e_key[i_end] == key:
                    i_end += 1
                j_end = j
                while j_end < p1 and e_key[j_end] == key:
                    j_end += 1
                for ii in range(i, i_end):
                    if e_kind[ii] == END:
                        continue
                    x = e_row[ii]
                    xe = en[0, x]
                    for jj in range(j, j_end):
                        if e_kind[jj] == END:
                            continue
                        y = e_row[jj]
                        ye = en[1, y]
                        if n >= out.shape[1]:
                            bigger = np.empty((4, 2 * out.shape[1] + 1), np.int64)
                            bigger[:, :n] = out[:, :n]
                            out = bigger
                        out[0, n] = t
                        out[1, n] = min(xe, ye) if (xe != INFINITY and ye != INFINITY) else INFINITY
                        out[2, n] = x
                        out[3, n] = y
                        n += 1
                i = i_end
                j = j_end
        # 5. each side's new run joins its sorted rows: one linear merge, dropping the dead
        for s in range(2):
            a = a0 if s == 0 else a1
            b = p0 if s == 0 else p1
            starts = 0
            for i in range(a, b):
                if e_kind[i] != END:
                    starts += 1
            if starts == 0 and m[s] <= 2 * alive[s] + 64:
                continue
            u = 0
            v = a
            w = 0
            while True:
                while u < m[s] and not inl[s, srt[s, u]]:
                    u += 1
                while v < b and e_kind[v] == END:
                    v += 1
                if u >= m[s] and v >= b:
                    break
                if v >= b or (u < m[s] and kc[s, srt[s, u]] <= e_key[v]):
                    tmp[w] = srt[s, u]
                    u += 1
                else:
                    tmp[w] = e_row[v]
                    v += 1
                w += 1
            for u in range(w):
                srt[s, u] = tmp[u]
            m[s] = w
    return out, n, err
