"""``postgres(...)`` as a bounded table: answers equal DuckDB's on the same rows; the filter and the
projection reach the server (its statement log shows them); bad values and lost connections."""

from __future__ import annotations

import datetime as dt
import json

import duckdb
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tidal
from tidal.core.errors import InputError, PlanError
from tidal.sql import plan

SCHEMA = pa.schema(
    [
        ("id", pa.int64()),
        ("name", pa.string()),
        ("qty", pa.int64()),
        ("price", pa.float64()),
        ("ok", pa.bool_()),
        ("day", pa.date32()),
        ("ts", pa.timestamp("us")),
    ]
)
CREATE = "CREATE TABLE {t} (id int PRIMARY KEY, name text, qty bigint, price float8, ok bool, day date, ts timestamp)"


def load(pg, name: str, table: pa.Table) -> None:
    pg.execute(CREATE.format(t=name))
    with pg.cursor() as cur, cur.copy(f"COPY {name} FROM STDIN") as copy:
        for row in table.to_pylist():
            copy.write_row(list(row.values()))


def sample(n: int = 60) -> pa.Table:
    names = ["a", "B", "b", "Ä", "ab", "a b", None, "", "z"]
    rows = []
    for i in range(n):
        rows.append(
            {
                "id": i,
                "name": names[i % len(names)],
                "qty": None if i % 7 == 3 else (i * 37) % 11 - 5,
                "price": None if i % 5 == 4 else round(i * 1.25 - 20, 2),
                "ok": None if i % 6 == 5 else i % 2 == 0,
                "day": dt.date(2020, 1, 1) + dt.timedelta(days=i * 9),
                "ts": dt.datetime(2020, 1, 1) + dt.timedelta(hours=i * 7),
            }
        )
    return pa.Table.from_pylist(rows, SCHEMA)


def both(pg_dsn: str, sql: str, **tables: pa.Table) -> tuple[list, list]:
    """The rows of ``sql`` from tidal (``{t}`` read from PostgreSQL) and from DuckDB (``{t}`` the same rows)."""
    con = duckdb.connect()
    for name, table in tables.items():
        con.register(name, table)
    expected = con.execute(sql.format(**{n: n for n in tables})).fetchall()
    pg_sql = sql.format(**{n: f"postgres(dsn => '{pg_dsn}', table => '{n}')" for n in tables})
    got = plan(pg_sql).result()
    return sorted(map(tuple, (r.values() for r in got.to_pylist())), key=repr), sorted(expected, key=repr)


QUERIES = [
    "SELECT * FROM {t}",
    "SELECT id, name FROM {t} WHERE qty > 0 AND name < 'b'",
    "SELECT id FROM {t} WHERE name >= 'B' OR price BETWEEN -5 AND 10.5",
    "SELECT id, price FROM {t} WHERE NOT ok AND qty IN (1, 2, -3)",
    "SELECT id FROM {t} WHERE name IS NULL OR qty IS NOT NULL AND ok",
    "SELECT id FROM {t} WHERE day >= DATE '2020-06-01' AND ts < TIMESTAMP '2020-01-10 00:00:00'",
    "SELECT name, count(*), sum(qty), avg(price) FROM {t} GROUP BY name",
    "SELECT name, max(id) FROM {t} WHERE upper(name) = 'A' GROUP BY name HAVING count(*) > 1",
    "SELECT ok, min(name), count(DISTINCT qty) FROM {t} WHERE price <> 0 GROUP BY ok",
    "SELECT id, qty * 2 AS q2 FROM {t} WHERE qty = id % 3 ORDER BY id LIMIT 5",
]


@pytest.mark.parametrize("sql", QUERIES)
def test_postgres_table_equals_duckdb(pg, pg_dsn, sql):
    table = sample()
    load(pg, "t", table)
    got, expected = both(pg_dsn, sql, t=table)
    assert got == expected


def test_query_argument_and_a_join_of_two_tables(pg, pg_dsn):
    table = sample()
    load(pg, "t", table)
    q = plan(f"SELECT n, count(*) AS c FROM postgres('{pg_dsn}', query => 'SELECT name AS n FROM t') GROUP BY n")
    con = duckdb.connect()
    con.register("t", table)
    expected = con.execute("SELECT name, count(*) FROM t GROUP BY name").fetchall()
    assert sorted(map(tuple, (r.values() for r in q.result().to_pylist())), key=repr) == sorted(expected, key=repr)
    load(pg, "t2", table)
    got, expected = both(pg_dsn, "SELECT a.id, b.name FROM {t} a JOIN {t2} b ON a.qty = b.id", t=table, t2=table)
    assert got == expected


def statements(postgres_server) -> str:
    with open(f"{postgres_server.dir}/log") as f:
        return f.read()


def test_filter_and_projection_go_to_the_server(pg, pg_dsn, postgres_server):
    load(pg, "pushed", sample())
    q = plan(f"SELECT name FROM postgres(dsn => '{pg_dsn}', table => 'pushed') WHERE qty > 2 AND upper(name) = 'A'")
    assert "pushed filter" in q.explain()
    q.result()
    sent = [line for line in statements(postgres_server).splitlines() if 'FROM "pushed"' in line]
    assert sent, "no statement read the table"
    # only the used columns (and the primary key, which names malformed rows) travel; the filter is in WHERE
    assert 'SELECT "name", "qty", "id"::int8 FROM "pushed" WHERE "qty" > $1' in sent[-1]
    assert "upper" not in sent[-1].lower()  # a function the server might compute differently stays in tidal


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    rows=st.lists(
        st.tuples(
            st.one_of(st.none(), st.integers(-5, 5)), st.one_of(st.none(), st.sampled_from(["a", "B", "b", "é", ""]))
        ),
        max_size=30,
    ),
    lo=st.integers(-6, 6),
    word=st.sampled_from(["a", "B", "b", "é", "", "aa"]),
    op=st.sampled_from(["<", "<=", "=", "<>", ">", ">="]),
)
def test_pushed_comparisons_keep_sql_semantics(pg, pg_dsn, rows, lo, word, op):
    table = pa.table({"id": list(range(len(rows))), "x": [r[0] for r in rows], "s": [r[1] for r in rows]},
                     schema=pa.schema([("id", pa.int64()), ("x", pa.int64()), ("s", pa.string())]))  # fmt: skip
    pg.execute("DROP TABLE IF EXISTS h; CREATE TABLE h (id int, x int, s text)")
    with pg.cursor() as cur, cur.copy("COPY h FROM STDIN") as copy:
        for r in table.to_pylist():
            copy.write_row(list(r.values()))
    sql = f"SELECT id FROM {{t}} WHERE x {op} {lo} OR s {op} '{word}' OR NOT (x {op} {lo} AND s IS NULL)"
    con = duckdb.connect()
    con.register("h", table)
    expected = sorted(con.execute(sql.format(t="h")).fetchall())
    got = plan(sql.format(t=f"postgres('{pg_dsn}', 'h')")).result()
    assert sorted(tuple(r.values()) for r in got.to_pylist()) == expected


def test_python_constructor(pg, pg_dsn):
    table = sample(20)
    load(pg, "t", table)
    s = tidal.from_postgres(pg_dsn, table="t")
    assert s.to_arrow().drop_columns(["sync_time", "other_time"]).sort_by("id").equals(table)
    q = tidal.from_postgres(pg_dsn, query="SELECT id, qty FROM t WHERE qty > 0").to_arrow()
    assert sorted(q.column("id").to_pylist()) == [r["id"] for r in table.to_pylist() if (r["qty"] or 0) > 0]


def test_errors_name_the_table_and_the_row(pg, pg_dsn, tmp_path):
    pg.execute("CREATE TABLE bad (id int PRIMARY KEY, ts timestamp)")
    pg.execute("INSERT INTO bad VALUES (1, '2020-01-01'), (2, 'infinity'), (3, '2021-01-01')")
    with pytest.raises(InputError, match=r"postgres table bad at .*, row id=2: column ts holds 'infinity'"):
        plan(f"SELECT * FROM postgres('{pg_dsn}', 'bad')").result()
    dead = tmp_path / "dead.json"
    q = plan(f"SELECT id, ts FROM postgres('{pg_dsn}', 'bad', dead_letter => '{dead}')", on_error="skip")
    assert sorted(q.result().column("id").to_pylist()) == [1, 3]
    assert q.stats.skipped == 1
    entry = json.loads(dead.read_text())
    assert entry["record"] == {"id": 2, "ts": "infinity"} and "row id=2" in entry["source"]
    with pytest.raises(PlanError, match="no_such_table"):
        plan(f"SELECT * FROM postgres('{pg_dsn}', 'no_such_table')")
    with pytest.raises(PlanError, match="table => 'name' or query"):
        plan(f"SELECT * FROM postgres(dsn => '{pg_dsn}')")


def test_unreachable_server_is_retried_and_reported(capsys):
    from tidal.io.postgres import Relation
    from tidal.io.retry import Backoff, ConnectionLost

    from .conftest import free_port

    relation = Relation(f"postgresql://postgres@127.0.0.1:{free_port()}/x", "t", backoff=Backoff(3, 0.01))
    with pytest.raises(ConnectionLost, match=r"postgres at 127.0.0.1:\d+/x: connect: gave up after 3 attempts"):
        relation.columns()
    err = capsys.readouterr().err
    assert "retry 1 of 2" in err and "retry 2 of 2" in err


def test_plans_and_errors_never_show_the_password(pg, pg_dsn, capsys):
    load(pg, "t", sample(5))
    dsn = pg_dsn.replace("postgres@", "postgres:s3cret@")  # trust authentication ignores it
    q = plan(f"SELECT name FROM postgres(dsn => '{dsn}', table => 't') WHERE qty > 0")
    assert "s3cret" not in q.explain()
    assert q.result().num_rows == sum(1 for r in sample(5).to_pylist() if (r["qty"] or 0) > 0)
    with pytest.raises(PlanError) as err:
        plan(f"SELECT * FROM postgres(dsn => '{dsn}', table => 'missing')")
    assert "s3cret" not in str(err.value) and "127.0.0.1" in str(err.value)


def test_a_missing_database_is_an_error_at_once_not_a_retry(postgres_server, capsys):
    dsn = postgres_server.dsn.rsplit("/", 1)[0] + "/no_such_db"
    with pytest.raises(PlanError, match=r'postgres at 127.0.0.1:\d+/no_such_db: .*"no_such_db" does not exist'):
        plan(f"SELECT * FROM postgres('{dsn}', 't')")
    assert "retry" not in capsys.readouterr().err
