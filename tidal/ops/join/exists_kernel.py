"""The semi/anti-join kernel (flat on purpose, like every join kernel: see :mod:`.hash_kernels`; shared pieces in
:mod:`.kernel_parts`)."""

from __future__ import annotations

import numba

from ...core.time import INFINITY, MIN_TIME
from .kernel_parts import event, find_start_edge, list_add, list_remove, put, queue_first, queue_pop, queue_push
from .kinds import _ERR_FIFO, END, INTERVAL, NONE, START


@numba.njit(cache=True, inline="always")
def _touch(cnt, mark, before, stamp, touched, n_touched, g):
    """Note key ``g``'s right count before this time step changes it (once per step); returns the new number of
    keys noted."""
    if mark[g] != stamp[0]:
        mark[g] = stamp[0]
        before[g] = cnt[g]
        touched[n_touched] = g
        n_touched += 1
    return n_touched


@numba.njit(cache=True, _nrt=False)
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
        qs, qtime = queue_first(qt, qmeta)
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
                                put(out, n, cur, emit_other, x, -1)
                                n += 1
                        x = nxt[0, x]
            n_touched = 0
            for j in range(n_pending):
                x = pending[j]
                if inl[0, x] and (cnt[gr[0, x]] > 0) == exists:
                    put(out, n, cur, INFINITY, x, -1)
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
            v = queue_pop(qt, qv, qmeta, qkind, s)
            if s == 0:
                if inl[0, v]:
                    x = v
            else:
                n_touched = _touch(cnt, mark, before, stamp, touched, n_touched, v)
                cnt[v] -= 1
        else:
            g, k, side, other_time, h, row = event(e_gid, e_kind, e_side, e_other, e_ph, e_row, i)
            i += 1
            if g < 0:
                continue
            if side == 1:
                n_touched = _touch(cnt, mark, before, stamp, touched, n_touched, g)
                if k == END:
                    cnt[g] -= 1
                else:
                    cnt[g] += 1
                    if k == INTERVAL and queue_push(qt, qv, qmeta, qkind, 1, other_time, g):
                        err = _ERR_FIFO
            elif k == END:
                x = find_start_edge(head, nxt, st, en, ph, 0, g, other_time, h)
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
                    if queue_push(qt, qv, qmeta, qkind, 0, other_time, x):
                        err = _ERR_FIFO
                list_add(head, nxt, prv, inl, lcount, alive, 0, g, x)
                pending[n_pending] = x
                n_pending += 1
                x = -1
        if x >= 0:
            # left event x ends at t: leave the table, close its open piece
            list_remove(head, nxt, prv, inl, lcount, alive, 0, gr[0, x], x)
            if seg[x] != NONE:
                put(out, n, t, seg[x], x, -1)
                n += 1
                seg[x] = NONE
    step[0] = 0
    step[1] = 0
    step[2] = MIN_TIME
    return n, i, 0, err
