"""Wrong answers and crashes that DuckDB's own logic tests of joins, ORDER BY/LIMIT, set operations and subqueries
found, each pinned against the installed DuckDB: an error where DuckDB errs, a refusal by name where tidal cannot
give DuckDB's answer, and the neighbouring queries tidal does answer, with DuckDB's answer."""

from __future__ import annotations

import duckdb
import pytest

from tidal.core.errors import TidalError
from tidal.sql import plan


def _tidal(sql: str) -> list[tuple]:
    table = plan(sql).result()
    return list(zip(*(c.to_pylist() for c in table.columns), strict=True))


@pytest.fixture
def con(in_dir):
    """A DuckDB over the same Parquet files tidal reads."""
    c = duckdb.connect()
    c.execute("COPY (SELECT * FROM (VALUES (11, 22), (12, 21), (13, 22), (NULL, 20)) v(a, b)) TO 't.parquet'")
    c.execute("COPY (SELECT * FROM (VALUES (1, 10), (2, 20), (3, 30)) v(a, c)) TO 'u.parquet'")
    c.execute("CREATE VIEW t AS FROM 't.parquet'; CREATE VIEW u AS FROM 'u.parquet'")
    return c


# DuckDB errs on each of these: tidal answered (or crashed with an IndexError) before
DUCKDB_ERRS = [
    ("SELECT a FROM t ORDER BY NULL, a", "non-integer literal"),
    ("SELECT a FROM t ORDER BY true, a", "non-integer literal"),
    ("SELECT a FROM t ORDER BY false, a", "non-integer literal"),
    ("SELECT DISTINCT ON (true) a, b FROM t ORDER BY a, b", "non-integer literal"),
    ("SELECT DISTINCT ON (NULL) a, b FROM t ORDER BY a, b", "non-integer literal"),
    ("SELECT DISTINCT ON (a) a, b FROM t ORDER BY true, a", "non-integer literal"),
    ("SELECT * FROM range(10) LIMIT -3", "negative LIMIT"),
    ("SELECT * FROM range(10) LIMIT 3 OFFSET -1", "negative OFFSET"),
    ("SELECT * FROM (SELECT 1) x(p) NATURAL JOIN (SELECT 1 UNION ALL SELECT 2) y(q)", "NATURAL JOIN"),
    ("SELECT a FROM t UNION SELECT c FROM u ORDER BY 2", "ORDER BY of a UNION"),
    ("SELECT a FROM t UNION SELECT c FROM u ORDER BY 0", "ORDER BY of a UNION"),
    ("SELECT 1, a + 1 FROM t UNION SELECT a + 1, 1 FROM t ORDER BY a + 1", "ambiguous"),
]


@pytest.mark.parametrize(("sql", "match"), DUCKDB_ERRS)
def test_refused_where_duckdb_errs(con, sql, match):
    with pytest.raises(duckdb.Error):
        con.execute(sql).fetchall()
    with pytest.raises(TidalError, match=match):
        _tidal(sql)


# DuckDB answers these, tidal cannot give the same answer today: it refuses them by name (it gave wrong answers)
REFUSED = [
    ("SELECT a FROM t LIMIT 50 PERCENT", "PERCENT"),
    ("SELECT a FROM t ORDER BY a LIMIT 40%", "PERCENT"),
    ("SELECT a, b FROM t UNION ALL BY NAME SELECT a, c FROM u", "UNION BY NAME"),
    ("SELECT a FROM t UNION BY NAME SELECT 5 AS z", "UNION BY NAME"),
    ("SELECT * FROM (FROM (SELECT 42 a), (SELECT 43 b))", "parenthesised subquery"),
]


@pytest.mark.parametrize(("sql", "match"), REFUSED)
def test_refused_by_name(con, sql, match):
    assert con.execute(sql).fetchall() is not None  # DuckDB answers it
    with pytest.raises(TidalError, match=f"{match}.*not supported|not supported.*{match}"):
        _tidal(sql)


# their neighbours still answer as DuckDB does
ANSWERED = [
    "SELECT a FROM t ORDER BY 1 DESC NULLS LAST",
    "SELECT DISTINCT ON (b) b, a FROM t ORDER BY b, a",
    "SELECT a FROM t ORDER BY a NULLS FIRST LIMIT 2 OFFSET 1",
    "SELECT a FROM t ORDER BY a LIMIT 0",
    "SELECT * FROM t NATURAL JOIN u ORDER BY a",
    "SELECT a FROM t UNION SELECT c FROM u ORDER BY 1",
    "SELECT a AS k FROM t UNION SELECT a AS l FROM u ORDER BY l",
    "SELECT a + 1, b FROM t UNION ALL SELECT a + 1, c FROM u ORDER BY a + 1, 2",
    "SELECT * FROM (SELECT 42 a), (SELECT 43 b)",
]


@pytest.mark.parametrize("sql", ANSWERED)
def test_neighbours_answer_as_duckdb(con, sql):
    assert _tidal(sql) == [tuple(r) for r in con.execute(sql).fetchall()], sql
