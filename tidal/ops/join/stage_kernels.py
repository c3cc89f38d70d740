"""Small numba loops around the join kernels: staging a chunk's events, merging two time-sorted runs,
renumbering links after compaction, gathering stored values."""

from __future__ import annotations

import numba
import numpy as np

from ...core.time import INFINITY
from .kinds import END, INTERVAL, START

_NO_ROWS = np.zeros(0, np.bool_)  # stands for "no absence vector" in a kernel's arguments


@numba.njit(cache=True)
def _stage(
    sync, other, points, absent, kid, base, dense, side, off,
    s_side, s_kind, s_sync, s_other, s_gid, s_row, s_ph,
):  # fmt: skip
    """Write one batch's present events into the staging arrays from ``off`` on, with their kind and store row
    (``base`` plus the rank among present rows when ``dense``, else plus the position).

    Returns (end offset, intervals, end edges, edges of either kind). Every event is written and an absent
    one overwritten by the next: a branch on absence would be mispredicted about as often as it is taken."""
    has_absent = len(absent) > 0
    w = off
    r = 0
    n_int = 0
    n_end = 0
    n_edge = 0
    for i in range(len(sync)):
        keep = 1 - np.int64(absent[i]) if has_absent else 1
        t = sync[i]
        o = t + 1 if points else other[i]
        start = np.int64(o == INFINITY)
        end = np.int64(o < t)
        s_kind[w] = INTERVAL - start * (INTERVAL - START) - end * (INTERVAL - END)
        n_int += keep * (1 - start - end)
        n_end += keep * end
        n_edge += keep * (start + end)
        s_side[w] = side
        s_sync[w] = t
        s_other[w] = o
        s_gid[w] = kid[i]
        s_row[w] = base + (r if dense else i)
        s_ph[w] = 0
        w += keep
        r += keep
    return w, n_int, n_end, n_edge


@numba.njit(cache=True)
def _merge_order(sync, n0):
    """The order merging ``sync[:n0]`` and ``sync[n0:]``, each sorted (the first run first on ties)."""
    n = len(sync)
    order = np.empty(n, np.int64)
    i = 0
    j = n0
    for w in range(n):
        if j >= n or (i < n0 and sync[i] <= sync[j]):
            order[w] = i
            i += 1
        else:
            order[w] = j
            j += 1
    return order


@numba.njit(cache=True)
def _remap_links(nxt, prv, head, s, keep, mapping):
    """Renumber side s's rows after compaction (``keep``: old row of each new row)."""
    for j in range(len(keep)):
        a = nxt[s, keep[j]]
        b = prv[s, keep[j]]
        nxt[s, j] = mapping[a] if a >= 0 else -1
        prv[s, j] = mapping[b] if b >= 0 else -1
    for g in range(head.shape[1]):
        h = head[s, g]
        if h >= 0:
            head[s, g] = mapping[h]


@numba.njit(cache=True)
def _gather_into(values, rows, out):
    for i in range(len(rows)):
        out[i] = values[rows[i]]
