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

    def _columns(self, batch, rows: bool) -> dict | None:
        """The output columns, or None when a lambda cannot run columnar (``rows``: evaluate it row by row)."""
        cols = {}
        for k, fn in self.parts.items():
            if isinstance(fn, str):
                cols[k] = batch.columns[fn]
                continue
            got = fn.project(batch) if fn.mode == "columnar" else None
            if got is None and not rows:
                return None
            cols[k] = (got or fn.project_rows(batch))["value"]
        return cols

    def on_batch(self, batch) -> None:
        cols = self._columns(batch, rows=False)
        if cols is not None:
            self.emit(batch.replace(columns=cols))
            return
        dense = batch.compact()  # row-at-a-time evaluation reads present rows only
        self.emit(dense.replace(columns=self._columns(dense, rows=True)))
