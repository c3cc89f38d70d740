"""How ``chains`` cuts a batch of operations into waves of groups when some operation reads another
record (``tidal.tx.codegen`` walks them; otherwise ``tidal.tx.runs`` walks owner lists of chains).

Operations arrive in (event, operation) order: the serial order. A *group* is walked by one
thread in that order; the groups of a *wave* run in parallel; waves run one after another.
Per punctuation interval, one chain per state record (table, key): its operations sorted by
timestamp (TStream's dynamic restructuring). Chains that depend on each other are merged into one
group, walked in timestamp order: an operation reading another record (``source=``) joins that
record's chain, and a transaction that can abort (it has a condition) joins the chains it touches,
so that its abort is decided, and undone, in one place. All groups of an interval form one wave;
the wave's end is the punctuation's barrier.

The other schedulers walk the transactions with the serial walk's code: ``serial`` in one loop
(``tidal.tx.runs``), ``lock`` and ``pat`` on threads that hand records or partitions on in
timestamp order (``tidal.tx.locked``)."""

from __future__ import annotations

import numba
import numpy as np

SCHEDULERS = ("chains", "serial", "lock", "pat", "pipeline")  # pipeline: the serial walk on a second thread
AUTO = "auto"  # the default: picks one of SCHEDULERS (``pick``)
CHAINS_FROM = 3  # ``auto`` runs chains from this many worker threads, the serial walk below


def pick(scheduler: str, threads: int) -> tuple[str, str]:
    """The scheduler that runs, and why, for ``scheduler`` (``auto`` or one of ``SCHEDULERS``, which
    runs as asked) on ``threads`` worker threads.

    ``auto``'s rule, from the measured phases (``bench/tx_phases.py``, ``bench/bench_tx.py``; the
    figures in ``tidal.tx.split``'s docstring): on fewer than ``CHAINS_FROM`` threads the serial walk
    is the fastest known. What chains adds to it there (the component plan: 2 to 5 times the walk it
    plans; waiting at window ends) is more than a second thread takes off the walk, and the walk is
    about half of a query's time; ``lock`` and ``pat`` cost 3 to 40 times the serial walk; ``pipeline``
    (the serial walk on a second thread, overlapping the rest) measured 0.90-0.98x serial's wall
    clock on 2 busy cores, as each batch's hand-over between the threads costs more than the
    Python it overlaps (``tidal.tx.split``'s docstring has the figures). From
    ``CHAINS_FROM`` threads on, ``chains`` (TStream's choice: the seed's machines have many cores;
    not measured here)."""
    if scheduler != AUTO:
        return scheduler, ""
    if threads < CHAINS_FROM:
        return "serial", f"auto: serial on {threads} thread(s), chains from {CHAINS_FROM}"
    return "chains", f"auto: chains on {threads} threads"


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
