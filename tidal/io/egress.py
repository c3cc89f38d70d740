"""Egress: sinks that receive a query's output and the views built from it.

* ``to_arrow()``: the physical events, ``sync_time, other_time`` then the payload fields.
  Batches become the table's chunks, so columns that were never copied still are not.
* ``to_events()``: the same as :class:`Event` tuples.
* ``to_intervals()``: the canonical coalesced lifetimes ``start, end`` then payload fields
  (see :mod:`tidal.core.canonical`): the stream's meaning, whatever the batching.
* ``to_changelog()``: ``time, undo`` then payload: an insert when a payload's lifetime
  starts and a retraction (``undo = True``) when it ends, ordered by time, retractions first.
* ``subscribe(callback)``: each output batch as a ``pyarrow.RecordBatch`` as it is produced.
"""

from __future__ import annotations

import gc
from itertools import repeat
from typing import NamedTuple

import numpy as np
import pyarrow as pa

from ..core.batch import OTHER_FIELD, SYNC_FIELD, EventBatch
from ..core.canonical_columnar import layers_table
from ..core.time import INFINITY
from ..ops.base import Consumer


class Event(NamedTuple):
    sync_time: int
    other_time: int
    payload: dict

    @property
    def kind(self) -> str:
        if self.other_time == INFINITY:
            return "start"
        return "end" if self.other_time < self.sync_time else "interval"


class CollectSink(Consumer):
    """Collects output batches (compacted) as Arrow record batches."""

    reads_other = True  # every batch becomes a record batch with its other times
    collects = True  # kept as it is, read later

    def __init__(self, schema: pa.Schema | None = None):
        self.batches: list[pa.RecordBatch] = []
        self.schema = schema
        self.punctuations: list[int] = []
        self.completed = False

    def on_batch(self, batch: EventBatch) -> None:
        rb = batch.to_record_batch()
        if rb.num_rows:
            self.batches.append(rb)

    def on_punctuation(self, time: int) -> None:
        self.punctuations.append(time)

    def on_completed(self) -> None:
        self.completed = True

    def table(self) -> pa.Table:
        if self.batches:
            schema = self.batches[0].schema
            if any(b.schema != schema for b in self.batches):
                # a lambda's type is read per batch: an all-None batch is null, a later one double
                schema = pa.unify_schemas([b.schema for b in self.batches], promote_options="permissive")
            batches = [b if b.schema == schema else b.cast(schema) for b in self.batches]
            return pa.Table.from_batches(batches)
        fields = [pa.field(SYNC_FIELD, pa.int64()), pa.field(OTHER_FIELD, pa.int64())]
        if self.schema is not None:
            fields += list(self.schema)
        return pa.schema(fields).empty_table()


class CallbackSink(Consumer):
    reads_other = True

    def __init__(self, on_batch, on_punctuation=None, on_completed=None):
        self._on_batch = on_batch
        self._on_punctuation = on_punctuation
        self._on_completed = on_completed

    def on_batch(self, batch: EventBatch) -> None:
        rb = batch.to_record_batch()
        if rb.num_rows:
            self._on_batch(rb)

    def on_punctuation(self, time: int) -> None:
        if self._on_punctuation:
            self._on_punctuation(time)

    def on_completed(self) -> None:
        if self._on_completed:
            self._on_completed()


def payload_names(table: pa.Table) -> list[str]:
    return [n for n in table.column_names if n not in (SYNC_FIELD, OTHER_FIELD)]


def events_from_table(table: pa.Table) -> list[Event]:
    """One :class:`Event` per physical row: Python objects by request, built by C-level maps."""
    names = payload_names(table)
    cols = [table.column(n).to_pylist() for n in names]
    sync = table.column(SYNC_FIELD).to_pylist()
    other = table.column(OTHER_FIELD).to_pylist()
    # the cyclic collector would rescan the growing list of new containers many times over; none can form a cycle
    paused = gc.isenabled()
    gc.disable()
    try:
        payloads = (
            map(dict, map(zip, repeat(names), zip(*cols, strict=True))) if cols else map(dict, repeat((), len(sync)))
        )
        return list(map(Event, sync, other, payloads))
    finally:
        if paused:
            gc.enable()


def intervals_from_table(table: pa.Table) -> pa.Table:
    """``start, end`` then payload fields: the sorted layers of each payload's multiplicity (see
    :mod:`tidal.core.canonical_columnar`, the columnar form of ``layers(deltas_from_physical(...))``)."""
    return layers_table(
        table.column(SYNC_FIELD).to_numpy(),
        table.column(OTHER_FIELD).to_numpy(),
        table.select(payload_names(table)),
    )


def changelog_from_table(table: pa.Table) -> pa.Table:
    """Inserts and retractions in time order (retractions first at equal times)."""
    names = payload_names(table)
    sync = table.column(SYNC_FIELD).to_numpy()
    other = table.column(OTHER_FIELD).to_numpy()
    is_start = other == INFINITY
    is_end = (other < sync) & ~is_start
    is_interval = ~(is_start | is_end)
    # inserts at sync for intervals and start edges; retractions at sync for end edges and at other for intervals
    ins_idx = np.flatnonzero(is_interval | is_start)
    ret_end_idx = np.flatnonzero(is_end)
    ret_int_idx = np.flatnonzero(is_interval)
    time = np.concatenate([sync[ins_idx], sync[ret_end_idx], other[ret_int_idx]])
    undo = np.concatenate([np.zeros(len(ins_idx), bool), np.ones(len(ret_end_idx) + len(ret_int_idx), bool)])
    src = np.concatenate([ins_idx, ret_end_idx, ret_int_idx])
    order = np.lexsort((~undo, time))
    payload = table.drop_columns([SYNC_FIELD, OTHER_FIELD]).take(pa.array(src[order]))
    out = pa.table({"time": time[order], "undo": undo[order]})
    for n in names:
        out = out.append_column(n, payload.column(n))
    return out
