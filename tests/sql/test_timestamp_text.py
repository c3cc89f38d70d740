"""Dates and timestamps print as DuckDB prints them, the same in every output format."""

from __future__ import annotations

import csv
import io
import json

import duckdb
import pytest

from tidal.cli.main import main as cli
from tidal.sql.output import temporal_as_text, temporal_text

VALUES = {
    "a": "TIMESTAMP '2024-06-01 18:00:30'",
    "b": "TIMESTAMP '2024-06-01 18:00:30.5'",
    "c": "TIMESTAMP '2024-06-01 18:00:30.123456'",
    "d": "DATE '2024-06-01'",
    "e": "TIMESTAMPTZ '2024-06-01 18:00:30.25+00'",
    "f": "TIME '18:00:30.5'",
    "g": "TIMESTAMP '0099-06-01 00:00:00'",
    "h": "TIMESTAMP_MS '2024-06-01 00:00:00.5'",
    "i": "TIMESTAMP_NS '2024-06-01 00:00:00.000000123'",
    "j": "TIMESTAMP_S '2024-06-01 00:00:01'",
}


def test_values_print_as_duckdb_prints_them():
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    sql = "SELECT " + ", ".join(f"{v} AS {k}" for k, v in VALUES.items())
    as_text = ", ".join(f"CAST({k} AS VARCHAR)" for k in VALUES)
    expected = list(con.sql(f"SELECT {as_text} FROM ({sql})").fetchall()[0])
    table = con.sql(sql).arrow()
    table = table.read_all() if hasattr(table, "read_all") else table
    assert list(temporal_as_text(table).to_pylist()[0].values()) == expected  # whole columns
    assert [temporal_text(v) for v in table.to_pylist()[0].values()] == expected  # one value at a time
    assert expected[:2] == ["2024-06-01 18:00:30", "2024-06-01 18:00:30.5"]


@pytest.mark.parametrize("fmt", ["batch-csv", "live-csv", "batch-json", "stream-json", "batch-table"])
def test_every_format_prints_the_same_text(tmp_path, monkeypatch, capsys, fmt):
    (tmp_path / "t.csv").write_text("ts,v\n2024-06-01 18:00:30,1\n2024-06-01 18:00:12.5,2\n")
    monkeypatch.chdir(tmp_path)
    sql = "SELECT ts, CAST(ts AS DATE) AS d, v FROM 't.csv' ORDER BY v"
    assert cli(["query", sql, "--format", fmt]) == 0
    out = capsys.readouterr().out
    if fmt.endswith("json"):
        rows = [[r["ts"], r["d"]] for r in map(json.loads, out.splitlines())]
    elif fmt.endswith("csv"):
        rows = [r[-3:-1] for r in list(csv.reader(io.StringIO(out)))[1:]]
    else:
        rows = [[c.strip() for c in line.split("│")[1:3]] for line in out.splitlines() if line.startswith("│")]
    assert rows == [["2024-06-01 18:00:30", "2024-06-01"], ["2024-06-01 18:00:12.5", "2024-06-01"]]
    if fmt == "batch-csv":  # whole seconds stay unquoted, as before
        assert cli(["query", sql + " LIMIT 1", "--format", fmt]) == 0
        assert capsys.readouterr().out.splitlines()[1] == "2024-06-01 18:00:30,2024-06-01,1"
