"""The semi/anti-join kernel (flat on purpose, like every join kernel: see :mod:`.hash_kernels`)."""

from __future__ import annotations

import numba

from ...core.time import INFINITY, MIN_TIME
from .kinds import _ERR_FIFO, END, FIFO, INTERVAL, NONE, START


@numba.njit(cache=True)
def exists_kernel(
    e_side, e_kind, e_sync, e_other, e_gid, e_row, e_ph, bound, out, i0, exists,
    st, en, ph, gr, seg, nxt, prv, inl, head, lcount, cnt, mark, before, stamp, touched, pending, step,
    qt, qv, qmeta, qkind, alive,
):  # fmt: skip
    """Semi-join (``exists``) or anti-join of side 0 against side 1; outputs (sync, other, left row, -1).

    Side 0 keeps its alive events per key; side 1 only a count of alive events per key. Key
    ids of side 0's null keys are 0, which side 1 never uses. Work happens per time step:
    ends, then starts, then the keys whose count crossed zero flip their left events, and
    the left events that started in the step get their first piece.
    """
    n_ev = len(e_side)
    cap = out.shape[1]
    n = 0
    err = 0
    n_touched = step[0]
    n_pending = step[1]
    cur = step[2]
    i = i0
    while True:
        qs = -1
        qtime = INFINITY
        if qmeta[0, 1] > qmeta[0, 0]:
            qs = 0
            qtime = qt[0, qmeta[0, 0]]
        if qmeta[1, 1] > qmeta[1, 0] and (qs < 0 or qt[1, qmeta[1, 0]] < qtime):
            qs = 1
            qtime = qt[1, qmeta[1, 0]]
        use_queue = qs >= 0 and qtime < bound and (i >= n_ev or qtime <= e_sync[i])
        if use_queue:
            t = qtime
        elif i < n_ev:
            t = e_sync[i]
        else:
            t = INFINITY
        if t > cur:
            # the step at ``cur`` is complete
            need = n_pending
            for j in range(n_touched):
                need += lcount[0, touched[j]]
            if n + need > cap:
                step[0] = n_touched
                step[1] = n_pending
                step[2] = cur
                return n, i, need, err
            for j in range(n_touched):
                g = touched[j]
                now = cnt[g] > 0
                if (before[g] > 0) != now:
                    want = now == exists
                    x = head[0, g]
                    while x >= 0:
                        if st[0, x] < cur:
                            # a flag, not a sentinel time: a piece may start at any time, -1 included
                            emit = False
                            emit_other = INFINITY
                            if want and seg[x] == NONE:
                                emit = True
                                seg[x] = cur
                            elif not want and seg[x] != NONE:
                                emit = True
                                emit_other = seg[x]
                                seg[x] = NONE
                            if emit:
                                out[0, n] = cur
                                out[1, n] = emit_other
                                out[2, n] = x
                                out[3, n] = -1
                                n += 1
                        x = nxt[0, x]
            n_touched = 0
            for j in range(n_pending):
                x = pending[j]
                if inl[0, x] and (cnt[gr[0, x]] > 0) == exists:
                    out[0, n] = cur
                    out[1, n] = INFINITY
                    out[2, n] = x
                    out[3, n] = -1
                    n += 1
                    seg[x] = cur
            n_pending = 0
            stamp[0] += 1
            cur = t
        if t == INFINITY:
            break
        if n + 1 > cap:
            step[0] = n_touched
            step[1] = n_pending
            step[2] = cur
            return n, i, 1, err
        x = -1  # a left event that ends now, if any
        if use_queue:
            s = qs
            if qkind[s] == FIFO:
                v = qv[s, qmeta[s, 0]]
                qmeta[s, 0] += 1
            else:
                v = qv[s, 0]
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
            if s == 0:
                if inl[0, v]:
                    x = v
            else:
                if mark[v] != stamp[0]:
                    mark[v] = stamp[0]
                    before[v] = cnt[v]
                    touched[n_touched] = v
                    n_touched += 1
                cnt[v] -= 1
        else:
            g = e_gid[i]
            k = e_kind[i]
            side = e_side[i]
            other_time = e_other[i]
            h = e_ph[i]
            row = e_row[i]
            i += 1
            if g < 0:
                continue
            if side == 1:
                if mark[g] != stamp[0]:
                    mark[g] = stamp[0]
                    before[g] = cnt[g]
                    touched[n_touched] = g
                    n_touched += 1
                if k == END:
                    cnt[g] -= 1
                else:
                    cnt[g] += 1
                    if k == INTERVAL:
                        j = qmeta[1, 1]
                        if qkind[1] == FIFO:
                            if j > qmeta[1, 0] and qt[1, j - 1] > other_time:
                                err = _ERR_FIFO
                            qt[1, j] = other_time
                            qv[1, j] = g
                            qmeta[1, 1] = j + 1
                        else:
                            qmeta[1, 1] = j + 1
                            while j > 0:
                                p = (j - 1) >> 1
                                if qt[1, p] <= other_time:
                                    break
                                qt[1, j] = qt[1, p]
                                qv[1, j] = qv[1, p]
                                j = p
                            qt[1, j] = other_time
                            qv[1, j] = g
            elif k == END:
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
                seg[x] = NONE
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
                pending[n_pending] = x
                n_pending += 1
                x = -1
        if x >= 0:
            # left event x ends at t: leave the table, close its open piece
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
            if seg[x] != NONE:
                out[0, n] = t
                out[1, n] = seg[x]
                out[2, n] = x
                out[3, n] = -1
                n += 1
                seg[x] = NONE
    step[0] = 0
    step[1] = 0
    step[2] = MIN_TIME
    return n, i, 0, err
