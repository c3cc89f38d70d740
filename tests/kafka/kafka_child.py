"""A durable query over Kafka, run in its own process by test_kafka_durable.py, which kills it.

    python tests/kafka/kafka_child.py BROKER TOPIC N OUTPUT_DIR CHECKPOINT_FILE

TOPIC has two partitions, each to be read up to offset N (``stop``). One query, four results:
``agg``, a tumbling-window count and sum per key over both partitions (per-partition watermarks
merged by minimum); ``join``, partition 0 joined with partition 1 on the key (each row alive for
300 ticks); ``sql_watermark``, a SQL tumbling-window GROUP BY with TRIGGER ON WATERMARK; and
``sql_counting``, a SQL GROUP BY with TRIGGER COUNTING 40 (each new count retracts the previous).
``agg`` also goes to the topic TOPIC-out through the exactly-once Kafka sink. With
``TIDAL_KILL_IN_SAVE=n`` the process kills itself inside its n-th commit, after the output was
committed and before the checkpoint was stored; with ``TIDAL_READY=path`` it creates that file
once its first checkpoint is saved.
"""

from __future__ import annotations

import hashlib
import os
import signal
import sys

import pyarrow as pa

import tidal
from tidal import agg
from tidal.io.kafka_sink import KafkaSink
from tidal.io.segments import SegmentSink
from tidal.sql import plan
from tidal.state.store import CheckpointStore
from tidal.stream.query import Query

SCHEMA = pa.schema([("t", pa.int64()), ("k", pa.int64()), ("v", pa.int64())])


def kafka_source(broker: str, topic: str, n: int, partitions: tuple[int, ...] | None = None) -> str:
    """The SQL ``kafka(...)`` source of TOPIC's rows (all partitions, or ``partitions``), each partition
    read up to offset ``n``."""
    parts = f"partitions => '{','.join(map(str, partitions))}', " if partitions else ""
    stop = ",".join(f"{p}:{n}" for p in partitions or (0, 1))
    return (
        f"kafka(brokers => '{broker}', topic => '{topic}', time_field => DESCRIPTOR(t), {parts}stop => '{stop}', "
        "schema => 't BIGINT, k BIGINT, v BIGINT')"
    )


def sql_queries(broker: str, topic: str, n: int, every: int = 40) -> dict[str, str]:
    """The three SQL query kinds of the kill tests over TOPIC: ``windowed``, a tumbling-window GROUP BY
    with TRIGGER ON WATERMARK; ``join``, partition 0 joined with partition 1 per key and window, counted
    and summed per key and window; ``counting``, a GROUP BY with TRIGGER COUNTING ``every`` (each new
    count retracts the previous)."""

    def tumbled(src: str) -> str:
        return (
            f"tumble(source => TABLE({src}), time_field => DESCRIPTOR(t), window_length => INTERVAL 1000 MICROSECONDS)"
        )

    src = kafka_source(broker, topic, n)
    left, right = tumbled(kafka_source(broker, topic, n, (0,))), tumbled(kafka_source(broker, topic, n, (1,)))
    return {
        "windowed": f"SELECT k, COUNT(*) AS n, SUM(v) AS s, window_end FROM {tumbled(src)} "
        "GROUP BY k, window_end TRIGGER ON WATERMARK",
        "join": f"SELECT a.k, a.window_end, COUNT(*) AS n, SUM(a.v * b.v) AS p FROM {left} a JOIN {right} b "
        "ON a.k = b.k AND a.window_end = b.window_end GROUP BY a.k, a.window_end",
        "counting": f"SELECT k, COUNT(*) AS n, SUM(v) AS s FROM {src} GROUP BY k TRIGGER COUNTING {every}",
    }


def streams(broker: str, topic: str, n: int) -> dict[str, tidal.Stream]:
    def read(partitions):
        return tidal.from_kafka(
            broker, topic, time_field="t", schema=SCHEMA, partitions=partitions, stop={p: n for p in partitions},
            batch_ms=40, report=lambda msg: None,
        )  # fmt: skip

    windowed = read([0, 1]).tumbling_window(1_000).group_aggregate("k", agg.count(), total=agg.sum("v"))
    left, right = read([0]).alter_duration(300), read([1]).alter_duration(300)
    joined = left.join(right, "k", "k", result=lambda a, b: {"k": a.k, "lt": a.t, "rt": b.t, "v": a.v + b.v})
    sql = sql_queries(broker, topic, n)
    on_watermark, counting = plan(sql["windowed"]), plan(sql["counting"])
    return {"agg": windowed, "join": joined, "sql_watermark": on_watermark.stream(), "sql_counting": counting.stream()}


def main() -> None:
    broker, topic, n, out, checkpoints = sys.argv[1:6]
    named = streams(broker, topic, int(n))
    kill_in = int(os.environ.get("TIDAL_KILL_IN_SAVE", "0"))
    if kill_in:
        save, calls = CheckpointStore.save, [0]

        def dying_save(self, query, fingerprint, state):
            calls[0] += 1
            if calls[0] == kill_in:
                os.kill(os.getpid(), signal.SIGKILL)
            return save(self, query, fingerprint, state)

        CheckpointStore.save = dying_save
    sinks = [SegmentSink(os.path.join(out, name)) for name in named]
    kafka_sink = KafkaSink(broker, topic + "-out", query="agg")  # the aggregate once more, into a topic
    roots = [s.node for s in named.values()] + [named["agg"].node]
    plan = "\n".join(s.explain() for s in named.values())
    fingerprint = hashlib.sha256(plan.encode()).hexdigest()[:16]
    ready = os.environ.get("TIDAL_READY")

    def on_checkpoint(seq: int) -> None:
        kafka_sink.publish()  # the checkpoint holding the staged messages is saved: send them
        if ready and not os.path.exists(ready):
            open(ready, "w").close()

    with CheckpointStore(checkpoints) as store:
        query = Query(roots, [*sinks, kafka_sink])
        query.run_durably(store, "kafka", fingerprint, every_messages=5, on_checkpoint=on_checkpoint)


if __name__ == "__main__":
    main()
