"""Correlated subqueries (EXISTS, NOT EXISTS, IN, NOT IN, subqueries used as values) against DuckDB
on the same data, NULLs included; the shapes tidal cannot decorrelate exactly are refused by name."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .test_conformance_expressions import assert_same, assert_unsupported

OUTER = pa.table(
    {
        "id": pa.array([1, 2, 3, 4, 5, 6, 7], pa.int64()),
        "k": pa.array([1, 1, 2, 3, None, 4, 2], pa.int64()),
        "x": pa.array([10, None, 30, 40, 50, 60, 5], pa.int64()),
        "s": pa.array(["a", "b", None, "a", "c", "d", "b"], pa.string()),
    }
)
INNER = pa.table(
    {
        "k": pa.array([1, 1, 2, 2, None, 3, 5], pa.int32()),  # another integer type than OUTER.k
        "y": pa.array([10, 20, None, 30, 7, 40, 1], pa.int64()),
        "f": pa.array([1.5, None, 2.5, 0.5, 9.0, 3.0, 1.0], pa.float64()),
        "s": pa.array(["a", "b", "a", None, "c", "a", "z"], pa.string()),
    }
)

QUERIES = [
    # [NOT] EXISTS in WHERE: semi- and anti-joins, with equality keys and other correlated conditions
    "SELECT id FROM 'o.parquet' o WHERE EXISTS (SELECT * FROM 'i.parquet' i WHERE i.k = o.k)",
    "SELECT id FROM 'o.parquet' o WHERE NOT EXISTS (SELECT 1 FROM 'i.parquet' i WHERE i.k = o.k)",
    "SELECT id FROM 'o.parquet' o WHERE EXISTS (SELECT 1 FROM 'i.parquet' i WHERE i.k = o.k AND i.y > o.x)",
    "SELECT id FROM 'o.parquet' o WHERE NOT EXISTS (SELECT 1 FROM 'i.parquet' i WHERE i.y > o.x) AND id > 1",
    "SELECT id FROM 'o.parquet' o WHERE EXISTS (SELECT 1 FROM 'i.parquet' i WHERE i.s = o.s AND i.f > 1 LIMIT 1)",
    "SELECT id FROM 'o.parquet' WHERE EXISTS (SELECT 1 FROM 'i.parquet' i WHERE i.k + 1 = x / 10)",
    "SELECT id FROM 'o.parquet' o WHERE x > 20 AND NOT EXISTS (SELECT DISTINCT s FROM 'i.parquet' WHERE s = o.s)",
    # [NOT] IN with a correlated subquery (NOT IN keeps SQL's NULL rules)
    "SELECT id FROM 'o.parquet' o WHERE x IN (SELECT y FROM 'i.parquet' i WHERE i.k = o.k)",
    "SELECT id FROM 'o.parquet' o WHERE x NOT IN (SELECT y FROM 'i.parquet' i WHERE i.k = o.k)",
    "SELECT id FROM 'o.parquet' o WHERE s NOT IN (SELECT s FROM 'i.parquet' i WHERE i.y < o.x)",
    "SELECT id FROM 'o.parquet' o WHERE NOT (x IN (SELECT y + 0 FROM 'i.parquet' i WHERE i.k = o.k AND i.f > 1))",
    # subqueries used as values: aggregates per outer key, and their value over no rows
    "SELECT id, (SELECT SUM(y) FROM 'i.parquet' i WHERE i.k = o.k) FROM 'o.parquet' o",
    "SELECT id, (SELECT COUNT(*) FROM 'i.parquet' i WHERE i.k = o.k) AS n FROM 'o.parquet' o",
    "SELECT id, (SELECT COUNT(y) + 1 FROM 'i.parquet' i WHERE i.k = o.k AND i.s = o.s) FROM 'o.parquet' o",
    "SELECT id FROM 'o.parquet' o WHERE x > (SELECT AVG(y) FROM 'i.parquet' i WHERE i.k = o.k)",
    "SELECT id FROM 'o.parquet' o WHERE (SELECT COUNT(*) FROM 'i.parquet' i WHERE i.k = o.k) = 0",
    "SELECT id, (SELECT MAX(f) FROM 'i.parquet' i WHERE i.k = o.k AND i.y IS NOT NULL) - x FROM 'o.parquet' o",
    "SELECT id, EXISTS (SELECT 1 FROM 'i.parquet' i WHERE i.k = o.k), "
    "NOT EXISTS (SELECT 1 FROM 'i.parquet' i WHERE i.s = o.s) FROM 'o.parquet' o",
    "SELECT id FROM 'o.parquet' o WHERE x < 20 OR EXISTS (SELECT 1 FROM 'i.parquet' i WHERE i.k = o.k AND i.y > 15)",
    "SELECT id, (SELECT o.x + 1) FROM 'o.parquet' o",
    "SELECT id FROM 'o.parquet' o ORDER BY (SELECT COUNT(*) FROM 'i.parquet' i WHERE i.k = o.k), id",
    # over the groups of the outer query: the reference is a group key
    "SELECT k, SUM(x) FROM 'o.parquet' o GROUP BY k HAVING SUM(x) > (SELECT SUM(y) FROM 'i.parquet' i WHERE i.k = o.k)",
    "SELECT k, COUNT(*), (SELECT COUNT(*) FROM 'i.parquet' i WHERE i.k = o.k) FROM 'o.parquet' o GROUP BY k",
    "SELECT k FROM 'o.parquet' o GROUP BY k ORDER BY (SELECT MIN(y) FROM 'i.parquet' i WHERE i.k = o.k) DESC, k",
    # an inner join's ON is a WHERE
    "SELECT id FROM 'o.parquet' o WHERE EXISTS (SELECT 1 FROM 'i.parquet' i JOIN 'i.parquet' j ON j.y = o.x)",
    # a correlated subquery inside a CTE and one beside an uncorrelated one
    "WITH t AS (SELECT id, k FROM 'o.parquet' o WHERE EXISTS (SELECT 1 FROM 'i.parquet' i WHERE i.k = o.k)) "
    "SELECT COUNT(*) FROM t",
    "SELECT id FROM 'o.parquet' o WHERE x > (SELECT MIN(y) FROM 'i.parquet') "
    "AND x >= (SELECT MAX(y) FROM 'i.parquet' i WHERE i.k = o.k)",
    "SELECT k, SUM(x) FROM 'o.parquet' GROUP BY k HAVING SUM(x) > (SELECT SUM(y) * 0.2 FROM 'i.parquet')",
    # subqueries inside subqueries (each runs with its own), EXISTS of a row without FROM
    "SELECT (SELECT (SELECT (SELECT 42)))",
    "SELECT id, (SELECT EXISTS (SELECT * FROM 'i.parquet' WHERE y > 35)) FROM 'o.parquet'",
    "SELECT id FROM 'o.parquet' WHERE x IN (SELECT y FROM 'i.parquet' WHERE y > (SELECT MIN(x) FROM 'o.parquet'))",
    "SELECT id FROM 'o.parquet' o WHERE EXISTS (SELECT NULL, o.s) AND NOT EXISTS (SELECT o.x WHERE false)",
]


@pytest.fixture
def where(tmp_path):
    """A folder with OUTER as o.parquet and INNER as i.parquet (test_quantified_subqueries uses it too)."""
    pq.write_table(OUTER, tmp_path / "o.parquet")
    pq.write_table(INNER, tmp_path / "i.parquet")
    return tmp_path


def write_int_tables(where, ok, ox, ik, iy) -> None:
    """o.parquet (k, x) and i.parquet (k, y), int64 columns, each cut to its shorter list's length."""
    n, m = min(len(ok), len(ox)), min(len(ik), len(iy))
    ints = pa.int64()
    pq.write_table(pa.table({"k": pa.array(ok[:n], ints), "x": pa.array(ox[:n], ints)}), where / "o.parquet")
    pq.write_table(pa.table({"k": pa.array(ik[:m], ints), "y": pa.array(iy[:m], ints)}), where / "i.parquet")


@pytest.mark.parametrize("sql", QUERIES)
def test_correlated_subqueries_as_duckdb(where, sql):
    assert_same(sql, where)


@pytest.mark.parametrize(
    ("sql", "named"),
    [
        (
            "SELECT id, (SELECT SUM(y) + o.x FROM 'i.parquet' i WHERE i.k = o.k) FROM 'o.parquet' o",
            "outside the subquery's WHERE",
        ),
        (
            "SELECT id, (SELECT SUM(y) FROM 'i.parquet' i WHERE i.k = o.k GROUP BY s) FROM 'o.parquet' o",
            "GROUP BY or aggregates",
        ),
        (
            "SELECT id, (SELECT SUM(y) FROM 'i.parquet' i WHERE i.k = o.k HAVING COUNT(*) > 1) FROM 'o.parquet' o",
            "HAVING in a correlated subquery",
        ),
        (
            "SELECT id FROM 'o.parquet' o WHERE x IN (SELECT y FROM 'i.parquet' i WHERE i.k = o.k LIMIT 1)",
            "LIMIT/OFFSET in a correlated IN",
        ),
        (
            "SELECT id FROM 'o.parquet' o WHERE EXISTS (SELECT 1 FROM 'i.parquet' i "
            "WHERE EXISTS (SELECT 1 FROM 'i.parquet' j WHERE j.y = o.x))",
            "two or more levels out",
        ),
        (
            "SELECT id FROM 'o.parquet' o WHERE EXISTS "
            "(SELECT 1 FROM 'i.parquet' i LEFT JOIN 'i.parquet' j ON j.y = o.x WHERE j.k IS NULL)",
            "in the subquery's FROM",
        ),
        (
            "SELECT k FROM 'o.parquet' o GROUP BY k HAVING (SELECT SUM(y) FROM 'i.parquet' i WHERE i.s = o.s) > 1",
            "must appear in GROUP BY",
        ),
        ("SELECT x + INTERVAL (id) DAYS FROM 'o.parquet'", "INTERVAL of a value that is not a constant"),
    ],
)
def test_shapes_not_decorrelated_are_refused(where, sql, named):
    # (value subqueries without an aggregate, correlated conditions other than equalities and IN outside
    # WHERE are decorrelated now: tests/sql/test_quantified_subqueries.py)
    assert_unsupported(sql, where, named)


_values = st.lists(st.one_of(st.none(), st.integers(-3, 3)), min_size=0, max_size=6)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ok=_values, ox=_values, ik=_values, iy=_values)
def test_random_tables_as_duckdb(tmp_path_factory, ok, ox, ik, iy):
    where = tmp_path_factory.mktemp("corr")
    write_int_tables(where, ok, ox, ik, iy)
    for sql in (
        "SELECT k, x FROM 'o.parquet' o WHERE EXISTS (SELECT 1 FROM 'i.parquet' i WHERE i.k = o.k AND i.y >= o.x)",
        "SELECT k, x FROM 'o.parquet' o WHERE x NOT IN (SELECT y FROM 'i.parquet' i WHERE i.k = o.k)",
        "SELECT k, x FROM 'o.parquet' o WHERE x NOT IN (SELECT y FROM 'i.parquet' i WHERE i.k <> o.k)",
        "SELECT k, x, (SELECT COUNT(y) FROM 'i.parquet' i WHERE i.k = o.k), "
        "(SELECT SUM(y) FROM 'i.parquet' i WHERE i.k = o.k) FROM 'o.parquet' o",
    ):
        assert_same(sql, where)


def test_a_scalar_subquery_in_having_is_not_folded_to_null(tmp_path):
    # DuckDB's test_having.test: the subquery was folded to NULL before it ran, and no group was kept
    pq.write_table(pa.table({"a": pa.array([11, 13, 12], pa.int32()), "b": pa.array([22, 22, 21], pa.int32())}),
                   tmp_path / "test.parquet")  # fmt: skip
    assert_same(
        "SELECT b, SUM(a) FROM 'test.parquet' GROUP BY b HAVING SUM(a) > (SELECT SUM(t.a) * 0.5 FROM 'test.parquet' t)",
        tmp_path,
    )
