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


_EMPTY = -1


@numba.njit(cache=True, nogil=True, inline="always")
def _slot(key, shift):
    """The first slot of ``key``: the top bits of ``key`` times 2**64 over the golden ratio (Knuth's
    multiplicative hashing; every bit of the key reaches the top bits, so a float's bits, which differ
    in their high bits, hash apart). One multiply where murmur3's finaliser took two and three
    shifts: the taxi file's 2M rows of 8 float groups, 7.7 ms against 8.2 (interleaved, CPU)."""
    return np.int64((np.uint64(key) * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(shift))


@numba.njit(cache=True, nogil=True)
def _shift(cap):
    """``64 - log2(cap)`` for a power-of-two ``cap``: :func:`_slot`'s shift for a table of ``cap`` slots."""
    bits = 0
    while cap > 1:
        cap >>= 1
        bits += 1
    return 64 - bits


@numba.njit(cache=True, nogil=True)
def _rehash(group_keys, groups, cap, null_group, nan_group):
    """A hash table of ``cap`` slots holding the keys of the ``groups`` so far (the null and NaN groups
    are not in the table: their ``group_keys`` are not keys)."""
    keys = np.zeros(cap, np.int64)
    ids = np.full(cap, _EMPTY, np.int64)
    mask, shift = cap - 1, _shift(cap)
    for g in range(groups):
        if g == null_group or g == nan_group:
            continue
        slot = _slot(group_keys[g], shift)
        while ids[slot] != _EMPTY:
            slot = (slot + 1) & mask
        keys[slot] = group_keys[g]
        ids[slot] = g
    return keys, ids


@numba.njit(cache=True, nogil=True)
def _longer(a, size):
    out = np.zeros(size, a.dtype)
    out[: len(a)] = a
    return out


@numba.njit(cache=True, nogil=True)
def _key_pass(bits, floats, is_float, validity, offset, has_validity, weights, has_weights, start, state,
              want_codes, codes, first, group_keys, counts, sums, table_keys, table_ids):  # fmt: skip
    """Rows from ``start`` on into the groups (``state``: groups so far, the null group, the NaN
    group); returns the row it stopped before: ``len(bits)``, or where the arrays must grow (before a
    new group could outgrow ``first`` or fill the table past half). No array is reassigned in the loop
    (numba would count references on every row), and the bound is one compare per row."""
    n = len(bits)
    mask, shift = len(table_keys) - 1, _shift(len(table_keys))
    groups, null_group, nan_group = state[0], state[1], state[2]
    limit = min(len(first), len(table_keys) // 2)
    i = start
    while i < n and groups < limit:
        if has_validity and not (validity[(offset + i) >> 3] >> ((offset + i) & 7)) & 1:
            g = null_group
            if g < 0:
                g = null_group = groups
                first[g] = i
                groups += 1
        elif is_float and floats[i] != floats[i]:
            g = nan_group
            if g < 0:
                g = nan_group = groups
                first[g] = i
                groups += 1
        else:
            key = bits[i]
            if is_float and floats[i] == 0.0:  # -0.0 is 0.0
                key = 0
            slot = _slot(key, shift)
            while True:
                g = table_ids[slot]
                if g == _EMPTY:
                    g = groups
                    table_keys[slot] = key
                    table_ids[slot] = g
                    group_keys[g] = key
                    first[g] = i
                    groups += 1
                    break
                if table_keys[slot] == key:
                    break
                slot = (slot + 1) & mask
        if want_codes:
            codes[i] = g
        counts[g] += 1
        if has_weights:
            sums[g] += weights[i]
        i += 1
    state[0], state[1], state[2] = groups, null_group, nan_group
    return i


@numba.njit(cache=True, nogil=True)
def key_groups(bits, floats, is_float, validity, offset, has_validity, weights, has_weights, want_codes):
    """Group ids of one key column in one pass, with each group's row count and (``has_weights``) the
    row-order sum of ``weights`` (from 0.0, as ``numpy.bincount`` adds).

    ``bits`` are the key's int64 values (a float key's bits: ``floats`` is the same memory as float64);
    ``validity`` is Arrow's validity bitmap (bit ``offset + i`` for row ``i``) when ``has_validity``.
    Nulls are one group; for a float key -0.0 is 0.0 and every NaN one NaN. Groups are numbered by
    first appearance; ``first[g]`` is the first row of group ``g`` (its key is that row's value).
    Returns ``(codes, groups, first, counts, sums)``, the last three cut to ``groups``; ``codes`` is
    empty unless ``want_codes``.

    The pass checks its room with one compare per row, over arrays made here (this form measured 8.5 ms
    for 2M rows of 8 groups where a per-row check of both arrays' lengths took 11.5 ms); more groups
    than they hold continue in grown arrays."""
    n = len(bits)
    codes = np.empty(n if want_codes else 0, np.int64)
    room = 1024  # per-group arrays grow by doubling (allocating n of each costs more than the pass)
    first = np.zeros(room, np.int64)
    group_keys = np.zeros(room, np.int64)
    counts = np.zeros(room, np.int64)
    sums = np.zeros(room, np.float64)
    table_keys = np.zeros(4 * room, np.int64)
    table_ids = np.full(4 * room, _EMPTY, np.int64)
    state = np.array([0, -1, -1], np.int64)
    i = _key_pass(bits, floats, is_float, validity, offset, has_validity, weights, has_weights, 0, state,
                  want_codes, codes, first, group_keys, counts, sums, table_keys, table_ids)  # fmt: skip
    while i < n:
        groups = state[0]
        if groups >= len(first):
            room *= 2
            first, group_keys = _longer(first, room), _longer(group_keys, room)
            counts, sums = _longer(counts, room), _longer(sums, room)
        if groups >= len(table_keys) // 2:
            table_keys, table_ids = _rehash(group_keys, groups, 2 * len(table_keys), state[1], state[2])
        i = _key_pass(bits, floats, is_float, validity, offset, has_validity, weights, has_weights, i, state,
                      want_codes, codes, first, group_keys, counts, sums, table_keys, table_ids)  # fmt: skip
    groups = state[0]
    return codes, groups, first[:groups].copy(), counts[:groups].copy(), sums[:groups].copy()


@numba.njit(cache=True, nogil=True)
def key_groups_more(bits, floats, is_float, validity, offset, has_validity, weights, has_weights, base,
                    first, group_keys, counts, sums, table_keys, table_ids, state):  # fmt: skip
    """:func:`key_groups` over the next rows of a column read in pieces: the groups so far are in the
    arrays passed in (``state``: their number, the null group, the NaN group), and this piece's rows
    are rows ``base ...`` of the whole column (``first`` holds whole-column rows). Returns the arrays,
    grown where they had to be; the sums keep adding in row order, so the pieces one after another
    give the bits of one pass over the whole column."""
    n = len(bits)
    before = state[0]
    codes = np.empty(0, np.int64)
    i = _key_pass(bits, floats, is_float, validity, offset, has_validity, weights, has_weights, 0, state,
                  False, codes, first, group_keys, counts, sums, table_keys, table_ids)  # fmt: skip
    while i < n:
        groups = state[0]
        if groups >= len(first):
            room = 2 * len(first)
            first, group_keys = _longer(first, room), _longer(group_keys, room)
            counts, sums = _longer(counts, room), _longer(sums, room)
        if groups >= len(table_keys) // 2:
            table_keys, table_ids = _rehash(group_keys, groups, 2 * len(table_keys), state[1], state[2])
        i = _key_pass(bits, floats, is_float, validity, offset, has_validity, weights, has_weights, i, state,
                      False, codes, first, group_keys, counts, sums, table_keys, table_ids)  # fmt: skip
    for g in range(before, state[0]):
        first[g] += base
    return first, group_keys, counts, sums, table_keys, table_ids
