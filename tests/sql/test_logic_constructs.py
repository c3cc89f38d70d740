"""Constructs DuckDB's SQL logic tests use that tidal refused (or, for a CTE's column names, ignored:
a wrong answer), each against DuckDB: ``WITH t(a, b) AS (...)``, a UNION of text and numbers
(VARCHAR), TRIM/LTRIM/RTRIM with the characters per row, lateral column aliases
(``SELECT 1 AS a, a * 2``) and EXCEPT ALL / INTERSECT ALL (bags: the k-th copy of a row meets the k-th
copy on the other side)."""

from __future__ import annotations

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tidal.core.errors import TidalError
from tidal.sql import plan


@pytest.fixture
def t(in_dir):
    pq.write_table(
        pa.table(
            {
                "i": pa.array([1, None, -3, 7], pa.int64()),
                "s": ["hello", None, "mühleisen", ""],
                "c": ["ho", " ", "mün", None],
                "f": [1.5, 2.0, 1e20, None],
                "b": [True, False, None, True],
            }
        ),
        "t.parquet",
    )


def _rows(sql: str) -> tuple[list[tuple], list[str]]:
    table = plan(sql).result()
    return [tuple(c[k].as_py() for c in table.columns) for k in range(table.num_rows)], table.column_names


def _duck(sql: str) -> tuple[list[tuple], list[str]]:
    rel = duckdb.sql(sql.replace(" FROM t", " FROM read_parquet('t.parquet')"))
    return rel.fetchall(), rel.columns


@pytest.mark.parametrize(
    "sql",
    [
        "WITH cte(x) AS (SELECT 42) SELECT x FROM cte",
        "WITH cte(x, y) AS (SELECT 42, 43) SELECT y, x FROM cte",
        "WITH cte(x) AS (SELECT 42 AS a, 43 AS b) SELECT * FROM cte",  # was a, b: the names were ignored
        "WITH cte(x) AS (SELECT 42 AS a, 43 AS b) SELECT cte.x, b FROM cte",
        "SELECT * FROM (WITH cte(x) AS (SELECT 42) SELECT x FROM cte) v1(a)",
        "WITH c(k, n) AS (SELECT i, f FROM t) SELECT k, n FROM c ORDER BY k NULLS LAST",
    ],
)
def test_cte_column_names(t, sql):
    got, names = _rows(sql)
    want, want_names = _duck(sql)
    assert (got, names) == (want, want_names), sql


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT 1 UNION ALL SELECT 'asdf'",
        "SELECT 1.5 UNION ALL SELECT 'x'",
        "SELECT i FROM t UNION ALL SELECT s FROM t",
        "SELECT s FROM t UNION ALL SELECT f FROM t",
        "SELECT b FROM t UNION ALL SELECT s FROM t",
        "SELECT s, i FROM t UNION SELECT i, s FROM t",
        "SELECT s FROM t EXCEPT SELECT i FROM t",
        "SELECT typeof(x) FROM (SELECT 1 x UNION ALL SELECT 'asdf')",
    ],
)
def test_union_of_text_and_numbers_is_varchar(t, sql):
    got, want = _rows(sql)[0], _duck(sql)[0]
    assert sorted(got, key=repr) == sorted(want, key=repr), sql


def test_trim_characters_per_row(t):
    sql = "SELECT LTRIM(s, c), RTRIM(s, c), TRIM(s, c), TRIM(s, 'o' || c) FROM t"
    assert _rows(sql)[0] == _duck(sql)[0]
    with pytest.raises(TidalError, match="TRIM takes text"):
        plan("SELECT TRIM(s, i) FROM t").result()


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT 1 AS a, a * 2",
        "SELECT 1 AS a, a + 1 AS b, b * 10 AS c",
        "SELECT i * 2 AS j, j + 1 FROM t ORDER BY 1",
        "SELECT i * 2 AS i, i + 1 FROM t",  # i is a column: the alias does not hide it
        "SELECT s || 'x' AS q, upper(q) FROM t ORDER BY q",
        "SELECT i + 1 AS a, a * 2, count(*) OVER () FROM t",
        "SELECT i AS s, s FROM t",
    ],
)
def test_lateral_column_aliases(t, sql):
    got, want = _rows(sql)[0], _duck(sql)[0]
    assert sorted(got, key=repr) == sorted(want, key=repr), sql


def test_lateral_aliases_stay_out_of_grouped_queries(t):
    sql = "SELECT i + 1 AS a, a % 2 AS p, count(*) FROM t GROUP BY a, p"
    with pytest.raises(duckdb.Error):
        _duck(sql)
    with pytest.raises(TidalError, match="unknown column a"):
        plan(sql).result()


BAG = st.lists(st.tuples(st.sampled_from([1, 2, 3, None]), st.sampled_from(["a", "b", None])), max_size=12)


@settings(max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(left=BAG, right=BAG, op=st.sampled_from(["EXCEPT ALL", "INTERSECT ALL"]))
def test_except_and_intersect_all_are_bags(in_dir, left, right, op):
    for name, rows in (("l", left), ("r", right)):
        x, y = zip(*rows, strict=True) if rows else ((), ())
        pq.write_table(pa.table({"x": pa.array(x, pa.int64()), "y": pa.array(y, pa.string())}), f"{name}.parquet")
    sql = f"SELECT x, y FROM l {op} SELECT x, y FROM r"
    got = _rows(sql)[0]
    want = duckdb.sql(sql.replace("FROM l", "FROM 'l.parquet'").replace("FROM r", "FROM 'r.parquet'")).fetchall()
    assert sorted(got, key=repr) == sorted(want, key=repr), sql


def test_except_all_keeps_order_limit_and_names(t):
    sql = (
        "SELECT * FROM (VALUES (1), (2), (2), (3), (3), (3), (4), (NULL)) s(v) EXCEPT ALL "
        "SELECT * FROM (VALUES (3), (2), (5)) u(w) ORDER BY v NULLS FIRST LIMIT 4"
    )
    assert _rows(sql) == _duck(sql)


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT i - 10 AS k FROM t UNION SELECT i - 10 AS l FROM t ORDER BY l NULLS FIRST",
        "SELECT i - 10 AS k FROM t UNION SELECT i - 10 AS l FROM t ORDER BY i - 10 DESC NULLS LAST",
        "SELECT i - 10 AS k FROM t UNION SELECT i - 11 AS l FROM t ORDER BY i - 11 NULLS FIRST",
        "SELECT i AS k, s FROM t UNION ALL SELECT i + 1 AS l, s FROM t ORDER BY s NULLS FIRST, l DESC NULLS FIRST",
    ],
)
def test_order_by_of_a_set_operation_names_a_sides_column(t, sql):
    # DuckDB's: a later side's alias, or a side's selected expression, names that output column
    assert _rows(sql)[0] == _duck(sql)[0], sql
