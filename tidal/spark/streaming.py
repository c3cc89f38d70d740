"""The same plans on Structured Streaming, with per-key operator state in Spark's state store.

``start_streaming(stream, output=..., checkpoint=...)`` runs a linear plan over one streaming
Spark source (a file source on a directory, the rate source, ...). Spark groups the source's
physical events by the plan's key fields (the partitioning of its stateful nodes; every
field of the payload when the plan is stateless, so an edge meets its partner) and, in each
micro-batch, calls tidal for every key group that received events
(``applyInPandasWithState``). For its group tidal

1. restores the plan's operators from their ``snapshot()`` kept in the group's state,
2. adds the new events to the events it holds back, sorts them by sync time (Spark may not
   sort a streaming DataFrame; tidal sorts inside the stateful step),
3. feeds the events earlier than ``frontier = latest sync time seen - reorder_latency`` and
   punctuates at the frontier, so operators emit what is final,
4. stores the operators' snapshots and the held-back events back into the state.

An event earlier than the group's last frontier is late: with ``late="error"`` (default) the
micro-batch fails naming the event, with ``late="drop"`` it is dropped and counted in the
group's state. Spark's checkpoint location makes restarts
resume from the last committed micro-batch and its state; the sink writes each micro-batch's
output under ``output/batch_id=N`` (overwriting), so a replayed batch is written once.
Output is final up to the frontier: a stream that has ended is flushed by an event far in
the future (as a watermark would be advanced), or run in batch with :func:`tidal.spark.to_spark`.
"""

from __future__ import annotations

import pickle

import numpy as np
import pyarrow as pa

from ..core.batch import OTHER_FIELD, SYNC_FIELD, EventBatch
from ..core.errors import InputError, PlanError
from ..core.time import MIN_TIME
from ..plan.node import PlanNode
from ..plan.nodes import DelayBand, Join, LateEvents, Source, Union
from ..plan.rules import PORTABLE_RULES, optimize
from ..stream.streamable import Stream
from .batch import physical_schema
from .fragment import _Collect, conform, detach
from .source import SparkSourceNode

STATE_SCHEMA = "blob binary"

# what streaming on Spark cannot run, by node type (checked before anything starts), as ibis backends list
# theirs: each micro-batch runs a key group's operators as one chain, so every operator has one input
UNSUPPORTED: dict[type, str] = {
    Join: "joins need two inputs; streaming on Spark runs plans with one input per operator",
    Union: "a union needs two inputs; streaming on Spark runs plans with one input per operator",
    DelayBand: "several reorder latencies need one sort shared by several outputs; use reorder_latency=",
    LateEvents: "late events come from the stateful step's count (late='drop'), not from a plan node",
}


def _linear_plan(root: PlanNode) -> tuple[SparkSourceNode, list[PlanNode]]:
    chain: list[PlanNode] = []
    node = root
    while not isinstance(node, Source):
        if type(node) in UNSUPPORTED:
            raise PlanError(f"{node.label}: not supported on Spark streaming: {UNSUPPORTED[type(node)]}")
        if len(node.inputs) != 1:
            raise PlanError(f"{node.label}: streaming on Spark runs plans with one input per operator")
        chain.append(node)
        node = node.inputs[0]
    if not isinstance(node, SparkSourceNode) or not node.df.isStreaming:
        raise PlanError("streaming on Spark needs a plan over a streaming DataFrame (tidal.spark.from_spark)")
    return node, chain[::-1]


def _group_keys(source: SparkSourceNode, chain: list[PlanNode]) -> tuple[str, ...]:
    keyed = {tuple(n.partitioning[0]) for n in chain if n.partitioning is not None}
    if not keyed:
        return tuple(source.schema.names)  # stateless: any grouping works; keep a lifetime's edges together
    if len(keyed) > 1:
        raise PlanError(f"streaming on Spark needs every stateful operator keyed the same way, got {sorted(keyed)}")
    keys = keyed.pop()
    missing = [k for k in keys if k not in source.schema.names]
    if missing:
        raise PlanError(f"streaming on Spark groups the source by the plan's keys; {missing} are not source fields")
    return keys


class KeyedRunner:
    """The per-group function given to ``applyInPandasWithState`` (pickled to the workers)."""

    def __init__(self, chain, in_schema, out_schema, reorder_latency: int, late: str):
        if late not in ("error", "drop"):
            raise PlanError(f"late must be 'error' or 'drop', got {late!r}")
        self.nodes = [detach(n) for n in chain]
        self.in_schema = in_schema
        self.out_schema = out_schema
        self.reorder_latency = int(reorder_latency)
        self.late = late

    def _build(self, saved):
        ops = [n.make() for n in self.nodes]
        for i in range(1, len(ops)):
            ops[i - 1].downstream.append(self.nodes[i].ports(ops[i])[0])
        sink = _Collect()
        ops[-1].downstream.append(sink)
        if saved is not None:
            for op, snap in zip(ops, saved, strict=True):
                op.restore(snap)
        return ops, sink

    def __call__(self, key, frames, state):
        import pandas as pd

        saved = pickle.loads(state.get[0]) if state.exists else None
        tables = [pa.Table.from_pandas(f, preserve_index=False) for f in frames if len(f)]
        held = saved["held"] if saved else self.in_schema.empty_table()
        new = pa.concat_tables([conform_table(t, self.in_schema) for t in tables]) if tables else None
        frontier = saved["frontier"] if saved else MIN_TIME
        latest = saved["latest"] if saved else MIN_TIME
        late = saved["late"] if saved else 0
        if new is not None and new.num_rows:
            sync = new.column(SYNC_FIELD).to_numpy()
            bad = sync < frontier
            if bad.any():
                if self.late == "error":
                    row = new.slice(int(np.flatnonzero(bad)[0]), 1).to_pylist()[0]
                    raise InputError(
                        f"late event for key {key}: sync time {row[SYNC_FIELD]} < frontier {frontier}: {row}"
                    )
                late += int(bad.sum())
                new = new.filter(pa.array(~bad))
            latest = max(latest, int(sync.max()))
            held = pa.concat_tables([held, new])
        ops, sink = self._build(saved["ops"] if saved else None)
        target = latest - self.reorder_latency if latest > MIN_TIME else MIN_TIME
        if target > frontier:
            held = held.sort_by(SYNC_FIELD)
            cut = int(np.searchsorted(held.column(SYNC_FIELD).to_numpy(), target, side="left"))
            ready, held = held.slice(0, cut), held.slice(cut)
            for rb in ready.combine_chunks().to_batches():
                if rb.num_rows:
                    ops[0].on_batch(EventBatch.from_record_batch(rb))
            ops[0].on_punctuation(target)
            frontier = target
        blob = {
            "ops": [op.snapshot() for op in ops],
            "held": held.combine_chunks(),
            "frontier": frontier,
            "latest": latest,
            "late": late,
        }
        state.update((pickle.dumps(blob),))
        for rb in sink.out:
            yield conform(rb, self.out_schema).to_pandas()
        if not sink.out:
            yield pd.DataFrame({f.name: pd.Series(dtype=f.type.to_pandas_dtype()) for f in self.out_schema})


def conform_table(table: pa.Table, schema: pa.Schema) -> pa.Table:
    return pa.Table.from_arrays(
        [table.column(f.name).cast(f.type) for f in schema],
        schema=schema,
    )


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
    from pyspark.sql import functions as F
    from pyspark.sql.pandas.types import from_arrow_schema
    from pyspark.sql.streaming.state import GroupStateTimeout

    source, chain = _linear_plan(optimize([stream.node], PORTABLE_RULES)[0])
    if not chain:
        raise PlanError("the plan has no operators to run")
    if chain[-1].schema is None:
        raise PlanError(f"{chain[-1].label}: streaming needs the output fields known before running")
    keys = _group_keys(source, chain)
    in_schema = physical_schema(source.schema)
    out_schema = physical_schema(chain[-1].schema)
    runner = KeyedRunner(chain, in_schema, out_schema, reorder_latency, late)
    events = source.to_physical()
    grouped = events.groupBy(*[F.col(f"`{k}`") for k in keys]) if keys else events.groupBy(F.lit(0).alias("__all"))
    result = grouped.applyInPandasWithState(
        runner, from_arrow_schema(out_schema), STATE_SCHEMA, "append", GroupStateTimeout.NoTimeout
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
