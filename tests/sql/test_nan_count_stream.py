"""The NaN count the SQL builder puts beside an aggregate of a DOUBLE column (``CASE WHEN isnan(x) THEN 1
ELSE 0 END``), computed by numpy on the stream path (``tidal.expr.sqlcompile``), gives SQL's evaluator's
values for any float column (NaN, infinities, NULL, sliced arrays); and a tumbling window's SUM over a
column holding NaN and NULL answers as DuckDB's ``time_bucket`` GROUP BY does."""

from __future__ import annotations

import contextlib
import math

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tidal.core.batch import EventBatch
from tidal.expr.nodes import Case, Col, Const, SqlCall
from tidal.expr.sqlcompile import CompiledSql
from tidal.expr.sqlkernels import SqlEvaluator
from tidal.sql import plan

from .test_nan_comparisons import canonical

VALUES = st.sampled_from([math.nan, -math.inf, math.inf, -1.5, -0.0, 0.0, 2.0, None])
NAN_COUNT = Case(whens=((SqlCall("isnan", (Col("x"),)), Const(1)),), default=Const(0))


@settings(max_examples=150, deadline=None)
@given(
    values=st.lists(VALUES, min_size=1, max_size=40),
    cut=st.integers(0, 5),
    type_=st.sampled_from([pa.float64(), pa.float32()]),
)
def test_the_nan_count_is_sql_evaluators(values, cut, type_):
    col = pa.array(values, type_).slice(min(cut, len(values) - 1))  # an offset into the buffers too
    n = len(col)
    sql = CompiledSql(NAN_COUNT, {}, truth=False)
    batch = EventBatch(np.arange(n, dtype=np.int64), None, {"x": col})
    want = SqlEvaluator({"x": col}, n).array(NAN_COUNT)
    for got in (sql.project(batch)["value"], sql.project_rows(batch)["value"]):
        assert got.type == want.type and got.to_pylist() == want.to_pylist()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(amounts=st.lists(VALUES, min_size=1, max_size=30), seed=st.integers(0, 1000))
def test_a_tumbling_sum_over_nan_and_null_is_duckdbs(tmp_path, amounts, seed):
    rng = np.random.default_rng(seed)
    n = len(amounts)
    ts = np.sort(rng.integers(0, 4 * 3_600_000_000, n)).astype("datetime64[us]")
    table = pa.table(
        {
            "ts": pa.array(ts),
            "category": pa.array(rng.choice(["a", "b"], n)),
            "amount": pa.array(amounts, pa.float64()),
        }
    )
    pq.write_table(table, tmp_path / "t.parquet")
    tumble = (
        "tumble(source => TABLE(max_diff_watermark(source => TABLE('t.parquet'), time_field => DESCRIPTOR(ts), "
        "offset => INTERVAL 10 SECONDS)), time_field => DESCRIPTOR(ts), window_length => INTERVAL 1 HOUR)"
    )
    with contextlib.chdir(tmp_path):
        got = plan(
            f"SELECT window_start, category, COUNT(*) AS n, SUM(amount) AS total, COUNT(amount) AS c FROM {tumble} e "
            "GROUP BY window_start, category"
        ).result()
    con = duckdb.connect()
    con.register("t", table)
    want = con.sql(
        "SELECT time_bucket(INTERVAL 1 HOUR, ts) AS window_start, category, COUNT(*) AS n, SUM(amount) AS total, "
        "COUNT(amount) AS c FROM t GROUP BY ALL"
    ).arrow()
    want = want.read_all() if hasattr(want, "read_all") else want
    assert canonical(got.to_pylist()) == canonical(want.to_pylist())
