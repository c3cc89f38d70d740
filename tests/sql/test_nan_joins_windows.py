"""NaN in join keys and in window functions' PARTITION BY / ORDER BY / frames, as DuckDB has it: NaN
equals NaN (so NaN keys join and share a partition or a peer group) and sorts as the largest number.
Checked against DuckDB with hypothesis on columns holding NaN, infinities, -0.0 and NULLs (issue 18);
also CSV fields 'nan' / 'NA' / 'NULL', which DuckDB reads as NaN and text, not NULL."""

from __future__ import annotations

import contextlib
import math

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import given, settings
from hypothesis import strategies as st

from tidal.sql import plan

from .test_nan_comparisons import canonical, tidal_and_duckdb

VALUES = st.sampled_from([math.nan, -math.inf, math.inf, -1.5, -0.0, 0.0, 2.0, 7.25, None])

JOINS = [
    "SELECT l.i, r.i AS j FROM 't.parquet' l JOIN 't.parquet' r ON l.f = r.g",
    "SELECT l.i, r.i AS j FROM 't.parquet' l LEFT JOIN 't.parquet' r ON l.f = r.f",
    "SELECT l.i, r.i AS j FROM 't.parquet' l FULL OUTER JOIN 't.parquet' r ON l.f = r.g",
    "SELECT l.i, r.i AS j FROM 't.parquet' l JOIN 't.parquet' r ON l.f = r.f AND l.k = r.k",
    "SELECT l.i, r.i AS j FROM 't.parquet' l JOIN 't.parquet' r ON l.f = r.g AND l.i < r.i",
    "SELECT l.i, r.i AS j FROM 't.parquet' l LEFT JOIN 't.parquet' r ON l.g = r.f AND r.i % 2 = 0",
    "SELECT i FROM 't.parquet' l WHERE f IN (SELECT g FROM 't.parquet')",
    "SELECT i FROM 't.parquet' l WHERE EXISTS (SELECT 1 FROM 't.parquet' r WHERE r.g = l.f)",
    "SELECT i FROM 't.parquet' l WHERE NOT EXISTS (SELECT 1 FROM 't.parquet' r WHERE r.g = l.f)",
    "SELECT l.i, r.i AS j FROM 't.parquet' l JOIN 't.parquet' r USING (f)",
    "SELECT f, count(*) AS n FROM 't.parquet' GROUP BY f",
    "SELECT DISTINCT g FROM 't.parquet'",
]

WINDOWS = [
    "SELECT i, row_number() OVER (PARTITION BY f ORDER BY i) AS r FROM 't.parquet'",
    "SELECT i, count(*) OVER (PARTITION BY f) AS n, sum(i) OVER (PARTITION BY f) AS s FROM 't.parquet'",
    "SELECT i, rank() OVER (ORDER BY f) AS r, dense_rank() OVER (ORDER BY f DESC) AS d FROM 't.parquet'",
    "SELECT i, rank() OVER (ORDER BY f NULLS FIRST) AS r, percent_rank() OVER (ORDER BY g DESC NULLS LAST) AS p"
    " FROM 't.parquet'",
    "SELECT i, row_number() OVER (ORDER BY f DESC, i) AS r, lag(f) OVER (ORDER BY f, i) AS lf FROM 't.parquet'",
    "SELECT i, sum(g) OVER (ORDER BY f, i ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING) AS s FROM 't.parquet'",
    "SELECT i, sum(g) OVER (ORDER BY f) AS s, count(g) OVER (ORDER BY f) AS c FROM 't.parquet'",
    "SELECT i, min(g) OVER (PARTITION BY f) AS lo, max(g) OVER (PARTITION BY f) AS hi FROM 't.parquet'",
    "SELECT i, max(f) OVER (ORDER BY i ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS m,"
    " min(f) OVER (ORDER BY i) AS lo FROM 't.parquet'",
    "SELECT i, avg(g) OVER (PARTITION BY k ORDER BY i ROWS UNBOUNDED PRECEDING) AS a FROM 't.parquet'",
    "SELECT i, first_value(i) OVER (PARTITION BY f ORDER BY g, i) AS fv, cume_dist() OVER (ORDER BY g) AS c"
    " FROM 't.parquet'",
    "SELECT * FROM (SELECT i, f, row_number() OVER (PARTITION BY f ORDER BY g DESC, i) AS r FROM 't.parquet')"
    " WHERE r <= 2",
]


def _table(f, g):
    n = len(f)
    return pa.table(
        {
            "i": pa.array(range(n), pa.int64()),
            "k": pa.array([i % 3 for i in range(n)], pa.int64()),
            "f": pa.array(f, pa.float64()),
            "g": pa.array(g[:n], pa.float64()),
        }
    )


def _same(got, want):
    # -0.0 and 0.0 are one value (equal keys): compare them as one
    def norm(rows):
        return [{k: (0.0 if v == 0 and isinstance(v, float) else v) for k, v in r.items()} for r in rows]

    assert canonical(norm(got)) == canonical(norm(want))


@settings(max_examples=60, deadline=None)
@given(
    f=st.lists(VALUES, min_size=1, max_size=10),
    g=st.lists(VALUES, min_size=10, max_size=10),
    sql=st.sampled_from(JOINS),
)
def test_nan_join_keys_match_as_in_duckdb(tmp_path_factory, f, g, sql):
    table = _table(f, g)
    directory = tmp_path_factory.mktemp("nanjoin")
    pq.write_table(table, directory / "t.parquet")
    got, want = tidal_and_duckdb(sql, table, directory)
    _same(got, want)


@settings(max_examples=60, deadline=None)
@given(
    f=st.lists(VALUES, min_size=1, max_size=10),
    g=st.lists(st.sampled_from([math.nan, -math.inf, math.inf, -1.5, 0.0, 2.0, 7.25, None]), min_size=10, max_size=10),
    sql=st.sampled_from(WINDOWS),
)
def test_nan_in_window_functions_as_in_duckdb(tmp_path_factory, f, g, sql):
    table = _table(f, g)
    directory = tmp_path_factory.mktemp("nanwin")
    pq.write_table(table, directory / "t.parquet")
    got, want = tidal_and_duckdb(sql, table, directory)
    _same(got, want)


def test_csv_nan_and_na_fields_are_values_not_nulls(tmp_path):
    (tmp_path / "n.csv").write_text("a,b,c\n1,NA,nan\n2,NULL,inf\n3,,-nan\n4,x,1.5\n5,n/a,NaN\n")
    sql = "SELECT a, b, b IS NULL AS bn, c, c IS NULL AS cn FROM 'n.csv' ORDER BY a"
    with contextlib.chdir(tmp_path):
        got = plan(sql).result().to_pylist()
        want = duckdb.sql(sql).arrow()
        want = (want.read_all() if hasattr(want, "read_all") else want).to_pylist()
    _same(got, want)
    assert [r["bn"] for r in got] == [False, False, True, False, False]
