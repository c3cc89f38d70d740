"""State access for the ``serial`` scheduler and for ``chains`` by owner threads (``tidal.tx.fused``).

``serial`` runs the fused serial kernel over the batch's events. ``chains`` (when no operation
reads another record) gives each record to one owner thread, and walks every thread's operations
in timestamp order in parallel: one call for the whole run, no barrier between punctuation
intervals (a record's chain continues on the same thread, so the order on each record is the
serial one, and records do not depend on each other). A transaction whose condition fails on one
thread while others applied it is found after the walk; the threads rewind to just before the
first such transaction and walk again from there, with the outcomes found so far assumed (the
rounds). After ``MAX_ROUNDS`` rounds the rest of the batch runs serially, so a workload whose
aborts keep cascading costs at most a few walks. A division by zero anywhere makes the batch run
serially from its start (the serial kernel decides whether the serial order reaches it, and names
the event). Per run, the Python-level work is a constant number of calls per round.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from . import fused

MAX_ROUNDS = 4


def fused_run(engine, issued, cell2d, src2d, args, n: int, sync, position: int):
    """Run the batch's transactions; returns (committed, {read name: values}) as ``Engine.run``."""
    from .engine import TransactionError

    nr = len(engine.read_slots)
    out_i, out_f = np.empty((nr, n), np.int64), np.empty((nr, n), np.float64)
    icells, fcells = engine.icells, engine.fcells
    saved = (icells.copy(), fcells.copy())
    serial = engine.fused_kernels["serial"]
    aborted = np.zeros(n, np.uint8)
    st = engine.stats
    nk = len(engine.templates)
    if engine.scheduler == "serial":
        stop = serial(0, n, issued, cell2d, src2d, icells, fcells, aborted, out_i, out_f, *args)
        st["groups"] += 1
        st["waves"] += 1
        m = int(issued.sum())
        st["largest_group"] = max(st["largest_group"], m)
    else:
        threads = engine._nthreads
        lists, ptr = fused.owner_lists(issued, cell2d, engine.rec_shift, threads)
        m = len(lists)
        assumed, failed = np.zeros(n, np.uint8), np.zeros(n, np.uint8)
        kept = np.zeros(m, np.uint8)
        old_i, old_f = np.empty(m, np.int64), np.empty(m, np.float64)
        rd_i, rd_f = np.empty(m, np.int64), np.empty(m, np.float64)
        errf = np.zeros(threads, np.uint8)
        start = ptr[:-1].copy()
        owner = engine.fused_kernels["owner"]
        lo, rounds, stop = 0, 0, -1
        while True:
            rounds += 1
            owner(
                threads, ptr, start, lists, cell2d, src2d, engine.t_write, engine.t_int, icells, fcells,
                assumed, failed, kept, old_i, old_f, rd_i, rd_f, errf, *args,
            )  # fmt: skip
            if errf.any():  # a division by zero somewhere: let the serial order decide
                icells[:], fcells[:] = saved
                aborted[:] = 0
                stop = serial(0, n, issued, cell2d, src2d, icells, fcells, aborted, out_i, out_f, *args)
                break
            wrong = fused.first_wrong(assumed, failed, lo)
            if wrong < 0:
                aborted = failed
                if nr:
                    fused.scatter_reads(lists, ptr, nk, engine.slot, engine.t_int, rd_i, rd_f, out_i, out_f, threads)
                break
            start = np.array(
                [ptr[t] + np.searchsorted(lists[ptr[t] : ptr[t + 1]], wrong * nk) for t in range(threads)], np.int64
            )
            fused.rewind(ptr, start, lists, nk, cell2d, engine.t_int, kept, old_i, old_f, icells, fcells)
            st["rewalked"] = st.get("rewalked", 0) + int((ptr[1:] - start).sum())
            if rounds >= MAX_ROUNDS:
                if nr:
                    fused.scatter_reads(lists, ptr, nk, engine.slot, engine.t_int, rd_i, rd_f, out_i, out_f, threads)
                aborted[:wrong] = failed[:wrong]
                stop = serial(wrong, n, issued, cell2d, src2d, icells, fcells, aborted, out_i, out_f, *args)
                st["serial_rest"] = st.get("serial_rest", 0) + n - wrong
                break
            assumed[wrong:] = failed[wrong:]
            failed[wrong:] = 0
            lo = wrong
        st["groups"] += threads
        st["waves"] += rounds
        st["largest_group"] = max(st["largest_group"], int(np.diff(ptr).max()))
    if stop >= 0:
        icells[:], fcells[:] = saved
        i, k = divmod(int(stop), nk)
        raise TransactionError(
            f"transact: event {position + i} (time {int(sync[i])}): division by zero in "
            f"{engine.templates[k].describe()}"
        )
    committed = aborted == 0
    reads = {}
    for s, (name, k) in enumerate(engine.read_slots.items()):
        ok = issued[:, k] & committed
        values = out_i[s] if engine.t_int[k] else out_f[s]
        reads[name] = pa.array(values, mask=None if ok.all() else ~ok)
    st["events"] += n
    st["batches"] += 1
    st["operations"] += m
    st["aborted"] += int(n - committed.sum())
    st["intervals"] += (n + engine.interval - 1) // engine.interval
    return committed, reads
