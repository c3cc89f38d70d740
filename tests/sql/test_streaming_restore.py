"""SQL over event time on random disordered rows: tumble, hop and session groups, each TRIGGER, drop or adjust.

For each query: the final answer equals DuckDB's over the rows the watermark kept (late rows dropped, or
moved up to the watermark they were behind), the changelog's net effect is that answer, and a run
checkpointed after a random number of messages (its state through pickle), restored into a new query
and run to its end gives the uninterrupted run's events. The same for two such sources, each with its own
watermark, inner/left/full joined on a key and their windows and grouped; and for a windowed aggregate's
changes under each TRIGGER (retractions included) regrouped, numbered by ROW_NUMBER or cut by ORDER BY ... LIMIT.
"""

from __future__ import annotations

import datetime as dt
import pickle
from collections import Counter

import duckdb
import pyarrow as pa
import pyarrow.csv as pv
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tidal.sql import plan, planner

BASE = dt.datetime(1969, 12, 31, 23, 59, 40)  # times before and after the epoch: negative ticks too
SECOND = 1_000_000


def _source(offset: int) -> str:
    return (
        "TABLE(max_diff_watermark(source => TABLE('e.csv'), time_field => DESCRIPTOR(time),"
        f" offset => INTERVAL {offset} SECONDS))"
    )


def tidal_sql(kind: str, offset: int, trigger: str) -> str:
    src = _source(offset)
    if kind == "tumble":
        frm = f"tumble(source => {src}, time_field => DESCRIPTOR(time), window_length => INTERVAL 5 SECONDS)"
    elif kind == "hop":
        frm = (
            f"hop(source => {src}, time_field => DESCRIPTOR(time), window_length => INTERVAL 6 SECONDS,"
            " hop => INTERVAL 2 SECONDS)"
        )
    else:
        frm = (
            f"session(source => {src}, time_field => DESCRIPTOR(time), gap => INTERVAL 3 SECONDS,"
            " max_duration => INTERVAL 10 SECONDS, key => DESCRIPTOR(user))"
        )
    return (
        f"SELECT user, window_start, window_end, COUNT(*) AS n, SUM(v) AS s FROM {frm} w"
        f" GROUP BY user, window_start, window_end {trigger}"
    )


def _down(x: str, period: int) -> str:
    """``x`` rounded down to a multiple of ``period`` in DuckDB (its ``//`` truncates toward zero)."""
    return f"({x} - (({x} % {period}) + {period}) % {period})"


def duck_sql(kind: str) -> str:
    """The same groups in DuckDB over ``ev(user, t, v)`` (``t`` in microseconds): buckets, hops, sessions."""
    if kind == "tumble":
        size = 5 * SECOND
        bounds = f"{_down('t', size)} AS ws, {_down('t', size)} + {size} AS we"
        return f"SELECT user, ws, we, COUNT(*), SUM(v) FROM (SELECT *, {bounds} FROM ev) GROUP BY user, ws, we"
    if kind == "hop":
        hop, size = 2 * SECOND, 6 * SECOND
        return (
            f"SELECT user, {_down('t', hop)} - j * {hop} AS ws, {_down('t', hop)} - j * {hop} + {size} AS we,"
            " COUNT(*), SUM(v) FROM ev, range(3) r(j) GROUP BY user, ws, we"
        )
    gap, cap = 3 * SECOND, 10 * SECOND
    return f"""
    WITH y AS (SELECT *, LAG(t) OVER (PARTITION BY user ORDER BY t) AS prev FROM ev),
    z AS (SELECT *, SUM(CASE WHEN prev IS NULL OR t - prev >= {gap} OR {_down("t", cap)} <> {_down("prev", cap)}
                   THEN 1 ELSE 0 END) OVER (PARTITION BY user ORDER BY t ROWS UNBOUNDED PRECEDING) AS sid FROM y)
    SELECT user, MIN(t) AS ws, LEAST(MAX(t) + {gap}, {_down("MIN(t)", cap)} + {cap}) AS we, COUNT(*), SUM(v)
    FROM z GROUP BY user, sid"""


@st.composite
def arrivals(draw):
    """Rows (second, user, v) in arrival order: sorted seconds, some delayed by up to 8 seconds."""
    n = draw(st.integers(1, 30))
    times = sorted(draw(st.lists(st.integers(0, 60), min_size=n, max_size=n)))
    delays = draw(st.lists(st.integers(0, 8), min_size=n, max_size=n))
    times = [t + d for t, d in zip(times, delays, strict=True)]  # arrival order: when each row came
    order = sorted(range(n), key=lambda i: times[i])
    seconds = [times[i] - delays[i] for i in order]
    users = draw(st.lists(st.sampled_from(["a", "b", None]), min_size=n, max_size=n))
    values = draw(st.lists(st.integers(-5, 9), min_size=n, max_size=n))
    return list(zip(seconds, users, values, strict=True))


def kept(rows, offset: int, late: str) -> list[tuple[int, str | None, int]]:
    """The rows the watermark keeps, in microseconds: a row behind (the largest time before it - offset) is
    late; ``late="adjust"`` moves it up to that watermark."""
    out, high = [], None
    for t, user, v in rows:
        t *= SECOND
        mark = None if high is None else high - offset * SECOND
        if mark is not None and t < mark:
            if late == "adjust":
                out.append((mark, user, v))
        else:
            out.append((t, user, v))
        high = t if high is None else max(high, t)
    return out


def _us(v) -> int:
    return (v - dt.datetime(1970, 1, 1)) // dt.timedelta(microseconds=1)


def _answer(table: pa.Table) -> Counter:
    return Counter((r["user"], _us(r["window_start"]), _us(r["window_end"]), r["n"], r["s"]) for r in table.to_pylist())


def _events(table: pa.Table | None) -> list[tuple]:
    if table is None:
        return []
    return sorted(zip(*(c.to_pylist() for c in table.columns), strict=True), key=repr)


TRIGGERS = ["", "TRIGGER ON WATERMARK", "TRIGGER COUNTING 2", "TRIGGER AFTER DELAY INTERVAL 3 SECONDS"]


@settings(max_examples=25, deadline=None)
@given(
    rows=arrivals(),
    kind=st.sampled_from(["tumble", "hop", "session"]),
    offset=st.sampled_from([0, 2, 5]),
    trigger=st.sampled_from(TRIGGERS),
    late=st.sampled_from(["drop", "adjust"]),
    batch_rows=st.sampled_from([1, 3, 65_536]),
    cut=st.integers(0, 40),
)
def test_windows_answer_like_duckdb_and_restore_exactly(
    tmp_path_factory, rows, kind, offset, trigger, late, batch_rows, cut
):
    directory = tmp_path_factory.mktemp("e")
    _write(directory, "e", rows)
    sql = tidal_sql(kind, offset, trigger)
    base = _us(BASE)
    ev = pa.table(  # noqa: F841 (read by DuckDB)
        {
            "user": pa.array([u for _, u, _ in kept(rows, offset, late)], pa.string()),
            "t": pa.array([base + t for t, _, _ in kept(rows, offset, late)], pa.int64()),
            "v": pa.array([v for _, _, v in kept(rows, offset, late)], pa.int64()),
        }
    )
    con = duckdb.connect()
    expected = Counter(tuple(r) for r in con.sql(duck_sql(kind)).fetchall())
    con.close()
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(directory)
        mp.setattr(planner, "BATCH_ROWS", batch_rows)
        q = plan(sql, late=late)
        assert _answer(q.result()) == expected
        net: Counter = Counter()
        for r in plan(sql, late=late).changelog().to_pylist():
            net[(r["user"], _us(r["window_start"]), _us(r["window_end"]), r["n"], r["s"])] += -1 if r["undo"] else 1
        assert +net == expected and all(c >= 0 for c in net.values())
        _assert_restore_continues(plan(sql, late=late).stream(), cut)


# -- two disordered sources, each with its own watermark, joined on a key and their tumble windows ------------
def _windows_of(name: str, offset: int) -> str:
    return (
        f"tumble(source => TABLE(max_diff_watermark(source => TABLE('{name}.csv'), time_field => DESCRIPTOR(time),"
        f" offset => INTERVAL {offset} SECONDS)), time_field => DESCRIPTOR(time), window_length => INTERVAL 5 SECONDS)"
    )


def _write(directory, name: str, rows) -> None:
    stamps = pa.array([BASE + dt.timedelta(seconds=t) for t, _, _ in rows], pa.timestamp("us"))
    table = pa.table({"user": [u for _, u, _ in rows], "time": stamps, "v": [v for _, _, v in rows]})
    pv.write_csv(table, directory / f"{name}.csv")


def _duck_side(rows, offset: int, late: str) -> pa.Table:
    """One side's kept rows with their window start ``ws``, in microseconds."""
    rows, size = kept(rows, offset, late), 5 * SECOND
    t = [_us(BASE) + x for x, _, _ in rows]
    return pa.table(
        {
            "user": pa.array([u for _, u, _ in rows], pa.string()),
            "v": pa.array([v for _, _, v in rows], pa.int64()),
            "ws": pa.array([x // size * size for x in t], pa.int64()),
        }
    )


@settings(max_examples=25, deadline=None)
@given(
    a=arrivals(),
    b=arrivals(),
    offset=st.sampled_from([0, 3]),
    join=st.sampled_from(["JOIN", "LEFT JOIN", "FULL JOIN"]),
    trigger=st.sampled_from(["", "TRIGGER ON WATERMARK", "TRIGGER COUNTING 2"]),
    late=st.sampled_from(["drop", "adjust"]),
    batch_rows=st.sampled_from([1, 4, 65_536]),
    cut=st.integers(0, 40),
)
def test_joined_windows_answer_like_duckdb_and_restore_exactly(
    tmp_path_factory, a, b, offset, join, trigger, late, batch_rows, cut
):
    directory = tmp_path_factory.mktemp("j")
    _write(directory, "a", a)
    _write(directory, "b", b)
    sql = (
        f"SELECT x.user AS u, x.window_start AS ws, COUNT(*) AS n, SUM(y.v) AS s FROM {_windows_of('a', offset)} x"
        f" {join} {_windows_of('b', offset)} y ON x.user = y.user AND x.window_start = y.window_start"
        f" GROUP BY x.user, x.window_start {trigger}"
    )
    con = duckdb.connect()
    con.register("ev_a", _duck_side(a, offset, late))
    con.register("ev_b", _duck_side(b, offset, late))
    oracle = f"SELECT x.user, x.ws, COUNT(*), SUM(y.v) FROM ev_a x {join} ev_b y ON x.user = y.user AND x.ws = y.ws"
    expected = Counter(tuple(r) for r in con.sql(oracle + " GROUP BY x.user, x.ws").fetchall())
    con.close()

    def row(r):
        return r["u"], None if r["ws"] is None else _us(r["ws"]), r["n"], r["s"]

    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(directory)
        mp.setattr(planner, "BATCH_ROWS", batch_rows)
        assert Counter(row(r) for r in plan(sql, late=late).result().to_pylist()) == expected
        net: Counter = Counter()
        for r in plan(sql, late=late).changelog().to_pylist():
            net[row(r)] += -1 if r["undo"] else 1
        assert +net == expected and all(c >= 0 for c in net.values())
        _assert_restore_continues(plan(sql, late=late).stream(), cut)


def _assert_restore_continues(stream, cut: int) -> None:
    whole = stream.query()
    whole.run()
    first = stream.query()
    first.run(max_messages=cut)
    state = pickle.loads(pickle.dumps(first.checkpoint()))
    second = stream.query()
    second.restore(state)
    assert second.run()
    parts = [t for t in (first.sink.table(), second.sink.table()) if t is not None]
    assert _events(pa.concat_tables(parts) if parts else None) == _events(whole.sink.table())


# -- retractions downstream: a TRIGGER's changelog regrouped, ranked or cut by ORDER BY ... LIMIT -----------------
INNER_TRIGGERS = ["", "TRIGGER COUNTING 1", "TRIGGER COUNTING 2", "TRIGGER ON WATERMARK", TRIGGERS[3]]
OUTER = {  # the same SQL in tidal (over the triggered inner query) and in DuckDB (over its plain answer)
    "regroup": "SELECT n, COUNT(*) AS c, SUM(s) AS t FROM ({inner}) i GROUP BY n",
    "top": "SELECT user, ws, n, s FROM ({inner}) i ORDER BY s DESC, n, ws, user NULLS FIRST LIMIT 3",
    "rank": "SELECT user, ws, n, ROW_NUMBER() OVER (PARTITION BY user ORDER BY s, ws) AS r FROM ({inner}) i",
}


def _plain(v):
    return _us(v) if isinstance(v, dt.datetime) else v


@settings(max_examples=25, deadline=None)
@given(
    rows=arrivals(),
    offset=st.sampled_from([0, 3]),
    inner_trigger=st.sampled_from(INNER_TRIGGERS),
    outer=st.sampled_from(sorted(OUTER)),
    outer_trigger=st.sampled_from(["", "TRIGGER COUNTING 1", "TRIGGER ON WATERMARK"]),
    late=st.sampled_from(["drop", "adjust"]),
    batch_rows=st.sampled_from([1, 4, 65_536]),
    cut=st.integers(0, 40),
)
def test_a_triggers_changes_regrouped_ranked_or_cut_answer_like_duckdb(
    tmp_path_factory, rows, offset, inner_trigger, outer, outer_trigger, late, batch_rows, cut
):
    directory = tmp_path_factory.mktemp("n")
    _write(directory, "e", rows)
    inner = (
        f"SELECT user, window_start AS ws, COUNT(*) AS n, SUM(v) AS s FROM {_windows_of('e', offset)} w"
        f" GROUP BY user, window_start {inner_trigger}"
    )
    sql = OUTER[outer].format(inner=inner) + (f" {outer_trigger}" if outer == "regroup" else "")
    con = duckdb.connect()
    con.register("ev", _duck_side(rows, offset, late))
    duck_inner = "SELECT user, ws, COUNT(*) AS n, SUM(v) AS s FROM ev GROUP BY user, ws"
    expected = Counter(tuple(r) for r in con.sql(OUTER[outer].format(inner=duck_inner)).fetchall())
    con.close()
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(directory)
        mp.setattr(planner, "BATCH_ROWS", batch_rows)
        got = Counter(tuple(_plain(v) for v in r.values()) for r in plan(sql, late=late).result().to_pylist())
        assert got == expected
        net: Counter = Counter()
        for r in plan(sql, late=late).changelog().to_pylist():
            undo = r.pop("undo")
            r.pop("time")
            net[tuple(_plain(v) for v in r.values())] += -1 if undo else 1
        assert +net == expected and all(c >= 0 for c in net.values())
        _assert_restore_continues(plan(sql, late=late).stream(), cut)
