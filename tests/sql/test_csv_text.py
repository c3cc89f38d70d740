"""tidal.sql.output.csv_text writes exactly what pyarrow.csv.write_csv writes (issue 19: ``tidal query``
writes a small answer without importing pyarrow.csv): random tables of the columns it writes itself
(integers, floats, booleans, strings, nulls), edge values, and tables it hands to pyarrow's writer."""

from __future__ import annotations

import datetime as dt
import io
import math

import pyarrow as pa
import pyarrow.csv as pv
from hypothesis import given, settings
from hypothesis import strategies as st

from tidal.sql import output
from tidal.sql.output import csv_text


def _pyarrow_text(table: pa.Table) -> str:
    buf = io.BytesIO()
    pv.write_csv(table, buf)
    return buf.getvalue().decode()


INT_TYPES = [pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint16(), pa.uint32(), pa.uint64()]


@st.composite
def columns(draw):
    kind = draw(st.sampled_from(["int", "float64", "float32", "bool", "string", "large_string", "null"]))
    n = draw(st.shared(st.integers(0, 12), key="rows"))
    if kind == "int":
        t = draw(st.sampled_from(INT_TYPES))
        info = (
            (-(2 ** (t.bit_width - 1)), 2 ** (t.bit_width - 1) - 1)
            if pa.types.is_signed_integer(t)
            else (0, 2**t.bit_width - 1)
        )
        values = draw(st.lists(st.none() | st.integers(*info), min_size=n, max_size=n))
    elif kind in ("float64", "float32"):
        t = pa.float64() if kind == "float64" else pa.float32()
        width = 64 if kind == "float64" else 32
        values = draw(st.lists(st.none() | st.floats(width=width), min_size=n, max_size=n))
    elif kind == "bool":
        t, values = pa.bool_(), draw(st.lists(st.none() | st.booleans(), min_size=n, max_size=n))
    elif kind == "null":
        t, values = pa.null(), [None] * n
    else:
        t = pa.string() if kind == "string" else pa.large_string()
        values = draw(
            st.lists(st.none() | st.text(alphabet=st.sampled_from("a,\"\n\r é\t;x'")), min_size=n, max_size=n)
        )
    name = draw(st.text(alphabet=st.sampled_from('ab "\n,é'), max_size=4))
    return name, pa.array(values, t)


@settings(max_examples=300, deadline=None)
@given(st.lists(columns(), min_size=1, max_size=5))
def test_csv_text_is_pyarrows_csv(cols):
    table = pa.table([c for _, c in cols], names=[n for n, _ in cols])
    assert csv_text(table) == _pyarrow_text(table)


def test_edge_values_and_chunked_columns():
    floats = [0.0, -0.0, 1.0, 2.5, 1e16, 1e21, 1e-7, 5e-324, 1.7976931348623157e308, math.nan, math.inf, -math.inf, 0.1]
    table = pa.table(
        {
            "f": floats,
            "f32": pa.array(floats, pa.float32()),
            "i": pa.array([2**63 - 1, -(2**63), *range(len(floats) - 2)], pa.int64()),
            "u": pa.array([2**64 - 1, *range(len(floats) - 1)], pa.uint64()),
            's"q': ['a"b', "", None, "\n", "\r\n", ",", " x ", "é", '"', "''", "a\tb", "null", "true"],
        }
    )
    assert csv_text(table) == _pyarrow_text(table)
    chunked = pa.concat_tables([table, table.slice(3, 4), table.slice(0, 0)])
    assert chunked.column(0).num_chunks == 3
    assert csv_text(chunked) == _pyarrow_text(chunked)
    assert csv_text(table.slice(0, 0)) == _pyarrow_text(table.slice(0, 0))  # the header alone


def test_other_tables_go_to_pyarrows_writer(monkeypatch):
    others = [
        pa.table({"d": [dt.date(2024, 1, 2), None], "t": pa.array([1, None], pa.timestamp("s"))}),
        pa.table({"x": pa.array([1.5, None]).cast(pa.decimal128(5, 2))}),
        pa.table({"x": pa.array(["a", "b", "a"]).dictionary_encode()}),
        pa.table({"x": pa.array([b"a\x00", None], pa.binary())}),
        pa.table({"x": list(range(output._CSV_ROWS + 1))}),  # more rows than csv_text writes itself
    ]
    for table in others:
        assert csv_text(table) == _pyarrow_text(table)
    # each of those went through pyarrow's writer: with it broken, they fail; a plain small table does not
    monkeypatch.setattr(pv, "write_csv", lambda *a, **k: (_ for _ in ()).throw(RuntimeError("pyarrow's writer")))
    for table in others:
        try:
            csv_text(table)
        except RuntimeError:
            continue
        raise AssertionError(f"{table.schema} was not written by pyarrow's writer")
    assert csv_text(pa.table({"k": [1.0, None], "n": [2, 3]})) == '"k","n"\n1,2\n,3\n'
