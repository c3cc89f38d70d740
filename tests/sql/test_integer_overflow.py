"""SQL integer arithmetic that leaves BIGINT's range is an error, as in DuckDB, never a wrapped value.

The lambdas' compiled kernels wrap around (two's complement), so a batch whose columns' minima and
maxima could take + - * or unary minus out of range goes SQL's way, which raises if a row overflows;
checked against DuckDB on random columns near the limits, in SELECT and WHERE, and over batches
where only some rows are large."""

from __future__ import annotations

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sql.test_nan_comparisons import canonical, tidal_and_duckdb
from tidal.core.errors import TidalError

BIG = 2**62
VALUES = st.sampled_from([0, 1, -1, 3, 7, -(2**31), 2**31, BIG, -BIG, 2**63 - 1, -(2**63), None])


def outcome(run):
    try:
        return ("rows", canonical(run()))
    except (TidalError, duckdb.Error) as exc:
        assert "overflow" in str(exc).lower(), exc
        return ("overflow",)


@settings(max_examples=80, deadline=None)
@given(
    a=st.lists(VALUES, min_size=1, max_size=10),
    b_seed=st.lists(VALUES, min_size=10, max_size=10),
    expr=st.sampled_from(["a + b", "a - b", "a * b", "-a", "abs(a)", "a * 2 + b", "(a - b) * 3", "a + 1 - b"]),
    where=st.booleans(),
)
def test_integer_arithmetic_overflows_as_in_duckdb(tmp_path_factory, a, b_seed, expr, where):
    n = len(a)
    table = pa.table(
        {"i": pa.array(range(n), pa.int64()), "a": pa.array(a, pa.int64()), "b": pa.array(b_seed[:n], pa.int64())}
    )
    directory = tmp_path_factory.mktemp("overflow")
    pq.write_table(table, directory / "t.parquet")
    sql = f"SELECT i FROM 't.parquet' WHERE {expr} >= i" if where else f"SELECT i, {expr} AS v FROM 't.parquet'"
    results = {}

    def run(which):
        got, want = tidal_and_duckdb(sql, table, directory)
        return got if which == "tidal" else want

    # DuckDB is run separately so that one side's error does not hide the other's rows
    results["tidal"] = outcome(lambda: run("tidal"))
    results["duckdb"] = outcome(lambda: _duckdb(sql, table))
    assert results["tidal"] == results["duckdb"], sql


def _duckdb(sql: str, table: pa.Table) -> list[dict]:
    con = duckdb.connect()
    con.register("t_arrow", table)
    out = con.sql(sql.replace("'t.parquet'", "t_arrow")).arrow()
    return (out.read_all() if hasattr(out, "read_all") else out).to_pylist()


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT 4611686018427387904 * 2 AS v",
        "SELECT 3037000500 * 3037000500 AS v",
        "SELECT 9223372036854775807 + 1 AS v",
    ],
)
def test_constant_arithmetic_that_overflows_is_an_error(sql):
    from tidal.sql import plan

    with pytest.raises(duckdb.Error, match="(?i)overflow"):
        duckdb.sql(sql).fetchall()
    with pytest.raises(TidalError, match="integer overflow"):
        plan(sql).result()


def test_bounds_of_integer_expressions_decide_which_batches_leave_the_kernels(tmp_path):
    """Bounds from minima and maxima (exact interval arithmetic): small values keep the fast kernels."""
    from tidal.expr.nodes import BinOp, Call, Col, Const, Unary
    from tidal.expr.sqlcompile import _bounds

    n = 50_000
    table = pa.table(
        {"i": pa.array(range(n), pa.int64()), "a": pa.array([k % 1000 - 500 for k in range(n)], pa.int64())}
    )
    cols = {"i": table.column("i"), "a": table.column("a")}
    expr = BinOp("-", BinOp("*", Col("a"), Const(3)), Col("i"))
    assert _bounds(expr, cols, {}) == (-500 * 3 - (n - 1), 499 * 3)
    assert _bounds(Call("abs", (Col("a"),)), cols, {}) == (0, 500)
    assert _bounds(Unary("-", BinOp("*", Col("i"), Col("a"))), cols, {}) == (-(n - 1) * 499, (n - 1) * 500)
    pq.write_table(table, tmp_path / "t.parquet")
    sql = "SELECT i, a * 3 - i AS v FROM 't.parquet' WHERE a * 2 > 100"
    got, want = tidal_and_duckdb(sql, table, tmp_path)
    assert canonical(got) == canonical(want)


def test_integer_averages_divide_the_exact_sum_on_every_path(tmp_path):
    """AVG of BIGINT divides the exact sum (DuckDB sums in HUGEINT): a float sum of 2**62-sized values
    loses the small ones (CI found AVG = 0 where DuckDB says 1/14), and a sum may leave BIGINT's range
    in the middle and come back, or stay out of it (an average, not an overflow)."""
    import contextlib
    from fractions import Fraction

    import tidal
    from tidal import agg
    from tidal.sql import plan
    from tidal.sql.query import final_snapshot

    big = 2**62
    groups = {1: [0, 1, big, big, -big, -big], 2: [big, big, big, 5], 3: [2**63 - 1, 2**63 - 1, None], 4: [7, 8]}
    rows = [(k, v) for k, vs in groups.items() for v in vs]
    table = pa.table({"t": list(range(len(rows))), "k": [k for k, _ in rows], "i": [v for _, v in rows]})
    valid = {k: [v for v in vs if v is not None] for k, vs in groups.items()}
    want = {k: float(Fraction(sum(vs), len(vs))) for k, vs in valid.items()}
    pq.write_table(table, tmp_path / "t.parquet")
    with contextlib.chdir(tmp_path):
        q = plan("SELECT k, AVG(i) AS a FROM 't.parquet' GROUP BY k")
        relational = q.result()
        streamed = q.finish(final_snapshot(q.events()))
    duck = duckdb.connect()
    duck.register("t_arrow", table)
    windowed = tidal.from_arrow(table, time="t").tumbling_window(1000)
    answers = {
        "relational": relational,
        "stream engine": streamed,
        "fused window": windowed.group_aggregate("k", a=agg.average("i")).to_arrow(),
        "window engine": windowed.group_aggregate("k", a=agg.average("i"), variant="window").to_arrow(),
        "duckdb": duck.sql("SELECT k, AVG(i) AS a FROM t_arrow GROUP BY k").to_arrow_table(),
    }
    for path, got in answers.items():
        assert dict(zip(got.column("k").to_pylist(), got.column("a").to_pylist(), strict=True)) == want, path
