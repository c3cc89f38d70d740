"""``SUMMARIZE`` of a file, a table function, a query (issue 18), against DuckDB on the same rows.

DuckDB's ``approx_unique`` (HyperLogLog) and quartiles (T-Digest) are estimates; tidal gives exact
values (``count(DISTINCT)``; ``quantile_disc`` for integers, ``quantile_cont`` for floats), so those
columns are checked against DuckDB's exact functions, and against DuckDB's SUMMARIZE where DuckDB's
estimate is exact. ``std`` may differ from DuckDB's streaming (Welford) value in the last bits, so it
is compared to 12 significant digits. Every other column must equal DuckDB's.
Also here: a global aggregate over no rows inside a UNION ALL (one row, as SUMMARIZE of nothing
needs), and CAST(... AS DECIMAL(p, s)) rounding to s digits.
"""

from __future__ import annotations

import contextlib
import math

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tidal.core.errors import PlanError, TidalError
from tidal.sql import plan

COLUMNS = ["column_name", "column_type", "min", "max", "approx_unique", "avg", "std", "q25", "q50", "q75", "count",
           "null_percentage"]  # fmt: skip
EXACT = ["column_name", "column_type", "min", "max", "avg", "count"]


def _duck(sql, table):
    con = duckdb.connect()
    con.register("t_arrow", table)
    out = con.sql(sql).arrow()
    return (out.read_all() if hasattr(out, "read_all") else out).to_pylist(), con


def _check(sql_tidal: str, source: str, table: pa.Table, directory):
    """SUMMARIZE by tidal (``sql_tidal``) against DuckDB's SUMMARIZE of ``source`` (DuckDB SQL over t_arrow)."""
    sql_duck = f"SUMMARIZE {source}"
    with contextlib.chdir(directory):
        got = plan(sql_tidal).result()
    assert got.column_names == COLUMNS
    got = got.to_pylist()
    want, con = _duck(sql_duck, table)
    assert [r["column_name"] for r in got] == [r["column_name"] for r in want]  # one row per column, in order
    for g, w in zip(got, want, strict=True):
        name = g["column_name"]
        for c in EXACT:
            assert g[c] == w[c], (name, c)
        pct = w["null_percentage"]
        assert (g["null_percentage"] is None) == (pct is None) and (pct is None or g["null_percentage"] == pct)
        if w["std"] is None or g["std"] is None:
            assert g["std"] == w["std"], name
        else:
            assert math.isclose(float(g["std"]), float(w["std"]), rel_tol=1e-12), name
        col = '"' + name.replace('"', '""') + '"'
        exact = con.execute(f"SELECT count(DISTINCT {col}) FROM ({source})").fetchone()[0]
        assert g["approx_unique"] == exact, name
        if w["approx_unique"] == exact:  # where DuckDB's estimate is exact, the same number
            assert g["approx_unique"] == w["approx_unique"]
        numeric = w["column_type"] in ("BIGINT", "DOUBLE", "INTEGER")
        for q, frac in (("q25", 0.25), ("q50", 0.5), ("q75", 0.75)):
            if not numeric:
                assert g[q] is None and w[q] is None
                continue
            fn = "quantile_disc" if w["column_type"] != "DOUBLE" else "quantile_cont"
            oracle = con.execute(f"SELECT CAST({fn}({col}, {frac}) AS VARCHAR) FROM ({source})").fetchone()[0]
            assert g[q] == oracle, (name, q)
            if w[q] == oracle:
                assert g[q] == w[q]


INTS = st.one_of(st.none(), st.integers(-50, 50))
FLOATS = st.one_of(st.none(), st.sampled_from([-2.5, -1.0, 0.0, 0.25, 1.5, 3.75, 10.0, 1e6]))
WORDS = st.one_of(st.none(), st.sampled_from(["", "a", "b", "zz", "Ä", "a b"]))


@settings(max_examples=20, deadline=None)
@given(rows=st.lists(st.tuples(INTS, FLOATS, WORDS, st.one_of(st.none(), st.booleans())), max_size=20))
def test_summarize_a_file_equals_duckdb(tmp_path_factory, rows):
    cols = list(zip(*rows, strict=True)) if rows else [(), (), (), ()]
    table = pa.table(
        {
            "i": pa.array(cols[0], pa.int64()),
            "f": pa.array(cols[1], pa.float64()),
            "s": pa.array(cols[2], pa.string()),
            "b": pa.array(cols[3], pa.bool_()),
        }
    )
    directory = tmp_path_factory.mktemp("summarize")
    pq.write_table(table, directory / "t.parquet")
    _check("SUMMARIZE 't.parquet'", "SELECT * FROM t_arrow", table, directory)
    _check(
        "SUMMARIZE SELECT i * 2 AS twice, s FROM 't.parquet' WHERE b",
        "SELECT i * 2 AS twice, s FROM t_arrow WHERE b",
        table,
        directory,
    )


def test_summarize_forms_csv_and_subquery(tmp_path):
    (tmp_path / "t.csv").write_text("a,b,c\n1,x,1.5\n1,y,2.5\n2,z,\n2,w,0.5\n3,,4.0\n")
    with contextlib.chdir(tmp_path):
        table = duckdb.sql("SELECT * FROM 't.csv'").arrow()
        table = table.read_all() if hasattr(table, "read_all") else table
        for form in ("SUMMARIZE 't.csv'", "SUMMARIZE read_csv('t.csv')", "SUMMARIZE (SELECT * FROM 't.csv')"):
            _check(form, "SELECT * FROM t_arrow", table, tmp_path)
        got = plan("SUMMARIZE SELECT a FROM 't.csv'").result().to_pylist()
    assert got == [
        {"column_name": "a", "column_type": "BIGINT", "min": "1", "max": "3", "approx_unique": 3, "avg": "1.8",
         "std": got[0]["std"], "q25": "1", "q50": "2", "q75": "2", "count": 5, "null_percentage": 0.0}
    ]  # fmt: skip


def test_summarize_refuses_dates_and_nested_columns_naming_them(tmp_path):
    import datetime as dt

    pq.write_table(
        pa.table({"t": [dt.datetime(2024, 1, 1)], "l": [[1, 2]], "x": [1]}),
        tmp_path / "d.parquet",
    )
    with contextlib.chdir(tmp_path):
        with pytest.raises(PlanError, match=r"SUMMARIZE of column t \(TIMESTAMP\) is not supported"):
            plan("SUMMARIZE 'd.parquet'").result()
        with pytest.raises(PlanError, match=r"SUMMARIZE of column l \(BIGINT\[\]\) is not supported"):
            plan("SUMMARIZE SELECT l FROM 'd.parquet'").result()
        got = plan("SUMMARIZE SELECT * EXCLUDE (t, l) FROM 'd.parquet'").result().to_pylist()
    assert [r["column_name"] for r in got] == ["x"]


def test_global_aggregates_over_no_rows_keep_their_row_inside_a_union(tmp_path):
    pq.write_table(pa.table({"i": pa.array([1, 2, 3], pa.int64())}), tmp_path / "t.parquet")
    sql = (
        "SELECT count(*) AS n, sum(i) AS s FROM 't.parquet' WHERE i > 10 UNION ALL "
        "SELECT count(i), max(i) FROM 't.parquet' WHERE i > 10 UNION ALL SELECT count(*), min(i) FROM 't.parquet'"
    )
    with contextlib.chdir(tmp_path):
        got = sorted(tuple(r.values()) for r in plan(sql).result().to_pylist())
        want = sorted(duckdb.sql(sql).fetchall())
        having = "SELECT count(*) AS n FROM 't.parquet' WHERE i > 10 HAVING count(*) > 0 UNION ALL SELECT 7"
        assert [r["n"] for r in plan(having).result().to_pylist()] == [7]
    assert got == want == [(0, None), (0, None), (3, 1)]


@pytest.mark.parametrize(
    "expr",
    [
        "CAST((1 - 2 / 3) * 100 AS DECIMAL(9,2))",
        "CAST(12.345 AS DECIMAL(9,2))",
        "CAST(-12.345 AS DECIMAL(9,2))",
        "CAST(2.675::DOUBLE AS DECIMAL(9,2))",
        "CAST(1.23456 AS DECIMAL)",
        "CAST(7.5 AS DECIMAL(4))",
        "CAST('3.14159' AS DECIMAL(5,2))",
        "CAST(NULL AS DECIMAL(9,2))",
    ],
)
def test_cast_to_decimal_keeps_its_scale_as_duckdb(tmp_path, expr):
    got = plan(f"SELECT {expr} AS x").result()
    want = duckdb.sql(f"SELECT {expr} AS x").to_arrow_table()
    assert got.schema.types == want.schema.types  # DECIMAL(p, s), not a DOUBLE
    assert got.to_pylist() == want.to_pylist()  # every digit


def test_a_typed_null_keeps_its_type_through_constant_folding(tmp_path):
    (tmp_path / "t.csv").write_text("a\n1\n2\n")
    with contextlib.chdir(tmp_path):
        got = plan("SELECT 'a' AS x UNION ALL SELECT CAST(NULL AS VARCHAR) FROM 't.csv'").result()
    assert got.schema.field("x").type == pa.string()
    assert sorted(got.column("x").to_pylist(), key=repr) == sorted(["a", None, None], key=repr)


@pytest.mark.parametrize(
    "value, decimal",
    [("12345.678", "DECIMAL(4,1)"), ("999.96", "DECIMAL(4,1)"), ("-1000", "DECIMAL(5,2)"),
     ("'nan'::DOUBLE", "DECIMAL(5,2)"), ("'inf'::DOUBLE", "DECIMAL(9,2)"), ("1e20", "DECIMAL")],
)  # fmt: skip
def test_cast_to_decimal_out_of_range_is_an_error_as_in_duckdb(value, decimal):
    sql = f"SELECT CAST({value} AS {decimal}) AS x"
    with pytest.raises(duckdb.ConversionException):
        duckdb.execute(sql).fetchall()
    with pytest.raises(TidalError, match=r"Could not cast value .* to DECIMAL"):
        plan(sql).result()
    within = f"SELECT CAST(x AS {decimal}) AS x FROM (VALUES (1.5), (NULL), (-9.25)) t(x)"
    assert [r["x"] for r in plan(within).result().to_pylist()] == [v for (v,) in duckdb.execute(within).fetchall()]


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT CASE WHEN x = 'a' THEN 0 ELSE CAST(x AS INTEGER) END AS v FROM (VALUES ('a'), ('2'), (NULL)) t(x)",
        "SELECT CASE WHEN x = 'a' THEN 0 WHEN x = 'b' THEN -1 ELSE CAST(x AS INTEGER) + 1 END AS v "
        "FROM (VALUES ('a'), ('2'), ('b')) t(x)",
        "SELECT CASE WHEN n > 0 THEN CAST(s / n * 100 AS DECIMAL(9,2)) END AS v "
        "FROM (VALUES (1.0, 2), (0.0, 0)) t(s, n)",
    ],
)
def test_a_case_branch_is_evaluated_only_on_the_rows_that_reach_it(sql):
    """A cast that would fail on rows another branch takes is no error (DuckDB evaluates CASE lazily)."""
    want = [None if v is None else float(v) for (v,) in duckdb.execute(sql).fetchall()]
    assert [None if r["v"] is None else float(r["v"]) for r in plan(sql).result().to_pylist()] == want
    failing = "SELECT CASE WHEN x = 'a' THEN 0 ELSE CAST(x AS INTEGER) END AS v FROM (VALUES ('a'), ('z')) t(x)"
    with pytest.raises(TidalError, match="z"):
        plan(failing).result()
