"""Grouped aggregates over whole Arrow columns, with numpy and pyarrow.compute only (no numba).

The relational path of ``tidal query`` (:mod:`.relational`) groups a file's rows here when its
plan has no temporal operator. Every answer equals the stream engine's final snapshot
(:mod:`tidal.ops.aggregate`, :mod:`tidal.ops.keys`), value for value:

* **group ids**: nulls are one group; floats group by value (-0.0 is 0.0, every NaN is one NaN);
  a group's key is the first row's value of each key column (as the engine's key index keeps it),
  and groups come out in order of first appearance;
* **arguments**: null and NaN values do not count (SQL's NaN is handled above the aggregate);
* ``count``/``count_not_null`` count rows/values; ``sum`` of integers and booleans is exact in
  int64, of floats a float64 sum
  taken row by row in file order (``np.bincount`` adds in row order: the engine's running sums
  give the same bits); ``average`` is that float sum over the count; ``variance``/``stddev`` the
  engine's shifted sums: of ``d = x - K`` and ``d * d``, ``K`` the group's first finite value (its
  pivot), in row order; ``min``/``max`` over values ordered as
  the engine's keys order them (-0.0 is 0.0), in the argument's type.
* a sum beyond BIGINT is the engine's error, ``SumOverflowError``, never a wrapped value.
* ``mode``, ``arg_min``/``arg_max`` and ``product``: :mod:`.hashagg_picks`;
* ``string_agg``, ``list``, ``first``/``last``, the DISTINCT aggregates and ``min``/``max`` of text:
  :mod:`.hashagg_values`.

:func:`supported` says which aggregate calls and key types this module takes; the caller runs
anything else on the stream engine.
"""

from __future__ import annotations

import math
import sys

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..core.arrow import from_numpy
from . import hashagg_picks, hashagg_values

FUNCTIONS = ("count", "count_not_null", "sum", "average", "variance", "stddev", "min", "max")


def _time_like(t: pa.DataType) -> bool:
    return pa.types.is_timestamp(t) or pa.types.is_date(t) or pa.types.is_duration(t) or pa.types.is_time(t)


def _int_like(t: pa.DataType) -> bool:
    return (pa.types.is_integer(t) and not pa.types.is_uint64(t)) or _time_like(t)


def key_supported(t: pa.DataType) -> bool:
    return (
        _int_like(t)
        or pa.types.is_floating(t)
        or pa.types.is_boolean(t)
        or pa.types.is_string(t)
        or pa.types.is_large_string(t)
        or pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
        or pa.types.is_decimal(t)
    )


def _numeric(t: pa.DataType) -> bool:
    return pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t)


def supported(function: str, t: pa.DataType | None, parameter=None) -> bool:
    """Whether this module computes ``function`` (with the planner's ``parameter``) over an argument of
    type ``t`` as the engine does."""
    if function == "count":
        return parameter is None
    if hashagg_values.supported(function, t, parameter):
        return True
    if parameter is not None:
        return False
    if function in hashagg_picks.PICK_FUNCTIONS:
        return hashagg_picks.supported(function, t, key_supported)
    if t is None or function not in FUNCTIONS:
        return False
    if function == "count_not_null":
        return True
    if pa.types.is_uint64(t):  # the engine keys uint64 by float bits and sums it through int64 casts
        return False
    if function in ("min", "max"):
        return _numeric(t) or (_time_like(t) and not pa.types.is_time(t))
    return _numeric(t)


# -- group ids ---------------------------------------------------------------------------------
class Groups:
    """Group ids of a table's rows: ``codes`` per row (``0 .. size - 1``), ``order`` the codes of the
    groups that occur, in order of first appearance, and ``keys`` the key columns, one row per code
    in ``order``."""

    def __init__(self, codes: np.ndarray, size: int, order: np.ndarray, keys: list[pa.Array]):
        self.codes, self.size, self.order, self.keys = codes, size, order, keys
        self.rows: np.ndarray | None = None  # rows per code, when the grouping pass counted them
        self.sums: dict[int, np.ndarray] = {}  # id(argument) -> its row-order float sums, likewise


def no_keys(rows: int) -> Groups:
    """One group holding every row (none when there are no rows)."""
    return Groups(np.zeros(rows, np.int64), 1, np.zeros(1 if rows else 0, np.int64), [])


def _as_int64(col: pa.Array) -> pa.Array:
    """A time-like (or integer) column's values as int64 ticks."""
    t = col.type
    if pa.types.is_int64(t):
        return col
    if _time_like(t):
        return col.view(pa.int64()) if t.bit_width == 64 else col.view(pa.int32()).cast(pa.int64())
    return col.cast(pa.int64())


def _column_codes(col: pa.Array) -> tuple[np.ndarray, int, pa.Array, np.ndarray]:
    """``(codes, size, key per code, order)`` of one key column (``order``: the codes that occur,
    by first appearance). One hash pass in Arrow: its dictionary lists values by first appearance."""
    enc = pc.dictionary_encode(col, null_encoding="encode")
    dictionary = enc.dictionary
    codes = np.asarray(enc.indices.to_numpy(zero_copy_only=False)).astype(np.intp)  # numpy's index type, once
    size = len(dictionary)
    order = np.arange(size, dtype=np.int64)
    if pa.types.is_floating(col.type) and size:
        # one group per value: -0.0 joins 0.0 and every NaN one NaN (Arrow hashes their bits apart);
        # the group's key is its earliest entry's (the first row's value)
        valid = np.flatnonzero(np.asarray(dictionary.is_valid().to_numpy(zero_copy_only=False)))
        f = np.asarray(dictionary.cast(pa.float64()).take(from_numpy(valid)).to_numpy(zero_copy_only=False))
        with np.errstate(invalid="ignore"):  # a signalling NaN's add raises the invalid flag: no warning
            f = f + 0.0
        bits = np.where(np.isnan(f), np.float64("nan"), f).view(np.int64)
        _, first, inverse = np.unique(bits, return_index=True, return_inverse=True)
        if len(first) < len(valid):
            canon = np.arange(size, dtype=np.int64)
            canon[valid] = valid[first[inverse.reshape(-1)]]
            codes = canon[codes]
            order = np.unique(canon)  # earliest entries, in dictionary (first appearance) order
    return codes, size, dictionary, order


def _dense(combined: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Dense codes of int64 values by first appearance, and the value of each code."""
    enc = pc.dictionary_encode(from_numpy(combined, pa.int64()))
    return np.asarray(enc.indices.to_numpy()).astype(np.intp), np.asarray(enc.dictionary.to_numpy())


def group_ids(columns: list[pa.Array]) -> Groups:
    """The groups of rows with equal values in every column of ``columns`` (each one Arrow array).

    Each column's key is its first row's value (the engine's key index keeps one value per column)."""
    parts = [_column_codes(c) for c in columns]
    if len(parts) == 1:
        codes, size, keys, order = parts[0]
        return Groups(codes, size, order, [keys.take(from_numpy(order))])
    combined, size = parts[0][0].astype(np.int64), parts[0][1]
    for codes, k, _, _ in parts[1:]:
        if size * k >= 1 << 62:  # compact the codes so far before they outgrow int64 (order is kept)
            combined, _ = _dense(combined)
            combined, size = combined.astype(np.int64), int(combined.max()) + 1 if len(combined) else 1
        combined = combined * k + codes
        size *= k
    final, group_codes = _dense(combined)
    # each group's key from its first row: the combined code cannot be peeled apart once compacted above
    first = np.empty(len(final), bool)
    if len(final):  # dense codes by first appearance: a row opens a group where the running maximum grows
        first[0] = True
        first[1:] = final[1:] > np.maximum.accumulate(final)[:-1]
    rows = np.flatnonzero(first)
    keys = [values.take(from_numpy(codes[rows].astype(np.int64))) for codes, _, values, _ in parts]
    return Groups(final, len(group_codes), np.arange(len(group_codes), dtype=np.int64), keys)


def _fused_key(col: pa.Array) -> tuple[np.ndarray, bool] | None:
    """``(int64 bits, is_float)`` of a key column the compiled grouping pass takes (floats as their
    float64 bits, integers, times), or None."""
    t = col.type
    if pa.types.is_floating(t):
        if not pa.types.is_float64(t):
            col = col.cast(pa.float64())
        is_float = True
    elif _int_like(t):
        col = _as_int64(col)
        is_float = False
    else:
        return None
    data = col.buffers()[1]
    bits = np.frombuffer(data, np.int64, count=len(col) + col.offset)[col.offset :] if data else np.zeros(0, np.int64)
    return bits, is_float


def grouped(
    columns: list[pa.Array], calls: list[tuple[str, str, pa.Array | None]], params: dict | None = None
) -> tuple[Groups, dict]:
    """``(groups, {output: column})``: :func:`group_ids` then :func:`aggregate`, or, where numba is
    loaded and there is one numeric key, the group ids, row counts and the first float SUM/AVG in
    one compiled pass (:func:`.hashagg_jit.key_groups`): the same groups, order, keys and bits."""
    jit = _jit()
    fused = _fused_key(columns[0]) if jit is not None and len(columns) == 1 and len(columns[0]) else None
    if fused is None:
        groups = group_ids(columns)
        return groups, aggregate(groups, calls, params=params)
    key = columns[0]
    first_sum = _first_float_sum(calls)
    args: dict[int, _Argument] = {}
    weights = arg = None
    if first_sum is not None:
        arg = args.setdefault(id(first_sum), _Argument(first_sum))
        weights = arg.floats() if arg.valid() is None else None
    validity = key.buffers()[0] if key.null_count else None
    bitmap = np.frombuffer(validity, np.uint8) if validity is not None else np.zeros(1, np.uint8)
    bits, is_float = fused
    # the row codes are written only for the aggregates that read them (not COUNT(*) nor this sum's)
    done = ("count",) if weights is None else ("count", "sum", "average")
    want_codes = any(f not in done or (f != "count" and c is not first_sum) for _, f, c in calls)
    codes, size, first, rows, sums = jit.key_groups(
        bits, is_float, bitmap, key.offset, validity is not None,
        weights if weights is not None else np.zeros(1), weights is not None, want_codes,
    )  # fmt: skip
    order = np.arange(size, dtype=np.int64)
    groups = Groups(codes if want_codes else None, int(size), order, [key.take(from_numpy(first))])
    groups.rows = rows
    if weights is not None:
        groups.sums[id(arg)] = sums  # as aggregate() keys its sums: by the argument's _Argument
    return groups, aggregate(groups, calls, args, params)


class PieceGroups:
    """:func:`grouped` of one numeric key over a column read in pieces (the compiled pass, numba loaded),
    for calls that pass needs no row codes for: ``COUNT(*)`` and the SUM/AVG of one float64 column.
    :meth:`add` takes the next piece's key and argument arrays; :meth:`result` the calls' answer, the
    groups, order, keys and bits of :func:`grouped` over the whole columns. Where that pass does not
    apply (an argument with nulls or NaN) :meth:`add` returns False and the caller groups the whole
    columns with :func:`grouped` instead."""

    def __init__(self):
        self.jit = _jit()
        self.keys: list[pa.Array] = []
        self.rows = 0
        self.ok = True
        self.tables = self.jit.new_tables() if self.jit is not None else None

    @staticmethod
    def applies(key_type: pa.DataType, calls: list[tuple[str, str | None, pa.DataType | None]]) -> bool:
        """Whether the pieces' pass computes ``calls`` (``(function, argument name, argument type)``): a
        float or integer key (numba loaded), COUNT(*), and SUM/AVG of one float64 column."""
        if _jit() is None or not (pa.types.is_floating(key_type) or _int_like(key_type)) or _time_like(key_type):
            return False
        summed = {a for f, a, _ in calls if f != "count"}
        return len(summed) <= 1 and all(
            f == "count" or (f in ("sum", "average") and t is not None and pa.types.is_float64(t)) for f, _, t in calls
        )

    def add(self, key: pa.Array, argument: pa.Array | None) -> bool:
        """Group the next piece (False, and nothing more is grouped, once the argument has a null)."""
        self.keys.append(key)
        n = len(key)
        if not self.ok or not n:
            self.rows += n
            return self.ok
        if argument is not None and argument.null_count:
            self.ok = False
            return False
        bits, is_float = _fused_key(key)
        validity = key.buffers()[0] if key.null_count else None
        bitmap = np.frombuffer(validity, np.uint8) if validity is not None else np.zeros(1, np.uint8)
        weights = np.zeros(1) if argument is None else _Argument(argument).floats()
        state = self.tables[-1]
        got = self.jit.key_groups_more(
            bits, is_float, bitmap, key.offset, validity is not None, weights, argument is not None, self.rows,
            *self.tables,
        )  # fmt: skip
        self.tables = (*got, state)
        self.rows += n
        return True

    def _first_keys(self, first: np.ndarray) -> pa.Array:
        """The key of each group: its first row's (``first`` rises: groups are numbered by first
        appearance), taken from the pieces that hold them (a take from the chunked column would
        concatenate every piece first)."""
        starts = np.cumsum([0] + [len(k) for k in self.keys])
        parts = []
        at = np.searchsorted(starts, first, side="right") - 1  # the piece of each first row
        for piece in np.unique(at):
            rows = first[at == piece] - starts[piece]
            parts.append(self.keys[piece].take(from_numpy(rows)))
        return pa.concat_arrays(parts) if parts else pa.array([], self.keys[0].type)

    def result(self, calls: list[tuple[str, str, pa.Array | None]]) -> tuple[Groups, dict] | None:
        """``(groups, {output: column})`` as :func:`grouped` makes them (the calls' argument columns may
        be any arrays of the argument's type: only their identity is read), or None when a NaN reached
        the sums (SQL does not count it: the caller groups the whole columns instead)."""
        first, counts, sums, _, state = self.tables
        size = int(state[0])
        sums = sums[:size]
        if not self.ok or np.isnan(sums).any():  # a NaN anywhere makes its group's sum NaN
            return None
        key = self._first_keys(first[:size])
        groups = Groups(None, size, np.arange(size, dtype=np.int64), [key])
        groups.rows = counts[:size].copy()
        args: dict[int, _Argument] = {}
        first_sum = _first_float_sum(calls)
        if first_sum is not None:
            arg = args.setdefault(id(first_sum), _Argument(first_sum))
            arg._valid = None  # no null (add() saw every piece) and no NaN (the sums)
            groups.sums[id(arg)] = sums.copy()
        return groups, aggregate(groups, calls, args)


def _first_float_sum(calls) -> pa.Array | None:
    """The argument of the first SUM/AVG of a floating-point column, if any."""
    for _, function, col in calls:
        if function in ("sum", "average") and col is not None and pa.types.is_float64(col.type):
            return col
    return None


# -- aggregates --------------------------------------------------------------------------------
class _Argument:
    """One argument column as the aggregates read it, each conversion made once."""

    def __init__(self, col: pa.Array):
        self.col = col
        self._floats = None
        self._valid = "?"

    def floats(self) -> np.ndarray:
        """float64 values, nulls as NaN (times as their ticks)."""
        if self._floats is None:
            col = self.col
            if _time_like(col.type):
                col = _as_int64(col)
            if not pa.types.is_float64(col.type):
                col = col.cast(pa.float64(), safe=False)
            if col.null_count:
                col = col.fill_null(np.nan)
            self._floats = np.asarray(col.to_numpy(zero_copy_only=False))
        return self._floats

    def valid(self) -> np.ndarray | None:
        """Which values count (not null, not NaN); None when all do."""
        if isinstance(self._valid, str):
            col = self.col
            ok = None if col.null_count == 0 else np.asarray(col.is_valid().to_numpy(zero_copy_only=False))
            if pa.types.is_floating(col.type):
                nan = np.isnan(self.floats()) if col.null_count else None
                if nan is None:  # no nulls: NaN shows in the sum; look only when there is one
                    with np.errstate(invalid="ignore", over="ignore"):
                        total = np.sum(self.floats())
                    nan = np.isnan(self.floats()) if np.isnan(total) else None
                if nan is not None and nan.any():
                    ok = ~nan if ok is None else ok & ~nan
            self._valid = ok
        return self._valid

    def ints(self) -> np.ndarray:
        col = self.col
        vals = col.cast(pa.int64()) if not pa.types.is_int64(col.type) else col
        return np.asarray(vals.fill_null(0).to_numpy() if vals.null_count else vals.to_numpy())


def _int_sums(codes: np.ndarray, size: int, values: np.ndarray, rows: np.ndarray | None = None) -> list[int]:
    """Exact per-group sums of int64 values (as Python ints): float sums are exact below 2**53, so
    values are summed whole when that bound holds, else in three 22-bit limbs."""
    if len(values) == 0:
        return [0] * size
    lo, hi = int(values.min()), int(values.max())
    if lo == hi:  # one value (SQL's count of NaNs is nearly always 0): the count times it
        return [int(c) * lo for c in (rows if rows is not None else np.bincount(codes, minlength=size))]
    if max(abs(lo), abs(hi)) * len(values) < 2**53:
        return [int(x) for x in np.bincount(codes, weights=values, minlength=size)]
    u = values.view(np.uint64)
    total = [0] * size
    for shift in (0, 22, 44):
        limb = ((u >> np.uint64(shift)) & np.uint64((1 << 22) - 1)).astype(np.float64)
        part = np.bincount(codes, weights=limb, minlength=size)
        total = [t + (int(p) << shift) for t, p in zip(total, part, strict=True)]
    negative = np.bincount(codes, weights=(values < 0), minlength=size)  # two's complement: -2**64 each
    return [t - (int(c) << 64) for t, c in zip(total, negative, strict=True)]


def _float_exact(arg: _Argument) -> bool:
    """Whether float sums of the integer argument are exact (every partial sum below 2**53)."""
    col = arg.col
    if pa.types.is_boolean(col.type) or len(col) == col.null_count:
        return True
    low, high = pc.min_max(col).values()
    return max(abs(low.as_py()), abs(high.as_py())) * len(col) < 2**53


def _ordered_int_sums(arg: _Argument, codes: np.ndarray, size: int, rows: np.ndarray, order) -> list[int]:
    """Exact sums of an integer argument's valid values, one per group in ``order``."""
    ok, vals = arg.valid(), arg.ints()
    totals = _int_sums(codes, size, vals, rows) if ok is None else _int_sums(codes[ok], size, vals[ok])
    return [totals[g] for g in order]


_FLIP = np.int64(0x7FFFFFFFFFFFFFFF)


def _extreme(kind: str, codes: np.ndarray, size: int, arg: _Argument, ok: np.ndarray | None, t: pa.DataType):
    """Per-group min or max (None where no value counts) in ``t``."""
    if pa.types.is_floating(t):
        f = arg.floats() + 0.0  # -0.0 is 0.0, as the engine's order keys have it
        bits = f.view(np.int64)
        keys = np.where(bits < 0, bits ^ _FLIP, bits)
    elif _time_like(t):
        keys = np.asarray(_as_int64(arg.col).fill_null(0).to_numpy())
    else:
        keys = arg.ints()
    if ok is not None:
        codes, keys = codes[ok], keys[ok]
    fill = np.iinfo(np.int64).max if kind == "min" else np.iinfo(np.int64).min
    out = np.full(size, fill, np.int64)
    (np.minimum if kind == "min" else np.maximum).at(out, codes, keys)
    return out


def _jit():
    """The compiled passes (:mod:`.hashagg_jit`) when numba is already loaded, else None (numpy's bincount)."""
    if "numba" not in sys.modules:
        return None
    from . import hashagg_jit

    return hashagg_jit


def _bincount(codes: np.ndarray, size: int, weights: np.ndarray | None = None) -> np.ndarray:
    """Per-code row counts (``weights`` None) or row-order float sums, ``size`` of them."""
    jit = _jit()
    if jit is not None and len(codes):
        if weights is None:
            return jit.counts(codes, size)
        return jit.sums(codes, size, np.ascontiguousarray(weights, np.float64))
    if weights is None or not len(codes):
        return np.bincount(codes, weights=weights, minlength=size)
    # np.add.at adds in row order from 0.0, as bincount does (the same bits), in fewer passes
    out = np.zeros(size, np.float64)
    with np.errstate(invalid="ignore", over="ignore"):  # inf + -inf is NaN, a sum past float64 inf: no warning
        np.add.at(out, codes, np.asarray(weights, np.float64))
    return out


def aggregate(
    groups: Groups, calls: list[tuple[str, str, pa.Array | None]], args: dict | None = None, params: dict | None = None
) -> dict[str, pa.Array]:
    """``{output: column}`` for ``(output, function, argument column)`` calls, one row per group in
    ``groups.order`` (``args``: the :class:`_Argument` of a column by its id, where made already;
    ``params``: the planner's parameter of an output, where it has one)."""
    codes, size, order = groups.codes, groups.size, groups.order  # codes None: the grouping pass did all
    jit = _jit()
    done = groups.rows is not None
    first_sum = _first_float_sum(calls) if not done and jit is not None and groups.keys and len(codes) else None
    args = {} if args is None else args
    sums: dict[tuple, np.ndarray] = {("sum", k): v for k, v in groups.sums.items()}
    out = {}
    if done:
        rows = groups.rows
    elif first_sum is not None and (arg := args.setdefault(id(first_sum), _Argument(first_sum))).valid() is None:
        # the rows and the first float sum (AVG's) in one compiled pass
        rows, sums[("sum", id(arg))] = jit.counts_and_sums(codes, size, arg.floats())
    elif groups.keys or not len(codes):
        rows = _bincount(codes, size) if len(codes) else np.zeros(size, np.int64)
    else:  # one group: every row
        rows = np.array([len(codes)], np.int64)

    def counted(arg: _Argument) -> np.ndarray:
        ok = arg.valid()
        if ok is None:
            return rows
        key = ("valid", id(arg))
        if key not in sums:
            sums[key] = _bincount(codes, size, ok).astype(np.int64)
        return sums[key]

    def float_sum(arg: _Argument) -> np.ndarray:
        key = ("sum", id(arg))
        if key not in sums:
            ok, f = arg.valid(), arg.floats()
            sums[key] = _bincount(codes, size, f if ok is None else np.where(ok, f, 0.0))
        return sums[key]

    def shifted_sums(arg: _Argument) -> tuple[np.ndarray, np.ndarray]:
        """Per group, the sums of ``d = x - K`` and ``d * d`` over its valid values, ``K`` its first
        finite value (none: 0, only infinities, whose shift is themselves), as the engine's sweep."""
        key = ("shifted", id(arg))
        if key not in sums:
            ok, f = arg.valid(), arg.floats()
            counts = np.isfinite(f) if ok is None else ok & np.isfinite(f)
            at = np.flatnonzero(counts)
            first = np.full(size, len(f), np.int64)
            np.minimum.at(first, codes[at], at)
            pivot = np.where(first < len(f), f[np.minimum(first, len(f) - 1)] if len(f) else 0.0, 0.0)
            with np.errstate(over="ignore", invalid="ignore"):  # a square past float64 is inf, as the engine's
                d = f - pivot[codes]
                if ok is not None:
                    d = np.where(ok, d, 0.0)
                sums[key] = (_bincount(codes, size, d), _bincount(codes, size, d * d))
        return sums[key]

    for name, function, col in calls:
        if function == "count":
            out[name] = from_numpy(rows[order], pa.int64())
            continue
        if function in hashagg_picks.PICK_FUNCTIONS:
            out[name] = hashagg_picks.aggregate(function, codes, size, order, col, _column_codes)
            continue
        parameter = (params or {}).get(name)
        if hashagg_values.supported(function, col.type, parameter):
            out[name] = hashagg_values.aggregate(function, parameter, codes, size, order, col, _int_sums)
            continue
        arg = args.setdefault(id(col), _Argument(col))
        valid = counted(arg)[order]
        none = valid == 0
        mask = none if none.any() else None
        t = col.type
        if function == "count_not_null":
            out[name] = from_numpy(valid, pa.int64())
        elif function == "sum" and (pa.types.is_integer(t) or pa.types.is_boolean(t)):
            exact = _ordered_int_sums(arg, codes, size, rows, order)
            for s in exact:
                if not -(2**63) <= s < 2**63:
                    from ..ops.aggregate.functions import SumOverflowError  # the engine's error (loads numba)

                    raise SumOverflowError(
                        f"SUM of an integer column: the sum (about {float(s):.6g}) is out of BIGINT's range; "
                        "integer sums beyond 64 bits (DuckDB's HUGEINT) are not supported"
                    )
            out[name] = from_numpy(np.array(exact, np.int64), mask=mask)
        elif function == "sum":
            out[name] = from_numpy(float_sum(arg)[order], mask=mask)
        elif function == "average" and (pa.types.is_integer(t) or pa.types.is_boolean(t)) and not _float_exact(arg):
            # the exact sum over the count (DuckDB's HUGEINT sum): float sums lose digits past 2**53
            exact = _ordered_int_sums(arg, codes, size, rows, order)
            averages = [s / int(n) if n else math.nan for s, n in zip(exact, valid, strict=True)]
            out[name] = from_numpy(np.array(averages, np.float64), mask=mask)
        elif function == "average":
            with np.errstate(invalid="ignore", divide="ignore"):
                out[name] = from_numpy(float_sum(arg)[order] / valid, mask=mask)
        elif function in ("variance", "stddev"):
            s, sq = shifted_sums(arg)
            with np.errstate(invalid="ignore", divide="ignore", over="ignore"):  # the engine's shifted_variance
                var = np.maximum((sq[order] - s[order] * s[order] / valid) / (valid - 1), 0.0)
                var = np.where(np.isposinf(sq[order]) & np.isfinite(s[order]), np.inf, var)  # squares past float64
            few = valid < 2
            out[name] = from_numpy(var if function == "variance" else np.sqrt(var), mask=few if few.any() else None)
        else:  # min, max
            res = _extreme(function, codes, size, arg, arg.valid(), t)[order]
            res = np.where(none, 0, res)
            if pa.types.is_floating(t):
                arr = from_numpy(np.where(res < 0, res ^ _FLIP, res).view(np.float64), mask=mask).cast(t)
            elif _time_like(t):
                arr = from_numpy(res, mask=mask)
                arr = arr.view(t) if t.bit_width == 64 else arr.cast(pa.int32()).view(t)
            elif pa.types.is_boolean(t):
                arr = from_numpy(res, mask=mask).cast(pa.bool_())
            else:
                arr = from_numpy(res, mask=mask).cast(t)
            out[name] = arr
    return out
