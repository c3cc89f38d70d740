"""The canonical form of :mod:`tidal.core.canonical`, computed over Arrow columns without per-row Python.

Same meaning as ``layers(deltas_from_physical(...))``: per payload, the layers of the multiplicity
step function (layer k = the maximal intervals where the multiplicity is at least k), as rows
``start, end, payload...`` sorted by start, end, then payload. The plain-Python functions stay the
reference evaluator's oracle; this module is the egress path (``Stream.to_intervals()``).

How:

* :func:`payload_ids` gives every row a dense integer id for its payload, numbered in the order
  ``canonical._sort_key`` sorts payloads (column by column, nulls last), so sorting by id sorts by
  payload. Each column gets order-preserving codes from Arrow's dense rank; lists become binary
  strings of their elements' codes (bytewise order is then element-wise order, a prefix first),
  structs combine their fields' codes in field-name order (as ``freeze`` sorts a dict's items).
  Types Arrow cannot rank fall back to Python on that column alone.
* :func:`layers_table` first looks for the common case of query output: every row an interval and no
  two intervals of a payload overlapping or touching; then each row is a layer as it is and only the
  final sort remains. Otherwise it turns the rows into +1/-1 changes, sums them per (payload, time), takes
  running levels, and expands each net change into unit crossings of levels: the n-th rise
  through level k of a payload pairs with its n-th fall through k (rises and falls through one
  level alternate in time), and a rise never matched stays open to ``INFINITY``.

Payload equality is value equality, as Python's: ``-0.0`` equals ``0.0`` and the first row's
value is shown. One deliberate difference from the Python oracle: NaN equals NaN here (the oracle
sees each NaN as a new payload, because every ``to_pylist`` NaN is a distinct object).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .canonical import freeze
from .time import INFINITY

__all__ = ["layers_table", "payload_ids", "sort_order"]


def sort_order(*keys: np.ndarray, stable: bool = True) -> np.ndarray:
    """A permutation sorting rows by ``keys`` (int64 arrays, the first most significant), stable
    unless ``stable=False`` (for callers whose tied rows are identical).

    When the keys' ranges (and, for a stable order, the row number) fit in 63 bits together, they
    are packed into one int64: sorting those values is several times faster than an argsort.
    Otherwise ``np.lexsort``.
    """
    n = len(keys[0])
    if n == 0:
        return np.zeros(0, np.int64)
    lows = [int(k.min()) for k in keys]
    bits = [(int(k.max()) - low).bit_length() for k, low in zip(keys, lows, strict=True)]
    row_bits = (n - 1).bit_length() if stable else 0
    if sum(bits) + row_bits > 63:
        return np.lexsort(keys[::-1])
    packed = np.zeros(n, np.int64)
    for k, low, b in zip(keys, lows, bits, strict=True):
        if b:
            packed <<= b
            packed |= k - low
    if not stable:
        return np.argsort(packed)
    packed <<= row_bits
    packed |= np.arange(n, dtype=np.int64)
    packed.sort()
    return packed & ((1 << row_bits) - 1)


def payload_ids(payload: pa.Table) -> tuple[np.ndarray, np.ndarray]:
    """``(ids, first_rows)``: a dense id per row, ordered like the payloads' sort keys, and the first
    row holding each id (whose values stand for the payload, as the first occurrence does in the
    Python oracle)."""
    ids, first_rows, _ = _payload_ids(payload)
    return ids, first_rows


def _payload_ids(payload: pa.Table) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``payload_ids`` and a stable order of the rows by id."""
    n = payload.num_rows
    codes = [_column_codes(payload.column(i)) for i in range(payload.num_columns)]
    if not codes:
        return np.zeros(n, np.int64), np.zeros(min(n, 1), np.int64), np.arange(n, dtype=np.int64)
    return _dense(_combine(codes), first_rows=True)


def _dense(values: np.ndarray, first_rows: bool = False):
    """Dense codes ``0..m-1`` in the order of ``values``; with ``first_rows`` also each code's first row
    and the (stable) sorting order of ``values``."""
    order = sort_order(values)
    ordered = values[order]
    new = np.ones(len(values), bool)
    new[1:] = ordered[1:] != ordered[:-1]
    ids = np.empty(len(values), np.int64)
    ids[order] = np.cumsum(new) - 1
    return (ids, order[new], order) if first_rows else ids


def _combine(codes: list[np.ndarray]) -> np.ndarray:
    """One code per row, ordered lexicographically by the columns' codes (the first most significant)."""
    out = codes[0]
    cardinality = int(out.max()) + 1 if len(out) else 1
    for c in codes[1:]:
        k = int(c.max()) + 1 if len(c) else 1
        if cardinality * k >= 2**62:  # would overflow int64: renumber densely first
            out = _dense(out)
            cardinality = int(out.max()) + 1
        out = out * k + c
        cardinality *= k
    return out


def _column_codes(column: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """Non-negative int64 codes, equal exactly for equal values and ordered like the values (nulls last)."""
    arr = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    t = arr.type
    n = len(arr)
    if n == 0:
        return np.zeros(0, np.int64)
    if pa.types.is_null(t):
        return np.zeros(n, np.int64)
    if pa.types.is_dictionary(t):
        return _column_codes(arr.dictionary_decode())
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return _list_codes(arr)
    if pa.types.is_struct(t):
        return _struct_codes(arr)
    if not arr.null_count and (pa.types.is_signed_integer(t) or pa.types.is_timestamp(t) or pa.types.is_duration(t)):
        # integers are their own order: shifted to start at 0 they are codes (not dense; nothing needs that)
        values = arr.to_numpy(zero_copy_only=False).view(np.int64) if t.bit_width == 64 else arr.to_numpy()
        values = values.astype(np.int64, copy=False)
        low, high = int(values.min()), int(values.max())
        if high - low < 2**62:
            return values - low
    try:
        # Arrow sorts nulls last (and NaN after every number, before nulls); dense ranks start at 1
        return pc.rank(arr, tiebreaker="dense").to_numpy().astype(np.int64) - 1
    except pa.ArrowNotImplementedError:
        return _python_codes(arr)


def _list_codes(arr: pa.Array) -> np.ndarray:
    child = _column_codes(arr.flatten())  # flatten skips what null lists cover and honours slicing
    lengths = pc.fill_null(pc.list_value_length(arr), 0).to_numpy().astype(np.int64)
    data = child.astype(">u8").view(np.uint8)  # big-endian: byte order is number order
    offsets = np.zeros(len(arr) + 1, np.int64)
    np.cumsum(lengths * 8, out=offsets[1:])
    keys = pa.LargeBinaryArray.from_buffers(
        pa.large_binary(), len(arr), [None, pa.py_buffer(offsets), pa.py_buffer(data)]
    )
    codes = pc.rank(keys, tiebreaker="dense").to_numpy().astype(np.int64) - 1
    return _nulls_last(codes, arr)


def _struct_codes(arr: pa.StructArray) -> np.ndarray:
    fields = arr.flatten()  # children with the struct's slicing applied
    order = sorted(range(len(fields)), key=lambda i: arr.type.field(i).name)
    if not order:
        codes = np.zeros(len(arr), np.int64)
    else:
        codes = _dense(_combine([_column_codes(fields[i]) for i in order]))
    return _nulls_last(codes, arr)


def _nulls_last(codes: np.ndarray, arr: pa.Array) -> np.ndarray:
    if arr.null_count:
        codes = codes.copy()
        codes[arr.is_null().to_numpy(zero_copy_only=False)] = int(codes.max()) + 1
    return codes


def _python_codes(arr: pa.Array) -> np.ndarray:
    """Codes for types Arrow cannot rank (maps, half floats, extension types): Python on distinct values."""
    ids: dict = {}
    row_ids = np.fromiter((ids.setdefault(_hashable(v), len(ids)) for v in arr.to_pylist()), np.int64, len(arr))
    distinct = sorted(ids, key=_order_key)
    rank = np.empty(len(distinct), np.int64)
    for r, value in enumerate(distinct):
        rank[ids[value]] = r
    return rank[row_ids]


def _hashable(v):
    if isinstance(v, list):
        return tuple(_hashable(x) for x in v)
    if isinstance(v, dict):
        return tuple(sorted((k, _hashable(x)) for k, x in v.items()))
    return v


def _order_key(v):
    if v is None:
        return (1,)
    if isinstance(v, tuple):
        return (0, tuple(_order_key(x) for x in v))
    return (0, v)


def layers_table(sync: np.ndarray, other: np.ndarray, payload: pa.Table) -> pa.Table:
    """``start, end`` then the payload columns: the sorted layers of physical rows ``sync, other, payload``.

    Raises ValueError, as :func:`tidal.core.canonical.layers` does, if a payload's multiplicity goes
    negative (an end without a start).
    """
    sync = np.asarray(sync, np.int64)
    other = np.asarray(other, np.int64)
    pid, first_rows, by_pid = _payload_ids(payload)
    if len(sync) and bool(((other > sync) & (other != INFINITY)).all()):
        if _separate_intervals(sync, other, pid, by_pid):
            return _table(sync, other, pid, first_rows, payload)

    is_start = other == INFINITY
    is_end = (other < sync) & ~is_start
    rises = ~is_end  # intervals and start edges rise at sync
    falls_at_other = ~(is_start | is_end)  # intervals fall at other; end edges fall at sync
    change_pid = np.concatenate([pid[rises], pid[is_end], pid[falls_at_other]])
    change_t = np.concatenate([sync[rises], sync[is_end], other[falls_at_other]])
    change = np.concatenate(
        [np.ones(int(rises.sum()), np.int64), np.full(int(is_end.sum() + falls_at_other.sum()), -1, np.int64)]
    )

    # net change per (payload, time), in payload then time order
    order = sort_order(change_pid, change_t)
    change_pid, change_t, change = change_pid[order], change_t[order], change[order]
    new_group = np.ones(len(change_t), bool)
    new_group[1:] = (change_pid[1:] != change_pid[:-1]) | (change_t[1:] != change_t[:-1])
    group_starts = np.flatnonzero(new_group)
    g_pid, g_t = change_pid[group_starts], change_t[group_starts]
    net = np.add.reduceat(change, group_starts) if len(group_starts) else change[:0]

    # level after each change: running sum, restarted at each payload
    running = np.cumsum(net)
    first_of_pid = np.ones(len(g_pid), bool)
    first_of_pid[1:] = g_pid[1:] != g_pid[:-1]
    pid_starts = np.flatnonzero(first_of_pid)
    before_pid = running[pid_starts] - net[pid_starts]
    level = running - np.repeat(before_pid, np.diff(np.append(pid_starts, len(g_pid))))
    if len(level) and level.min() < 0:
        _raise_negative(level, g_pid, g_t, first_rows, payload)

    # one unit crossing per level passed: a rise through k for k in (before, after], a fall for k in (after, before]
    count = np.abs(net)
    low = level - np.maximum(net, 0)  # min(level before, level after)
    total = int(count.sum())
    owner = np.repeat(np.arange(len(net)), count)
    rank_in_owner = np.arange(total) - np.repeat(np.cumsum(count) - count, count)
    x_level = low[owner] + 1 + rank_in_owner
    x_pid, x_t, x_rise = g_pid[owner], g_t[owner], net[owner] > 0
    if total and x_level.max() > 1:
        # group crossings by (payload, level), keeping time order (a stable sort of time-ordered input)
        by_level = sort_order(x_pid, x_level)
        x_pid, x_t, x_rise, x_level = x_pid[by_level], x_t[by_level], x_rise[by_level], x_level[by_level]
    rise_at = np.flatnonzero(x_rise)
    # the crossing after a rise is its fall when it belongs to the same payload and level
    nxt = rise_at + 1
    closed = nxt < total
    closed[closed] = (x_pid[nxt[closed]] == x_pid[rise_at[closed]]) & (x_level[nxt[closed]] == x_level[rise_at[closed]])
    start = x_t[rise_at]
    end = np.full(len(rise_at), INFINITY, np.int64)
    end[closed] = x_t[nxt[closed]]
    out_pid = x_pid[rise_at]

    return _table(start, end, out_pid, first_rows, payload)


def _separate_intervals(sync, other, pid, by_pid) -> bool:
    """Whether no two intervals of one payload overlap or touch (then each row is a layer of its own).
    ``by_pid``: a stable order of the rows by payload id (time order within a payload when the rows
    come in sync order, as a stream's do)."""
    order = by_pid if bool((sync[1:] >= sync[:-1]).all()) else sort_order(pid, sync)
    p, s, o = pid[order], sync[order], other[order]
    meet = (p[1:] == p[:-1]) & (o[:-1] >= s[1:])
    return not bool(meet.any())


def _table(start, end, pid, first_rows, payload: pa.Table) -> pa.Table:
    """Rows ``start, end`` and payload ``pid`` (shown as its first row), sorted by start, end, payload."""
    # INFINITY is the only end past the finite times: renumber it so the keys pack into one int64
    finite = end != INFINITY
    finite_end = np.where(finite, end, int(end[finite].max()) + 1 if finite.any() else 0) if len(end) else end
    out_order = sort_order(start, finite_end, pid, stable=False)  # tied rows are equal
    rows = pa.array(first_rows[pid[out_order]], pa.int64())
    columns = [pa.array(start[out_order], pa.int64()), pa.array(end[out_order], pa.int64())]
    columns += [c.take(rows) for c in payload.columns]
    return pa.Table.from_arrays(columns, names=["start", "end", *payload.column_names])


def _raise_negative(level, g_pid, g_t, first_rows, payload: pa.Table) -> None:
    # the oracle visits payloads in order of first appearance and each one's times in order
    bad = np.flatnonzero(level < 0)
    culprit = bad[np.argmin(first_rows[g_pid[bad]])]  # earliest time of that payload: bad is in time order
    row = int(first_rows[g_pid[culprit]])
    values = freeze(tuple(c[row].as_py() for c in payload.columns))
    raise ValueError(f"payload {values!r} ends more often than it starts at time {int(g_t[culprit])}")
