"""SQL over growing input: standard input and ``tail(path => ...)`` as sources that never end.

A live scan becomes a plan :class:`~tidal.plan.nodes.Source` over a :class:`~tidal.io.live.TextFeed`:
lines are parsed as they arrive, cut into batches by wall clock (``--batch-latency``, or
``tail(..., latency => INTERVAL ...)``) and by size, and turned into events exactly as a file's rows
are (:mod:`.planner`): at their event time in arrival order, sorted by the watermark's Impatience
sort, or as start edges at time 0 (at their row ordinal under a ``TRIGGER``). Results therefore
come out while input is still arriving: a window's row as soon as the watermark passes its end.
The feed's position (the byte offset after the last line consumed) is what ``--state`` stores.

Not supported on live input (refused with an error naming it): ``--progressive`` (it needs the
input's size) and ``percentile_watermark`` (it reads the whole input before it releases a row).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from ..core.batch import EventBatch
from ..core.errors import PlanError
from ..core.messages import Punctuation
from ..core.time import INFINITY
from ..io.disorder import arrival_batch
from ..io.live import DEFAULT_LATENCY, MAX_ROWS, LineParser, TextFeed, input_schema, live_bytes
from ..plan.nodes import Source
from ..plan.properties import Properties


def live_source(translator, scan, time, predicate, time_as_timestamp) -> Source:
    """The Source node of a live scan (``time``: the planner's TimeSpec for it)."""
    live = dict(scan.live)
    where = "standard input" if live.get("kind") == "stdin" else f"tail({scan.path!r})"
    if translator.progressive:
        raise PlanError(f"--progressive needs input of known size: not supported on {where}")
    if time.generator == "percentile":
        raise PlanError(f"percentile_watermark reads its whole input first: not supported on {where}")
    latency = live.get("latency_us")
    seconds = latency / 1e6 if latency is not None else translator.batch_latency
    options = dict(scan.options)
    full = input_schema(scan.path, scan.format, options, live)  # the header's names (the types: scan.types)
    schema = pa.schema(
        [
            pa.field(n, dict(zip(scan.file_columns, scan.types, strict=True)).get(n, full.field(n).type))
            for n in full.names
        ]
    )
    parser = LineParser(scan.path, scan.format, schema, list(scan.file_columns), options, translator.on_error)
    stats = translator.stats
    names = list(scan.names)

    def to_messages(table: pa.Table, first_row: int) -> list:
        stats.skipped = parser.skipped
        table = table.rename_columns(names)
        if predicate is not None:
            table = table.filter(predicate)
        n = table.num_rows
        stats.rows_read += n
        stats.progress()
        if n == 0:
            return []
        rb = table.combine_chunks().to_batches()[0]
        if time.column is not None:
            rb = time_as_timestamp(pa.Table.from_batches([rb]), time.column, scan.path).to_batches()[0]
            return [arrival_batch(rb, time.column, kind="start", offset=first_row)]
        cols = {name: rb.column(i) for i, name in enumerate(rb.schema.names)}
        if time.ordinal:
            sync = np.arange(first_row, first_row + n, dtype=np.int64)
            return [EventBatch(sync, np.full(n, INFINITY, np.int64), cols), Punctuation(int(sync[-1]) + 1)]
        return [EventBatch(np.zeros(n, np.int64), np.full(n, INFINITY, np.int64), cols)]

    feed = TextFeed(
        live_bytes(scan.path, live.get("kind", "tail")),
        parser,
        to_messages,
        stop="eof" if live.get("kind") == "stdin" else live.get("stop", "never"),
        latency=DEFAULT_LATENCY if seconds is None else seconds,
        max_rows=translator.batch_rows or MAX_ROWS,
    )
    if time.column is None:
        kind = "row ordinal" if time.ordinal else "time 0"
        detail = f"{scan.describe()}; rows as start edges at {kind}, as they arrive"
    else:
        detail = f"{scan.describe()}; rows as start edges at event time {time.column}, in arrival order"
    return Source(None, scan.schema(), Properties(start_edge_only=True), detail, feed=feed)
