"""tidal's benchmark harness: tidal and its peers side by side in one process run.

    python bench/run.py [--events N] [--out bench/results/core.json]

Core workloads (issue 2): 10M events (ts, user_id, ad_id, value) in memory as Arrow;
pass-through, where, where+select, and row-mode fallback, each against a plain Python
event-at-a-time loop and numpy doing the same work. Throughput is events per second of
the median of --repeat runs; ratios are tidal / peer.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from collections import namedtuple
from pathlib import Path

import numpy as np
import pyarrow as pa

import tidal


def timed(fn, repeat: int) -> tuple[float, float]:
    runs = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - start)
    return statistics.median(runs), (max(runs) - min(runs))


def make_data(n: int, seed: int = 3) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table(
        {
            "ts": np.arange(n, dtype=np.int64),
            "user_id": rng.integers(0, 1_000_000, n),
            "ad_id": rng.integers(0, 10_000, n),
            "value": rng.random(n),
        }
    )


def opaque_sample(user_id):
    return user_id % 100 < 5


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, default=10_000_000)
    ap.add_argument("--python-events", type=int, default=1_000_000, help="events for the pure-Python loops")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default="bench/results/core.json")
    args = ap.parse_args(argv)

    n = args.events
    table = make_data(n)
    small = table.slice(0, args.python_events)
    Row = namedtuple("Row", table.column_names)
    py_rows = [Row(*r) for r in zip(*(small.column(c).to_pylist() for c in small.column_names), strict=True)]
    cols = {c: table.column(c).to_numpy() for c in table.column_names}
    stream = tidal.from_arrow(table, time="ts")
    sample = lambda e: e.user_id % 100 < 5  # noqa: E731
    project = lambda e: {"ad_id": e.ad_id, "v2": e.value * 2.0}  # noqa: E731

    # warm the compiled kernels once (numba compiles after the first million events)
    stream.where(sample).select(project).count()

    results = []

    def record(workload, engine, seconds, spread, events):
        results.append(
            {
                "workload": workload,
                "engine": engine,
                "seconds": seconds,
                "spread_s": spread,
                "events": events,
                "events_per_s": events / seconds,
            }
        )

    # pass-through: ingress + egress of every event, no per-event work
    record("pass-through", "tidal", *timed(lambda: stream.count(), args.repeat), n)
    record("pass-through", "tidal to_arrow", *timed(lambda: stream.to_arrow(), args.repeat), n)
    record("pass-through", "python loop", *timed(lambda: sum(1 for _ in py_rows), args.repeat), len(py_rows))

    # where
    record("where", "tidal", *timed(lambda: stream.where(sample).count(), args.repeat), n)
    record("where", "numpy", *timed(lambda: int(np.count_nonzero(cols["user_id"] % 100 < 5)), args.repeat), n)
    record(
        "where",
        "python loop",
        *timed(lambda: sum(1 for r in py_rows if r.user_id % 100 < 5), args.repeat),
        len(py_rows),
    )

    # where + select
    def np_where_select():
        m = cols["user_id"] % 100 < 5
        return cols["ad_id"][m], cols["value"][m] * 2.0

    record("where+select", "tidal", *timed(lambda: stream.where(sample).select(project).count(), args.repeat), n)
    record("where+select", "numpy", *timed(np_where_select, args.repeat), n)
    record(
        "where+select",
        "python loop",
        *timed(lambda: [{"ad_id": r.ad_id, "v2": r.value * 2.0} for r in py_rows if r.user_id % 100 < 5], args.repeat),
        len(py_rows),
    )

    # row-mode fallback (an opaque function) against the same Python loop
    small_stream = tidal.from_arrow(small, time="ts")
    record(
        "where row mode",
        "tidal",
        *timed(lambda: small_stream.where(lambda e: opaque_sample(e.user_id)).count(), args.repeat),
        len(py_rows),
    )
    record(
        "where row mode",
        "python loop",
        *timed(lambda: sum(1 for r in py_rows if opaque_sample(r.user_id)), args.repeat),
        len(py_rows),
    )

    by = {(r["workload"], r["engine"]): r["events_per_s"] for r in results}
    print(f"{'workload':<16}{'engine':<18}{'events/s':>16}{'tidal/peer':>12}")
    for r in results:
        ratio = by[(r["workload"], "tidal")] / r["events_per_s"] if r["engine"] != "tidal" else 1.0
        r["tidal_ratio"] = ratio
        print(f"{r['workload']:<16}{r['engine']:<18}{r['events_per_s']:>16,.0f}{ratio:>12.2f}")
    out = {
        "machine": {
            "python": sys.version.split()[0],
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "numpy": np.__version__,
            "pyarrow": pa.__version__,
        },
        "events": n,
        "results": results,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=2))
    print(f"written {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
