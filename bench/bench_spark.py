"""tidal embedded vs tidal on Spark vs Spark's own window() aggregation, same plan, same run.

    python bench/bench_spark.py [--events N] [--keys K] [--master local[2]] [--out bench/results/spark.json]

Workload (issue 6): N events (ts in microseconds over one day, key in K keys, value), a
tumbling 1-hour window, count and sum per key. tidal on Spark reads a Spark DataFrame
(written to Parquet first, so Spark reads it as it would in production), runs the window
and a partial count+sum per key and window in each partition (map-side combine), shuffles the
partials by key, sorts them by time within partitions and aggregates them in the tasks;
Spark's peer is ``groupBy(window(ts, "1 hour"), key).agg(count, sum)``. Each result is
counted on the Spark side (``count()`` of the output DataFrame) and checked equal to the
embedded answer's final windows. Times are the median of --repeat warm runs (after one
warm-up run that starts the Python workers).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import tidal
import tidal.spark
import tidal.testing
from tidal import agg

HOUR = 3_600_000_000


def timed(fn, repeat: int) -> float:
    fn()  # warm-up: Python workers start, numba kernels load from their cache
    runs = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - start)
    return statistics.median(runs)


def make_data(n: int, keys: int, seed: int = 5) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table(
        {
            "ts": np.sort(rng.integers(0, 24 * HOUR, n)),
            "key": rng.integers(0, keys, n),
            "value": rng.integers(0, 100, n),
        }
    )


def plan(stream):
    return stream.tumbling_window(HOUR).group_aggregate("key", n=agg.count(), total=agg.sum("value"))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--keys", type=int, default=1_000)
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--partitions", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default="bench/results/spark.json")
    args = ap.parse_args(argv)

    table = make_data(args.events, args.keys)
    spark = tidal.spark.spark_session(args.master, shuffle_partitions=args.partitions)
    from pyspark.sql import functions as F

    results: dict = {}
    embedded_q = plan(tidal.from_arrow(table, time="ts"))
    results["tidal_embedded_s"] = timed(lambda: embedded_q.to_arrow(), args.repeat)
    expected = embedded_q.to_arrow()

    with tempfile.TemporaryDirectory(dir="bench") as tmp:
        path = os.path.join(tmp, "events.parquet")
        pq.write_table(table, path, row_group_size=250_000)
        df = spark.read.parquet(path)
        df = df.repartition(args.partitions).cache()
        df.count()
        spark_q = plan(tidal.spark.from_spark(df, time="ts"))

        def on_spark():
            return tidal.spark.to_spark(spark_q, partitions=args.partitions).count()

        results["tidal_on_spark_s"] = timed(on_spark, args.repeat)
        got = tidal.spark.to_arrow(spark_q, partitions=args.partitions)
        tidal.testing.assert_same_snapshots(got, expected)

        def spark_window():
            w = df.withColumn("t", F.timestamp_micros("ts"))
            return w.groupBy(F.window("t", "1 hour"), "key").agg(F.count("*"), F.sum("value")).count()

        results["spark_window_s"] = timed(spark_window, args.repeat)
        results["spark_window_groups"] = spark_window()
        results["tidal_windows"] = got.num_rows
    results.update(
        events=args.events,
        keys=args.keys,
        master=args.master,
        partitions=args.partitions,
        python=sys.version.split()[0],
        machine=platform.machine(),
        cpus=os.cpu_count(),
    )
    results["tidal_on_spark_vs_spark_window"] = results["tidal_on_spark_s"] / results["spark_window_s"]
    print(json.dumps(results, indent=2))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(results, indent=2) + "\n")
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
