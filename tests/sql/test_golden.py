"""Golden batch queries: tidal's batch-csv answer equals DuckDB's on the same files.

Each query in ``queries.sql`` runs on tidal (``tidal query --format batch-csv``) and on DuckDB;
results are compared as multisets of rows (sorted), floats with a tolerance. Queries marked
``[agg]`` need the engine's aggregates (``tidal.agg``); until they exist the mark is a strict
xfail, so the day they land the suite notices. A query of tidal's own dialect (``session(...)``)
is followed by a ``-- duckdb:`` line and the DuckDB query computing the same answer; those live in
``session_queries.sql``.
"""

from __future__ import annotations

import io
import math
import os
import re
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.csv as pv
import pytest
import sqlglot

from tidal.cli.main import main as cli
from tidal.sql.dialect import Tidal

from .data import write_files

HERE = Path(__file__).parent
HAS_AGG = True
try:
    from tidal import agg  # noqa: F401
except ImportError:
    HAS_AGG = False


ORACLES: dict[str, str] = {}  # tidal query -> the DuckDB query computing its answer (when not itself)


def _queries(filename: str = "queries.sql"):
    text = (HERE / filename).read_text()
    out = []
    for block in re.split(r"^-- name: ", text, flags=re.M)[1:]:
        header, _, body = block.partition("\n")
        name = header.split()[0]
        marks = [pytest.mark.xfail(not HAS_AGG, reason="needs tidal.agg", strict=True)] if "[agg]" in header else []
        tidal_sql, _, oracle = body.partition("-- duckdb:")
        tidal_sql = tidal_sql.strip().rstrip(";")
        if oracle.strip():
            ORACLES[tidal_sql] = oracle.strip().rstrip(";")
        out.append(pytest.param(tidal_sql, id=name, marks=marks))
    return out


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("golden")
    write_files(d)
    return d


def _norm(v):
    if isinstance(v, float):
        return round(v, 6) if math.isfinite(v) else v
    if hasattr(v, "isoformat"):
        return v.isoformat()
    return v


def _rows(table: pa.Table) -> list[tuple]:
    rows = [tuple(_norm(v) for v in r.values()) for r in table.to_pylist()]
    return sorted(rows, key=lambda r: tuple((v is None, str(type(v)), v if v is not None else 0) for v in r))


def _same(a, b) -> bool:
    if isinstance(a, float | int) and isinstance(b, float | int) and not isinstance(a, bool):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-6)
    return a == b


def run_tidal_csv(sql: str, cwd: Path, capsys) -> pa.Table:
    old = os.getcwd()
    os.chdir(cwd)
    try:
        capsys.readouterr()
        assert cli(["query", sql, "--format", "batch-csv"]) == 0
        out = capsys.readouterr().out
    finally:
        os.chdir(old)
    return pv.read_csv(io.BytesIO(out.encode()))


def run_duckdb(sql: str, cwd: Path) -> pa.Table:
    # DuckDB reads Arrow IPC through an extension; the oracle reads the same rows from Parquet
    sql = sql.replace("'orders.arrow'", "'orders.parquet'")
    sql = sqlglot.transpile(sql, read="duckdb", write="duckdb")[0]
    con = duckdb.connect()
    old = os.getcwd()
    os.chdir(cwd)
    try:
        return con.sql(sql).to_arrow_table()
    finally:
        os.chdir(old)
        con.close()


@pytest.mark.parametrize("sql", _queries() + _queries("session_queries.sql"))
def test_golden(sql, data_dir, capsys):
    expected = run_duckdb(ORACLES.get(sql, sql), data_dir)
    got = run_tidal_csv(sql, data_dir, capsys)
    assert got.num_columns == expected.num_columns, (got.column_names, expected.column_names)
    # the CSV round trip loses types (a string '1' reads back as an integer): compare via CSV on both sides
    buf = io.BytesIO()
    pv.write_csv(expected, buf)
    expected = pv.read_csv(io.BytesIO(buf.getvalue()))
    g, e = _rows(got), _rows(expected)
    assert len(g) == len(e), f"{len(g)} rows vs DuckDB's {len(e)}:\n{g}\n{e}"
    ordered = sqlglot.parse_one(sql, read=Tidal).args.get("order") is not None  # not WITHIN GROUP's
    if ordered:  # the order is part of the answer
        g = [tuple(_norm(v) for v in r.values()) for r in got.to_pylist()]
        e = [tuple(_norm(v) for v in r.values()) for r in expected.to_pylist()]
    for rg, re_ in zip(g, e, strict=True):
        assert all(_same(a, b) for a, b in zip(rg, re_, strict=True)), f"{rg} != {re_}\nall: {g}\nduckdb: {e}"
