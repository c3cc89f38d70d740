"""``tidal query --state`` from a Kafka topic to a Kafka topic, killed with SIGKILL at random points
(some inside a commit) while a producer writes: the output topic ends with exactly the messages of
one uninterrupted run, each once."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

from .killloop import kill_loop
from .test_kafka_durable import _producer

TIDAL = str(Path(sys.executable).with_name("tidal"))
ROOT = Path(__file__).parents[2]


def _sql(address: str, topic: str, n: int) -> str:
    src = (
        f"kafka(brokers => '{address}', topic => '{topic}', time_field => DESCRIPTOR(t), stop => '0:{n},1:{n}', "
        "schema => 't BIGINT, k BIGINT, v BIGINT')"
    )
    return (
        f"SELECT k, COUNT(*) AS n, SUM(v) AS s, window_end FROM tumble(source => TABLE({src}), "
        "time_field => DESCRIPTOR(t), window_length => INTERVAL 1000 MICROSECONDS) "
        "GROUP BY k, window_end TRIGGER ON WATERMARK"
    )


def _payloads(broker, topic: str) -> list[dict]:
    return [json.loads(v) for _, v, _ in broker.read(topic)]


def test_tidal_query_state_from_kafka_to_kafka_survives_kill_9(broker, tmp_path):
    topic, n, chunk = broker.create_topic("cli-ev", 2), 1_800, 60
    writer, go = _producer(broker, topic, n, chunk)

    def on_start(run: int, last: bool) -> None:
        go.release(n // chunk if last else 1)

    out = broker.create_topic("cli-out")
    command = [TIDAL, "query", _sql(broker.address, topic, n), "--output", f"kafka://{broker.address}/{out}",
               "--state", str(tmp_path / "state.db"), "--checkpoint-interval", "0.1"]  # fmt: skip
    rng = random.Random(4)

    def env_for(run: int) -> dict:  # every fourth run dies inside one of its commits
        return {"TIDAL_TEST_COMMIT_HOOK": f"kill:{rng.randint(2, 6)}"} if run % 4 == 3 else {}

    with open(tmp_path / "runs.log", "ab") as log:
        report = kill_loop(command, kills=20, seed=8, live=(0.4, 1.8), env_for=env_for, cwd=str(tmp_path),
                           log=log, on_start=on_start, timeout=180)  # fmt: skip
    writer.join(60)
    assert report.kills + report.self_kills >= 20, report
    assert report.self_kills >= 2, report

    # the same command, never interrupted, into a fresh topic
    whole = broker.create_topic("cli-whole")
    subprocess.run(
        [TIDAL, "query", _sql(broker.address, topic, n), "--output", f"kafka://{broker.address}/{whole}",
         "--state", str(tmp_path / "whole.db")],
        check=True, cwd=str(tmp_path), capture_output=True, timeout=300,
    )  # fmt: skip
    got, want = _payloads(broker, out), _payloads(broker, whole)
    assert len(want) > 50
    assert got == want
