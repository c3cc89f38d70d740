"""Redis Streams as a source: ``redis(...)`` in SQL equals DuckDB on the same entries; a durable API
run killed at random points while a producer writes ends with the uninterrupted run's output;
malformed entries are named by stream and entry id; a lost server is retried and reported."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import threading
import time

import duckdb
import pyarrow as pa
import pytest

import tidal
from tidal.core.errors import InputError, PlanError
from tidal.io.segments import SegmentSink
from tidal.sql import plan

from .redis_child import pipeline

CHILD = os.path.join(os.path.dirname(__file__), "redis_child.py")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def rows_of(n: int, seed: int = 5) -> list[dict]:
    rng = random.Random(seed)
    return [{"t": i * 37, "k": rng.choice(["a", "b", "c", None]), "v": rng.randint(-9, 9)} for i in range(n)]


def produce(client, key: str, rows: list[dict], pause: float = 0.0, chunk: int = 50) -> None:
    """XADD each row as one JSON field, with ids 1-0, 2-0, ... (so a test knows the last id)."""
    for start in range(0, len(rows), chunk):
        pipe = client.pipeline()
        for i, row in enumerate(rows[start : start + chunk], start + 1):
            pipe.xadd(key, {"data": json.dumps(row)}, id=f"{i}-0")
        pipe.execute()
        time.sleep(pause)


@pytest.fixture
def r(redis_server):
    client = redis_server.client()
    client.flushdb()
    return client


def sorted_rows(table: pa.Table) -> list:
    return sorted((tuple(x.values()) for x in table.to_pylist()), key=repr)


def test_sql_over_a_stream_equals_duckdb(redis_server, r):
    rows = rows_of(500)
    produce(r, "ev", rows)
    src = f"redis(url => '{redis_server.url}', stream => 'ev', stop => 'latest')"
    con = duckdb.connect()
    con.register("ev", pa.Table.from_pylist(rows))
    for sql in (
        "SELECT k, count(*) AS n, sum(v) AS s FROM {src} GROUP BY k",
        "SELECT t, v FROM {src} WHERE v > 3 AND k = 'a'",
    ):
        got = plan(sql.format(src=src)).result()
        assert sorted_rows(got) == sorted(con.execute(sql.format(src="ev")).fetchall(), key=repr)


def test_sql_with_event_time_and_windows(redis_server, r):
    rows = rows_of(400)
    produce(r, "ev", rows)
    src = f"redis(url => '{redis_server.url}', stream => 'ev', stop => 'latest', time_field => DESCRIPTOR(t))"
    sql = (
        f"SELECT window_end, k, count(*) AS n FROM tumble(source => TABLE({src}), time_field => DESCRIPTOR(t), "
        "window_length => INTERVAL 1 MILLISECOND) GROUP BY window_end, k"
    )
    got = plan(sql).result()
    con = duckdb.connect()
    con.register("ev", pa.Table.from_pylist(rows))
    expected = con.execute("SELECT (t // 1000 + 1) * 1000, k, count(*) FROM ev GROUP BY ALL").fetchall()
    got_rows = [
        (int(w.timestamp() * 1_000_000) if hasattr(w, "timestamp") else w, k, n) for w, k, n in sorted_rows(got)
    ]
    assert sorted(got_rows, key=repr) == sorted(expected, key=repr)


def test_python_source_in_order_with_stop_at_an_id(redis_server, r):
    rows = rows_of(300)
    produce(r, "ev", rows)
    s = tidal.from_redis(redis_server.url, "ev", time="t", stop="200-0", batch_size=64)
    expected = tidal.from_arrow(pa.Table.from_pylist(rows[:200]), time="t")
    assert sorted_rows(pipeline(s).to_arrow()) == sorted_rows(pipeline(expected).to_arrow())


def test_killed_durable_run_while_a_producer_writes_is_exactly_once(redis_server, r, tmp_path):
    rows = rows_of(900)
    stop = f"{len(rows)}-0"
    producer = threading.Thread(target=produce, args=(r, "ev", rows, 0.05, 25))
    producer.start()
    out, state = str(tmp_path / "out"), str(tmp_path / "state.sqlite")
    env = {**os.environ, "PYTHONPATH": ROOT}
    rng = random.Random(11)
    kills = 0
    try:
        for _attempt in range(100):
            how = rng.choice(["--kill-at-checkpoint", "--kill-in-save"])
            cmd = [sys.executable, CHILD, redis_server.url, "ev", stop, out, state, how, str(rng.randint(2, 6))]
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)
            if done.returncode == 0:
                break
            assert done.returncode == -9, done.stderr
            kills += 1
        else:
            pytest.fail("the durable run never finished")
    finally:
        producer.join()
    assert kills >= 3
    expected = pipeline(tidal.from_arrow(pa.Table.from_pylist(rows), time="t")).to_arrow()
    assert sorted_rows(SegmentSink(out).table()) == sorted_rows(expected)


def test_malformed_entries_are_named_and_skipped_to_a_dead_letter_file(redis_server, r, tmp_path):
    produce(r, "ev", rows_of(5))
    r.xadd("ev", {"data": "{not json"}, id="6-0")
    r.xadd("ev", {"data": json.dumps({"t": "late", "k": "a", "v": 1})}, id="7-0")
    r.xadd("ev", {"other": "x"}, id="8-0")
    produce_more = rows_of(3, seed=9)
    for i, row in enumerate(produce_more, 9):
        r.xadd("ev", {"data": json.dumps({**row, "t": 1000 + i})}, id=f"{i}-0")
    columns = "schema => 't BIGINT, k VARCHAR, v BIGINT'"
    src = f"redis(url => '{redis_server.url}', stream => 'ev', stop => 'latest', {columns}"
    with pytest.raises(InputError, match=r"redis stream ev at .*, entry 6-0: field data is not JSON"):
        plan(f"SELECT count(*) FROM {src})").result()
    dead = tmp_path / "dead.json"
    q = plan(f"SELECT count(*) AS n FROM {src}, dead_letter => '{dead}')", on_error="skip")
    assert q.result().column("n").to_pylist() == [8]
    assert q.stats.skipped == 3
    entries = [json.loads(line) for line in dead.read_text().splitlines()]
    by_id = {e["source"].rsplit(" ", 1)[-1]: e for e in entries}
    assert sorted(by_id) == ["6-0", "7-0", "8-0"]
    assert "is not JSON" in by_id["6-0"]["error"] and by_id["6-0"]["record"] == {"data": "{not json"}
    assert "does not fit the columns" in by_id["7-0"]["error"]
    assert "has no field 'data' (its fields: ['other'])" in by_id["8-0"]["error"]


def test_empty_stream_needs_a_schema_and_a_lost_server_is_retried(redis_server, r, capsys):
    with pytest.raises(PlanError, match="no entries to infer its columns"):
        plan(f"SELECT * FROM redis('{redis_server.url}', 'nothing')")
    from tidal.io.redis_streams import RedisStreamFeed
    from tidal.io.retry import Backoff, ConnectionLost

    from .conftest import free_port

    feed = RedisStreamFeed(f"redis://127.0.0.1:{free_port()}/0", "ev", backoff=Backoff(3, 0.01))
    with pytest.raises(ConnectionLost, match=r"redis stream ev at 127.0.0.1:\d+/0: sample: gave up after 3 attempts"):
        feed.schema()
    assert "retry 2 of 2" in capsys.readouterr().err


def test_fields_format_reads_each_field_as_a_column(redis_server, r):
    rows = rows_of(50)
    for i, row in enumerate(rows, 1):
        r.xadd("ev", {k: json.dumps(v) if not isinstance(v, str) else v for k, v in row.items() if v is not None},
               id=f"{i}-0")  # fmt: skip
    src = f"redis(url => '{redis_server.url}', stream => 'ev', format => 'fields', stop => 'latest')"
    got = plan(f"SELECT k, count(*) AS n, sum(v) AS s FROM {src} GROUP BY k").result()
    con = duckdb.connect()
    con.register("ev", pa.Table.from_pylist(rows))
    assert sorted_rows(got) == sorted(con.execute("SELECT k, count(*), sum(v) FROM ev GROUP BY k").fetchall(), key=repr)


def test_tidal_query_prints_windows_while_the_producer_is_still_writing(redis_server, r, tmp_path):
    """``stop => 'never'``: the query runs until interrupted, and each window's count is printed as
    soon as the watermark passes it, while entries are still arriving."""
    import signal

    src = (
        f"redis(url => '{redis_server.url}', stream => 'live', time_field => DESCRIPTOR(t), "
        "schema => 't BIGINT, k VARCHAR, v BIGINT')"
    )
    sql = (
        f"SELECT window_end, count(*) AS n FROM tumble(source => TABLE({src}), time_field => DESCRIPTOR(t), "
        "window_length => INTERVAL 1 SECOND) GROUP BY window_end TRIGGER ON WATERMARK"
    )
    env = {**os.environ, "PYTHONPATH": ROOT}
    proc = subprocess.Popen(
        [sys.executable, "-m", "tidal.cli.main", "query", sql, "--format", "stream-json"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env, cwd=str(tmp_path),
    )  # fmt: skip
    stop = threading.Event()

    def producer():  # one entry every 0.1 s of event time, for as long as the test wants
        i = 0
        while not stop.is_set():
            r.xadd("live", {"data": json.dumps({"t": i * 100_000, "k": "a", "v": 1})})
            i += 1
            time.sleep(0.01)

    writer = threading.Thread(target=producer)
    writer.start()
    try:
        first = json.loads(proc.stdout.readline())  # blocks until the first window is printed
        assert writer.is_alive() and not stop.is_set()  # ... while the producer still writes
        assert first == {"window_end": "1970-01-01 00:00:01", "n": 10}  # integer times are microseconds
    finally:
        stop.set()
        writer.join()
        proc.send_signal(signal.SIGINT)
        proc.wait(30)
        proc.stdout.close()


def test_a_key_that_is_not_a_stream_is_named(redis_server, r):
    r.set("plain", "x")
    with pytest.raises(InputError, match=r"redis stream plain at 127.0.0.1:\d+/0: sample: WRONGTYPE"):
        plan(f"SELECT * FROM redis('{redis_server.url}', 'plain')")
