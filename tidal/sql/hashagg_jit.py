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


_NAN_BITS = np.float64("nan").view(np.int64)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


@numba.njit(cache=True, nogil=True)
def _insert(keys, slots, shift, key, code):
    h = (np.uint64(key) * _GOLDEN) >> shift
    i = np.int64(h)
    mask = len(slots) - 1
    while slots[i] >= 0:
        i = (i + 1) & mask
    slots[i] = code
    keys[i] = key


@numba.njit(cache=True, nogil=True)
def first_codes(values, is_float, valid, has_nulls):
    """Dense codes of int64 ``values`` (float64 bits when ``is_float``: -0.0 is 0.0, every NaN one NaN)
    in order of first appearance, null rows (``valid`` False) one code at its first appearance;
    returns ``(codes, first row of each code, count)``."""
    n = len(values)
    codes = np.empty(n, np.int64)
    firsts = np.empty(n + 1, np.int64)
    code_keys = np.empty(n + 1, np.int64)
    floats = values.view(np.float64)
    bits = 10
    slots = np.full(1 << bits, -1, np.int64)
    keys = np.empty(1 << bits, np.int64)
    shift = np.uint64(64 - bits)
    count = 0
    null_code = -1
    for r in range(n):
        if has_nulls and not valid[r]:
            if null_code < 0:
                null_code = count
                firsts[count] = r
                code_keys[count] = 0
                count += 1
            codes[r] = null_code
            continue
        key = values[r]
        if is_float:
            x = floats[r]
            if x != x:
                key = _NAN_BITS
            elif x == 0.0:
                key = 0
        h = (np.uint64(key) * _GOLDEN) >> shift
        i = np.int64(h)
        mask = len(slots) - 1
        found = -1
        while slots[i] >= 0:
            if keys[i] == key and slots[i] != null_code:
                found = slots[i]
                break
            i = (i + 1) & mask
        if found < 0:
            found = count
            slots[i] = found
            keys[i] = key
            firsts[count] = r
            code_keys[count] = key
            count += 1
            if 2 * count > len(slots):  # grow: re-insert every key
                bits += 1
                shift = np.uint64(64 - bits)
                slots = np.full(1 << bits, -1, np.int64)
                keys = np.empty(1 << bits, np.int64)
                for c in range(count):
                    if c != null_code:
                        _insert(keys, slots, shift, code_keys[c], c)
        codes[r] = found
    return codes, firsts[:count].copy(), count
