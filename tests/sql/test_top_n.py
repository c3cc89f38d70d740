"""ROW_NUMBER() OVER (PARTITION BY ... ORDER BY ...) under ``WHERE rn <= N`` (run as a Top-N per partition,
``tidal/sql/topn.py``) against DuckDB, and unbounded, on fixed and changing inputs.

DuckDB numbers rows tied on the ORDER BY keys arbitrarily; tidal orders them by all their columns, so
the DuckDB queries here spell that tie-break out (every column, ascending, nulls last)."""

from __future__ import annotations

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tidal.sql import plan


def _rows(table: pa.Table) -> list[tuple]:
    return sorted(zip(*[c.to_pylist() for c in table.columns], strict=True), key=repr)


def same(sql: str, oracle: str) -> None:
    got = plan(sql).result()
    want = duckdb.sql(oracle).arrow()
    want = want.read_all() if isinstance(want, pa.RecordBatchReader) else want
    assert _rows(got) == _rows(want), sql


@pytest.fixture
def t(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    pq.write_table(
        pa.table(
            {
                "g": [1, 1, 1, 2, 2, None, 1, 2, 3, 3],
                "v": [5, 3, 5, None, 7, 1, 9, 7, 2, 2],
                "s": ["a", "b", "c", "d", "e", "f", "g", "h", "i", "i"],
                "ts": list(range(0, 10_000, 1_000)),
            }
        ),
        "t.parquet",
    )
    return "'t.parquet'"


@pytest.mark.parametrize(
    "inner, outer",
    [
        ("PARTITION BY g ORDER BY v DESC", ""),
        ("PARTITION BY g ORDER BY v DESC", "WHERE rn <= 2"),
        ("PARTITION BY g ORDER BY v", "WHERE rn = 1"),
        ("PARTITION BY g ORDER BY v NULLS FIRST", "WHERE rn < 3"),
        ("PARTITION BY g, v ORDER BY s DESC", "WHERE 1 >= rn"),
        ("ORDER BY v DESC", "WHERE rn <= 4 AND s <> 'b'"),
        ("PARTITION BY g ORDER BY v", "WHERE rn >= 2"),
        ("PARTITION BY g % 2 ORDER BY ts % 3000 DESC", "WHERE rn <= 2"),
    ],
)
def test_row_number_as_duckdb(t, inner, outer):
    # the tie-break tidal uses: every column, ascending, nulls last
    ties = "g ASC NULLS LAST, v ASC NULLS LAST, s ASC NULLS LAST, ts ASC NULLS LAST"
    duck_window = inner.replace("ORDER BY v DESC", "ORDER BY v DESC NULLS LAST").replace(
        "ORDER BY v NULLS FIRST", "ORDER BY v ASC NULLS FIRST"
    )
    if "NULLS" not in duck_window:
        duck_window = duck_window.replace("ORDER BY v", "ORDER BY v ASC NULLS LAST").replace(
            "ORDER BY s DESC", "ORDER BY s DESC NULLS LAST"
        )
    sql = f"SELECT * FROM (SELECT g, v, s, ts, ROW_NUMBER() OVER ({inner}) AS rn FROM {t}) AS x {outer}"
    oracle = f"SELECT * FROM (SELECT g, v, s, ts, row_number() OVER ({duck_window}, {ties}) AS rn FROM {t}) x {outer}"
    same(sql, oracle)


@settings(max_examples=25, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 3), st.integers(0, 5)), min_size=1, max_size=40),
    st.integers(1, 4),
)
def test_top_n_over_a_changing_result(tmp_path_factory, rows, n):
    # per-key counts change as rows arrive (retractions), and the Top-N follows them
    d = tmp_path_factory.mktemp("rownum")
    table = pa.table({"k": [k for k, _ in rows], "x": [x for _, x in rows], "t": list(range(len(rows)))})
    pq.write_table(table, d / "e.parquet")
    source = (
        f"max_diff_watermark(source => TABLE('{d / 'e.parquet'}'), time_field => DESCRIPTOR(t),"
        " offset => INTERVAL 0 SECONDS)"
    )
    sql = (
        f"SELECT * FROM (SELECT k, c, ROW_NUMBER() OVER (PARTITION BY k % 2 ORDER BY c DESC) AS rn FROM"
        f" (SELECT k, count(*) AS c FROM {source} GROUP BY k)) WHERE rn <= {n}"
    )
    oracle = (
        f"SELECT * FROM (SELECT k, c, row_number() OVER (PARTITION BY k % 2 ORDER BY c DESC, k) AS rn FROM"
        f" (SELECT k, count(*) AS c FROM '{d / 'e.parquet'}' GROUP BY k)) WHERE rn <= {n}"
    )
    same(sql, oracle)


def test_a_bounded_row_number_runs_as_a_top_n(t):
    explained = plan(
        f"SELECT * FROM (SELECT g, v, ROW_NUMBER() OVER (PARTITION BY g ORDER BY v) AS rn FROM {t}) WHERE rn <= 2"
    ).explain()
    assert "RowNumber" in explained
