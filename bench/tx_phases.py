"""Where the ``serial`` scheduler's time goes, per application: the stream phase, the state walk, the rest.

Usage::

    PYTHONPATH=$PWD python bench/tx_phases.py [--events 200000] [--repeat 9]

For each application of ``tidal.tx.apps`` (the seed's parameters, as ``bench/bench_tx.py``), one
query runs ``scheduler="serial"`` on one worker; then, on the same events, the pieces of its run are
timed alone (CPU time of this thread, median of ``--repeat``, in ns per event):

- ``query``: the whole query (``from_arrow(...).transact(...).count()``: planning, compiling,
  ingress, batching, the walk, the output);
- ``compile``: building the engine's kernels for new transactions (generating and loading their source;
  a later query over the same transactions finds them made);
- ``stream``: TStream's stream phase alone: per event, which operations it issues and the cells
  they address (compute mode's compiled kernel, ``issued``/``cell2d`` grids: the compact arrays a
  walk reads), run on one thread;
- ``walk grids``: the state walk alone, over those grids (what a second thread would run while the
  first computes the next interval's grids: the phase pipeline);
- ``walk fused``: what ``serial`` runs, the walk deciding its operations from the events itself
  (stream phase and walk in one loop);
- ``finish``: the read columns and ``committed`` made into Arrow arrays.

A phase pipeline on two threads costs at best ``max(stream, walk grids)`` per event where serial
costs ``walk fused``; the ratio printed is that bound. ``components`` is the share of an interval's
events in its largest connected component (events linked by a shared record): what a split of the
interval's events between two threads with no synchronisation could balance.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numba
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import tidal  # noqa: E402
from tidal.tx import runs  # noqa: E402
from tidal.tx.apps import APPS  # noqa: E402


def _cpu(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.thread_time()
        fn()
        times.append(time.thread_time() - start)
    return statistics.median(times)


@numba.njit(cache=True)
def _largest_component(issued, cell2d, interval, n_cells):
    """Mean over intervals of (events in the interval's largest component) / (events in the interval)."""
    n, nk = issued.shape
    parent = np.arange(n, dtype=np.int64)
    last = np.full(n_cells, -1, np.int64)
    total = 0.0
    count = 0
    for lo in range(0, n, interval):
        hi = min(n, lo + interval)
        for i in range(lo, hi):
            for k in range(nk):
                if issued[i, k]:
                    c = cell2d[i, k]
                    j = last[c]
                    if j >= lo:
                        a, b = i, j
                        while parent[a] != a:
                            a = parent[a]
                        while parent[b] != b:
                            b = parent[b]
                        if a != b:
                            parent[a] = b
                    last[c] = i
        size = np.zeros(hi - lo, np.int64)
        for i in range(lo, hi):
            a = i
            while parent[a] != a:
                a = parent[a]
            size[a - lo] += 1
        total += size.max() / (hi - lo)
        count += 1
    return total / count


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--events", type=int, default=200_000)
    ap.add_argument("--repeat", type=int, default=9)
    ap.add_argument("--interval", type=int, default=500)
    args = ap.parse_args(argv)
    n, rep = args.events, args.repeat
    for app, mod in APPS.items():
        data = mod.generate(n, skew=0.2 if app == "tp" else 0.6, multi=0.25, partitions=2)

        def query(mod=mod, data=data):
            tabs = mod.tables()
            s = tidal.from_arrow(data, time="t").transact(
                mod.access_for(tabs), post=getattr(mod, "toll", None), scheduler="serial", workers=1
            )
            s.count()
            return s

        s = query()
        engine = s.node.box["last"]
        cols = {"e." + k: data[k].combine_chunks() for k in data.column_names}
        kinds = dict(engine.kernel_kinds)
        sourced = any(t.source is not None for t in engine.templates)
        grids = engine._decompose_compiled(cols, n, sourced)
        issued, cell2d, src2d, _ = grids
        evargs = [cols[name].to_numpy() for name in engine.event_args]
        nr = len(engine.read_slots)
        out_i, out_f = np.empty((nr, n), np.int64), np.empty((nr, n), np.float64)
        aborted = np.zeros(n, np.uint8)
        saved = (engine.icells.copy(), engine.fcells.copy())

        def restore():
            engine.icells[:], engine.fcells[:] = saved

        def walk_grids():
            restore()
            aborted[:] = 0
            runs._serial(engine, (issued, cell2d, src2d), 0, n, aborted, out_i, out_f, evargs)

        fn, names = engine.serial_events
        ecols = [cols[c].to_numpy() for c in names]
        rissued = np.zeros((nr, (n + 7) // 8), np.uint8)  # validity bits
        count = np.zeros(1, np.int64)

        def walk_fused():
            restore()
            aborted[:] = 0
            fn(0, n, engine.icells, engine.fcells, aborted, out_i, out_f, rissued, count, *ecols)

        def stream():
            engine._decompose_compiled(cols, n, sourced)

        def compile_():  # generating the kernels' source and loading them (a query finds them made)
            engine._build(dict(kinds))

        numba.set_num_threads(1)
        figures = {
            "query": _cpu(query, rep),
            "compile": _cpu(compile_, rep),
            "stream": _cpu(stream, rep),
            "walk grids": _cpu(walk_grids, rep),
            "walk fused": _cpu(walk_fused, rep),
            "finish": _cpu(lambda: runs._finish(engine, aborted, out_i, out_f, rissued, n, 0), rep),
        }
        restore()
        line = ", ".join(f"{k} {v / n * 1e9:.1f}" for k, v in figures.items())
        bound = figures["walk fused"] / max(figures["stream"], figures["walk grids"])
        comp = _largest_component(issued, cell2d, args.interval, max(len(engine.icells), len(engine.fcells)))
        print(
            f"{app}: CPU ns/event: {line}; pipeline bound {bound:.2f}x the fused walk; "
            f"largest component {comp:.0%} of an interval of {args.interval}",
            flush=True,
        )


if __name__ == "__main__":
    main()
