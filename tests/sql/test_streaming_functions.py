"""Streaming table functions' arguments (unknown, repeated, missing ones are refused, naming the
valid ones), ``tumble``/``hop`` defaulting ``time_field`` to the source's declared event time, and
clear "not supported" errors for SQL constructs tidal does not evaluate."""

from __future__ import annotations

import datetime as dt

import pytest

from tidal.core.errors import PlanError
from tidal.sql import plan

SRC = "source => TABLE('e.csv'), time_field => DESCRIPTOR(time)"
WM = f"max_diff_watermark({SRC}, offset => INTERVAL 5 SECONDS)"
SECS = [0, 10, 4, 20, 12, 30, 29, 61]


@pytest.fixture
def events(in_dir):
    base = dt.datetime(2024, 1, 1)
    lines = ["time,v"] + [f"{(base + dt.timedelta(seconds=s)).isoformat(sep=' ')},{s}" for s in SECS]
    (in_dir / "e.csv").write_text("\n".join(lines) + "\n")
    return in_dir


def _error(sql: str) -> str:
    sql = sql.replace("SRC", SRC).replace(" S)", " SECONDS)").replace(" S,", " SECONDS,")
    with pytest.raises(PlanError) as err:
        plan(sql).result()
    return str(err.value)


@pytest.mark.parametrize(
    ("call", "bad"),
    [
        (
            "max_diff_watermark(SRC, max_diff => INTERVAL 5 S)",
            "max_diff",
        ),
        (
            "percentile_watermark(SRC, events => 5, percentile => 20, freq => 5)",
            "freq",
        ),
        (
            "tumble(SRC, window_length => INTERVAL 10 S, size => INTERVAL 1 S)",
            "size",
        ),
        (
            "hop(SRC, window_length => INTERVAL 10 S, hop => INTERVAL 5 S, step => INTERVAL 1 S)",
            "step",
        ),
        (
            "session(SRC, gap => INTERVAL 10 S, keys => DESCRIPTOR(v))",
            "keys",
        ),
        ("read_csv('e.csv', bogus => 1)", "bogus"),
        ("read_csv_auto('e.csv', bogus => 1)", "bogus"),
        ("read_json('e.csv', sep => ',')", "sep"),
        ("read_json_auto('e.csv', sep => ',')", "sep"),
        ("read_parquet('e.csv', sep => ',')", "sep"),
    ],
)
def test_unknown_arguments_are_refused_listing_the_valid_ones(events, call, bad):
    fn = call.split("(")[0]
    message = _error(f"SELECT * FROM {call}")
    assert f"{fn}(...) has no argument {bad}" in message
    assert "its arguments are" in message and ("path" in message or "source, time_field" in message)


@pytest.mark.parametrize(
    "call",
    [
        "max_diff_watermark(SRC, offset => INTERVAL 1 SECOND, offset => INTERVAL 5 S)",
        "percentile_watermark(TABLE('e.csv'), DESCRIPTOR(time), 5, 20, 5, events => 6)",
        "tumble(TABLE('e.csv'), DESCRIPTOR(time), INTERVAL 10 S, window_length => INTERVAL 5 S)",
        "hop(SRC, window_length => INTERVAL 10 S, hop => INTERVAL 5 S, hop => INTERVAL 2 S)",
        "session(SRC, gap => INTERVAL 10 S, gap => INTERVAL 5 S)",
        "read_csv('e.csv', path => 'e.csv')",
        "read_parquet('e.csv', path => 'e.csv')",
    ],
)
def test_repeated_arguments_are_refused(events, call):
    assert "is given twice" in _error(f"SELECT * FROM {call}")


@pytest.mark.parametrize(
    ("call", "same"),
    [
        (
            "session(SRC, gap => INTERVAL 10 S, timeout => INTERVAL 5 S)",
            "gap and timeout",
        ),
        (
            "hop(SRC, window_length => INTERVAL 10 S, hop => INTERVAL 5 S, slide => INTERVAL 2 S)",
            "hop and slide",
        ),
    ],
)
def test_two_names_of_one_argument_are_refused(events, call, same):
    assert f"{same} name the same argument" in _error(f"SELECT * FROM {call}")


@pytest.mark.parametrize(
    ("call", "needs"),
    [
        ("max_diff_watermark(time_field => DESCRIPTOR(time))", "needs source"),
        ("max_diff_watermark(source => TABLE('e.csv'), offset => INTERVAL 5 S)", "needs time_field"),
        (
            "percentile_watermark(SRC, events => 5, percentile => 20)",
            "needs frequency",
        ),
        ("tumble(SRC)", "needs window_length"),
        (
            "hop(SRC, window_length => INTERVAL 10 S)",
            "needs hop",
        ),
        ("session(SRC)", "needs gap"),
        ("read_csv(sep => ',')", "needs path"),
        ("tumble(window_length => INTERVAL 10 S)", "needs source"),
    ],
)
def test_missing_required_arguments_are_named(events, call, needs):
    assert needs in _error(f"SELECT * FROM {call}")


def test_an_unknown_table_function_lists_the_known_ones(events):
    message = _error("SELECT * FROM generate_windows(source => TABLE('e.csv'))")
    assert "unknown table function generate_windows" in message and "tumble" in message


def test_the_offset_of_max_diff_watermark_is_used(events):
    rows = plan(f"SELECT v FROM {WM} e").result().to_pylist()
    assert sorted(r["v"] for r in rows) == [0, 10, 20, 29, 30, 61]  # 4 and 12 are late


@pytest.mark.parametrize("fn", ["tumble", "hop", "session"])
def test_windows_default_to_the_sources_declared_event_time(events, fn):
    extra = {"tumble": "", "hop": ", hop => INTERVAL 10 SECONDS", "session": ""}[fn]
    length = "gap" if fn == "session" else "window_length"

    def run(time_field: str):
        sql = (
            f"SELECT window_start, window_end, count(*) AS n, sum(v) AS s FROM {fn}(source => TABLE({WM}),"
            f"{time_field} {length} => INTERVAL 20 SECONDS{extra}) w GROUP BY window_start, window_end"
        )
        return sorted(tuple(r.values()) for r in plan(sql).result().to_pylist())

    got = run("")
    assert got == run(" time_field => DESCRIPTOR(time),") and got


def test_default_time_field_follows_a_cte_and_a_rename(events):
    sql = (
        f"WITH src AS (SELECT time AS t, v FROM {WM} e WHERE v >= 0) "
        "SELECT window_end, count(*) AS n FROM tumble(source => TABLE(src), window_length => INTERVAL 20 SECONDS) w "
        "GROUP BY window_end ORDER BY window_end"
    )
    assert [r["n"] for r in plan(sql).result().to_pylist()] == [2, 3, 1]  # 0,10 | 20,29,30 | 61


@pytest.mark.parametrize("fn", ["tumble", "hop"])
def test_a_window_without_time_field_nor_declared_event_time_says_to_give_it(events, fn):
    extra = ", hop => INTERVAL 5 S" if fn == "hop" else ""
    message = _error(f"SELECT * FROM {fn}(source => TABLE('e.csv'), window_length => INTERVAL 10 S{extra})")
    assert f"{fn}(...) needs time_field => DESCRIPTOR(column)" in message and "declares no event time" in message


@pytest.mark.parametrize(
    ("sql", "named"),
    [
        ("SELECT customer, sum(qty) FROM 'orders.csv' GROUP BY ROLLUP (customer)", "GROUP BY ROLLUP is not supported"),
        ("SELECT customer, sum(qty) FROM 'orders.csv' GROUP BY CUBE (customer)", "GROUP BY CUBE is not supported"),
        (
            "SELECT customer, sum(qty) FROM 'orders.csv' GROUP BY GROUPING SETS ((customer), ())",
            "GROUP BY GROUPING SETS is not supported",
        ),
        (
            "SELECT id FROM 'orders.csv' o WHERE EXISTS (SELECT 1 FROM 'orders.csv' x "
            "WHERE EXISTS (SELECT 1 FROM 'orders.csv' y WHERE y.id = o.id))",
            "a query two or more levels out",
        ),
        (
            "SELECT id FROM 'orders.csv' o "
            "WHERE EXISTS (SELECT id FROM 'orders.csv' x WHERE x.id = o.id UNION SELECT 1)",
            "this correlated subquery (EXISTS) is not supported",
        ),
        (
            "SELECT id FROM 'orders.csv' WHERE (id, qty) IN (SELECT id, qty FROM 'orders.csv')",
            "a row value IN (subquery) is not supported",
        ),
        (
            "SELECT (SELECT COUNT(*) FROM "
            "max_diff_watermark(source => TABLE('orders.csv'), time_field => DESCRIPTOR(ts)))",
            "a scalar subquery over an event-time stream is not supported",
        ),
        (
            "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 3) SELECT * FROM r",
            "WITH RECURSIVE is not supported",
        ),
        (
            "SELECT customer FROM 'orders.csv' WHERE row_number() OVER (PARTITION BY customer ORDER BY qty) = 1",
            "window functions (... OVER (...)) are supported in the SELECT list only",
        ),
        (
            "SELECT customer FROM 'orders.csv' QUALIFY row_number() OVER (PARTITION BY customer ORDER BY qty) = 1",
            "QUALIFY is not supported",
        ),
        ("SELECT * FROM 'orders.csv' TABLESAMPLE 10%", "TABLESAMPLE / USING SAMPLE is not supported"),
    ],
)
def test_unsupported_constructs_are_named(files_dir, sql, named):
    assert named in _error(sql)


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT * FROM 'orders.csv' o WHERE qty > (SELECT avg(qty) FROM 'orders.csv' x WHERE x.id < o.id)",
        "SELECT customer FROM 'orders.csv' g GROUP BY customer "
        "HAVING customer IN (SELECT name FROM 'customers.csv' WHERE name = g.customer)",
        "SELECT (SELECT x.qty FROM 'orders.csv' x WHERE x.id = o.id) AS q FROM 'orders.csv' o",
    ],
)
def test_correlated_shapes_once_refused_now_answer_as_duckdb(files_dir, sql):
    import duckdb

    from tidal.sql import plan

    got = sorted(map(repr, (tuple(r.values()) for r in plan(sql).result().to_pylist())))
    want = sorted(map(repr, duckdb.connect().sql(sql).fetchall()))
    assert got == want


def test_an_uncorrelated_in_subquery_still_works(files_dir):
    sql = "SELECT id FROM 'orders.csv' o WHERE customer IN (SELECT name FROM 'customers.csv' WHERE vip) ORDER BY id"
    assert plan(sql).result().num_rows > 0
