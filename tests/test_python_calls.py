"""Lambdas that call Python functions tidal cannot compile: the arguments run columnar, the
function runs once per row on their values, and the answer is the row-at-a-time answer."""

from __future__ import annotations

import re

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tidal

CALLS: list = []


def _bucket(x):
    CALLS.append(x)
    return x % 7 < 3


def _label(x):
    return "even" if x % 2 == 0 else None  # None becomes a null


def _fails_on_13(x):
    if x == 13:
        raise ValueError("thirteen")
    return x


def _rows(table: pa.Table) -> list[tuple]:
    return list(zip(*(c.to_pylist() for c in table.columns), strict=True))


def _python_where(table, pred):
    keep = [i for i, r in enumerate(table.to_pylist()) if pred(r)]
    return table.take(pa.array(keep, type=pa.int64()))


@settings(max_examples=40, deadline=None)
@given(
    values=st.lists(st.integers(-1000, 1000), min_size=0, max_size=200),
    batch=st.sampled_from([1, 3, 17, 1000]),
)
def test_where_calling_a_function_is_the_row_answer_at_any_batch_size(values, batch):
    t = pa.table({"t": np.arange(len(values), dtype=np.int64), "x": pa.array(values, type=pa.int64())})
    s = tidal.from_arrow(t, time="t", batch_size=batch).where(lambda e: _bucket(e.x * 2) and e.x > -500)
    CALLS.clear()
    got = s.to_arrow()
    expected = [v for v in values if (v * 2) % 7 < 3 and v > -500]
    assert got.column("x").to_pylist() == expected
    assert CALLS == [v * 2 for v in values]  # once per row, in order, on the columnar argument


def test_explain_names_the_python_function_and_the_row_mode():
    t = pa.table({"t": [1, 2, 3], "x": [1, 2, 3]})
    text = tidal.from_arrow(t, time="t").where(lambda e: _bucket(e.x)).explain()
    assert "row mode for _bucket" in text and "_bucket(x)" in text


def test_projection_with_python_calls_keeps_types_and_nulls():
    t = pa.table({"t": [1, 2, 3, 4], "x": [10, 11, 12, 13], "s": ["a", "bb", "ccc", "dddd"]})
    out = (
        tidal.from_arrow(t, time="t")
        .select(lambda e: {"label": _label(e.x), "n": str(e.x), "pos": e.s.find("c"), "r": round(e.x / 4)})
        .to_arrow()
    )
    assert out.column("label").to_pylist() == ["even", None, "even", None]
    assert out.column("n").to_pylist() == ["10", "11", "12", "13"]
    assert out.column("pos").to_pylist() == [-1, -1, 0, -1]
    assert out.column("r").to_pylist() == [round(v / 4) for v in [10, 11, 12, 13]]


def test_regex_search_and_non_ascii_find_match_python():
    words = ["free money download", "vegas", "frée download", "Download free", "xvegasx"]
    t = pa.table({"t": np.arange(len(words)), "s": words})
    s = tidal.from_arrow(t, time="t")
    got = s.where(lambda e: re.search("free.*download", e.s) is not None).to_arrow()
    assert got.column("s").to_pylist() == [w for w in words if re.search("free.*download", w) is not None]
    assert "row mode for re.search" in s.where(lambda e: re.search("a", e.s) is not None).explain()
    pos = s.select(lambda e: {"p": e.s.find("download")}).to_arrow().column("p").to_pylist()
    assert pos == [w.find("download") for w in words]  # "frée" is not ASCII: row by row


def test_function_raising_names_the_row():
    t = pa.table({"t": [1, 2, 3], "x": [12, 13, 14]})
    with pytest.raises(tidal.LambdaError) as err:
        tidal.from_arrow(t, time="t").select(lambda e: {"y": _fails_on_13(e.x)}).to_arrow()
    msg = str(err.value)
    assert "ValueError" in msg and "thirteen" in msg and "sync_time=2" in msg and "x=13" in msg


def test_results_of_mixed_types_go_row_by_row():
    t = pa.table({"t": [1, 2, 3], "x": [1, 2, 3]})
    out = tidal.from_arrow(t, time="t").select(lambda e: {"v": _mixed(e.x)}).to_arrow()
    assert out.column("v").to_pylist() == [1.0, 2.5, 3.0]


def _mixed(x):
    return x if x != 2 else 2.5
