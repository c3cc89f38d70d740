"""Benchmark: transactions on shared state (seed 004, TStream) per scheduler, against a Python loop.

Usage::

    python bench/bench_tx.py [--quick] [--events N] [--workers 1 2] [--repeat R] [--out bench/results/tx.json]
    python bench/bench_tx.py --aims      # on a quiet machine: every core, the aims of issue 15 checked

The four applications of ``tidal.tx.apps`` (Grep and Sum, Streaming Ledger, Online Bidding, Toll
Processing) with the seed's parameters (Zipf skew 0.6, TP 0.2; 25% multi-partition transactions
spanning up to 4 partitions; punctuation interval 500; 10k records, TP 100 segments), each run
through ``stream.transact`` with every scheduler (``serial``, ``chains``, ``lock``, ``pat``, ``pipeline``) on each
number of worker threads, and by the application's plain Python loop (``python_rows(rows, tables)``:
dicts and lists, over rows already converted from Arrow, so the conversion is not charged to it;
its cost is printed apart).
Then skew 0..1 and multi-partition ratio 0..100% for GS and SL at the largest worker count.
Throughput is input events per second of the median run, through the transact operator (for GS,
without the Sum stage). The engine ``tidal`` is ``chains`` on the largest worker count.
Printed at the end: chains over serial, lock, pat and the Python loop, from this one run, and each
configuration's CPU time per event (all its threads; the median run), and, for the runs walked
from the events, that CPU time by phase (``tidal.tx.runs``, ``tidal.tx.split``: for ``chains``,
plan each interval's components and their threads, walk them; for both, finish the output columns;
"other" is the rest of the query: ingress, batching, the operator).
``--aims`` (for a quiet machine) measures 1 and 2 workers and every core, and ends with each aim of
the issue (chains on every core at least 1.8x serial for GS and SL, ahead of lock and pat at every
point of the sweeps, at least 50x the Python loop, by chains and by the default ``auto``) and whether
this run met it.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness  # noqa: E402

import tidal  # noqa: E402
from tidal import tx  # noqa: E402
from tidal.tx.apps import APPS  # noqa: E402
from tidal.tx.schedule import AUTO, pick  # noqa: E402

CPU: dict = {}  # (app, scheduler, workers) -> CPU seconds of each run (all threads): what a run costs
PHASES: dict = {}  # (app, scheduler, workers) -> per run, {phase: CPU seconds} (tidal.tx.runs)


def transact_run(mod, data, scheduler: str, workers: int, partitions: int, key=None):
    def run():
        tabs = mod.tables()
        post = getattr(mod, "toll", None)
        s = tidal.from_arrow(data, time="t").transact(
            mod.access_for(tabs), post=post, scheduler=scheduler, workers=workers, partitions=partitions
        )
        start = time.process_time()
        out = s.count()
        if key is not None:
            CPU.setdefault(key, []).append(time.process_time() - start)
            engine = s.node.box.get("last")
            PHASES.setdefault(key, []).append(dict(engine.stats.get("phases", {})) if engine else {})
        return out

    return run


def python_run(mod, data, key):
    """The plain Python loop over rows already in Python (converted once, outside the timing)."""
    rows = data.to_pylist()

    def run():
        start = time.process_time()
        out = mod.python_rows(rows, mod.tables())
        CPU.setdefault(key, []).append(time.process_time() - start)
        return out

    return run


def conversion_ns(data) -> float:
    """CPU ns per event of converting the events from Arrow to Python rows (the loop's input)."""
    start = time.process_time()
    data.to_pylist()
    return (time.process_time() - start) / len(data) * 1e9


def phase_line(key, n: int) -> str:
    """Median CPU ns per event of each run phase, and of the rest of the run."""
    runs = PHASES.get(key) or []
    if not runs or not runs[0]:
        return ""
    names = list(runs[0])
    parts = [f"{p} {statistics.median(r.get(p, 0.0) for r in runs) / n * 1e9:.0f}" for p in names]
    rest = statistics.median(c - sum(r.values()) for c, r in zip(CPU[key], runs, strict=False))
    return ", ".join(parts + [f"other {rest / n * 1e9:.0f}"])


def main(argv=None) -> None:
    ap = harness.add_common_args(argparse.ArgumentParser(description=__doc__), "bench/results/tx.json")
    ap.add_argument("--events", type=int, default=None, help="events per application (default 200k; quick 20k)")
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2], help="worker threads to measure")
    ap.add_argument("--python-events", type=int, default=None, help="events for the Python loop (default: same)")
    ap.add_argument("--no-sweeps", action="store_true", help="skip the skew and multi-partition sweeps")
    ap.add_argument("--aims", action="store_true", help="quiet-machine mode: 1, 2 and every core; the aims checked")
    args = ap.parse_args(argv)
    if args.aims:
        cores = os.cpu_count() or 2
        args.workers = sorted({1, min(2, cores), cores})
        args.repeat = max(args.repeat, 7)
        args.events = args.events or 200_000
    n = args.events or (20_000 if args.quick else 200_000)
    n_py = args.python_events or n
    top = max(args.workers)
    res = harness.Results()
    res.note(f"machine: {os.cpu_count()} cpus, load average {os.getloadavg()[0]:.1f} at start")
    sweep_worst: dict = {}
    converted: dict = {}
    rates: dict = {}
    for app, mod in APPS.items():
        skew = 0.2 if app == "tp" else 0.6
        data = mod.generate(n, skew=skew, multi=0.25, partitions=top)
        converted[app] = conversion_ns(data.slice(0, n_py))
        # interleaved rounds: on a shared machine the load changes from minute to minute, and every
        # configuration should see the same conditions
        entries, keys = [], []
        for scheduler in tx.SCHEDULERS:
            for w in args.workers:
                engine = "tidal" if (scheduler == "chains" and w == top) else f"tidal-{scheduler}-{w}w"
                entries.append((app, engine, transact_run(mod, data, scheduler, w, top, (app, scheduler, w)), n))
                keys.append((app, scheduler, w))
        entries.append((app, "python loop", python_run(mod, data.slice(0, n_py), (app, "python", 1)), n_py))
        keys.append((app, "python", 1))
        for key, row in zip(keys, res.run_interleaved(entries, args.repeat), strict=True):
            rates[key] = row["events_per_s"]
            print(f"{app:3} {key[1]:7} {key[2]:2} workers {row['events_per_s']:>12,.0f} ev/s", flush=True)
    if not args.no_sweeps:
        for app in ("gs", "sl"):
            mod = APPS[app]
            for param, values in (("skew", [0.0, 0.25, 0.5, 0.75, 1.0]), ("multi", [0.0, 0.25, 0.5, 0.75, 1.0])):
                lines = {s: [] for s in tx.SCHEDULERS}
                for v in values:
                    opts = {"skew": 0.6, "multi": 0.25, "partitions": top, param: v}
                    data = mod.generate(n, **opts)
                    entries = [
                        (f"{app} {param}={v}", f"tidal-{s}-{top}w", transact_run(mod, data, s, top, top), n)
                        for s in tx.SCHEDULERS
                    ]
                    for scheduler, row in zip(tx.SCHEDULERS, res.run_interleaved(entries, args.repeat), strict=True):
                        lines[scheduler].append(row["events_per_s"])
                    print(f"{app} {param}={v}: " + ", ".join(f"{s} {lines[s][-1]:,.0f}" for s in lines), flush=True)
                res.add_series(f"{app} vs {param} ({top} workers)", param, "events/s", values, lines)
                worst = min(
                    min(c / other for c, other in zip(lines["chains"], lines[s], strict=True)) for s in ("lock", "pat")
                )
                res.note(f"{app} over {param}: chains / best of lock and pat, worst point: {worst:.2f}x")
                sweep_worst[(app, param)] = worst
    print("\nratios (this run):")
    for app in APPS:
        chains = rates[(app, "chains", top)]
        parts = [
            f"chains {top}w / serial 1w {chains / rates[(app, 'serial', 1)]:.2f}x",
            f"/ chains 1w {chains / rates[(app, 'chains', 1)]:.2f}x",
            f"/ lock {top}w {chains / rates[(app, 'lock', top)]:.2f}x",
            f"/ pat {top}w {chains / rates[(app, 'pat', top)]:.2f}x",
            f"/ python loop {chains / rates[(app, 'python', 1)]:.1f}x",
        ]
        line = f"{app}: " + " ".join(parts)
        res.note(line)
    # CPU time per event (all threads), the median run: on a machine shared with other work a parallel
    # run's wall clock waits for its slowest thread's turn; its CPU time says what the work costs
    for app in APPS:
        parts = [
            f"{s} {w}w {statistics.median(CPU[(app, s, w)]) / n * 1e9:.0f}"
            for s in tx.SCHEDULERS
            for w in args.workers
            if (app, s, w) in CPU
        ] + [f"python loop {statistics.median(CPU[(app, 'python', 1)]) / n_py * 1e9:.0f}"]
        res.note(f"{app} CPU ns/event: " + ", ".join(parts))
    for app in APPS:
        for key in [(app, "serial", 1), (app, "chains", top)]:
            line = phase_line(key, n)
            if line:
                res.note(f"{app} {key[1]} {key[2]}w CPU ns/event by phase: {line}")
        res.note(f"{app}: Arrow -> Python rows (the loop's input, not timed) {converted[app]:.0f} ns/event")
    if args.aims:
        aims(res, rates, sweep_worst, top, n)
    res.report(args.out, events=n, python_events=n_py, workers=args.workers, interval=500)


def aims(res, rates: dict, sweep_worst: dict, top: int, n: int) -> None:
    """Each aim of issue 15 with this run's figure and whether it was met."""
    load = os.getloadavg()[0]
    if load > 0.3 * (os.cpu_count() or 1):
        res.note(f"WARNING: load average {load:.1f} at the end: not a quiet machine")
    picked = pick(AUTO, top)[0]  # the default scheduler on this many workers
    for app in APPS:
        python = rates[(app, picked, top)] / rates[(app, "python", 1)]
        met = "met" if python >= 50 else "NOT met"
        res.note(f"aim >= 50x python loop by the default (auto: {picked} on {top}w): {app} {python:.1f}x {met}")
    for app in APPS:
        speedup = rates[(app, "chains", top)] / rates[(app, "serial", 1)]
        need = " (aim for gs and sl)" if app in ("gs", "sl") else ""
        met = "met" if speedup >= 1.8 else "NOT met"
        res.note(f"aim chains {top}w >= 1.8x serial 1w{need}: {app} {speedup:.2f}x {met}")
        python = rates[(app, "chains", top)] / rates[(app, "python", 1)]
        res.note(f"aim chains {top}w >= 50x python loop: {app} {python:.1f}x {'met' if python >= 50 else 'NOT met'}")
        for s in ("lock", "pat"):
            ahead = rates[(app, "chains", top)] / rates[(app, s, top)]
            res.note(f"aim chains ahead of {s} ({top}w): {app} {ahead:.2f}x {'met' if ahead >= 1 else 'NOT met'}")
    for (app, param), worst in sweep_worst.items():
        met = "met" if worst >= 1 else "NOT met"
        res.note(f"aim chains ahead of lock and pat over {param} ({app}): worst {worst:.2f}x {met}")


if __name__ == "__main__":
    main()
