"""numpy arrays into Arrow arrays without ``pyarrow.array()``.

``pyarrow.array(ndarray)`` asks whether its argument is a ``numpy.ma.MaskedArray``, which imports
``numpy.ma`` (about 5% of a command-line query's start-up). :func:`from_numpy` wraps a 1-d array of
numbers or booleans in Arrow buffers instead (zero-copy for numbers): the same values, nulls where
``mask`` is true, then cast to ``type`` when given (a safe cast, as ``pyarrow.array(..., type)``).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa


def _bits(flags: np.ndarray) -> pa.Buffer:
    return pa.py_buffer(np.packbits(flags, bitorder="little"))


def from_numpy(values: np.ndarray, type: pa.DataType | None = None, mask: np.ndarray | None = None) -> pa.Array:
    values = np.asarray(values)
    if values.ndim != 1 or values.dtype.kind not in "biuf":
        return pa.array(values, type, mask=mask)  # anything else as pyarrow makes it
    n = len(values)
    validity, nulls = None, 0
    if mask is not None:
        valid = ~np.asarray(mask, dtype=bool)
        nulls = n - int(np.count_nonzero(valid))
        validity = _bits(valid) if nulls else None
    if values.dtype.kind == "b":
        data, t = _bits(values), pa.bool_()
    else:
        values = np.ascontiguousarray(values)
        data, t = pa.py_buffer(values), pa.from_numpy_dtype(values.dtype)
    out = pa.Array.from_buffers(t, n, [validity, data], null_count=nulls)
    return out if type is None or type == t else out.cast(type)
