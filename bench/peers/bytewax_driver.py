"""Bytewax driver: tumbling 1h count+sum per key over a Parquet file; prints timings as JSON.

Runs inside ``bench/.envs/bytewax`` (see envs.py), never in tidal's environment.

    python bytewax_driver.py --data events.parquet --repeat 3

The file has ``ts`` (seconds, non-decreasing), ``key`` and ``value`` (int64). The dataflow keys each
row by ``key``, assigns it to its hour by event time (``EventClock``, no waiting: the input is in
order; the watermark follows the data) and folds (count, sum) per window; a testing sink collects
the results. Reading the file into Python tuples is not timed; building and running the dataflow is.
"""

import argparse
import json
import sys
import time
from datetime import UTC, datetime, timedelta
from importlib import metadata

import bytewax.operators as op
import bytewax.operators.windowing as win
import pyarrow.parquet as pq
from bytewax.dataflow import Dataflow
from bytewax.testing import TestingSink, TestingSource, run_main

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def run(rows):
    out, late = [], []
    flow = Dataflow("tumbling_count_sum")
    events = op.input("in", flow, TestingSource(rows, batch_size=1_000))
    keyed = op.key_on("key", events, lambda r: str(r[1]))
    # Replaying a file: the watermark follows the data alone (a frozen "system" clock), and windows
    # close on new items or end of input, never on wall-clock wake-ups (1970 timestamps would
    # otherwise make every window late at once).
    clock = win.EventClock(
        lambda r: EPOCH + timedelta(seconds=r[0]),
        wait_for_system_duration=timedelta(0),
        now_getter=lambda: EPOCH,
        to_system_utc=lambda _: None,
    )
    windower = win.TumblingWindower(length=timedelta(hours=1), align_to=EPOCH)
    folded = win.fold_window(
        "count_sum",
        keyed,
        clock,
        windower,
        lambda: (0, 0),
        lambda acc, r: (acc[0] + 1, acc[1] + r[2]),
        lambda a, b: (a[0] + b[0], a[1] + b[1]),
    )
    op.output("out", folded.down, TestingSink(out))
    op.output("late", folded.late, TestingSink(late))
    run_main(flow)
    return out, late


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    table = pq.read_table(args.data, columns=["ts", "key", "value"])
    rows = list(zip(*(table.column(c).to_pylist() for c in ("ts", "key", "value")), strict=True))
    runs, out, late = [], None, None
    for _ in range(max(1, args.repeat)):
        start = time.perf_counter()
        out, late = run(rows)
        runs.append(time.perf_counter() - start)
    doc = {
        "engine": "bytewax",
        "version": metadata.version("bytewax"),
        "python": sys.version.split()[0],
        "events": len(rows),
        "runs_s": runs,
        "groups": len(out),
        "late": len(late),
        "count_total": sum(acc[0] for _, (_, acc) in out),
        "sum_total": sum(acc[1] for _, (_, acc) in out),
    }
    print(json.dumps(doc))


if __name__ == "__main__":
    main()
