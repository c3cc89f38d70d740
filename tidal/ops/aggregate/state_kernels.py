"""Numba kernels around the aggregate sweep's state that no sweep calls (so they need not share
``kernels.py``'s cache file): typed lists of multisets, and float sums combined with infinity counts."""

from __future__ import annotations

import numba
import numpy as np
from numba.typed import List


# Typed-list work goes through these cached kernels: a typed List built or touched from Python
# compiles its methods in every new process (seconds per Spark worker), a cached kernel loads.
@numba.njit(cache=True)
def _empty_multisets():
    return List.empty_list(numba.types.int64[:])


@numba.njit(cache=True)
def _add_multisets(ms, count):
    for _ in range(count):
        ms.append(np.empty(8, np.int64))


@numba.njit(cache=True)
def _load_multisets(ms, flat, offsets):
    for i in range(len(offsets) - 1):
        n = offsets[i + 1] - offsets[i]
        arr = np.empty(max(8, n), np.int64)
        arr[:n] = flat[offsets[i] : offsets[i + 1]]
        ms.append(arr)


@numba.njit(cache=True)
def combine_infinities(finite, packed, valid, big):
    """Float sums from finite sums and packed infinity counts (``compiled.with_infinities``), in one pass:
    (sums, 0), or (finite, 1) when a finite sum is not finite, (finite, 2) when ``valid`` reaches ``big``."""
    n = len(finite)
    out = np.empty(n, np.float64)
    for i in range(n):
        v = finite[i]
        if not np.isfinite(v):
            return finite, 1
        if valid[i] >= big:
            return finite, 2
        c = packed[i]
        if c != 0:
            pos, neg = c & (big - 1), c >> 32
            v = np.nan if pos > 0 and neg > 0 else (np.inf if pos > 0 else -np.inf)
        out[i] = v
    return out, 0
