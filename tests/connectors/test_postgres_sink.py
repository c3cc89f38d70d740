"""``--output postgresql://...?table=t``: the final state kept in a table by upserts and deletes;
equal to DuckDB's (or the uninterrupted run's) answer, also when the writer is killed with SIGKILL
at random points and restarted from its checkpoint."""

from __future__ import annotations

import datetime as dt
import os
import random
import subprocess
import sys

import duckdb
import pyarrow as pa
import pyarrow.csv as pv
import pytest

from tidal.cli.main import main as cli
from tidal.sql import plan

CHILD = os.path.join(os.path.dirname(__file__), "pg_sink_child.py")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

GROUPED = "SELECT k, count(*) AS n, sum(v) AS s FROM 'e.csv' GROUP BY k"
COUNTING = "SELECT k, count(*) AS n, max(v) AS top FROM 'e.csv' GROUP BY k TRIGGER COUNTING 3"
WINDOWED = (
    "SELECT window_end, k, count(*) AS n, sum(v) AS s FROM tumble(source => TABLE(max_diff_watermark("
    "source => TABLE('e.csv'), time_field => DESCRIPTOR(t), offset => INTERVAL 5 SECONDS)), "
    "time_field => DESCRIPTOR(t), window_length => INTERVAL 1 MINUTE) GROUP BY window_end, k TRIGGER ON WATERMARK"
)


@pytest.fixture
def events(tmp_path, monkeypatch) -> pa.Table:
    monkeypatch.chdir(tmp_path)
    rng = random.Random(3)
    n = int(os.environ.get("TIDAL_SINK_ROWS", "240"))  # more rows: more commits to kill in (a longer soak)
    table = pa.table(
        {
            "t": [dt.datetime(2024, 1, 1) + dt.timedelta(seconds=2 * i) for i in range(n)],
            "k": [None if rng.random() < 0.1 else rng.randint(0, 6) for _ in range(n)],
            "v": [rng.randint(-50, 50) for _ in range(n)],
        }
    )
    pv.write_csv(table, "e.csv")
    return table


def table_rows(pg, name: str) -> list:
    return sorted(pg.execute(f"SELECT * FROM {name}").fetchall(), key=repr)


def answer(sql: str) -> list:
    return sorted((tuple(r.values()) for r in plan(sql).result().to_pylist()), key=repr)


def test_grouped_result_equals_duckdb(pg, pg_dsn, events, capsys):
    assert cli(["query", GROUPED, "--output", f"{pg_dsn}?table=counts"]) == 0
    con = duckdb.connect()
    con.register("e", events)
    expected = sorted(con.execute("SELECT k, count(*), sum(v) FROM e GROUP BY k").fetchall(), key=repr)
    assert table_rows(pg, "counts") == expected
    cols = pg.execute("SELECT column_name, data_type FROM information_schema.columns WHERE table_name = 'counts'")
    assert sorted(cols.fetchall()) == [("k", "bigint"), ("n", "bigint"), ("s", "bigint")]


@pytest.mark.parametrize("sql", [COUNTING, WINDOWED])
def test_changing_results_end_as_the_batch_answer(pg, pg_dsn, events, capsys, sql):
    assert cli(["query", sql, "--output", f"{pg_dsn}?table=out"]) == 0
    assert table_rows(pg, "out") == answer(sql)


def test_a_fresh_run_replaces_the_table_and_a_given_key_must_be_unique(pg, pg_dsn, events, capsys):
    url = f"{pg_dsn}?table=out"
    assert cli(["query", GROUPED, "--output", url]) == 0
    assert cli(["query", GROUPED.replace("FROM 'e.csv'", "FROM 'e.csv' WHERE v > 0"), "--output", url]) == 0
    assert table_rows(pg, "out") == answer(GROUPED.replace("FROM 'e.csv'", "FROM 'e.csv' WHERE v > 0"))
    capsys.readouterr()
    assert cli(["query", "SELECT k, v FROM 'e.csv'", "--output", f"{pg_dsn}?table=rows"]) == 2
    assert "needs a key: GROUP BY in the query, or ?key=" in capsys.readouterr().err
    assert cli(["query", "SELECT k, v FROM 'e.csv'", "--output", f"{pg_dsn}?table=rows&key=k"]) == 2
    assert "output key (k) is not unique in the result" in capsys.readouterr().err
    assert cli(["query", "SELECT t, k, v FROM 'e.csv'", "--output", f"{pg_dsn}?table=rows&key=t"]) == 2
    assert "exists with columns (k, v) but this output has (t, k, v)" in capsys.readouterr().err
    assert cli(["query", "SELECT t, k, v FROM 'e.csv'", "--output", f"{pg_dsn}?table=by_t&key=t"]) == 0
    assert len(table_rows(pg, "by_t")) == events.num_rows


@pytest.mark.parametrize("sql", [COUNTING, WINDOWED], ids=["counting", "windowed"])
def test_killed_writer_restarts_exactly_once(pg, pg_dsn, events, tmp_path, sql):
    url, state = f"{pg_dsn}?table=out", str(tmp_path / "state.sqlite")
    env = {**os.environ, "PYTHONPATH": ROOT}
    rng = random.Random(sql)
    kills = 0
    for _attempt in range(200):
        how = rng.choice(["after-commit", "in-commit", "after-checkpoint"])
        cmd = [sys.executable, CHILD, sql, url, state, "--kill-at", str(rng.randint(1, 2)), "--how", how]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)
        if done.returncode == 0:
            break
        assert done.returncode == -9, done.stderr
        kills += 1
    else:
        pytest.fail("the query never finished")
    assert kills >= 4
    assert table_rows(pg, "out") == answer(sql)
    assert pg.execute("SELECT count(*) FROM tidal_sink_progress").fetchone() == (1,)
