"""SQL window functions against DuckDB on the same data: fixed queries and random ones (hypothesis)."""

from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tidal.core.errors import TidalError
from tidal.sql import plan

from .test_conformance_expressions import _both

T = pa.table(
    {
        "id": pa.array(range(12), pa.int64()),
        "g": pa.array(["a", "b", "a", None, "b", "a", "c", "b", None, "a", "c", "a"]),
        "x": pa.array([5, 3, None, 3, 7, 1, 2, 2, 9, 5, None, 4], pa.int64()),
        "f": pa.array([0.5, 1.5, -2.0, None, 3.0, 0.5, 1.0, 2.5, None, 4.0, -1.0, 0.25]),
        "s": pa.array(["q", "b", "z", "a", None, "m", "c", "x", "y", "b", "k", "d"]),
    }
)


@pytest.fixture
def where(tmp_path):
    pq.write_table(T, tmp_path / "t.parquet")
    return tmp_path


FIXED = [
    "SELECT id, row_number() OVER (ORDER BY id DESC) FROM 't.parquet'",
    "SELECT id, g, row_number() OVER (PARTITION BY g ORDER BY x, id) FROM 't.parquet'",
    "SELECT id, rank() OVER (ORDER BY x), dense_rank() OVER (ORDER BY x DESC NULLS FIRST) FROM 't.parquet'",
    "SELECT id, percent_rank() OVER (PARTITION BY g ORDER BY x), cume_dist() OVER (ORDER BY x) FROM 't.parquet'",
    "SELECT id, ntile(3) OVER (ORDER BY id), ntile(5) OVER (PARTITION BY g ORDER BY id) FROM 't.parquet'",
    "SELECT id, lag(x) OVER (ORDER BY id), lead(s, 2, 'none') OVER (PARTITION BY g ORDER BY id) FROM 't.parquet'",
    "SELECT id, first_value(s) OVER (PARTITION BY g ORDER BY id), last_value(x) OVER (ORDER BY x, id) FROM 't.parquet'",
    "SELECT id, SUM(x) OVER (), COUNT(*) OVER (PARTITION BY g), COUNT(x) OVER (PARTITION BY g) FROM 't.parquet'",
    "SELECT id, SUM(x) OVER (ORDER BY x), AVG(f) OVER (PARTITION BY g ORDER BY id) FROM 't.parquet'",
    "SELECT id, MIN(s) OVER (PARTITION BY g), MAX(x) OVER (ORDER BY id), MIN(f) OVER (ORDER BY f DESC) "
    "FROM 't.parquet'",
    "SELECT id, SUM(x) OVER (ORDER BY id ROWS BETWEEN 2 PRECEDING AND 1 FOLLOWING) FROM 't.parquet'",
    "SELECT id, MAX(s) OVER (ORDER BY id ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING) FROM 't.parquet'",
    "SELECT id, COUNT(x) OVER (PARTITION BY g ORDER BY id ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) "
    "FROM 't.parquet'",
    "SELECT id, SUM(f) OVER (ORDER BY x RANGE BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING) FROM 't.parquet'",
    "SELECT id, x - lag(x, 1, 0) OVER (ORDER BY id) AS delta FROM 't.parquet' WHERE id > 2",
    "SELECT g, SUM(x) AS s, rank() OVER (ORDER BY SUM(x) DESC NULLS LAST) FROM 't.parquet' GROUP BY g",
    "SELECT g, COUNT(*), SUM(COUNT(*)) OVER () FROM 't.parquet' GROUP BY g",
    "SELECT DISTINCT g, COUNT(*) OVER (PARTITION BY g) FROM 't.parquet'",
    "SELECT id, bool_or(x > 4) OVER (PARTITION BY g), bool_and(f > 0) OVER (ORDER BY id) FROM 't.parquet'",
]


@pytest.mark.parametrize("sql", FIXED)
def test_window_functions_match_duckdb(where, sql):
    got, want = _both(sql, where)
    assert got == want, f"{sql}\n tidal:  {got}\n duckdb: {want}"


@pytest.mark.parametrize(
    "sql, named",
    [
        ("SELECT id FROM 't.parquet' WHERE row_number() OVER () > 1", "SELECT list only"),
        ("SELECT id, SUM(x) OVER w FROM 't.parquet' WINDOW w AS (ORDER BY id ROWS 1 PRECEDING)", "frame clause"),
        ("SELECT SUM(x) OVER (ORDER BY x RANGE BETWEEN 1 PRECEDING AND CURRENT ROW) FROM 't.parquet'", "RANGE"),
        ("SELECT COUNT(DISTINCT x) OVER () FROM 't.parquet'", "DISTINCT"),
        ("SELECT SUM(s) OVER () FROM 't.parquet'", "not supported"),
        ("SELECT id FROM 't.parquet' ORDER BY row_number() OVER (ORDER BY x)", "ORDER BY"),
    ],
)
def test_unsupported_window_constructs_are_named(where, sql, named):
    old = os.getcwd()
    os.chdir(where)
    try:
        with pytest.raises(TidalError) as err:
            plan(sql).result()
    finally:
        os.chdir(old)
    assert named in str(err.value)


FUNCTIONS = [
    "row_number()",
    "rank()",
    "dense_rank()",
    "percent_rank()",
    "cume_dist()",
    "ntile(3)",
    "lag(v)",
    "lead(v, 2, -1)",
    "first_value(v)",
    "last_value(v)",
    "SUM(v)",
    "COUNT(v)",
    "COUNT(*)",
    "AVG(v)",
    "MIN(v)",
    "MAX(v)",
]
FRAMES = [
    "",
    " ROWS BETWEEN 1 PRECEDING AND CURRENT ROW",
    " ROWS BETWEEN UNBOUNDED PRECEDING AND 2 FOLLOWING",
    " ROWS BETWEEN 2 PRECEDING AND 1 PRECEDING",
    " ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING",
    " RANGE BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING",
]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    rows=st.lists(st.tuples(st.sampled_from([0, 1, 2, None]), st.one_of(st.none(), st.integers(-3, 3))), max_size=14),
    fn=st.sampled_from(FUNCTIONS),
    partitioned=st.booleans(),
    order=st.sampled_from(["", "ORDER BY id", "ORDER BY v, id", "ORDER BY v DESC NULLS FIRST, id"]),
    frame=st.sampled_from(FRAMES),
)
def test_random_window_calls_match_duckdb(tmp_path, rows, fn, partitioned, order, frame):
    """Every function over random partitions, orders (ties broken by a unique id, so the answer is
    determined) and frames; frames apply to aggregates and first/last value only, as in SQL."""
    table = pa.table(
        {
            "id": pa.array(range(len(rows)), pa.int64()),
            "k": pa.array([r[0] for r in rows], pa.int64()),
            "v": pa.array([r[1] for r in rows], pa.int64()),
        }
    )
    pq.write_table(table, tmp_path / "r.parquet")
    framed = fn.split("(")[0].upper() in ("SUM", "COUNT", "AVG", "MIN", "MAX", "FIRST_VALUE", "LAST_VALUE")
    over = " ".join(p for p in ("PARTITION BY k" if partitioned else "", order) if p)
    if framed and order:
        over += frame
    if not order and fn.split("(")[0] in ("row_number", "ntile", "lag", "lead", "first_value", "last_value"):
        over = " ".join(p for p in ("PARTITION BY k" if partitioned else "", "ORDER BY id") if p)
    sql = f"SELECT id, k, v, {fn} OVER ({over}) AS w FROM 'r.parquet'"
    got, want = _both(sql, tmp_path)
    assert got == want, f"{sql}\n tidal:  {got}\n duckdb: {want}"
