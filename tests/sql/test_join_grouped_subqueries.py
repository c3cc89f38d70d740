"""LEFT JOIN against a grouped subquery, checked against DuckDB with hypothesis.

A GROUP BY whose values are materialised at end of input (a trigger without rules, ``first``/``last`` over
rows at their ordinals; or a TRIGGER clause whose key has not fired) stamps those values with its last
input tick, so it must not pass a punctuation beyond that tick on: a join that saw one finished the tick,
NULL-padded its left rows, and kept the padded row when the match arrived at the same tick
(``[(0, None), (0, 1)]`` where DuckDB answers ``[(0, 1)]``).

``first``/``last`` take the rows in file order (their ordinals), which DuckDB's oracle spells
``first(k ORDER BY u)`` with ``u`` the row's position (its plain ``first`` depends on its scan order); some
groups are single rows. (``any_value`` is DuckDB's ``first`` ignoring NULLs, which tidal refuses.)
"""

from __future__ import annotations

import contextlib

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import given, settings
from hypothesis import strategies as st

from tidal.sql import plan

from .test_nan_comparisons import canonical

KEYS = st.one_of(st.none(), st.integers(0, 3))
VALUES = st.one_of(st.none(), st.integers(-3, 3))

SUBQUERIES = [
    "SELECT s, first(k) f FROM 'i.parquet' GROUP BY s",
    "SELECT s, last(k) f FROM 'i.parquet' GROUP BY s",
    "SELECT s, first(k) f, last(k) l FROM 'i.parquet' GROUP BY s",
    "SELECT s, first(k) f FROM 'i.parquet' GROUP BY s, u",
    "SELECT s, last(k) f, first(u) l FROM 'i.parquet' GROUP BY s, u",
    "SELECT s, min(k) f, max(k) l FROM 'i.parquet' GROUP BY s",
    "SELECT s, max(k) f, count(*) l FROM 'i.parquet' GROUP BY s",
    "SELECT s, min(k) f, first(k) l FROM 'i.parquet' GROUP BY s",
    "SELECT s, sum(k) f, last(k) l FROM 'i.parquet' GROUP BY s",
]
SELECTS = [
    "SELECT o.id, g.f FROM 'o.parquet' o LEFT JOIN ({}) g ON o.s = g.s",
    "SELECT o.id, g.* FROM 'o.parquet' o LEFT JOIN ({}) g ON o.s = g.s AND g.f IS NOT NULL",
    "SELECT g.s, o.id FROM ({}) g RIGHT JOIN 'o.parquet' o ON o.s = g.s",
    "SELECT o.id, g.f FROM 'o.parquet' o FULL JOIN ({}) g ON o.s = g.s",
]


def _oracle(sql: str) -> str:
    """DuckDB's form of ``sql``: first/last in file order (tidal's, the rows' ordinals) made explicit."""
    return sql.replace("first(k)", "first(k ORDER BY u)").replace("last(k)", "last(k ORDER BY u)")


def _tidal_and_duckdb(sql: str, directory) -> tuple[list, list]:
    with contextlib.chdir(directory):
        got = plan(sql).result().to_pylist()
        with duckdb.connect() as con:
            want = con.sql(_oracle(sql)).to_arrow_table().to_pylist()
    return got, want


@settings(max_examples=80, deadline=None)
@given(
    left=st.lists(KEYS, min_size=0, max_size=6),
    right=st.lists(st.tuples(KEYS, VALUES), min_size=0, max_size=8),
    sub=st.sampled_from(SUBQUERIES),
    outer=st.sampled_from(SELECTS),
)
def test_left_join_of_a_grouped_subquery_as_in_duckdb(tmp_path_factory, left, right, sub, outer):
    directory = tmp_path_factory.mktemp("groupjoin")
    pq.write_table(
        pa.table({"id": pa.array(range(len(left)), pa.int64()), "s": pa.array(left, pa.int64())}),
        directory / "o.parquet",
    )
    pq.write_table(
        pa.table(
            {
                "s": pa.array([s for s, _ in right], pa.int64()),
                "k": pa.array([k for _, k in right], pa.int64()),
                "u": pa.array(range(len(right)), pa.int64()),
            }
        ),
        directory / "i.parquet",
    )
    got, want = _tidal_and_duckdb(outer.format(sub), directory)
    assert canonical(got) == canonical(want)


def test_left_join_of_first_keeps_no_padded_row(tmp_path):
    pq.write_table(pa.table({"id": pa.array([0], pa.int64()), "s": pa.array([1], pa.int64())}), tmp_path / "o.parquet")
    pq.write_table(pa.table({"s": [1], "k": [1], "u": [0]}), tmp_path / "i.parquet")
    for agg in ("first(k)", "last(k)", "min(k)", "max(k)"):
        sub = f"SELECT s, {agg} f FROM 'i.parquet' GROUP BY s"
        sql = f"SELECT o.id, g.f FROM 'o.parquet' o LEFT JOIN ({sub}) g ON o.s = g.s"
        got, want = _tidal_and_duckdb(sql, tmp_path)
        assert got == want == [{"id": 0, "f": 1}], agg


def test_join_of_an_unfired_trigger_waits_for_its_values(tmp_path):
    """A TRIGGER COUNTING 2 key with one row fires at end of input, at its tick: the join must see it there."""
    pq.write_table(
        pa.table({"id": pa.array([0, 1], pa.int64()), "s": pa.array([1, 2], pa.int64())}), tmp_path / "o.parquet"
    )
    pq.write_table(pa.table({"s": [1, 2, 2], "k": [4, 5, 6], "u": [0, 1, 2]}), tmp_path / "i.parquet")
    sub = "SELECT s, count(*) n, first(k) f FROM 'i.parquet' GROUP BY s"
    sql = f"SELECT o.id, g.n, g.f FROM 'o.parquet' o LEFT JOIN ({sub} TRIGGER COUNTING 2) g ON o.s = g.s"
    with contextlib.chdir(tmp_path):
        got = plan(sql).result().to_pylist()
        want = duckdb.sql(
            _oracle(f"SELECT o.id, g.n, g.f FROM 'o.parquet' o LEFT JOIN ({sub}) g ON o.s = g.s")
        ).fetchall()
    assert canonical(got) == canonical([dict(zip(("id", "n", "f"), r, strict=True)) for r in want])
