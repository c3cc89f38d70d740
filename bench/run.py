"""tidal's benchmark harness: tidal and its peers side by side in one process run.

    python bench/run.py [--quick] [--events N] [--repeat 3] [--out bench/results/core.json]

Core workloads (issue 2): 10M events (ts, user_id, ad_id, value) in memory as Arrow;
pass-through, where, where+select, and row-mode fallback, each against a plain Python
event-at-a-time loop and numpy doing the same work. Throughput is events per second of
the median of --repeat runs; ratios are tidal / peer. ``--quick``: 2M events, 200k for the loops.
"""

from __future__ import annotations

import argparse
import sys
from collections import namedtuple

import numpy as np
import pyarrow as pa
from harness import Results, add_common_args

import tidal


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
    ap.add_argument("--events", type=int, default=None, help="events (default 10M, 2M with --quick)")
    ap.add_argument("--python-events", type=int, default=None, help="events for the pure-Python loops (1M / 200k)")
    add_common_args(ap, "bench/results/core.json")
    args = ap.parse_args(argv)

    n = args.events or (2_000_000 if args.quick else 10_000_000)
    python_events = min(n, args.python_events or (200_000 if args.quick else 1_000_000))
    table = make_data(n)
    small = table.slice(0, python_events)
    Row = namedtuple("Row", table.column_names)
    py_rows = [Row(*r) for r in zip(*(small.column(c).to_pylist() for c in small.column_names), strict=True)]
    cols = {c: table.column(c).to_numpy() for c in table.column_names}
    stream = tidal.from_arrow(table, time="ts")
    sample = lambda e: e.user_id % 100 < 5  # noqa: E731
    project = lambda e: {"ad_id": e.ad_id, "v2": e.value * 2.0}  # noqa: E731

    # warm the compiled kernels once (numba compiles after the first million events)
    stream.where(sample).select(project).count()

    results = Results()
    repeat = args.repeat

    def record(workload, engine, fn, events):
        results.run(workload, engine, fn, events, repeat)

    # pass-through: ingress + egress of every event, no per-event work (the table's order was proven by the
    # warm-up; "first run" pays the one check of its time column)
    record("pass-through", "tidal", lambda: stream.count(), n)
    record("pass-through", "tidal first run", lambda: tidal.from_arrow(table, time="ts").count(), n)
    record("pass-through", "tidal to_arrow", lambda: stream.to_arrow(), n)
    record("pass-through", "python loop", lambda: sum(1 for _ in py_rows), len(py_rows))

    # where
    record("where", "tidal", lambda: stream.where(sample).count(), n)
    record("where", "numpy", lambda: int(np.count_nonzero(cols["user_id"] % 100 < 5)), n)
    record(
        "where",
        "python loop",
        lambda: sum(1 for r in py_rows if r.user_id % 100 < 5),
        len(py_rows),
    )

    # where + select
    def np_where_select():
        m = cols["user_id"] % 100 < 5
        return cols["ad_id"][m], cols["value"][m] * 2.0

    record("where+select", "tidal", lambda: stream.where(sample).select(project).count(), n)
    record("where+select", "numpy", np_where_select, n)
    record(
        "where+select",
        "python loop",
        lambda: [{"ad_id": r.ad_id, "v2": r.value * 2.0} for r in py_rows if r.user_id % 100 < 5],
        len(py_rows),
    )

    # row-mode fallback (an opaque function) against the same Python loop
    small_stream = tidal.from_arrow(small, time="ts")
    record(
        "where row mode",
        "tidal",
        lambda: small_stream.where(lambda e: opaque_sample(e.user_id)).count(),
        len(py_rows),
    )
    record(
        "where row mode",
        "python loop",
        lambda: sum(1 for r in py_rows if opaque_sample(r.user_id)),
        len(py_rows),
    )
    # the same lambda over rows read from the same Arrow table (what tidal is given)
    pred = lambda r: opaque_sample(r.user_id)  # noqa: E731

    def loop_from_arrow():
        rows = map(Row._make, zip(*(small.column(c).to_pylist() for c in small.column_names), strict=True))
        return sum(1 for r in rows if pred(r))

    record("where row mode", "python loop from arrow", loop_from_arrow, len(py_rows))

    results.report(args.out, events=n, python_events=len(py_rows), quick=args.quick)
    return 0


if __name__ == "__main__":
    sys.exit(main())
