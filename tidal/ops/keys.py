"""Grouping keys: dense group ids for key values, and the stable hash every event carries.

A grouped stream materialises its key (an Arrow struct of the key fields) and the key's
hash once, when it is grouped (Trill's design: every later stateful operator and every
shuffle reuses them). Stateful operators index their per-group state by a *group id*: a
dense ``0..n-1`` number handed out in order of first appearance. :class:`KeyIndex` does
that mapping for whole batches at once:

* an integer-like key column whose values fall in a modest range uses a direct lookup
  table (one gather per event);
* other integer-like columns use a compiled hash map;
* a batch of short strings (at most 7 bytes, no null) is coded by one compiled pass
  (:mod:`.text_keys`); other strings and other types are dictionary-encoded per batch, so
  Python only sees each distinct value of a batch once;
* several key columns are combined pairwise into one id through the same compiled map.

Nulls are a key value of their own (as in SQL's GROUP BY). The hash is a deterministic
64-bit mix of the key values, identical in every process, so it can place groups on
partitions.
"""

from __future__ import annotations

import ast
import hashlib

import numba
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..core.batch import as_numpy
from ..core.errors import PlanError
from ..expr.lambdas import lambda_body, row_field
from .text_keys import ShortTexts, _slot_id

TUPLE_KEY_HINT = "give a list of field names (key=['a', 'b']), or select the key expressions as fields first"


def tuple_key_fields(key) -> tuple[str, ...] | None:
    """The fields of a key lambda that returns a tuple (or list) of fields, ``lambda e: (e.a, e.b)``:
    the composite key ``("a", "b")``; None for any other key (or a lambda whose source is not found,
    which then fails when it runs, see :func:`check_key_column`). A tuple of computed values is a
    PlanError."""
    parsed = lambda_body(key)
    if parsed is None or not isinstance(parsed[0], ast.Tuple | ast.List):
        return None
    body, param = parsed
    fields = []
    for elt in body.elts:
        field = row_field(elt, param)
        if field is None:
            raise PlanError(f"a key lambda returning a tuple of computed values is not supported: {TUPLE_KEY_HINT}")
        fields.append(field)
    if not fields:
        raise PlanError(f"a key lambda returned an empty tuple: {TUPLE_KEY_HINT}")
    return tuple(fields)


def check_key_column(col) -> None:
    """A key column of lists (a key lambda returned tuples) cannot be hashed: say what to do instead."""
    t = col.type
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        raise PlanError(f"a key lambda returned a tuple or list ({t}), which is not a key: {TUPLE_KEY_HINT}")


_DIRECT_SPAN = 1 << 20  # direct-table ids for integer keys spanning at most this many values
_NULL = object()


@numba.njit(cache=True)
def _direct_ids(ints, base, direct, next_id):
    """Ids through a direct table in one pass; stops at the first value outside the table.

    Returns (ids, next id, rows where new ids were handed out, row where it stopped or -1)."""
    n = len(ints)
    out = np.empty(n, np.int64)
    new_rows = np.empty(n, np.int64)
    k = 0
    size = len(direct)
    for i in range(n):
        p = ints[i] - base
        if p < 0 or p >= size:
            return out, next_id, new_rows[:k], i
        c = direct[p]
        if c < 0:
            c = next_id
            direct[p] = c
            next_id += 1
            new_rows[k] = i
            k += 1
        out[i] = c
    return out, next_id, new_rows[:k], -1


@numba.njit(cache=True)
def _probe_ids(values, keys, ids, next_id):
    """Ids for int64 values in an open-addressing table (``keys``/``ids``, power-of-two size, -1 = empty);
    unseen values get ``next_id``, ``next_id + 1``, ... The caller keeps the table at most half full."""
    mask = len(keys) - 1
    out = np.empty(len(values), np.int64)
    last_v = 0
    last_id = -1
    for i in range(len(values)):
        v = values[i]
        if last_id >= 0 and v == last_v:  # runs of one key (sorted or clustered input) skip the probe
            out[i] = last_id
            continue
        got = _slot_id(keys, ids, mask, v, next_id)
        if got == next_id:
            next_id += 1
        out[i] = got
        last_v = v
        last_id = got
    return out, next_id


_CANONICAL_NAN = np.float64(np.nan).view(np.int64)


@numba.njit(cache=True)
def _float_ids(values, valid, null_code, keys, ids, next_id):
    """Ids for float64 key values in one pass, into the same open-addressing table as :func:`_probe_ids`:
    -0.0 is 0.0 and every NaN one NaN (their bits are the key); rows not ``valid`` (when ``valid`` is
    not empty) get ``null_code`` (-1 while the column has none). Returns (ids, next id, rows where new
    ids were handed out, whether a null was seen). The table holds ``bits ^ (bits >> 32)``, a bijection
    of the bits: floats' low bits are mostly zero, which would put every key of a few values in one
    slot chain of the shared hash."""
    mask = len(keys) - 1
    n = len(values)
    out = np.empty(n, np.int64)
    new_rows = np.empty(n, np.int64)
    k = 0
    nulls = False
    check = len(valid) > 0
    last_v = 0
    last_id = -1
    for i in range(n):
        if check and not valid[i]:
            out[i] = null_code
            nulls = True
            continue
        f = values[i] + 0.0
        u = np.uint64(_CANONICAL_NAN if f != f else np.float64(f).view(np.int64))
        v = np.int64(u ^ (u >> np.uint64(32)))
        if last_id >= 0 and v == last_v:
            out[i] = last_id
            continue
        got = _slot_id(keys, ids, mask, v, next_id)
        if got == next_id:
            next_id += 1
            new_rows[k] = i
            k += 1
        out[i] = got
        last_v = v
        last_id = got
    return out, next_id, new_rows[:k], nulls


_ALL_VALID = np.empty(0, np.bool_)


@numba.njit(cache=True)
def _put_ids(values, given, keys, ids):
    mask = len(keys) - 1
    for i in range(len(values)):
        v = values[i]
        h = (np.uint64(v) * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(20)
        slot = np.int64(h) & mask
        while ids[slot] >= 0 and keys[slot] != v:
            slot = (slot + 1) & mask
        keys[slot] = v
        ids[slot] = given[i]


class IdTable:
    """Dense ids for int64 values: a compiled open-addressing hash table that grows as it fills.

    New values get ids from ``count`` upwards; ``count`` may be raised by the owner when it
    hands out ids of its own (a column's null code)."""

    def __init__(self, capacity: int = 1024):
        self.keys = np.zeros(capacity, np.int64)
        self.ids = np.full(capacity, -1, np.int64)
        self.count = 0
        self.size = 0  # values stored

    def __len__(self) -> int:
        return self.count

    def _room(self, extra: int) -> None:
        need = 2 * (self.size + extra)
        if need <= len(self.keys):
            return
        cap = len(self.keys)
        while cap < need:
            cap *= 2
        used = self.ids >= 0
        old_keys, old_ids = self.keys[used], self.ids[used]
        self.keys = np.zeros(cap, np.int64)
        self.ids = np.full(cap, -1, np.int64)
        _put_ids(old_keys, old_ids, self.keys, self.ids)

    def lookup(self, values: np.ndarray) -> np.ndarray:
        self._room(len(values))
        before = self.count
        out, self.count = _probe_ids(np.ascontiguousarray(values, np.int64), self.keys, self.ids, self.count)
        self.size += self.count - before
        return out

    def put(self, values: np.ndarray, given: np.ndarray) -> None:
        """Store known (value, id) pairs."""
        self._room(len(values))
        _put_ids(np.ascontiguousarray(values, np.int64), np.ascontiguousarray(given, np.int64), self.keys, self.ids)
        self.size += len(values)
        self.count = max(self.count, int(given.max()) + 1 if len(given) else 0)


@numba.njit(cache=True)
def _splitmix(x):
    x = (x + np.uint64(0x9E3779B97F4A7C15)) & np.uint64(0xFFFFFFFFFFFFFFFF)
    x = ((x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)) & np.uint64(0xFFFFFFFFFFFFFFFF)
    x = ((x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)) & np.uint64(0xFFFFFFFFFFFFFFFF)
    return x ^ (x >> np.uint64(31))


@numba.njit(cache=True)
def _mix_hashes(acc, col):
    out = np.empty(len(acc), np.uint64)
    for i in range(len(acc)):
        out[i] = _splitmix(acc[i] ^ (col[i] * np.uint64(0x100000001B3)))
    return out


def _integer_like(t: pa.DataType) -> bool:
    return (
        pa.types.is_integer(t)
        or pa.types.is_boolean(t)
        or pa.types.is_timestamp(t)
        or pa.types.is_date(t)
        or pa.types.is_time(t)
        or pa.types.is_duration(t)
    )


def _as_int64(col: pa.Array) -> np.ndarray:
    """Integer-like values as int64 (nulls filled with 0; the caller tracks validity)."""
    t = col.type
    if pa.types.is_boolean(t):
        return np.asarray(col.fill_null(False).to_numpy(zero_copy_only=False), dtype=np.int64)
    if not pa.types.is_integer(t):
        col = col.view(pa.int64()) if t.bit_width == 64 else col.cast(pa.int32()).cast(pa.int64())
    if col.null_count:
        col = col.fill_null(0)
    return as_numpy(col).astype(np.int64, copy=False)


class _ColumnCodes:
    """Dense codes for the values of one key column, and those values kept for output."""

    def __init__(self):
        self.kind: str | None = None  # "int", "float" or "other"
        self.type: pa.DataType | None = None
        self.count = 0
        self.null_code = -1
        self.base = 0
        self.direct: np.ndarray | None = None  # value - base -> code, -1 when unseen
        self.table: IdTable | None = None  # hash table for wide integer ranges
        self.lookup: dict = {}  # other types: python value -> code
        self.short = None  # text: the codes of short values by one compiled pass (tidal.ops.text_keys)
        self.chunks: list[pa.Array] = []  # values of new codes, in code order
        self.values: pa.Array | None = None
        self.np_values: np.ndarray | None = None  # ``values`` as numpy, when plain numbers without nulls

    def codes(self, col: pa.Array) -> np.ndarray:
        if self.type is None:
            self.type = col.type
            t = col.type
            self.kind = "int" if _integer_like(t) else ("float" if pa.types.is_floating(t) else "other")
            if t in (pa.string(), pa.large_string()):
                self.short = ShortTexts(IdTable())
        elif not col.type.equals(self.type):
            col = col.cast(self.type)
        if self.kind == "other":
            return self._codes_other(col)
        if self.kind == "float" and pa.types.is_float64(col.type):
            return self._codes_float(col)
        if self.kind == "float":
            # one code per value: -0.0 is 0.0 and every NaN is the same NaN
            f = np.asarray(col.fill_null(0).to_numpy(zero_copy_only=False), dtype=np.float64) + 0.0
            f = np.where(np.isnan(f), np.nan, f)
            ints = f.view(np.int64)
        else:
            ints = _as_int64(col)
        out = self._codes_int(ints, col)
        if col.null_count:
            valid = np.asarray(col.is_valid().to_numpy(zero_copy_only=False))
            if self.null_code < 0:
                self.null_code = self.count
                self.count += 1
                self.chunks.append(pa.nulls(1, self.type))
                self.values = None
            out = np.where(valid, out, self.null_code)
        return out

    def _codes_int(self, ints: np.ndarray, col: pa.Array) -> np.ndarray:
        if len(ints) == 0:
            return np.empty(0, np.int64)
        if col.null_count == 0 and self.direct is not None and self.table is None:
            out, count, new_rows, stopped = _direct_ids(ints, self.base, self.direct, self.count)
            if len(new_rows):
                self._remember(col.take(pa.array(new_rows)))
            if stopped < 0:
                return out
            # a value beyond the table: grow it (or switch to the hash table) on the general path below
        valid = None if col.null_count == 0 else np.asarray(col.is_valid().to_numpy(zero_copy_only=False))
        probe = ints if valid is None else ints[valid]
        if len(probe) == 0:
            return np.full(len(ints), -1, np.int64)
        if self.table is None:
            lo, hi = int(probe.min()), int(probe.max())
            if self.direct is None:
                if hi - lo < _DIRECT_SPAN:
                    self.base = lo
                    self.direct = np.full(hi - lo + 1, -1, np.int64)
                else:
                    self._to_table()
            else:
                new_lo, new_hi = min(lo, self.base), max(hi, self.base + len(self.direct) - 1)
                if new_hi - new_lo < _DIRECT_SPAN:
                    if new_lo < self.base or new_hi >= self.base + len(self.direct):
                        grown = np.full(new_hi - new_lo + 1, -1, np.int64)
                        grown[self.base - new_lo : self.base - new_lo + len(self.direct)] = self.direct
                        self.direct, self.base = grown, new_lo
                else:
                    self._to_table()
        if valid is None and self.direct is not None and self.table is None:  # the table now spans the batch
            out, _, new_rows, _ = _direct_ids(ints, self.base, self.direct, self.count)
            if len(new_rows):
                self._remember(col.take(pa.array(new_rows)))
            return out
        if self.direct is not None and self.table is None:
            pos = ints - self.base
            if valid is not None:
                pos = np.where(valid, pos, 0)
            out = self.direct[pos]
            fresh = out < 0
            if valid is not None:
                fresh &= valid
            if fresh.any():
                idx = np.flatnonzero(fresh)
                uniq, first = np.unique(pos[idx], return_index=True)
                order = np.argsort(first)  # codes in order of first appearance
                uniq = uniq[order]
                self.direct[uniq] = np.arange(self.count, self.count + len(uniq))
                self._remember(col.take(pa.array(idx[first[order]])))
                out = self.direct[pos]
            return out
        before = self.count
        rows = np.arange(len(ints)) if valid is None else np.flatnonzero(valid)
        self.table.count = self.count
        got = self.table.lookup(probe)
        self.count = len(self.table)
        if self.count > before:
            new = np.flatnonzero(got >= before)
            _, first = np.unique(got[new], return_index=True)
            self.chunks.append(col.take(pa.array(rows[new[first]])))
            self.values = None
        if valid is None:
            return got
        out = np.full(len(ints), -1, np.int64)
        out[rows] = got
        return out

    def _codes_float(self, col: pa.Array) -> np.ndarray:
        """A float64 column's codes in one compiled pass (nulls, -0.0 and NaN included): the same codes,
        in the same order, as the general path (a null's code comes after the batch's new values)."""
        if len(col) == 0:
            return np.empty(0, np.int64)
        if self.table is None:
            self._to_table()
        values = np.asarray(col.to_numpy(zero_copy_only=False), np.float64)
        valid = _ALL_VALID if col.null_count == 0 else np.asarray(col.is_valid().to_numpy(zero_copy_only=False))
        table = self.table
        table._room(len(values))
        before = table.count = self.count
        out, count, new_rows, nulls = _float_ids(values, valid, self.null_code, table.keys, table.ids, before)
        table.size += count - before
        table.count = self.count = count
        if len(new_rows):
            self.chunks.append(col.take(pa.array(new_rows)))
            self.values = None
        if nulls and self.null_code < 0:
            self.null_code = self.count
            self.count += 1
            table.count = self.count
            self.chunks.append(pa.nulls(1, self.type))
            self.values = None
            out[out < 0] = self.null_code
        return out

    def _to_table(self) -> None:
        self.table = IdTable()
        if self.direct is not None:
            pos = np.flatnonzero(self.direct >= 0)
            self.table.put(pos + self.base, self.direct[pos])
        self.table.count = self.count  # the null code, if any, is already taken
        self.direct = None

    def _remember(self, new_values: pa.Array) -> None:
        self.chunks.append(new_values)
        self.count += len(new_values)
        self.values = None

    def _codes_other(self, col: pa.Array) -> np.ndarray:
        check_key_column(col)
        if len(col) == 0:
            return np.empty(0, np.int64)
        if self.short is not None and (got := self.short.codes(col, self._assign)) is not None:
            return got  # short texts: one compiled pass (tidal.ops.text_keys)
        enc = pc.dictionary_encode(col, null_encoding="encode")
        dictionary = enc.dictionary
        local = np.empty(len(dictionary), np.int64)
        new = []
        for i, v in enumerate(dictionary.to_pylist()):
            k = _NULL if v is None else v
            code = self.lookup.get(k)
            if code is None:
                code = self.count + len(new)
                self.lookup[k] = code
                new.append(i)
                if v is None:
                    self.null_code = code
            local[i] = code
        if new:
            self._remember(dictionary.take(pa.array(new, pa.int64())))
        return local[as_numpy(enc.indices).astype(np.int64, copy=False)]

    def _assign(self, firsts: pa.Array) -> list[int]:
        """Codes of values the short-text path met for the first time (``firsts``, distinct, in order of
        first appearance): a value the general path met already keeps its code, the others get new ones."""
        codes, new = [], []
        for i, v in enumerate(firsts.to_pylist()):
            code = self.lookup.get(v)
            if code is None:
                code = self.lookup[v] = self.count + len(new)
                new.append(i)
            codes.append(code)
        if new:
            self._remember(firsts.take(pa.array(new, pa.int64())))
        return codes

    def take(self, codes: np.ndarray) -> pa.Array:
        if self.values is None:
            self.values = pa.concat_arrays(self.chunks) if self.chunks else pa.array([], self.type or pa.null())
            self.chunks = [self.values]
            t = self.values.type
            plain = self.values.null_count == 0 and (pa.types.is_integer(t) or pa.types.is_floating(t))
            self.np_values = as_numpy(self.values) if plain else None
        if self.np_values is not None:  # a numpy gather, wrapped without a copy
            return pa.array(self.np_values[codes], self.values.type)
        return self.values.take(pa.array(codes, pa.int64()))


class KeyIndex:
    """Dense group ids for the rows of one or more key columns."""

    def __init__(self, names: tuple[str, ...]):
        self.names = tuple(names)
        self.columns = [_ColumnCodes() for _ in self.names]
        self.pairs = [IdTable() for _ in self.names[1:]]
        self.pair_codes: list[np.ndarray] = []  # group id -> code per column (several columns)
        self.count = 0
        self._hash = np.empty(0, np.int64)

    def __len__(self) -> int:
        return self.count

    def ids(self, cols) -> np.ndarray:
        """Group ids for key columns (a list of Arrow arrays, or a struct array)."""
        if isinstance(cols, pa.StructArray):
            cols = cols.flatten()
        codes = [c.codes(col) for c, col in zip(self.columns, cols, strict=True)]
        if len(codes) == 1:
            self.count = self.columns[0].count
            return codes[0]
        acc = codes[0]
        n_before = self.count
        for level, nxt in enumerate(codes[1:]):
            combined = (acc << 32) | nxt
            acc = self.pairs[level].lookup(combined)
        self.count = len(self.pairs[-1])
        if self.count > n_before:
            new = np.flatnonzero(acc >= n_before)
            gids, first = np.unique(acc[new], return_index=True)
            rows = new[first]
            self.pair_codes.append(np.stack([c[rows] for c in codes], axis=1))
        return acc

    def _codes_of(self, gids: np.ndarray) -> list[np.ndarray]:
        if len(self.columns) == 1:
            return [gids]
        if len(self.pair_codes) > 1:
            self.pair_codes = [np.concatenate(self.pair_codes)]
        table = self.pair_codes[0] if self.pair_codes else np.empty((0, len(self.columns)), np.int64)
        return [table[gids, j] for j in range(len(self.columns))]

    def key_columns(self, gids: np.ndarray) -> list[pa.Array]:
        """The key values of the given groups, one Arrow array per key field."""
        return [c.take(codes) for c, codes in zip(self.columns, self._codes_of(gids), strict=True)]

    def key_struct(self, gids: np.ndarray) -> pa.StructArray:
        return pa.StructArray.from_arrays(self.key_columns(gids), names=list(self.names))

    def hashes(self, gids: np.ndarray) -> np.ndarray:
        """Stable 64-bit hashes of the groups' key values (same in every process)."""
        if len(self._hash) < self.count:
            new = np.arange(len(self._hash), self.count)
            self._hash = np.concatenate([self._hash, stable_hash(self.key_columns(new))])
        return self._hash[gids]

    def snapshot(self) -> dict:
        """The groups in id order as an Arrow table: restoring replays them in the same order."""
        gids = np.arange(self.count)
        return {"keys": pa.table(self.key_columns(gids), names=list(self.names)) if self.count else None}

    def restore(self, state: dict) -> None:
        self.__init__(self.names)
        table = state.get("keys")
        if table is None or not table.num_rows:
            return
        cols = [table.column(i).combine_chunks() for i in range(table.num_columns)]
        # Replaying the keys in id order gives each its old id, provided a column's null code is
        # handed out at its first null row (within one batch it would come after the new values).
        cuts = {0, len(table)}
        for col in cols:
            if col.null_count:
                first = int(np.argmax(~np.asarray(col.is_valid().to_numpy(zero_copy_only=False))))
                cuts |= {first, first + 1}
        bounds = sorted(cuts)
        for lo, hi in zip(bounds, bounds[1:], strict=False):
            self.ids([c.slice(lo, hi - lo) for c in cols])


def stable_hash(cols: list[pa.Array]) -> np.ndarray:
    """A deterministic 64-bit hash per row of the given key columns."""
    n = len(cols[0]) if cols else 0
    acc = np.zeros(n, np.uint64)
    for col in cols:
        if _integer_like(col.type) or pa.types.is_floating(col.type):
            if pa.types.is_floating(col.type):
                f = np.asarray(col.fill_null(0).to_numpy(zero_copy_only=False), dtype=np.float64) + 0.0
                raw = np.where(np.isnan(f), np.nan, f).view(np.uint64)
            else:
                raw = _as_int64(col).view(np.uint64)
        else:
            raw = np.fromiter(
                (
                    int.from_bytes(hashlib.blake2b(repr(v).encode(), digest_size=8).digest(), "little")
                    for v in col.to_pylist()
                ),
                dtype=np.uint64,
                count=n,
            )
        if col.null_count:
            valid = np.asarray(col.is_valid().to_numpy(zero_copy_only=False))
            raw = np.where(valid, raw, np.uint64(0x5BD1E995))
        acc = _mix_hashes(acc, raw)
    return acc.view(np.int64)
