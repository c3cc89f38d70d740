"""Lost connections are retried with backoff and reported on standard error, never a silent stall:
a Redis feed whose connection the server drops reads on from the last id; a lookup whose backend is
terminated reconnects and answers; a sink commit does the same."""

from __future__ import annotations

import json
import threading
import time

import pyarrow as pa

from tidal.io.postgres import Lookup, Relation
from tidal.io.postgres_sink import PostgresTable
from tidal.io.redis_streams import RedisStreamFeed
from tidal.io.retry import Backoff


def test_redis_feed_reconnects_after_the_server_drops_it(redis_server, capsys):
    r = redis_server.client()
    r.flushdb()
    for i in range(1, 11):
        r.xadd("ev", {"data": json.dumps({"i": i})}, id=f"{i}-0")

    def drop_then_write():  # while the feed waits in XREAD for entry 11: drop its connection, then write
        time.sleep(0.5)
        assert r.client_kill_filter(_type="normal", skipme=True) >= 1
        for i in range(11, 21):
            r.xadd("ev", {"data": json.dumps({"i": i})}, id=f"{i}-0")

    feed = RedisStreamFeed(redis_server.url, "ev", stop="20-0", block_ms=3_000, backoff=Backoff(5, 0.05))
    other = threading.Thread(target=drop_then_write)
    seen = []
    for msg in feed.open():
        if hasattr(msg, "columns") and "i" in msg.columns:
            seen += msg.columns["i"].to_pylist()
            if not other.is_alive() and len(seen) == 10:
                other.start()  # the feed goes on to wait for entry 11
    other.join()
    feed.close()
    assert seen == list(range(1, 21))  # nothing lost, nothing twice
    err = capsys.readouterr().err
    assert "redis stream ev at 127.0.0.1" in err and "retry 1 of 4" in err


def terminate_others(pg) -> int:
    return pg.execute(
        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
        "WHERE pid <> pg_backend_pid() AND datname = current_database()"
    ).fetchone()[0]


def test_lookup_and_sink_reconnect_after_their_backend_is_terminated(pg, pg_dsn, capsys):
    pg.execute("CREATE TABLE c (id bigint, name text)")
    pg.execute("INSERT INTO c VALUES (1, 'a'), (2, 'b'), (2, 'bb')")
    lookup = Lookup(Relation(pg_dsn, "c", backoff=Backoff(5, 0.01)), ["id", "name"], ["id"])

    def match(keys):
        got = lookup.match(pa.table({"k": pa.array(keys, pa.int64())}))
        return sorted((r["__probe"], r["id"], r["name"]) for r in got.to_pylist())

    assert match([1]) == [(0, 1, "a")]
    assert terminate_others(pg) == 1
    assert match([2, 3, None, 1, 2]) == [(0, 2, "b"), (0, 2, "bb"), (3, 1, "a"), (4, 2, "b"), (4, 2, "bb")]
    lookup.close()
    assert "postgres table c at 127.0.0.1" in capsys.readouterr().err

    sink = PostgresTable(pg_dsn, "out", [("k", pa.int64()), ("n", pa.int64())], ["k"], backoff=Backoff(5, 0.01))
    sink.open()
    sink.change(False, (1, 10))
    sink.commit(1)
    terminate_others(pg)
    sink.change(True, (1, 10))
    sink.change(False, (1, 11))
    sink.commit(2)
    sink.close()
    assert pg.execute("SELECT k, n FROM out").fetchall() == [(1, 11)]
    assert pg.execute("SELECT seq FROM tidal_sink_progress WHERE sink = 'out'").fetchone() == (2,)
    assert "postgres table out" in capsys.readouterr().err


def test_an_idle_redis_feed_keeps_yielding(redis_server):
    r = redis_server.client()
    r.flushdb()
    r.xadd("ev", {"data": json.dumps({"i": 1})}, id="1-0")
    feed = RedisStreamFeed(redis_server.url, "ev", block_ms=20)
    it = feed.open()
    first = next(it)
    assert first.columns["i"].to_pylist() == [1]
    idle = [next(it) for _ in range(3)]  # nothing new: empty batches, not a stall
    assert all(len(m) == 0 for m in idle)
    r.xadd("ev", {"data": json.dumps({"i": 2})}, id="2-0")
    assert next(m for m in it if len(m)).columns["i"].to_pylist() == [2]
    assert feed.position()["last"] == "2-0"
    feed.close()
