"""One expression compiler for lambdas and SQL (tidal.expr): a SQL predicate and the equivalent lambda
become the same tree and run on the same kernels (numpy, then the same numba filter loop); SQL's
NULL rules hold through them; a lambda is translated once for planning and running."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
import sqlglot

import tidal
from tidal.core.batch import EventBatch
from tidal.expr import compile as compile_mod
from tidal.expr.compile import CompiledLambda
from tidal.expr.lambdas import translate as translate_lambda
from tidal.ops.selection import SelectOp, WhereOp
from tidal.sql import SqlTypeError, plan
from tidal.sql.expressions import compiled, translate, translate_record

SCHEMA = pa.schema([("x", pa.int64()), ("y", pa.float64()), ("s", pa.string())])

PAIRS = [
    ("x > 5 AND y < 2.5", lambda e: e.x > 5 and e.y < 2.5),
    ("x * 3 + 1 <> 0 OR NOT y >= 0", lambda e: e.x * 3 + 1 != 0 or not e.y >= 0),
    ("abs(x) - y / 2 <= 10", lambda e: abs(e.x) - e.y / 2 <= 10),
    ("s = 'a' AND x = 1 AND -y > 0", lambda e: e.s == "a" and e.x == 1 and -e.y > 0),
]


def sql(text: str):
    return translate(sqlglot.parse_one(text, read="duckdb"))


def batch(**columns) -> EventBatch:
    cols = {k: pa.array(v, SCHEMA.field(k).type) for k, v in columns.items()}
    n = len(next(iter(cols.values())))
    return EventBatch(sync=np.arange(n, dtype=np.int64), other=None, columns=cols)


class _Collect:
    def __init__(self):
        self.batches = []

    def on_batch(self, b):
        self.batches.append(b.compact())


def run(op, b: EventBatch) -> dict:
    sink = _Collect()
    op.downstream.append(sink)
    op.on_batch(b)
    out = {}
    for got in sink.batches:
        for k, v in got.columns.items():
            out.setdefault(k, []).extend(v.to_pylist())
    return out


@pytest.mark.parametrize(("text", "fn"), PAIRS)
def test_sql_predicate_and_lambda_are_the_same_tree_and_mode(text, fn):
    expr = sql(text)
    # over the input's types (a DECIMAL literal beside a DOUBLE column is that DOUBLE, as in DuckDB)
    assert compiled(expr, truth=True, schema=SCHEMA).node == translate_lambda(fn)
    lam = CompiledLambda(fn, SCHEMA, truth=True)
    assert compiled(expr, truth=True, schema=SCHEMA).describe() == lam.describe()
    assert lam.describe().startswith("columnar: ")


@pytest.mark.parametrize(("text", "fn"), PAIRS[:3])
def test_sql_predicate_gets_the_lambdas_numba_filter_loop(monkeypatch, text, fn):
    monkeypatch.setattr(compile_mod, "JIT_THRESHOLD", 1)
    rng = np.random.default_rng(7)
    b = batch(x=rng.integers(-20, 20, 500).tolist(), y=rng.normal(0, 5, 500).tolist(), s=["a"] * 500)
    sql_op = WhereOp(compiled(sql(text), truth=True, schema=SCHEMA))
    lam_op = WhereOp(CompiledLambda(fn, SCHEMA, truth=True))
    assert run(sql_op, b) == run(lam_op, b)
    (sql_plan,), (lam_plan,) = sql_op._plans.values(), lam_op._plans.values()
    assert sql_plan.run is not None and sql_plan.body == lam_plan.body  # one kernel, compiled once


def test_sql_null_semantics_hold_through_the_shared_kernels():
    b = batch(x=[1, None, 9, None, -7], y=[1.0, 2.0, -1.0, -3.0, 0.0])
    cases = {
        "x > 5": [False, False, True, False, False],
        "NOT x > 5": [True, False, False, False, True],
        "x > 5 OR y > 0": [True, True, True, False, False],
        "x > 5 AND y < 0": [False, False, True, False, False],
        "x IS NULL": [False, True, False, True, False],
        "x % 3 = -1": [False, False, False, False, True],  # SQL's remainder takes the dividend's sign
        # floating point division: no error, infinite; 0.0 / 0 is NaN, which DuckDB orders above every number
        "y / 0 > 1": [True, True, False, False, True],
    }
    for text, want in cases.items():
        got = compiled(sql(text), truth=True, schema=SCHEMA).mask(b)
        assert got.tolist() == want, text
    dense = batch(x=[1, 6, 9], y=[1.0, 2.0, -1.0])  # no nulls: the same predicate runs on the lambdas' kernels
    assert compiled(sql("x > 5 OR y > 0"), truth=True, schema=SCHEMA).mask(dense).tolist() == [True, True, True]
    zeros = batch(x=[1, 6, 9], y=[0.0, 2.0, float("nan")])  # a NaN made by arithmetic, and one in the column
    assert compiled(sql("y / 0 > 1"), truth=True, schema=SCHEMA).mask(zeros).tolist() == [True, True, True]
    assert compiled(sql("y = y"), truth=True, schema=SCHEMA).mask(zeros).tolist() == [True, True, True]


def test_sql_projection_keeps_types_and_nulls_either_way():
    expr = translate_record(
        [("d", sqlglot.parse_one("x * 2 + 1")), ("q", sqlglot.parse_one("y / 2")), ("x", sqlglot.parse_one("x"))]
    )
    for values in ([1, 2, 3], [1, None, 3]):
        out = run(SelectOp(compiled(expr, truth=False, schema=SCHEMA)), batch(x=values, y=[1.0, 2.0, 3.0]))
        assert out["d"] == [None if v is None else v * 2 + 1 for v in values] and out["x"] == values
        assert out["q"] == [0.5, 1.0, 1.5]


def test_sql_errors_still_name_the_expression():
    op = WhereOp(compiled(sql("CAST(s AS INT) > 1"), truth=True, schema=SCHEMA, rewrite=lambda m: "user: " + m))
    with pytest.raises(SqlTypeError, match="user: cannot evaluate CAST"):
        run(op, batch(s=["1", "x"]))


def test_sql_where_explains_as_the_lambda_does(tmp_path):
    path = tmp_path / "t.parquet"
    table = pa.table({"x": [1, 6, 9], "y": [1.0, 2.0, -1.0]})
    import pyarrow.parquet as pq

    pq.write_table(table, path)
    text = plan(f"SELECT x FROM '{path}' WHERE x * 2 > 5 OR y < -0.5").explain()
    lam = tidal.from_arrow(table.append_column("t", pa.array([0, 0, 0])), time="t")
    assert "columnar: (((x * 2) > 5) or (y < -0.5))" in text
    assert "columnar: (((x * 2) > 5) or (y < -0.5))" in lam.where(lambda e: e.x * 2 > 5 or e.y < -0.5).explain()
    assert plan(f"SELECT x FROM '{path}' WHERE x * 2 > 5 OR y < -0.5").result().column("x").to_pylist() == [6, 9]


def test_a_lambda_is_translated_once_for_planning_and_running(monkeypatch):
    calls = []
    real = compile_mod.translate
    monkeypatch.setattr(compile_mod, "translate", lambda fn, **kw: calls.append(fn) or real(fn, **kw))
    t = pa.table({"t": [0, 1, 2], "x": [1, 6, 9]})
    s = tidal.from_arrow(t, time="t").where(lambda e: e.x > 5)
    assert s.to_arrow().column("x").to_pylist() == [6, 9]
    s.explain()
    assert len(calls) == 1


def test_sql_filter_before_a_count_runs_the_compiled_loop(monkeypatch, tmp_path):
    import pyarrow.parquet as pq

    monkeypatch.setattr(compile_mod, "JIT_THRESHOLD", 1)
    x = np.arange(-500, 500)
    pq.write_table(pa.table({"x": x, "y": x * 0.5}), tmp_path / "t.parquet")
    q = f"SELECT count(*) AS n, sum(x) AS s FROM '{tmp_path / 't.parquet'}' WHERE x * 3 + 1 < 200 OR y > 100.5"
    keep = (x * 3 + 1 < 200) | (x * 0.5 > 100.5)
    assert plan(q).result().to_pylist() == [{"n": int(keep.sum()), "s": int(x[keep].sum())}]
    empty = f"SELECT count(*) AS n FROM '{tmp_path / 't.parquet'}' WHERE x * 3 + 1 < 200"  # a select of no fields
    assert plan(empty).result().to_pylist() == [{"n": int((x * 3 + 1 < 200).sum())}]


THRESHOLD = 5


def test_a_global_changed_between_plan_and_run_is_read_again():
    """A translation is cached per lambda, but only while the names it turned into constants keep
    their values: otherwise columnar batches and row-mode batches would disagree."""
    global THRESHOLD
    THRESHOLD = 5
    stream = tidal.from_arrow(pa.table({"t": [1, 2, 3], "v": [4, 6, 8]}), time="t").where(lambda e: e.v > THRESHOLD)
    assert stream.count() == 2
    THRESHOLD = 3
    assert stream.count() == 3
    limit = 7
    closed = stream.where(lambda e: e.v < limit)
    limit = 5  # noqa: F841 (read by the lambda above when the query runs)
    assert closed.count() == 1
