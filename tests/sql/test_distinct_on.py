"""``SELECT DISTINCT ON (...)`` (DuckDB: the first row of each key in ORDER BY order) and ``*``'s
``EXCLUDE`` / ``REPLACE`` modifiers, checked against DuckDB on the same rows (issue 18)."""

from __future__ import annotations

import contextlib

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tidal.core.errors import PlanError
from tidal.sql import plan

from .test_nan_comparisons import as_rows, tidal_and_duckdb

INTS = st.one_of(st.none(), st.integers(-3, 3))
WORDS = st.one_of(st.none(), st.sampled_from(["a", "b", "c", "dd"]))
FLOATS = st.sampled_from([None, -1.5, 0.0, 2.0, float("nan"), float("inf")])

# every query orders by all its columns (after the key), so the first row of each key is one row
TOTAL = [
    "SELECT DISTINCT ON (k) k, s, f, i FROM 't.parquet' ORDER BY k, s, f, i",
    "SELECT DISTINCT ON (k) k, s, f, i FROM 't.parquet' ORDER BY k DESC NULLS FIRST, s DESC, f, i DESC",
    "SELECT DISTINCT ON (k, s) * FROM 't.parquet' ORDER BY k, s, f DESC, i",
    "SELECT DISTINCT ON (k % 2) k % 2 AS parity, i FROM 't.parquet' ORDER BY parity, i DESC",
    "SELECT DISTINCT ON (parity) k % 2 AS parity, i FROM 't.parquet' ORDER BY 1, 2",
    "SELECT DISTINCT ON (s) s, i * 2 AS twice FROM 't.parquet' WHERE k IS NOT NULL ORDER BY s NULLS FIRST, i",
    "SELECT DISTINCT ON (k) k, i FROM 't.parquet' ORDER BY k, i LIMIT 2",
    "SELECT DISTINCT ON (k) k, i FROM 't.parquet' ORDER BY k DESC, i LIMIT 2 OFFSET 1",
    "SELECT DISTINCT ON (k) k, count(*) AS n, max(i) AS m FROM 't.parquet' GROUP BY k, s ORDER BY k, n DESC, m",
    "SELECT DISTINCT ON (f) f, i FROM 't.parquet' ORDER BY f, i",
    "SELECT DISTINCT ON (k) i FROM 't.parquet' ORDER BY k, i",
]


def _table(rows):
    k, s, f = zip(*rows, strict=True) if rows else ((), (), ())
    return pa.table(
        {
            "i": pa.array(range(len(rows)), pa.int64()),
            "k": pa.array(k, pa.int64()),
            "s": pa.array(s, pa.string()),
            "f": pa.array(f, pa.float64()),
        }
    )


@settings(max_examples=25, deadline=None)
@given(rows=st.lists(st.tuples(INTS, WORDS, FLOATS), min_size=0, max_size=14), sql=st.sampled_from(TOTAL))
def test_distinct_on_equals_duckdb(tmp_path_factory, rows, sql):
    directory = tmp_path_factory.mktemp("don")
    table = _table(rows)
    pq.write_table(table, directory / "t.parquet")
    got, want = tidal_and_duckdb(sql, table, directory)
    assert as_rows(got) == as_rows(want), sql  # ORDER BY decides the order too


@settings(max_examples=25, deadline=None)
@given(rows=st.lists(st.tuples(INTS, WORDS, FLOATS), min_size=1, max_size=14))
def test_distinct_on_with_ties_keeps_one_of_the_first_rows(tmp_path_factory, rows):
    """Rows tied on ORDER BY (or no ORDER BY at all): DuckDB keeps any of them; tidal must keep one of
    the rows that sort first within its key, one row per key."""
    directory = tmp_path_factory.mktemp("ties")
    table = _table(rows)
    pq.write_table(table, directory / "t.parquet")
    con = duckdb.connect()
    con.register("t_arrow", table)
    for order in ("ORDER BY k, s", ""):
        with contextlib.chdir(directory):
            got = plan(f"SELECT DISTINCT ON (k) k, s, i FROM 't.parquet' {order}").result().to_pylist()
        keys = [r["k"] for r in got]
        assert sorted(keys, key=repr) == sorted({r[0] for r in rows}, key=repr)
        # the rows that sort first within a key: its smallest s (NULLS LAST: NULL only when all are)
        tied = " AND s IS NOT DISTINCT FROM (SELECT min(s) FROM t_arrow WHERE k IS NOT DISTINCT FROM $k)"
        for r in got:
            first = con.sql(
                "SELECT i FROM t_arrow WHERE k IS NOT DISTINCT FROM $k" + (tied if order else ""),
                params={"k": r["k"]},
            ).fetchall()
            assert (r["i"],) in first


STARS = [
    "SELECT * EXCLUDE (s) FROM 't.parquet'",
    "SELECT * EXCLUDE (s, f) FROM 't.parquet' WHERE k > 0",
    "SELECT * REPLACE (k * 10 AS k, upper(s) AS s) FROM 't.parquet'",
    "SELECT t.* EXCLUDE (i), 1 AS one FROM 't.parquet' t",
    "SELECT * EXCLUDE (i) REPLACE (f + 1 AS f) FROM 't.parquet'",
]


@settings(max_examples=10, deadline=None)
@given(rows=st.lists(st.tuples(INTS, WORDS, FLOATS), min_size=1, max_size=8), sql=st.sampled_from(STARS))
def test_star_exclude_and_replace_equal_duckdb(tmp_path_factory, rows, sql):
    directory = tmp_path_factory.mktemp("star")
    table = _table(rows)
    pq.write_table(table, directory / "t.parquet")
    got, want = tidal_and_duckdb(sql, table, directory)
    assert [list(r) for r in got] == [list(r) for r in want]  # same column names, in order
    assert as_rows(got) == as_rows(want)


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        ("SELECT * EXCLUDE (nope) FROM 't.parquet'", "nope in the EXCLUDE/REPLACE list"),
        ("SELECT * RENAME (k AS kk) FROM 't.parquet'", "RENAME (...) is not supported"),
        ("SELECT DISTINCT ON (k) k FROM 't.parquet' ORDER BY 3", "position 3 is not in the select list"),
    ],
)
def test_star_and_distinct_on_errors_name_the_construct(tmp_path, sql, message):
    pq.write_table(_table([(1, "a", 1.0)]), tmp_path / "t.parquet")
    with contextlib.chdir(tmp_path), pytest.raises(PlanError, match=message.replace("(", r"\(").replace(")", r"\)")):
        plan(sql).result()
