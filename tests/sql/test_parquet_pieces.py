"""GROUP BY over a Parquet file grouped as it is read (issue 19): where numba is loaded, a query of one
numeric key with COUNT(*) and SUM/AVG of one float64 column groups each run of row groups in the
compiled pass while the next is decoded on a thread (tidal.sql.hashagg.PieceGroups, tidal.io.pieces).
Its answer must be the whole-file path's bit for bit (same groups, order, keys, sums in row order) for
any split into row groups; where the argument has a null or NaN it must fall back to the whole columns
with the same answer. The whole-file path is the oracle here; DuckDB checks the values too."""

from __future__ import annotations

import math
import os

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tidal.io import pieces
from tidal.sql import hashagg, plan, relational

KEYS = st.sampled_from([0.0, -0.0, 1.0, 2.5, -3.0, math.nan, math.inf, None])
VALUES = st.sampled_from([1.5, -2.25, 0.1, 1e300, -0.0, 7.0, 1e-300])
QUERIES = [
    "SELECT k, COUNT(*) AS n, AVG(v) AS a FROM 't.parquet' GROUP BY k",
    "SELECT k, SUM(v) AS s, COUNT(*) AS n, AVG(v) AS a FROM 't.parquet' GROUP BY k",
    "SELECT k, COUNT(*) AS n FROM 't.parquet' GROUP BY k",
    "SELECT k, AVG(v) AS a FROM 't.parquet' GROUP BY k HAVING COUNT(*) > 1",
]


@pytest.fixture(autouse=True)
def _numba_and_small_pieces(monkeypatch):
    import numba  # noqa: F401  (loaded: the compiled pass applies)

    monkeypatch.setattr(pieces, "PIECE_ROWS", 3)  # several pieces even in a small file


def _answers(sql: str, counter: list) -> tuple[pa.Table, pa.Table]:
    real_result, real_shape = hashagg.PieceGroups.result, relational._piece_shape

    def counted(self, calls):
        got = real_result(self, calls)
        counter.append(got is not None)
        return got

    hashagg.PieceGroups.result = counted
    try:
        piecewise = plan(sql).result()
    finally:
        hashagg.PieceGroups.result = real_result
    relational._piece_shape = lambda node: None
    try:
        whole = plan(sql).result()
    finally:
        relational._piece_shape = real_shape
    return piecewise, whole


def _same(a: pa.Table, b: pa.Table) -> None:
    assert a.schema == b.schema
    assert repr(a.to_pylist()) == repr(b.to_pylist())  # repr: NaN, -0.0 and every bit of the sums


@settings(max_examples=60, deadline=None)
@given(data=st.data(), n=st.integers(1, 40), group_rows=st.integers(1, 9), query=st.sampled_from(QUERIES))
def test_pieces_answer_as_the_whole_file_does(tmp_path_factory, data, n, group_rows, query):
    folder = tmp_path_factory.mktemp("pieces")
    keys = data.draw(st.lists(KEYS, min_size=n, max_size=n))
    values = data.draw(st.lists(VALUES, min_size=n, max_size=n))
    kind = data.draw(st.sampled_from(["float", "int"]))
    key = pa.array(keys, pa.float64())
    if kind == "int":
        key = pa.array([None if x is None or not math.isfinite(x) else int(x) for x in keys], pa.int64())
    pq.write_table(pa.table({"k": key, "v": pa.array(values, pa.float64())}), folder / "t.parquet",
                   row_group_size=group_rows)  # fmt: skip
    here = os.getcwd()
    os.chdir(folder)
    try:
        used: list = []
        piecewise, whole = _answers(query, used)
    finally:
        os.chdir(here)
    assert used == [True]  # the pieces' pass answered
    _same(piecewise, whole)


@pytest.mark.parametrize("bad", [None, math.nan])
def test_a_null_or_nan_argument_falls_back_to_the_whole_columns(tmp_path, monkeypatch, bad):
    values = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]
    values[5] = bad  # in a later piece: the earlier ones were grouped already
    pq.write_table(pa.table({"k": [1.0, 2.0, 1.0, None, 2.0, 1.0, 3.0], "v": values}), tmp_path / "t.parquet",
                   row_group_size=2)  # fmt: skip
    monkeypatch.chdir(tmp_path)
    for query in QUERIES:
        used: list = []
        piecewise, whole = _answers(query, used)
        assert used == ([False] if "v" in query.split("FROM")[0] else [True])
        _same(piecewise, whole)
    got = plan("SELECT k, COUNT(*) AS n, AVG(v) AS a FROM 't.parquet' GROUP BY k").result().to_pylist()
    sql = "SELECT k, COUNT(*) AS n, AVG(v) AS a FROM 't.parquet' GROUP BY k"
    expected = duckdb.sql(sql).to_arrow_table().to_pylist()
    assert sorted(map(repr, got)) == sorted(map(repr, expected))


def test_columns_in_another_order_than_the_files(tmp_path, monkeypatch):
    # two float64 columns, the argument before the key in the file: each is read as itself
    table = pa.table({"v": [1.0, 2.0, 4.0, 8.0, 16.0], "k": [1.0, 1.0, 2.0, 2.0, 2.0]})
    pq.write_table(table, tmp_path / "t.parquet", row_group_size=2)
    monkeypatch.chdir(tmp_path)
    for sql in (
        "SELECT k, AVG(v) AS a FROM 't.parquet' GROUP BY k",
        "SELECT v, AVG(k) AS a FROM 't.parquet' GROUP BY v",
    ):
        used: list = []
        piecewise, whole = _answers(sql, used)
        assert used == [True]
        _same(piecewise, whole)
        assert sorted(map(repr, piecewise.to_pylist())) == sorted(
            map(repr, duckdb.sql(sql).to_arrow_table().to_pylist())
        )
    assert plan("SELECT k, AVG(v) AS a FROM 't.parquet' GROUP BY k").result().to_pylist() == [
        {"k": 1.0, "a": 1.5},
        {"k": 2.0, "a": 28.0 / 3},
    ]


def test_many_groups_across_pieces_grow_the_table(tmp_path, monkeypatch):
    rng = np.random.default_rng(7)
    n = 50_000
    keys = rng.integers(0, 6_000, n).astype(np.float64) / 2
    keys[rng.random(n) < 0.01] = np.nan
    mask = rng.random(n) < 0.01
    table = pa.table({"k": pa.array(keys, mask=mask), "v": rng.normal(0, 1e6, n)})
    pq.write_table(table, tmp_path / "t.parquet", row_group_size=4_000)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(pieces, "PIECE_ROWS", 1)
    used: list = []
    sql = "SELECT k, COUNT(*) AS n, SUM(v) AS s, AVG(v) AS a FROM 't.parquet' GROUP BY k"
    piecewise, whole = _answers(sql, used)
    assert used == [True] and piecewise.num_rows > 3_000
    _same(piecewise, whole)
    duck = duckdb.sql(f"SELECT count(DISTINCT coalesce(k::VARCHAR, 'null')) FROM '{tmp_path / 't.parquet'}'")
    assert piecewise.num_rows == duck.fetchall()[0][0]


def test_the_pieces_are_the_files_rows_in_order_and_errors_reach_the_caller(tmp_path):
    table = pa.table({"a": np.arange(10_000), "b": np.arange(10_000) * 0.5})
    pq.write_table(table, tmp_path / "t.parquet", row_group_size=700)
    got = list(pieces.parquet_pieces(str(tmp_path / "t.parquet"), ["b", "a"], rows=1_500))
    assert [len(p) for p in got] == [2_100] * 4 + [1_600]  # runs of 3 row groups: 1,500 rows at least
    assert pa.Table.from_batches(got).equals(table.select(["b", "a"]))
    with pytest.raises((OSError, pa.ArrowException)):
        list(pieces.parquet_pieces(str(tmp_path / "missing.parquet"), ["a"]))
    stream = pieces.parquet_pieces(str(tmp_path / "t.parquet"), ["a"], rows=1)
    next(stream)
    stream.close()  # stops the thread


def test_runs_of_row_groups_hold_at_least_the_rows_asked_for():
    assert pieces._runs([5, 5, 5, 5, 5], 8) == [[0, 1], [2, 3], [4]]
    assert pieces._runs([10, 1, 1], 3) == [[0], [1, 2]]
    assert pieces._runs([], 3) == []
