"""Compiled passes for :mod:`.hashagg`, used only where numba is already loaded (a process that ran the
stream engine): a command-line query never pays numba's import for them.

Each pass adds in row order from 0.0, exactly as ``numpy.bincount`` does, so the sums have the same
bits either way; counts are exact."""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True, nogil=True)
def counts(codes, size):
    out = np.zeros(size, np.int64)
    for i in range(len(codes)):
        out[codes[i]] += 1
    return out


@numba.njit(cache=True, nogil=True)
def counts_and_sums(codes, size, weights):
    """Rows per code, and the row-order sum of ``weights`` per code, in one pass."""
    rows = np.zeros(size, np.int64)
    sums = np.zeros(size, np.float64)
    for i in range(len(codes)):
        c = codes[i]
        rows[c] += 1
        sums[c] += weights[i]
    return rows, sums


@numba.njit(cache=True, nogil=True)
def sums(codes, size, weights):
    out = np.zeros(size, np.float64)
    for i in range(len(codes)):
        out[codes[i]] += weights[i]
    return out
