"""The lookup join: each event of a stream paired with the rows of a table looked up by its key.

Temporal semantics: the table is relational (every row alive from time 0 for ever), so at every
instant the alive pairs are exactly those of an inner temporal join with the table: each output
event is one probe event with one of the table rows whose key columns equal the probe's, with the
probe event's lifetime. A probe row whose key holds a null matches nothing (SQL's equality).
Output keeps the probe's order (for each probe event, its matches in the order fetched), so sync
times stay non-decreasing. Punctuations, flushes and completion pass through.

The rows come from ``match(keys)``, called once per batch with the batch's key columns (the
connector looks up the keys it has not seen in one query per chunk, caches the answers, and
pairs probe rows with cached rows in Arrow's hash join). A
key is looked up when its first event arrives; the plan uses this operator only for probes of
start edges or whole intervals, never end edges, which must meet the same rows as their starts.
It holds no state of its own: a restored query looks keys up again.
"""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa

from ..core.batch import EventBatch, gather
from .base import Operator


class LookupJoinOp(Operator):
    name = "LookupJoin"

    def __init__(
        self,
        match: Callable[[pa.Table], pa.Table],
        probe_keys: list[str],
        output: list[tuple[str, str, str]],
        close: Callable[[], None] | None = None,
    ):
        """``match(keys)``: for the key columns of a batch, a table of ``__probe`` (the row of the
        batch) and the matching table rows' columns, ordered by ``__probe``; ``output``: (output
        column, ``"probe"`` or ``"table"``, the column on that side) in order."""
        super().__init__()
        self.match, self.probe_keys, self.output, self.close = match, list(probe_keys), list(output), close
        self.variant = f"looked up by {', '.join(self.probe_keys)} per batch of keys, cached"

    def on_batch(self, batch: EventBatch) -> None:
        batch = batch.compact()
        if len(batch) == 0:
            return
        keys = pa.table({f"__k{i}": batch.columns[k] for i, k in enumerate(self.probe_keys)})
        found = self.match(keys)
        if found.num_rows == 0:
            return
        pi = found.column("__probe").to_numpy()
        columns = {}
        for name, side, column in self.output:
            if side == "probe":
                columns[name] = gather(batch.columns[column], pi)
            else:
                columns[name] = found.column(column).combine_chunks()
        other = None if batch.points else batch.other[pi]
        self.emit(EventBatch(batch.sync[pi], other, columns))

    def on_completed(self) -> None:
        if self.close is not None:
            self.close()
        self.emit_completed()
