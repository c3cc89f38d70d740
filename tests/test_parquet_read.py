"""tidal.io.parquet_read (issue 19) reads a local Parquet file through the reader class pyarrow.parquet
wraps, without importing pyarrow.parquet: its schema and tables must be pyarrow.parquet's, for flat
columns, a struct and a dotted name of its field, a column asked twice or missing, extension types
and every row group; standard input's bytes go through pyarrow.parquet itself."""

from __future__ import annotations

import io

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tidal.io import parquet_read


@pytest.fixture
def path(tmp_path):
    table = pa.table(
        {
            "a": pa.array([1, None, 3, 4], pa.int64()),
            "s": pa.array([{"x": 1, "y": "p"}, None, {"x": 3, "y": None}, {"x": 4, "y": "q"}]),
            "t": pa.array([0, 1, 2, 3], pa.timestamp("ms", "Europe/Paris")),
            "u": pa.array([b"0123456789abcdef"] * 4, pa.uuid()),
            "d.e": [0.5, -0.0, float("nan"), None],
        }
    )
    pq.write_table(table, tmp_path / "t.parquet", row_group_size=3)
    return str(tmp_path / "t.parquet")


@pytest.mark.parametrize("columns", [None, ["a"], ["s"], ["s.x"], ["t", "a"], ["a", "a"], ["nope"], ["d.e", "u"], []])
def test_the_columns_read_are_pyarrow_parquets(path, columns):
    expected = pq.ParquetFile(path).read(columns=columns)
    got = parquet_read.read_columns(path, columns)
    assert got.schema == expected.schema and got.schema.metadata == expected.schema.metadata
    assert repr(got.to_pylist()) == repr(expected.to_pylist())  # repr: NaN and -0.0 compared too
    assert [c.num_chunks for c in got.columns] == [c.num_chunks for c in expected.columns]


def test_the_schema_is_pyarrow_parquets(path):
    got, expected = parquet_read.read_schema(path), pq.read_schema(path)
    assert got.equals(expected, check_metadata=True)


def test_bytes_and_damaged_files(path, tmp_path):
    with open(path, "rb") as fh:
        data = fh.read()
    assert parquet_read.read_columns(io.BytesIO(data), ["a"]).equals(pq.ParquetFile(io.BytesIO(data)).read(["a"]))
    (tmp_path / "bad.parquet").write_bytes(data[: len(data) // 2])
    with pytest.raises(pa.ArrowInvalid):
        parquet_read.read_columns(str(tmp_path / "bad.parquet"), None)
    with pytest.raises(OSError):
        parquet_read.read_schema(str(tmp_path / "missing.parquet"))


def test_without_the_reader_class_pyarrow_parquet_reads(path, monkeypatch):
    import pyarrow._parquet

    monkeypatch.delattr(pyarrow._parquet, "ParquetReader")  # a pyarrow that moved it
    assert parquet_read.open_reader(path) is None
    assert parquet_read.read_schema(path).equals(pq.read_schema(path), check_metadata=True)
    got, expected = parquet_read.read_columns(path, ["a", "s.x"]), pq.ParquetFile(path).read(["a", "s.x"])
    assert repr(got.to_pylist()) == repr(expected.to_pylist())
