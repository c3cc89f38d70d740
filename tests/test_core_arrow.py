"""tidal.core.arrow.from_numpy makes the arrays pyarrow.array() makes from the same numpy values (types,
values, NaN and -0.0 bits, nulls where masked, casts), without importing numpy.ma."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tidal.core.arrow import from_numpy

DTYPES = [np.int64, np.int32, np.uint8, np.float64, np.float32, np.bool_]


@settings(max_examples=200, deadline=None)
@given(
    values=st.lists(st.sampled_from([0, 1, -1, 7, 2**31 - 1, -(2**31)]), max_size=40),
    floats=st.lists(st.sampled_from([0.0, -0.0, 1.5, float("nan"), float("inf")]), max_size=40),
    dtype=st.sampled_from(DTYPES),
    masked=st.booleans(),
    target=st.sampled_from([None, pa.int64(), pa.float64()]),
    step=st.sampled_from([1, 2]),
)
def test_from_numpy_is_pyarrow_array(values, floats, dtype, masked, target, step):
    raw = floats if np.dtype(dtype).kind == "f" else values
    arr = np.array(raw, np.int64).astype(dtype) if np.dtype(dtype).kind != "f" else np.array(raw, dtype)
    arr = arr[::step]  # not contiguous when step is 2
    mask = (np.arange(len(arr)) % 3 == 1) if masked else None
    try:
        want = pa.array(arr, target, mask=mask)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:  # the same refusal
        with pytest.raises(type(exc)):
            from_numpy(arr, target, mask=mask)
        return
    got = from_numpy(arr, target, mask=mask)
    assert got.type == want.type
    assert got.null_count == want.null_count
    assert [repr(v) for v in got.to_pylist()] == [repr(v) for v in want.to_pylist()]
