"""string_agg, list, first/last, count/sum/avg(DISTINCT) and min/max of text over whole columns
(tidal/sql/hashagg_values.py):
the relational path's answer equals the stream engine's, value for value and type for type, and
DuckDB's (one thread, so that its string_agg and list keep row order as tidal's do)."""

from __future__ import annotations

import contextlib
import datetime

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tidal.sql import plan
from tidal.sql.query import final_snapshot
from tidal.sql.relational import applies

KEYS = st.sampled_from([0, 1, 2, None])
TEXT = st.one_of(st.none(), st.sampled_from(["a", "b", "", "ß", "ab", "é", "\U0001f600", "B"]), st.text(max_size=3))
INTS = st.sampled_from([None, -3, 0, 2, 2, 7, 2**40])
TIMES = st.sampled_from([None, 0, 86_400_000_000, 86_400_000_000, -1])

CALLS = [
    "string_agg(s, ',')",
    "string_agg(s, '')",
    "string_agg(s, NULL)",
    "string_agg(s)",
    "string_agg(i, '-')",
    "list(s)",
    "list(i)",
    "list(s) FILTER (WHERE i > 0)",
    "count(DISTINCT s)",
    "count(DISTINCT i)",
    "count(DISTINCT ts)",
    "count(DISTINCT s) FILTER (WHERE i > 0)",
    "min(s)",
    "max(s)",
    "max(s) FILTER (WHERE i > 0)",
    "first(s)",
    "last(s)",
    "first(i)",
    "last(ts)",
    "sum(DISTINCT i)",
    "avg(DISTINCT i)",
    "sum(DISTINCT i) FILTER (WHERE s > 'a')",
]


def _table(rows) -> pa.Table:
    k, s, i, ts = (list(c) for c in zip(*rows, strict=True)) if rows else ([], [], [], [])
    return pa.table(
        {
            "k": pa.array(k, pa.int64()),
            "s": pa.array(s, pa.string()),
            "i": pa.array(i, pa.int64()),
            "ts": pa.array(ts, pa.int64()).cast(pa.timestamp("us")),
        }
    )


def _answers(tmp_path, table: pa.Table, sql: str):
    pq.write_table(table, tmp_path / "t.parquet")
    con = duckdb.connect()
    con.sql("SET threads = 1")
    con.register("t_arrow", table)
    want = con.sql(sql.replace("'t.parquet'", "t_arrow")).to_arrow_table()
    with contextlib.chdir(tmp_path):
        assert applies(plan(sql))  # answered over whole columns
        got = plan(sql).result()
        q = plan(sql)
        streamed = q.finish(final_snapshot(q.events()))
    return got, streamed, want


def _rows(table: pa.Table) -> list:
    return sorted((list(r.values()) for r in table.to_pylist()), key=repr)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(st.tuples(KEYS, TEXT, INTS, TIMES), max_size=14), grouped=st.booleans())
@example(rows=[], grouped=False)
@example(rows=[(None, None, None, None)], grouped=True)
def test_text_aggregates_match_the_engine_and_duckdb(tmp_path, rows, grouped):
    table = _table(rows)
    key = "k" if grouped else "0 AS k"
    items = ", ".join(f"{c} AS a{n}" for n, c in enumerate(CALLS))
    sql = f"SELECT {key}, {items} FROM 't.parquet'" + (" GROUP BY k" if grouped else "")
    got, streamed, want = _answers(tmp_path, table, sql)
    assert got.schema == streamed.schema, sql
    assert _rows(got) == _rows(streamed), sql
    assert _rows(got) == _rows(want), sql


@pytest.mark.parametrize("call", ["string_agg(s, '|')", "list(s)", "count(DISTINCT s)", "min(s)", "max(s)"])
def test_each_text_aggregate_by_a_text_key(tmp_path, call):
    table = pa.table({"k": ["x", "y", None, "x", "y", "x"], "s": ["b", None, "c", "a", "d", "é"]})
    got, streamed, want = _answers(tmp_path, table, f"SELECT k, {call} AS a FROM 't.parquet' GROUP BY k")
    assert _rows(got) == _rows(streamed) == _rows(want)


DAY, OTHER_DAY = datetime.date(2024, 1, 1), datetime.date(2023, 5, 2)


def test_count_distinct_of_dates_and_booleans(tmp_path):
    table = pa.table(
        {
            "k": [1, 1, 2, 2, 2],
            "d": pa.array(
                [datetime.date(2024, 1, 1), datetime.date(2024, 1, 1), None, datetime.date(2023, 5, 2), None]
            ),
            "b": [True, True, False, None, True],
        }
    )
    sql = "SELECT k, count(DISTINCT d) AS nd, count(DISTINCT b) AS nb FROM 't.parquet' GROUP BY k"
    got, streamed, want = _answers(tmp_path, table, sql)
    assert _rows(got) == _rows(streamed) == _rows(want) == [[1, 1, 1], [2, 1, 2]]
