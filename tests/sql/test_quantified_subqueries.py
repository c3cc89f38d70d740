"""``x op ANY/ALL (subquery)``, correlated ``IN`` / ``EXISTS`` as values (SELECT list, HAVING), non-aggregate
correlated scalar subqueries and correlated conditions other than equalities, against DuckDB on the same data
(NULLs included, hypothesis over random tables); what tidal cannot do exactly is refused by name."""

from __future__ import annotations

import os

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tidal.core.errors import TidalError
from tidal.sql import plan

from .test_conformance_expressions import assert_same, assert_unsupported
from .test_correlated_subqueries import INNER, OUTER

O, I = "'o.parquet'", "'i.parquet'"

QUERIES = [
    # uncorrelated ANY / SOME / ALL with every comparison, over a set with a NULL and over no rows
    *(
        f"SELECT id, x {op} {q} (SELECT y FROM {I}{w}) FROM {O}"
        for op in ("=", "<>", "<", "<=", ">", ">=")
        for q in ("ANY", "ALL")
        for w in ("", " WHERE y IS NOT NULL", " WHERE y > 100")
    ),
    f"SELECT id, x = SOME (SELECT y FROM {I} WHERE k = 1) FROM {O}",
    f"SELECT id FROM {O} WHERE x > ALL (SELECT y FROM {I} WHERE y IS NOT NULL) OR id = 1",
    f"SELECT id, x > ANY (SELECT y FROM {I} UNION ALL SELECT 35) FROM {O}",
    f"SELECT id, NULL = ANY (SELECT y FROM {I} WHERE y > 100), NULL < ALL (SELECT y FROM {I}) FROM {O}",
    f"SELECT k, SUM(x) > ANY (SELECT y FROM {I}) FROM {O} GROUP BY k",
    f"SELECT k, SUM(x) FROM {O} GROUP BY k HAVING SUM(x) >= ALL (SELECT y FROM {I} WHERE y IS NOT NULL)",
    # correlated ANY / ALL: equality keys, other conditions, the outer value inside the subquery's value
    *(
        f"SELECT id, x {op} {q} (SELECT y FROM {I} i WHERE {c}) FROM {O} o"
        for op in ("=", "<>", ">", "<=")
        for q in ("ANY", "ALL")
        for c in ("i.k = o.k", "i.y < o.x OR i.y IS NULL")
    ),
    f"SELECT id, x >= ANY (SELECT y - o.k FROM {I} i WHERE i.s = o.s) FROM {O} o",
    f"SELECT id FROM {O} o WHERE x <> ALL (SELECT y FROM {I} i WHERE i.k = o.k)",
    # correlated IN / NOT IN / EXISTS in the SELECT list, in CASE, in HAVING
    f"SELECT id, x IN (SELECT y FROM {I} i WHERE i.k = o.k), x NOT IN (SELECT y FROM {I} i WHERE i.k = o.k) "
    f"FROM {O} o",
    f"SELECT id, s IN (SELECT s FROM {I} i WHERE i.y > o.x) FROM {O} o",
    f"SELECT id, CASE WHEN x IN (SELECT y + 0 FROM {I} i WHERE i.k <> o.k) THEN 'in' ELSE 'out' END FROM {O} o",
    f"SELECT id, EXISTS (SELECT 1 FROM {I} i WHERE i.y > o.x), NOT EXISTS (SELECT 1 FROM {I} i WHERE o.k > 2) "
    f"FROM {O} o",
    f"SELECT k, COUNT(*) FROM {O} o GROUP BY k HAVING EXISTS (SELECT 1 FROM {I} i WHERE i.k = o.k)",
    f"SELECT k FROM {O} o GROUP BY k HAVING k IN (SELECT k + 1 FROM {I} i WHERE i.k = o.k - 1)",
    # value subqueries: no aggregate (at most one row each), conditions that are not equalities
    f"SELECT id, (SELECT y FROM {I} i WHERE i.k = o.k AND i.s = o.s) FROM {O} o",
    f"SELECT id, (SELECT i.y + o.x FROM {I} i WHERE i.y = o.x) FROM {O} o",
    f"SELECT id, (SELECT SUM(y) FROM {I} i WHERE i.y > o.x) FROM {O} o",
    f"SELECT id, (SELECT COUNT(*) FROM {I} i WHERE i.k < o.k OR o.k IS NULL) FROM {O} o",
    f"SELECT id, (SELECT MAX(y * o.k) FROM {I} i WHERE i.s = o.s) FROM {O} o",
    f"SELECT id FROM {O} o WHERE x > (SELECT AVG(y) FROM {I} i WHERE i.k < o.k)",
    # the outer query named in a derived table's WHERE (under joins): lifted to the subquery's WHERE
    f"SELECT id, (SELECT COUNT(*) FROM (SELECT y AS z FROM {I} i WHERE i.k = o.k) d) FROM {O} o",
    f"SELECT id, x IN (SELECT d.y FROM (SELECT * FROM {I} i WHERE i.y > o.x) d JOIN {I} j ON d.k = j.k) FROM {O} o",
    f"SELECT id FROM {O} o WHERE EXISTS (SELECT 1 FROM (SELECT k FROM {I} i WHERE i.s = o.s) d "
    f"LEFT JOIN {I} j ON d.k = j.k WHERE j.y > 5)",
]


@pytest.fixture
def where(tmp_path):
    pq.write_table(OUTER, tmp_path / "o.parquet")
    pq.write_table(INNER, tmp_path / "i.parquet")
    return tmp_path


@pytest.mark.parametrize("sql", QUERIES)
def test_subqueries_as_duckdb(where, sql):
    assert_same(sql, where)


@pytest.mark.parametrize(
    "sql",
    [
        f"SELECT id, (SELECT y FROM {I} i WHERE i.k = o.k) FROM {O} o",  # k = 1 has two rows
        f"SELECT id, (SELECT y FROM {I} i WHERE i.y > o.x) FROM {O} o",
    ],
)
def test_more_than_one_row_is_an_error_as_in_duckdb(where, sql):
    old = os.getcwd()
    os.chdir(where)
    try:
        with pytest.raises(duckdb.Error, match="More than one row returned by a subquery"):
            duckdb.sql(sql).fetchall()
        with pytest.raises(TidalError, match="More than one row returned by a subquery"):
            plan(sql).result()
    finally:
        os.chdir(old)


@pytest.mark.parametrize(
    ("sql", "named"),
    [
        (f"SELECT id, (x, k) = ANY (SELECT y, k FROM {I}) FROM {O}", "row value"),
        (f"SELECT id, x = ANY ([1, 2]) FROM {O}", "ANY/ALL over a list"),
        (f"SELECT id, x > ANY (SELECT y FROM {I} LIMIT 2) FROM {O}", "LIMIT/OFFSET but no ORDER BY"),
        (
            f"SELECT id, x > ANY (SELECT MAX(y) FROM {I} i WHERE i.k = o.k GROUP BY s) FROM {O} o",
            "correlated subquery with GROUP BY",
        ),
        (f"SELECT id, (SELECT y FROM {I} i WHERE i.k = o.k LIMIT 1) FROM {O} o", "LIMIT in a correlated subquery"),
        (f"SELECT id, (SELECT SUM(o.x) FROM {I} i) FROM {O} o", "aggregate of only the outer query's columns"),
        (
            f"SELECT id, (SELECT COUNT(*) FROM (SELECT k FROM {I} i WHERE i.k = o.k LIMIT 1) d) FROM {O} o",
            "in the subquery's FROM",
        ),
    ],
)
def test_not_exact_is_refused(where, sql, named):
    assert_unsupported(sql, where, named)


_values = st.lists(st.one_of(st.none(), st.integers(-3, 3)), min_size=0, max_size=6)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ok=_values, ox=_values, ik=_values, iy=_values, op=st.sampled_from(["=", "<>", "<", ">="]))
def test_random_tables_as_duckdb(tmp_path_factory, ok, ox, ik, iy, op):
    where = tmp_path_factory.mktemp("quant")
    n, m = min(len(ok), len(ox)), min(len(ik), len(iy))
    ints = pa.int64()
    pq.write_table(pa.table({"k": pa.array(ok[:n], ints), "x": pa.array(ox[:n], ints)}), where / "o.parquet")
    pq.write_table(pa.table({"k": pa.array(ik[:m], ints), "y": pa.array(iy[:m], ints)}), where / "i.parquet")
    for sql in (
        f"SELECT k, x, x {op} ANY (SELECT y FROM {I}), x {op} ALL (SELECT y FROM {I}) FROM {O}",
        f"SELECT k, x, x {op} ANY (SELECT y FROM {I} i WHERE i.k = o.k), "
        f"x {op} ALL (SELECT y FROM {I} i WHERE i.k >= o.k) FROM {O} o",
        f"SELECT k, x, x IN (SELECT y FROM {I} i WHERE i.k = o.k), "
        f"x NOT IN (SELECT y FROM {I} i WHERE i.k <> o.k OR i.k IS NULL) FROM {O} o",
        f"SELECT k, x, (SELECT COUNT(*) FROM {I} i WHERE i.y > o.x OR o.k IS NULL) FROM {O} o",
    ):
        assert_same(sql, where)
