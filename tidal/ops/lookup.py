"""The lookup join: each event of a stream paired with the rows of a table looked up by its key.

Temporal semantics: the table is relational (every row alive from time 0 for ever), so at every
instant the alive pairs are exactly those of an inner temporal join with the table: each output
event is one probe event with one of the table rows whose key columns equal the probe's, with the
probe event's lifetime. A probe row whose key holds a null matches nothing (SQL's equality).
Output keeps the probe's order (for each probe event, its matches in the order fetched), so sync
times stay non-decreasing. Punctuations, flushes and completion pass through.

The rows come from ``fetch(keys) -> {key: pa.Table}``, called once per batch with the batch's
distinct keys (the connector batches them into one query per chunk and caches the answers). A
key is looked up when its first event arrives; the plan uses this operator only for probes of
start edges or whole intervals, never end edges, which must meet the same rows as their starts.
It holds no state of its own: a restored query looks keys up again.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pyarrow as pa

from ..core.batch import EventBatch, gather
from .base import Operator


class LookupJoinOp(Operator):
    name = "LookupJoin"

    def __init__(
        self,
        fetch: Callable[[list[tuple]], dict[tuple, list[tuple]]],
        probe_keys: list[str],
        output: list[tuple[str, str, object]],
        types: Callable[[], list[pa.DataType]],
        close: Callable[[], None] | None = None,
    ):
        """``fetch(keys)``: each key's table rows as tuples, whose value types ``types()`` gives;
        ``output``: (output column, ``"probe"`` and a probe column or ``"table"`` and a tuple
        position) in order."""
        super().__init__()
        self.fetch, self.probe_keys, self.output, self.close = fetch, list(probe_keys), list(output), close
        self.types = types
        self.variant = f"looked up by {', '.join(self.probe_keys)} per batch of keys, cached"

    def on_batch(self, batch: EventBatch) -> None:
        batch = batch.compact()
        if len(batch) == 0:
            return
        cols = [batch.columns[k].to_pylist() for k in self.probe_keys]
        keys = list(zip(*cols, strict=True))
        found = self.fetch(list(dict.fromkeys(keys)))
        probe_idx: list[int] = []
        matched: list[tuple] = []
        for i, k in enumerate(keys):
            rows = found[k]
            if rows:
                probe_idx.extend([i] * len(rows))
                matched.extend(rows)
        if not probe_idx:
            return
        pi = np.asarray(probe_idx, np.int64)
        values = list(zip(*matched, strict=True))
        types = self.types()
        columns = {}
        for name, side, column in self.output:
            if side == "probe":
                columns[name] = gather(batch.columns[column], pi)
            else:
                columns[name] = pa.array(values[column], types[column])
        other = None if batch.points else batch.other[pi]
        self.emit(EventBatch(batch.sync[pi], other, columns))

    def on_completed(self) -> None:
        if self.close is not None:
            self.close()
        self.emit_completed()
