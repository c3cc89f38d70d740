"""A piece of a tidal plan rebuilt and run inside one Spark task.

A :class:`Fragment` is a chain of plan nodes (each feeding the next) detached from the rest
of the plan so that it pickles: every node is copied without its inputs, and the copy's
factory (closures over user lambdas, shipped by cloudpickle) builds the physical operator
inside the task. The task sees one partition as Arrow record batches of physical events
(``sync_time, other_time``, payload) sorted by sync time; after each batch it punctuates at
that batch's last sync time (no later event of a sorted partition can be earlier), and at the
end of the partition it punctuates at infinity and completes, as a finished embedded source
does. Output batches are Arrow record batches in the fragment's declared schema.

A two-input head (a join, co-partitioned by Spark) receives both sides in one sorted
partition tagged with a side column; the task splits each record batch by side.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..core.batch import OTHER_FIELD, SYNC_FIELD, EventBatch
from ..core.time import INFINITY
from ..ops.base import Consumer
from ..plan.node import PlanNode

SIDE_FIELD = "__tidal_side"


def side_field(side: int, name: str) -> str:
    """The column of a two-input partition that carries payload field ``name`` of ``side``."""
    return f"__tidal_{side}_{name}"


def detach(node: PlanNode) -> PlanNode:
    """A copy of ``node`` that builds the same operator but holds no reference to its inputs."""
    return node.with_inputs((None,) * len(node.inputs))


class _Collect(Consumer):
    def __init__(self):
        self.out: list[pa.RecordBatch] = []

    def on_batch(self, batch: EventBatch) -> None:
        rb = batch.to_record_batch()
        if rb.num_rows:
            self.out.append(rb)


def conform(rb: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    """``rb`` with exactly ``schema``'s columns, in its order and types."""
    if rb.schema.equals(schema):
        return rb
    names = rb.schema.names
    arrays = []
    for f in schema:
        col = rb.column(names.index(f.name))
        arrays.append(col if col.type == f.type else col.cast(f.type))
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def physical(payload: pa.Schema) -> pa.Schema:
    """``sync_time, other_time`` and then the payload fields."""
    return pa.schema([pa.field(SYNC_FIELD, pa.int64()), pa.field(OTHER_FIELD, pa.int64()), *payload])


class Fragment:
    """A chain of plan nodes run per partition; ``fragment(batches)`` is a mapInArrow function."""

    def __init__(
        self,
        nodes: list[PlanNode],
        in_schemas: list[pa.Schema],
        out_schema: pa.Schema,
        side_columns: tuple[dict[str, str], ...] | None = None,
    ):
        if not nodes:
            raise ValueError("a fragment needs at least one node")
        self.nodes = [detach(n) for n in nodes]
        # the payload of each input as the plan knows it (Spark hands some types back changed,
        # e.g. naive timestamps as UTC ones: they are cast back before tidal sees them)
        self.in_schemas = in_schemas
        self.out_schema = out_schema
        # a two-input partition: per side, the column holding each of its payload fields
        self.side_columns = side_columns

    @property
    def sides(self) -> int:
        return 1 if self.side_columns is None else len(self.side_columns)

    def build(self) -> tuple[list[Consumer], _Collect]:
        ops = [n.make() for n in self.nodes]
        for i in range(1, len(ops)):
            ops[i - 1].downstream.append(self.nodes[i].ports(ops[i])[0])
        sink = _Collect()
        ops[-1].downstream.append(sink)
        entries = self.nodes[0].ports(ops[0])
        return entries[: self.sides], sink

    def split(self, rb: pa.RecordBatch) -> list[EventBatch]:
        """The events of each side of a tagged two-input record batch."""
        side = rb.column(rb.schema.names.index(SIDE_FIELD))
        sync, other = rb.column(SYNC_FIELD), rb.column(OTHER_FIELD)
        out = []
        for s, columns in enumerate(self.side_columns):
            mask = pc.equal(side, s)
            types = self.in_schemas[s]
            cols = {n: pc.filter(rb.column(c), mask).cast(types.field(n).type) for n, c in columns.items()}
            out.append(
                EventBatch(
                    sync=pc.filter(sync, mask).to_numpy(),
                    other=pc.filter(other, mask).to_numpy(),
                    columns=cols,
                )
            )
        return out

    def __call__(self, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        entries, sink = self.build()
        yield from self._run(entries, entries, batches, sink)

    def _run(self, entries, punctuated, batches, sink) -> Iterator[pa.RecordBatch]:
        """Feed the partition's sorted batches to ``entries``; punctuate ``punctuated`` after each."""
        for rb in batches:
            if rb.num_rows == 0:
                continue
            if len(entries) == 1:
                parts = [EventBatch.from_record_batch(conform(rb, physical(self.in_schemas[self.fed[0]])))]
            else:
                parts = self.split(rb)
            for entry, part in zip(entries, parts, strict=True):
                if len(part):
                    entry.on_batch(part)
            last = int(np.asarray(rb.column(SYNC_FIELD))[-1])
            for entry in punctuated:
                entry.on_punctuation(last)
            yield from self._drain(sink)
        for entry in punctuated:
            entry.on_punctuation(INFINITY)
        for entry in punctuated:
            entry.on_completed()
        yield from self._drain(sink)

    @property
    def fed(self) -> list[int]:
        """The inputs whose events come from the partition."""
        return list(range(self.sides))

    def _drain(self, sink: _Collect) -> Iterator[pa.RecordBatch]:
        out, sink.out = sink.out, []
        for rb in out:
            yield conform(rb, self.out_schema)


class BroadcastFragment(Fragment):
    """A two-input head whose ``small`` input comes whole to every task (a Spark broadcast of
    Arrow IPC bytes) while the other input is the task's partition (Trill's asymmetric two-input
    reduce). The small input is fed, punctuated at infinity and completed first, then the
    partition streams through as a one-input fragment's would."""

    def __init__(self, nodes, in_schemas, out_schema, small: int, broadcast):
        super().__init__(nodes, in_schemas, out_schema)
        self.small = small
        self.broadcast = broadcast  # pyspark Broadcast of the small side's sorted events (Arrow IPC)

    @property
    def sides(self) -> int:
        return 2

    @property
    def fed(self) -> list[int]:
        return [1 - self.small]

    def __call__(self, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        entries, sink = self.build()
        small, big = entries[self.small], entries[1 - self.small]
        table = pa.ipc.open_stream(self.broadcast.value).read_all()
        schema = physical(self.in_schemas[self.small])
        for rb in table.to_batches():
            if rb.num_rows:
                small.on_batch(EventBatch.from_record_batch(conform(rb, schema)))
        small.on_punctuation(INFINITY)
        small.on_completed()
        yield from self._run([big], [big], batches, sink)


def ipc_bytes(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()
