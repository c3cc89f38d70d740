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
_GOLDEN = 0x9E3779B97F4A7C15  # 2**64 over the golden ratio
_ALL_VALID = 0xFFFF_FFFF_FFFF_FFFF
_CANONICAL_NAN = 0x7FF8_0000_0000_0000  # the bits of numpy's NaN: the table's entry of the NaN group
_ABS = 0x7FFF_FFFF_FFFF_FFFF
_INF = 0x7FF0_0000_0000_0000
WORD = 64  # rows per validity word


@numba.njit(cache=True, nogil=True, inline="always")
def _slot(key, shift):
    """The first slot of ``key``: the top bits of ``key`` times 2**64 over the golden ratio (Knuth's
    multiplicative hashing; every bit of the key reaches the top bits, so a float's bits, which differ
    in their high bits, hash apart). Unsigned, so indexing by it needs no check for a negative index."""
    return (np.uint64(key) * np.uint64(_GOLDEN)) >> shift


@numba.njit(cache=True, nogil=True)
def _shift(cap):
    """``64 - log2(cap)`` for a power-of-two ``cap``: :func:`_slot`'s shift for a table of ``cap`` slots."""
    bits = 0
    while cap > 1:
        cap >>= 1
        bits += 1
    return np.uint64(64 - bits)


@numba.njit(cache=True, nogil=True, inline="always")
def _probe(key, table, mask, shift):
    """The group of the table's entry ``key``, or where it has none ``-1 - slot``: the empty slot that
    ends its probe (the entry's place). The table is one array of ``(key, group)`` pairs, slot ``s`` at
    ``2s`` and ``2s + 1``: one cache line a probe where the table outgrows the caches; unsigned indices
    (numba checks a signed one for a negative index on every row)."""
    slot = _slot(key, shift)
    while True:
        at = slot << np.uint64(1)
        g = table[at + np.uint64(1)]
        if table[at] == key and g != _EMPTY:
            return g
        if g == _EMPTY:
            return -1 - np.int64(slot)
        slot = (slot + np.uint64(1)) & mask


@numba.njit(cache=True, nogil=True, inline="always")
def _put(key, g, table, mask, shift):
    """An entry ``key -> g`` in the table (``key`` not in it)."""
    slot = _slot(key, shift)
    while table[(slot << np.uint64(1)) + np.uint64(1)] != _EMPTY:
        slot = (slot + np.uint64(1)) & mask
    table[slot << np.uint64(1)] = key
    table[(slot << np.uint64(1)) + np.uint64(1)] = g


@numba.njit(cache=True, nogil=True, inline="always")
def _other_form(key, is_float):
    """Whether ``key`` may be another form of a value the table has under other bits: a float's ±0.0
    or NaN (any payload or sign)."""
    magnitude = key & _ABS
    return is_float and (magnitude == 0 or magnitude > _INF)


@numba.njit(cache=True, nogil=True, inline="always")
def _new_group(key, slot, row, state, first, table):
    """A new group for ``key`` (no entry; ``slot``: its place), met at ``row``."""
    g = state[0]
    state[0] += 1
    state[2] += 1
    first[g] = row
    table[slot << 1] = key
    table[(slot << 1) + 1] = g
    return g


@numba.njit(cache=True, nogil=True)
def _new_form(key, state, row, first, table, mask, shift):
    """The group of ``key``, a float's ±0.0 or NaN with no entry yet, met at ``row``; the entry is added.

    The table holds raw bits, so the per-row loop compares bits as they are; the other forms of one
    value are found here, out of that loop, once each: -0.0 is 0.0's group and every NaN the group of
    numpy's NaN, each through an entry of its canonical bits (made with the group, at its first row)."""
    canonical = 0 if (key & _ABS) == 0 else _CANONICAL_NAN
    g = _probe(canonical, table, mask, shift)
    if g < 0:
        g = state[0]
        state[0] += 1
        first[g] = row
        _put(canonical, g, table, mask, shift)
        state[2] += 1
    if canonical != key:
        _put(key, g, table, mask, shift)
        state[2] += 1
    return g


@numba.njit(cache=True, nogil=True)
def _validity_word(validity, bit):
    """Bits ``bit .. bit + 63`` of an Arrow validity bitmap, bit ``k`` for row ``bit + k`` (bytes past
    its end read as 0: rows past the column's end are never grouped)."""
    byte, within = bit >> 3, np.uint64(bit & 7)
    low = np.uint64(0)
    for k in range(8):
        if byte + k < len(validity):
            low |= np.uint64(validity[byte + k]) << np.uint64(8 * k)
    if within == 0:
        return low
    high = np.uint64(validity[byte + 8]) if byte + 8 < len(validity) else np.uint64(0)
    return (low >> within) | (high << (np.uint64(64) - within))


@numba.njit(cache=True, nogil=True)
def _key_pass(bits, is_float, validity, offset, has_validity, weights, has_weights, start, state,
              want_codes, codes, first, counts, sums, table):  # fmt: skip
    """Rows from ``start`` on into the groups (``state``: groups so far, the null group, the table's
    entries); returns the row it stopped before: ``len(bits)``, or where the arrays must grow (before
    a word of rows could outgrow ``first`` or fill the table past half).

    Rows go a validity word (64 rows) at a time: a word with no null looks each row's raw bits up in
    the table and adds, nothing else; only a word with a null tests each row's bit. A float's ±0.0 or
    NaN that has no entry yet goes to :func:`_new_form` (a call: the loop stays small). The counts are
    kept in ``state`` (in registers, they slowed the loop of few groups: 6.0 ms against 5.7 for the taxi
    file's 2M rows). No array is reassigned in the loop (numba would count references on every row)."""
    n = len(bits)
    cap = len(table) // 2
    mask, shift = np.uint64(cap - 1), _shift(cap)
    half = cap // 2
    i = start
    while i < n and state[0] + WORD <= len(first) and state[2] + 2 * WORD <= half:
        end = min(n, i + WORD)
        word = _validity_word(validity, offset + i) if has_validity else np.uint64(_ALL_VALID)
        if end - i == WORD and word == np.uint64(_ALL_VALID):
            for j in range(i, end):
                g = _probe(bits[j], table, mask, shift)
                if g < 0:
                    if _other_form(bits[j], is_float):
                        g = _new_form(bits[j], state, j, first, table, mask, shift)
                    else:
                        g = _new_group(bits[j], -1 - g, j, state, first, table)
                if want_codes:
                    codes[j] = g
                counts[g] += 1
                if has_weights:
                    sums[g] += weights[j]
        else:
            for j in range(i, end):
                if (word >> np.uint64(j - i)) & np.uint64(1):
                    g = _probe(bits[j], table, mask, shift)
                    if g < 0:
                        if _other_form(bits[j], is_float):
                            g = _new_form(bits[j], state, j, first, table, mask, shift)
                        else:
                            g = _new_group(bits[j], -1 - g, j, state, first, table)
                else:
                    g = state[1]
                    if g < 0:  # the null group, at its first row
                        g = state[1] = state[0]
                        state[0] += 1
                        first[g] = j
                if want_codes:
                    codes[j] = g
                counts[g] += 1
                if has_weights:
                    sums[g] += weights[j]
        i = end
    return i


@numba.njit(cache=True, nogil=True)
def _new_table(cap):
    """A table of ``cap`` empty slots."""
    return np.full(2 * cap, _EMPTY, np.int64)


@numba.njit(cache=True, nogil=True)
def _rehash(table, cap):
    """The table's entries in a table of ``cap`` slots."""
    out = _new_table(cap)
    mask, shift = np.uint64(cap - 1), _shift(cap)
    for at in range(0, len(table), 2):
        if table[at + 1] != _EMPTY:
            _put(table[at], table[at + 1], out, mask, shift)
    return out


@numba.njit(cache=True, nogil=True)
def _longer(a, size):
    out = np.zeros(size, a.dtype)
    out[: len(a)] = a
    return out


@numba.njit(cache=True, nogil=True)
def _group_rows(bits, is_float, validity, offset, has_validity, weights, has_weights, state, want_codes, codes,
                first, counts, sums, table):  # fmt: skip
    """:func:`_key_pass` over every row, the arrays grown (doubled) where it stops; returns them."""
    n = len(bits)
    i = _key_pass(bits, is_float, validity, offset, has_validity, weights, has_weights, 0, state,
                  want_codes, codes, first, counts, sums, table)  # fmt: skip
    while i < n:
        if state[0] + WORD > len(first):
            room = 2 * len(first)
            first, counts, sums = _longer(first, room), _longer(counts, room), _longer(sums, room)
        if state[2] + 2 * WORD > len(table) // 4:  # past half its slots
            table = _rehash(table, len(table))
        i = _key_pass(bits, is_float, validity, offset, has_validity, weights, has_weights, i, state,
                      want_codes, codes, first, counts, sums, table)  # fmt: skip
    return first, counts, sums, table


ROOM = 1024  # groups the arrays hold at first (they grow by doubling: allocating n of each costs more than the pass)


def new_tables() -> tuple[np.ndarray, ...]:
    """``(first, counts, sums, table, state)`` for no groups yet."""
    groups = (np.zeros(ROOM, np.int64), np.zeros(ROOM, np.int64), np.zeros(ROOM, np.float64))
    return (*groups, np.full(8 * ROOM, _EMPTY, np.int64), np.array([0, -1, 0], np.int64))  # 4 * ROOM slots


@numba.njit(cache=True, nogil=True)
def key_groups(bits, is_float, validity, offset, has_validity, weights, has_weights, want_codes):
    """Group ids of one key column in one pass, with each group's row count and (``has_weights``) the
    row-order sum of ``weights`` (from 0.0, as ``numpy.bincount`` adds).

    ``bits`` are the key's int64 values (a float key's float64 bits, ``is_float``); ``validity`` is
    Arrow's validity bitmap (bit ``offset + i`` for row ``i``) when ``has_validity``. Nulls are one
    group; for a float key -0.0 is 0.0 and every NaN one NaN. Groups are numbered by first appearance;
    ``first[g]`` is the first row of group ``g`` (its key is that row's value). Returns ``(codes,
    groups, first, counts, sums)``, the last three cut to ``groups``; ``codes`` is empty unless
    ``want_codes``."""
    codes = np.empty(len(bits) if want_codes else 0, np.int64)
    first, counts, sums = np.zeros(ROOM, np.int64), np.zeros(ROOM, np.int64), np.zeros(ROOM, np.float64)
    table = _new_table(4 * ROOM)
    state = np.array([0, -1, 0], np.int64)
    first, counts, sums, _ = _group_rows(
        bits, is_float, validity, offset, has_validity, weights, has_weights, state, want_codes, codes,
        first, counts, sums, table,
    )  # fmt: skip
    groups = state[0]
    return codes, groups, first[:groups].copy(), counts[:groups].copy(), sums[:groups].copy()


@numba.njit(cache=True, nogil=True)
def key_groups_more(bits, is_float, validity, offset, has_validity, weights, has_weights, base,
                    first, counts, sums, table, state):  # fmt: skip
    """:func:`key_groups` over the next rows of a column read in pieces: the groups so far are in the
    arrays passed in (:func:`new_tables` at first; ``state``: their number, the null group, the
    table's entries), and this piece's rows are rows ``base ...`` of the whole column (``first`` holds
    whole-column rows). Returns the arrays, grown where they had to be; the sums keep adding in row
    order, so the pieces one after another give the bits of one pass over the whole column."""
    before = state[0]
    codes = np.empty(0, np.int64)
    first, counts, sums, table = _group_rows(
        bits, is_float, validity, offset, has_validity, weights, has_weights, state, False, codes,
        first, counts, sums, table,
    )  # fmt: skip
    for g in range(before, state[0]):
        first[g] += base
    return first, counts, sums, table
