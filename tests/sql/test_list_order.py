"""list(x) keeps the rows' order (file order, or event time) on the engine's paths, against DuckDB.

A plan that put a group's rows at one tick lost their order: list(x) came out with equal values
next to each other (['a', 'a', 'b'] for rows a, b, a), through a subquery (the aggregate and trigger
fused into final values) and over tumbling windows. DuckDB's oracle orders its list by row position."""

from __future__ import annotations

import contextlib

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tidal.sql import plan

TUMBLE = "tumble(source => TABLE('t.parquet'), time_field => DESCRIPTOR(ts), window_length => INTERVAL 1 MINUTE)"
QUERIES = [
    # (tidal, DuckDB's spelling with the order made explicit)
    (
        "SELECT k, list(s) AS v FROM (SELECT k, s FROM 't.parquet' WHERE pos >= 0) GROUP BY k",
        "SELECT k, list(s ORDER BY pos) AS v FROM t GROUP BY k",
    ),
    (
        f"SELECT window_start, list(s) AS v FROM {TUMBLE} GROUP BY window_start",
        "SELECT time_bucket(INTERVAL 1 MINUTE, ts) AS window_start, list(s ORDER BY ts, pos) AS v FROM t GROUP BY 1",
    ),
    (
        "SELECT k, list(s) AS v, count(*) AS n FROM 't.parquet' GROUP BY k",
        "SELECT k, list(s ORDER BY pos) AS v, count(*) AS n FROM t GROUP BY k",
    ),
]


@pytest.mark.parametrize("sql, oracle", QUERIES, ids=["subquery", "tumble", "file"])
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    rows=st.lists(
        st.tuples(st.integers(0, 2), st.sampled_from(["a", "b", "c", None]), st.integers(0, 200)), max_size=20
    )
)
def test_list_keeps_row_order(tmp_path, sql, oracle, rows):
    # in time order, one row per instant: rows at the same event time form a multiset in the temporal
    # model (their list groups equal values together; agg.list_agg's docstring)
    rows = sorted({r[2]: r for r in rows}.values(), key=lambda r: r[2])
    table = pa.table(
        {
            "k": pa.array([r[0] for r in rows], pa.int64()),
            "s": pa.array([r[1] for r in rows], pa.string()),
            "ts": pa.array([r[2] for r in rows], pa.int64()).cast(pa.timestamp("s")),
            "pos": pa.array(range(len(rows)), pa.int64()),
        }
    )
    pq.write_table(table, tmp_path / "t.parquet")
    with contextlib.chdir(tmp_path):
        got = plan(sql).result().to_pylist()
    con = duckdb.connect()
    con.register("t", table)
    want = con.sql(oracle).to_arrow_table().to_pylist()
    key = sorted(got[0]) if got else []
    assert sorted(got, key=repr) == sorted(want, key=repr), (sql, key)
