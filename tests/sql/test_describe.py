"""DESCRIBE of a file or a query against DuckDB's (column names and DuckDB's type names, nested
types included); JSON fields of dates read as DATE (and dates mixed with timestamps as text), as
DuckDB reads them; SUMMARIZE refused by name."""

from __future__ import annotations

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tidal.core.errors import TidalError
from tidal.sql import plan

JSON = (
    '{"ts": "2024-03-01 12:00:00.099", "o": {"a": 1, "b": "x"}, "l": [1, 2, 3], "d": "2024-03-01", '
    '"e": "2024-03-01 00:00:00", "f": "2024-03-01", "g": null}\n'
    '{"ts": "2024-03-02 13:00:00", "o": {"a": 2, "b": null}, "l": [], "d": "2024-03-02", '
    '"e": "2024-03-02 10:00:00", "f": "2024-03-01 10:00:00", "g": "2024-01-01"}\n'
    '{"ts": null, "o": null, "l": null, "d": null, "e": null, "f": null}\n'
)


@pytest.fixture
def where(in_dir):
    (in_dir / "j.json").write_text(JSON)
    duckdb.connect().sql(
        "COPY (SELECT 1::INT AS i, 2::BIGINT AS b, 1.5::DOUBLE AS d, 'x' AS s, true AS t, DATE '2024-01-01' AS dt, "
        "TIMESTAMP '2024-01-01 10:00:00' AS ts, [1, 2] AS l, {'a': 1, 'B c': 'x'} AS st, 1.5::FLOAT AS f, "
        "2::SMALLINT AS sm, [{'k': 'v'}] AS ls) TO 'types.parquet' (FORMAT parquet)"
    )
    pq.write_table(pa.table({"ms": pa.array([1], pa.timestamp("ms"))}), "ms.parquet")
    return in_dir


def _rows(sql: str) -> list[tuple]:
    return [tuple(r.values()) for r in plan(sql).result().to_pylist()]


@pytest.mark.parametrize(
    "sql",
    [
        "DESCRIBE 'types.parquet'",
        "DESCRIBE SELECT * FROM 'types.parquet'",
        "DESCRIBE SELECT i, s AS name, COUNT(*) FROM 'types.parquet' GROUP BY ALL",
        "DESCRIBE SELECT ts, l, st FROM 'types.parquet' WHERE i > 0 ORDER BY ts",
        "DESCRIBE SELECT * FROM range(3)",
        "DESCRIBE 'j.json'",
        "DESCRIBE (SELECT o, l, d FROM 'j.json')",
        "SELECT * FROM 'j.json'",
    ],
)
def test_describe_and_json_types_as_duckdb(where, sql):
    assert _rows(sql) == duckdb.connect().sql(sql).fetchall(), sql


def test_describe_names_tidal_types(where):
    # a timestamp stored in milliseconds is read as tidal's microseconds
    assert _rows("DESCRIBE 'ms.parquet'") == [("ms", "TIMESTAMP", "YES", None, None, None)]


def test_summarize_refuses_a_date_column_by_name(where):
    # SUMMARIZE itself runs (tests/sql/test_summarize.py); DuckDB's date averages and quartiles do not
    with pytest.raises(TidalError, match=r"SUMMARIZE of column dt \(DATE\) is not supported"):
        plan("SUMMARIZE 'types.parquet'")
