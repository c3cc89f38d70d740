"""``tidal run`` with PostgreSQL tables: a ``'connector' = 'postgres'`` source read with ``postgres(...)``
and an ``INSERT INTO`` a PostgreSQL sink table (keyed by its PRIMARY KEY); answers equal DuckDB's."""

from __future__ import annotations

import random

import duckdb

from tidal.cli.main import main as cli


def _orders(n: int = 200) -> list[tuple]:
    rng = random.Random(8)
    return [(i, rng.choice(["ann", "bob", "cy", "dee"]), rng.randint(1, 500)) for i in range(n)]


def test_a_postgres_table_in_and_a_postgres_table_out(pg, pg_dsn, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    rows = _orders()
    pg.execute("CREATE TABLE orders (id BIGINT, customer TEXT, cents BIGINT)")
    with pg.cursor() as cur:
        cur.executemany("INSERT INTO orders VALUES (%s, %s, %s)", rows)
    host = pg_dsn.split("://", 1)[1]
    (tmp_path / "job.sql").write_text(
        f"""
        CREATE TABLE orders (id BIGINT, customer VARCHAR, cents BIGINT)
        WITH ('connector' = 'jdbc', 'url' = 'jdbc:postgresql://{host}', 'table-name' = 'orders');
        CREATE TABLE totals (who VARCHAR, n BIGINT, cents BIGINT, PRIMARY KEY (who) NOT ENFORCED)
        WITH ('connector' = 'postgres', 'url' = '{pg_dsn}', 'table-name' = 'totals');
        INSERT INTO totals SELECT customer, COUNT(*), SUM(cents) FROM orders WHERE cents > 100 GROUP BY customer;
        CREATE TABLE big (id BIGINT, cents BIGINT, PRIMARY KEY (id) NOT ENFORCED)
        WITH ('connector' = 'postgres', 'url' = '{pg_dsn}', 'table-name' = 'big');
        INSERT INTO big SELECT id, cents FROM orders WHERE cents > 450;  -- no GROUP BY: the key is the table's
        """
    )
    assert cli(["run", "job.sql"]) == 0, capsys.readouterr().err
    con = duckdb.connect()
    con.execute("CREATE TABLE orders (id BIGINT, customer VARCHAR, cents BIGINT)")
    con.executemany("INSERT INTO orders VALUES (?, ?, ?)", rows)
    expected = con.sql("SELECT customer, COUNT(*), SUM(cents) FROM orders WHERE cents > 100 GROUP BY ALL").fetchall()
    assert sorted(pg.execute("SELECT who, n, cents FROM totals").fetchall()) == sorted(expected)
    # the PRIMARY KEY became the sink's key: a unique index over it
    indexes = pg.execute("SELECT indexdef FROM pg_indexes WHERE tablename = 'totals'").fetchall()
    assert [d for (d,) in indexes if "UNIQUE" in d and "(who)" in d]
    big = con.sql("SELECT id, cents FROM orders WHERE cents > 450").fetchall()
    assert sorted(pg.execute("SELECT id, cents FROM big").fetchall()) == sorted(big) and big
