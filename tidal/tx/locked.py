"""State access for ``lock`` and ``pat``: the serial walk's compiled transactions, handed between
threads by ordered locks (the seed's LOCK and PAT baselines, with the same fused code as ``serial``
and ``chains``, so that the benchmark compares schedulers and not code generators).

A *unit* is what a transaction locks: a record (``lock``) or a partition, ``key % partitions`` of
every table (``pat``). From compute mode's grids, one pass in timestamp order gives each
(transaction, unit) pair its *ordinal*: how many earlier transactions touched the unit (an
operation reading a ``source=`` record touches that record's unit too). Every transaction belongs
to one thread: for ``lock``, blocks of ``BLOCK`` consecutive transactions in turn; for ``pat``, the
thread of its first operation's partition (``partition % workers``, so each partition's
transactions stay on one thread, in order). A thread walks its transactions in timestamp order;
before each, it waits until every unit's counter equals the transaction's ordinal (every earlier
transaction on the unit has finished), runs the transaction with the serial walk's code (its
condition decides an abort there, with every unit it touches held), then sets the counters to
ordinal + 1. The earliest unfinished transaction can always run, so the walk ends; it is the serial
order on every unit, so the outcome is the serial one. A division by zero is noted and the run
is then put back and walked serially (which names the event), as for ``chains``.
"""

from __future__ import annotations

import threading
import time

import numba
import numpy as np

from ..expr.jit import load_kernel

BLOCK = 64  # lock: consecutive transactions per thread turn (threads sharing an output line would stall)

_DECORATOR = (
    "from tidal.tx.sync import SPINS, load_acquire, pause, sched_yield, store_release\n\n\n"
    "@numba.njit(cache={cache}, nogil=True, error_model='numpy')\n"
)


def source(serial_src: str, events_args: str) -> str:
    """The thread's walk around the serial walk's transaction code (``serial_src``, a ``def kernel(lo,
    hi, issued, cell2d, src2d, icells, fcells, aborted, out_i, out_f, ...)`` over compute mode's grids)."""
    txn = serial_src.replace("def kernel(", "def txn(", 1)
    head = "issued, cell2d, src2d, icells, fcells, aborted, out_i, out_f" + events_args
    lines = [
        f"def kernel(me, owner, ptr, units, ords, done, errs, n, {head}):",
        "    for i in range(n):",
        "        if owner[i] != me:",
        "            continue",
        "        for j in range(ptr[i], ptr[i + 1]):",
        "            u = units[j]",
        "            q = ords[j]",
        "            spins = 0",
        "            while load_acquire(done, u) != q:",
        "                spins += 1",
        "                if spins < SPINS:",
        "                    pause()",
        "                else:",
        "                    sched_yield()",
        f"        stop = txn(i, i + 1, {head})",
        "        for j in range(ptr[i], ptr[i + 1]):",
        "            store_release(done, units[j], ords[j] + 1)",
        "        if stop >= 0 and errs[me] < 0:",
        "            errs[me] = stop",
        "    return 0",
        "",
        "",
        "@numba.njit(cache=True, nogil=True, error_model='numpy')",
    ]
    return "\n".join(lines) + "\n" + txn


def load(src: str):
    return load_kernel(src, decorator=_DECORATOR)


@numba.njit(cache=True, nogil=True)
def plan(issued, cell2d, src2d, tshift, sshift, pat, parts, nunits, nthreads, block, ptr, units, ords, owner):
    """Each transaction's units, once each, with their ordinals (``units[ptr[i]:ptr[i + 1]]``), and
    its thread. A target's unit is ``cell + tshift[k]``, a source's ``src + sshift[k]`` (``pat``: then
    modulo ``parts``)."""
    n, nk = issued.shape
    seen = np.zeros(nunits, np.int64)
    last = np.full(nunits, -1, np.int64)
    sourced = src2d.shape[0] == issued.shape[0]  # a row per event (the unsourced grid is one row of -1)
    m = 0
    for i in range(n):
        ptr[i] = m
        for j in range(2 * nk if sourced else nk):
            k = j if j < nk else j - nk
            if not issued[i, k]:
                continue
            if j < nk:
                u = cell2d[i, k] + tshift[k]
            elif sourced and src2d[i, k] >= 0:
                u = src2d[i, k] + sshift[k]
            else:
                continue
            if pat:
                u = u % parts
            if last[u] == i:
                continue
            units[m] = u
            ords[m] = seen[u]
            m += 1
            seen[u] += 1
            last[u] = i
        first = units[ptr[i]] if m > ptr[i] else -1
        owner[i] = first % nthreads if (pat and first >= 0) else (i // block) % nthreads
    ptr[n] = m


def run(engine, grids, args, n: int):
    """Walk the run's transactions on ``engine._nthreads`` threads; returns (aborted, out_i, out_f,
    operations, transactions per thread), or None after a division by zero (the tables are put back)."""
    issued, cell2d, src2d, _ = grids
    t0 = time.process_time()
    pat = engine.scheduler == "pat"
    nk = len(engine.templates)
    tshift, sshift = np.zeros(nk, np.int64), np.zeros(nk, np.int64)
    for k, t in enumerate(engine.templates):
        cbase = engine.cell_base[(id(t.table), t.column)][1]
        tshift[k] = -cbase if pat else engine.rec_base[id(t.table)] - cbase
        if t.source is not None:
            st, _, sc = t.source
            sbase = engine.cell_base[(id(st), sc)][1]
            sshift[k] = -sbase if pat else engine.rec_base[id(st)] - sbase
    nthreads = engine._nthreads
    parts = max(1, engine.partitions)
    nunits = parts if pat else engine.n_rec
    bound = int(issued.sum()) * (2 if src2d.shape[0] == issued.shape[0] else 1)  # (see plan)
    ptr, units, ords = np.empty(n + 1, np.int64), np.empty(bound, np.int64), np.empty(bound, np.int64)
    owner = np.empty(n, np.int64)
    plan(issued, cell2d, src2d, tshift, sshift, pat, parts, nunits, nthreads, BLOCK, ptr, units, ords, owner)
    t1 = time.process_time()
    nr = len(engine.read_slots)
    out_i, out_f = np.empty((nr, n), np.int64), np.empty((nr, n), np.float64)
    aborted = np.zeros(n, np.uint8)
    done = np.zeros(nunits, np.int64)
    errs = np.full(nthreads, -1, np.int64)
    saved = (engine.icells.copy(), engine.fcells.copy())
    kernel = engine.fused_kernels["locked"]
    common = (owner, ptr, units, ords, done, errs, n, issued, cell2d, src2d, engine.icells, engine.fcells)
    common += (aborted, out_i, out_f, *args)
    if nthreads == 1:
        kernel(0, *common)
    else:  # real threads: each must run while the others wait for it
        kernel(-1, *common)  # compiles (or loads) the kernel here, once: no thread owns -1
        threads = [threading.Thread(target=kernel, args=(me, *common)) for me in range(nthreads)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
    phases = engine.stats.setdefault("phases", {})
    phases["plan"] = phases.get("plan", 0.0) + t1 - t0
    phases["walk"] = phases.get("walk", 0.0) + time.process_time() - t1
    if (errs >= 0).any():
        engine.icells[:], engine.fcells[:] = saved
        return None
    return aborted, out_i, out_f, int(issued.sum()), np.bincount(owner, minlength=nthreads)
