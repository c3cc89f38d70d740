"""The relational path's shortcut for an aggregate's NaN fix (tidal/sql/relational.py, issue 19): SUM, AVG
and MAX of a DOUBLE column are planned as ``CASE WHEN nans > 0 THEN NaN ELSE value END``; where no group
saw a NaN the value column is taken as it is, without evaluating the CASE. Answers are DuckDB's, with
and without numba loaded, with NaN in some groups, in none, in every one, and with nulls."""

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
from sqlglot import exp

from tidal.sql import plan, relational
from tidal.sql.dialect import parse

VALUES = st.one_of(st.none(), st.sampled_from([1.5, -2.25, 0.0, -0.0, 1e300, 7.0, math.nan]))
QUERIES = [
    "SELECT k, AVG(v) AS a, SUM(v) AS s, MAX(v) AS m, COUNT(*) AS n FROM 't.parquet' GROUP BY k",
    "SELECT k, AVG(v) AS a FROM 't.parquet' GROUP BY k",
    "SELECT AVG(v) AS a, MIN(v) AS lo FROM 't.parquet'",
]


def _same(a, b) -> bool:
    if a is None or b is None:
        return a is b
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return a == b or math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-300)  # DuckDB sums in its own order
    return a == b


def _check(sql: str) -> None:
    got = sorted((tuple(r.values()) for r in plan(sql).result().to_pylist()), key=repr)
    want = sorted(duckdb.sql(sql).fetchall(), key=repr)
    assert len(got) == len(want), (got, want)
    for g, w in zip(sorted(got, key=lambda r: repr(r[0])), sorted(want, key=lambda r: repr(r[0])), strict=True):
        assert all(_same(x, y) for x, y in zip(g, w, strict=True)), (sql, g, w)


@pytest.fixture(params=["numpy", "numba"])
def engine(request):
    if request.param == "numba":
        import numba  # noqa: F401  (loaded: the compiled grouping pass applies)
    return request.param


@settings(max_examples=40, deadline=None)
@given(rows=st.lists(st.tuples(st.sampled_from([1, 2, 3, None]), VALUES), min_size=1, max_size=30))
def test_nan_fixes_answer_as_duckdb(tmp_path_factory, rows):
    folder = tmp_path_factory.mktemp("nan_fix")
    keys, values = zip(*rows, strict=True)
    table = pa.table({"k": pa.array(keys, pa.int64()), "v": pa.array(values, pa.float64())})
    pq.write_table(table, folder / "t.parquet")
    here = os.getcwd()
    os.chdir(folder)
    try:
        for sql in QUERIES:
            _check(sql)
    finally:
        os.chdir(here)


def test_the_shortcut_applies_only_without_nan(tmp_path, monkeypatch, engine):
    monkeypatch.chdir(tmp_path)
    calls = []
    real = relational._all_zero
    monkeypatch.setattr(relational, "_all_zero", lambda col: calls.append(real(col)) or calls[-1])
    v = np.linspace(0.0, 10.0, 50)
    pq.write_table(pa.table({"k": np.arange(50) % 3, "v": v}), "t.parquet")
    _check(QUERIES[0])
    assert calls and all(calls)  # no NaN: each fix is the value column
    calls.clear()
    v[7] = math.nan
    pq.write_table(pa.table({"k": np.arange(50) % 3, "v": v}), "t.parquet")
    _check(QUERIES[0])
    assert calls and not all(calls)  # a NaN: the CASE is evaluated


def test_the_pattern_is_the_builders_nan_fix():
    tree = parse("SELECT CASE WHEN n > 0 THEN CAST('nan' AS DOUBLE) ELSE x END, CASE WHEN n > 1 THEN 0.5 ELSE x END")
    first, second = (e.this if isinstance(e, exp.Alias) else e for e in tree.expressions)
    assert relational._nan_guard(first) == ("n", "x")
    assert relational._nan_guard(second) is None
    assert relational._all_zero(pa.array([0, 0], pa.int64())) and not relational._all_zero(pa.array([0, None]))
