"""Window functions over a live input: every tick recomputes the partitions it touched, or the whole snapshot.

    PYTHONPATH=$PWD python bench/ab_live_windows.py [--rows 1000,2000,4000] [--partitions 100] [--repeat 3]

One start edge per tick, a punctuation after each, ``row_number() OVER (PARTITION BY p ORDER BY v)`` and
``sum(v) OVER (PARTITION BY p)``: the operator as planned (only the partitions a tick changed) against the
same operator made to recompute the whole snapshot per tick (what it did before), interleaved, CPU
seconds (medians). Both emit the same changes (checked); the output itself grows with the square of a
partition's size (each insert renumbers the rows after it), so the ratio grows with rows per partition.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import pyarrow as pa

from tidal.core.batch import EventBatch
from tidal.core.time import INFINITY
from tidal.ops.base import Consumer
from tidal.ops.window_functions import WindowCall, WindowFunctionsOp

SCHEMA = pa.schema([("p", pa.int64()), ("v", pa.int64())])
CALLS = [
    WindowCall("n", "row_number", (), ("p",), (("v", False, False),)),
    WindowCall("s", "sum", ("v",), ("p",), ()),
]
OUT = pa.schema([*SCHEMA, ("n", pa.int64()), ("s", pa.int64())])


class Count(Consumer):
    def __init__(self):
        self.rows = 0

    def on_batch(self, batch):
        self.rows += len(batch)

    def on_completed(self):
        pass


def run(rows: int, partitions: int, whole: bool) -> tuple[float, int]:
    op = WindowFunctionsOp(SCHEMA, CALLS, OUT)
    if whole:
        op.partition_index = ()  # the old plan: recompute the whole snapshot every tick
    sink = Count()
    op.downstream = [sink]
    rng = np.random.default_rng(1)
    p, v = rng.integers(0, partitions, rows), rng.integers(0, 1000, rows)
    start = time.process_time()
    for t in range(rows):
        cols = {"p": pa.array([int(p[t])]), "v": pa.array([int(v[t])])}
        op.on_batch(EventBatch(np.array([t]), np.array([INFINITY]), cols))
        op.on_punctuation(t)
    op.on_completed()
    return time.process_time() - start, sink.rows


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", default="1000,2000,4000")
    ap.add_argument("--partitions", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    print(f"{'rows':>6} {'whole snapshot s':>17} {'touched parts s':>16} {'ratio':>6} {'changes out':>12}")
    for rows in [int(x) for x in args.rows.split(",")]:
        whole, touched = [], []
        for _ in range(args.repeat):
            w, nw = run(rows, args.partitions, True)
            t, nt = run(rows, args.partitions, False)
            assert nw == nt, (nw, nt)
            whole.append(w)
            touched.append(t)
        w, t = statistics.median(whole), statistics.median(touched)
        print(f"{rows:>6} {w:>17.2f} {t:>16.2f} {w / t:>6.1f} {nt:>12}")


if __name__ == "__main__":
    main()
