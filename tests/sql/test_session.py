"""``session(...)``: session windows in SQL, checked against DuckDB computing the same sessions with
window functions (a new session where the gap to the previous row of the key is at least ``gap``, or
where a ``max_duration`` grid line lies between them; a running sum of those starts numbers them).

Also: the ``stream-json`` changelog's net effect is the ``batch-json`` answer, and with in-order
input (disorder within the watermark's offset) ``TRIGGER ON WATERMARK`` emits each session once.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter

import numpy as np
import pyarrow as pa
import pyarrow.csv as pv
import pytest

from tidal.core.errors import PlanError
from tidal.sql import plan

from .test_triggers import duck, stream_and_batch

BASE = dt.datetime(2024, 6, 1, 9, 0, 0)
BEFORE_1970 = dt.datetime(1969, 12, 31, 23, 10, 0)  # two hours of clicks across the epoch: negative ticks, -1, 0
MINUTE = 60_000_000


def write_clicks(path, n: int, seed: int, disorder_s: int = 0, users: int = 5, base: dt.datetime = BASE) -> None:
    """Clicks of a few users over two hours with bursts and pauses, in arrival order (each row
    arrives up to ``disorder_s`` seconds after its time); some users are null."""
    rng = np.random.default_rng(seed)
    steps = rng.choice([5_000_000, 40_000_000, 3 * MINUTE, 9 * MINUTE], n, p=[0.5, 0.3, 0.15, 0.05])
    times = np.cumsum(steps // users)
    arrival = times + rng.integers(0, disorder_s * 1_000_000 + 1, n)
    order = np.argsort(arrival, kind="stable")
    user = pa.array([None if u == users else f"u{u}" for u in rng.integers(0, users + 1, n)], pa.string())
    stamps = pa.array(np.datetime64(base, "us") + times[order].astype("timedelta64[us]"))
    table = pa.table({"user": user.take(pa.array(order)), "time": stamps, "v": rng.integers(0, 100, n)[order]})
    pv.write_csv(table, path)


def duck_sessions(path, gap: int, max_duration: int | None, keyed: bool) -> str:
    """DuckDB's sessions: one row per input row with its session's start and end (microseconds)."""
    part = "PARTITION BY user" if keyed else ""
    # grid lines by floor division (DuckDB's // truncates toward zero: wrong before 1970)
    grid = f" OR {_floor('t', max_duration)} <> {_floor('prev', max_duration)}" if max_duration else ""
    cap = f", {_floor('MIN(t) OVER s', max_duration)} + {max_duration}" if max_duration else ""
    return f"""
    WITH x AS (SELECT user, time, v, epoch_us(time) AS t FROM '{path}'),
    y AS (SELECT *, LAG(t) OVER ({part} ORDER BY t) AS prev FROM x),
    z AS (SELECT *, SUM(CASE WHEN prev IS NULL OR t - prev >= {gap}{grid} THEN 1 ELSE 0 END)
                   OVER ({part} ORDER BY t ROWS UNBOUNDED PRECEDING) AS sid FROM y)
    SELECT user, t, v, MIN(t) OVER s AS ws, LEAST(MAX(t) OVER s + {gap}{cap}) AS we
    FROM z WINDOW s AS ({part}{"," if keyed else "PARTITION BY"} sid)
    """


def _floor(t: str, m: int) -> str:
    """DuckDB text for the grid point ``k * m`` at or before ``t`` (negative ``t`` too)."""
    return f"({t} - ((({t}) % {m}) + {m}) % {m})"


def _us(v) -> int:
    if isinstance(v, str):
        v = dt.datetime.fromisoformat(v)
    return (v - dt.datetime(1970, 1, 1)) // dt.timedelta(microseconds=1)


def watermarked(offset: str) -> str:
    return (
        "TABLE(max_diff_watermark(source => TABLE('c.csv'), time_field => DESCRIPTOR(time),"
        f" offset => INTERVAL {offset}))"
    )


def session_sql(gap_min: int, max_min: int | None, keyed: bool, source: str = "TABLE('c.csv')") -> str:
    args = f"source => {source}, time_field => DESCRIPTOR(time), gap => INTERVAL {gap_min} MINUTES"
    if max_min:
        args += f", max_duration => INTERVAL {max_min} MINUTES"
    if keyed:
        args += ", key => DESCRIPTOR(user)"
    return f"session({args})"


@pytest.mark.parametrize(
    ("gap", "cap", "keyed", "batch_rows", "base"),
    [
        (2, None, True, 65_536, BASE),
        (1, 15, True, 65_536, BASE),
        (3, 20, False, 65_536, BASE),
        (2, 10, True, 7, BASE),
        (2, 10, True, 7, BEFORE_1970),
        (1, 15, False, 65_536, BEFORE_1970),
    ],
)
def test_rows_get_duckdbs_sessions(in_dir, monkeypatch, gap, cap, keyed, batch_rows, base):
    from tidal.sql import planner

    monkeypatch.setattr(planner, "BATCH_ROWS", batch_rows)  # batching never changes a session
    write_clicks(in_dir / "c.csv", 1500 if batch_rows > 100 else 400, seed=gap + (cap or 0), base=base)
    q = plan(f"SELECT user, time, v, window_start, window_end FROM {session_sql(gap, cap, keyed)} s")
    got = sorted(
        (r["user"] or "", _us(r["time"]), r["v"], _us(r["window_start"]), _us(r["window_end"]))
        for r in q.result().to_pylist()
    )
    rows = duck(duck_sessions(in_dir / "c.csv", gap * MINUTE, cap and cap * MINUTE, keyed))
    expected = sorted((r[0] or "", r[1], r[2], r[3], r[4]) for r in rows)
    assert got == expected
    assert len({(r[0], r[3]) for r in got}) > 10  # many sessions, not one


def test_session_counts_under_a_watermark_each_once_and_equal_to_duckdb(in_dir):
    write_clicks(in_dir / "c.csv", 2000, seed=3, disorder_s=20)
    source = watermarked("30 SECONDS")
    sql = (
        "SELECT user, window_start, window_end, COUNT(*) AS n, SUM(v) AS total"
        f" FROM {session_sql(2, 30, True, source)} s"
        " GROUP BY user, window_start, window_end TRIGGER ON WATERMARK"
    )
    changes, batch = stream_and_batch(sql)
    assert not any(c.get("sys.undo") for c in changes)  # in-order sessions: each emitted once, never revised
    keys = [(c["user"], c["window_end"]) for c in changes]
    assert len(keys) == len(set(keys)) == len(batch)
    rows = duck(duck_sessions(in_dir / "c.csv", 2 * MINUTE, 30 * MINUTE, True))
    expected: Counter = Counter()
    totals: Counter = Counter()
    for user, _t, v, ws, we in rows:
        expected[(user, ws, we)] += 1
        totals[(user, ws, we)] += v
    got = {(r["user"], _us(r["window_start"]), _us(r["window_end"])): (r["n"], r["total"]) for r in batch}
    assert got == {k: (n, totals[k]) for k, n in expected.items()}
    assert plan(sql).result().num_rows == len(batch)


def test_late_rows_leave_sessions_and_adjust_moves_them_up(in_dir):
    lines = ["user,time,v"] + [
        f"a,{BASE + dt.timedelta(minutes=m)},{i}" for i, m in enumerate([0, 1, 10, 11, 3, 30])
    ]  # 3 arrives after 11 with a 1-minute offset: late
    (in_dir / "c.csv").write_text("\n".join(lines) + "\n")
    sql = (
        f"SELECT window_start, window_end, COUNT(*) AS n FROM {session_sql(5, None, True, watermarked('1 MINUTE'))} s"
        " GROUP BY window_start, window_end ORDER BY window_start"
    )
    dropped = plan(sql)
    assert [(r["window_start"].minute, r["n"]) for r in dropped.result().to_pylist()] == [(0, 2), (10, 2), (30, 1)]
    assert dropped.stats.late == 1
    adjusted = plan(sql, late="adjust")  # the late row's time moves up to the watermark, 10:10, joining that session
    assert [(r["window_start"].minute, r["n"]) for r in adjusted.result().to_pylist()] == [(0, 2), (10, 3), (30, 1)]
    assert adjusted.stats.late == 1


def test_session_arguments_are_checked(in_dir):
    (in_dir / "c.csv").write_text("user,time\na,2024-01-01 10:00:00\n")
    with pytest.raises(PlanError, match="needs gap"):
        plan("SELECT * FROM session(source => TABLE('c.csv'), time_field => DESCRIPTOR(time)) s")
    with pytest.raises(PlanError, match="unknown column nobody"):
        plan(
            "SELECT * FROM session(source => TABLE('c.csv'), time_field => DESCRIPTOR(time),"
            " gap => INTERVAL 1 MINUTE, key => DESCRIPTOR(nobody)) s"
        )
    with pytest.raises(PlanError, match="no argument"):
        plan(
            "SELECT * FROM session(source => TABLE('c.csv'), time_field => DESCRIPTOR(time),"
            " gap => INTERVAL 1 MINUTE, window_length => INTERVAL 1 MINUTE) s"
        )


def test_table_functions_take_positional_arguments(in_dir):
    lines = ["user,time"] + [f"a,{BASE + dt.timedelta(minutes=m)}" for m in (0, 1, 10)]
    (in_dir / "c.csv").write_text("\n".join(lines) + "\n")
    named = plan(f"SELECT * FROM {session_sql(5, None, True)} s").result()
    positional = plan(
        "SELECT * FROM session(TABLE('c.csv'), DESCRIPTOR(time), INTERVAL 5 MINUTES, key => DESCRIPTOR(user)) s"
    ).result()
    assert positional.equals(named) and positional.num_rows == 3
    with pytest.raises(PlanError, match="offset must be an INTERVAL"):
        plan("SELECT * FROM tumble(TABLE('c.csv'), DESCRIPTOR(time), INTERVAL 5 MINUTES, 7) t")
    with pytest.raises(PlanError, match="needs a name"):
        plan("SELECT * FROM max_diff_watermark(source => TABLE('c.csv'), DESCRIPTOR(time)) t")
