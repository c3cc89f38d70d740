"""Grouping: give every event a key (and its hash), and take it off again.

Semantics: ``group_apply(key, q)`` runs the subquery ``q`` independently on each key's
sub-stream and unions the results; in snapshot terms, at every instant the output is the
union over keys of ``q`` applied to that key's snapshot. Physically nothing is split: the
key and its hash are materialised on each event (:class:`GroupOp`), every stateful
operator keeps its state per key, and :class:`UngroupOp` puts the key back into the payload
(or calls the user's ``result(key, payload)``). Grouping nests: an inner group's key
extends the outer one, and ungrouping the inner level restores the outer key. Neither
operator changes lifetimes.
"""

from __future__ import annotations

import pyarrow as pa

from ..core.batch import EventBatch
from ..expr.compile import records_to_columns, row_class
from .base import Operator
from .keys import KeyIndex


class GroupOp(Operator):
    """Sets each event's key to the given payload fields (after any outer key) and its hash."""

    name = "Group"

    def __init__(self, fields: tuple[str, ...], drop: tuple[str, ...] = ()):
        super().__init__()
        self.fields = tuple(fields)
        self.drop = tuple(drop)
        self.keys: KeyIndex | None = None

    @property
    def variant(self) -> str:
        return f"key ({', '.join(self.fields)})"

    def on_batch(self, batch: EventBatch) -> None:
        cols = [batch.columns[f] for f in self.fields]
        names = list(self.fields)
        if batch.key is not None:  # nested: the outer key's fields come first
            outer = batch.key.flatten()
            cols = outer + cols
            names = [batch.key.type[i].name for i in range(batch.key.type.num_fields)] + names
        if self.keys is None:
            self.keys = KeyIndex(tuple(names))
        gids = self.keys.ids(cols)
        key = pa.StructArray.from_arrays(cols, names=names)
        payload = {k: v for k, v in batch.columns.items() if k not in self.drop}
        self.emit(batch.replace(key=key, hash=self.keys.hashes(gids), columns=payload))

    def snapshot(self) -> dict:
        return {} if self.keys is None else {"keys": self.keys.snapshot(), "names": list(self.keys.names)}

    def restore(self, state: dict) -> None:
        if state:
            self.keys = KeyIndex(tuple(state["names"]))
            self.keys.restore(state["keys"])


class UngroupOp(Operator):
    """Moves the innermost ``levels`` key fields back into the payload, keeping the outer key."""

    name = "Ungroup"

    def __init__(self, inner: int, result=None):
        super().__init__()
        self.inner = inner
        self.result = result
        self.outer_keys: KeyIndex | None = None

    @property
    def variant(self) -> str:
        return "key fields then payload" if self.result is None else "result(key, payload), row mode"

    def on_batch(self, batch: EventBatch) -> None:
        batch = batch.compact()
        if len(batch) == 0 or batch.key is None:
            self.emit(batch)
            return
        names = [batch.key.type[i].name for i in range(batch.key.type.num_fields)]
        fields = batch.key.flatten()
        cut = len(names) - self.inner
        inner = dict(zip(names[cut:], fields[cut:], strict=True))
        if self.result is None:
            payload = inner | {k: v for k, v in batch.columns.items() if k not in inner}
        else:
            payload = self._apply_result(batch, inner)
        if cut == 0:
            self.emit(batch.replace(columns=payload, key=None, hash=None))
            return
        if self.outer_keys is None:
            self.outer_keys = KeyIndex(tuple(names[:cut]))
        outer_cols = fields[:cut]
        gids = self.outer_keys.ids(outer_cols)
        key = pa.StructArray.from_arrays(outer_cols, names=names[:cut])
        self.emit(batch.replace(columns=payload, key=key, hash=self.outer_keys.hashes(gids)))

    def _apply_result(self, batch: EventBatch, inner: dict[str, pa.Array]) -> dict[str, pa.Array]:
        key_cls = row_class(tuple(inner))
        pay_cls = row_class(tuple(batch.columns))
        keys = list(zip(*[c.to_pylist() for c in inner.values()], strict=True))
        pays = list(zip(*[c.to_pylist() for c in batch.columns.values()], strict=True)) or [()] * len(batch)
        single = len(inner) == 1
        out = [
            self.result(k[0] if single else key_cls._make(k), pay_cls._make(p)) for k, p in zip(keys, pays, strict=True)
        ]
        return records_to_columns(out)

    def snapshot(self) -> dict:
        return {}
