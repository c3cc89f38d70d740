"""A GROUP BY over rows in event time without a TRIGGER clause runs as one operator that computes only the
final values (``tidal.plan.rules.final_values``): its output events (times included) equal those of the
aggregate and trigger run apart, under random disorder, late rows, nulls and batch sizes."""

from __future__ import annotations

import datetime as dt

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tidal.io.egress import CollectSink
from tidal.plan.rules import RULES
from tidal.plan.rules.final_values import final_values
from tidal.sql import plan
from tidal.stream.query import Query

BASE = dt.datetime(2024, 6, 1, 18, 0, 0)
BEFORE_1970 = dt.datetime(1969, 12, 31, 23, 59, 30)  # rows across the epoch: negative ticks, -1 and 0 no markers
WATERMARKED = (
    "max_diff_watermark(source => TABLE('e.csv'), time_field => DESCRIPTOR(t), offset => INTERVAL {lag} SECONDS)"
)
QUERIES = [
    "SELECT k, COUNT(*) AS n, SUM(v) AS s, MIN(v) AS lo, AVG(v) AS a, COUNT(DISTINCT v) AS d FROM {src} e GROUP BY k",
    "SELECT window_start, k, COUNT(*) AS n, SUM(v) AS s FROM tumble(source => TABLE({src}), "
    "time_field => DESCRIPTOR(t), window_length => INTERVAL 10 SECONDS) e GROUP BY window_start, k",
    "SELECT COUNT(*) AS n, MAX(v) AS hi FROM {src} e WHERE v IS NOT NULL",
    "SELECT DISTINCT k FROM {src} e",
    # an aggregate of final values: start edges once per key at end of input, so final values again
    "SELECT n, COUNT(*) AS c, SUM(s) AS total FROM (SELECT k, COUNT(*) AS n, SUM(v) AS s FROM {src} e GROUP BY k) g"
    " GROUP BY n",
]


def _events(sql: str, fused: bool) -> list[dict]:
    q = plan(sql)
    stream = q.stream()
    sink = CollectSink(stream.schema)
    rules = RULES if fused else tuple(r for r in RULES if r is not final_values)
    Query([stream.node], [sink], rules=rules).run()
    return sink.table().to_pylist()


rows = st.lists(
    st.tuples(st.integers(0, 60), st.sampled_from("abc"), st.one_of(st.none(), st.integers(-5, 20))),
    min_size=1,
    max_size=60,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=rows, lag=st.integers(0, 8), query=st.sampled_from(QUERIES), base=st.sampled_from([BASE, BEFORE_1970]))
def test_final_values_equal_the_aggregate_and_trigger_apart(in_dir, rows, lag, query, base):
    rows = [*rows, (30, "a", 1)]  # one number at least: a column of nulls only would be read as text
    lines = ["t,k,v"] + [f"{base + dt.timedelta(seconds=s)},{k},{'' if v is None else v}" for s, k, v in rows]
    (in_dir / "e.csv").write_text("\n".join(lines) + "\n")
    sql = query.format(src=WATERMARKED.format(lag=lag))
    assert _events(sql, fused=True) == _events(sql, fused=False)


def test_the_rule_applies_only_without_trigger_rules(in_dir):
    (in_dir / "e.csv").write_text(f"t,k,v\n{BASE},a,1\n{BASE + dt.timedelta(seconds=3)},b,2\n")
    src = WATERMARKED.format(lag=1)
    fused = plan(f"SELECT k, COUNT(*) AS n FROM {src} e GROUP BY k").explain()
    assert "values at end of input" in fused
    for clause in ("TRIGGER ON WATERMARK", "TRIGGER COUNTING 1", "TRIGGER AFTER DELAY INTERVAL 1 SECOND"):
        assert (
            "values at end of input" not in plan(f"SELECT k, COUNT(*) AS n FROM {src} e GROUP BY k {clause}").explain()
        )
    # FIRST/LAST depend on the rows' order in time: left to the aggregate and trigger
    assert "values at end of input" not in plan(f"SELECT k, FIRST(v) AS f FROM {src} e GROUP BY k").explain()
