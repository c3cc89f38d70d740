"""``tumble(...)``/``hop(...)`` with ``align => 'start' | 'end'`` (issue 18, streaming SQL details).

'start' (the default) holds a time ``t`` in the windows ``[start, end)``; 'end' (Trill's
``TumblingWindowLifetime``/``HoppingWindowLifetime``) in ``(start, end]``: a time on the grid closes
its window. Checked against DuckDB (windows joined by their bounds), against the API's
``tumbling_window``/``hopping_window(align=...)`` (which tests/trill checks on Trill's own examples),
and for Trill's convention that a window's result becomes visible at the window's end.
"""

from __future__ import annotations

import csv
import datetime as dt

import duckdb
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tidal
from tidal import agg
from tidal.core.errors import PlanError
from tidal.sql import plan

SHAPES = [(10, None), (10, 5), (10, 4), (6, 6)]  # (window length, hop): tumble, hop dividing, not dividing


def _write(path, rows):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["k", "t", "v"])
        w.writerows(rows)


def _window_sql(length, hop, align, offset=0, watermark=False):
    src = "TABLE('w.csv')"
    if watermark:
        src = "TABLE(max_diff_watermark(source => TABLE('w.csv'), time_field => DESCRIPTOR(t)))"
    fn = "tumble" if hop is None else "hop"
    extra = "" if hop is None else f", hop => INTERVAL {hop} MICROSECONDS"
    return (
        f"{fn}(source => {src}, time_field => DESCRIPTOR(t), window_length => INTERVAL {length} MICROSECONDS"
        f"{extra}, offset => INTERVAL {offset} MICROSECONDS, align => '{align}')"
    )


def _micros(ts) -> int:
    return (ts - dt.datetime(1970, 1, 1)) // dt.timedelta(microseconds=1)


def _duckdb_windows(rows, length, hop, align, offset=0):
    """(window_start, window_end, k, count, sum) per window and key: rows joined to grid windows by their bounds."""
    step = length if hop is None else hop
    con = duckdb.connect()
    con.execute("CREATE TABLE e(k VARCHAR, t BIGINT, v BIGINT)")
    con.executemany("INSERT INTO e VALUES (?, ?, ?)", rows)
    # windows start on the grid under 'start', end on it under 'end' (Trill: an event's start moves up to it)
    bounds = "g.p, g.p + $len" if align == "start" else "g.p - $len, g.p"
    held = "e.t >= g.p AND e.t < g.p + $len" if align == "start" else "e.t > g.p - $len AND e.t <= g.p"
    return sorted(
        con.execute(
            f"""SELECT {bounds}, e.k, count(*), sum(e.v) FROM e,
                LATERAL (SELECT $off + x * $step AS p FROM range((e.t - $len - $off) // $step - 3,
                         (e.t + $len - $off) // $step + 3) r(x)) g
                WHERE {held} GROUP BY ALL""",
            {"len": length, "step": step, "off": offset},
        ).fetchall()
    )


def _tidal_windows(length, hop, align, offset=0):
    sql = (
        "SELECT window_start, window_end, k, count(*) AS n, sum(v) AS s FROM "
        f"{_window_sql(length, hop, align, offset)} GROUP BY window_start, window_end, k"
    )
    out = plan(sql).result().to_pylist()
    return sorted((_micros(r["window_start"]), _micros(r["window_end"]), r["k"], r["n"], r["s"]) for r in out)


rows_strategy = st.lists(
    st.tuples(st.sampled_from(["a", "b"]), st.integers(-25, 40), st.integers(-5, 5)), min_size=1, max_size=25
).map(lambda rows: sorted(rows, key=lambda r: r[1]))


@pytest.mark.parametrize("align", ["start", "end"])
@pytest.mark.parametrize(("length", "hop"), SHAPES)
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=rows_strategy, offset=st.integers(0, 3))
def test_windows_equal_duckdb(in_dir, align, length, hop, rows, offset):
    _write(in_dir / "w.csv", rows)
    assert _tidal_windows(length, hop, align, offset) == _duckdb_windows(rows, length, hop, align, offset)


@pytest.mark.parametrize("align", ["start", "end"])
@pytest.mark.parametrize(("length", "hop"), [s for s in SHAPES if s[0] % (s[1] or s[0]) == 0])
def test_windows_equal_the_apis_windows(in_dir, align, length, hop):
    rows = [("a", 0, 1), ("a", 5, 2), ("b", 10, 3), ("a", 10, 4), ("b", 12, 5), ("a", 20, 6), ("b", 25, 7)]
    _write(in_dir / "w.csv", rows)
    step = length if hop is None else hop
    table = pa.table({"k": [r[0] for r in rows], "t": [r[1] for r in rows], "v": [r[2] for r in rows]})
    api = (
        tidal.from_arrow(table, time="t")
        .hopping_window(length, step, align=align)
        .group_aggregate("k", n=agg.count(), s=agg.sum("v"))
        .to_intervals()
        .to_pylist()
    )
    # (a hop dividing the length: then each hop of the API's output is the value of one window)
    # the API's result for one window is alive over one hop: [w, w + hop) under 'end' (w the window's
    # end), [w - hop, w) under 'start'; pieces of one window's value are coalesced per snapshot
    expected = set()
    for r in api:
        for at in range(r["start"], r["end"]):
            if at % step == 0:
                w = at if align == "end" else at + step
                expected.add((w - length, w, r["k"], r["n"], r["s"]))
    got = {(s, e, k, n, v) for s, e, k, n, v in _tidal_windows(length, hop, align)}
    assert got == expected


@pytest.mark.parametrize("align", ["start", "end"])
@pytest.mark.parametrize(("length", "hop"), SHAPES)
def test_a_windows_result_is_visible_at_its_end(in_dir, align, length, hop):
    """Trill's convention: under a watermark, each window's row is inserted at its window's end."""
    rows = [("a", 0, 1), ("a", 5, 2), ("b", 10, 3), ("a", 10, 4), ("a", 20, 6), ("b", 30, 7)]
    _write(in_dir / "w.csv", rows)
    q = plan(
        f"SELECT window_end, k, sum(v) AS s FROM {_window_sql(length, hop, align, watermark=True)} "
        "GROUP BY window_end, k TRIGGER ON WATERMARK"
    )
    log = q.changelog().to_pylist()
    assert log and not any(r["undo"] for r in log)
    assert all(r["time"] == _micros(r["window_end"]) for r in log)  # inserted at the window's end
    got = sorted((_micros(r["window_end"]), r["k"], r["s"]) for r in log)
    assert got == sorted((we, k, s) for _, we, k, _, s in _duckdb_windows(rows, length, hop, align))


def test_boundary_times_close_their_window_under_end(in_dir):
    _write(in_dir / "w.csv", [("a", 0, 1), ("a", 10, 2), ("a", 11, 4)])
    rows = plan(f"SELECT window_start, window_end, t FROM {_window_sql(10, None, 'end')} ORDER BY t").result()
    got = [(_micros(r["window_start"]), _micros(r["window_end"]), r["t"]) for r in rows.to_pylist()]
    assert got == [(-10, 0, 0), (0, 10, 10), (10, 20, 11)]
    rows = plan(f"SELECT window_start, window_end, t FROM {_window_sql(10, None, 'start')} ORDER BY t").result()
    got = [(_micros(r["window_start"]), _micros(r["window_end"]), r["t"]) for r in rows.to_pylist()]
    assert got == [(0, 10, 0), (10, 20, 10), (10, 20, 11)]


@pytest.mark.parametrize("bad", ["'middle'", "1", "NULL"])
def test_align_accepts_start_or_end_only(in_dir, bad):
    _write(in_dir / "w.csv", [("a", 0, 1)])
    with pytest.raises(PlanError, match="align is 'start'.*or 'end'"):
        plan(f"SELECT * FROM {_window_sql(10, None, 'start').replace(chr(39) + 'start' + chr(39), bad)}").result()


@pytest.mark.parametrize("fn", ["tumble", "hop"])
def test_unknown_argument_names_list_the_valid_ones_with_align(in_dir, fn):
    _write(in_dir / "w.csv", [("a", 0, 1)])
    extra = ", hop => INTERVAL 5 MICROSECONDS" if fn == "hop" else ""
    with pytest.raises(PlanError) as err:
        plan(
            f"SELECT * FROM {fn}(source => TABLE('w.csv'), time_field => DESCRIPTOR(t),"
            f" window_length => INTERVAL 10 MICROSECONDS{extra}, alignment => 'end')"
        ).result()
    assert f"{fn}(...) has no argument alignment" in str(err.value) and "align" in str(err.value)


# Trill's AdHocTests PointEventRegression (Sources/Test/SimpleTesting/AdHocTests.cs, MIT licence,
# Copyright (c) Microsoft Corporation; the API version is tests/trill/test_adhoc.py): requests counted
# per (host, address) in HoppingWindowLifetime(10, 10), each count a point at its window's end
HTTP = [
    (3, "msn.com", "157.59.185.162"), (7, "msn.com", "157.59.0.162"), (10, "msn.com", "157.59.185.162"),
    (13, "msn.com", "157.59.185.162"), (16, "msn.com", "157.59.185.162"), (20, "msn.com", "157.59.185.162"),
    (22, "test.cloudapp.net", "157.59.185.162"), (25, "bing.com", "157.59.185.162"),
    (27, "bing.com", "157.59.185.162"), (41, "bing.com", "157.59.185.162"), (45, "msn.com", "157.59.185.162"),
    (49, "msn.com", "157.59.185.162"), (53, "msn.com", "157.59.185.162"),
]  # fmt: skip


def test_trills_point_event_regression_in_sql(in_dir):
    with open(in_dir / "http.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["t", "host", "ip"])
        w.writerows(HTTP)
    q = plan(
        "SELECT window_end, host, ip, count(*) AS n FROM tumble(source => TABLE(max_diff_watermark("
        "source => TABLE('http.csv'), time_field => DESCRIPTOR(t))), window_length => INTERVAL 10 MICROSECONDS,"
        " align => 'end') GROUP BY window_end, host, ip TRIGGER ON WATERMARK"
    )
    log = q.changelog().to_pylist()
    got = sorted((r["time"], _micros(r["window_end"]), r["host"], r["ip"], r["n"]) for r in log if not r["undo"])
    m, m0 = ("msn.com", "157.59.185.162"), ("msn.com", "157.59.0.162")
    t, b = ("test.cloudapp.net", "157.59.185.162"), ("bing.com", "157.59.185.162")
    trill = [(10, *m, 2), (10, *m0, 1), (20, *m, 3), (30, *t, 1), (30, *b, 2), (50, *b, 1), (50, *m, 2), (60, *m, 1)]
    assert got == sorted((w, w, *rest) for w, *rest in trill)  # each count inserted at its window's end
    assert not any(r["undo"] for r in log)
