"""State access for the ``serial`` scheduler and for ``chains`` by owner threads (``tidal.tx.fused``).

(``chains`` runs by components, ``tidal.tx.split``, unless ``split.CHAINS`` is ``"lists"``: then by
the owner lists below. ``split_run`` here hands a run to ``tidal.tx.split``.)

``serial`` runs the fused serial kernel over the batch's events. ``chains`` (when no operation
reads another record) gives each record to one owner list (``LISTS`` per worker thread, handed
out to the threads one at a time), and walks every thread's operations
in timestamp order in parallel: one call for the whole run, no barrier between punctuation
intervals (a record's chain continues on the same thread, so the order on each record is the
serial one, and records do not depend on each other). The threads' lists come straight from the
events when compute mode compiles (the same pass that decides the operations places each one in
its owner's list), else from compute mode's grids. A transaction whose condition fails on one
thread while others applied it is found after the walk; the threads rewind to just before the
first such transaction and walk again from there, with the outcomes found so far assumed (the
rounds). After ``MAX_ROUNDS`` rounds the rest of the batch runs serially, so a workload whose
aborts keep cascading costs at most a few walks. A small run (fewer than ``PARALLEL_FROM``
events x templates) walks serially: starting threads would cost more than its operations. A
division by zero anywhere makes the batch run serially from its start (the serial kernel decides
whether the serial order reaches it, and names the event). Per run, the Python-level work is a
constant number of calls per round.
"""

from __future__ import annotations

import time

import numba
import numpy as np
import pyarrow as pa

from . import fused, split
from .errors import TransactionError

MAX_ROUNDS = 4
PARALLEL_FROM = 1 << 15  # events x templates: a smaller run walks serially (a parallel call costs more)
LISTS = 4  # owner lists per worker thread: handed out one at a time, so a thread that the machine
# slows down leaves its share to the others


def _phase(engine, name: str, t0: float) -> float:
    """Add the process's CPU time since ``t0`` (every thread's) to the run phase ``name`` in the
    engine's statistics (``explain()`` shows them; ``bench/bench_tx.py`` prints them)."""
    now = time.process_time()
    phases = engine.stats.setdefault("phases", {})
    phases[name] = phases.get(name, 0.0) + now - t0
    return now


class _Restart(Exception):
    """The owner walk met a division by zero: the batch runs serially from its start."""


def owner_from_events(engine, cols, n: int, sync, position: int, grids):
    """``chains`` with the owner lists built by compute mode's kernel; None when that kernel does not
    apply (or finds an error to name: the grid path names it). ``grids()`` computes the grids."""
    if engine.regions is None:
        return None
    fn, names = engine.regions
    if any(cols[c].null_count for c in names):
        return None
    threads = engine._nthreads * LISTS  # lists, and ranges of events to build them
    nr = len(engine.read_slots)
    t0 = time.process_time()
    ecols = [cols[c].to_numpy(zero_copy_only=False) for c in names]
    err = np.zeros(n, np.uint8)
    counts = np.zeros((threads, threads), np.int64)
    one = np.empty(1, np.int64)
    with numba.parallel_chunksize(1):
        fn(n, threads, 0, counts, one, one, one, np.zeros((0, 0), np.bool_), np.zeros(0, np.uint8), err, *ecols)
    t0 = _phase(engine, "count", t0)
    if err.any():
        return None
    ptr = np.zeros(threads + 1, np.int64)
    ptr[1:] = np.cumsum(counts.sum(axis=0))
    pos = ptr[:-1][None, :] + np.cumsum(counts, axis=0) - counts  # region (chunk c, owner t): t-major
    m = int(ptr[-1])
    sourced = any(t.source is not None for t in engine.templates)
    lists, cells = np.empty(m, np.int64), np.empty(m, np.int64)
    srcs = np.empty(m if sourced else 1, np.int64)
    rissued = np.zeros((nr, n), np.bool_)
    spread = np.zeros(n, np.uint8)
    with numba.parallel_chunksize(1):
        fn(n, threads, 1, pos, lists, cells, srcs, rissued, spread, err, *ecols)
    _phase(engine, "place", t0)
    args = [engine._event_array(cols, name, n, position, sync) for name in engine.event_args]
    try:
        return _owner_walk(engine, lists, ptr, cells, srcs, spread, rissued, args, n, sync, position, grids)
    except _Restart:
        return fused_run(engine, *grids()[:3], args, n, sync, position, serial_only=True)


def serial_from_events(engine, cols, n: int):
    """The serial walk deciding the operations from the events itself; None when it does not apply,
    or met an error (the tables are as before: compute mode's grids then name the error)."""
    begun = serial_begin(engine, cols, n)
    if begun is None:
        return None
    fn, args, land, saved = begun
    save(engine, saved)
    t0 = time.process_time()
    r = fn(*args)
    return land(r, time.process_time() - t0)


def save(engine, saved: list) -> None:
    """The tables' cells as they are (before a batch's walk) into ``saved``."""
    saved[:] = [engine.icells.copy(), engine.fcells.copy()]


def serial_begin(engine, cols, n: int):
    """``(kernel, args, land, saved)`` for the serial walk from the events, or None where it does not apply:
    ``land(kernel(*args), cpu seconds)`` gives (committed, {read: values}), or None after an error
    (the tables put back to ``saved``: ``save`` fills it just before the walk). Nothing here reads
    the tables, so ``tidal.tx.pipeline`` makes it while the batch before walks on another thread."""
    if engine.serial_events is None:
        return None
    fn, names = engine.serial_events
    if any(cols[c].null_count for c in names):
        return None
    ecols = [cols[c].to_numpy(zero_copy_only=False) for c in names]
    nr = len(engine.read_slots)
    out_i, out_f = np.empty((nr, n), np.int64), np.empty((nr, n), np.float64)
    rissued = np.zeros((nr, (n + 7) // 8), np.uint8)  # the reads' validity bits, as Arrow lays them out
    aborted = np.zeros(n, np.uint8)
    count = np.zeros(1, np.int64)
    saved: list = []

    def land(r: int, cpu: float):
        if r != -1:
            engine.icells[:], engine.fcells[:] = saved
            return None
        phases = engine.stats.setdefault("phases", {})
        phases["walk"] = phases.get("walk", 0.0) + cpu
        st = engine.stats
        st["serial_walks"] = st.get("serial_walks", 0) + 1
        st["groups"] += 1
        st["waves"] += 1
        st["largest_group"] = max(st["largest_group"], int(count[0]))
        return _finish(engine, aborted, out_i, out_f, rissued, n, int(count[0]))

    args = (0, n, engine.icells, engine.fcells, aborted, out_i, out_f, rissued, count, *ecols)
    return fn, args, land, saved


def split_run(engine, cols, n: int, sync, position: int, grids):
    """``chains`` by components (``tidal.tx.split``): from the events when compute mode compiles,
    else over its grids (``grids()``, which also names a bad event's error)."""
    done = split.run_events(engine, cols, n)
    args = None
    if done is None:
        grid = grids()
        args = [engine._event_array(cols, name, n, position, sync) for name in engine.event_args]
        done = split.run(engine, grid, args, n)
    if done is split.RESTART:  # a division by zero: the serial walk names the first one
        args = args or [engine._event_array(cols, name, n, position, sync) for name in engine.event_args]
        return fused_run(engine, *grids()[:3], args, n, sync, position, serial_only=True)
    aborted, out_i, out_f, rissued, per_thread, m = done
    st = engine.stats
    st["split_walks"] = st.get("split_walks", 0) + 1
    st["thread_share"] = max(st.get("thread_share", 0.0), float(per_thread.max() / max(1, n)))
    st["groups"] += engine._nthreads
    st["waves"] += 1
    st["largest_group"] = max(st["largest_group"], int(per_thread.max()))
    return _finish(engine, aborted, out_i, out_f, rissued, n, m)


def fused_run(engine, issued, cell2d, src2d, args, n: int, sync, position: int, serial_only: bool = False):
    """Run the batch's transactions from compute mode's grids; returns (committed, {read: values})."""
    threads = engine._nthreads
    grids = (issued, cell2d, src2d)
    if engine.scheduler == "chains" and threads > 1 and not serial_only and issued.size >= PARALLEL_FROM:
        with numba.parallel_chunksize(1):
            made = fused.owner_lists(issued, cell2d, src2d, engine.rec_shift, threads * LISTS, _shift(engine))
        lists, ptr, cells, srcs, spread = made
        rissued = _read_rows(engine, issued)
        try:
            return _owner_walk(engine, lists, ptr, cells, srcs, spread, rissued, args, n, sync, position, lambda: grids)
        except _Restart:
            pass
    nr = len(engine.read_slots)
    out_i, out_f = np.empty((nr, n), np.int64), np.empty((nr, n), np.float64)
    saved = (engine.icells.copy(), engine.fcells.copy())
    aborted = np.zeros(n, np.uint8)
    stop = _serial(engine, grids, 0, n, aborted, out_i, out_f, args)
    _stop(engine, stop, saved, sync, position)
    st = engine.stats
    st["serial_walks"] = st.get("serial_walks", 0) + 1
    st["groups"] += 1
    st["waves"] += 1
    m = int(issued.sum())
    st["largest_group"] = max(st["largest_group"], m)
    return _finish(engine, aborted, out_i, out_f, _read_rows(engine, issued), n, m)


def _shift(engine) -> int:
    return fused.shift(len(engine.templates))


def _read_rows(engine, issued):
    kcols = list(engine.read_slots.values())
    return np.ascontiguousarray(issued[:, kcols].T) if kcols else np.zeros((0, len(issued)), np.bool_)


def _serial(engine, grids, lo, hi, aborted, out_i, out_f, args) -> int:
    issued, cell2d, src2d = grids
    kernel = engine.fused_kernels["serial"]
    return kernel(lo, hi, issued, cell2d, src2d, engine.icells, engine.fcells, aborted, out_i, out_f, *args)


def _stop(engine, stop: int, saved, sync, position: int) -> None:
    if stop < 0:
        return
    engine.icells[:], engine.fcells[:] = saved
    i, k = divmod(int(stop), len(engine.templates))
    raise TransactionError(
        f"transact: event {position + i} (time {int(sync[i])}): division by zero in {engine.templates[k].describe()}"
    )


def _owner_walk(engine, lists, ptr, cells, srcs, spread, rissued, args, n, sync, position, grids):
    t0 = time.process_time()
    threads = len(ptr) - 1
    sh = _shift(engine)
    nr = len(engine.read_slots)
    icells, fcells = engine.icells, engine.fcells
    saved = (icells.copy(), fcells.copy())
    out_i, out_f = np.empty((nr, n), np.int64), np.empty((nr, n), np.float64)
    m = len(lists)
    assumed, failed = np.zeros(n, np.uint8), np.zeros(n, np.uint8)
    fails = np.zeros((threads, n), np.uint8)  # per list: the transactions whose condition failed there
    kept = np.zeros(m, np.uint8)
    old_i, old_f = np.empty(m, np.int64), np.empty(m, np.float64)
    rd_i, rd_f = np.empty(m, np.int64), np.empty(m, np.float64)
    errf = np.zeros(threads, np.uint8)
    start = ptr[:-1].copy()
    owner = engine.fused_kernels["owner"]
    st = engine.stats
    lo, rounds = 0, 0
    while True:
        rounds += 1
        with numba.parallel_chunksize(1):  # a thread that finishes its lists takes the next one left
            owner(
                threads, ptr, start, lists, cells, srcs, engine.t_write, engine.t_int, icells, fcells,
                assumed, spread, fails, kept, old_i, old_f, rd_i, rd_f, errf, *args,
            )  # fmt: skip
        if errf.any():  # a division by zero somewhere: let the serial order decide
            icells[:], fcells[:] = saved
            raise _Restart
        wrong = fused.first_wrong(assumed, fails, spread, lo, failed)
        if wrong >= 0 and rounds < MAX_ROUNDS:  # each list walks again from its first changed guess
            fused.restarts(lists, ptr, sh, wrong, assumed, failed, spread, start)
        elif wrong >= 0:  # rounds ran out: every list back to the first wrong guess
            start = np.array(
                [ptr[t] + np.searchsorted(lists[ptr[t] : ptr[t + 1]], wrong << sh) for t in range(threads)], np.int64
            )
        if wrong >= 0:
            fused.rewind(ptr, start, lists, sh, cells, engine.t_int, kept, old_i, old_f, icells, fcells, fails)
            st["rewalked"] = st.get("rewalked", 0) + int((ptr[1:] - start).sum())
        if wrong < 0 or rounds >= MAX_ROUNDS:
            if nr:
                fused.scatter_reads(lists, ptr, sh, engine.slot, engine.t_int, rd_i, rd_f, out_i, out_f, threads)
            break
        assumed[wrong:] = failed[wrong:]
        lo = wrong
    aborted = failed
    _phase(engine, "walk", t0)
    if wrong >= 0:  # rounds ran out: the rest serially, from the first wrong guess
        aborted[wrong:] = 0
        stop = _serial(engine, grids()[:3], wrong, n, aborted, out_i, out_f, args)
        _stop(engine, stop, saved, sync, position)
        st["serial_rest"] = st.get("serial_rest", 0) + n - wrong
    st["groups"] += threads
    st["lists"] = st.get("lists", 0) + threads
    st["waves"] += rounds
    st["largest_group"] = max(st["largest_group"], int(np.diff(ptr).max()))
    return _finish(engine, aborted, out_i, out_f, rissued, n, m)


def _finish(engine, aborted, out_i, out_f, rissued, n: int, m: int):
    t0 = time.process_time()
    committed = aborted == 0
    naborted = int(n - np.count_nonzero(committed))
    reads = {}
    if len(rissued) and rissued.dtype == np.uint8:  # validity bits (the serial walk sets them)
        always = np.array(engine.read_always, np.bool_)
        cbits = np.packbits(committed, bitorder="little") if naborted else np.zeros(0, np.uint8)
        nulls = np.empty(len(rissued), np.int64)
        rows = np.array(engine.read_rows, np.int64)  # reads under one when share their bits
        _valid_bits(rissued, rows, always, cbits, n, nulls)  # in place: one compiled pass
        bitmap = [None if nulls[s] == 0 else pa.py_buffer(rissued[rows[s]]) for s in range(len(rissued))]
    elif len(rissued):  # a byte per event and read
        present = rissued & committed if naborted else rissued  # a read of an aborted transaction is null
        # row by row: numpy's count_nonzero along an axis sums integers (10x slower than per row); a
        # read that every event issued needs no validity bitmap at all
        nulls = [n - np.count_nonzero(row) for row in present]
        bitmap = [
            None if x == 0 else pa.py_buffer(np.packbits(row, bitorder="little"))
            for x, row in zip(nulls, present, strict=True)
        ]
    if len(rissued):
        for s, (name, k) in enumerate(engine.read_slots.items()):
            values = out_i[s] if engine.t_int[k] else out_f[s]
            valid = bitmap[s]
            dtype = pa.int64() if engine.t_int[k] else pa.float64()
            reads[name] = pa.Array.from_buffers(dtype, n, [valid, pa.py_buffer(values)], null_count=int(nulls[s]))
    st = engine.stats
    st["events"] += n
    st["batches"] += 1
    st["operations"] += m
    st["aborted"] += naborted
    st["intervals"] += (n + engine.interval - 1) // engine.interval
    _phase(engine, "finish", t0)
    return committed, reads


_POPCOUNT = np.array([bin(b).count("1") for b in range(256)], np.int64)


@numba.njit(cache=True, nogil=True)
def _valid_bits(rissued, rows, always, cbits, n, nulls):
    """The reads' validity bits made final, in place: a read without a ``when`` (``always``) is issued
    by every event; with aborts (``cbits``: the committed events' bits), a read of an aborted
    transaction is null. ``nulls[s]``: read ``s``'s nulls; a read that shares another's bits
    (``rows[s] != s``: the serial walk set them there) has its nulls."""
    nr, nb = rissued.shape
    tail = np.uint8(0xFF) if n % 8 == 0 else np.uint8((1 << (n % 8)) - 1)
    masked = len(cbits) > 0
    for s in range(nr):
        if rows[s] != s:
            continue
        if always[s]:
            for b in range(nb):
                rissued[s, b] = 0xFF
            if nb:
                rissued[s, nb - 1] = tail
        set_bits = 0
        for b in range(nb):
            x = rissued[s, b]
            if masked:
                x &= cbits[b]
                rissued[s, b] = x
            set_bits += _POPCOUNT[x]
        nulls[s] = n - set_bits
    for s in range(nr):
        nulls[s] = nulls[rows[s]]
