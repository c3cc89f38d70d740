"""State access for ``chains`` by components: each interval's events split into sets that share no record.

TStream's dual mode, with the stream phase doing the grouping: compute mode decides every event's
operations and the cells they address (the grids); then, per punctuation interval, the events that
touch a common cell (as target, or as the ``source=`` record an operation reads) are joined into one
*component* (union-find over the interval's cells). Components of one interval share no cell, so
two threads can walk two components with no synchronisation at all, each in timestamp order; a
transaction lies wholly in one component (its operations are joined by the event), so its abort
is decided and undone there, with the serial walk's code (``tidal.tx.fused``), exactly as the
serial run decides it.

Each component goes to one thread: the thread that last touched its cells (so that it waits for
no one) unless that thread already holds its share of the interval's operations, else the least
loaded thread; a component bigger than a share runs whole on one thread. A thread walks, interval
after interval, its events of the interval in timestamp order (its *segment*). Across intervals a
cell may change threads: the segment then first waits until the thread that last touched the cell
has finished the interval where it did (a counter per thread, ``tidal.tx.sync``: acquire loads,
release stores). Every wait points to an earlier interval, so the walk always ends, and every
cell sees its operations in timestamp order: the outcome, the reads and the aborts are the serial
ones. A division by zero stops every thread; the tables are put back and the serial walk names the
event (as for the other parallel schedulers). The plan (components, threads, waits) is one
sequential compiled pass over the grids.
"""

from __future__ import annotations

import threading
import time

import numba
import numpy as np

from ..expr.jit import load_kernel

_DECORATOR = (
    "from tidal.tx.sync import SPINS, load_acquire, pause, sched_yield, store_release\n\n\n"
    "@numba.njit(cache={cache}, nogil=True, error_model='numpy')\n"
)
CHAINS = "components"  # or "lists": owner lists of chains (tidal.tx.runs), for every parallel run
WAIT_CELLS = 1 << 22  # at most this many (thread, window, thread) waits: short intervals share a window


def source(serial_src: str, events_args: str) -> str:
    """A thread's walk of its segments around the serial walk's transaction code (``serial_src``)."""
    txn = serial_src.replace("def kernel(", "def txn(", 1)
    head = "issued, cell2d, src2d, icells, fcells, aborted, out_i, out_f" + events_args
    lines = [
        f"def kernel(me, nwin, lists, seg_end, wait, done, stop, errs, {head}):",
        "    p = 0",
        "    for w in range(nwin):",
        "        for u in range(len(done)):",
        "            q = wait[me, w, u]",
        "            if q < 0:",
        "                continue",
        "            spins = 0",
        "            while load_acquire(done, u) <= q and load_acquire(stop, 0) == 0:",
        "                spins += 1",
        "                if spins < SPINS:",
        "                    pause()",
        "                else:",
        "                    sched_yield()",
        "        if load_acquire(stop, 0) != 0:",
        "            break",
        "        end = seg_end[me, w]",
        "        while p < end:",
        "            i = lists[me, p]",
        f"            r = txn(i, i + 1, {head})",
        "            p += 1",
        "            if r >= 0:",
        "                errs[me] = r",
        "                store_release(stop, 0, 1)",
        "                break",
        "        store_release(done, me, w + 1)",
        "    return 0",
        "",
        "",
        "@numba.njit(cache=True, nogil=True, error_model='numpy')",
    ]
    return "\n".join(lines) + "\n" + txn


def load(src: str):
    return load_kernel(src, decorator=_DECORATOR)


@numba.njit(cache=True, nogil=True, inline="always")
def _find(parent, x):
    while parent[x] != x:
        parent[x] = parent[parent[x]]
        x = parent[x]
    return x


@numba.njit(cache=True, nogil=True, inline="always")
def _unit(issued, cell2d, src2d, tshift, sshift, i, j, nk):
    """The unit (cell of the whole engine) of the ``j``-th slot of event ``i``, or -1: targets are
    slots ``0..nk-1``, sources ``nk..2nk-1``."""
    k = j if j < nk else j - nk
    if not issued[i, k]:
        return -1
    if j < nk:
        return cell2d[i, k] + tshift[k]
    s = src2d[i, k]
    return -1 if s < 0 else s + sshift[k]


@numba.njit(cache=True, nogil=True)
def plan(issued, cell2d, src2d, tshift, sshift, nunits, window, nthreads, lists, seg_end, wait, stats):
    """Components, threads and waits for every window of ``window`` events (see the module's
    docstring). ``lists[t, :seg_end[t, w]]``: thread ``t``'s events up to the end of window ``w``;
    ``wait[t, w, u]``: the window of thread ``u`` that ``t`` must see finished before its segment of
    ``w`` (-1: none). ``stats``: components, largest component's operations, waits."""
    n, nk = issued.shape
    slots = 2 * nk if src2d.shape[0] > 1 else nk
    last = np.full(nunits, -1, np.int64)
    own_t = np.full(nunits, -1, np.int64)
    own_w = np.full(nunits, -1, np.int64)
    parent = np.empty(window, np.int64)
    root = np.empty(window, np.int64)
    ops = np.empty(window, np.int64)
    pref_t = np.empty(window, np.int64)
    pref_w = np.empty(window, np.int64)
    thr = np.empty(window, np.int64)
    load = np.zeros(nthreads, np.int64)
    fill = np.zeros(nthreads, np.int64)
    nwin = (n + window - 1) // window
    for w in range(nwin):
        lo = w * window
        hi = min(n, lo + window)
        m = hi - lo
        for j in range(m):
            parent[j] = j
            ops[j] = 0
            pref_t[j] = -1
            pref_w[j] = -1
            thr[j] = -1
        for i in range(lo, hi):
            for j in range(slots):
                u = _unit(issued, cell2d, src2d, tshift, sshift, i, j, nk)
                if u < 0:
                    continue
                o = last[u]
                if o >= lo:
                    a = _find(parent, i - lo)
                    b = _find(parent, o - lo)
                    if a != b:
                        parent[a] = b
                last[u] = i
        total = 0
        for i in range(lo, hi):
            r = _find(parent, i - lo)
            root[i - lo] = r
            for j in range(slots):
                u = _unit(issued, cell2d, src2d, tshift, sshift, i, j, nk)
                if u < 0:
                    continue
                ops[r] += 1
                total += 1
                if own_w[u] > pref_w[r]:
                    pref_w[r] = own_w[u]
                    pref_t[r] = own_t[u]
        share = (total + nthreads - 1) // nthreads
        for t in range(nthreads):
            load[t] = 0
        for i in range(lo, hi):
            r = root[i - lo]
            if thr[r] < 0:
                stats[0] += 1
                stats[1] = max(stats[1], ops[r])
                t = pref_t[r]
                if t < 0 or load[t] + ops[r] > share:
                    best = 0 if t < 0 else t
                    for q in range(nthreads):
                        if load[q] < load[best]:
                            best = q
                    t = best
                thr[r] = t
                load[t] += ops[r]
            t = thr[r]
            lists[t, fill[t]] = i
            fill[t] += 1
            for j in range(slots):
                u = _unit(issued, cell2d, src2d, tshift, sshift, i, j, nk)
                if u < 0:
                    continue
                q = own_t[u]
                if q >= 0 and q != t and own_w[u] > wait[t, w, q]:
                    if wait[t, w, q] < 0:
                        stats[2] += 1
                    wait[t, w, q] = own_w[u]
                own_t[u] = t
                own_w[u] = w
        for t in range(nthreads):
            seg_end[t, w] = fill[t]
    return nwin


def run(engine, grids, args, n: int):
    """Walk the run's transactions by components on ``engine._nthreads`` threads; returns (aborted,
    out_i, out_f, operations, events per thread), or None after a division by zero (the tables are
    put back: the serial walk then names the event)."""
    issued, cell2d, src2d, _ = grids
    t0 = time.process_time()
    nk = len(engine.templates)
    ni = len(engine.icells)
    tshift, sshift = np.zeros(nk, np.int64), np.zeros(nk, np.int64)
    for k, t in enumerate(engine.templates):
        tshift[k] = 0 if engine.t_int[k] else ni
        if t.source is not None:
            st, _, sc = t.source
            sshift[k] = 0 if st.columns[sc].dtype.kind == "i" else ni
    nthreads = engine._nthreads
    window = max(engine.interval, -(-n * nthreads * nthreads // WAIT_CELLS), 1)
    nwin = (n + window - 1) // window
    lists = np.empty((nthreads, n), np.int64)
    seg_end = np.empty((nthreads, nwin), np.int64)
    wait = np.full((nthreads, nwin, nthreads), -1, np.int64)
    stats = np.zeros(3, np.int64)
    nunits = ni + len(engine.fcells)
    plan(issued, cell2d, src2d, tshift, sshift, nunits, window, nthreads, lists, seg_end, wait, stats)
    t1 = time.process_time()
    nr = len(engine.read_slots)
    out_i, out_f = np.empty((nr, n), np.int64), np.empty((nr, n), np.float64)
    aborted = np.zeros(n, np.uint8)
    done = np.zeros(nthreads, np.int64)
    stop = np.zeros(1, np.int64)
    errs = np.full(nthreads, -1, np.int64)
    saved = (engine.icells.copy(), engine.fcells.copy())
    kernel = engine.fused_kernels["split"]
    tail = (issued, cell2d, src2d, engine.icells, engine.fcells, aborted, out_i, out_f, *args)
    common = (lists, seg_end, wait, done, stop, errs, *tail)
    kernel(0, 0, *common)  # compiles (or loads) the kernel here, once: no window to walk
    threads = [threading.Thread(target=kernel, args=(me, nwin, *common)) for me in range(nthreads)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    phases = engine.stats.setdefault("phases", {})
    phases["components"] = phases.get("components", 0.0) + t1 - t0
    phases["walk"] = phases.get("walk", 0.0) + time.process_time() - t1
    st = engine.stats
    st["components"] = st.get("components", 0) + int(stats[0])
    st["largest_component"] = max(st.get("largest_component", 0), int(stats[1]))
    st["component_waits"] = st.get("component_waits", 0) + int(stats[2])
    if (errs >= 0).any():
        engine.icells[:], engine.fcells[:] = saved
        return None
    return aborted, out_i, out_f, int(issued.sum()), seg_end[:, -1].copy() if nwin else np.zeros(nthreads, np.int64)
