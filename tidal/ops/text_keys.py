"""Group codes for short text keys in one compiled pass: no temporal semantics of its own (the grouping of
:mod:`tidal.ops.keys`, which states it: a dense code per distinct key value, in order of first appearance).

A text value of at most 7 bytes and its length pack into one int64 (distinct values, distinct integers),
so a batch's short texts take the compiled open-addressing table of integer keys instead of a per-batch
dictionary encoding (a hash of each string by Arrow, then a Python lookup per distinct value): category
names, country codes, flags. A batch holding a longer value, or a null, is left to the general path; both
paths hand out codes from the same dictionary of values, so a value has one code whichever path met it.
"""

from __future__ import annotations

import numba
import numpy as np
import pyarrow as pa

SHORT = 7  # bytes: the value and its length fit one int64
_TEXT = {pa.string(): np.int32, pa.large_string(): np.int64}


@numba.njit(cache=True, inline="always")
def _slot_id(keys, ids, mask, v, next_id):
    """The id of int64 ``v`` in the open-addressing table ``keys``/``ids`` (-1 = empty slot): its existing
    id, or ``next_id`` after entering it (the caller then advances its next id). The probe of
    :class:`tidal.ops.keys.IdTable` (which imports it from here), whose table this is."""
    h = (np.uint64(v) * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(20)
    slot = np.int64(h) & mask
    while True:
        got = ids[slot]
        if got < 0:
            keys[slot] = v
            ids[slot] = next_id
            return next_id
        if keys[slot] == v:
            return got
        slot = (slot + 1) & mask


@numba.njit(cache=True)
def _short_text_ids(offsets, data, keys, ids, next_id, out, new_rows):
    """Ids of text values of at most 7 bytes (``offsets``, ``data``: Arrow's buffers) in the table
    ``keys``/``ids`` (kept at most half full by the caller); unseen values get ``next_id`` onwards, and
    ``new_rows`` the row of each one's first appearance. Returns (next id, how many new)."""
    mask = len(keys) - 1
    k = 0
    last_v = np.int64(-1)  # no packed value is negative: its length byte is at most 7
    last_id = -1
    for i in range(len(offsets) - 1):
        s = offsets[i]
        length = offsets[i + 1] - s
        v = np.uint64(length) << np.uint64(56)
        for j in range(length):
            v |= np.uint64(data[s + j]) << np.uint64(8 * j)
        key = np.int64(v)
        if key == last_v:  # runs of one value skip the probe
            out[i] = last_id
            continue
        got = _slot_id(keys, ids, mask, key, next_id)
        if got == next_id:
            new_rows[k] = i
            k += 1
            next_id += 1
        out[i] = got
        last_v = key
        last_id = got
    return next_id, k


class ShortTexts:
    """Codes for the short text values of one key column: packed value -> table id -> the column's code."""

    def __init__(self, table):
        self.table = table  # a tidal.ops.keys.IdTable: packed value -> table id
        self.code_of = np.empty(0, np.int64)  # table id -> the column's code

    def codes(self, col: pa.Array, assign) -> np.ndarray | None:
        """The codes of ``col``'s values, or None (nothing changed) when it holds a null or a value longer
        than :data:`SHORT` bytes, or is not text. ``assign(firsts)`` gives the codes of the values met for
        the first time here (an array of them, in order of first appearance)."""
        width = _TEXT.get(col.type)
        if width is None or col.null_count or len(col) == 0:
            return None
        bufs = col.buffers()
        offsets = np.frombuffer(bufs[1], width, count=len(col) + 1, offset=col.offset * np.dtype(width).itemsize)
        if int((offsets[1:] - offsets[:-1]).max()) > SHORT:
            return None
        data = np.frombuffer(bufs[2], np.uint8) if bufs[2] is not None else np.zeros(1, np.uint8)
        n = len(col)
        table = self.table
        table._room(n)
        out = np.empty(n, np.int64)
        new_rows = np.empty(n, np.int64)
        before = table.count
        table.count, k = _short_text_ids(offsets, data, table.keys, table.ids, before, out, new_rows)
        table.size += table.count - before
        if k:
            given = np.asarray(assign(col.take(pa.array(new_rows[:k]))), np.int64)
            self.code_of = np.concatenate([self.code_of, given])
        return self.code_of[out]
