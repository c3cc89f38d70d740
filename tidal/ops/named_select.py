"""Select by named parts: ``select(name=lambda e: ..., other="field")``.

Temporal semantics are those of ``select`` (:mod:`tidal.ops.selection`): each payload is
replaced by a new one with the same lifetime; a field given by name is passed through unchanged
(shared, not copied); each lambda computes one value per event.
"""

from __future__ import annotations

from ..expr.compile import CompiledLambda
from .base import Operator


class NamedSelectOp(Operator):
    """Several one-value lambdas and field names, each lambda compiled on its own."""

    name = "Select"

    def __init__(self, parts: dict, schema):
        super().__init__()
        self.parts = {
            k: v if isinstance(v, str) else CompiledLambda(v, schema, truth=False, allow_record=False)
            for k, v in parts.items()
        }

    @property
    def variant(self) -> str:
        return "; ".join(f"{k}: {v if isinstance(v, str) else v.describe()}" for k, v in self.parts.items())

    def on_batch(self, batch) -> None:
        cols = {}
        for k, fn in self.parts.items():
            if isinstance(fn, str):
                cols[k] = batch.columns[fn]
                continue
            got = fn.project(batch) if fn.mode == "columnar" else None
            if got is None:
                break
            cols[k] = got["value"]
        else:
            self.emit(batch.replace(columns=cols))
            return
        dense = batch.compact()
        cols = {}
        for k, fn in self.parts.items():
            if isinstance(fn, str):
                cols[k] = dense.columns[fn]
                continue
            got = fn.project(dense) if fn.mode == "columnar" else None
            cols[k] = (got or fn.project_rows(dense))["value"]
        self.emit(dense.replace(columns=cols))
