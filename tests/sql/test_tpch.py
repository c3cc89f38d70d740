"""The 22 TPC-H queries through tidal's SQL, each answer equal to DuckDB's over the same Parquet files.

The tables come from ``tpchgen-cli`` (the TPC-H generator, spec-conformant data; DECIMAL(15,2) money, DATE
dates, text as Arrow string views) at scale factor 0.01 (``TIDAL_TPCH_SF`` sets another), written once per
session. The queries are DuckDB's copies of the specification's text with its validation parameters
(``tpch_queries/``, vendored unchanged; Q15's view is a CTE there). Tidal reads ``FROM lineitem`` as the
file ``lineitem.parquet`` of the working directory; DuckDB reads the same files through views.

Answers must be equal: the same column names and Arrow types (a SUM of integers is tidal's BIGINT where
DuckDB has a HUGEINT), DECIMALs exactly, DOUBLEs exactly unless :data:`DOUBLE_TOLERANCE` names the column and
says why, rows in the order the query's ORDER BY fixes (rows tied on every ORDER BY column may come in any
order, and must then be the same multiset; a LIMIT must not cut through such a tie). A query tidal refuses
is listed in :data:`REFUSED` with the construct; the list must not grow, and a listed query that starts to
run fails until it is taken off (so an answer it starts to give is checked).
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import shutil
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest
import sqlglot

import tidal.sql
from tidal.core.errors import TidalError

QUERIES = Path(__file__).parent / "tpch_queries"
TABLES = ("customer", "lineitem", "nation", "orders", "part", "partsupp", "region", "supplier")

# query -> the construct tidal refuses in it (the error's text must mention it)
REFUSED: dict[str, str] = {}

# (query, column) -> why that DOUBLE column may differ from DuckDB's in its last bits (relative 1e-9)
DOUBLE_TOLERANCE = {
    ("q01", column): "AVG of a DECIMAL: DuckDB converts the exact sum to DOUBLE and then divides by the count "
    "(two roundings, 35785.709306937344 for 53234821165/1487600 at SF 0.01); tidal rounds the exact quotient "
    "once (35785.70930693735); test_q01_averages_are_the_nearest_doubles checks tidal's exactly"
    for column in ("avg_qty", "avg_price", "avg_disc")
}


def _generator() -> str | None:
    beside = Path(sys.executable).with_name("tpchgen-cli")
    return str(beside) if beside.exists() else shutil.which("tpchgen-cli")


@pytest.fixture(scope="session")
def tpch_dir(tmp_path_factory) -> Path:
    tool = _generator()
    if tool is None:
        pytest.skip("tpchgen-cli is not installed (pip install tpchgen-cli: the test extra has it)")
    scale = os.environ.get("TIDAL_TPCH_SF", "0.01")
    out = tmp_path_factory.mktemp(f"tpch_sf{scale}")
    subprocess.run(
        [tool, "parquet", "-s", scale, "-o", str(out), "--no-progress", "-q"], check=True, capture_output=True
    )
    assert sorted(p.stem for p in out.glob("*.parquet")) == list(TABLES)
    return out


@pytest.fixture(scope="session")
def duck(tpch_dir):
    con = duckdb.connect()
    for table in TABLES:
        con.execute(f"CREATE VIEW {table} AS SELECT * FROM read_parquet('{tpch_dir / table}.parquet')")
    return con


def _text(name: str) -> str:
    return (QUERIES / f"{name}.sql").read_text()


def _order_columns(sql: str) -> list[str]:
    """The output columns the query's outermost ORDER BY names (every TPC-H query orders by output columns)."""
    order = sqlglot.parse_one(sql, read="duckdb").args.get("order")
    return [o.this.name for o in order.expressions] if order else []


def _limit(sql: str) -> int | None:
    limit = sqlglot.parse_one(sql, read="duckdb").args.get("limit")
    return int(limit.expression.name) if limit else None


def _runs(rows: list[dict], keys: list[str]) -> list[list[dict]]:
    """Consecutive rows with equal values of ``keys`` (all rows one run when there are no keys)."""
    runs: list[list[dict]] = []
    for row in rows:
        if runs and all(runs[-1][0][k] == row[k] for k in keys):
            runs[-1].append(row)
        else:
            runs.append([row])
    return runs


def _same_value(name: str, column: str, got, want) -> bool:
    if isinstance(want, float) and isinstance(got, float):
        if (name, column) in DOUBLE_TOLERANCE:
            return math.isclose(got, want, rel_tol=1e-9)
        return got == want or (math.isnan(got) and math.isnan(want))
    return type(got) is type(want) and got == want


def _same_rows(name: str, got: list[dict], want: list[dict]) -> bool:
    return len(got) == len(want) and all(
        _same_value(name, c, g[c], w[c]) for g, w in zip(got, want, strict=True) for c in w
    )


def _key(row: dict) -> tuple:
    return tuple(repr(v) for v in row.values())


def _check(name: str, got: list[dict], want: list[dict], keys: list[str]) -> None:
    assert len(got) == len(want), f"{name}: {len(got)} rows, DuckDB {len(want)}"
    got_runs, want_runs = _runs(got, keys), _runs(want, keys)
    assert len(got_runs) == len(want_runs), f"{name}: rows ordered differently from DuckDB's"
    for g, w in zip(got_runs, want_runs, strict=True):
        assert len(g) == len(w), f"{name}: rows ordered differently from DuckDB's near {w[0]}"
        if len(w) > 1:  # tied on every ORDER BY column: any order, the same rows
            g, w = sorted(g, key=_key), sorted(w, key=_key)
        for gr, wr in zip(g, w, strict=True):
            assert _same_rows(name, [gr], [wr]), f"{name}: tidal {gr}\n  DuckDB {wr}"


def _limit_cuts_no_tie(duck, sql: str, keys: list[str], want: list[dict]) -> bool:
    """Whether the LIMIT (if any) falls between rows that differ on the ORDER BY columns, so that which
    rows it keeps is fixed (else SQL leaves the last rows to the engine)."""
    limit = _limit(sql)
    if limit is None or len(want) < limit:
        return True
    more = re.sub(r"LIMIT\s+\d+", f"LIMIT {limit + 1}", sql, flags=re.I)
    rows = duck.sql(more).to_arrow_table().to_pylist()
    return len(rows) <= limit or any(rows[limit][k] != rows[limit - 1][k] for k in keys)


NAMES = [f"q{i:02d}" for i in range(1, 23)]


@pytest.mark.parametrize("name", NAMES)
def test_tpch_query(name, tpch_dir, duck, monkeypatch):
    sql = _text(name)
    monkeypatch.chdir(tpch_dir)
    if name in REFUSED:
        with pytest.raises(TidalError, match=REFUSED[name]):
            tidal.sql.plan(sql).result()
        return
    got = tidal.sql.plan(sql).result()
    want = duck.sql(sql).to_arrow_table()
    assert got.schema.names == want.schema.names
    # DuckDB sums integers in a HUGEINT (Arrow: DECIMAL(38, 0)); tidal in a BIGINT, an overflow its error
    huge = [
        c
        for c, g, w in zip(want.schema.names, got.schema.types, want.schema.types, strict=True)
        if g == pa.int64() and w == pa.decimal128(38, 0)
    ]
    for c in huge:
        want = want.set_column(want.schema.get_field_index(c), c, want.column(c).cast(pa.int64()))
    assert got.schema.types == want.schema.types, f"{name}: {got.schema} vs DuckDB's {want.schema}"
    keys = _order_columns(sql)
    rows = want.to_pylist()
    assert _limit_cuts_no_tie(duck, sql, keys, rows), f"{name}: the LIMIT cuts through rows tied on {keys}"
    _check(name, got.to_pylist(), rows, keys)


def test_q01_averages_are_the_nearest_doubles(tpch_dir, monkeypatch):
    """Q1's AVG over DECIMALs is the double nearest the exact mean: its SUM and COUNT are in the same row."""
    monkeypatch.chdir(tpch_dir)
    rows = tidal.sql.plan(_text("q01")).result().to_pylist()
    assert rows
    for row in rows:
        assert row["avg_qty"] == float(Fraction(row["sum_qty"]) / row["count_order"])
        assert row["avg_price"] == float(Fraction(row["sum_base_price"]) / row["count_order"])


def test_refusals_name_queries():
    assert set(REFUSED) <= set(NAMES)


# git's blob ids of DuckDB's files (extension/tpch/dbgen/queries/qNN.sql at the commit in tpch_queries/README.md)
BLOBS = {
    "q01": "1513b8c3a40743d3bc3b8271afe231ac131f2c07", "q02": "206a4727f089343dd631a24bc3fbd2f99ac1aa31",
    "q03": "b05a73b475e01981cfa3e2b8ce3380adc02f8a28", "q04": "4c57789ac3ce4816c9b8ecfab0a607534dd3a39f",
    "q05": "411596ed34e21f3157797637a3a5cc61f562b88b", "q06": "162e516b2df14753351ff90efbaafa8f0c7a2ba3",
    "q07": "695b953bcc40dd3a2e19eccfc48602f653ee6c07", "q08": "6c80028f4686f3ecd3b441e38dfabf6e6555929d",
    "q09": "4c166599100fbcb0f2906d12654b5f9ce862f4b8", "q10": "ae37ab9997f583ff6f7a14938a4acc03c2e5ea5c",
    "q11": "527e2d1c873a5386db68ed11e187beb3da05eef4", "q12": "479cd3edf856830eb371d285cd220d787731e046",
    "q13": "e78f21203b231f1fa700edc038f97d3ed0663f86", "q14": "327d5cd81c38adc4930ba2005987455faa7c2b23",
    "q15": "87b3e723c6617085314362ea1e9c2d1a3b7d24ff", "q16": "bfb8c74b7fd53db18fc7ad47ff0e64c8b5e7c44f",
    "q17": "964fea1f1031d85ff4bcfb3cf6e6df4f81744acf", "q18": "3f6886a48b2470523ceaa34c74513c7a01fe056c",
    "q19": "104650135dda9a0c6c6460654ab3b026c85c8596", "q20": "8760453a1e3def6efa1cecdb5ad14b770ae08730",
    "q21": "19d18fd37c0d8f939243a8ae2b3c1bb3b901653f", "q22": "7ce29a597297c904953ad3e245baaef96552577a",
}  # fmt: skip


def test_vendored_queries_unchanged():
    """The 22 files are DuckDB's, byte for byte."""
    assert sorted(p.stem for p in QUERIES.glob("q*.sql")) == NAMES
    for name in NAMES:
        data = (QUERIES / f"{name}.sql").read_bytes()
        assert hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest() == BLOBS[name], name
