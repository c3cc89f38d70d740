"""``mode``, ``arg_min``/``arg_max`` and ``product`` per group over whole Arrow columns (the relational
path of :mod:`.hashagg`), value for value the stream engine's answer over rows numbered in file order
(:mod:`tidal.ops.aggregate.picks`):

* ``product``: non-null values (NaN included) multiplied in row order from 1.0 (``np.multiply.at``
  applies them in index order, as DuckDB's running product does), as DOUBLE; NULL for none;
* ``mode``: per group the value with the most rows (values grouped as keys are: -0.0 is 0.0, every
  NaN one NaN), ties to the value that appeared first; its first row's value is shown;
* ``arg_min``/``arg_max`` of the packed ``{f0: by, f1: x}``: ``x`` of the first row, in row order,
  whose ``by`` is the smallest/largest, over rows where neither is NULL (Arrow's stable sort: NaN
  after every number, -0.0 equal to 0.0, text by its UTF-8 bytes).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..core.arrow import from_numpy

PICK_FUNCTIONS = ("mode", "arg_min", "arg_max", "product")


def _sortable(t: pa.DataType) -> bool:
    return (
        (pa.types.is_integer(t) and not pa.types.is_uint64(t))
        or pa.types.is_floating(t)
        or pa.types.is_boolean(t)
        or pa.types.is_string(t)
        or pa.types.is_timestamp(t)
        or pa.types.is_date(t)
    )


def supported(function: str, t: pa.DataType | None, key_supported) -> bool:
    if t is None:
        return False
    if function == "product":
        return (pa.types.is_integer(t) and not pa.types.is_uint64(t)) or pa.types.is_floating(t)
    if function == "mode":
        return key_supported(t) and not pa.types.is_uint64(t)
    return pa.types.is_struct(t) and t.num_fields == 2 and _sortable(t.field(0).type)


def _valid(col: pa.Array) -> np.ndarray:
    return np.asarray(col.is_valid().to_numpy(zero_copy_only=False), bool)


def aggregate(function: str, codes: np.ndarray, size: int, order: np.ndarray, col: pa.Array, column_codes) -> pa.Array:
    """One pick aggregate's column, one row per group code in ``order`` (``column_codes``: hashagg's
    per-column value grouping)."""
    if function == "product":
        return _product(codes, size, order, col)
    if function == "mode":
        return _mode(codes, size, order, col, column_codes)
    return _arg(function == "arg_min", codes, size, order, col)


def _product(codes, size, order, col):
    ok = _valid(col)
    values = np.asarray(col.cast(pa.float64()).fill_null(1.0).to_numpy(zero_copy_only=False), np.float64)
    out = np.ones(size, np.float64)
    with np.errstate(over="ignore", invalid="ignore", under="ignore"):
        np.multiply.at(out, codes[ok], values[ok])
    none = np.bincount(codes[ok], minlength=size)[order] == 0
    return from_numpy(out[order], mask=none if none.any() else None)


def _first_per_group(sorted_codes: np.ndarray, positions: np.ndarray, size: int) -> np.ndarray:
    """Per group code, the first of ``positions`` (sorted by group) in its group, or -1."""
    first = np.full(size, -1, np.int64)
    if len(sorted_codes):
        starts = np.flatnonzero(np.r_[True, sorted_codes[1:] != sorted_codes[:-1]])
        first[sorted_codes[starts]] = positions[starts]
    return first


def _taken(values: pa.Array, rows: np.ndarray) -> pa.Array:
    """``values`` at ``rows`` (NULL where a row is -1)."""
    missing = rows < 0
    taken = values.take(from_numpy(np.where(missing, 0, rows))) if len(values) else pa.nulls(len(rows), values.type)
    if missing.any():
        taken = pc.if_else(from_numpy(missing), pa.scalar(None, values.type), taken)
    return taken


def _mode(codes, size, order, col, column_codes):
    ok = np.flatnonzero(_valid(col))
    vcodes, vsize, _, _ = column_codes(col)
    pair = codes[ok].astype(np.int64) * max(vsize, 1) + vcodes[ok]
    # pairs (group, value) numbered by first appearance: the number orders ties
    enc = pc.dictionary_encode(from_numpy(pair, pa.int64()))
    dense = np.asarray(enc.indices.to_numpy(zero_copy_only=False), np.int64)
    pairs = np.asarray(enc.dictionary.to_numpy(zero_copy_only=False), np.int64)
    counts = np.bincount(dense, minlength=len(pairs))
    first_row = np.full(len(pairs), len(col), np.int64)
    np.minimum.at(first_row, dense, ok)
    group = pairs // max(vsize, 1)
    ranked = np.lexsort((np.arange(len(pairs)), -counts, group))
    best = _first_per_group(group[ranked], ranked, size)
    rows = np.where(best >= 0, first_row[np.maximum(best, 0)], -1) if len(pairs) else np.full(size, -1, np.int64)
    return _taken(col, rows[order])


def _arg(smallest: bool, codes, size, order, col):
    by, x = col.field(0), col.field(1)
    ok = np.flatnonzero(_valid(col) & _valid(by) & _valid(x))
    b = by.take(from_numpy(ok))
    way = "ascending" if smallest else "descending"
    table = pa.table({"g": from_numpy(codes[ok].astype(np.int64)), "b": b})
    keys = [("g", "ascending"), ("b", way)]
    if pa.types.is_floating(b.type):  # NaN after every number, whichever way (Arrow puts it last both ways)
        table = table.append_column("nan", pc.is_nan(b))
        keys.insert(1, ("nan", way))
    ranked = np.asarray(pc.sort_indices(table, sort_keys=keys).to_numpy(zero_copy_only=False), np.int64)
    first = _first_per_group(codes[ok][ranked], ok[ranked], size)
    return _taken(x, first[order])
