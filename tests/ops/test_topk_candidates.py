"""TopK's pre-selection on the first ORDER BY key (issue 19): the rows it keeps hold the window exactly, ties at
the cut included; the SQL result of GROUP BY ... ORDER BY aggregate LIMIT equals DuckDB's."""

from __future__ import annotations

import contextlib
import heapq
import math

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import given, settings
from hypothesis import strategies as st

from tidal.ops.topk import _candidates, row_order
from tidal.sql import plan

NUMBERS = st.one_of(
    st.integers(-3, 3),
    st.integers(-(2**63), 2**63 - 1),
    st.sampled_from([0.0, -0.0, 1.5, -2.25, math.inf, -math.inf, math.nan]),
)


@settings(max_examples=150, deadline=None)
@given(
    values=st.lists(st.tuples(NUMBERS, st.integers(0, 5)), min_size=0, max_size=700),
    floats=st.booleans(),
    desc=st.booleans(),
    stop=st.integers(0, 40),
)
def test_candidates_keep_the_window(values, floats, desc, stop):
    rows = [(float(a) if floats else (int(a) if not isinstance(a, float) else 0), b) for a, b in values]
    order = [("a", desc, False)]
    key = row_order([(0, desc, False)], 2)
    kept = _candidates(rows, order, ["a", "b"], stop)
    assert heapq.nsmallest(stop, kept, key=key) == heapq.nsmallest(stop, rows, key=key)
    assert all(r in rows for r in kept)


@settings(max_examples=20, deadline=None)
@given(
    sums=st.lists(st.integers(0, 30), min_size=300, max_size=1200),
    limit=st.integers(1, 12),
    desc=st.booleans(),
)
def test_group_by_order_by_sum_limit_matches_duckdb(tmp_path_factory, sums, limit, desc):
    table = pa.table({"u": pa.array(range(len(sums)), pa.int64()), "v": pa.array(sums, pa.int64())})
    directory = tmp_path_factory.mktemp("topk")
    pq.write_table(table, directory / "t.parquet")
    direction = " DESC" if desc else ""
    sql = f"SELECT u, SUM(v) AS total FROM 't.parquet' GROUP BY u ORDER BY total{direction}, u LIMIT {limit}"
    with contextlib.chdir(directory):
        got = plan(sql).result()
        want = duckdb.connect().sql(sql).fetchall()
    assert list(zip(got.column("u").to_pylist(), got.column("total").to_pylist(), strict=True)) == want
