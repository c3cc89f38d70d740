"""Operators that reshape payloads without touching lifetimes (the SQL layer's plumbing).

Temporal semantics: every operator here maps each event's payload and keeps its lifetime, so a
snapshot at any time is the input's snapshot with each row reshaped; except
:class:`SessionColumnsOp`, which turns each interval ``[S, E)`` that the engine's session window
made into a start edge at ``S`` carrying ``window_start = S`` and ``window_end = E``.

* :class:`RowIdentityOp`: a null-safe identity of each row (null flags and null-filled copies of
  every column), so rows with nulls can be matched on equality (a residual join's semi-join).
* :class:`ShapeOp`: the columns of a schema, in its order; missing columns are null."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from ..core.batch import EventBatch
from ..core.errors import PlanError
from ..core.time import INFINITY
from .base import Operator

FLAG_BITS = 62  # null flags of this many columns share one int64


def identity_names(prefix: str, n: int, taken: set) -> tuple[list[str], list[str]]:
    """Names of a side's identity columns: null-flag words, then one filled value per column."""
    base = prefix
    while any(t.startswith(base) for t in taken):
        base += "_"
    flags = [f"{base}_nulls{i}" for i in range((n + FLAG_BITS - 1) // FLAG_BITS)]
    return flags, [f"{base}_{i}" for i in range(n)]


def _zero(t: pa.DataType) -> pa.Scalar:
    """A value of type ``t`` to stand for null in an identity column (the null flag tells them apart)."""
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return pa.scalar("", t)
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return pa.scalar(b"", t)
    if pa.types.is_boolean(t):
        return pa.scalar(False)
    try:
        return pa.array([0]).cast(t)[0]
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        raise PlanError(f"a join condition over a column of type {t} is not supported") from None


class RowIdentityOp(Operator):
    """Adds a null-safe identity of each row: null flags (bit ``i`` of word ``i // 62`` set when
    column ``i`` is null) and every column with its nulls filled; lifetimes unchanged."""

    name = "RowIdentity"
    variant = "columnar: null flags and null-filled copies of every column"

    def __init__(self, names: list, flags: list, values: list):
        super().__init__()
        self.names, self.flags, self.values = names, flags, values

    def on_batch(self, batch: EventBatch) -> None:
        dense = batch.compact()
        cols = dict(dense.columns)
        words = [np.zeros(len(dense), np.int64) for _ in self.flags]
        for i, (name, value) in enumerate(zip(self.names, self.values, strict=True)):
            col = cols[name]
            if col.null_count:
                nulls = np.asarray(col.is_null().to_numpy(zero_copy_only=False), dtype=bool)
                words[i // FLAG_BITS] |= nulls.astype(np.int64) << (i % FLAG_BITS)
                col = col.fill_null(_zero(col.type))
            cols[value] = col
        for flag, word in zip(self.flags, words, strict=True):
            cols[flag] = pa.array(word)
        self.emit(dense.replace(columns=cols))


class ShapeOp(Operator):
    """Selects the columns of ``schema`` in its order; a column the input lacks is all null."""

    name = "Shape"

    def __init__(self, schema: pa.Schema):
        super().__init__()
        self.schema = schema
        self.variant = "columns " + ", ".join(schema.names)

    def on_batch(self, batch: EventBatch) -> None:
        dense = batch.compact()
        n = len(dense)
        cols = {f.name: dense.columns[f.name] if f.name in dense.columns else pa.nulls(n, f.type) for f in self.schema}
        self.emit(dense.replace(columns=cols))


class SessionColumnsOp(Operator):
    """After the engine's ``session_window``: each row becomes a start edge again, at its session's
    start ``S``, with ``window_start = S`` and ``window_end = E`` (the session's exclusive end),
    columns back in the SQL order (a keyed session puts its key first)."""

    name = "SessionColumns"
    variant = "interval [S, E) -> start edge at S with window_start S, window_end E"

    def __init__(self, names: tuple):
        super().__init__()
        self.names = names

    def on_batch(self, batch: EventBatch) -> None:
        dense = batch.compact()
        cols = {n: dense.columns[n] for n in self.names}
        cols["window_start"] = pa.array(dense.sync, pa.int64()).cast(pa.timestamp("us"))
        cols["window_end"] = pa.array(dense.other, pa.int64()).cast(pa.timestamp("us"))
        self.emit(dense.replace(other=np.full(len(dense), INFINITY, np.int64), columns=cols, key=None, hash=None))
