"""Before/after of the disorder workloads of ``bench_engine_gaps`` in one run: two checkouts of tidal, each in
its own long-lived process, asked in turn, which one first alternating by round (``--repeat`` rounds of: count,
``to_arrow()`` of every column, numpy's stable argsort + one take of every column), CPU seconds of each
(``time.process_time``; steadier than wall time on a shared machine), medians, and each checkout's peer/tidal
ratio from its own process.

    python bench/ab_disorder.py --before /work/main --after . [--rows 2000000] [--repeat 9] [--batch-size N]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

WORKER = r"""
import os, sys, time, json
root, n, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]) or None
sys.path[:0] = [root, os.path.join(root, "bench")]
import numpy as np, pyarrow as pa
import tidal
from bench_engine_gaps import disorder_data
dis = disorder_data(n)
times = dis.column("t").to_numpy()
def stream():
    return tidal.from_arrow(dis, time="t", disorder="drop", reorder_latency=1_000_000, batch_size=size)
work = {
    "count": lambda: stream().count(),
    "to_arrow": lambda: stream().to_arrow().num_rows,
    "numpy argsort + take": lambda: dis.take(pa.array(np.argsort(times, kind="stable"))).num_rows,
}
for f in work.values():
    f()
print("ready", flush=True)
for line in sys.stdin:
    start, wall = time.process_time(), time.perf_counter()
    work[line.strip()]()
    print(json.dumps([time.process_time() - start, time.perf_counter() - wall]), flush=True)
"""
WORK = ("count", "to_arrow", "numpy argsort + take")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", required=True, help="checkout of tidal measured first in each round")
    ap.add_argument("--after", required=True)
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--repeat", type=int, default=9)
    ap.add_argument("--batch-size", type=int, default=0, help="from_arrow's batch_size (default: tidal's)")
    args = ap.parse_args(argv)
    procs = {}
    for name, root in (("before", args.before), ("after", args.after)):
        p = subprocess.Popen(
            [sys.executable, "-c", WORKER, root, str(args.rows), str(args.batch_size)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=root,
        )
        if p.stdout.readline().strip() != "ready":
            raise RuntimeError(f"the {name} worker did not start")
        procs[name] = p
    runs: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for round_ in range(args.repeat):
        for work in WORK:
            # which checkout runs first alternates by round: the second of two runs in a row was measured faster
            order = list(procs.items()) if round_ % 2 == 0 else list(procs.items())[::-1]
            for name, p in order:
                p.stdin.write(work + "\n")
                p.stdin.flush()
                runs.setdefault((name, work), []).append(tuple(json.loads(p.stdout.readline())))
    for p in procs.values():
        p.stdin.close()
        p.wait()
    peer = {name: statistics.median(c for c, _ in runs[(name, WORK[-1])]) for name in procs}
    for work in WORK:
        for name in procs:
            cpu = statistics.median(c for c, _ in runs[(name, work)])
            wall = statistics.median(w for _, w in runs[(name, work)])
            ratio = peer[name] / cpu
            print(f"{work:22s} {name:7s} cpu {1e3 * cpu:7.1f} ms  wall {1e3 * wall:7.1f} ms  peer/this {ratio:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
