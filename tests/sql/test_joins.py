"""SQL joins beyond the golden suite: changelogs (the retraction view), joins of event-time
streams, and the errors a join can raise. Answers are checked against DuckDB."""

from __future__ import annotations

import json

import pytest

from tidal.cli.main import main as cli
from tidal.core.errors import PlanError
from tidal.sql import plan

from .test_golden import _rows, run_duckdb


def _net(lines: list[str]) -> list[str]:
    """The rows a changelog leaves behind: inserts minus retractions."""
    net: dict = {}
    for line in lines:
        rec = json.loads(line)
        undo = rec.pop("sys.undo", False)
        key = json.dumps(rec, sort_keys=True)
        net[key] = net.get(key, 0) + (-1 if undo else 1)
    assert all(n >= 0 for n in net.values()), "a retraction without its insert"
    return sorted(k for k, n in net.items() for _ in range(n))


def _assert_changelog_nets_to_batch(sql: str, files_dir) -> list[str]:
    """Run ``sql`` as stream-json and batch-json: the changelog's net effect is the batch answer."""
    for fmt in ("stream-json", "batch-json"):
        assert cli(["query", sql, "--format", fmt, "--output", fmt]) == 0
    stream_lines = (files_dir / "stream-json").read_text().splitlines()
    batch = sorted(
        json.dumps(json.loads(x), sort_keys=True) for x in (files_dir / "batch-json").read_text().splitlines()
    )
    assert _net(stream_lines) == batch
    return stream_lines


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT c.city, count(*) AS n FROM 'orders.csv' o LEFT JOIN 'customers.csv' c ON o.customer = c.name"
        " GROUP BY c.city TRIGGER COUNTING 1",
        "SELECT t.city, count(c.name) AS n FROM 'customers.csv' c FULL JOIN 'cities.tsv' t USING (city)"
        " GROUP BY t.city TRIGGER COUNTING 1",
    ],
)
def test_join_changelog_net_effect_is_the_batch_answer(files_dir, capsys, sql):
    stream_lines = _assert_changelog_nets_to_batch(sql, files_dir)
    assert any(json.loads(x).get("sys.undo") for x in stream_lines)  # row by row, counts are revised
    oracle = run_duckdb(sql.split(" TRIGGER")[0], files_dir)
    assert _rows(plan(sql).result()) == _rows(oracle)


def test_join_of_event_time_streams_is_the_relational_join(files_dir):
    (files_dir / "clicks.csv").write_text(
        "user,at\nu1,2024-01-01 10:00:05\nu2,2024-01-01 10:00:01\nu1,2024-01-01 10:00:09\n"
    )
    (files_dir / "views.csv").write_text(
        "user,at\nu1,2024-01-01 10:00:02\nu3,2024-01-01 10:00:03\nu2,2024-01-01 10:00:00\n"
    )
    sql = (
        "SELECT c.user, c.at AS clicked, v.at AS viewed FROM "
        "max_diff_watermark(source => TABLE('clicks.csv'), time_field => DESCRIPTOR(at),"
        " offset => INTERVAL 10 SECONDS) c"
        " JOIN max_diff_watermark(source => TABLE('views.csv'), time_field => DESCRIPTOR(at),"
        " offset => INTERVAL 10 SECONDS) v ON c.user = v.user"
    )
    oracle = run_duckdb(
        "SELECT c.user, c.at AS clicked, v.at AS viewed FROM 'clicks.csv' c JOIN 'views.csv' v ON c.user = v.user",
        files_dir,
    )
    got = plan(sql)
    assert _rows(got.result()) == _rows(oracle)
    assert got.stats.late == 0


def test_explain_shows_the_join_and_pushed_filters(files_dir):
    text = plan("SELECT o.id FROM 'orders.csv' o, 'customers.csv' c WHERE o.customer = c.name AND o.qty > 2").explain()
    assert "LookupJoin (left built once) on name = customer" in text and 'pushed filter "qty" > 2' in text
    assert "CrossJoin" in text.split("Optimized logical plan:")[0]  # the comma join became a keyed join


def test_join_errors_name_the_problem(files_dir):
    with pytest.raises(PlanError, match="ambiguous"):
        plan("SELECT id FROM 'orders.csv' a JOIN 'orders.csv' b ON a.id = b.id")
    with pytest.raises(PlanError, match="right side has no column"):
        plan("SELECT * FROM 'orders.csv' JOIN 'customers.csv' USING (customer)")
    with pytest.raises(PlanError, match="ASOF JOIN is not supported"):
        plan("SELECT * FROM 'orders.csv' a ASOF JOIN 'orders.csv' b ON a.id = b.id AND a.ts >= b.ts")
    with pytest.raises(PlanError, match="SEMI JOIN keeps left rows and needs ON or USING"):
        plan("SELECT id FROM 'orders.csv' o SEMI JOIN 'customers.csv' c")
    with pytest.raises(PlanError, match="unknown column c.nope"):
        plan("SELECT o.id FROM 'orders.csv' o JOIN 'customers.csv' c ON o.customer = c.nope")


@pytest.mark.parametrize("batch_rows", [1, 3])
@pytest.mark.parametrize(
    "sql",
    [
        "SELECT o.id, c.city FROM 'orders.csv' o LEFT JOIN 'customers.csv' c ON o.customer = c.name",
        "SELECT a.id, b.id AS other FROM 'orders.csv' a FULL JOIN 'orders.csv' b ON a.note = b.note",
        "SELECT c.name, t.city FROM 'customers.csv' c CROSS JOIN 'cities.tsv' t",
        "SELECT o.id, c.city, t.pop FROM 'orders.csv' o JOIN 'customers.csv' c ON o.customer = c.name"
        " RIGHT JOIN 'cities.tsv' t ON c.city = t.city",
        "SELECT o.id, o.note, c.name FROM 'orders.csv' o FULL JOIN 'customers.csv' c"
        " ON o.customer = c.name AND (o.discount IS NULL OR c.vip)",
        "SELECT o.id, t.city FROM 'orders.csv' o LEFT JOIN 'cities.tsv' t ON o.qty * 100 > t.pop + 300",
        "SELECT id FROM 'orders.csv' o SEMI JOIN 'customers.csv' c ON c.city = 'Rome'",
        "SELECT id FROM 'orders.csv' o ANTI JOIN 'customers.csv' c ON c.city = 'Paris'",
    ],
)
def test_batch_size_does_not_change_a_join(files_dir, monkeypatch, sql, batch_rows):
    from tidal.sql import planner

    monkeypatch.setattr(planner, "BATCH_ROWS", batch_rows)
    assert _rows(plan(sql).result()) == _rows(run_duckdb(sql, files_dir))


def test_windowed_stream_joined_with_a_table_emits_each_window_once(files_dir, capsys):
    # a stream (event time, tumbling windows) joined with a relational table (alive from time 0)
    (files_dir / "users.csv").write_text("user,label\nu0,zero\nu1,one\n")
    sql = (
        "SELECT u.label, e.window_end, count(*) AS n FROM tumble(source => TABLE('events.json'),"
        " time_field => DESCRIPTOR(at), window_length => INTERVAL 3 MINUTES) e"
        " JOIN 'users.csv' u ON e.user = u.user GROUP BY u.label, e.window_end TRIGGER ON WATERMARK"
    )
    assert "LookupJoin (left built once) on user_1 = user" in plan(sql).explain()  # the table is indexed once
    assert cli(["query", sql, "--format", "stream-json", "--output", "out.json"]) == 0
    lines = [json.loads(x) for x in (files_dir / "out.json").read_text().splitlines()]
    assert not any(r.get("sys.undo") for r in lines)
    assert len({(r["label"], r["window_end"]) for r in lines}) == len(lines)
    oracle = run_duckdb(
        "SELECT u.label, strftime(time_bucket(INTERVAL 3 MINUTES, CAST(e.at AS TIMESTAMP)) + INTERVAL 3 MINUTES,"
        " '%Y-%m-%d %H:%M:%S') AS window_end, count(*) AS n FROM 'events.json' e JOIN 'users.csv' u"
        " ON e.user = u.user GROUP BY ALL",
        files_dir,
    )
    assert sorted((r["label"], r["window_end"], r["n"]) for r in lines) == sorted(
        tuple(r.values()) for r in oracle.to_pylist()
    )


@pytest.mark.parametrize("kind", ["LEFT", "RIGHT", "FULL", "SEMI", "ANTI"])
def test_residual_joins_with_duplicate_and_null_rows(files_dir, kind):
    # identical rows and rows with nulls: each row must find its own partners through the row identity
    (files_dir / "dup.csv").write_text("k,x,note\n1,5,\n1,5,\n2,,a\n2,,a\n,3,b\n1,1,c\n")
    (files_dir / "r.csv").write_text("k,y\n1,4\n1,4\n2,1\n,9\n3,0\n")
    cols = "*" if kind in ("SEMI", "ANTI") else "d.k, d.x, d.note, r.k AS rk, r.y"
    sql = f"SELECT {cols} FROM 'dup.csv' d {kind} JOIN 'r.csv' r ON d.k = r.k AND (d.x > r.y OR d.x IS NULL)"
    assert _rows(plan(sql).result()) == _rows(run_duckdb(sql, files_dir))


def test_residual_left_join_changelog_retracts_padded_rows(files_dir):
    # under a TRIGGER rows arrive one tick at a time: a left row padded with nulls is retracted
    # once a partner satisfying the whole ON condition arrives
    sql = (
        "SELECT c.name, c.city, count(o.id) AS n FROM 'customers.csv' c LEFT JOIN 'orders.csv' o"
        " ON o.customer = c.name AND o.qty > 2 GROUP BY c.name, c.city TRIGGER COUNTING 1"
    )
    _assert_changelog_nets_to_batch(sql, files_dir)
    assert _rows(plan(sql).result()) == _rows(run_duckdb(sql.split(" TRIGGER")[0], files_dir))
    # orders in event time: a customer is padded from time 0 until its first order with qty > 2 arrives
    timed = (
        "SELECT c.name, o.id FROM 'customers.csv' c LEFT JOIN max_diff_watermark(source => TABLE('orders.csv'),"
        " time_field => DESCRIPTOR(ts), offset => INTERVAL 0 SECONDS) o ON o.customer = c.name AND o.qty > 2"
    )
    events = plan(timed).changelog().to_pylist()
    undone = [(e["name"], e["id"]) for e in events if e["undo"]]
    assert sorted(undone) == [("alice", None), ("bob", None), ("carol", None)]  # gina never has such an order
    oracle = "SELECT c.name, o.id FROM 'customers.csv' c LEFT JOIN 'orders.csv' o ON o.customer = c.name AND o.qty > 2"
    assert _rows(plan(timed).result()) == _rows(run_duckdb(oracle, files_dir))
