"""A stream joined to a ``postgres(...)`` table: the table's rows are looked up per batch of keys
(``= ANY(...)``), cached, and the answer equals DuckDB's join of the same rows."""

from __future__ import annotations

import datetime as dt
import random

import duckdb
import pyarrow as pa
import pyarrow.csv as pv
import pytest

from tidal.sql import plan

from .test_postgres_source import statements


def write_events(path, n: int, keys: int, seed: int = 1) -> pa.Table:
    rng = random.Random(seed)
    start = dt.datetime(2024, 1, 1)
    rows = {
        "ts": [start + dt.timedelta(seconds=i * 3 + rng.randint(0, 4)) for i in range(n)],
        "customer": [None if rng.random() < 0.05 else rng.randint(-2, keys) for _ in range(n)],
        "amount": [rng.randint(1, 100) for _ in range(n)],
    }
    schema = pa.schema([("ts", pa.timestamp("us")), ("customer", pa.int64()), ("amount", pa.int64())])
    table = pa.table(rows, schema=schema)
    pv.write_csv(table, path)
    return table


def customers(pg, keys: int) -> pa.Table:
    rows = [(i, f"c{i % 7}", ["nl", "de", None][i % 3]) for i in range(keys) if i % 5 != 2]
    rows += [(3, "twin", "fr")]  # a key with two rows: each event pairs with both
    pg.execute("CREATE TABLE customers (id int, name text, country text)")
    with pg.cursor() as cur, cur.copy("COPY customers FROM STDIN") as copy:
        for r in rows:
            copy.write_row(r)
    return pa.table({"id": [r[0] for r in rows], "name": [r[1] for r in rows], "country": [r[2] for r in rows]})


def stream_of(path: str) -> str:
    return f"max_diff_watermark(source => TABLE('{path}'), time_field => DESCRIPTOR(ts), offset => INTERVAL 10 SECONDS)"


def duck(sql: str, **tables) -> list:
    con = duckdb.connect()
    for name, t in tables.items():
        con.register(name, t)
    return sorted(con.execute(sql).fetchall(), key=repr)


def stream_plan(q) -> str:
    return q.explain().split("Stream plan:")[1]


def rows(table: pa.Table) -> list:
    return sorted((tuple(r.values()) for r in table.to_pylist()), key=repr)


@pytest.mark.parametrize(
    "select",
    [
        "SELECT e.ts, e.amount, c.name FROM {e} e JOIN {c} c ON e.customer = c.id",
        "SELECT c.country, count(*) AS n, sum(e.amount) AS total FROM {e} e JOIN {c} c ON c.id = e.customer "
        "WHERE c.country <> 'de' GROUP BY c.country",
        "SELECT e.customer, c.id, c.name FROM {c} c JOIN {e} e ON e.customer = c.id WHERE e.amount > 50",
        "SELECT * FROM {e} e JOIN {c} c ON e.customer = c.id AND c.name = 'c1'",
    ],
)
def test_lookup_join_equals_duckdb(pg, pg_dsn, in_tmp, select):
    events = write_events("events.csv", 3_000, 60)
    table = customers(pg, 60)
    sql = select.format(e=stream_of("events.csv"), c=f"postgres(dsn => '{pg_dsn}', table => 'customers')")
    q = plan(sql)
    assert "LookupJoin [postgres table customers" in stream_plan(q)
    assert rows(q.result()) == duck(select.format(e="events", c="customers"), events=events, customers=table)


def test_lookup_sends_keys_in_batches_and_caches(pg, pg_dsn, in_tmp, postgres_server):
    write_events("events.csv", 20_000, 40)
    customers(pg, 40)
    before = statements(postgres_server).count("= ANY(")
    q = plan(
        f"SELECT count(*) FROM {stream_of('events.csv')} e "
        f"JOIN postgres(dsn => '{pg_dsn}', table => 'customers') c ON e.customer = c.id"
    )
    q.result()
    log = statements(postgres_server)
    lookups = log.count("= ANY(")
    assert 1 <= lookups - before <= 3  # 20,000 events, 43 distinct keys: one query, a few more at most
    assert 'FROM "customers"' in log and 'FROM "customers" LIMIT 0' in log
    reads = [line for line in log.splitlines() if "tidal_read" in line and '"customers"' in line]
    assert not reads, "the whole table was read instead of looked up"
    assert 'q."id" = ANY($1::integer[])' in log  # the integer column as it is: an index on it serves the lookup


def test_keys_beyond_the_columns_range_match_nothing(pg, pg_dsn, in_tmp):
    events = write_events("events.csv", 200, 10)
    big = pa.array(
        [2**40 if i % 3 == 0 else c for i, c in enumerate(events.column("customer").to_pylist())], pa.int64()
    )
    events = events.set_column(1, "customer", big)
    pv.write_csv(events, "events.csv")
    table = customers(pg, 10)
    select = "SELECT e.ts, c.name FROM {e} e JOIN {c} c ON e.customer = c.id"
    q = plan(select.format(e=stream_of("events.csv"), c=f"postgres('{pg_dsn}', 'customers')"))
    assert "LookupJoin [" in stream_plan(q)
    assert rows(q.result()) == duck(select.format(e="events", c="customers"), events=events, customers=table)


def test_a_table_that_is_not_plain_columns_is_read_whole(pg, pg_dsn, in_tmp):
    events = write_events("events.csv", 500, 20)
    table = customers(pg, 20)
    select = "SELECT e.amount, c.n FROM {e} e JOIN (SELECT id, upper(name) AS n FROM {c}) c ON e.customer = c.id"
    q = plan(select.format(e=stream_of("events.csv"), c=f"postgres('{pg_dsn}', 'customers')"))
    assert "LookupJoin [" not in stream_plan(q)
    assert rows(q.result()) == duck(select.format(e="events", c="customers"), events=events, customers=table)


@pytest.fixture
def in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path
