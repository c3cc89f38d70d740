"""State access for ``chains`` by components: each interval's events split into sets that share no cell.

TStream's dual mode, with the stream phase doing the grouping: per punctuation interval (a
*window*; intervals so short that their waits would not fit ``WAIT_CELLS`` share one), the events
that touch a common cell (a record's column: as target, or as the ``source=`` cell an operation
reads) are joined into one *component* (union-find over the window's cells). Components of one
window share no cell, so threads walk them with no synchronisation, each in timestamp order, with
the serial walk's code (``tidal.tx.fused``); a transaction lies wholly in one component (its
operations are joined by the event), so its abort is decided and undone there, exactly as the
serial run decides it.

The plan is one compiled pass per window, the windows cut into runs planned in parallel: from the
events themselves when compute mode compiles (``plan_source``: the keys and ``when`` of the
access function, checked as compute mode checks them), else from compute mode's grids (``plan``).
Each component goes, in the order of its first event, to the least loaded thread; a component
bigger than a thread's share runs whole on one. A window whose largest component holds most of its
operations (``HOPELESS``) puts the next 1, 3, 7, then ``PROBE`` windows whole on one thread without
looking at them (a superset of components: still the serial order), so a workload whose intervals
never fall apart (Grep and Sum at the seed's skew) pays little for planning.

A thread walks, window after window, its events of the window in timestamp order (its *segment*);
before a segment it waits until every other thread has finished the window before (a counter per
thread, ``tidal.tx.sync``: acquire loads, release stores; a thread with an empty segment waits for
no one). Every wait points to an earlier window, so the walk always ends, and every cell sees its
operations in timestamp order: the outcome, the reads and the aborts are the serial ones. A
division by zero (or, from the events, a key the plan did not look at that is outside its table)
stops every thread; the tables are put back and the serial walk names the event.

What two cores can give (Amdahl; CPU ns per event, medians, 1M events, the seed's parameters,
``bench/tx_phases.py --events 1000000 --repeat 7`` on the 2-core machine, 24 Nov, second pass of
issue 15, load average 2.5-4): serial's query is ``S + W``: ``W`` the fused walk (the part threads
can share: GS 15.9, SL 6.8, OB 17.0, TP 3.5) and ``S`` the rest, which stays on one thread (per
query tracing, planning and the kernels' lookup, 0.5-1.1 ms; per batch of 80k events the
ingress, 50-150 us of Python and numpy around the walk, the output columns and the operators
downstream: GS 1.3 of 17.2, SL 3.4 of 10.2, OB 4.2 of 21.2, TP 2.8 of 6.3; TP's post-process now
runs in the walk, ``tidal.tx.postfuse``). With the walk split perfectly over ``k`` threads and
nothing added, the speedup is ``(S + W) / (S + W / k)``: on 2 cores at most GS 1.86x, SL 1.50x,
OB 1.67x, TP 1.38x. No per-event compiled work is left in ``S`` for a second thread to take: it
is interpreter time. What chains adds (``X``) is work too, shared by the threads: ``S + (W + X) /
k``, so it gains only where ``X < (k - 1) W``. Measured ``X`` (first pass): the component plan, SL
26, TP 26 (4-5x the walk it plans), OB 11 (0.7x), GS 14 (probing windows that are one component:
100% of an interval at Zipf 0.6), plus waiting at window ends. On 2 cores ``X > W`` for SL and TP,
and with the waits chains costs more than serial for all four; ``lock`` and ``pat`` cost more
still. Overlapping the walk of one batch (on a second thread) with the rest of the others is the
``pipeline`` scheduler (``tidal.tx.pipeline``): bounded by ``(S + W) / max(S, W)`` (GS 1.08x, SL
1.5x, OB 1.25x, TP 1.8x), less what cannot overlap (the per-query part of ``S``: SL 0.5, TP 0.6,
GS 0.7, OB 1.1-2 ns per event at 1M events); measured on this machine, busy with other work, it
ran at 0.90-0.98x serial's wall clock (the hand-over of each batch between the threads costs more
than the 0.1-0.2 ms of each batch's Python it overlaps).
Owner threads instead of a plan (every thread walks every event and applies the operations on its
records: no plan, no waits; possible when nothing aborts and no operation reads another record, GS
and TP) were measured too and dropped: a thread's owner test is a branch that mispredicts on half
the operations (keys are random), about 15 cycles against an operation's 4, so each of two threads
cost 4x the serial walk (as ``bench/tx_bound.py`` found with hand-written kernels). With cheap
operations (1-2 ns each) the walk is memory- and branch-bound, and parallel state access pays only on
many cores (``tidal.tx.schedule.pick``: ``auto`` runs the
serial walk below 3 threads).
"""

from __future__ import annotations

import threading
import time

import numba
import numpy as np

from ..expr.jit import load_kernel
from .codegen import _Source, guarded_keys

_DECORATOR = (
    "from tidal.tx.sync import SPINS, YIELDS, load_acquire, pause, sched_yield, store_release, usleep\n\n\n"
    "@numba.njit(cache={cache}, nogil=True, error_model='numpy')\n"
)
_PLAN = (
    "from tidal.tx.split import assign, one_thread\n\n\n"
    "@numba.njit(cache={cache}, nogil=True, parallel=True, error_model='numpy')\n"
)
CHAINS = "components"  # or "lists": owner lists of chains (tidal.tx.runs), for every parallel run
HOPELESS = 0.75  # a window whose largest component holds more of its operations than this share puts
PROBE = 15  # the next 1, 3, 7, then this many windows (one more hopeless window each time) on one thread,
# unexamined; then the plan looks again
WAIT_CELLS = 1 << 22  # at most this many (thread, window, thread) waits: short intervals share a window


def source(serial_src: str, head: str) -> str:
    """A thread's walk of its segments around the serial walk's transaction code (``serial_src``, a
    ``def kernel(lo, hi, <head>)``: over compute mode's grids, or deciding the operations from the
    events, with a ``count`` of them, then kept per thread)."""
    first, loop, body = serial_src.split("\n", 2)
    init = ""
    if loop == "    cnt = 0":  # the walk from the events counts its operations in a local
        init = loop + "\n"
        loop, body = body.split("\n", 1)
    if not (first.startswith("def kernel(lo, hi, ") and loop == "    for i in range(lo, hi):"):
        raise AssertionError("the serial walk's source changed shape")
    # the walk of one segment: the serial walk's body over the events of a list (one call per segment:
    # a call per event would copy every array argument per event, which costs more than the event)
    seg = f"def seg(me, p, end, lists, {head}):\n{init}    for pp in range(p, end):\n        i = lists[me, pp]\n" + body
    own = head.replace("count", "counts")
    lines = [
        f"def kernel(me, nwin, lists, seg_end, wait, done, stop, errs, {own}):",
        "    p = 0",
    ]
    if own != head:
        lines.append("    count = counts[me * 16 : me * 16 + 1]  # a cache line (or two) apart: no false sharing")
    lines += [
        "    for w in range(nwin):",
        "        if seg_end[me, w] == p:  # nothing to walk here: no need to wait for anyone",
        "            store_release(done, me * 16, w + 1)",
        "            continue",
        "        for u in range(wait.shape[2]):",
        "            q = wait[me, w, u]",
        "            if q < 0:",
        "                continue",
        "            spins = 0",
        "            while load_acquire(done, u * 16) <= q and load_acquire(stop, 0) == 0:",
        "                spins += 1",
        "                if spins < SPINS:",
        "                    pause()",
        "                elif spins < SPINS + YIELDS:",
        "                    sched_yield()",
        "                else:",
        "                    usleep(20)",
        "        if load_acquire(stop, 0) != 0:",
        "            break",
        "        end = seg_end[me, w]",
        f"        r = seg(me, p, end, lists, {head})",
        "        p = end",
        "        if r != -1:",
        "            errs[me] = r",
        "            store_release(stop, 0, 1)",
        "        store_release(done, me * 16, w + 1)",
        "    return 0",
        "",
        "",
        "@numba.njit(cache=True, nogil=True, error_model='numpy')",
    ]
    return "\n".join(lines) + "\n" + seg


GRID_HEAD = "issued, cell2d, src2d, icells, fcells, aborted, out_i, out_f"
EVENTS_HEAD = "icells, fcells, aborted, out_i, out_f, rissued, count"


def load(src: str):
    return load_kernel(src, decorator=_DECORATOR)


@numba.njit(cache=True, nogil=True)
def _find(parent, x):
    while parent[x] != x:
        parent[x] = parent[parent[x]]
        x = parent[x]
    return x


def _touch_lines(pad: str, unit: str) -> list[str]:
    """Event ``i`` touches unit ``u`` (a cell of the engine: int cells, then float cells): joined with
    the window's previous event on it (``last[u]``, when at least ``lo``). Written out: numba does
    not inline a call to a helper, which costs more than this work."""
    return [
        f"{pad}u = {unit}",
        f"{pad}o = last[u]",
        f"{pad}if o >= lo:",
        f"{pad}    ra = i - lo",
        f"{pad}    while parent[ra] != ra:",
        f"{pad}        parent[ra] = parent[parent[ra]]",
        f"{pad}        ra = parent[ra]",
        f"{pad}    rb = o - lo",
        f"{pad}    while parent[rb] != rb:",
        f"{pad}        parent[rb] = parent[parent[rb]]",
        f"{pad}        rb = parent[rb]",
        f"{pad}    if ra != rb:",
        f"{pad}        parent[ra] = rb",
        f"{pad}last[u] = i",
    ]


@numba.njit(cache=True, nogil=True)
def assign(lo, hi, nthreads, parent, evops, ops, thr, load, ev_thr, cnt, w, stats):
    """The window's components (``parent``, after the union of events touching a unit) to threads:
    each, in the order of its first event, to the least loaded thread (``evops``: each event's
    operations): ``ev_thr`` per event, ``cnt[w, t]`` events per thread; ``stats``: components, the
    largest one's operations. True when the largest component holds most of the window's operations
    (``HOPELESS``): then the plan puts the next windows whole on one thread unexamined (``PROBE``)."""
    m = hi - lo
    total = 0
    largest = 0
    for j in range(m):
        ops[j] = 0
        thr[j] = -1
    for j in range(m):
        r = _find(parent, j)
        parent[j] = r
        ops[r] += evops[j]
        total += evops[j]
    for t in range(nthreads):
        load[t] = 0
    for j in range(m):
        r = parent[j]
        if thr[r] < 0:
            stats[0] += 1
            stats[1] = max(stats[1], ops[r])
            largest = max(largest, ops[r])
            best = 0
            for q in range(1, nthreads):
                if load[q] < load[best]:
                    best = q
            thr[r] = best
            load[best] += ops[r]
        t = thr[r]
        ev_thr[lo + j] = t
        cnt[w, t] += 1
    return total > 0 and largest > HOPELESS * total


@numba.njit(cache=True, nogil=True)
def one_thread(lo, hi, ev_thr, cnt, w, stats):
    """A window whole on thread 0, unexamined (a superset of components: the serial order there)."""
    for i in range(lo, hi):
        ev_thr[i] = 0
    cnt[w, 0] += hi - lo
    stats[2] += 1


@numba.njit(cache=True, nogil=True, parallel=True)
def plan(issued, cell2d, src2d, tshift, sshift, nunits, window, nthreads, blocks, ev_thr, cnt, stats):
    """Components and threads of every window of ``window`` events from compute mode's grids (a
    target's unit is ``cell2d + tshift[k]``, a source's ``src2d + sshift[k]``), the windows cut into
    ``blocks`` runs planned in parallel (``stats[b]``: see ``assign``)."""
    n, nk = issued.shape
    sourced = src2d.shape[0] == n  # a row per event (the unsourced grid is one row of -1)
    nwin = (n + window - 1) // window
    for b in numba.prange(blocks):
        last = np.full(nunits, -1, np.int64)
        parent, evops = np.empty(window, np.int64), np.empty(window, np.int64)
        ops, thr, load = np.empty(window, np.int64), np.empty(window, np.int64), np.zeros(nthreads, np.int64)
        skip = 0
        streak = 0
        for w in range(b * nwin // blocks, (b + 1) * nwin // blocks):
            lo = w * window
            hi = min(n, lo + window)
            if skip > 0:
                skip -= 1
                one_thread(lo, hi, ev_thr, cnt, w, stats[b])
                continue
            for j in range(hi - lo):
                parent[j] = j
            for i in range(lo, hi):
                c = 0
                for k in range(nk):
                    if not issued[i, k]:
                        continue
                    c += 1
                    for side in range(2 if sourced else 1):
                        if side == 1 and src2d[i, k] < 0:
                            continue
                        u = cell2d[i, k] + tshift[k] if side == 0 else src2d[i, k] + sshift[k]
                        o = last[u]  # touch(), written out: numba does not inline the call
                        if o >= lo:
                            ra = i - lo
                            while parent[ra] != ra:
                                parent[ra] = parent[parent[ra]]
                                ra = parent[ra]
                            rb = o - lo
                            while parent[rb] != rb:
                                parent[rb] = parent[parent[rb]]
                                rb = parent[rb]
                            if ra != rb:
                                parent[ra] = rb
                        last[u] = i
                evops[i - lo] = c
            if assign(lo, hi, nthreads, parent, evops, ops, thr, load, ev_thr, cnt, w, stats[b]):
                streak += 1
                skip = min(PROBE, (1 << streak) - 1)
            else:
                streak = 0


@numba.njit(cache=True, nogil=True, parallel=True)
def lay_out(ev_thr, cnt, window, blocks, lists, seg_end, wait):
    """Each thread's events in timestamp order (``lists[t, :seg_end[t, w]]``: up to the end of window
    ``w``), and the waits: a thread starts window ``w`` once every other thread has finished ``w - 1``
    (``wait[t, w, u]``; -1: none)."""
    nwin, nthreads = cnt.shape
    n = len(ev_thr)
    at = np.zeros((nwin, nthreads), np.int64)
    for t in range(nthreads):
        run = 0
        for w in range(nwin):
            at[w, t] = run
            run += cnt[w, t]
            seg_end[t, w] = run
            for u in range(nthreads):
                wait[t, w, u] = w - 1 if (u != t and w > 0) else -1
    for b in numba.prange(blocks):
        for w in range(b * nwin // blocks, (b + 1) * nwin // blocks):
            for i in range(w * window, min(n, (w + 1) * window)):
                t = ev_thr[i]
                lists[t, at[w, t]] = i
                at[w, t] += 1


def plan_source(templates, kinds: dict, places: list, every: dict[str, str], ni: int) -> str:
    """``plan`` straight from the events (no grids): the template's keys and ``when`` compiled, over
    the columns ``every`` names (as the serial walk from the events takes them). ``err[i]``: event
    ``i`` has a key outside its table or a ``when`` that divides by zero (compute mode names it)."""
    gen = _Source(every)
    args = "".join(f", {a}" for a in sorted(every.values(), key=lambda a: int(a[1:])))
    lines = [
        f"def kernel(n, window, nthreads, blocks, nunits, ev_thr, cnt, stats, err{args}):",
        "    nwin = (n + window - 1) // window",
        "    for b in numba.prange(blocks):",
        "        last = np.full(nunits, -1, np.int64)",
        "        parent, evops = np.empty(window, np.int64), np.empty(window, np.int64)",
        "        ops, thr, load = np.empty(window, np.int64), np.empty(window, np.int64), np.zeros(nthreads, np.int64)",
        "        skip = 0",
        "        streak = 0",
        "        for w in range(b * nwin // blocks, (b + 1) * nwin // blocks):",
        "            lo = w * window",
        "            hi = min(n, lo + window)",
        "            if skip > 0:",
        "                skip -= 1",
        "                one_thread(lo, hi, ev_thr, cnt, w, stats[b])",
        "                continue",
        "            for j in range(hi - lo):",
        "                parent[j] = j",
        "            for i in range(lo, hi):",
        "                c = 0",
    ]
    for k, t in enumerate(templates):
        (cbase, _rbase, size), src = places[k]
        opened, pad = guarded_keys(gen, t, size, src, " " * 16, ["err[i] = 1"], ["err[i] = 1", "continue"])
        lines += opened
        tint = t.table.columns[t.column].dtype.kind == "i"
        lines += [f"{pad}c += 1"] + _touch_lines(pad, f"{cbase + (0 if tint else ni)} + key0")
        if src is not None:
            sint = t.source[0].columns[t.source[2]].dtype.kind == "i"
            lines += _touch_lines(pad, f"{src[0] + (0 if sint else ni)} + key1")
    lines += [
        "                evops[i - lo] = c",
        "            if assign(lo, hi, nthreads, parent, evops, ops, thr, load, ev_thr, cnt, w, stats[b]):",
        "                streak += 1",
        f"                skip = min({PROBE}, (1 << streak) - 1)",
        "            else:",
        "                streak = 0",
    ]
    return "\n".join(lines) + "\n"


def load_plan(src: str):
    return load_kernel(src, decorator=_PLAN)


def _window(engine, n: int) -> int:
    return max(engine.interval, -(-n * engine._nthreads**2 // WAIT_CELLS), 1)


def run_events(engine, cols, n: int):
    """``chains`` by components with the plan and the walk deciding the operations from the events
    (``engine.split_events``); None when that does not apply or the plan found an error to name (the
    tables are untouched), ``RESTART`` after a division by zero (the tables are put back)."""
    if engine.split_events is None:
        return None
    fn, names = engine.split_events
    if any(cols[c].null_count for c in names):
        return None
    t0 = time.process_time()
    ecols = [cols[c].to_numpy(zero_copy_only=False) for c in names]
    nthreads, window, blocks, ev_thr, cnt, stats = _plan_arrays(engine, n)
    err = np.zeros(n, np.uint8)
    nunits = len(engine.icells) + len(engine.fcells)
    fn(n, window, nthreads, blocks, nunits, ev_thr, cnt, stats, err, *ecols)
    if err.any():
        return None
    nr = len(engine.read_slots)
    rissued = np.zeros((nr, n), np.bool_)
    counts = np.zeros(nthreads * 16, np.int64)  # each thread's count of operations, 128 bytes apart
    tail = (engine.icells, engine.fcells, None, None, None, rissued, counts, *ecols)
    return _walk(engine, "split_events", ev_thr, cnt, window, blocks, stats, tail, n, t0)


def _plan_arrays(engine, n: int):
    """``(threads, window, blocks, ev_thr, cnt, stats)``: a plan's sizes and the arrays it fills (each
    event's thread, events per window and thread, per-block statistics)."""
    nthreads = engine._nthreads
    window = _window(engine, n)
    nwin = (n + window - 1) // window
    blocks = min(nwin, nthreads)
    cnt = np.zeros((nwin, nthreads), np.int64)
    return nthreads, window, blocks, np.empty(n, np.int64), cnt, np.zeros((blocks, 3), np.int64)


def run(engine, grids, args, n: int):
    """``chains`` by components over compute mode's grids; returns what ``run_events`` returns."""
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
    nthreads, window, blocks, ev_thr, cnt, stats = _plan_arrays(engine, n)
    nunits = ni + len(engine.fcells)
    plan(issued, cell2d, src2d, tshift, sshift, nunits, window, nthreads, blocks, ev_thr, cnt, stats)
    rissued = _read_rows(engine, issued)
    tail = (issued, cell2d, src2d, engine.icells, engine.fcells, None, None, None, *args)
    return _walk(engine, "split", ev_thr, cnt, window, blocks, stats, tail, n, t0, rissued)


def _read_rows(engine, issued):
    kcols = list(engine.read_slots.values())
    return np.ascontiguousarray(issued[:, kcols].T) if kcols else np.zeros((0, len(issued)), np.bool_)


def _walk(engine, kernel_name, ev_thr, cnt, window, blocks, stats, tail, n, t0, rissued=None):
    nwin, nthreads = cnt.shape
    lists = np.empty((nthreads, n), np.int64)
    seg_end = np.empty((nthreads, nwin), np.int64)
    wait = np.empty((nthreads, nwin, nthreads), np.int64)
    lay_out(ev_thr, cnt, window, blocks, lists, seg_end, wait)
    t1 = time.process_time()
    nr = len(engine.read_slots)
    out_i, out_f = np.empty((nr, n), np.int64), np.empty((nr, n), np.float64)
    aborted = np.zeros(n, np.uint8)
    grid = kernel_name == "split"
    tail = list(tail)
    at = 5 if grid else 2  # where aborted, out_i, out_f go in the transaction's arguments
    tail[at : at + 3] = [aborted, out_i, out_f]
    if not grid:
        rissued = tail[5]
    done = np.zeros(nthreads * 16, np.int64)  # windows finished per thread, 128 bytes apart
    stop = np.zeros(1, np.int64)
    errs = np.full(nthreads, -1, np.int64)
    saved = (engine.icells.copy(), engine.fcells.copy())
    kernel = engine.fused_kernels[kernel_name]
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
    st["components"] = st.get("components", 0) + int(stats[:, 0].sum())
    st["largest_component"] = max(st.get("largest_component", 0), int(stats[:, 1].max(initial=0)))
    st["unexamined_windows"] = st.get("unexamined_windows", 0) + int(stats[:, 2].sum())
    if (errs != -1).any():
        engine.icells[:], engine.fcells[:] = saved
        return RESTART
    per_thread = seg_end[:, -1].copy() if nwin else np.zeros(nthreads, np.int64)
    m = int(tail[0].sum()) if grid else int(tail[6].sum())  # operations: issued, or counted by the walk
    return aborted, out_i, out_f, rissued, per_thread, m


RESTART = "restart"
