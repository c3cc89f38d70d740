"""The same plans on Structured Streaming, with per-key operator state in Spark's state store.

``start_streaming(stream, output=..., checkpoint=...)`` runs a plan over streaming Spark sources
(file sources on directories, the rate source, ...): one source, or two or more met by a join or
a union. Each source's physical events are tagged with their source, carry their key columns
under shared names (the partitioning of the plan's stateful nodes, so the sides of a join with
equal keys land in one group; a hash of the whole payload when the plan is stateless, so an
edge meets its partner), and the union of all is grouped by key. In each micro-batch Spark
calls tidal for every group that received events or whose timer fired
(``applyInPandasWithState`` with an event-time timeout). For its group tidal

1. restores the plan's operators (the whole plan, every input) from their ``snapshot()`` kept in
   the group's state,
2. adds the new events to the events it holds back (Spark may not sort a streaming DataFrame;
   tidal sorts inside the stateful step),
3. advances the group's frontier to the larger of Spark's watermark and the group's own
   ``min over sources of (latest sync time seen) - reorder_latency``, feeds the held events
   earlier than the frontier to their sources' operators in sync-time order (across sources)
   and punctuates every input at the frontier, so operators emit what is final,
4. stores the snapshots and the held-back events back into the state and, while anything is
   pending, sets its timer to the next watermark: a key that stops receiving events is still
   called when the watermark passes and finishes its windows then (no sentinel event needed).
   A group whose operators hold nothing and that holds no events is removed from the state.

The watermark is Spark's own: each source declares ``withWatermark`` on its sync time (as
microseconds, so the watermark advances in whole milliseconds: ticks are microseconds) with
``reorder_latency`` as the delay; Spark takes the minimum over sources (a slow source holds
the others back, as tidal's merge of per-source watermarks does) and advances it after each
micro-batch, running a micro-batch without data to fire timers. Spark's own dropping of rows
behind the watermark is kept away from the stateful step (its late-row check is pointed at a
null column), so tidal's policy decides: an event earlier than its group's frontier is late,
with ``late="error"`` (default) the micro-batch fails naming the event, with ``late="drop"``
it is dropped and counted in the group's state. The bar is fixed from earlier micro-batches, so it never
exceeds the embedded engine's watermark at the event's arrival: the events called late here are a subset of
the embedded engine's, equal when no event is later than ``reorder_latency`` (docs/spark.md).

Spark's checkpoint location makes restarts resume from the last committed micro-batch and its
state; the sink writes each micro-batch's output under ``output/batch_id=N`` (overwriting), so a
replayed batch is written once. Output is final up to the frontier; the rest of a stream that
has ended stays held (run it in batch with :func:`tidal.spark.to_spark` for the complete answer).
Not supported (refused before anything starts): joins against a static DataFrame, several
reorder latencies in one plan, stateful operators keyed differently, keys computed by a
projection between the source and the stateful operator.
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..core.batch import OTHER_FIELD, SYNC_FIELD, EventBatch
from ..core.errors import InputError, PlanError
from ..core.time import MIN_TIME
from ..plan.node import PlanNode
from ..plan.nodes import DelayBand, LateEvents, Multicast, Source, Union
from ..plan.rules import PORTABLE_RULES, optimize
from ..stream.streamable import Stream
from .batch import PAYLOAD_KEEPING, physical_schema
from .fragment import SIDE_FIELD, _Collect, conform, detach, side_field
from .source import SparkSourceNode

STATE_SCHEMA = "blob binary"
WATERMARK_FIELD = "__tidal_wm"
EVENT_TIME_FIELD = "__tidal_event_time"
DELAY_KEY = "spark.watermarkDelayMs"  # Spark's EventTimeWatermark.delayKey: marks a watermarked column

# what streaming on Spark cannot run, by node type (checked before anything starts), as ibis backends list theirs
UNSUPPORTED: dict[type, str] = {
    DelayBand: "several reorder latencies need one sort shared by several outputs; use reorder_latency=",
    LateEvents: "late events come from the stateful step's count (late='drop'), not from a plan node",
}


@dataclass
class _Graph:
    """The plan as lists: sources, the other nodes inputs first, and each node's inputs as
    ``("source", i)`` or ``("node", j)``."""

    sources: list[SparkSourceNode]
    nodes: list[PlanNode]
    inputs: list[list[tuple[str, int]]]


def _graph(root: PlanNode) -> _Graph:
    g = _Graph([], [], [])
    ids: dict[int, tuple[str, int]] = {}

    def visit(node: PlanNode) -> tuple[str, int]:
        if id(node) in ids:
            return ids[id(node)]
        if isinstance(node, Source):
            if not isinstance(node, SparkSourceNode) or not node.df.isStreaming:
                raise PlanError(
                    f"{node.label}: streaming on Spark needs every source to be a streaming DataFrame "
                    "(tidal.spark.from_spark); a join with a static input is not supported"
                )
            g.sources.append(node)
            ids[id(node)] = ("source", len(g.sources) - 1)
            return ids[id(node)]
        if type(node) in UNSUPPORTED:
            raise PlanError(f"{node.label}: not supported on Spark streaming: {UNSUPPORTED[type(node)]}")
        refs = [visit(i) for i in node.inputs]
        g.nodes.append(node)
        g.inputs.append(refs)
        ids[id(node)] = ("node", len(g.nodes) - 1)
        return ids[id(node)]

    visit(root)
    return g


def _source_keys(g: _Graph) -> list[tuple[str, ...] | None]:
    """Per source, the fields its events are grouped by: the key of the stateful nodes above it
    (``None``: the plan is stateless, group by the whole payload)."""
    keys: list[tuple[str, ...] | None] = [None] * len(g.sources)
    stateful = False

    def reach(ref: tuple[str, int], fields: tuple[str, ...], via: PlanNode) -> None:
        kind, i = ref
        if kind == "source":
            src = g.sources[i]
            missing = [f for f in fields if f not in src.schema.names]
            if missing:
                raise PlanError(
                    f"{via.label}: streaming on Spark groups each source by the plan's keys; {missing} are not "
                    f"fields of the source ({src.schema.names})"
                )
            if keys[i] and fields and keys[i] != fields:
                raise PlanError(
                    f"streaming on Spark needs every stateful operator over a source keyed the same way, got "
                    f"{list(keys[i])} and {list(fields)}"
                )
            keys[i] = () if keys[i] == () or not fields else fields  # a global operator: one group for all
            return
        node = g.nodes[i]
        keeps = isinstance(node, PAYLOAD_KEEPING + (Union, Multicast)) or (
            node.partitioning is not None and all(f in (node.schema.names if node.schema else ()) for f in fields)
        )
        if fields and not keeps:
            raise PlanError(
                f"{via.label}: streaming on Spark groups by source fields, but {node.label} below it may change "
                f"{list(fields)}: not supported (key the stateful operator by fields the source carries unchanged)"
            )
        for sub in g.inputs[i]:
            reach(sub, fields, via)

    for j, node in enumerate(g.nodes):
        if node.partitioning is None:
            continue
        stateful = True
        parts = node.partitioning
        for n, ref in enumerate(g.inputs[j]):
            reach(ref, tuple(parts[n] if n < len(parts) else parts[0]), node)
    if stateful:
        if any(k == () for k in keys) or any(k is None for k in keys):
            return [()] * len(keys)  # a global operator (or a source no key reaches): one group for all
        widths = {len(k) for k in keys}
        if len(widths) > 1:
            raise PlanError(f"streaming on Spark: the sources' keys differ in width: {keys}")
    return keys


class KeyedRunner:
    """The per-group function given to ``applyInPandasWithState`` (pickled to the workers)."""

    def __init__(self, g: _Graph, in_schema, side_columns, out_schema, reorder_latency: int, late: str):
        if late not in ("error", "drop"):
            raise PlanError(f"late must be 'error' or 'drop', got {late!r}")
        self.nodes = [detach(n) for n in g.nodes]
        self.inputs = g.inputs
        self.payloads = [s.schema for s in g.sources]
        self.in_schema = in_schema  # the tagged union of every source's physical events
        self.side_columns = side_columns  # per source: payload field -> its column
        self.out_schema = out_schema
        self.reorder_latency = int(reorder_latency)
        self.late = late
        self._empty = None

    def _build(self, saved):
        ops = [n.make() for n in self.nodes]
        entries: list[list] = [[] for _ in self.payloads]
        for j, node in enumerate(self.nodes):
            ports = node.ports(ops[j])
            for n, (kind, i) in enumerate(self.inputs[j]):
                (entries[i] if kind == "source" else ops[i].downstream).append(ports[n])
        sink = _Collect()
        ops[-1].downstream.append(sink)
        if saved is not None:
            for op, snap in zip(ops, saved, strict=True):
                op.restore(snap)
        return ops, entries, sink

    def _events(self, table: pa.Table, side: int) -> EventBatch:
        mask = pc.equal(table.column(SIDE_FIELD), side)
        part = table.filter(mask)
        types = self.payloads[side]
        cols = {
            n: part.column(c).combine_chunks().cast(types.field(n).type) for n, c in self.side_columns[side].items()
        }
        return EventBatch(
            sync=part.column(SYNC_FIELD).to_numpy(), other=part.column(OTHER_FIELD).to_numpy(), columns=cols
        )

    def _feed(self, ready: pa.Table, entries) -> None:
        """The events in sync-time order across sources: each run of one source's events at once."""
        sides = ready.column(SIDE_FIELD).to_numpy()
        cuts = np.flatnonzero(np.diff(sides)) + 1
        for start, stop in zip(np.r_[0, cuts], np.r_[cuts, len(sides)], strict=True):
            run = ready.slice(int(start), int(stop - start))
            side = int(sides[start])
            batch = self._events(run, side)
            for entry in entries[side]:
                entry.on_batch(batch)

    def _empty_snapshot(self) -> bytes:
        if self._empty is None:
            self._empty = pickle.dumps([op.snapshot() for op in self._build(None)[0]])
        return self._empty

    def __call__(self, key, frames, state):
        import pandas as pd

        saved = pickle.loads(state.get[0]) if state.exists else None
        tables = [pa.Table.from_pandas(f, preserve_index=False) for f in frames if len(f)]
        held = saved["held"] if saved else self.in_schema.empty_table()
        new = pa.concat_tables([conform_table(t, self.in_schema) for t in tables]) if tables else None
        frontier = saved["frontier"] if saved else MIN_TIME
        latest = list(saved["latest"]) if saved else [MIN_TIME] * len(self.payloads)
        late = saved["late"] if saved else 0
        watermark = state.getCurrentWatermarkMs()
        final = max(frontier, watermark * 1000 if watermark > 0 else MIN_TIME)  # what every group has closed
        if new is not None and new.num_rows:
            sync = new.column(SYNC_FIELD).to_numpy()
            bad = sync < final
            if bad.any():
                if self.late == "error":
                    row = new.slice(int(np.flatnonzero(bad)[0]), 1).to_pylist()[0]
                    raise InputError(f"late event for key {key}: sync time {row[SYNC_FIELD]} < frontier {final}: {row}")
                late += int(bad.sum())
                new = new.filter(pa.array(~bad))
                sync = sync[~bad]
            sides = new.column(SIDE_FIELD).to_numpy()
            for s in range(len(latest)):
                if (sides == s).any():
                    latest[s] = max(latest[s], int(sync[sides == s].max()))
            held = pa.concat_tables([held, new])
        ops, entries, sink = self._build(saved["ops"] if saved else None)
        own = min(latest) - self.reorder_latency if min(latest) > MIN_TIME else MIN_TIME
        target = max(own, final)
        if target > frontier:
            held = held.sort_by([(SYNC_FIELD, "ascending"), (SIDE_FIELD, "ascending")])
            cut = int(np.searchsorted(held.column(SYNC_FIELD).to_numpy(), target, side="left"))
            ready, held = held.slice(0, cut), held.slice(cut)
            if ready.num_rows:
                self._feed(ready.combine_chunks(), entries)
            for side in entries:
                for entry in side:
                    entry.on_punctuation(target)
            frontier = target
        snapshots = [op.snapshot() for op in ops]
        pending = held.num_rows > 0 or pickle.dumps(snapshots) != self._empty_snapshot()
        if not pending and late == 0 and frontier <= final:
            # nothing held, and the group's frontier is the watermark: the group is done until it receives
            # events again (an event behind the watermark is late then as well: no result is given twice)
            state.remove()
        else:
            blob = {"ops": snapshots, "held": held.combine_chunks(), "frontier": frontier, "latest": latest,
                    "late": late}  # fmt: skip
            state.update((pickle.dumps(blob),))
            if pending:
                state.setTimeoutTimestamp(max(watermark, 0) + 1)  # called again when the watermark moves on
        for rb in sink.out:
            yield conform(rb, self.out_schema).to_pandas()
        if not sink.out:
            yield pd.DataFrame({f.name: pd.Series(dtype=f.type.to_pandas_dtype()) for f in self.out_schema})


def conform_table(table: pa.Table, schema: pa.Schema) -> pa.Table:
    return pa.Table.from_arrays(
        [table.column(f.name).cast(f.type) for f in schema],
        schema=schema,
    )


def _tagged(g: _Graph, keys, reorder_latency: int):
    """The union of every source's physical events: side tag, times, per-side payload columns, shared
    key columns and the watermark marker; with the Arrow schema and each side's column names."""
    from pyspark.sql import functions as F

    delay_ms = -(-int(reorder_latency) // 1000)
    width = max((len(k) for k in keys if k), default=0)
    frames, fields, side_columns = [], [pa.field(SIDE_FIELD, pa.int32())], []
    for s, (src, key) in enumerate(zip(g.sources, keys, strict=True)):
        events = src.to_physical()
        events = events.withColumn(EVENT_TIME_FIELD, F.timestamp_micros(F.col(SYNC_FIELD)))
        events = events.withWatermark(EVENT_TIME_FIELD, f"{delay_ms} milliseconds")
        columns = {n: side_field(s, n) for n in src.schema.names}
        side_columns.append(columns)
        fields += [pa.field(columns[f.name], f.type) for f in src.schema]
        if key is None:  # stateless: the whole payload (an edge meets its partner)
            group = [F.xxhash64(*[F.col(f"`{n}`") for n in src.schema.names]).alias("__tidal_key_0")]
        elif not key:
            group = [F.lit(0).cast("long").alias("__tidal_key_0")]
        else:
            first = g.sources[0].schema
            group = []
            for i, (name, name0) in enumerate(zip(key, keys[0], strict=True)):
                a, b = src.schema.field(name).type, first.field(name0).type
                if a != b and not (pa.types.is_integer(a) and pa.types.is_integer(b)):
                    raise PlanError(f"streaming on Spark: key {name} ({a}) and {name0} ({b}) differ in type")
                col = F.col(f"`{name}`")
                group.append((col.cast("long") if pa.types.is_integer(a) else col).alias(f"__tidal_key_{i}"))
        marker = F.lit(None).cast("timestamp").alias(WATERMARK_FIELD, metadata={DELAY_KEY: delay_ms})
        frames.append(
            events.select(
                F.lit(s).cast("int").alias(SIDE_FIELD),
                F.col(SYNC_FIELD),
                F.col(OTHER_FIELD),
                *[F.col(f"`{n}`").alias(c) for n, c in columns.items()],
                *group,
                marker,
            )
        )
    union = frames[0]
    for frame in frames[1:]:
        union = union.unionByName(frame, allowMissingColumns=True)
    names = [f"__tidal_key_{i}" for i in range(max(width, 1))]
    in_schema = pa.schema([fields[0], *physical_schema(pa.schema([])), *fields[1:]])
    return union, names, in_schema, side_columns


def start_streaming(
    stream: Stream,
    *,
    output: str,
    checkpoint: str,
    reorder_latency: int = 0,
    late: str = "error",
    trigger: dict | None = None,
    output_format: str = "parquet",
):
    """Start a Structured Streaming query running ``stream``; returns Spark's ``StreamingQuery``.

    ``trigger`` is passed to ``DataStreamWriter.trigger`` (e.g. ``{"availableNow": True}``).
    """
    from pyspark.sql.pandas.types import from_arrow_schema
    from pyspark.sql.streaming.state import GroupStateTimeout

    root = optimize([stream.node], PORTABLE_RULES)[0]
    if isinstance(root, Source):
        raise PlanError("the plan has no operators to run")
    if root.schema is None:
        raise PlanError(f"{root.label}: streaming needs the output fields known before running")
    g = _graph(root)
    keys = _source_keys(g)
    events, group, in_schema, side_columns = _tagged(g, keys, reorder_latency)
    out_schema = physical_schema(root.schema)
    runner = KeyedRunner(g, in_schema, side_columns, out_schema, reorder_latency, late)
    result = events.groupBy(*group).applyInPandasWithState(
        runner, from_arrow_schema(out_schema), STATE_SCHEMA, "append", GroupStateTimeout.EventTimeTimeout
    )

    def write(batch_df, batch_id: int) -> None:
        # overwrite this batch's directory: a micro-batch replayed after a failure is written once
        batch_df.write.mode("overwrite").format(output_format).save(f"{output}/batch_id={batch_id}")

    writer = result.writeStream.foreachBatch(write).option("checkpointLocation", checkpoint)
    if trigger:
        writer = writer.trigger(**trigger)
    return writer.start()


def read_output(output: str) -> pa.Table:
    """All micro-batches' output written by :func:`start_streaming`, sorted by sync time."""
    import pyarrow.dataset as ds

    table = ds.dataset(output, format="parquet", partitioning="hive").to_table()
    table = table.drop_columns([c for c in table.column_names if c == "batch_id"])
    return table.sort_by([(SYNC_FIELD, "ascending"), (OTHER_FIELD, "ascending")])
