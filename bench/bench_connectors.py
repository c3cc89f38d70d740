"""Benchmark: the PostgreSQL and Redis connectors against their clients used directly.

Usage::

    python bench/bench_connectors.py [--quick] [--rows N] [--repeat R] [--out bench/results/connectors.json]

Starts a throwaway PostgreSQL and redis-server (``tidal.testing.servers``; Debian's packages,
installed by ``scripts/services.sh``; without them the module notes why and measures nothing).
Workloads, rows (or entries, or changes) per second of the median run:

* ``postgres read``: ``SELECT count(*), sum(v) FROM postgres(...)`` through tidal's SQL, against
  psycopg's ``fetchall`` of the same statement into Python tuples (the client's own floor).
* ``lookup join``: N stream rows joined to a 100,000-row customers table, looked up per batch of
  keys (tidal), against the same join with the table read whole (``tidal full read``: a computed
  key column on the table side turns the lookup off) and DuckDB joining the same rows from CSV.
* ``redis read``: ``tidal.from_redis(..., stop="latest").count()`` over N JSON entries, against an
  XREAD loop that ``json.loads`` each entry.
* ``postgres sink``: N keyed changes applied by the sink (upserts, one transaction), against
  psycopg's ``executemany`` of plain INSERTs of the same rows.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile

import numpy as np
import pyarrow as pa
import pyarrow.csv as pv

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness import Results, add_common_args  # noqa: E402

import tidal  # noqa: E402
from tidal.sql import plan  # noqa: E402


def load_pg(conn, name: str, table: pa.Table, ddl: str) -> None:
    conn.execute(f"DROP TABLE IF EXISTS {name}; CREATE TABLE {name} ({ddl})")
    with conn.cursor() as cur, cur.copy(f"COPY {name} FROM STDIN") as copy:
        for row in zip(*[c.to_pylist() for c in table.columns], strict=True):
            copy.write_row(row)


def postgres_workloads(results: Results, server, rows: int, repeat: int, workdir: str) -> None:
    import duckdb
    import psycopg

    from tidal.io.postgres_sink import PostgresTable

    rng = np.random.default_rng(3)
    customers = 100_000
    events = pa.table(
        {"ts": np.arange(rows, dtype=np.int64) * 10, "customer": rng.integers(0, customers, rows),
         "amount": rng.integers(1, 100, rows)}
    )  # fmt: skip
    cust = pa.table({"id": np.arange(customers, dtype=np.int64), "region": [f"r{i % 17}" for i in range(customers)]})
    dsn = server.dsn
    with psycopg.connect(dsn, autocommit=True) as conn:
        load_pg(conn, "events", events, "ts bigint, customer bigint, amount bigint")
        load_pg(conn, "customers", cust, "id bigint primary key, region text")
    pv.write_csv(events, os.path.join(workdir, "events.csv"))
    pv.write_csv(cust, os.path.join(workdir, "customers.csv"))
    os.chdir(workdir)

    sql = f"SELECT count(*) AS n, sum(amount) AS s FROM postgres(dsn => '{dsn}', table => 'events')"
    assert plan(sql).result().column("n").to_pylist() == [rows]
    results.run("postgres read", "tidal", lambda: plan(sql).result(), rows, repeat)

    def raw_fetch():
        with psycopg.connect(dsn) as conn:
            return conn.execute("SELECT ts, customer, amount FROM events").fetchall()

    results.run("postgres read", "psycopg fetchall", raw_fetch, rows, repeat)

    stream = (
        "max_diff_watermark(source => TABLE('events.csv'), time_field => DESCRIPTOR(ts), offset => INTERVAL 1 SECOND)"
    )
    lookup = (
        f"SELECT c.region, count(*) AS n FROM {stream} e JOIN postgres('{dsn}', 'customers') c "
        "ON e.customer = c.id GROUP BY c.region"
    )
    full = lookup.replace(
        f"postgres('{dsn}', 'customers') c", f"(SELECT id + 0 AS id, region FROM postgres('{dsn}', 'customers')) c"
    )
    duck = "SELECT c.region, count(*) FROM 'events.csv' e JOIN 'customers.csv' c ON e.customer = c.id GROUP BY 1"
    assert "LookupJoin [" in plan(lookup).explain().split("Stream plan:")[1]
    expected = sorted(duckdb.sql(duck).fetchall())
    assert sorted(tuple(r.values()) for r in plan(lookup).result().to_pylist()) == expected
    assert sorted(tuple(r.values()) for r in plan(full).result().to_pylist()) == expected
    results.run("lookup join", "tidal", lambda: plan(lookup).result(), rows, repeat)
    results.run("lookup join", "tidal full read", lambda: plan(full).result(), rows, repeat)
    results.run("lookup join", "duckdb (csv)", lambda: duckdb.sql(duck).fetchall(), rows, repeat)

    changes = [(i, int(a)) for i, a in enumerate(events.column("amount").to_pylist())]

    def sink():
        t = PostgresTable(dsn, "sunk", [("k", pa.int64()), ("v", pa.int64())], ["k"])
        t.open()
        t.reset = True
        for row in changes:
            t.change(False, row)
        t.commit(1)
        t.close()

    def raw_insert():
        with psycopg.connect(dsn) as conn, conn.cursor() as cur:
            cur.execute("DROP TABLE IF EXISTS plain; CREATE TABLE plain (k bigint, v bigint)")
            cur.executemany("INSERT INTO plain VALUES (%s, %s)", changes)

    results.run("postgres sink", "tidal", sink, rows, repeat)
    results.run("postgres sink", "psycopg executemany", raw_insert, rows, repeat)


def redis_workloads(results: Results, server, rows: int, repeat: int) -> None:
    r = server.client()
    r.flushdb()
    rng = np.random.default_rng(5)
    keys = rng.integers(0, 1000, rows).tolist()
    for start in range(0, rows, 5_000):
        pipe = r.pipeline()
        for i in range(start, min(rows, start + 5_000)):
            pipe.xadd("ev", {"data": json.dumps({"t": i, "k": keys[i], "v": i % 7})}, id=f"{i + 1}-0")
        pipe.execute()
    assert tidal.from_redis(server.url, "ev", time="t", stop="latest").count() == rows
    results.run("redis read", "tidal", lambda: tidal.from_redis(server.url, "ev", time="t", stop="latest").count(),
                rows, repeat)  # fmt: skip

    def raw():
        client, last, n = server.client(), "0-0", 0
        while n < rows:
            got = client.xread({"ev": last}, count=10_000)
            for eid, fields in got[0][1]:
                json.loads(fields[b"data"])
                last = eid
                n += 1
        return n

    results.run("redis read", "redis-py xread+json", raw, rows, repeat)


def main(argv=None) -> int:
    from tidal.testing.servers import PostgresServer, RedisServer, Unavailable

    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    add_common_args(ap, "bench/results/connectors.json")
    args = ap.parse_args(argv)
    rows = 30_000 if args.quick else args.rows
    out = os.path.abspath(args.out)
    results = Results()
    here = os.getcwd()
    with tempfile.TemporaryDirectory() as workdir:
        try:
            pg = PostgresServer()
        except Unavailable as exc:
            results.note(f"PostgreSQL workloads not measured: {exc}")
            pg = None
        if pg is not None:
            try:
                postgres_workloads(results, pg, rows, args.repeat, workdir)
            finally:
                os.chdir(here)
                pg.stop()
        try:
            rs = RedisServer()
        except Unavailable as exc:
            results.note(f"Redis workloads not measured: {exc}")
            rs = None
        if rs is not None:
            try:
                redis_workloads(results, rs, rows, args.repeat)
            finally:
                rs.stop()
    results.report(out, rows=rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
