"""The symmetric hash kernels of the inner join and of clip (the semi/anti-join's is
:mod:`.exists_kernel`; the merge join's :mod:`.merge_kernel`).

All of the join's kernels follow the style described below; the pieces these and the semi/anti-join's
share (endpoint queues, per-key lists, output rows) are in :mod:`.kernel_parts`, spliced into each kernel
by numba.
"""

from __future__ import annotations

import numba

from ...core.time import INFINITY
from .kernel_parts import (
    event,
    find_start_edge,
    list_add,
    list_remove,
    overlap_end,
    put,
    put_pair,
    queue_first,
    queue_pop,
    queue_push,
)
from .kinds import _ERR_FIFO, END, INTERVAL, START

# --------------------------------------------------------------------------------------
# kernels. They are flat on purpose: a numba helper called with arrays, or an array variable
# rebound inside the loop, costs tens to hundreds of nanoseconds per event in reference
# counting. The queue, list and output pieces they share are :mod:`.kernel_parts`'
# ``inline="always"`` functions (numba splices their bodies in) and the kernels are compiled
# with ``_nrt=False``, so nothing is reference counted (see there); output goes into a
# caller-owned buffer ``out`` (rows: sync, other, left row, right row). Before each item a
# kernel checks there is room for everything the item can emit (the other side's list length
# for the key); if not, it returns ``(n, i, need, err)`` with ``need > 0`` and the caller
# drains the buffer (growing it to ``need``) and calls again from event ``i``.
# --------------------------------------------------------------------------------------
_EXPIRE, _END_EDGE, _START = 0, 1, 2


@numba.njit(cache=True, _nrt=False)
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
        qs, qtime = queue_first(qt, qmeta)
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
            x = queue_pop(qt, qv, qmeta, qkind, s)
            g = gr[s, x]
            mode = _EXPIRE
        else:
            g, k, s, other_time, h, x = event(e_gid, e_kind, e_side, e_other, e_ph, e_row, e)
            i += 1
            if g < 0:
                continue
            if s == 1 and k == INTERVAL and other_time == t + 1:
                # a right point meets exactly the left events alive now (the left's at t came first,
                # those ending at t are gone): each pair is [t, t+1), known now; the point is never stored
                y = head[0, g]
                while y >= 0:
                    put(out, n, t, t + 1, y, x)
                    n += 1
                    y = nxt[0, y]
                continue
            if k == END:
                x = find_start_edge(head, nxt, st, en, ph, s, g, other_time, h)
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
                    if queue_push(qt, qv, qmeta, qkind, s, other_time, x):
                        err = _ERR_FIFO
                list_add(head, nxt, prv, inl, lcount, alive, s, g, x)
                mode = _START
        if mode != _START:
            list_remove(head, nxt, prv, inl, lcount, alive, s, g, x)
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
                other_out = overlap_end(xe, ye)
            else:
                emit = mode == _END_EDGE or ye == INFINITY
                other_out = max(xs, st[o, y])
            if emit:
                put_pair(out, n, t, other_out, s, x, y)
                n += 1
            y = nxt[o, y]
    return n, i, 0, err


@numba.njit(cache=True, _nrt=False)
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
            v = queue_pop(qt, qv, qmeta, qkind, 0)
            if inl[0, v]:
                x = v
        else:
            g, k, side, other_time, h, row = event(e_gid, e_kind, e_side, e_other, e_ph, e_row, i)
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
                        list_remove(head, nxt, prv, inl, lcount, alive, 0, g, y)
                        put(out, n, t, st[0, y], y, -1)
                        n += 1
                    y = ny
                continue
            if k == END:
                x = find_start_edge(head, nxt, st, en, ph, 0, g, other_time, h)
            else:
                x = row
                st[0, x] = t
                gr[0, x] = g
                ph[0, x] = h
                if k == START:
                    en[0, x] = INFINITY
                else:
                    en[0, x] = other_time
                    if queue_push(qt, qv, qmeta, qkind, 0, other_time, x):
                        err = _ERR_FIFO
                list_add(head, nxt, prv, inl, lcount, alive, 0, g, x)
                put(out, n, t, INFINITY, x, -1)
                n += 1
                continue
        if x >= 0:
            list_remove(head, nxt, prv, inl, lcount, alive, 0, gr[0, x], x)
            put(out, n, t, st[0, x], x, -1)
            n += 1
    return n, i, 0, err
