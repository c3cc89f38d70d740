"""Triggers, watermarks and retractions end to end: the thesis's examples (seed 002 sections 2.10 and
4.2), a reference model of the TRIGGER rules under random input and batch sizes, late rows through
the disorder machinery, and progressive answers.

Every streaming test checks that the net effect of the ``stream-json`` changelog equals the
``batch-json`` answer.
"""

from __future__ import annotations

import datetime as dt
import json
from collections import Counter
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.csv as pv
from hypothesis import given, settings
from hypothesis import strategies as st

import tidal
from tidal import agg
from tidal.cli.main import main as cli
from tidal.ops.trigger import TriggerSpec
from tidal.plan.nodes.relational import Trigger
from tidal.sql import plan
from tidal.stream.streamable import Stream

BASE = dt.datetime(2024, 6, 1, 18, 0, 0)

THESIS_4_2 = """
WITH with_watermark AS (SELECT *
                        FROM max_diff_watermark(
                                 source => TABLE(events),
                                 time_field => DESCRIPTOR(time),
                                 offset => INTERVAL 5 SECONDS)
                            e),
     with_tumble AS (SELECT *
                     FROM tumble(
                              source => TABLE(with_watermark),
                              time_field => DESCRIPTOR(e.time),
                              window_length => INTERVAL 1 MINUTE,
                              offset => INTERVAL 0 SECONDS)
                          e),
     counts_per_team AS (SELECT e.window_end, e.team, COUNT(*) as goals
                         FROM with_tumble e
                         GROUP BY e.window_end, e.team
                         TRIGGER ON WATERMARK)
SELECT *
FROM counts_per_team cpt
ORDER BY cpt.window_end ASC, cpt.goals DESC
"""

DUCKDB_PER_MINUTE = """
SELECT time_bucket(INTERVAL 1 MINUTE, time) + INTERVAL 1 MINUTE AS window_end, team, COUNT(*) AS goals
FROM 'events.csv' GROUP BY ALL ORDER BY window_end, goals DESC
"""


def write_events(path: Path, n: int, seed: int, disorder_s: float, late_every: int = 0, teams: int = 12) -> None:
    """Goals of ``teams`` teams over a few minutes, in arrival order: each arrives up to
    ``disorder_s`` seconds after the one before it in time; every ``late_every``-th is 20 s late."""
    rng = np.random.default_rng(seed)
    times = np.sort(rng.integers(0, 4 * 60 * 1_000_000, n))
    arrival = times + rng.integers(0, int(disorder_s * 1_000_000) + 1, n)
    if late_every:
        arrival[::late_every] += 20_000_000
    order = np.argsort(arrival, kind="stable")
    team = rng.choice([f"team{i}" for i in range(teams)], n)[order]
    stamps = pa.array(np.datetime64(BASE, "us") + times[order].astype("timedelta64[us]"))
    pv.write_csv(pa.table({"team": team, "time": stamps}), path)


def run_cli(sql: str, fmt: str, *extra: str) -> list[dict]:
    out = f"out.{fmt}"
    assert cli(["query", sql, "--format", fmt, "--output", out, *extra]) == 0
    return [json.loads(line) for line in Path(out).read_text().splitlines()]


def net_effect(changes: list[dict]) -> Counter:
    net: Counter = Counter()
    for rec in changes:
        rec = dict(rec)
        undo = rec.pop("sys.undo", False)
        net[json.dumps(rec, sort_keys=True)] += -1 if undo else 1
    assert all(v >= 0 for v in net.values()), "a retraction of a row that was never inserted"
    return +net


def stream_and_batch(sql: str, *extra: str) -> tuple[list[dict], list[dict]]:
    """Both views of a query; asserts the changelog's net effect is the batch answer."""
    changes = run_cli(sql, "stream-json", *extra)
    batch = run_cli(sql, "batch-json", *extra)
    assert net_effect(changes) == Counter(json.dumps(r, sort_keys=True) for r in batch)
    return changes, batch


def duck(sql: str) -> list[tuple]:
    con = duckdb.connect()
    try:
        return [tuple(r) for r in con.sql(sql).fetchall()]
    finally:
        con.close()


# -- the thesis's examples ---------------------------------------------------------------------


def test_thesis_section_4_2_verbatim_equals_duckdb_per_minute_counts(in_dir):
    write_events(in_dir / "events.csv", 3000, seed=4, disorder_s=4)  # within the 5 s offset: nothing is late
    q = plan(THESIS_4_2)
    got = [tuple(r.values()) for r in q.result().to_pylist()]
    assert q.stats.late == 0
    expected = duck(DUCKDB_PER_MINUTE)
    assert sorted(got) == sorted(expected)
    # the order is part of the answer: by window end, then goals descending (ties in any order)
    assert [(w, -g) for w, _, g in got] == sorted((w, -g) for w, _, g in got)

    changes, batch = stream_and_batch(THESIS_4_2)
    # in-order windows (disorder within the watermark) and ON WATERMARK: each window once, no retraction
    assert not any(c.get("sys.undo") for c in changes)
    keys = [(c["window_end"], c["team"]) for c in changes]
    assert len(keys) == len(set(keys)) == len(batch)
    assert list(changes[0]) == ["window_end", "team", "goals"]


def test_thesis_section_2_10_cats_counting_1(in_dir):
    descriptions = ["fat", "amazing", "the best", "fluffy", "work of art", "lovely", "work of art", "cute"]
    descriptions += ["amazing", "cute", "work of art", "fluffy", "cute"]
    lines = [json.dumps({"name": f"cat{i}", "description": d, "livesleft": i % 9}) for i, d in enumerate(descriptions)]
    (in_dir / "cats_small.json").write_text("\n".join(lines) + "\n")
    sql = "SELECT c.description, COUNT(*) FROM cats_small c GROUP BY c.description TRIGGER COUNTING 1"
    changes, batch = stream_and_batch(sql)
    final = Counter(descriptions)
    assert {r["description"]: r["count_star()"] for r in batch} == final
    # COUNTING 1 materialises every row's update: one insert per row, a retraction of each previous value
    inserts = [c for c in changes if not c.get("sys.undo")]
    retractions = [c for c in changes if c.get("sys.undo")]
    assert len(inserts) == len(descriptions)
    assert len(retractions) == len(descriptions) - len(final)
    # each key's inserts count up 1, 2, 3, ... in arrival order
    seen: Counter = Counter()
    for c in inserts:
        seen[c["description"]] += 1
        assert c["count_star()"] == seen[c["description"]]
    assert sorted(duck(f"SELECT description, COUNT(*) FROM '{in_dir}/cats_small.json' GROUP BY 1")) == sorted(
        final.items()
    )


def test_counting_n_materialises_every_n_rows_of_a_key(in_dir):
    rows = ["k,v"] + [f"{'a' if i % 3 else 'b'},{i}" for i in range(20)]
    (in_dir / "t.csv").write_text("\n".join(rows) + "\n")
    changes, batch = stream_and_batch("SELECT k, COUNT(*) AS n, SUM(v) AS s FROM 't.csv' GROUP BY k TRIGGER COUNTING 3")
    counts = [c["n"] for c in changes if not c.get("sys.undo") and c["k"] == "a"]
    assert counts == [3, 6, 9, 12, 13]  # every 3 rows of key a, then its final value at end of input
    assert sorted((r["k"], r["n"]) for r in batch) == [("a", 13), ("b", 7)]


def test_after_delay_fires_once_a_key_is_quiet_for_the_delay(in_dir):
    secs = [("a", 0), ("a", 1), ("b", 2), ("a", 10), ("b", 30), ("a", 31)]
    lines = ["team,time"] + [f"{k},{BASE + dt.timedelta(seconds=s)}" for k, s in secs]
    (in_dir / "g.csv").write_text("\n".join(lines) + "\n")
    sql = (
        "SELECT team, COUNT(*) AS n FROM max_diff_watermark(source => TABLE('g.csv'), time_field => DESCRIPTOR(time),"
        " offset => INTERVAL 0 SECONDS) e GROUP BY team TRIGGER AFTER DELAY INTERVAL 5 SECONDS"
    )
    q = plan(sql)
    log = q.changelog().to_pylist()
    got = [((r["time"] - _us(BASE)) // 1_000_000, r["undo"], r["team"], r["n"]) for r in log]
    assert got == [
        (6, False, "a", 2),  # a changed at 1 s, quiet until 6 s
        (7, False, "b", 1),
        (15, True, "a", 2),
        (15, False, "a", 3),
        (35, True, "b", 1),  # end of input: the remaining deadlines come due in time order
        (35, False, "b", 2),
        (36, True, "a", 3),
        (36, False, "a", 4),
    ]
    stream_and_batch(sql)


def test_multitrigger_counting_and_watermark(in_dir):
    write_events(in_dir / "events.csv", 600, seed=9, disorder_s=2, teams=3)
    sql = THESIS_4_2.replace("TRIGGER ON WATERMARK", "TRIGGER COUNTING 10, ON WATERMARK")
    changes, batch = stream_and_batch(sql)
    assert any(c.get("sys.undo") for c in changes)  # early values were retracted
    # each window's last materialisation is its final count, made once its end passed
    last = {}
    for c in changes:
        if not c.get("sys.undo"):
            last[(c["window_end"], c["team"])] = c["goals"]
    assert last == {(r["window_end"], r["team"]): r["goals"] for r in batch}


def _us(t: dt.datetime) -> int:
    return (t - dt.datetime(1970, 1, 1)) // dt.timedelta(microseconds=1)


# -- late rows ---------------------------------------------------------------------------------


def test_late_rows_are_counted_dropped_and_written(in_dir):
    write_events(in_dir / "events.csv", 2000, seed=5, disorder_s=3, late_every=97)
    q = plan(THESIS_4_2, late_path=str(in_dir / "late.json"))
    got = sorted(tuple(r.values()) for r in q.result().to_pylist())
    late = [json.loads(x) for x in (in_dir / "late.json").read_text().splitlines()]
    assert q.stats.late == len(late) > 0
    # the answer is DuckDB's over the rows that were not late
    late_keys = Counter((r["team"], r["time"]) for r in late)
    kept = pv.read_csv(in_dir / "events.csv").to_pylist()
    rows = []
    for r in kept:
        key = (r["team"], r["time"].isoformat(sep=" "))
        if late_keys[key]:
            late_keys[key] -= 1
            continue
        rows.append(r)
    assert not +late_keys  # every late record is a row of the file
    pv.write_csv(pa.Table.from_pylist(rows), in_dir / "kept.csv")
    assert got == sorted(duck(DUCKDB_PER_MINUTE.replace("events.csv", "kept.csv")))
    stream_and_batch(THESIS_4_2)


# -- the trigger rules against a reference model -------------------------------------------------


def model(rows: list[tuple[int, int, int, int]], spec: TriggerSpec) -> Counter:
    """Row-at-a-time statement of the rules: rows (tick, w, k, v); key (w, k), event time w;
    values (count, sum). Returns the changelog as a multiset of (time, undo, w, k, count, sum)."""
    by_tick: dict[int, list] = {}
    for r in rows:
        by_tick.setdefault(r[0], []).append(r)
    value: dict = {}
    emitted: dict = {}
    rows_at_fire: Counter = Counter()
    deadline: dict = {}
    out: Counter = Counter()
    last = min(by_tick)  # the latest firing so far (ticks may be negative)

    def fire(key, t):
        nonlocal last
        rows_at_fire[key] = value[key][0]
        deadline.pop(key, None)
        if emitted.get(key) != value[key]:
            if key in emitted:
                out[(t, True, *key, *emitted[key])] += 1
            out[(t, False, *key, *value[key])] += 1
            emitted[key] = value[key]
            last = max(last, t)

    horizon = max(max(by_tick), max(r[1] for r in rows)) + (spec.delay or 0) + 1
    last_tick = max(by_tick)
    for t in range(min(min(by_tick), 0), horizon + 1):
        changed = []
        for _, w, k, v in by_tick.get(t, []):
            c, s = value.get((w, k), (0, 0))
            value[(w, k)] = (c + 1, s + v)
            if (w, k) not in changed:
                changed.append((w, k))
        if spec.delay is not None:
            for key in changed:
                deadline[key] = t + spec.delay
        firing = set()
        for key in changed:
            if spec.counting is not None and value[key][0] - rows_at_fire[key] >= spec.counting:
                firing.add(key)
        for key in value:
            dirty = emitted.get(key) != value[key]
            if spec.watermark and key[0] <= t and (key in changed or key[0] == t) and dirty:
                firing.add(key)
            if deadline.get(key) == t:
                firing.add(key)
        for key in sorted(firing):
            fire(key, t)
    end = max(last, last_tick)
    for key in value:
        if emitted.get(key) != value[key]:
            fire(key, end)
    return out


def trigger_stream(rows, spec: TriggerSpec, batch_size: int) -> Counter:
    table = pa.table(
        {
            "t": pa.array([r[0] for r in rows], pa.int64()),
            "w": pa.array([r[1] for r in rows], pa.int64()),
            "k": pa.array([r[2] for r in rows], pa.int64()),
            "v": pa.array([r[3] for r in rows], pa.int64()),
        }
    )
    s = tidal.from_arrow(table, time="t", kind="start", batch_size=batch_size)
    out = s.group_aggregate(["w", "k"], n=agg.count(), s=agg.sum("v"), rows=agg.count())
    node = Trigger(out.node, spec, ("w", "k"), "w", "rows")
    log = Stream(node).to_changelog().to_pylist()
    return Counter((r["time"], r["undo"], r["w"], r["k"], r["n"], r["s"]) for r in log)


rows_strategy = st.lists(  # negative ticks too (SQL's times before 1970)
    st.tuples(st.integers(-6, 12), st.integers(-4, 15), st.integers(0, 2), st.integers(-3, 9)), min_size=1, max_size=40
).map(sorted)
spec_strategy = st.builds(
    TriggerSpec,
    counting=st.one_of(st.none(), st.integers(1, 4)),
    delay=st.one_of(st.none(), st.integers(0, 5)),
    watermark=st.booleans(),
)


@settings(max_examples=60, deadline=None)
@given(rows=rows_strategy, spec=spec_strategy, batch_size=st.sampled_from([1, 3, 1000]))
def test_trigger_operator_matches_the_reference_model(rows, spec, batch_size):
    got = trigger_stream(rows, spec, batch_size)
    assert got == model(rows, spec)
    # the net effect is the aggregate's final value per key, whatever the trigger
    final: Counter = Counter()
    for _t, undo, *payload in got.elements():
        final[tuple(payload)] += -1 if undo else 1
    expected = Counter()
    totals: dict = {}
    for _, w, k, v in rows:
        c, s = totals.get((w, k), (0, 0))
        totals[(w, k)] = (c + 1, s + v)
    for key, val in totals.items():
        expected[(*key, *val)] = 1
    assert +final == expected


def test_a_delay_firing_before_time_zero_is_stamped_at_its_own_tick():
    """The trigger once began its clock at tick 0: before 1970 (negative ticks) a firing was stamped 0, after
    the changes that followed it, and the final answer kept a stale value beside the new one."""
    rows = [(-20, -15, 0, 1), (-20, -15, 0, 1), (-16, -15, 0, 1)]
    for spec in (TriggerSpec(delay=3), TriggerSpec(counting=1), TriggerSpec(watermark=True)):
        got = trigger_stream(rows, spec, 1)
        assert got == model(rows, spec)
        assert all(t < 0 for t, *_ in got), got
    got = trigger_stream(rows, TriggerSpec(delay=3), 1)
    assert got == Counter({(-17, False, -15, 0, 2, 2): 1, (-13, True, -15, 0, 2, 2): 1, (-13, False, -15, 0, 3, 3): 1})


# -- progressive answers -----------------------------------------------------------------------


def test_progressive_answers_are_exact_over_each_prefix(in_dir):
    rng = np.random.default_rng(2)
    n = 400
    table = pa.table({"i": np.arange(n), "k": rng.choice(["x", "y", "z"], n), "v": rng.integers(0, 100, n)})
    pv.write_csv(table, in_dir / "p.csv")
    sql = "SELECT k, COUNT(*) AS n, SUM(v) AS s FROM 'p.csv' GROUP BY k ORDER BY k"
    got = run_cli(sql, "batch-json", "--progressive", "25")
    reports: dict = {}
    for r in got:
        reports.setdefault(r.pop("sys.progress"), []).append(tuple(r.values()))
    assert sorted(reports) == [0.25, 0.5, 0.75, 1.0]
    for fraction, result in reports.items():
        upto = int(fraction * n)
        prefix = f"SELECT k, COUNT(*), SUM(v) FROM '{in_dir}/p.csv' WHERE i < {upto} GROUP BY k ORDER BY k"
        assert result == duck(prefix)


def test_live_table_off_a_terminal_prints_the_final_table(in_dir, capsys):
    (in_dir / "a.csv").write_text("k,v\na,1\nb,2\na,3\n")
    assert cli(["query", "SELECT k, SUM(v) AS s FROM 'a.csv' GROUP BY k ORDER BY k", "--format", "live-table"]) == 0
    captured = capsys.readouterr()
    assert "│ a │ 4 │" in captured.out.replace(" 4 ", " 4 ") and "rows read: 3" in captured.err


def test_hop_windows_count_each_row_in_every_window_holding_it(in_dir):
    write_events(in_dir / "events.csv", 500, seed=11, disorder_s=2, teams=3)
    sql = (
        "SELECT window_start, window_end, team, COUNT(*) AS n FROM hop(source => TABLE(max_diff_watermark("
        "source => TABLE(events), time_field => DESCRIPTOR(time), offset => INTERVAL 3 SECONDS)),"
        " time_field => DESCRIPTOR(time), window_length => INTERVAL 60 SECONDS, hop => INTERVAL 20 SECONDS,"
        " offset => INTERVAL 5 SECONDS) e GROUP BY window_start, window_end, team TRIGGER ON WATERMARK"
    )
    changes, batch = stream_and_batch(sql)
    assert not any(c.get("sys.undo") for c in changes)  # each window once
    expected: Counter = Counter()
    for r in pv.read_csv(in_dir / "events.csv").to_pylist():
        t = _us(r["time"])
        start = (t - 5_000_000) // 20_000_000 * 20_000_000 + 5_000_000
        while start + 60_000_000 > t:
            expected[(start, start + 60_000_000, r["team"])] += 1
            start -= 20_000_000
    got = {
        (
            _us(dt.datetime.fromisoformat(r["window_start"])),
            _us(dt.datetime.fromisoformat(r["window_end"])),
            r["team"],
        ): r["n"]
        for r in batch
    }
    assert got == dict(expected)


def test_stream_json_is_written_while_the_input_is_read(in_dir, monkeypatch):
    from tidal.sql import planner
    from tidal.sql.output import ChangelogSink

    monkeypatch.setattr(planner, "BATCH_ROWS", 10)
    (in_dir / "n.csv").write_text("x\n" + "\n".join(str(i) for i in range(50)) + "\n")
    q = plan("SELECT x FROM 'n.csv' WHERE x % 2 = 0")
    seen_at = []
    q.run(ChangelogSink(q.visible_names(), ["x"], lambda t, undo, row: seen_at.append(q.stats.rows_read)))
    assert len(seen_at) == 25 and seen_at[0] == 10 and seen_at[-1] == 50


def test_percentile_watermark_routes_late_rows(in_dir):
    secs = [4, 7, 2, 3, 8, 10, 9, 1, 12, 11, 30, 5]  # after 5 records the watermark is 7 (section 2.5)
    lines = ["team,time"] + [f"t{i % 2},{BASE + dt.timedelta(seconds=s)}" for i, s in enumerate(secs)]
    (in_dir / "p.csv").write_text("\n".join(lines) + "\n")
    sql = (
        "SELECT team, COUNT(*) AS n FROM percentile_watermark(source => TABLE('p.csv'), time_field => DESCRIPTOR(time),"
        " events => 5, percentile => 20, frequency => 5) e GROUP BY team"
    )
    q = plan(sql, late_path=str(in_dir / "late.json"))
    got = {r["team"]: r["n"] for r in q.result().to_pylist()}
    late = [json.loads(x) for x in (in_dir / "late.json").read_text().splitlines()]
    assert q.stats.late == len(late) >= 2  # 1 s (watermark 9) and 5 s (watermark 11) are behind it
    assert sum(got.values()) == len(secs) - len(late)
    stream_and_batch(sql)
