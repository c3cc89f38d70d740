"""ORDER BY ... LIMIT over start edges cuts each tick's rows to the window with a selection (``select_k``)
when ties can only be equal rows: the rows kept are those of the stable sort's first rows, for data
with ties, NaN, -0.0 and nulls (where the sort decides)."""

from __future__ import annotations

import math
from collections import Counter

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from tidal.ops.topk import first_rows, order_indices

floats = st.one_of(st.sampled_from([0.0, -0.0, math.nan, 1.5, 2.5]), st.floats(-5, 5, allow_nan=False))


def _rows(table: pa.Table, positions) -> Counter:
    picked = table.take(pa.array(positions, pa.int64())).to_pylist()
    return Counter(tuple((type(v).__name__, repr(v)) for v in r.values()) for r in picked)


@settings(max_examples=200, deadline=None)
@given(
    data=st.data(),
    n=st.integers(0, 40),
    k=st.integers(1, 12),
    desc=st.booleans(),
    nulls=st.booleans(),
)
def test_first_rows_are_the_sorted_first_rows(data, n, k, desc, nulls):
    def col(values):
        return data.draw(st.lists(st.one_of(st.none(), values) if nulls else values, min_size=n, max_size=n))

    table = pa.table(
        {
            "x": pa.array(col(floats), pa.float64()),
            "g": pa.array(col(st.integers(0, 3)), pa.int64()),
            "s": pa.array(col(st.sampled_from(["a", "b"])), pa.string()),
        }  # fmt: skip
    )
    order = [("x", desc, False), ("g", not desc, False)]
    want = order_indices(table, order).to_numpy()[:k]
    assert _rows(table, first_rows(table, order, k)) == _rows(table, want)
