"""``tidal query --state`` reading a Kafka topic while a producer writes, writing to a Kafka topic or to
a PostgreSQL table, killed with SIGKILL at random points (some inside a commit) and started again:
the output ends exactly as one uninterrupted run leaves it (the Kafka topic: the same messages in the
same order, each once; the PostgreSQL table: the same rows), for a windowed GROUP BY with TRIGGER ON
WATERMARK, a stream join and a TRIGGER COUNTING query with retractions.

``TIDAL_KAFKA_CLI_KILLS`` sets the kills per case (default 4: 24 in the file over its six cases, each
case's restarts cost a process start and a reconnection; more is a longer soak).
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
from connectors.conftest import pg_dsn, postgres_server  # noqa: F401 - fixtures: the test's PostgreSQL database

from .kafka_child import sql_queries
from .killloop import Committed, kill_loop, paced_producer

TIDAL = [sys.executable, "-m", "tidal.cli.main"]
ROOT = str(Path(__file__).resolve().parents[2])  # the runs import this checkout's tidal
KILLS = int(os.environ.get("TIDAL_KAFKA_CLI_KILLS", "4"))
CASES = [(sink, kind) for sink in ("kafka", "postgresql") for kind in ("windowed", "join", "counting")]


def _payloads(broker, topic: str) -> list[dict]:
    return [json.loads(v) for _, v, _ in broker.read(topic)]


def _table(dsn: str, table: str) -> list[tuple]:
    import psycopg

    with psycopg.connect(dsn) as conn:
        return sorted(conn.execute(f"SELECT * FROM {table}").fetchall(), key=repr)


@pytest.mark.parametrize(("sink", "kind"), CASES, ids=[f"{s}-{k}" for s, k in CASES])
def test_tidal_query_state_from_kafka_survives_kill_9(broker, request, tmp_path, sink, kind):
    topic, n, chunk = broker.create_topic(f"cli-{sink}-{kind}", 2), 600, 60
    sql = sql_queries(broker.address, topic, n, every=20)[kind]
    if sink == "kafka":
        outputs = {
            name: f"kafka://{broker.address}/{broker.create_topic(f'{topic}-{name}')}" for name in ("out", "whole")
        }
    else:
        dsn = request.getfixturevalue("pg_dsn")
        outputs = {name: f"{dsn}?table={name}" for name in ("out", "whole")}
    writer, go = paced_producer(broker, topic, n, chunk, pause=0.1)  # a chunk: 0.6 s

    def on_start(run: int, last: bool) -> None:  # one chunk per restart; the rest while the last run reads
        go.release(n // chunk if last else 1)

    def command(name: str) -> list[str]:
        state = str(tmp_path / f"{name}.db")
        return [*TIDAL, "query", sql, "--output", outputs[name], "--state", state, "--checkpoint-interval", "0.1"]

    rng = random.Random(f"{sink}-{kind}")

    def env_for(run: int) -> dict:  # every third run dies inside one of its commits (after the output's)
        return {"TIDAL_TEST_COMMIT_HOOK": f"kill:{rng.randint(1, 3)}"} if run % 3 == 1 else {}

    with open(tmp_path / "runs.log", "ab") as log:
        report = kill_loop(command("out"), kills=KILLS, seed=len(sink) * 7 + len(kind), live=(0.0, 0.8),
                           env_for=env_for, env={"PYTHONPATH": ROOT}, cwd=str(tmp_path), log=log,
                           on_start=on_start, timeout=60, ready=Committed(str(tmp_path / "out.db")))  # fmt: skip
    writer.join(60)
    assert report.kills + report.self_kills >= KILLS, report
    assert report.self_kills >= 1, report

    # the same command, never interrupted, into a fresh topic or table
    env = {**os.environ, "PYTHONPATH": ROOT}
    done = subprocess.run(command("whole"), cwd=str(tmp_path), env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    if sink == "kafka":
        got, want = (_payloads(broker, outputs[name].rsplit("/", 1)[1]) for name in ("out", "whole"))
        if kind == "counting":  # retractions: each new count takes back the previous one
            assert sum(1 for m in want if m.get("sys.undo")) > 20
    else:
        got, want = _table(dsn, "out"), _table(dsn, "whole")
    assert len(want) > 15
    assert got == want
