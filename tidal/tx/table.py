"""Shared mutable state: :class:`Table`, columnar records addressed by key.

A table has a fixed set of records (``size`` records keyed ``0..size-1``, or an explicit list of
``keys``) and typed columns (``int64`` or ``float64``). Its arrays are the live state that
transactions read and update: a query that runs ``transact`` over it changes them in place, and a
query's checkpoint carries them (``snapshot``/``restore``).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from ..core.errors import PlanError

_KINDS = {"i": np.int64, "u": np.int64, "f": np.float64}


class Table:
    """``Table(name, size or keys, columns)``: ``columns`` maps a column name to a dtype
    (``"int64"``, ``"float64"``) or to an array of initial values (one per record)."""

    def __init__(self, name: str, size_or_keys, columns: dict):
        self.name = str(name)
        if isinstance(size_or_keys, int | np.integer):
            if size_or_keys < 1:
                raise PlanError(f"Table {name!r}: size must be at least 1, not {size_or_keys}")
            self.size = int(size_or_keys)
            self.keys = None
            self._index = None
        else:
            keys = list(size_or_keys)
            if len(set(keys)) != len(keys):
                raise PlanError(f"Table {name!r}: keys must be distinct")
            if not keys:
                raise PlanError(f"Table {name!r}: no keys")
            self.size = len(keys)
            self.keys = keys
            self._index = {k: i for i, k in enumerate(keys)}
        if not columns:
            raise PlanError(f"Table {name!r}: no columns")
        self.columns: dict[str, np.ndarray] = {}
        for col, spec in columns.items():
            if isinstance(spec, str | type | np.dtype):
                kind = np.dtype(spec).kind
                if kind not in _KINDS:
                    raise PlanError(f"Table {name!r} column {col!r}: type {spec} is not supported (int64, float64)")
                arr = np.zeros(self.size, dtype=_KINDS[kind])
            else:
                values = np.asarray(spec)
                if values.shape != (self.size,) or values.dtype.kind not in _KINDS:
                    raise PlanError(f"Table {name!r} column {col!r}: initial values must be {self.size} numbers")
                arr = values.astype(_KINDS[values.dtype.kind], copy=True)
            self.columns[str(col)] = arr

    # -- reading ------------------------------------------------------------------------------
    def __getitem__(self, column: str) -> np.ndarray:
        return self.columns[column]

    def column_index(self, column: str) -> int:
        try:
            return list(self.columns).index(column)
        except ValueError:
            raise PlanError(f"table {self.name!r} has no column {column!r}; columns are {list(self.columns)}") from None

    def to_arrow(self) -> pa.Table:
        keys = pa.array(self.keys) if self.keys is not None else pa.array(np.arange(self.size))
        return pa.table({"key": keys, **{c: pa.array(a) for c, a in self.columns.items()}})

    def to_dict(self) -> dict[str, list]:
        return {c: a.tolist() for c, a in self.columns.items()}

    def index_of(self, keys: np.ndarray) -> np.ndarray:
        """Record positions of ``keys`` (-1 where a key is not in the table)."""
        if self._index is None:
            keys = np.asarray(keys)
            out = keys.astype(np.int64, copy=True)
            out[(keys < 0) | (keys >= self.size)] = -1
            return out
        get = self._index.get
        return np.fromiter((get(k, -1) for k in keys), dtype=np.int64, count=len(keys))

    # -- state --------------------------------------------------------------------------------
    def snapshot(self) -> dict:
        return {c: a.copy() for c, a in self.columns.items()}

    def restore(self, state: dict) -> None:
        for c, a in state.items():
            self.columns[c][:] = a

    def __repr__(self) -> str:
        cols = ", ".join(f"{c}: {a.dtype}" for c, a in self.columns.items())
        return f"Table({self.name!r}, {self.size} records, {cols})"
