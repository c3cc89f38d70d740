"""Benchmark: NEXMark q0-q22 on one core, tidal (SQL, and the Python API for q4, q5, q7, q8) beside DuckDB.

Usage::

    python bench/bench_nexmark.py [--events 1000000] [--queries q0,q5,q7] [--repeat 3] [--quick]
                                  [--peers pyflink,spark] [--flink-events N]

Data: ``bench/nexmark/generator.py`` with the benchmark's defaults (10,000 events per second of event
time, person:auction:bid = 1:3:46), written once as Parquet into ``bench/data/nexmark_<events>/``, in
event-time order. Each engine runs each query end to end (planning, reading the Parquet files, the query,
its whole answer as an Arrow table) ``--repeat`` times; the median is reported. Throughput is the number of
events generated (people + auctions + bids) per second, as NEXMark reports it (Flink's source produces
all three kinds in one stream, whichever the query reads). tidal runs on one thread and DuckDB is set to one
thread (``--core N`` also pins the process to core N). tidal's row count is checked against DuckDB's for every query.

Anchor (not measured here): Flink's published NEXMark figures (the Throughput/Cores column of the nexmark
project's README: Flink 1.13, 8 workers with RocksDB state), per core: q0 155K events/s, q1 158K, q2 175K,
q3 152K, q4 34K, q5 22K, q7 12K, q8 146K (Flink does not run q6). They are recorded as the engine
``flink (published, per core)`` so the report shows tidal's ratio to them.

Peers measured (``--peers``, default ``pyflink,spark``; none with ``--quick`` unless asked), on q0-q5, q7, q8:

* ``pyflink``: Flink's own NEXMark SQL (``bench/peers/pyflink_nexmark_driver.py``) on a local mini-cluster
  with parallelism 1, in ``bench/.envs/pyflink`` (``apache-flink`` from PyPI, made by ``bench/peers/envs.py``).
  The wheel has Flink's filesystem connector and CSV format but neither its Parquet format nor its NEXMark
  generator, so the same tables are written once as CSV (times as epoch milliseconds) beside the Parquet
  files. ``--flink-events`` sets its data size (default ``--events``); its wall time counts from job
  submission to the job's end (JVM and mini-cluster warm), one CPU core for the job.
* ``spark``: the queries in Spark SQL (``bench/nexmark/spark_sql.py``, windows as ``window(...)``), batch over
  the same Parquet files with ``local[1]`` and one shuffle partition, written to Spark's ``noop`` sink.
Each peer's row count is checked against DuckDB's on the data it read.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
from harness import Results, add_common_args

sys.path.insert(0, str(Path(__file__).resolve().parent))
from nexmark import NOT_SUPPORTED, QUERIES, api, run_sql  # noqa: E402
from nexmark.duckdb_sql import ORACLE, connect  # noqa: E402
from nexmark.generator import Config, write  # noqa: E402
from nexmark.spark_sql import SPARK  # noqa: E402
from peers import envs  # noqa: E402

FLINK_QUERIES = ("q0", "q1", "q2", "q3", "q4", "q5", "q7", "q8")  # in bench/peers/pyflink_nexmark_driver.py
# Throughput/Cores in github.com/nexmark/nexmark's README (Flink 1.13, 8 workers, RocksDB); Flink does not run q6
FLINK_PER_CORE = {
    "q0": 155_020,
    "q1": 157_940,
    "q2": 175_210,
    "q3": 152_120,
    "q4": 34_330,
    "q5": 22_140,
    "q7": 12_330,
    "q8": 146_140,
}
TABLES = ("person", "auction", "bid", "side_input")


def ensure_data(events: int) -> Path:
    directory = Path(__file__).resolve().parent / "data" / f"nexmark_{events}"
    if not all((directory / f"{t}.parquet").exists() for t in TABLES):
        write(directory, Config(events=events))
    return directory


def ensure_csv(directory: Path) -> Path:
    """The person, auction and bid tables as headerless CSV (times as epoch milliseconds) for PyFlink."""
    import pyarrow as pa
    import pyarrow.csv as pcsv

    out = directory / "csv"
    out.mkdir(exist_ok=True)
    for name in ("person", "auction", "bid"):
        if (out / f"{name}.csv").exists():
            continue
        table = pq.read_table(directory / f"{name}.parquet")
        for i, field in enumerate(table.schema):
            if pa.types.is_timestamp(field.type):
                table = table.set_column(i, field.name, table.column(i).cast(pa.int64()))
        pcsv.write_csv(table, out / f"{name}.csv", pcsv.WriteOptions(include_header=False))
    return out


def run_pyflink(results: Results, queries: list[str], events: int, repeat: int, timeout: float = 3600) -> None:
    """Flink's NEXMark SQL in PyFlink's environment on ``events`` generated events; one row per query."""
    setup = envs.ensure("pyflink")
    if not setup["ready"]:
        results.note(f"pyflink: environment not ready ({setup['error']}); not measured")
        return
    directory = ensure_data(events)
    driver = Path(__file__).resolve().parent / "peers" / "pyflink_nexmark_driver.py"
    cmd = [str(envs.python("pyflink")), str(driver), "--data", str(ensure_csv(directory)), "--queries"]
    cmd += [",".join(queries), "--repeat", str(repeat)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        results.note(f"pyflink: driver failed: {done.stderr.strip().splitlines()[-1:]}")
        return
    doc = json.loads(lines[-1])
    for name, got in doc["queries"].items():
        if "error" in got:
            results.note(f"{name}: pyflink refused it: {got['error']}")
            continue
        want = duckdb_runner(name, directory)().num_rows
        assert got["rows"] == want, ("pyflink", name, got["rows"], want)
        runs = got["runs_s"]
        results.record(
            name, "pyflink", statistics.median(runs), max(runs) - min(runs), events, runs, version=doc["version"]
        )


def spark_runner(name: str, directory: Path):
    from tidal.spark import spark_session

    spark = spark_session(
        "local[1]", shuffle_partitions=1, config={"spark.sql.session.timeZone": "UTC", "spark.ui.enabled": "false"}
    )
    for table in ("person", "auction", "bid"):
        spark.read.parquet(str(directory / f"{table}.parquet")).createOrReplaceTempView(table)

    def run():
        spark.sql(SPARK[name]).write.format("noop").mode("overwrite").save()

    return run, lambda: spark.sql(SPARK[name]).count()


def api_runner(name: str, directory: Path):
    def run():
        t = {n: pq.read_table(directory / f"{n}.parquet") for n in ("person", "auction", "bid")}
        s = api.SECOND
        if name == "q4":
            return api.final(api.q4(t["auction"], t["bid"]))
        if name == "q5":
            return api.windows(api.q5(t["bid"]), 10 * s, 2 * s)
        if name == "q7":
            return api.windows(api.q7(t["bid"]), 10 * s, 10 * s)
        return api.windows(api.q8(t["person"], t["auction"]), 10 * s, 10 * s)

    return run


def duckdb_runner(name: str, directory: Path):
    def run():
        con = connect({t: str(directory / f"{t}.parquet") for t in TABLES})
        result = con.sql(ORACLE[name]).arrow()
        return result.read_all() if hasattr(result, "read_all") else result

    return run


def measure(results: Results, workload: str, engine: str, fn, events: int, repeat: int, **extra) -> None:
    """Like ``Results.run``, also recording the process's CPU seconds per run (``cpu_s``, median) and
    ``events_per_cpu_s``: on a shared machine the wall time includes waiting for the core."""
    walls, cpus = [], []
    for _ in range(max(1, repeat)):
        wall, cpu = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    cpu = statistics.median(cpus)
    results.record(
        workload,
        engine,
        statistics.median(walls),
        max(walls) - min(walls),
        events,
        walls,
        cpu_s=cpu,
        events_per_cpu_s=events / cpu if cpu > 0 else float("inf"),
        **extra,
    )


def pin_one_core(core: int | None = None) -> str:
    if core is None:
        return "not pinned (tidal runs on one thread; DuckDB is set to one thread)"
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {core})
        return f"pinned to core {core}"
    return "not pinned (no sched_setaffinity)"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--queries", default=",".join(QUERIES), help="comma-separated, e.g. q0,q5,q7")
    ap.add_argument(
        "--core",
        type=int,
        default=None,
        help="pin the process to this core (default: not pinned; pinned runs on a shared machine were seen to"
        " spend minutes of CPU in helper threads)",
    )
    ap.add_argument("--peers", default=None, help="pyflink,spark (default both; none with --quick)")
    ap.add_argument("--flink-events", type=int, default=None, help="PyFlink's data size (default: --events)")
    add_common_args(ap, "bench/results/nexmark.json")
    args = ap.parse_args(argv)
    peers = args.peers.split(",") if args.peers is not None else ([] if args.quick else ["pyflink", "spark"])
    events = 100_000 if args.quick else args.events
    pinned = pin_one_core(args.core)
    directory = ensure_data(events)
    print(f"NEXMark {events:,} events in {directory}, {pinned}")
    results = Results()
    for name in args.queries.split(","):
        if name in NOT_SUPPORTED:
            results.note(f"{name}: not supported by tidal ({NOT_SUPPORTED[name]}); not timed")
            continue
        got, want = run_sql(name, directory), duckdb_runner(name, directory)()
        assert got.num_rows == want.num_rows, (name, got.num_rows, want.num_rows)
        measure(results, name, "tidal", lambda n=name: run_sql(n, directory), events, args.repeat, rows=got.num_rows)
        if name in ("q4", "q5", "q7", "q8"):
            measure(results, name, "tidal api", api_runner(name, directory), events, args.repeat)
        measure(results, name, "duckdb", duckdb_runner(name, directory), events, args.repeat)
        if "spark" in peers and name in SPARK:
            run, count = spark_runner(name, directory)
            assert count() == want.num_rows, ("spark", name)
            results.run(name, "spark", run, events, args.repeat, note="Spark SQL batch, local[1]")
        if name in FLINK_PER_CORE:
            rate = FLINK_PER_CORE[name]
            results.record(
                name, "flink (published, per core)", events / rate, 0.0, events, note="published figure, not measured"
            )
    if "pyflink" in peers:
        wanted = [q for q in args.queries.split(",") if q in FLINK_QUERIES]
        run_pyflink(results, wanted, args.flink_events or events, args.repeat)
    results.report(args.out, events=events, pinned=pinned, data=str(directory))
    print(f"{'workload':<10}{'engine':<14}{'events per CPU second':>24}{'wall events/s':>16}{'x Flink/core':>14}")
    for r in results.rows:
        if "events_per_cpu_s" in r:
            flink = FLINK_PER_CORE.get(r["workload"])
            ratio = f"{r['events_per_cpu_s'] / flink:>14.1f}" if flink else f"{'-':>14}"
            print(
                f"{r['workload']:<10}{r['engine']:<14}{r['events_per_cpu_s']:>24,.0f}{r['events_per_s']:>16,.0f}{ratio}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
