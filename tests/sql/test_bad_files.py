"""Damaged and awkward input files (issue 16): an error naming file, line and column (exit status 2,
one line), or with ``--on-error skip`` every bad row skipped and counted: rows read + rows skipped
equals the rows in the file."""

from __future__ import annotations

import json
import re

import pytest

from tidal.cli.main import main as cli


def run(capsys, sql: str, *more: str) -> tuple[int, str, str]:
    capsys.readouterr()
    status = cli(["query", sql, "--format", "batch-json", *more])
    got = capsys.readouterr()
    assert "Traceback" not in got.err and "internal error" not in got.err, got.err
    return status, got.out, got.err


def counts(err: str) -> tuple[int, int]:
    m = re.search(r"rows read: ([\d,]+) .* skipped rows: ([\d,]+)", err)
    assert m, err
    return int(m.group(1).replace(",", "")), int(m.group(2).replace(",", ""))


def test_an_unterminated_quote_is_an_error_naming_its_place(in_dir, capsys):
    (in_dir / "q.csv").write_text('a,b\n1,x\n2,"open\n3,y\n4,z\n5,w\n6,v\n7,u\n8,t\n9,s\n10,r\n')
    status, _, err = run(capsys, "SELECT count(*) AS n FROM 'q.csv'")
    assert status == 2
    assert err.startswith("tidal: q.csv: line 3, column 3: unterminated quoted field") and err.count("\n") == 1


def test_an_unterminated_quote_skipped_counts_one_row_and_reads_the_rest(in_dir, capsys):
    (in_dir / "q.csv").write_text('a,b\n1,x\n2,"open\n3,y\n4,z\n5,w\n6,v\n7,u\n8,t\n9,s\n10,r\n')
    status, out, err = run(capsys, "SELECT a FROM 'q.csv'", "--on-error", "skip")
    assert status == 0
    assert [json.loads(line)["a"] for line in out.splitlines()] == [1, 3, 4, 5, 6, 7, 8, 9, 10]
    assert counts(err) == (9, 1)


def test_quoted_newlines_and_doubled_quotes_are_not_unterminated(in_dir, capsys):
    (in_dir / "ok.csv").write_text('a,b\n1,"two\nlines"\n2,"say ""hi"""\n')
    status, out, _ = run(capsys, "SELECT a, b FROM 'ok.csv'")
    assert status == 0
    assert [json.loads(line) for line in out.splitlines()] == [{"a": 1, "b": "two\nlines"}, {"a": 2, "b": 'say "hi"'}]


def test_a_malformed_row_spanning_lines_names_its_line(in_dir, capsys):
    (in_dir / "m.csv").write_text('a,b\n1,x\n2,"multi\nline",z\n3,y\n')
    status, _, err = run(capsys, "SELECT * FROM 'm.csv'")
    assert status == 2 and "line None" not in err
    assert err.startswith("tidal: m.csv: line 3, column 3: malformed row")


@pytest.mark.parametrize("name", ["empty.parquet", "cut.parquet"])
def test_empty_or_truncated_parquet(files_dir, capsys, name):
    data = (files_dir / "orders.parquet").read_bytes()
    (files_dir / name).write_bytes(b"" if name.startswith("empty") else data[: len(data) // 3])
    status, _, err = run(capsys, f"SELECT count(*) FROM '{name}'")
    assert status == 2 and err.startswith(f"tidal: {name}: cannot read as parquet (is it empty, truncated or damaged?)")


def test_damaged_arrow_ipc(files_dir, capsys):
    data = bytearray((files_dir / "orders.arrow").read_bytes())
    data[len(data) // 2 : len(data) // 2 + 100] = b"\xff" * 100
    (files_dir / "bad.arrow").write_bytes(bytes(data))
    status, _, err = run(capsys, "SELECT * FROM 'bad.arrow'")
    assert status == 2 and err.startswith("tidal: bad.arrow: cannot read as arrow")


@pytest.mark.parametrize("ext", ["csv", "json"])
def test_invalid_utf8_names_line_and_column(in_dir, capsys, ext):
    body = b"a,b\n1,x\n2,\xff\xfe\n3,y\n" if ext == "csv" else b'{"a": 1, "b": "x"}\n{"a": 2, "b": "\xff"}\n'
    (in_dir / f"u.{ext}").write_bytes(body)
    status, _, err = run(capsys, f"SELECT * FROM 'u.{ext}'")
    place = "line 3, column 3" if ext == "csv" else "line 2, column 16"
    assert status == 2 and err == f"tidal: u.{ext}: {place}: invalid UTF-8 (bytes ff); the file must be UTF-8 text\n"


def test_invalid_utf8_rows_skipped_are_counted(in_dir, capsys):
    (in_dir / "u.csv").write_bytes(b"a,b\n1,x\n2,\xff\xfe\n3,y\n")
    status, out, err = run(capsys, "SELECT * FROM 'u.csv'", "--on-error", "skip")
    assert status == 0 and [json.loads(line) for line in out.splitlines()] == [{"a": 1, "b": "x"}, {"a": 3, "b": "y"}]
    assert counts(err) == (2, 1)


@pytest.mark.parametrize("ext", ["csv", "json"])
def test_a_line_longer_than_a_read_block_is_read(in_dir, capsys, ext):
    long = "x" * 3_000_000
    if ext == "csv":
        (in_dir / "h.csv").write_text(f"a,b\n1,{long}\n2,y\n")
    else:
        (in_dir / "h.json").write_text(json.dumps({"a": 1, "b": long}) + "\n" + json.dumps({"a": 2, "b": "y"}) + "\n")
    status, out, _ = run(capsys, f"SELECT a, length(b) AS n FROM 'h.{ext}'")
    assert status == 0 and [json.loads(line)["n"] for line in out.splitlines()] == [3_000_000, 1]


def test_a_line_past_the_largest_block_is_a_resource_error(in_dir, capsys, monkeypatch):
    import tidal.io.files as files

    # the largest block made small, so that the test need not write a 64 MiB line
    monkeypatch.setattr(files, "BLOCK_SIZES", (1 << 16, 1 << 17))
    monkeypatch.setattr(files, "MAX_LINE_BYTES", 1 << 17)
    (in_dir / "h.csv").write_text("a,b\n1,x\n2," + "y" * 400_000 + "\n3,z\n")
    status, _, err = run(capsys, "SELECT a FROM 'h.csv'")
    assert status == 2
    assert err == "tidal: h.csv: line 3 is 400,002 bytes long; lines longer than 131,072 bytes are not supported\n"


def test_a_json_file_of_one_empty_line(in_dir, capsys):
    """Found by the file fuzzer: a file without columns."""
    (in_dir / "nl.json").write_bytes(b"\n")
    status, _, err = run(capsys, "SELECT * FROM 'nl.json'")
    assert status == 2 and err == "tidal: nl.json: the file has no columns (is it empty?)\n"


def test_nanosecond_timestamps_finer_than_a_microsecond_are_refused_by_row(in_dir, capsys):
    """tidal's SQL keeps timestamps in microseconds: a TIMESTAMP_NS value it would have to round is refused,
    naming the column and row (it was an internal error); whole microseconds are read as DuckDB reads them."""
    import duckdb
    import pyarrow as pa
    import pyarrow.parquet as pq

    exact = [1717200000000000000, None, 1717200000000001000]
    pq.write_table(pa.table({"t": pa.array(exact, pa.timestamp("ns"))}), in_dir / "exact.parquet")
    pq.write_table(
        pa.table({"t": pa.array([*exact, 1717200000000001123], pa.timestamp("ns"))}), in_dir / "fine.parquet"
    )
    sql = "SELECT count(t) AS n, epoch_us(max(t)) AS m FROM '{}'"
    status, out, err = run(capsys, sql.format("exact.parquet"))
    assert status == 0, err
    want = duckdb.sql(sql.format(in_dir / "exact.parquet")).fetchall()[0]
    assert tuple(json.loads(out).values()) == want
    status, _, err = run(capsys, sql.format("fine.parquet"))
    assert status == 2
    assert "column 't' row 3" in err and "not supported" in err and err.count("\n") == 1
