"""Exactly-once over Kafka: a durable query killed with SIGKILL at random points while a producer
writes, restarted each time, ends with the output of one uninterrupted run: a windowed aggregate
over two partitions, a stream join of the two partitions, a SQL windowed GROUP BY with TRIGGER ON
WATERMARK and a SQL TRIGGER COUNTING query with retractions (files), and the aggregate written
through the Kafka sink (each message once)."""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import pyarrow as pa

from tidal.io.segments import SegmentSink

from .kafka_child import streams
from .killloop import kill_loop, paced_producer

CHILD = Path(__file__).with_name("kafka_child.py")
ROOT = Path(__file__).parents[2]


def _rows(table) -> list[tuple]:
    return sorted(zip(*(c.to_pylist() for c in table.columns), strict=True)) if table is not None else []


def test_kill_9_at_random_points_while_a_producer_writes_gives_the_uninterrupted_output(broker, tmp_path):
    topic, n = broker.create_topic("durable-ev", 2), 1_500
    broker.create_topic(topic + "-out")
    chunk = 60
    writer, go = paced_producer(broker, topic, n, chunk)

    def on_start(run: int, last: bool) -> None:
        go.release(n // chunk if last else 1)  # one chunk per restart; the rest for the last run

    out, cp = tmp_path / "out", tmp_path / "cp.sqlite"
    rng = random.Random(11)

    def env_for(run: int) -> dict:  # every third run dies inside a commit of its own
        return {"TIDAL_KILL_IN_SAVE": str(rng.randint(2, 4))} if run % 3 == 2 else {}

    with open(tmp_path / "child.log", "ab") as log:
        report = kill_loop(
            [sys.executable, str(CHILD), broker.address, topic, str(n), str(out), str(cp)],
            kills=20, seed=3, live=(0.0, 0.8), env_for=env_for, cwd=str(ROOT), log=log,
            env={"PYTHONPATH": str(ROOT), "TIDAL_READY": str(tmp_path / "ready")}, ready=str(tmp_path / "ready"),
            on_start=on_start,
        )  # fmt: skip
    writer.join(60)
    expected = {name: s.to_arrow() for name, s in streams(broker.address, topic, n).items()}
    for name, table in expected.items():
        got = SegmentSink(out / name).table()
        assert table.num_rows > 100, name
        if name == "sql_counting":  # retractions: end edges of the previous counts
            other, sync = table.column("other_time").to_numpy(), table.column("sync_time").to_numpy()
            assert (other < sync).sum() > 50
        assert _rows(got) == _rows(table), name
    # the Kafka sink: the aggregate's events, each exactly once, in the topic
    messages = broker.read(topic + "-out")
    ids = [tuple(v for k, v in sorted(h) if k != "tidal.query") for _, _, h in messages]
    assert len(set(ids)) == len(ids)
    published = pa.Table.from_pylist([json.loads(v) for _, v, _ in messages])
    assert _rows(published.select(expected["agg"].column_names)) == _rows(expected["agg"])
    assert report.kills + report.self_kills >= 20, report
    assert report.self_kills >= 3, report
