"""tidal on Spark against Spark's own batch SQL and Structured Streaming, same run, same answers.

    python bench/bench_spark.py [--quick] [--events N] [--join-events N] [--master local[2]] [--repeat 3]

Two workloads (issue 6), each read by Spark from Parquet:

* **tumbling 1h count+sum by key**: N events (``ts`` in microseconds over one day, ``key`` in
  1,000 keys, ``value``). tidal: ``tumbling_window(1h).group_aggregate("key", count, sum)`` on
  Spark; Spark batch: ``groupBy(window(ts, "1 hour"), key).agg(count, sum)``; Structured
  Streaming: the same over the Parquet directory as a file stream with a watermark, append
  mode (a far-future sentinel row closes the last windows), ``availableNow``.
* **A then B within 1h per user (join)** (the Trill paper's query 7, as ``bench_joins``):
  events over 30 days in seconds; A = ``value < 25`` living one hour, B = ``25 <= value < 50``
  points, joined on the user. tidal: ``a.join(b, "key", "key")`` on Spark; Spark batch: an
  equi-join on ``(key, hour bucket)`` with the band condition (each B row meets its own and the
  previous bucket); Structured Streaming: a stream-stream inner join with watermarks and the
  same time-range condition.

Every engine's result is counted on the Spark side (``count()``) inside the timing; the answers
are checked equal outside it (the windows row for row; the number of join pairs). Scaling:
tidal on Spark is also run with ``local[1]`` in a child process (a second Spark session).
Times are medians of ``--repeat`` warm runs, taken in rounds after one warm-up round: each round
runs every engine once, so the JVM's ongoing compilation favours none of them.
``--quick``: 100,000 events each, no scaling run (the suite's budget; at this size
the figures are mostly fixed overheads).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from harness import Results as _Results
from harness import add_common_args

import tidal
import tidal.spark
from tidal import agg


class Results(_Results):
    def record(self, workload, engine, seconds, *args, **extra):
        row = super().record(workload, engine, seconds, *args, **extra)
        print(f"{workload} | {engine}: {seconds:.2f} s", flush=True)
        return row


HOUR_US = 3_600_000_000
HOUR_S = 3_600
AGG = "tumbling 1h count+sum by key on Spark"
JOIN = "A then B within 1h per user on Spark (join)"


def agg_data(n: int, keys: int, seed: int = 5) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table(
        {
            "ts": np.sort(rng.integers(0, 24 * HOUR_US, n)),
            "key": rng.integers(0, keys, n),
            "value": rng.integers(0, 100, n),
        }
    )


def join_data(n: int, seed: int = 5) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table(
        {
            "ts": (np.arange(n, dtype=np.int64) * (30 * 24 * HOUR_S)) // max(n, 1),
            "key": rng.integers(0, 1000, n),
            "value": rng.integers(0, 100, n),
        }
    )


def tidal_agg(df):
    stream = tidal.spark.from_spark(df, time="ts")
    return stream.tumbling_window(HOUR_US).group_aggregate("key", n=agg.count(), total=agg.sum("value"))


def tidal_join(df):
    shared = tidal.spark.from_spark(df, time="ts").multicast()
    a = shared.where(lambda e: e.value < 25).alter_duration(HOUR_S)
    b = shared.where(lambda e: e.value >= 25 and e.value < 50)
    return a.join(b, "key", "key")


def spark_window(df):
    from pyspark.sql import functions as F

    w = df.withColumn("t", F.timestamp_micros("ts"))
    out = w.groupBy(F.window("t", "1 hour"), "key").agg(F.count("*").alias("n"), F.sum("value").alias("total"))
    return out.select(F.unix_micros(F.col("window.start")).alias("start"), "key", "n", "total")


def spark_join(df):
    from pyspark.sql import functions as F

    a = df.where("value < 25").select(
        F.col("key"), F.col("ts").alias("ta"), F.floor(F.col("ts") / HOUR_S).alias("bucket")
    )
    b = df.where("value >= 25 AND value < 50").select(F.col("key").alias("kb"), F.col("ts").alias("tb"))
    # an A at ta pairs with a B at tb in [ta, ta + 1h): ta's bucket is tb's or the one before
    b = b.withColumn("bucket", F.explode(F.array(F.floor(F.col("tb") / HOUR_S) - 1, F.floor(F.col("tb") / HOUR_S))))
    cond = (a.key == b.kb) & (a.bucket == b.bucket) & (b.tb >= a.ta) & (b.tb < a.ta + HOUR_S)
    return a.join(b, cond)


def streaming_agg(spark, directory: str, checkpoint: str, name: str):
    """Structured Streaming over the directory (events, then sentinels); the windows in a memory table."""
    from pyspark.sql import functions as F

    src = spark.readStream.schema("ts long, key long, value long").option("maxFilesPerTrigger", 1)
    w = src.parquet(directory).withColumn("t", F.timestamp_micros("ts")).withWatermark("t", "0 seconds")
    out = w.groupBy(F.window("t", "1 hour"), "key").agg(F.count("*").alias("n"), F.sum("value").alias("total"))
    out = out.select(F.unix_micros(F.col("window.start")).alias("start"), "key", "n", "total")
    q = out.writeStream.outputMode("append").format("memory").queryName(name)
    q.option("checkpointLocation", checkpoint).trigger(availableNow=True).start().awaitTermination()
    # the sentinels' windows are dropped only now: a filter on the key in the query would be pushed
    # below the aggregation and keep the sentinels from moving the watermark
    return spark.table(name).where("key >= 0")


def streaming_join(spark, directory: str, checkpoint: str) -> int:
    """Stream-stream inner join with watermarks and the time-range condition; the number of pairs."""
    from pyspark.sql import functions as F

    def side():
        return spark.readStream.schema("ts long, key long, value long").parquet(directory)

    a = side().where("value < 25").select(F.col("key").alias("ka"), F.timestamp_seconds("ts").alias("ta"))
    b = (
        side()
        .where("value >= 25 AND value < 50")
        .select(F.col("key").alias("kb"), F.timestamp_seconds("ts").alias("tb"))
    )
    a, b = a.withWatermark("ta", "1 hour"), b.withWatermark("tb", "1 hour")
    cond = F.expr("ka = kb AND tb >= ta AND tb < ta + interval 1 hour")
    counts: list[int] = []
    q = a.join(b, cond).writeStream.foreachBatch(lambda d, _: counts.append(d.count()))
    q.option("checkpointLocation", checkpoint).trigger(availableNow=True).start().awaitTermination()
    return sum(counts)


def write_sentinels(directory: Path) -> None:
    """Two far-future rows (filtered out), each a micro-batch after the events: the first moves the
    watermark past every window, the second's micro-batch emits them (append mode emits what the
    previous batch's watermark closed, and ``availableNow`` runs no batch without new data)."""
    mtime = os.stat(directory / "events.parquet").st_mtime
    for i in (1, 2):
        path = directory / f"sentinel{i}.parquet"
        pq.write_table(pa.table({"ts": [100 * i * 24 * HOUR_US], "key": [-1], "value": [0]}), path)
        os.utime(path, (mtime + i, mtime + i))  # the file source takes files in modification-time order


def tidal_windows(df) -> list:
    t = tidal.spark.to_arrow(tidal_agg(df))
    assert pa.compute.all(pa.compute.equal(t.column("other_time"), pa.compute.add(t.column("sync_time"), HOUR_US)))
    rows = zip(*[t.column(c).to_pylist() for c in ("sync_time", "key", "n", "total")], strict=True)
    return sorted(rows)


def rows_of(df) -> list:
    t = df.toArrow()
    return sorted(zip(*[t.column(c).to_pylist() for c in ("start", "key", "n", "total")], strict=True))


def cached_inputs(spark, dirs: dict, partitions: int):
    """Both workloads' events read by Spark and cached in memory (what every engine reads)."""
    agg_df = spark.read.parquet(dirs["agg_file"]).repartition(partitions).cache()
    join_df = spark.read.parquet(dirs["join_file"]).repartition(partitions).cache()
    agg_df.count(), join_df.count()
    return agg_df, join_df


def tidal_entries(agg_df, join_df, dirs: dict, partitions: int, engine: str) -> list:
    """tidal on Spark, both workloads, as timing entries (what the scaling child runs too)."""
    entries = []
    for workload, df, q, n in ((AGG, agg_df, tidal_agg, dirs["agg_n"]), (JOIN, join_df, tidal_join, dirs["join_n"])):
        run = lambda q=q, df=df: tidal.spark.to_spark(q(df), partitions=partitions).count()  # noqa: E731
        entries.append((workload, engine, run, n))
    return entries


def child(args) -> int:
    """The scaling run: tidal on Spark only, in this process's own session; rows as JSON on --out."""
    spark = tidal.spark.spark_session(args.master, shuffle_partitions=args.partitions, config=SPARK_CONFIG)
    dirs = json.loads(Path(args.dirs).read_text())
    results = Results()
    agg_df, join_df = cached_inputs(spark, dirs, args.partitions)
    results.run_interleaved(tidal_entries(agg_df, join_df, dirs, args.partitions, f"tidal {args.master}"), args.repeat)
    Path(args.out).write_text(json.dumps(results.rows))
    spark.stop()
    return 0


SPARK_CONFIG = {
    "spark.sql.adaptive.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    # local mode runs the executors in the driver's JVM: the default 1 GB heap holding two cached
    # 10M-row inputs spends much of every engine's time collecting garbage
    "spark.driver.memory": "4g",
}


def main(argv=None) -> int:
    ap = add_common_args(argparse.ArgumentParser(), "bench/results/spark.json")
    ap.add_argument("--events", type=int, default=None, help="aggregate events (default 10M, 200k with --quick)")
    ap.add_argument("--join-events", type=int, default=None, help="join events (default 10M, 200k with --quick)")
    ap.add_argument("--keys", type=int, default=1_000)
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--partitions", type=int, default=2)
    ap.add_argument(
        "--scaling",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="also run tidal on Spark with local[1] in a child process (default: on, off with --quick)",
    )
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--dirs", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        return child(args)
    repeat = args.repeat  # quick mode too: the report gives a median and spread of 3 runs
    n = args.events or (100_000 if args.quick else 10_000_000)
    jn = args.join_events or (100_000 if args.quick else 10_000_000)

    spark = tidal.spark.spark_session(args.master, shuffle_partitions=args.partitions, config=SPARK_CONFIG)
    results = Results()
    tmp = Path(tempfile.mkdtemp(dir=Path(__file__).resolve().parent, prefix="tmp_spark_"))
    try:
        dirs = {"agg_n": n, "join_n": jn}
        for name, table in (("agg", agg_data(n, args.keys)), ("join", join_data(jn))):
            (tmp / name).mkdir()
            dirs[f"{name}_file"] = str(tmp / name / "events.parquet")
            dirs[f"{name}_dir"] = str(tmp / name)
            pq.write_table(table, dirs[f"{name}_file"], row_group_size=500_000)
        write_sentinels(tmp / "agg")
        agg_df, join_df = cached_inputs(spark, dirs, args.partitions)
        entries = tidal_entries(agg_df, join_df, dirs, args.partitions, "tidal")
        # Spark's own batch SQL
        entries.append((AGG, "spark window()", lambda: spark_window(agg_df).count(), n))
        entries.append((JOIN, "spark SQL band join", lambda: spark_join(join_df).count(), jn))

        # Structured Streaming (a fresh checkpoint per run)
        runs = iter(range(1_000_000))

        def ss_agg():
            i = next(runs)
            return streaming_agg(spark, dirs["agg_dir"], str(tmp / f"ckpt_agg{i}"), f"ss_agg{i}").count()

        def ss_join():
            return streaming_join(spark, dirs["join_dir"], str(tmp / f"ckpt_join{next(runs)}"))

        entries.append((AGG, "spark structured streaming", ss_agg, n))
        # in rounds: the JVM keeps compiling for a while, so no engine gets a colder JVM than another
        results.run_interleaved(entries, repeat)
        # the stream-stream join is slow (minutes at 10M events): one cold run, its count reused below
        start = time.perf_counter()
        ss_pairs = ss_join()
        seconds = time.perf_counter() - start
        results.record(JOIN, "spark structured streaming", seconds, 0.0, jn, [seconds], note="one run, no warm-up")

        # the same answers
        tidal_rows = tidal_windows(agg_df)
        assert tidal_rows == rows_of(spark_window(agg_df)), "tidal's windows differ from Spark window()'s"
        i = next(runs)
        assert tidal_rows == rows_of(streaming_agg(spark, dirs["agg_dir"], str(tmp / f"ckpt_agg{i}"), f"ss_agg{i}"))
        pairs = tidal.spark.to_spark(tidal_join(join_df), partitions=args.partitions).count()
        assert pairs == spark_join(join_df).count() == ss_pairs, "join pair counts differ"
        results.note(
            f"answers checked: {len(tidal_rows)} windows identical in all three; {pairs} join pairs in all three"
        )
        plan = tidal.spark.explain(tidal_agg(agg_df), partitions=args.partitions)
        results.note("tidal's aggregate on Spark: " + " | ".join(plan.splitlines()))
        plan = tidal.spark.explain(tidal_join(join_df), partitions=args.partitions)
        results.note("tidal's join on Spark: " + " | ".join(plan.splitlines()))

        # scaling: the same tidal runs with one core, in a child process with its own session
        if args.scaling if args.scaling is not None else not args.quick:
            (tmp / "dirs.json").write_text(json.dumps(dirs))
            out = tmp / "child.json"
            cmd = [sys.executable, __file__, "--child", "--master", "local[1]", "--partitions", "1"]
            cmd += ["--dirs", str(tmp / "dirs.json"), "--out", str(out), "--repeat", str(repeat)]
            subprocess.run(cmd, check=True, env=dict(os.environ))
            one = json.loads(out.read_text())
            results.rows.extend(one)
            two = {r["workload"]: r["events_per_s"] for r in results.rows if r["engine"] == "tidal"}
            lines = {w: [r["events_per_s"] for r in one if r["workload"] == w] + [two[w]] for w in (AGG, JOIN)}
            results.add_series("tidal on Spark scaling", "cores (local[N])", "events/s", [1, 2], lines)
            for w in (AGG, JOIN):
                results.note(f"{w}: local[2] / local[1] = {lines[w][1] / lines[w][0]:.2f}x")
    finally:
        spark.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    results.report(
        args.out,
        events=n,
        join_events=jn,
        keys=args.keys,
        master=args.master,
        partitions=args.partitions,
        quick=args.quick,
        repeat=repeat,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
