"""ORDER BY ... LIMIT/OFFSET and DISTINCT over changing results: the ``stream-json`` changelog
carries the limited window as it changes (retractions included), its net effect is the
``batch-json`` answer, the answer is DuckDB's (ties broken by every column, as tidal does), and
at every instant the window is the right one for the snapshot of the unlimited query."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pyarrow as pa
import pyarrow.csv as pv
import pytest

from tidal.sql import plan

from .test_triggers import duck, stream_and_batch


def write_rows(path, n: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    v = rng.integers(-5, 20, n).astype(object)
    v[rng.random(n) < 0.1] = None
    pv.write_csv(pa.table({"k": rng.choice(list("abcdefg"), n), "v": pa.array(list(v), pa.int64())}), path)


def snapshots(log: list[dict], names: list[str]) -> dict[int, Counter]:
    """The snapshot after each tick of a changelog."""
    out: dict[int, Counter] = {}
    current: Counter = Counter()
    for rec in log:
        row = tuple(rec[n] for n in names)
        current[row] += -1 if rec["undo"] else 1
        out[rec["time"]] = +current
    return out


def window(snapshot: Counter, s_index: int, limit: int, offset: int) -> Counter:
    """Rows ordered by s DESC NULLS FIRST, then every column ascending (nulls last)."""

    def key(row):
        s = row[s_index]
        return (s is not None, -(s or 0), *[(x is None, x if x is not None else 0) for x in row])

    rows = sorted(snapshot.elements(), key=key)
    return Counter(rows[offset : offset + limit])


@pytest.mark.parametrize(("limit", "offset", "seed"), [(3, 0, 1), (2, 1, 2), (4, 2, 3)])
def test_limit_window_over_a_changing_aggregate(in_dir, limit, offset, seed):
    write_rows(in_dir / "r.csv", 120, seed)
    base = "SELECT k, count(*) AS n, sum(v) AS s FROM 'r.csv' GROUP BY k TRIGGER COUNTING 1"
    sql = f"{base} ORDER BY s DESC NULLS FIRST LIMIT {limit} OFFSET {offset}"
    changes, batch = stream_and_batch(sql)
    assert any(c.get("sys.undo") for c in changes)
    got = [(r["k"], r["n"], r["s"]) for r in plan(sql).result().to_pylist()]
    expected = duck(
        f"SELECT k, count(*) AS n, sum(v) AS s FROM '{in_dir}/r.csv' GROUP BY k"
        f" ORDER BY s DESC NULLS FIRST, k, n, s LIMIT {limit} OFFSET {offset}"
    )
    assert [tuple(r) for r in got] == expected
    # at every instant the window is the one of the unlimited result's snapshot
    names = ["k", "n", "s"]
    full = snapshots(plan(base).changelog().to_pylist(), names)
    limited = snapshots(plan(sql).changelog().to_pylist(), names)
    current: Counter = Counter()
    for t in sorted(full):
        current = limited.get(t, current)  # the window stays as it was at ticks where it did not change
        assert current == window(full[t], 2, limit, offset), t


def test_limit_by_a_hidden_order_key_and_without_order(in_dir):
    write_rows(in_dir / "r.csv", 60, 7)
    sql = "SELECT k FROM 'r.csv' GROUP BY k TRIGGER COUNTING 2 ORDER BY sum(v) LIMIT 2"
    stream_and_batch(sql)
    got = [r["k"] for r in plan(sql).result().to_pylist()]
    assert got == [r[0] for r in duck(f"SELECT k FROM '{in_dir}/r.csv' GROUP BY k ORDER BY sum(v), k LIMIT 2")]
    _, batch = stream_and_batch("SELECT v FROM 'r.csv' LIMIT 5")
    assert len(batch) == 5


def test_distinct_of_a_changing_result_emits_only_real_changes(in_dir):
    (in_dir / "t.csv").write_text("k,v\na,1\nb,2\na,3\nc,4\nb,5\na,6\nc,7\nc,8\nc,9\n")
    sql = "SELECT DISTINCT n FROM (SELECT k, count(*) AS n FROM 't.csv' GROUP BY k TRIGGER COUNTING 1) s"
    changes, batch = stream_and_batch(sql)
    assert sorted(r["n"] for r in batch) == [2, 3, 4]
    # a value is inserted when it first appears and retracted only when no key has it any more
    assert [(c["n"], bool(c.get("sys.undo"))) for c in changes] == [
        (1, False),
        (2, False),
        (3, False),
        (1, True),
        (4, False),
    ]


@pytest.mark.parametrize(
    "join",
    [
        "JOIN 'c.csv' c ON a.k = c.k",
        "LEFT JOIN 'c.csv' c ON a.k = c.k AND a.n > c.lim",
        "FULL JOIN 'c.csv' c ON a.k = c.k AND a.n <= c.lim",
        "ANTI JOIN 'c.csv' c ON a.k = c.k AND a.n > c.lim",
    ],
)
def test_retractions_flow_through_joins(in_dir, join):
    # the left side is a triggered aggregate: its rows are revised (retracted and re-inserted) as counts grow
    write_rows(in_dir / "r.csv", 80, 5)
    (in_dir / "c.csv").write_text("k,lim\na,3\nb,10\nc,0\nz,1\n")
    counts = "SELECT k, count(*) AS n FROM 'r.csv' GROUP BY k TRIGGER COUNTING 1"
    cols = "a.k, a.n" if "ANTI" in join else "a.k, a.n, c.k AS ck, c.lim"
    sql = f"WITH a AS ({counts}) SELECT {cols} FROM a {join}"
    changes, batch = stream_and_batch(sql)
    assert any(c.get("sys.undo") for c in changes)
    oracle = (
        f"WITH a AS (SELECT k, count(*) AS n FROM '{in_dir}/r.csv' GROUP BY k) SELECT {cols} FROM a "
        + join.replace("'c.csv'", f"'{in_dir}/c.csv'")
    )
    key = lambda r: tuple((v is None, v if v is not None else 0) for v in r)  # noqa: E731
    assert sorted((tuple(r.values()) for r in batch), key=key) == sorted(duck(oracle), key=key)


@pytest.mark.parametrize("batch_rows", [7, 65_536])
def test_limit_over_rows_arriving_in_event_time(in_dir, monkeypatch, batch_rows):
    # start edges only (nothing retracted): each tick's rows are cut to the window's size first
    from tidal.sql import planner

    from .test_triggers import write_events

    monkeypatch.setattr(planner, "BATCH_ROWS", batch_rows)
    write_events(in_dir / "events.csv", 300, seed=12, disorder_s=2, teams=4)
    source = (
        "max_diff_watermark(source => TABLE('events.csv'), time_field => DESCRIPTOR(time),"
        " offset => INTERVAL 3 SECONDS) e"
    )
    sql = f"SELECT team, time AS at FROM {source} ORDER BY team DESC, at LIMIT 4 OFFSET 1"
    changes, batch = stream_and_batch(sql)
    assert any(c.get("sys.undo") for c in changes)  # rows enter and leave the window as time goes on
    got = [(r["team"], r["at"]) for r in plan(sql).result().to_pylist()]
    expected = duck(f"SELECT team, time FROM '{in_dir}/events.csv' ORDER BY team DESC, time LIMIT 4 OFFSET 1")
    assert got == expected
    names = ["team", "at"]
    full = snapshots(plan(f"SELECT team, time AS at FROM {source}").changelog().to_pylist(), names)
    limited = snapshots(plan(sql).changelog().to_pylist(), names)
    current: Counter = Counter()
    for t in sorted(full):
        current = limited.get(t, current)
        rows = sorted(full[t].elements(), key=lambda r: r[1])
        rows = sorted(rows, key=lambda r: r[0], reverse=True)  # team desc, then time asc (stable)
        assert current == Counter(rows[1:5]), t
