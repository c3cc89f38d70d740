"""A filter whose only consumer counts passes its mask on instead of gathering rows: the counts stay exact
(against a Python count) at every selectivity and batch size, and consumers that read rows still get them.
Ingress checks a sorted time column's range at its ends: errors stay the same."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tidal
from tidal.core.time import LATEST
from tidal.errors import InputError


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(0, 99), min_size=0, max_size=300),
    st.integers(0, 100),
    st.sampled_from([1, 3, 17, 80_000]),
    st.booleans(),
)
def test_count_over_a_filter_reads_the_mask(values, cut, batch_size, lam):
    table = pa.table({"t": np.arange(len(values), dtype=np.int64), "v": pa.array(values, pa.int64())})
    s = tidal.from_arrow(table, time="t", batch_size=batch_size)
    pred = (lambda e: e.v < cut) if lam else (lambda e: e.v < cut and e.v >= 0 or e.v == -1)
    expected = sum(1 for v in values if v < cut)
    assert s.where(pred).count() == expected
    out = s.where(pred).to_arrow()
    assert out.column("v").to_pylist() == [v for v in values if v < cut]


def test_row_mode_filter_count_is_exact():
    table = pa.table({"t": np.arange(1000, dtype=np.int64), "s": [f"x{i % 10}" for i in range(1000)]})
    s = tidal.from_arrow(table, time="t", batch_size=64)
    assert s.where(lambda e: e.s == "x3").count() == 100


def test_out_of_range_time_is_reported_before_disorder():
    table = pa.table({"t": pa.array([5, 3, LATEST + 10], pa.int64())})
    with pytest.raises(InputError, match="row 2: time"):
        tidal.from_arrow(table, time="t").count()
    table = pa.table({"t": pa.array([1, 2, LATEST + 10], pa.int64())})
    with pytest.raises(InputError, match="row 2: time"):
        tidal.from_arrow(table, time="t").count()
    table = pa.table({"t": pa.array([5, 3, 4], pa.int64())})
    with pytest.raises(InputError, match="row 1: sync time 3"):
        tidal.from_arrow(table, time="t").count()
