"""The plan cache (tidal/sql/plan_cache.py, issue 19): a repeated query reuses its plan only while the
text, settings, working directory and every file it reads are unchanged, and never when the text calls a
volatile function. Each answer is checked against DuckDB on the file as it is at that moment."""

from __future__ import annotations

import os
import time

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tidal.sql import plan, plan_cache
from tidal.sql.dialect import parse

SQL = "SELECT k, COUNT(*) AS n, AVG(v) AS a FROM 't.parquet' GROUP BY k ORDER BY k"


@pytest.fixture(autouse=True)
def _empty_cache():
    plan_cache.clear()
    yield
    plan_cache.clear()


def _old(path) -> None:
    """Wait until ``path`` is older than the plan cache's freshness margin (a file changed just before
    planning is never kept)."""
    time.sleep(plan_cache.FRESH_NS / 1e9 + 0.02)


def _write(path, keys, values, **kw) -> None:
    pq.write_table(pa.table({"k": keys, "v": values}), path, **kw)


def _duck(sql: str) -> list:
    return duckdb.sql(sql).fetchall()


def _rows(table: pa.Table) -> list:
    return [tuple(r.values()) for r in table.to_pylist()]


def test_a_repeated_query_reuses_its_plan_and_answers_as_duckdb(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _write("t.parquet", [1, 2, 1, None], [1.5, 2.5, 3.5, 4.0])
    _old("t.parquet")
    first, second = plan(SQL), plan(SQL)
    assert second.optimized is first.optimized  # planned once
    assert second.query is not first.query and second.stats is not first.stats  # each run its own state
    assert _rows(first.result()) == _rows(second.result()) == _duck(SQL)


def test_a_rewritten_file_is_planned_again(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _write("t.parquet", [1, 2, 1], [1.5, 2.5, 3.5])
    _old("t.parquet")
    first = plan(SQL)
    assert _rows(first.result()) == _duck(SQL)
    # a new schema (k becomes text) and new rows: the old plan would read k as an integer
    pq.write_table(pa.table({"k": ["x", "y", "x", "x"], "v": [1.0, 2.0, 3.0, 4.0]}), "t.parquet")
    _old("t.parquet")
    second = plan(SQL)
    assert second.optimized is not first.optimized
    assert second.optimized.schema() != first.optimized.schema()
    assert _rows(second.result()) == _duck(SQL) == [("x", 3, 8 / 3), ("y", 1, 2.0)]
    assert plan(SQL).optimized is second.optimized  # and that plan is kept in turn


def test_a_file_rewritten_to_the_same_size_and_mtime_is_planned_again(tmp_path, monkeypatch):
    """Size and modification time alone would not see this rewrite: the inode change time does."""
    monkeypatch.chdir(tmp_path)
    _write("t.parquet", [1, 2, 3], [1.0, 2.0, 3.0])
    _old("t.parquet")
    st = os.stat("t.parquet")
    first = plan(SQL)
    _write("t.parquet", [1.5, 2.5, 3.5], [1.0, 2.0, 3.0])  # k a DOUBLE now; the same byte count or not
    os.utime("t.parquet", ns=(st.st_atime_ns, st.st_mtime_ns))
    _old("t.parquet")
    second = plan(SQL)
    assert second.optimized is not first.optimized
    assert _rows(second.result()) == _duck(SQL)


def test_a_file_changed_while_it_could_have_been_planned_is_not_kept(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(plan_cache, "FRESH_NS", 60 * 10**9)  # (a margin no slow machine outlasts)
    _write("t.parquet", [1, 2], [1.0, 2.0])
    first = plan(SQL)  # the file is newer than the margin: its plan is not kept
    assert plan(SQL).optimized is not first.optimized


def test_now_is_evaluated_again_for_each_query(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    sql = "SELECT epoch_ms(current_timestamp) AS t"  # (tidal spells now() current_timestamp)
    first = plan(sql).result().column(0)[0].as_py()
    time.sleep(0.02)
    second = plan(sql).result().column(0)[0].as_py()
    assert second > first  # the constant folded at planning time is not reused
    _write("t.parquet", [1, 2], [1.0, 2.0])
    _old("t.parquet")
    sql = "SELECT k FROM 't.parquet' WHERE epoch_ms(current_timestamp) > 0 ORDER BY k"
    assert plan(sql).optimized is not plan(sql).optimized
    assert _rows(plan(sql).result()) == _duck(sql)


@pytest.mark.parametrize(
    "sql, calls",
    [
        ("SELECT now()", True),
        ("SELECT current_timestamp", True),
        ("SELECT current_date", True),
        ("SELECT CURRENT_DATE()", True),
        ("SELECT random()", True),
        ("SELECT today()", True),
        ("SELECT k FROM 't.parquet' WHERE ts > now() - INTERVAL 1 HOUR", True),
        ("SELECT k, COUNT(*) FROM 't.parquet' GROUP BY k", False),
        ("SELECT 1 + 2", False),
    ],
)
def test_volatile_calls_are_found_in_the_text(sql, calls):
    assert plan_cache.volatile(parse(sql)) is calls


def test_settings_and_working_directory_are_part_of_the_key(tmp_path, monkeypatch):
    for name, keys in (("a", [1, 1, 2]), ("b", [5, 6, 6, 6])):
        (tmp_path / name).mkdir()
        _write(tmp_path / name / "t.parquet", keys, [float(i) for i in range(len(keys))])
    _old(tmp_path)
    monkeypatch.chdir(tmp_path / "a")
    in_a = plan(SQL)
    assert plan(SQL, on_error="skip").optimized is not in_a.optimized
    assert _rows(in_a.result()) == _duck(SQL)
    monkeypatch.chdir(tmp_path / "b")  # the same text reads another file
    in_b = plan(SQL)
    assert in_b.optimized is not in_a.optimized
    assert _rows(in_b.result()) == _duck(SQL) == [(5, 1, 0.0), (6, 3, 2.0)]


def test_a_renamed_output_does_not_reach_the_next_query(tmp_path, monkeypatch):
    """``INSERT INTO t SELECT ...`` renames the query's columns on its Query object (tidal/cli/main.py)."""
    monkeypatch.chdir(tmp_path)
    _write("t.parquet", [1, 2], [1.0, 2.0])
    _old("t.parquet")
    first = plan(SQL)
    first.query.output_names = ("x", "y", "z")
    assert plan(SQL).result().column_names == ["k", "n", "a"]


def test_inputs_other_than_files_are_not_kept(tmp_path, monkeypatch):
    import io
    import sys

    monkeypatch.chdir(tmp_path)
    sql = "SELECT SUM(a) AS s FROM 'stdin.csv'"
    answers = []
    for text in ("a\n1\n2\n", "a\n1.5\n2\n"):  # standard input: new rows, a new type, no stamp
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(text.encode())))
        q = plan(sql)
        assert plan_cache.stamps(q.query, time.time_ns()) is None
        answers.append(q.result().column(0)[0].as_py())
    assert answers == [3, 3.5]
    written = "SELECT 1 AS one"
    assert plan(written).optimized is plan(written).optimized  # rows written in the query: kept
    assert plan(written, catalog={"v": None}).optimized is not plan(written, catalog={"v": None}).optimized
