"""``tidal run`` with Kafka tables: a ``'connector' = 'kafka'`` source (its watermark the feed's own) and
an ``INSERT INTO`` a Kafka sink table, against the same query written with ``kafka(...)``."""

from __future__ import annotations

import json

from tidal.cli.main import main

from .test_kafka import _fill


def test_a_kafka_table_in_and_a_kafka_table_out(broker, topic, tmp_path, monkeypatch, capsys):
    rows = _fill(broker, topic, partitions=2, n=120)
    broker.create_topic(topic + "-out")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "job.sql").write_text(
        f"""
        CREATE TABLE events (t BIGINT, k BIGINT, v BIGINT, WATERMARK FOR t AS t)
        WITH ('connector' = 'kafka', 'topic' = '{topic}', 'properties.bootstrap.servers' = '{broker.address}',
              'format' = 'json', 'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = 'latest-offset');
        CREATE TABLE counts (k BIGINT, n BIGINT, s BIGINT)
        WITH ('connector' = 'kafka', 'topic' = '{topic}-out', 'properties.bootstrap.servers' = '{broker.address}');
        INSERT INTO counts SELECT k, COUNT(*), SUM(v) FROM events GROUP BY k TRIGGER COUNTING 5;
        """
    )
    assert main(["run", "job.sql"]) == 0, capsys.readouterr().err
    got = [json.loads(v) for _, v, _ in broker.read(topic + "-out")]
    src = f"kafka(brokers => '{broker.address}', topic => '{topic}', time_field => DESCRIPTOR(t), stop => 'latest')"
    sql = f"SELECT k AS k, COUNT(*) AS n, SUM(v) AS s FROM {src} GROUP BY k TRIGGER COUNTING 5"
    assert main(["query", sql, "--format", "stream-json", "--output", "expected.json"]) == 0
    expected = [json.loads(line) for line in (tmp_path / "expected.json").read_text().splitlines()]
    key = lambda r: json.dumps(r, sort_keys=True)  # noqa: E731
    assert sorted(got, key=key) == sorted(expected, key=key) and any(r.get("sys.undo") for r in got)
    final: dict = {}
    for r in rows:
        n, s = final.get(r["k"], (0, 0))
        final[r["k"]] = (n + 1, s + r["v"])
    live: dict = {}
    for r in got:  # the changes net out to the plain per-key totals
        if r.get("sys.undo"):
            del live[r["k"]]
        else:
            live[r["k"]] = (r["n"], r["s"])
    assert live == final
