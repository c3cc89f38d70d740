"""The symmetric hash kernels of the inner join and of clip (the semi/anti-join's is
:mod:`.exists_kernel`; the merge join's :mod:`.merge_kernel`).

All of the join's kernels follow the style described below; endpoint-queue pushes and pops are
repeated inline in each on purpose, for the reason given there.
"""

from __future__ import annotations

import numba

from ...core.time import INFINITY
from .kinds import _ERR_FIFO, END, FIFO, INTERVAL, START

# --------------------------------------------------------------------------------------
# kernels. They are written flat on purpose: a numba helper taking arrays, or an array
# variable rebound inside the loop, costs tens to hundreds of nanoseconds per event in
# reference counting, so queue and list operations are spelled out inline, and output goes
# into a caller-owned buffer ``out`` (rows: sync, other, left row, right row). Before each
# item a kernel checks there is room for everything the item can emit (the other side's
# list length for the key); if not, it returns ``(n, i, need, err)`` with ``need > 0`` and
# the caller drains the buffer (growing it to ``need``) and calls again from event ``i``.
# This holds for ``@numba.njit(inline="always")`` helpers too (numba 0.68): each array a
# spliced-in helper takes becomes a kernel variable whose reference is counted on every pass.
# Folding the queue, list, end-edge and output-row pieces of these kernels and of
# :mod:`.exists_kernel` / :mod:`.merge_kernel` into such helpers made the inner join 1.8 to
# 3.1 times slower, the semi/anti-join 1.7x and clip 1.4x, and the merge join 2 to 7% (with
# the same output: ``bench/ab_join_kernels.py``), so the copies stay.
# --------------------------------------------------------------------------------------
_EXPIRE, _END_EDGE, _START = 0, 1, 2


@numba.njit(cache=True)
def join_kernel(
    e_side, e_kind, e_sync, e_other, e_gid, e_row, e_ph, e_order, bound, out, i0,
    st, en, ph, gr, nxt, prv, inl, head, lcount, openc, qt, qv, qmeta, qkind, alive,
):  # fmt: skip
    """Symmetric hash join over merged events (event ``i`` is at ``e_order[i]``: by time, ends first); see the
    package docstring.

    Outputs (sync, other, left row, right row) in sync-time order.
    """
    n_ev = len(e_order)
    cap = out.shape[1]
    n = 0
    err = 0
    i = i0
    while True:
        # the earliest queued interval end, of either side
        qs = -1
        qtime = INFINITY
        if qmeta[0, 1] > qmeta[0, 0]:
            qs = 0
            qtime = qt[0, qmeta[0, 0]]
        if qmeta[1, 1] > qmeta[1, 0] and (qs < 0 or qt[1, qmeta[1, 0]] < qtime):
            qs = 1
            qtime = qt[1, qmeta[1, 0]]
        e = e_order[i] if i < n_ev else 0
        if i < n_ev:
            t = e_sync[e]
            use_queue = qs >= 0 and qtime <= t  # ends at t go before the events at t
        else:
            use_queue = qs >= 0 and qtime < bound
            if not use_queue:
                break
        if use_queue:
            need = lcount[1 - qs, gr[qs, qv[qs, qmeta[qs, 0]]]]
        else:
            need = lcount[1 - e_side[e], e_gid[e]] if e_gid[e] >= 0 else 0
        if n + need > cap:
            return n, i, need, err
        if use_queue:
            s = qs
            t = qtime
            if qkind[s] == FIFO:
                x = qv[s, qmeta[s, 0]]
                qmeta[s, 0] += 1
            else:
                x = qv[s, 0]
                m = qmeta[s, 1] - 1
                qmeta[s, 1] = m
                if m > 0:
                    lt = qt[s, m]
                    lv = qv[s, m]
                    j = 0
                    while True:
                        c = 2 * j + 1
                        if c >= m:
                            break
                        if c + 1 < m and qt[s, c + 1] < qt[s, c]:
                            c += 1
                        if qt[s, c] >= lt:
                            break
                        qt[s, j] = qt[s, c]
                        qv[s, j] = qv[s, c]
                        j = c
                    qt[s, j] = lt
                    qv[s, j] = lv
            g = gr[s, x]
            mode = _EXPIRE
        else:
            g = e_gid[e]
            k = e_kind[e]
            s = e_side[e]
            other_time = e_other[e]
            h = e_ph[e]
            x = e_row[e]
            i += 1
            if g < 0:
                continue
            if s == 1 and k == INTERVAL and other_time == t + 1:
                # a right point meets exactly the left events alive now (the left's at t came first,
                # those ending at t are gone): each pair is [t, t+1), known now; the point is never stored
                y = head[0, g]
                while y >= 0:
                    out[0, n] = t
                    out[1, n] = t + 1
                    out[2, n] = y
                    out[3, n] = x
                    n += 1
                    y = nxt[0, y]
                continue
            if k == END:
                x = head[s, g]
                while x >= 0:
                    if st[s, x] == other_time and en[s, x] == INFINITY and ph[s, x] == h:
                        break
                    x = nxt[s, x]
                if x < 0:
                    continue
                openc[s, g] -= 1
                mode = _END_EDGE
            else:
                st[s, x] = t
                gr[s, x] = g
                ph[s, x] = h
                if k == START:
                    en[s, x] = INFINITY
                    openc[s, g] += 1
                else:
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
                            p = (j - 1) >> 1
                            if qt[s, p] <= other_time:
                                break
                            qt[s, j] = qt[s, p]
                            qv[s, j] = qv[s, p]
                            j = p
                        qt[s, j] = other_time
                        qv[s, j] = x
                q = head[s, g]
                nxt[s, x] = q
                prv[s, x] = -1
                if q >= 0:
                    prv[s, q] = x
                head[s, g] = x
                inl[s, x] = True
                lcount[s, g] += 1
                alive[s] += 1
                mode = _START
        if mode != _START:
            p = prv[s, x]
            q = nxt[s, x]
            if p >= 0:
                nxt[s, p] = q
            else:
                head[s, g] = q
            if q >= 0:
                prv[s, q] = p
            inl[s, x] = False
            lcount[s, g] -= 1
            alive[s] -= 1
        o = 1 - s
        if mode == _EXPIRE and openc[o, g] == 0:
            continue  # pairs of two intervals came out as intervals: nothing to end
        xs = st[s, x]
        xe = en[s, x]
        y = head[o, g]
        while y >= 0:
            ye = en[o, y]
            if mode == _START:
                emit = True
                other_out = min(xe, ye) if (xe != INFINITY and ye != INFINITY) else INFINITY
            else:
                emit = mode == _END_EDGE or ye == INFINITY
                other_out = max(xs, st[o, y])
            if emit:
                out[0, n] = t
                out[1, n] = other_out
                if s == 0:
                    out[2, n] = x
                    out[3, n] = y
                else:
                    out[2, n] = y
                    out[3, n] = x
                n += 1
            y = nxt[o, y]
    return n, i, 0, err


@numba.njit(cache=True)
def clip_kernel(
    e_side, e_kind, e_sync, e_other, e_gid, e_row, e_ph, bound, out, i0,
    st, en, ph, gr, nxt, prv, inl, head, lcount, qt, qv, qmeta, qkind, alive,
):  # fmt: skip
    """Clip side 0's lifetimes at the next start of a key-equal side-1 event; outputs edges."""
    n_ev = len(e_side)
    cap = out.shape[1]
    n = 0
    err = 0
    i = i0
    while True:
        has_q = qmeta[0, 1] > qmeta[0, 0]
        qtime = qt[0, qmeta[0, 0]] if has_q else INFINITY
        if i < n_ev:
            t = e_sync[i]
            use_queue = has_q and qtime <= t
        else:
            use_queue = has_q and qtime < bound
            if not use_queue:
                break
        need = 1
        if not use_queue and e_side[i] == 1 and e_gid[i] >= 0:
            need = lcount[0, e_gid[i]]
        if n + need > cap:
            return n, i, need, err
        x = -1  # a left event whose output ends now
        if use_queue:
            t = qtime
            if qkind[0] == FIFO:
                v = qv[0, qmeta[0, 0]]
                qmeta[0, 0] += 1
            else:
                v = qv[0, 0]
                m = qmeta[0, 1] - 1
                qmeta[0, 1] = m
                if m > 0:
                    lt = qt[0, m]
                    lv = qv[0, m]
                    j = 0
                    while True:
                        c = 2 * j + 1
                        if c >= m:
                            break
                        if c + 1 < m and qt[0, c + 1] < qt[0, c]:
                            c += 1
                        if qt[0, c] >= lt:
                            break
                        qt[0, j] = qt[0, c]
                        qv[0, j] = qv[0, c]
                        j = c
                    qt[0, j] = lt
                    qv[0, j] = lv
            if inl[0, v]:
                x = v
        else:
            g = e_gid[i]
            k = e_kind[i]
            other_time = e_other[i]
            h = e_ph[i]
            row = e_row[i]
            side = e_side[i]
            i += 1
            if g < 0:
                continue
            if side == 1:
                if k == END:
                    continue
                # every unclipped left event of this key that started earlier ends now
                y = head[0, g]
                while y >= 0:
                    ny = nxt[0, y]
                    if st[0, y] < t:
                        p = prv[0, y]
                        if p >= 0:
                            nxt[0, p] = ny
                        else:
                            head[0, g] = ny
                        if ny >= 0:
                            prv[0, ny] = p
                        inl[0, y] = False
                        lcount[0, g] -= 1
                        alive[0] -= 1
                        out[0, n] = t
                        out[1, n] = st[0, y]
                        out[2, n] = y
                        out[3, n] = -1
                        n += 1
                    y = ny
                continue
            if k == END:
                y = head[0, g]
                while y >= 0:
                    if st[0, y] == other_time and en[0, y] == INFINITY and ph[0, y] == h:
                        break
                    y = nxt[0, y]
                x = y
            else:
                x = row
                st[0, x] = t
                gr[0, x] = g
                ph[0, x] = h
                if k == START:
                    en[0, x] = INFINITY
                else:
                    en[0, x] = other_time
                    j = qmeta[0, 1]
                    if qkind[0] == FIFO:
                        if j > qmeta[0, 0] and qt[0, j - 1] > other_time:
                            err = _ERR_FIFO
                        qt[0, j] = other_time
                        qv[0, j] = x
                        qmeta[0, 1] = j + 1
                    else:
                        qmeta[0, 1] = j + 1
                        while j > 0:
                            p = (j - 1) >> 1
                            if qt[0, p] <= other_time:
                                break
                            qt[0, j] = qt[0, p]
                            qv[0, j] = qv[0, p]
                            j = p
                        qt[0, j] = other_time
                        qv[0, j] = x
                q = head[0, g]
                nxt[0, x] = q
                prv[0, x] = -1
                if q >= 0:
                    prv[0, q] = x
                head[0, g] = x
                inl[0, x] = True
                lcount[0, g] += 1
                alive[0] += 1
                out[0, n] = t
                out[1, n] = INFINITY
                out[2, n] = x
                out[3, n] = -1
                n += 1
                continue
        if x >= 0:
            g = gr[0, x]
            p = prv[0, x]
            q = nxt[0, x]
            if p >= 0:
                nxt[0, p] = q
            else:
                head[0, g] = q
            if q >= 0:
                prv[0, q] = p
            inl[0, x] = False
            lcount[0, g] -= 1
            alive[0] -= 1
            out[0, n] = t
            out[1, n] = st[0, x]
            out[2, n] = x
            out[3, n] = -1
            n += 1
    return n, i, 0, err
