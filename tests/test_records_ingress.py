"""``from_records`` of dicts with a schema converts each chunk in one Arrow pass (issue 19): the stream equals
the one built from the same rows' columns, at every chunk size, and missing fields are still reported."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tidal
from tidal.errors import InputError

SCHEMA = pa.schema([("t", pa.int64()), ("k", pa.string()), ("v", pa.float64()), ("n", pa.int32())])

rows = st.lists(
    st.tuples(
        st.integers(0, 5),
        st.sampled_from(["a", "bb", None]),
        st.floats(allow_nan=False) | st.integers(-5, 5) | st.none(),
        st.integers(-(2**31), 2**31 - 1) | st.none(),
    ),
    max_size=60,
)


@settings(max_examples=60, deadline=None)
@given(rows, st.sampled_from([1, 4, 1000]), st.booleans())
def test_dicts_with_a_schema_equal_the_columns(values, batch, extra):
    values = [(sum(r[0] for r in values[: i + 1]), *r[1:]) for i, r in enumerate(values)]  # sorted times
    dicts = [dict(zip(SCHEMA.names, r, strict=True)) | ({"ignored": i} if extra else {}) for i, r in enumerate(values)]
    columns = {
        name: pa.array([r[i] for r in values], f.type)
        for i, (name, f) in enumerate(zip(SCHEMA.names, SCHEMA, strict=True))
    }
    got = tidal.from_records(dicts, time="t", schema=SCHEMA, batch_size=batch).to_arrow()
    want = tidal.from_arrow(pa.table(columns), time="t", batch_size=batch).to_arrow()
    assert got.equals(want)


def test_a_missing_field_is_named_with_its_row():
    dicts = [{"t": 0, "k": "a", "v": 1.0, "n": 1}, {"t": 1, "k": "a", "n": 2}]
    with pytest.raises(InputError, match=r"row 1.*\bv\b"):
        tidal.from_records(dicts, time="t", schema=SCHEMA).count()


def test_a_value_of_the_wrong_type_is_an_error_naming_the_rows():
    dicts = [{"t": 0, "k": "a", "v": 1.0, "n": 1}, {"t": 1, "k": 5, "v": 2.0, "n": 2}]
    with pytest.raises(InputError, match="rows 0..1: cannot convert"):
        tidal.from_records(dicts, time="t", schema=SCHEMA).count()


@settings(max_examples=40, deadline=None)
@given(rows, st.data())
def test_the_first_row_missing_a_field_is_named(values, data):
    values = [(i, *r[1:]) for i, r in enumerate(values)]
    dicts = [dict(zip(SCHEMA.names, r, strict=True)) for r in values]
    if not dicts:
        return
    at = data.draw(st.integers(0, len(dicts) - 1))
    field = data.draw(st.sampled_from(["k", "v", "n"]))
    del dicts[at][field]
    with pytest.raises(InputError, match=rf"row {at}: missing field\(s\) \['{field}'\]"):
        tidal.from_records(dicts, time="t", schema=SCHEMA, batch_size=data.draw(st.sampled_from([1, 3, 1000]))).count()
