"""SQL golden queries with the Spark engine: the same final answers and net changelogs as embedded.

A spread of the golden queries runs in CI (Spark jobs are slow on a small machine); set
``TIDAL_SPARK_ALL_GOLDEN=1`` to run them all.
"""

from __future__ import annotations

import csv
import io
import os
from collections import Counter

import pytest
from sql.data import write_files
from sql.test_golden import _queries, _rows

import tidal.spark
from tidal.sql import plan

QUERIES = _queries()
# global aggregates (partials per partition merged in one), a global order and a lookup join, always run
ALWAYS = ("count_star", "order_limit", "global_agg_empty", "aggs_over_only_nulls", "join_using")
if not os.environ.get("TIDAL_SPARK_ALL_GOLDEN"):
    QUERIES = [q for i, q in enumerate(QUERIES) if i % 7 == 0 or q.id in ALWAYS]


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("golden_spark")
    write_files(d)
    return d


def _net(log) -> Counter:
    """The changelog with each insert cancelled by a later retraction of the same row at the same time."""
    net: Counter = Counter()
    for row in log.to_pylist():
        undo = row.pop("undo")
        net[tuple(row.items())] += -1 if undo else 1
    return +net + Counter({k: -v for k, v in net.items() if v < 0})


@pytest.mark.parametrize("sql", QUERIES)
def test_golden_on_spark(spark, data_dir, sql, monkeypatch):
    monkeypatch.chdir(data_dir)
    embedded = plan(sql)
    expected = embedded.result()
    got = tidal.spark.run_query_on_spark(sql, spark=spark, partitions=2)
    assert got.column_names == expected.column_names
    if "ORDER BY" in sql.upper():
        assert got.to_pylist() == expected.to_pylist()
    else:
        assert _rows(got) == _rows(expected)
    log = tidal.spark.run_query_on_spark(sql, spark=spark, partitions=3, changelog=True)
    assert _net(log) == _net(plan(sql).changelog())


def test_lookup_join_broadcasts_the_table(spark, data_dir, monkeypatch):
    """The SQL lookup-join rule's table (the join's small left) is broadcast, not shuffled."""
    monkeypatch.chdir(data_dir)
    sql = next(q.values[0] for q in _queries() if q.id == "join_using")
    explained = tidal.spark.explain(plan(sql).stream(), partitions=2, spark=spark)
    assert "broadcast left of Join" in explained and "co-partition" not in explained


def test_cli_engine_spark_gives_the_embedded_answer(spark, tmp_path, monkeypatch, capsys):
    from tidal.cli.main import main

    (tmp_path / "goals.csv").write_text("team,minute\nred,1\nblue,2\nred,3\nred,4\nblue,9\n")
    monkeypatch.chdir(tmp_path)
    sql = "SELECT team, COUNT(*) AS goals FROM 'goals.csv' GROUP BY team ORDER BY team"
    assert main(["query", sql, "--format", "batch-csv"]) == 0
    embedded = capsys.readouterr().out
    assert main(["query", sql, "--format", "batch-csv", "--engine", "spark"]) == 0
    on_spark = capsys.readouterr().out
    assert on_spark == embedded == '"team","goals"\n"blue",2\n"red",3\n'


def test_cli_live_csv_on_spark_writes_csv(spark, tmp_path, monkeypatch, capsys):
    from tidal.cli.main import main

    (tmp_path / "notes.csv").write_text('k,note\n1,"a, b"\n2,"say ""hi"""\n')
    monkeypatch.chdir(tmp_path)
    assert main(["query", "SELECT note, k FROM 'notes.csv'", "--format", "live-csv", "--engine", "spark"]) == 0
    rows = list(csv.reader(io.StringIO(capsys.readouterr().out)))
    assert rows[0] == ["sys.undo", "note", "k"]
    assert sorted(rows[1:]) == [["false", "a, b", "1"], ["false", 'say "hi"', "2"]]


EVENT_TIME_QUERIES = [
    # a watermark generator puts an ImpatienceSort in the plan; a session window a stateful suffix
    "SELECT customer, window_end, COUNT(*) AS n FROM tumble(source => TABLE(max_diff_watermark("
    "source => TABLE('orders.csv'), time_field => DESCRIPTOR(ts), offset => INTERVAL 1 HOUR)), "
    "time_field => DESCRIPTOR(ts), window_length => INTERVAL 1 DAY) t GROUP BY customer, window_end",
    "SELECT customer, window_start, window_end, count(*) AS n FROM session(source => TABLE('orders.csv'), "
    "time_field => DESCRIPTOR(ts), gap => INTERVAL 3 HOURS, key => DESCRIPTOR(customer)) s "
    "GROUP BY customer, window_start, window_end",
]


@pytest.mark.parametrize("sql", EVENT_TIME_QUERIES)
def test_event_time_sql_on_spark(spark, data_dir, sql, monkeypatch):
    monkeypatch.chdir(data_dir)
    expected = plan(sql).result()
    assert expected.num_rows > 0
    got = tidal.spark.run_query_on_spark(sql, spark=spark, partitions=2)
    assert _rows(got) == _rows(expected)


def test_cli_spark_logs_never_reach_stdout(tmp_path):
    """With --engine spark, standard output is exactly the CSV: log4j's banner and warnings and the stage
    progress bars go to standard error, even under a log4j configuration that logs to standard output."""
    import subprocess
    import sys

    (tmp_path / "goals.csv").write_text("team,minute\nred,1\nblue,2\nred,3\nred,4\nblue,9\n")
    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "log4j2.properties").write_text(
        "rootLogger.level = info\nrootLogger.appenderRef.stdout.ref = console\n"
        "appender.console.type = Console\nappender.console.name = console\nappender.console.target = SYSTEM_OUT\n"
        "appender.console.layout.type = PatternLayout\nappender.console.layout.pattern = LOG %p %c: %m%n\n"
    )
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = {**os.environ, "SPARK_CONF_DIR": str(conf), "PYTHONPATH": root}
    env.pop("SPARK_MASTER", None)
    sql = "SELECT team, COUNT(*) AS goals FROM 'goals.csv' GROUP BY team ORDER BY team"
    done = subprocess.run(
        [sys.executable, "-m", "tidal.cli.main", "query", sql, "--format", "batch-csv", "--engine", "spark"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert list(csv.reader(io.StringIO(done.stdout))) == [["team", "goals"], ["blue", "2"], ["red", "3"]]
    assert "LOG WARN" in done.stderr  # the configuration took effect: its lines went to stderr


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT COUNT(*) AS c FROM 't.csv' WHERE a > 10 UNION ALL SELECT 7",
        "SELECT c + 1 AS c FROM (SELECT COUNT(*) AS c, MAX(b) AS m FROM 't.csv' WHERE a > 10)",
    ],
)
def test_a_global_aggregate_over_no_rows_keeps_its_row_inside_a_query(spark, tmp_path, monkeypatch, sql):
    """Spark's adaptive execution drops the work over an empty shuffle: the row over no rows must still come."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "t.csv").write_text("a,b\n1,2\n3,4\n")
    expected = plan(sql).result()
    assert expected.num_rows >= 1
    adaptive = spark.conf.get("spark.sql.adaptive.enabled")
    spark.conf.set("spark.sql.adaptive.enabled", "true")  # the tests' session has it off; Spark's default is on
    try:
        got = tidal.spark.run_query_on_spark(sql, spark=spark, partitions=2)
    finally:
        spark.conf.set("spark.sql.adaptive.enabled", adaptive)
    assert _rows(got) == _rows(expected)
