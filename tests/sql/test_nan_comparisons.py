"""SQL compares floating-point values as DuckDB does: NaN equals NaN and is larger than every other
number (IEEE's comparisons, Python's and numpy's, are false for NaN). Checked against DuckDB on random
columns holding NaN, infinities and NULLs, in WHERE (with and without a Parquet filter pushed into the
reader), in SELECT, with BETWEEN, simple CASE and HAVING."""

from __future__ import annotations

import contextlib
import math

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import given, settings
from hypothesis import strategies as st

from tidal.sql import plan

VALUES = st.sampled_from([math.nan, -math.inf, math.inf, -1.5, 0.0, 2.0, 7.25, None])
CONSTANTS = st.sampled_from(["2.0", "-1", "100", "'nan'::DOUBLE", "'inf'::DOUBLE", "0"])
OPS = st.sampled_from(["=", "<>", "<", "<=", ">", ">="])


def as_rows(rows: list[dict]) -> list[tuple]:
    # NaN as a string: Python's nan is not equal to itself, so lists holding it never compare equal
    return [tuple("NaN" if isinstance(v, float) and math.isnan(v) else v for v in r.values()) for r in rows]


def canonical(rows: list[dict]) -> list[tuple]:
    return sorted(as_rows(rows), key=repr)


def tidal_and_duckdb(sql: str, table: pa.Table, directory) -> tuple[list[dict], list[dict]]:
    """``sql`` over 't.parquet' in ``directory`` by tidal, and by DuckDB over the same rows as an Arrow
    table: pyarrow's Parquet statistics leave NaN out (min = max = the other values) and DuckDB folds a
    comparison the statistics decide, so over the file DuckDB answers NaN <= 2.0 as true."""
    with contextlib.chdir(directory):
        got = plan(sql).result().to_pylist()
    con = duckdb.connect()
    con.register("t_arrow", table)
    want = con.sql(sql.replace("'t.parquet'", "t_arrow")).arrow()
    return got, (want.read_all() if hasattr(want, "read_all") else want).to_pylist()


@settings(max_examples=60, deadline=None)
@given(
    f=st.lists(VALUES, min_size=1, max_size=12),
    g_seed=st.lists(VALUES, min_size=12, max_size=12),
    op=OPS,
    constant=CONSTANTS,
    shape=st.sampled_from(
        ["where_const", "where_cols", "select", "between", "case", "having", "in_filter", "arithmetic"]
    ),
)
def test_nan_compares_as_in_duckdb(tmp_path_factory, f, g_seed, op, constant, shape):
    n = len(f)
    table = pa.table(
        {"i": pa.array(range(n), pa.int64()), "f": pa.array(f, pa.float64()), "g": pa.array(g_seed[:n], pa.float64())}
    )
    directory = tmp_path_factory.mktemp("nan")
    pq.write_table(table, directory / "t.parquet")
    sql = {
        "where_const": f"SELECT i FROM 't.parquet' WHERE f {op} {constant}",
        "where_cols": f"SELECT i FROM 't.parquet' WHERE f {op} g",
        "select": f"SELECT i, f {op} g AS c, f {op} {constant} AS d FROM 't.parquet'",
        "between": f"SELECT i FROM 't.parquet' WHERE f BETWEEN g AND {constant}",
        "case": f"SELECT i, CASE f WHEN {constant} THEN 1 WHEN g THEN 2 ELSE 3 END AS c FROM 't.parquet'",
        "having": f"SELECT i % 3 AS k, max(f) AS m FROM 't.parquet' GROUP BY k HAVING max(f) {op} {constant}",
        "in_filter": f"SELECT i FROM 't.parquet' WHERE NOT (f {op} {constant}) OR g {op} f",
        "arithmetic": f"SELECT i FROM 't.parquet' WHERE (f - g) {op} 0 OR (i % 2) / (i % 2) {op} {constant}",
    }[shape]
    got, want = tidal_and_duckdb(sql, table, directory)
    assert canonical(got) == canonical(want), sql


@settings(max_examples=30, deadline=None)
@given(
    f=st.lists(VALUES, min_size=1, max_size=12),
    desc=st.booleans(),
    nulls_first=st.booleans(),
    limit=st.sampled_from(["", " LIMIT 3"]),
)
def test_order_by_puts_nan_where_duckdb_does(tmp_path_factory, f, desc, nulls_first, limit):
    # NaN is the largest number: last ascending, first descending (Arrow puts it last both ways)
    table = pa.table({"i": pa.array(range(len(f)), pa.int64()), "f": pa.array(f, pa.float64())})
    directory = tmp_path_factory.mktemp("nan_order")
    pq.write_table(table, directory / "t.parquet")
    direction = " DESC" if desc else ""
    nulls = " NULLS FIRST" if nulls_first else " NULLS LAST"
    sql = f"SELECT f, i FROM 't.parquet' ORDER BY f{direction}{nulls}, i{limit}"
    got, want = tidal_and_duckdb(sql, table, directory)
    assert as_rows(got) == as_rows(want), sql


def test_a_row_group_whose_other_values_are_all_equal_keeps_its_nan_rows(tmp_path):
    """Parquet statistics leave NaN out, so a row group of NaN and -inf says min = max = -inf; the
    dataset scanner then took the column for that constant and dropped the NaN row from ``f > 0``
    (CI found it: DuckDB answers NaN > 0 as true)."""
    table = pa.table({"k": pa.array([2, 2], pa.int64()), "f": pa.array([math.nan, -math.inf], pa.float64())})
    pq.write_table(table, tmp_path / "t.parquet")
    for sql in [
        "SELECT k, COUNT(*) AS n FROM 't.parquet' WHERE k <> 2 OR f > 0 GROUP BY k",
        "SELECT k FROM 't.parquet' WHERE f > 0",
        "SELECT k FROM 't.parquet' WHERE f >= 5",
        "SELECT k FROM 't.parquet' WHERE f = 'nan'::DOUBLE",
        "SELECT k FROM 't.parquet' WHERE NOT (f < 0)",
    ]:
        got, want = tidal_and_duckdb(sql, table, tmp_path)
        assert canonical(got) == canonical(want), sql
        assert len(got) == 1, sql


def test_greatest_takes_nan_as_the_largest_number_as_duckdb_does(tmp_path):
    table = pa.table(
        {"k": pa.array([1, 2, 3, 4], pa.int64()), "f": pa.array([math.nan, -math.inf, 1.0, None], pa.float64())}
    )
    pq.write_table(table, tmp_path / "t.parquet")
    sql = (
        "SELECT k, greatest(f, 1) AS a, least(f, 1) AS b, greatest(k, f) AS c, greatest(f, NULL) AS d,"
        " greatest(1.5, f, 2) AS e FROM 't.parquet'"
    )
    got, want = tidal_and_duckdb(sql, table, tmp_path)
    assert canonical(got) == canonical(want)
    assert as_rows([r for r in got if r["k"] == 1])[0][1] == "NaN"
