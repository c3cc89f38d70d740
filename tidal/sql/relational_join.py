"""The relational path's inner equi-join (:mod:`.relational`): a lookup join of two files read whole.

No temporal semantics: both sides are rows alive from time 0 to the end of time, so the stream
engine's final snapshot of the join (the build-once variant, :mod:`tidal.ops.join.build_once`) is
every pair of rows with equal keys. This module computes that snapshot over whole Arrow columns,
in the engine's row order: the probing (right) side's rows in their order, each followed by its
matching left rows in the left's order. A SUM over the join therefore adds in the same order and
has the same bits.

It takes the joins the engine runs as a lookup join (``build_left``), inner, on one key column of
the same type on both sides: integers, times, booleans, text or bytes. A null key equals nothing.
Float keys (whose -0.0 and NaN rules the engine keeps) and anything else stay on the stream engine.

Integer keys of a modest span are numbered by their offset from the left's smallest key (a direct
table: one comparison and one gather per right row); other keys by Arrow's hash of the left's distinct
keys (``pc.unique``, then ``pc.index_in`` with nulls skipped). A left of one row per key (a dimension
table) needs one gather per right row, repeated keys the engine's prefix-sum expansion. Only the columns read above
the join are gathered.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .logical import Join


def _key_type_ok(t: pa.DataType | None) -> bool:
    if t is None:
        return False
    if pa.types.is_integer(t) or pa.types.is_boolean(t):
        return True
    if pa.types.is_timestamp(t) or pa.types.is_date(t) or pa.types.is_time(t) or pa.types.is_duration(t):
        return True
    return pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t) or pa.types.is_large_binary(t)


def supported(node: Join) -> bool:
    """Whether ``node`` is a join this module answers as the engine does."""
    if node.kind != "inner" or not node.build_left or node.condition is not None or len(node.left_keys) != 1:
        return False
    ltypes = dict(zip(node.left.names, node.left.types, strict=True))
    rtypes = dict(zip(node.right.names, node.right.types, strict=True))
    lt, rt = ltypes.get(node.left_keys[0]), rtypes.get(node.right_keys[0])
    return _key_type_ok(lt) and rt is not None and lt.equals(rt)


def _one(col) -> pa.Array:
    if isinstance(col, pa.ChunkedArray):
        return col.chunk(0) if col.num_chunks == 1 else col.combine_chunks()
    return col


_DIRECT_SPAN = 1 << 22  # integer keys spanning at most this many values are looked up in a direct table


def _ints(col: pa.Array) -> np.ndarray | None:
    """An integer-like column's values as int64 numbers (nulls as 0), or None for other types."""
    t = col.type
    if pa.types.is_integer(t) and not pa.types.is_uint64(t):
        pass
    elif pa.types.is_timestamp(t) or pa.types.is_date(t) or pa.types.is_time(t) or pa.types.is_duration(t):
        col = col.view(pa.int64() if t.bit_width == 64 else pa.int32())
    else:
        return None
    if col.null_count:
        col = col.fill_null(0)
    return np.asarray(col.to_numpy(zero_copy_only=False)).astype(np.int64, copy=False)


def _valid(col: pa.Array) -> np.ndarray | None:
    return None if col.null_count == 0 else np.asarray(col.is_valid().to_numpy(zero_copy_only=False))


def _codes(left_key: pa.Array, right_key: pa.Array) -> tuple[np.ndarray, np.ndarray, int]:
    """``(left codes, right codes, size)``: equal keys have equal codes ``0 .. size - 1``; -1 for a null
    key and for a right key no left row has. Integers of a modest span: the value's offset from the
    left's smallest (a direct table); else Arrow's hash of the left's distinct keys."""
    lv, rv = _ints(left_key), _ints(right_key)
    if lv is not None and rv is not None:
        lok, rok = _valid(left_key), _valid(right_key)
        present = lv if lok is None else lv[lok]
        if len(present) == 0:
            return np.full(len(lv), -1, np.int64), np.full(len(rv), -1, np.int64), 0
        lo, hi = int(present.min()), int(present.max())
        if hi - lo < _DIRECT_SPAN:
            lc = lv - lo
            if lok is not None:
                lc[~lok] = -1
            inside = (rv >= lo) & (rv <= hi)
            if rok is not None:
                inside &= rok
            rc = np.where(inside, rv - lo, -1)
            return lc, rc, hi - lo + 1
    distinct = pc.unique(left_key.drop_null() if left_key.null_count else left_key)
    opts = pc.SetLookupOptions(distinct, skip_nulls=True)
    lc = np.asarray(pc.index_in(left_key, options=opts).fill_null(-1).to_numpy(zero_copy_only=False), np.int64)
    rc = np.asarray(pc.index_in(right_key, options=opts).fill_null(-1).to_numpy(zero_copy_only=False), np.int64)
    return lc, rc, len(distinct)


def pairs(left_key: pa.Array, right_key: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """``(left rows, right rows)`` of every pair with equal (non-null) keys, by right row, then left row."""
    lc, rc, size = _codes(left_key, right_key)
    lrows = np.flatnonzero(lc >= 0)
    counts = np.bincount(lc[lrows], minlength=size)
    hit = rc >= 0
    hit[hit] = counts[rc[hit]] > 0
    matched = np.flatnonzero(hit)
    if len(matched) == 0:
        empty = np.empty(0, np.int64)
        return empty, empty
    code = rc[matched]
    if int(counts.max()) == 1:  # one left row per key: a gather per right row
        first = np.empty(size, np.int64)
        first[lc[lrows]] = lrows
        return first[code], matched
    order = lrows[np.argsort(lc[lrows], kind="stable")]  # left rows by key, in left order within a key
    offsets = np.concatenate([[0], np.cumsum(counts)])
    per = counts[code]
    total = int(per.sum())
    right = np.repeat(matched, per)
    lo = np.repeat(offsets[code], per)
    within = np.arange(total) - np.repeat(np.cumsum(per) - per, per)
    return order[lo + within], right


def join(node: Join, left: pa.Table, right: pa.Table, wanted: set | None) -> pa.Table:
    """The join's rows: the left's columns, then the right's (``wanted``: only those read above)."""
    li, ri = pairs(_one(left.column(node.left_keys[0])), _one(right.column(node.right_keys[0])))
    cols, names = [], []
    for table, rows in ((left, li), (right, ri)):
        idx = pa.array(rows, pa.int64())
        for name in table.column_names:
            if wanted is None or name in wanted:
                cols.append(_one(table.column(name)).take(idx))
                names.append(name)
    if not cols:  # nothing read above (COUNT(*)): the rows still count
        return pa.table({"__rows": pa.nulls(len(ri), pa.null())}).select([])
    return pa.table(cols, names=names)
