"""``tidal run job.sql``: Flink-style CREATE TABLE / CREATE VIEW / INSERT INTO onto tidal's sources,
watermarks and sinks. Answers are checked against DuckDB over the rows a plain Python watermark keeps,
and against ``tidal query`` of the same SELECT written with table functions."""

from __future__ import annotations

import csv
import datetime as dt
import json
import random
from collections import Counter
from pathlib import Path

import duckdb
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tidal.cli.main import main as cli
from tidal.core.errors import PlanError
from tidal.sql import plan
from tidal.sql.ddl import Catalog, split

BASE = dt.datetime(2024, 6, 1, 18, 0, 0)
TABLES = """
-- clicks arrive out of order; a few of them much later than 5 s
CREATE TABLE clicks (
  ad BIGINT, ts TIMESTAMP(3), cents INT,   -- a comment; with a semicolon in it
  WATERMARK FOR ts AS ts - INTERVAL '5' SECOND
) WITH ('connector' = 'filesystem', 'path' = 'clicks.csv', 'format' = 'csv');
CREATE TABLE spend (ad BIGINT, minute_end TIMESTAMP, n BIGINT, total BIGINT)
  WITH ('connector' = '{connector}', {sink_options});
CREATE VIEW per_minute AS
  SELECT ad, window_end, COUNT(*) AS n, SUM(cents) AS total
  FROM tumble(source => TABLE(clicks), window_length => INTERVAL '1' MINUTE)
  GROUP BY ad, window_end;
"""
SAME_QUERY = (
    "SELECT ad, window_end, COUNT(*) AS n, SUM(cents) AS total FROM tumble(source => TABLE(max_diff_watermark("
    "source => TABLE('clicks.csv'), time_field => DESCRIPTOR(ts), offset => INTERVAL '5' SECOND)), "
    "window_length => INTERVAL '1' MINUTE) GROUP BY ad, window_end"
)


def _clicks(path, n: int = 600, seed: int = 4) -> list[tuple]:
    """Clicks in arrival order: times jitter up to 4 s back, one in 40 comes 20-60 s late."""
    rng = random.Random(seed)
    rows, now = [], 100.0
    for i in range(n):
        now += rng.random() * 1.5
        delay = rng.uniform(20, 60) if i % 40 == 39 else rng.uniform(0, 4)
        ts = BASE + dt.timedelta(milliseconds=int((now - delay) * 1000))
        rows.append((rng.randint(1, 5), ts, rng.randint(1, 99)))
    path.write_text("ad,ts,cents\n" + "".join(f"{a},{t.isoformat(sep=' ')},{c}\n" for a, t, c in rows))
    return rows


def _kept(rows: list[tuple], delay_s: int = 5) -> list[tuple]:
    """The rows a max-delay watermark keeps: not earlier than (the newest time before them - delay)."""
    kept, newest = [], None
    for row in rows:
        if newest is None or row[1] >= newest - dt.timedelta(seconds=delay_s):
            kept.append(row)
        newest = row[1] if newest is None else max(newest, row[1])
    return kept


def _duckdb_answer(rows: list[tuple]) -> set[tuple]:
    con = duckdb.connect()
    con.execute("CREATE TABLE c (ad BIGINT, ts TIMESTAMP, cents INT)")
    con.executemany("INSERT INTO c VALUES (?, ?, ?)", rows)
    got = con.sql(
        "SELECT ad, time_bucket(INTERVAL 1 MINUTE, ts) + INTERVAL 1 MINUTE, COUNT(*), SUM(cents) FROM c GROUP BY ALL"
    ).fetchall()
    return {(a, str(m), n, s) for a, m, n, s in got}


def _read_csv(path) -> tuple[list[str], set[tuple]]:
    rel = duckdb.sql(f"SELECT * FROM read_csv('{path}', all_varchar = true)")
    return rel.columns, {(int(a), m, int(n), int(s)) for a, m, n, s in rel.fetchall()}


def test_run_a_script_of_ddl_and_insert_into_a_file(in_dir, capsys):
    rows = _clicks(in_dir / "clicks.csv")
    kept = _kept(rows)
    assert len(rows) - len(kept) >= 10  # the late rows are there, and dropped
    script = TABLES.format(connector="filesystem", sink_options="'path' = 'spend.csv'")
    (in_dir / "job.sql").write_text(script + "INSERT INTO spend SELECT * FROM per_minute;\n")
    assert cli(["run", "job.sql"]) == 0
    err = capsys.readouterr().err
    assert f"late rows: {len(rows) - len(kept)}" in err
    columns, got = _read_csv(in_dir / "spend.csv")
    assert columns == ["ad", "minute_end", "n", "total"]  # the sink table's names, by position
    assert got == _duckdb_answer(kept)
    # the same SELECT written with tidal's table functions gives the same rows
    assert cli(["query", SAME_QUERY, "--format", "batch-csv", "--output", "direct.csv"]) == 0
    assert _read_csv(in_dir / "direct.csv")[1] == got


@pytest.mark.parametrize("fmt", ["json", "parquet", "changelog-json"])
def test_insert_into_json_parquet_and_changelog_files(in_dir, fmt):
    kept = _kept(_clicks(in_dir / "clicks.csv", n=300, seed=9))
    changelog = fmt.startswith("changelog")
    options = f"'path' = 'spend.out', 'format' = '{fmt.split('-')[-1]}'" + (
        ", 'changelog' = 'true'" if changelog else ""
    )
    script = TABLES.format(connector="filesystem", sink_options=options)
    (in_dir / "job.sql").write_text(script + "INSERT INTO spend SELECT ad, window_end, n, total FROM per_minute;")
    assert cli(["run", "job.sql"]) == 0
    if fmt == "parquet":
        records = pq.read_table(in_dir / "spend.out").to_pylist()
    else:
        records = [json.loads(line) for line in (in_dir / "spend.out").read_text().splitlines()]
    if changelog:  # every change; with a watermark each window is written once, as an insert
        assert not any("sys.undo" in r for r in records)
    got = {(r["ad"], str(r["minute_end"]), r["n"], r["total"]) for r in records}
    assert got == _duckdb_answer(kept)


def test_queries_views_show_tables_and_explain_print_to_stdout(in_dir, capsys):
    rows = _clicks(in_dir / "clicks.csv", n=120)
    script = TABLES.format(connector="print", sink_options="'format' = 'csv'")
    script += "SHOW TABLES;\nSELECT COUNT(*) AS n FROM clicks;\nEXPLAIN SELECT * FROM per_minute;\n"
    script += "INSERT INTO spend SELECT * FROM per_minute;\n"
    (in_dir / "job.sql").write_text(script)
    assert cli(["run", "job.sql", "--format", "batch-csv"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("clicks\nper_minute\nspend\n")
    assert f'"n"\n{len(_kept(rows))}\n' in out
    assert "Tumble" in out and "max_diff" in out.lower()  # the plan
    assert '"ad","minute_end","n","total"' in out  # the print sink: CSV on standard output


def test_a_table_named_twice_in_a_query(in_dir):
    kept = _kept(_clicks(in_dir / "clicks.csv", n=80))
    catalog = Catalog()
    for stmt in split(TABLES.format(connector="print", sink_options="'format' = 'csv'")):
        catalog.execute(stmt)
    q = plan("SELECT COUNT(*) AS n FROM clicks a JOIN clicks b ON a.ad = b.ad", catalog=catalog.queries())
    per_ad = Counter(ad for ad, _, _ in kept)
    assert q.result().to_pylist() == [{"n": sum(n * n for n in per_ad.values())}]


def test_unknown_connector_options_are_refused_naming_the_valid_ones(in_dir, capsys):
    (in_dir / "clicks.csv").write_text("ad,ts,cents\n1,2024-06-01 18:00:00,3\n")
    (in_dir / "job.sql").write_text(
        "CREATE TABLE t (ad BIGINT) WITH ('connector' = 'filesystem', 'path' = 'clicks.csv', 'fromat' = 'csv');\n"
        "SELECT * FROM t;"
    )
    assert cli(["run", "job.sql"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("tidal: job.sql, line 2: table t: connector 'filesystem' has no option 'fromat'")
    assert "'path', 'format'" in err
    (in_dir / "job.sql").write_text("CREATE TABLE t (a INT) WITH ('connector' = 'hdfs');")
    assert cli(["run", "job.sql"]) == 2
    assert (
        "unknown connector 'hdfs' (not supported); connectors: filesystem, kafka, postgres" in capsys.readouterr().err
    )


@pytest.mark.parametrize(
    ("ddl", "message"),
    [
        ("CREATE TABLE t (ts TIMESTAMP, WATERMARK FOR ts AS ts - 5) WITH ('connector' = 'print')", "is not supported"),
        ("CREATE TABLE t (ts TIMESTAMP, WATERMARK FOR x AS x) WITH ('connector' = 'print')", "no such column"),
        ("CREATE TABLE t (a INT) WITH ('path' = 'x')", "connector. = \\.\\.\\.\\) is missing"),
        ("CREATE TABLE t AS SELECT 1", "not supported"),
        ("CREATE TABLE t (ts TIMESTAMP(9)) WITH ('connector' = 'print')", "not supported"),
        ("CREATE INDEX i ON t (a)", "CREATE INDEX is not supported"),
        ("INSERT OVERWRITE t SELECT 1", "not supported"),
        ("UPDATE t SET a = 1", "UPDATE statements are not supported"),
    ],
)
def test_what_is_not_supported_says_so(ddl, message):
    with pytest.raises(PlanError, match=message):
        Catalog().execute(split(ddl)[0])


def test_insert_errors_name_the_statement(in_dir, capsys):
    _clicks(in_dir / "clicks.csv", n=20)
    script = TABLES.format(connector="filesystem", sink_options="'path' = 'o.csv'")
    (in_dir / "job.sql").write_text(script + "INSERT INTO spend SELECT ad FROM per_minute;")
    assert cli(["run", "job.sql"]) == 2
    err = capsys.readouterr().err
    assert "job.sql, line 13: the query gives 1 columns (ad) and the sink table has 4" in err
    assert not (in_dir / "o.csv").exists()
    (in_dir / "job.sql").write_text(script + "INSERT INTO nowhere SELECT 1;")
    assert cli(["run", "job.sql"]) == 2
    assert "no table nowhere" in capsys.readouterr().err


def test_statements_split_at_semicolons_outside_strings_and_comments():
    stmts = split("SELECT ';' AS a; -- x; y\nSELECT 2 /* ; */;\n\nCREATE VIEW v AS SELECT 3;")
    assert [s.kind for s in stmts] == ["query", "query", "create view"]
    assert [s.line for s in stmts] == [1, 2, 4]
    assert stmts[0].text == "SELECT ';' AS a" and stmts[2].body == "SELECT 3"


def test_views_are_planned_in_their_own_scope(in_dir):
    (in_dir / "a.csv").write_text("x\n1\n2\n")
    catalog = Catalog()
    for stmt in split("CREATE VIEW v AS SELECT x * 10 AS y FROM 'a.csv';"):
        catalog.execute(stmt)
    # the query's own CTE named like a file does not change what the view reads
    q = plan("WITH a AS (SELECT 5 AS x) SELECT SUM(y) AS s FROM v", catalog=catalog.queries())
    assert q.result().to_pylist() == [{"s": 30}]
    with pytest.raises(PlanError, match="exists already"):
        catalog.execute(split("CREATE VIEW v AS SELECT 1;")[0])
    catalog.execute(split("CREATE OR REPLACE VIEW v AS SELECT 7 AS y;")[0])
    assert plan("SELECT y FROM v", catalog=catalog.queries()).result().to_pylist() == [{"y": 7}]


def test_the_example_script_runs_and_agrees_with_duckdb(monkeypatch, capsys):
    examples = Path(__file__).resolve().parents[2] / "examples"
    monkeypatch.chdir(examples)
    assert cli(["run", "goals.sql"]) == 0
    lines = [line.replace("┃", "│") for line in capsys.readouterr().out.splitlines()]
    cells = [[c.strip() for c in line.split("│")[1:-1]] for line in lines if line.startswith("│")]
    assert cells[0] == ["team", "minute_end", "goals"]
    with open("goals.csv", newline="") as fh:  # in arrival (file) order
        rows = [(r["team"], dt.datetime.fromisoformat(r["time"])) for r in csv.DictReader(fh)]
    kept = _kept([(team, ts, 0) for team, ts in rows], delay_s=10)
    con = duckdb.connect()
    con.execute("CREATE TABLE g (team VARCHAR, ts TIMESTAMP)")
    con.executemany("INSERT INTO g VALUES (?, ?)", [(team, ts) for team, ts, _ in kept])
    expected = con.sql(
        "SELECT team, CAST(time_bucket(INTERVAL 1 MINUTE, ts) + INTERVAL 1 MINUTE AS VARCHAR),"
        " CAST(COUNT(*) AS VARCHAR) FROM g GROUP BY ALL ORDER BY 2, 1"
    ).fetchall()
    assert [tuple(r) for r in cells[1:]] == expected  # ORDER BY window_end, team


def test_state_makes_the_one_insert_durable(in_dir, capsys):
    kept = _kept(_clicks(in_dir / "clicks.csv", n=200, seed=12))
    script = TABLES.format(connector="filesystem", sink_options="'path' = 'spend.csv'")
    (in_dir / "job.sql").write_text(script + "INSERT INTO spend SELECT * FROM per_minute;")
    assert cli(["run", "job.sql", "--state", "state.sqlite"]) == 0
    assert _read_csv(in_dir / "spend.csv")[1] == _duckdb_answer(kept)
    assert cli(["run", "job.sql", "--state", "state.sqlite"]) == 0  # finished: the same answer stays
    assert _read_csv(in_dir / "spend.csv")[1] == _duckdb_answer(kept)
    (in_dir / "two.sql").write_text(script + "INSERT INTO spend SELECT * FROM per_minute;" * 2)
    assert cli(["run", "two.sql", "--state", "other.sqlite"]) == 2
    assert "a script with --state has one INSERT INTO" in capsys.readouterr().err


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.text(alphabet="ab; '\n-*/", max_size=8),  # string contents, with ; and quote characters
            st.sampled_from(["", " -- c;\n", " /* ; */ ", "\n"]),
        ),
        min_size=1,
        max_size=6,
    )
)
def test_split_finds_every_statement_whatever_its_strings_and_comments_hold(parts):
    script = "".join(
        f"SELECT '{text.replace(chr(39), chr(39) * 2)}' AS s{i};{gap}" for i, (text, gap) in enumerate(parts)
    )
    stmts = split(script)
    assert [s.kind for s in stmts] == ["query"] * len(parts)
    for i, (stmt, (text, _)) in enumerate(zip(stmts, parts, strict=True)):
        assert plan(stmt.body).result().to_pylist() == [{f"s{i}": text}]
