"""Times used as markers (issue: fuzz8's audit). Ticks are int64 and may be negative (before 1970 in
SQL), so no operator may take 0 or -1 for "no time yet": each test here drives one operator with times
around -1 and 0, far before 1970 and at the start of the range, in random batches, against a plain model
written from the operator's documented semantics."""

from __future__ import annotations

import contextlib
import csv

import duckdb
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tidal
from tidal import agg
from tidal.core.batch import EventBatch
from tidal.core.errors import PlanError
from tidal.core.time import EARLIEST, INFINITY, LATEST, MAX_SPAN
from tidal.ops.base import Consumer
from tidal.ops.empty_default import EmptyDefaultOp
from tidal.plan.nodes import relational as rel
from tidal.sql import plan
from tidal.stream.streamable import Stream
from tidal.testing import Reference, assert_same_snapshots

BASES = [0, -3, -20, -(2**40), EARLIEST]  # -3, -20: times around -1 and 0


class _Collect(Consumer):
    """Every message in order: ("b", sync, other, row), ("p", time), ("c",)."""

    def __init__(self):
        self.log: list[tuple] = []

    def on_batch(self, batch: EventBatch) -> None:
        rows = list(zip(*(batch.columns[n].to_pylist() for n in batch.columns), strict=True))
        self.log += [("b", s, o, r) for s, o, r in zip(batch.sync.tolist(), batch.other.tolist(), rows, strict=True)]

    def on_punctuation(self, time: int) -> None:
        self.log.append(("p", time))

    def on_completed(self) -> None:
        self.log.append(("c",))


@st.composite
def relational_changes(draw):
    """Messages of a global aggregate's result: start edges, end edges retracting live ones and intervals,
    in time order, with punctuations between batches, ending at completion or a punctuation at INFINITY."""
    base = draw(st.sampled_from(BASES))
    t, live, msgs = base, [], []
    for _ in range(draw(st.integers(0, 8))):
        if draw(st.integers(0, 3)) == 0:  # a punctuation, at or beyond the last time
            t += draw(st.integers(0, 3))
            msgs.append(("p", t))
            continue
        batch = []
        for _ in range(draw(st.integers(1, 4))):
            t += draw(st.integers(0, 2))
            kind = draw(st.integers(0, 2))
            if kind == 0 and live:  # retract a live row
                s, v = live.pop(draw(st.integers(0, len(live) - 1)))
                batch.append((t, s, v))
            elif kind == 1:  # an interval: alive a while, then gone
                batch.append((t, t + draw(st.integers(1, 3)), draw(st.integers(0, 9))))
            else:
                v = draw(st.integers(0, 9))
                live.append((t, v))
                batch.append((t, INFINITY, v))
        msgs.append(("b", batch))
    msgs.append(("p", INFINITY) if draw(st.booleans()) else ("c",))
    return msgs


def _expected(msgs) -> int | None:
    """The default row's time (None: no row, something is alive at the end) per the operator's docstring:
    the last time reached (an event's sync time or a punctuation), tick 0 when none was reached."""
    alive, reached = 0, None
    for m in msgs:
        times = [s for s, _, _ in m[1]] if m[0] == "b" else [m[1]] if m[0] == "p" and m[1] < INFINITY else []
        for s in times:
            reached = s if reached is None else max(reached, s)
        if m[0] == "b":
            alive += sum(1 for s, o, _ in m[1] if o == INFINITY) - sum(1 for s, o, _ in m[1] if o < s)
    return None if alive else 0 if reached is None else reached


@given(msgs=relational_changes())
def test_the_empty_default_row_comes_at_the_last_time_reached_negative_times_too(msgs):
    schema = pa.schema([("n", pa.int64())])
    op, sink = EmptyDefaultOp(schema, {"n": -1}), _Collect()
    op.downstream = [sink]
    for m in msgs:
        if m[0] == "b":
            s, o, v = zip(*m[1], strict=True)
            op.on_batch(EventBatch(np.array(s, np.int64), np.array(o, np.int64), {"n": pa.array(v, pa.int64())}))
        elif m[0] == "p":
            op.on_punctuation(m[1])
        else:
            op.on_completed()
    at = _expected(msgs)
    defaults = [e for e in sink.log if e[0] == "b" and e[3] == (-1,)]
    assert defaults == ([] if at is None else [("b", at, INFINITY, (-1,))])
    # the input passes through unchanged, and nothing is stamped before a punctuation already given
    assert [e for e in sink.log if e[0] == "b" and e[3] != (-1,)] == [
        ("b", s, o, (v,)) for m in msgs if m[0] == "b" for s, o, v in m[1]
    ]
    punctuated = EARLIEST - 1
    for e in sink.log:
        if e[0] == "p":
            punctuated = max(punctuated, e[1])
        elif e[0] == "b":
            assert e[1] >= punctuated, sink.log


def test_a_count_that_ends_before_1970_gets_its_zero_row_there_not_at_0():
    """Rows alive over [-10, -3) and nothing after: the count over no rows is 0 from -3 on (at tick 0
    before the fix: no row at all over [-3, 0))."""
    table = pa.table(
        {
            "sync_time": pa.array([-10, -3], pa.int64()),
            "other_time": pa.array([INFINITY, -10], pa.int64()),
            "v": pa.array([1, 1], pa.int64()),
        }
    )
    counted = tidal.from_arrow(table, time="sync_time", other="other_time").aggregate(n=agg.count())
    out = Stream(rel.EmptyDefault(counted.node, {"n": 0})).to_arrow()
    expected = Reference(("n",), [(-10, -3, (1,)), (-3, INFINITY, (0,))])
    assert_same_snapshots(out, expected)


# -- SQL event time without a watermark: nothing is late, however far apart the times ------------------
NEAR = st.sampled_from([EARLIEST + 20, -(2**40), -3, LATEST - 40])


@settings(max_examples=25, deadline=None)
@given(
    rows=st.lists(st.tuples(NEAR, st.integers(0, 9), st.integers(-5, 5)), min_size=1, max_size=20),
    order=st.randoms(use_true_random=False),
)
def test_sql_event_time_without_a_watermark_keeps_every_row_across_the_whole_range(tmp_path_factory, rows, order):
    """No watermark generator: the sort waits for the end of input and no row is late. Its latency was 2**62,
    less than the range of event times (2**63 - 1 ticks): after a row near 2**62, one near -2**62 was dropped."""
    rows = [(base + k, k % 3, v) for base, k, v in rows]
    order.shuffle(rows)  # arrival order: anything
    directory = tmp_path_factory.mktemp("t")
    with open(directory / "w.csv", "w", newline="") as f:
        csv.writer(f).writerows([("t", "k", "v"), *rows])
    sql = (
        "SELECT epoch_us(window_start) AS ws, k, count(*) AS n, sum(v) AS s FROM tumble(source => TABLE('w.csv'),"
        " time_field => DESCRIPTOR(t), window_length => INTERVAL 10 MICROSECONDS) GROUP BY window_start, k"
    )
    with contextlib.chdir(directory):
        q = plan(sql)
        got = sorted(tuple(r.values()) for r in q.result().to_pylist())
    assert q.stats.late == 0
    con = duckdb.connect()
    con.execute("CREATE TABLE e(t BIGINT, k BIGINT, v BIGINT)")
    con.executemany("INSERT INTO e VALUES (?, ?, ?)", rows)
    # windows by floor division (DuckDB's // truncates toward zero)
    want = con.execute("SELECT t - ((t % 10) + 10) % 10 AS ws, k, count(*), sum(v) FROM e GROUP BY ALL").fetchall()
    assert got == sorted(want)


def test_a_trigger_delay_longer_than_the_longest_span_is_refused(tmp_path):
    """A deadline is a tick plus the delay: a delay near 2**63 put firings beyond the range of event times
    (9.2e18 for INTERVAL 106700000 DAYS) and one past INFINITY fired at end of input instead (earlier)."""
    (tmp_path / "d.csv").write_text("k,t\na,1969-12-31 23:59:58\na,1970-01-01 00:00:03\n")
    sql = (
        "SELECT k, count(*) AS n FROM max_diff_watermark(source => TABLE('d.csv'), time_field => DESCRIPTOR(t),"
        " offset => INTERVAL 1 SECOND) GROUP BY k TRIGGER AFTER DELAY INTERVAL {} DAYS"
    )
    day = 86_400_000_000
    with contextlib.chdir(tmp_path):
        with pytest.raises(PlanError, match=r"TRIGGER AFTER DELAY: the delay .* longest supported span, 2\*\*61"):
            plan(sql.format(106_700_000)).changelog()
        longest = MAX_SPAN // day  # the longest delay in whole days: each change pushes its key's deadline back
        log = plan(sql.format(longest)).changelog().to_pylist()
    assert [(r["time"], r["n"]) for r in log] == [(3_000_000 + longest * day, 2)]


@settings(max_examples=20, deadline=None)
@given(
    times=st.lists(st.tuples(NEAR, st.integers(0, 9)), min_size=1, max_size=8),
    # (SQL reads INTERVAL n MICROSECONDS through a double, as DuckDB does: 2**61 is exact)
    offset=st.sampled_from([0, -3, 7, MAX_SPAN, -MAX_SPAN]),
)
def test_sql_tumble_columns_near_the_ends_of_the_range_equal_duckdb(tmp_path_factory, times, offset):
    """``tumble``'s window columns for times near both ends of the range and offsets up to the longest span
    (an offset beyond it is refused: ``t - offset`` wrapped in int64 and put rows in windows off the grid)."""
    rows = sorted(base + k for base, k in times)
    directory = tmp_path_factory.mktemp("t")
    (directory / "w.csv").write_text("t\n" + "".join(f"{t}\n" for t in rows))
    sql = (
        "SELECT t, epoch_us(window_start) AS ws, epoch_us(window_end) AS we FROM tumble(source => TABLE('w.csv'),"
        f" time_field => DESCRIPTOR(t), window_length => INTERVAL 10 MICROSECONDS, offset => INTERVAL {offset}"
        " MICROSECONDS)"
    )
    with contextlib.chdir(directory):
        got = sorted(tuple(r.values()) for r in plan(sql).result().to_pylist())
        with pytest.raises(PlanError, match=r"tumble\(\.\.\.\): the offset .* longest supported span"):
            # (this offset, a multiple of 10, put a row near 2**62 in [...551616, ...561616) off the grid)
            plan(sql.replace(f"INTERVAL {offset} MICRO", "INTERVAL -9218880000000000000 MICRO")).result()
    con = duckdb.connect()
    con.execute("CREATE TABLE e(t BIGINT)")
    con.executemany("INSERT INTO e VALUES (?)", [(t,) for t in rows])
    m, off = 10, offset % 10  # the grid: offset + k * 10 (DuckDB's % keeps the sign: made non-negative here)
    want = con.execute(f"SELECT t, t - (((t - {off}) % {m}) + {m}) % {m} AS ws, ws + {m} FROM e").fetchall()
    assert got == sorted(want)
