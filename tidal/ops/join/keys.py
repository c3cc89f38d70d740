"""Join keys: normalising a key argument, computing an input's key columns, and the payload hash by which
an end edge finds its start edge."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...core.batch import EventBatch
from ...core.errors import PlanError
from ...expr.compile import CompiledLambda
from ..keys import check_key_column, stable_hash, tuple_key_fields


def key_spec(key) -> tuple[str, object]:
    """Normalise a key argument: ("fields", names), ("lambda", fn) or ("none", None)."""
    if key is None:
        return ("none", ())
    if isinstance(key, str):
        return ("fields", (key,))
    if isinstance(key, list | tuple) and all(isinstance(k, str) for k in key):
        if not key:
            raise PlanError("a join key needs at least one field")
        return ("fields", tuple(key))
    if callable(key):
        fields = tuple_key_fields(key)  # lambda e: (e.a, e.b): the fields a and b
        return ("fields", fields) if fields is not None else ("lambda", key)
    raise PlanError(f"a join key is a field name, a list of field names, or a lambda; got {key!r}")


def key_family(t: pa.DataType) -> str:
    """What values of type ``t`` can equal: numbers equal numbers, text equals text, and so on."""
    if pa.types.is_null(t):
        return "null"
    if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t):
        return "number"
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "text"
    if pa.types.is_dictionary(t):
        return key_family(t.value_type)
    for family, test in (("boolean", pa.types.is_boolean), ("date", pa.types.is_date),
                         ("timestamp", pa.types.is_timestamp), ("time", pa.types.is_time),
                         ("binary", pa.types.is_binary), ("duration", pa.types.is_duration)):  # fmt: skip
        if test(t):
            return family
    return str(t)


def check_key_types(left: list, right: list, left_names=None, right_names=None) -> None:
    """Join keys of types whose values can never be equal (an int 1 and a string '1') are an error, not an
    empty match: say which fields and what to do."""
    for i, (lt, rt) in enumerate(zip(left, right, strict=False)):
        a, b = key_family(lt), key_family(rt)
        if a != b and "null" not in (a, b):
            ln = f" {left_names[i]}" if left_names else ""
            rn = f" {right_names[i]}" if right_names else ""
            raise PlanError(
                f"join keys of different types: left{ln} is {lt}, right{rn} is {rt}; their values never compare "
                "equal (1 is not '1'): convert one side first (a select)"
            )


class _KeyColumns:
    """Computes one input's join-key columns for a batch."""

    def __init__(self, key, schema: pa.Schema | None, side: str):
        self.kind, self.spec = key_spec(key)
        self.fn = None
        if self.kind == "fields" and schema is not None:
            missing = [f for f in self.spec if f not in schema.names]
            if missing:
                raise PlanError(f"{side} join key field(s) {missing} not in the stream; fields are {schema.names}")
        if self.kind == "lambda":
            self.fn = CompiledLambda(self.spec, schema, truth=False)

    def describe(self) -> str:
        if self.kind == "fields":
            return ", ".join(self.spec)
        if self.kind == "lambda":
            return f"lambda ({self.fn.describe()})"
        return "none"

    def columns(self, batch: EventBatch) -> list[pa.Array]:
        if self.kind == "none":
            return []
        if self.kind == "fields":
            try:
                return [batch.columns[f] for f in self.spec]
            except KeyError as exc:
                raise PlanError(f"join key field {exc.args[0]!r} not in the stream; fields are {batch.names}") from None
        got = self.fn.project(batch) if self.fn.mode == "columnar" else None
        if got is None:
            got = self.fn.project_rows(batch)
        out = [pa.array(c) if not isinstance(c, pa.Array) else c for c in got.values()]
        for c in out:
            check_key_column(c)
        return out


def _flatten(struct: pa.Array) -> list[pa.Array]:
    if isinstance(struct, pa.ChunkedArray):
        struct = struct.combine_chunks()
    return list(struct.flatten()) if isinstance(struct, pa.StructArray) else [struct]


def payload_hash(columns: dict[str, pa.Array], n: int) -> np.ndarray:
    """A 64-bit hash per row of the payload (end edges find their start edge by it).

    Non-numeric columns are dictionary-encoded first, so each distinct value is hashed once.
    """
    if not columns:
        return np.zeros(n, np.int64)
    parts = []
    for col in columns.values():
        t = col.type
        if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t) or pa.types.is_temporal(t):
            parts.append(col)
            continue
        enc = pc.dictionary_encode(col, null_encoding="encode")
        dictionary_hash = stable_hash([enc.dictionary]) if len(enc.dictionary) else np.zeros(0, np.int64)
        idx = np.asarray(enc.indices.to_numpy(zero_copy_only=False), dtype=np.int64)
        parts.append(pa.array(dictionary_hash[idx], pa.int64()))
    return stable_hash(parts)
