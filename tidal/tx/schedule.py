"""How each scheduler cuts a batch of operations into waves of groups (``tidal.tx.codegen`` walks them).

Operations arrive in (event, operation) order: the serial order. A *group* is walked by one
thread in that order; the groups of a *wave* run in parallel; waves run one after another.

- ``serial``: one group, one wave: every operation in timestamp order on one core.
- ``chains`` (TStream's dynamic restructuring) when some operation reads another record
  (``source=`` on another table or key; otherwise ``tidal.tx.runs`` walks owner lists of chains
  without barriers): per punctuation interval, one chain per state
  record (table, key): its operations sorted by timestamp. Chains that depend on each other are
  merged into one group, walked in timestamp order: an operation reading another record
  (``source=``) joins that record's chain, and a transaction that can abort (it has a condition)
  joins the chains it touches, so that its abort is decided, and undone, in one place. All groups
  of an interval form one wave; the wave's end is the punctuation's barrier.
- ``lock`` (ordered per-record locking, the seed's LOCK): a transaction holds every record it
  touches; it starts once every earlier transaction on any of those records has finished. Each
  wave holds the transactions whose predecessors are all in earlier waves, one group each.
- ``pat`` (partitioned, the seed's PAT, after S-Store): records are split into partitions
  (``key % partitions``); between two multi-partition transactions, each partition's transactions
  run in order on one thread; a multi-partition transaction runs alone, holding all partitions.
"""

from __future__ import annotations

import numba
import numpy as np

SCHEDULERS = ("chains", "serial", "lock", "pat")


@numba.njit(cache=True, nogil=True)
def _find(parent, x):
    root = x
    while parent[root] != root:
        root = parent[root]
    while parent[x] != root:
        nxt = parent[x]
        parent[x] = root
        x = nxt
    return root


@numba.njit(cache=True, nogil=True)
def chain_keys(op_ev, op_rec, op_srec, ev_cond, interval, parent, gmap):
    """Per operation: a dense group number, in interval order (the interval is the wave); and the
    number of chains (records touched per interval)."""
    m = len(op_ev)
    gid = np.empty(m, np.int64)
    chains = 0
    groups = 0
    a = 0
    while a < m:
        iv = op_ev[a] // interval
        b = a
        while b < m and op_ev[b] // interval == iv:
            b += 1
        for j in range(a, b):
            r = op_rec[j]
            if parent[r] < 0:
                parent[r] = r
                chains += 1
            s = op_srec[j]
            if s >= 0 and parent[s] < 0:
                parent[s] = s
        first = a
        for j in range(a, b):
            if j == a or op_ev[j] != op_ev[j - 1]:
                first = j
            s = op_srec[j]
            if s >= 0 and s != op_rec[j]:
                ra, rb = _find(parent, op_rec[j]), _find(parent, s)
                if ra != rb:
                    parent[max(ra, rb)] = min(ra, rb)
            if ev_cond[op_ev[j]] and j != first:
                ra, rb = _find(parent, op_rec[j]), _find(parent, op_rec[first])
                if ra != rb:
                    parent[max(ra, rb)] = min(ra, rb)
        for j in range(a, b):
            root = _find(parent, op_rec[j])
            if gmap[root] < 0:
                gmap[root] = groups
                groups += 1
            gid[j] = gmap[root]
        for j in range(a, b):
            gmap[_find(parent, op_rec[j])] = -1
        for j in range(a, b):
            parent[op_rec[j]] = -1
            if op_srec[j] >= 0:
                parent[op_srec[j]] = -1
        a = b
    return gid, groups, chains


@numba.njit(cache=True, nogil=True)
def lock_keys(op_ev, op_rec, op_srec, interval, last):
    """Per operation: (interval, level) as one wave number; a transaction's level is one more than the
    highest level of an earlier transaction on any of its records."""
    m = len(op_ev)
    wave = np.empty(m, np.int64)
    a = 0
    base = 0
    while a < m:
        iv = op_ev[a] // interval
        b = a
        while b < m and op_ev[b] // interval == iv:
            b += 1
        top = 0
        t = a
        while t < b:
            u = t
            while u < b and op_ev[u] == op_ev[t]:
                u += 1
            level = 0
            for j in range(t, u):
                level = max(level, last[op_rec[j]] + 1)
                if op_srec[j] >= 0:
                    level = max(level, last[op_srec[j]] + 1)
            for j in range(t, u):
                last[op_rec[j]] = level
                if op_srec[j] >= 0:
                    last[op_srec[j]] = level
                wave[j] = base + level
            top = max(top, level)
            t = u
        for j in range(a, b):
            last[op_rec[j]] = -1
            if op_srec[j] >= 0:
                last[op_srec[j]] = -1
        base += top + 1
        a = b
    return wave


@numba.njit(cache=True, nogil=True)
def pat_keys(op_ev, op_part, op_spart, interval, partitions):
    """Per operation: its wave and its group key (wave * (partitions + 1) + partition, or + partitions
    for a multi-partition transaction, alone in its wave)."""
    m = len(op_ev)
    wave = np.empty(m, np.int64)
    key = np.empty(m, np.int64)
    w = 0
    used = False
    a = 0
    while a < m:
        iv = op_ev[a] // interval
        b = a
        while b < m and op_ev[b] // interval == iv:
            b += 1
        t = a
        while t < b:
            u = t
            while u < b and op_ev[u] == op_ev[t]:
                u += 1
            p = op_part[t]
            multi = False
            for j in range(t, u):
                if op_part[j] != p or (op_spart[j] >= 0 and op_spart[j] != p):
                    multi = True
            if multi:
                if used:
                    w += 1
                for j in range(t, u):
                    wave[j] = w
                    key[j] = w * (partitions + 1) + partitions
                w += 1
                used = False
            else:
                for j in range(t, u):
                    wave[j] = w
                    key[j] = w * (partitions + 1) + p
                used = True
            t = u
        if used:
            w += 1
            used = False
        a = b
    return wave, key


@numba.njit(cache=True, nogil=True)
def counting_sort(keys, nkeys):
    """The stable order of ``keys`` (each in ``0..nkeys-1``), in linear time."""
    count = np.zeros(nkeys + 1, np.int64)
    for k in keys:
        count[k + 1] += 1
    for k in range(nkeys):
        count[k + 1] += count[k]
    order = np.empty(len(keys), np.int64)
    for j in range(len(keys)):
        k = keys[j]
        order[count[k]] = j
        count[k] += 1
    return order


@numba.njit(cache=True, nogil=True)
def _cuts(order, key, key2, wave):
    m = len(order)
    group_ptr = np.empty(m + 1, np.int64)
    wave_ptr = np.empty(m + 1, np.int64)
    ng = 0
    nw = 0
    for p in range(m):
        j = order[p]
        if p == 0 or key[j] != key[order[p - 1]] or key2[j] != key2[order[p - 1]]:
            if p == 0 or wave[j] != wave[order[p - 1]]:
                wave_ptr[nw] = ng
                nw += 1
            group_ptr[ng] = p
            ng += 1
    group_ptr[ng] = m
    wave_ptr[nw] = ng
    return group_ptr[: ng + 1].copy(), wave_ptr[: nw + 1].copy()


def layout(key: np.ndarray, wave: np.ndarray, key2: np.ndarray | None = None):
    """``(order, group_ptr, wave_ptr)``: operations sorted stably by ``key`` (dense, non-negative, and
    ordered like the waves), a group per run of equal ``key`` (and ``key2``), a wave per run of ``wave``."""
    order = counting_sort(key, int(key.max()) + 1)
    group_ptr, wave_ptr = _cuts(order, key, key if key2 is None else key2, wave)
    return order, group_ptr, wave_ptr


@numba.njit(cache=True, nogil=True, parallel=True)
def chain_layout(op_ev, op_tmpl, op_cell, op_src, op_rec, op_srec, ev_cond, interval, n_rec, nthreads):
    """The ``chains`` layout built in parallel over punctuation intervals (each is independent):
    operations permuted so that each group's lie together in (event, operation) order, the group
    and wave (interval) boundaries, and the number of chains. Each thread keeps its own union-find."""
    m = len(op_ev)
    # interval boundaries
    nint = 0
    for j in range(m):
        if j == 0 or op_ev[j] // interval != op_ev[j - 1] // interval:
            nint += 1
    iv_ptr = np.empty(nint + 1, np.int64)
    k = 0
    for j in range(m):
        if j == 0 or op_ev[j] // interval != op_ev[j - 1] // interval:
            iv_ptr[k] = j
            k += 1
    iv_ptr[nint] = m
    parent = np.full((nthreads, n_rec), -1, np.int64)
    gmap = np.full((nthreads, n_rec), -1, np.int64)
    lgid = np.empty(m, np.int64)
    ngroups = np.zeros(nint, np.int64)
    nchains = np.zeros(nint, np.int64)
    for tid in numba.prange(nthreads):
        par = parent[tid]
        gm = gmap[tid]
        for iv in range(tid * nint // nthreads, (tid + 1) * nint // nthreads):
            a, b = iv_ptr[iv], iv_ptr[iv + 1]
            chains = 0
            for j in range(a, b):
                r = op_rec[j]
                if par[r] < 0:
                    par[r] = r
                    chains += 1
                s = op_srec[j]
                if s >= 0 and par[s] < 0:
                    par[s] = s
            first = a
            for j in range(a, b):
                if j == a or op_ev[j] != op_ev[j - 1]:
                    first = j
                s = op_srec[j]
                if s >= 0 and s != op_rec[j]:
                    ra, rb = _find(par, op_rec[j]), _find(par, s)
                    if ra != rb:
                        par[max(ra, rb)] = min(ra, rb)
                if ev_cond[op_ev[j]] and j != first:
                    ra, rb = _find(par, op_rec[j]), _find(par, op_rec[first])
                    if ra != rb:
                        par[max(ra, rb)] = min(ra, rb)
            g = 0
            for j in range(a, b):
                root = _find(par, op_rec[j])
                if gm[root] < 0:
                    gm[root] = g
                    g += 1
                lgid[j] = gm[root]
            for j in range(a, b):
                gm[_find(par, op_rec[j])] = -1
            for j in range(a, b):
                par[op_rec[j]] = -1
                if op_srec[j] >= 0:
                    par[op_srec[j]] = -1
            ngroups[iv] = g
            nchains[iv] = chains
    goff = np.empty(nint + 1, np.int64)
    goff[0] = 0
    for iv in range(nint):
        goff[iv + 1] = goff[iv] + ngroups[iv]
    group_ptr = np.empty(goff[nint] + 1, np.int64)
    group_ptr[goff[nint]] = m
    o_ev = np.empty(m, np.int64)
    o_tmpl = np.empty(m, np.int64)
    o_cell = np.empty(m, np.int64)
    o_src = np.empty(m, np.int64)
    for iv in numba.prange(nint):
        a, b = iv_ptr[iv], iv_ptr[iv + 1]
        g = ngroups[iv]
        start = np.zeros(g + 1, np.int64)
        for j in range(a, b):
            start[lgid[j] + 1] += 1
        for x in range(g):
            start[x + 1] += start[x]
        for x in range(g):
            group_ptr[goff[iv] + x] = a + start[x]
        for j in range(a, b):
            p = a + start[lgid[j]]
            start[lgid[j]] += 1
            o_ev[p] = op_ev[j]
            o_tmpl[p] = op_tmpl[j]
            o_cell[p] = op_cell[j]
            o_src[p] = op_src[j]
    return o_ev, o_tmpl, o_cell, o_src, group_ptr, goff, nchains.sum()
