"""Interleaved before/after timing shared by the ``ab_*`` scripts: each checkout of tidal in its own
long-lived worker process, asked for one case at a time in turn, CPU seconds per case
(``time.process_time``), medians.

A worker script defines its cases as functions and a ``correct()`` check, then calls :func:`serve`
(importable as ``ab_workers`` with the bench folder on ``sys.path``); :func:`run` starts the workers,
interleaves the rounds and prints the table.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

BENCH = str(Path(__file__).resolve().parent)


def serve(cases: dict, ok: bool) -> None:
    """A worker's loop: warm every case up (its kernels compiled), say whether its answer was right, then time
    each case named on standard input."""
    for fn in cases.values():
        fn()
    print("ready", "correct" if ok else "WRONG", flush=True)
    for line in sys.stdin:
        name = line.strip()
        started = time.process_time()
        cases[name]()
        print(time.process_time() - started, flush=True)


def run(roots: dict[str, str], worker: str, args: list[str], cases: list[str], repeat: int) -> None:
    """Time ``cases`` in one worker per checkout (``roots``: label -> path), ``repeat`` interleaved rounds, and
    print each case's medians and their ratios to the first checkout's."""
    procs = {}
    for label, root in roots.items():
        procs[label] = subprocess.Popen(
            [sys.executable, "-c", worker, BENCH, root, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        print(label, procs[label].stdout.readline().strip(), flush=True)
    times = {(label, c): [] for label in procs for c in cases}
    # each round starts with the next checkout: a shared machine favours some places in a round, and the
    # rotation spreads that over every checkout alike
    order = list(procs.items())
    for r in range(repeat):
        turn = order[r % len(order) :] + order[: r % len(order)]
        for c in cases:
            for label, p in turn:
                p.stdin.write(c + "\n")
                p.stdin.flush()
                times[(label, c)].append(float(p.stdout.readline()))
    for p in procs.values():
        p.stdin.close()
        p.wait()
    labels = list(procs)
    first = labels[0]
    head = "".join(f"{lb + ' s':>12}" for lb in labels) + "".join(f"{lb + '/' + first:>16}" for lb in labels[1:])
    print(f"{'case':20}{head}")
    for c in cases:
        med = {lb: statistics.median(times[(lb, c)]) for lb in labels}
        cells = "".join(f"{med[lb]:12.3f}" for lb in labels)
        print(f"{c:20}{cells}" + "".join(f"{med[lb] / med[first]:16.2f}" for lb in labels[1:]))
