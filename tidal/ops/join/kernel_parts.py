"""Pieces shared by the symmetric join kernels (:mod:`.hash_kernels`: inner join and clip; :mod:`.exists_kernel`).

Each is compiled with ``inline="always"``: numba splices its body into the calling kernel at the IR level.
A spliced piece's array parameters become new variables of the kernel, and under numba's runtime (NRT)
every pass through the loop would count references to them (atomic adds that also stop LLVM keeping the
arrays' pointers in registers): measured, 1.4 to 3 times slower kernels. The kernels that use these pieces
are therefore compiled with ``_nrt=False`` (no runtime: no reference counting at all), which they can be
because they allocate nothing (their output goes into a caller-owned buffer; a kernel that allocated would
fail to compile). With it they run as fast as when each spelled these pieces out
(``bench/ab_join_kernels.py``). The merge join's kernel grows its output buffer itself, so it keeps its
own inline copies of the queue operations.

* Endpoint queues, per side ``s``: ``qt[s]`` the queued interval ends (times), ``qv[s]`` what each end
  belongs to (a row, or for the semi/anti-join's right side a key id), ``qmeta[s] = (first, count)``, and
  ``qkind[s]`` how the queue is kept: ``FIFO`` (ends arrive in time order: ``qt[s, first:count]``) or a
  binary min-heap on ``qt[s, :count]``.
* Per-key lists of the rows alive now (the symmetric hash table): ``head[s, g]`` the first row of key id
  ``g``, ``nxt``/``prv`` the doubly linked neighbours, ``inl[s, x]`` whether row ``x`` is in its list,
  ``lcount[s, g]`` the list's length, ``alive[s]`` the rows alive on side ``s``.
* Staged events (a chunk of both sides, merged by time): ``e_gid``, ``e_kind``, ``e_side``, ``e_other``,
  ``e_ph``, ``e_row``, one entry per event.
* Output rows: ``out[:, n] = (sync, other, left row, right row)``.
"""

from __future__ import annotations

import numba

from ...core.time import INFINITY
from .kinds import FIFO


@numba.njit(cache=True, inline="always")
def event(e_gid, e_kind, e_side, e_other, e_ph, e_row, i):
    """Staged event ``i``: its key id (-1: it joins nothing), kind, side, other time, payload hash and row."""
    return e_gid[i], e_kind[i], e_side[i], e_other[i], e_ph[i], e_row[i]


@numba.njit(cache=True, inline="always")
def queue_first(qt, qmeta):
    """The side whose queued interval end comes first (ties: side 0) and that end; ``(-1, INFINITY)`` if none."""
    qs = -1
    qtime = INFINITY
    if qmeta[0, 1] > qmeta[0, 0]:
        qs = 0
        qtime = qt[0, qmeta[0, 0]]
    if qmeta[1, 1] > qmeta[1, 0] and (qs < 0 or qt[1, qmeta[1, 0]] < qtime):
        qs = 1
        qtime = qt[1, qmeta[1, 0]]
    return qs, qtime


@numba.njit(cache=True, inline="always")
def queue_pop(qt, qv, qmeta, qkind, s):
    """Take side ``s``'s earliest queued end off its (non-empty) queue; returns what it belongs to."""
    if qkind[s] == FIFO:
        x = qv[s, qmeta[s, 0]]
        qmeta[s, 0] += 1
        return x
    x = qv[s, 0]
    m = qmeta[s, 1] - 1
    qmeta[s, 1] = m
    if m > 0:
        # sift the last leaf down from the root
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
    return x


@numba.njit(cache=True, inline="always")
def queue_push(qt, qv, qmeta, qkind, s, end, value):
    """Queue the interval end ``end`` of ``value`` on side ``s``; returns whether it breaks a FIFO queue's order
    (an end earlier than the last queued one: the declared constant duration is wrong)."""
    j = qmeta[s, 1]
    if qkind[s] == FIFO:
        late = j > qmeta[s, 0] and qt[s, j - 1] > end
        qt[s, j] = end
        qv[s, j] = value
        qmeta[s, 1] = j + 1
        return late
    qmeta[s, 1] = j + 1
    # sift up from the new leaf
    while j > 0:
        p = (j - 1) >> 1
        if qt[s, p] <= end:
            break
        qt[s, j] = qt[s, p]
        qv[s, j] = qv[s, p]
        j = p
    qt[s, j] = end
    qv[s, j] = value
    return False


@numba.njit(cache=True, inline="always")
def list_add(head, nxt, prv, inl, lcount, alive, s, g, x):
    """Put row ``x`` first in key ``g``'s list of side ``s``."""
    q = head[s, g]
    nxt[s, x] = q
    prv[s, x] = -1
    if q >= 0:
        prv[s, q] = x
    head[s, g] = x
    inl[s, x] = True
    lcount[s, g] += 1
    alive[s] += 1


@numba.njit(cache=True, inline="always")
def list_remove(head, nxt, prv, inl, lcount, alive, s, g, x):
    """Take row ``x`` out of key ``g``'s list of side ``s``."""
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


@numba.njit(cache=True, inline="always")
def find_start_edge(head, nxt, st, en, ph, s, g, start, h):
    """The row of key ``g``'s list on side ``s`` that an end edge closes: a start edge (no end yet) that began at
    ``start`` with payload hash ``h``; -1 if none."""
    x = head[s, g]
    while x >= 0:
        if st[s, x] == start and en[s, x] == INFINITY and ph[s, x] == h:
            return x
        x = nxt[s, x]
    return -1


@numba.njit(cache=True, inline="always")
def put(out, n, sync, other, left, right):
    """Write output row ``n``: (sync, other, left row, right row)."""
    out[0, n] = sync
    out[1, n] = other
    out[2, n] = left
    out[3, n] = right


@numba.njit(cache=True, inline="always")
def put_pair(out, n, sync, other, s, x, y):
    """Write output row ``n`` for row ``x`` of side ``s`` and its partner ``y`` of the other side."""
    out[0, n] = sync
    out[1, n] = other
    if s == 0:
        out[2, n] = x
        out[3, n] = y
    else:
        out[2, n] = y
        out[3, n] = x


@numba.njit(cache=True, inline="always")
def overlap_end(xe, ye):
    """The end of a pair of lifetimes that started (at the later start): the earlier end, or ``INFINITY`` (the
    pair comes out as a start edge) when either has no end yet."""
    return min(xe, ye) if (xe != INFINITY and ye != INFINITY) else INFINITY
