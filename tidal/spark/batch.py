"""Run a tidal plan over Spark DataFrames as a temporal map-reduce (Trill, seed 001 §6.1).

The plan is cut at its stateful nodes (``node.partitioning is not None``):

* **map**: the stateless prefix above each source runs per partition in ``mapInArrow``
  (Arrow record batches in and out, the operators rebuilt inside the task);
* **shuffle**: before a stateful node Spark repartitions its input by the node's key fields
  (one partition for ``()``: global order, global aggregates), and sorts each partition by
  sync time (``sortWithinPartitions``), so equal keys meet in time order;
* **reduce**: the stateful node and the stateless nodes above it run per partition, again
  in ``mapInArrow``; the next stateful node cuts again.

When the shuffle key is a source field that the stateless prefix carries unchanged, the prefix
moves after the shuffle into the reducing task (one trip through Python, one sort, on the
source's own times). When that prefix is per-event operators ending in a window and the
stateful node is an aggregate of integers (count, sum, min, max), a map-side combine
(:mod:`tidal.spark.partial`) aggregates each partition's events per key and window before the
shuffle, so the shuffle moves partial aggregates rather than events.

Simple stateless operators right above a source run in Spark itself (:mod:`tidal.spark.pushdown`:
``where`` over comparisons, ``alter_duration`` on intervals, ``multicast``), and a map-side
combine whose prefix is one window over intervals is a Spark group-by
(:func:`tidal.spark.partial.sql_combine`): then only partial aggregates cross into Python.

A global aggregate (no key) whose aggregates merge exactly (counts, integer sums, minima,
maxima) runs in every partition and its partial results are merged in one partition; other
global aggregates and plans needing one global order run whole in one partition.

A two-input stateful node (a join) co-partitions both sides: each side is tagged, its key
fields copied to shared columns, and the union of both is repartitioned by those columns,
so one task sees both sides of the same keys in one sorted partition (Trill's two-input
reduce). A join whose left is declared small (``left_is_small=True``, the SQL lookup join)
instead collects the left once and broadcasts it to every partition of the right, which is
not shuffled (Trill's asymmetric two-input reduce); this runs the left when the plan is
translated. A union is Spark's union. ``explain()`` lists the steps. Sources that are physical
events (``other=``) may hold start and end edges of one lifetime: they are partitioned by their
whole payload so the two edges land in the same partition. Spark does all data movement; tidal runs inside tasks.

Each result is the DataFrame of physical events ``sync_time, other_time, payload...``;
partitions are in sync-time order but the DataFrame as a whole is not (``to_arrow`` sorts).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import pyarrow as pa

from ..core.batch import OTHER_FIELD, SYNC_FIELD
from ..core.errors import PlanError
from ..io.egress import CollectSink
from ..plan.node import PlanNode
from ..plan.nodes import (
    AlterLifetime,
    Chop,
    ClipDuration,
    ExtendLifetime,
    HoppingWindow,
    ImpatienceSort,
    Multicast,
    NamedSelect,
    PointAtEnd,
    QuantizeLifetime,
    Select,
    SelectMany,
    ShiftLifetime,
    Source,
    Union,
    Where,
)
from ..plan.nodes.relational import EmptyDefault
from ..plan.rules import PORTABLE_RULES, apply_rule, optimize
from ..stream.query import execute
from ..stream.streamable import Stream
from .fragment import SIDE_FIELD, BroadcastFragment, Fragment, ipc_bytes, side_field
from .partial import combinable, global_partials, split_aggregate, sql_combine
from .pushdown import push_down
from .source import SparkSourceNode
from .sqltext import columns, ident

# nodes that look at one event at a time: their input need not be sorted
ORDER_FREE = (Where, Select, NamedSelect, SelectMany, Multicast)
# stateless nodes whose output payload is their input payload, field for field
PAYLOAD_KEEPING = (Where, Multicast, ShiftLifetime, AlterLifetime, HoppingWindow, ClipDuration, ExtendLifetime,
                   QuantizeLifetime, PointAtEnd, Chop)  # fmt: skip
SAMPLE_ROWS = 10_000
CONTROL = pa.schema([pa.field(SYNC_FIELD, pa.int64()), pa.field(OTHER_FIELD, pa.int64())])


def physical_schema(payload: pa.Schema) -> pa.Schema:
    return pa.schema(list(CONTROL) + list(payload))


@dataclass(frozen=True)
class _Rel:
    """Physical events in ``df`` (payload ``schema``) still to go through ``chain`` per partition."""

    df: object
    schema: pa.Schema
    chain: tuple[PlanNode, ...] = ()
    sorted: bool = False
    side_payloads: tuple[pa.Schema, ...] | None = None
    broadcast: tuple | None = None  # (small input, its Spark broadcast, both inputs' payloads)
    intervals: bool = False  # every row is an interval (no edges): lifetimes may be changed row by row
    side_columns: tuple[dict[str, str], ...] | None = None  # per side: payload field -> its partition column


EMPTY_RELATION_RULE = "org.apache.spark.sql.execution.adaptive.AQEPropagateEmptyRelation"


class SparkPlanner:
    """Translates one plan into Spark DataFrame operations (see the module docstring)."""

    def __init__(self, spark, partitions: int, *, explain_only: bool = False):
        if partitions < 1:
            raise PlanError(f"partitions must be positive, got {partitions}")
        self.spark = spark
        self.partitions = partitions
        # explain_only: describe the steps without running anything (a broadcast side is not collected)
        self.explain_only = explain_only
        self.steps: list[str] = []
        self._rels: dict[int, _Rel] = {}
        self._frames: dict[int, tuple] = {}
        self._schemas: dict[int, pa.Schema] = {}

    def explain(self, node: PlanNode) -> str:
        """The Spark steps of the plan under ``node``, inputs first."""
        self.frame(node)
        return "\n".join(self.steps)

    def _step(self, text: str) -> None:
        self.steps.append(text)

    # -- the translation --------------------------------------------------------------
    def frame(self, node: PlanNode):
        """(DataFrame of physical events, payload schema) for ``node``."""
        if id(node) not in self._frames:
            self._frames[id(node)] = self._materialize(self.rel(node))
        return self._frames[id(node)]

    def rel(self, node: PlanNode) -> _Rel:
        if id(node) not in self._rels:
            self._rels[id(node)] = self._translate(node)
        return self._rels[id(node)]

    def _translate(self, node: PlanNode) -> _Rel:
        if isinstance(node, Source):
            return self._source(node)
        if isinstance(node, ImpatienceSort) and all(_in_memory(i) for i in node.inputs):
            # which events are late depends on the order they arrived in, which a Spark shuffle does not
            # keep: the in-memory input is sorted here (late events dropped, adjusted and counted as
            # embedded) and its sorted events handed to Spark
            return self._source(node)
        if isinstance(node, EmptyDefault):
            self._keep_empty_stages()
        if node.partitioning is not None:
            if len(node.inputs) == 1:
                return self._reduce_one(node)
            if len(node.inputs) == 2:
                return self._reduce_two(node)
            raise PlanError(f"{node.label}: {len(node.inputs)}-input stateful nodes are not supported on Spark")
        if len(node.inputs) == 1:
            parent = self.rel(node.inputs[0])
            if not parent.chain and parent.side_payloads is None and parent.broadcast is None:
                df = push_down(node, parent.df, parent.schema, parent.intervals)
                if df is not None:
                    if not isinstance(node, Multicast):
                        self._step(f"{node.label} in Spark SQL")
                    return replace(parent, df=df)
            return replace(parent, chain=(*parent.chain, node))
        if isinstance(node, Union):
            frames = [self.frame(child) for child in node.inputs]
            df = frames[0][0]
            for other, _ in frames[1:]:
                df = df.unionByName(other)
            return _Rel(df, frames[0][1])
        raise PlanError(f"{node.label}: a stateless {len(node.inputs)}-input node is not supported on Spark")

    def _keep_empty_stages(self) -> None:
        """Spark's adaptive execution replaces a plan over an empty shuffle by an empty relation, so the
        task that adds a global aggregate's row over no rows would never run: switch that rule off."""
        key = "spark.sql.adaptive.optimizer.excludedRules"
        rules = [r for r in (self.spark.conf.get(key, "") or "").split(",") if r]
        if EMPTY_RELATION_RULE not in rules:
            self.spark.conf.set(key, ",".join([*rules, EMPTY_RELATION_RULE]))

    def _source(self, node: Source) -> _Rel:
        if isinstance(node, SparkSourceNode):
            df = node.to_physical()
            if node.physical and node.schema.names:
                df = df.repartition(self.partitions, *columns(df, node.schema.names))
                self._step(f"source {node.label}: {self.partitions} partitions by {_fields(node.schema.names)}")
            else:
                self._step(f"source {node.label}: its own partitions")
            return _Rel(df, node.schema, intervals=not node.physical and node.kind != "start")
        # an in-memory source (from_arrow, from_records, ...): its events, handed to Spark
        table = _collect(node)
        df = self.spark.createDataFrame(table)
        payload = pa.schema([f for f in table.schema if f.name not in (SYNC_FIELD, OTHER_FIELD)])
        if payload.names:
            df = df.repartition(self.partitions, *columns(df, payload.names))
        else:
            df = df.repartition(self.partitions)
        self._step(f"source {node.label}: {table.num_rows} events into {self.partitions} partitions")
        return _Rel(df, payload)

    def _shuffle(self, df, keys, why: str, by_key: bool = False):
        if keys:
            df = df.repartition(self.partitions, *columns(df, keys))
            self._step(f"shuffle into {self.partitions} partitions by {_fields(keys)}, sort by sync time: {why}")
        else:
            df = df.repartition(1)
            self._step(f"gather into one partition, sort by sync time: {why}")
        if by_key and keys:
            return df.sortWithinPartitions(df[SYNC_FIELD], *[c.asc_nulls_last() for c in columns(df, keys)])
        return _sorted(df)

    def _reduce_one(self, node: PlanNode) -> _Rel:
        child = node.inputs[0]
        if child.props.grouping:
            # inside a group_apply: the Group node already placed every group in one partition, in
            # time order, and the group key travels with the batches, so keep going in the same task
            parent = self.rel(child)
            return replace(parent, chain=(*parent.chain, node))
        keys = tuple(node.partitioning[0])
        parent = self.rel(child)
        fused = self._fusable_keys(parent, keys)
        specs = combinable(parent.chain, node) if fused is not None else None
        if specs is not None:
            from pyspark.sql.pandas.types import from_arrow_schema

            # a map-side combine: partial aggregates per key and window before the shuffle
            combine, partial_payload, final = split_aggregate(parent.chain, parent.schema, node, specs)
            labels = ", ".join(n.label for n in parent.chain)
            df = sql_combine(parent.df, parent.chain, node, specs) if parent.intervals else None
            if df is not None and _disjoint_windows(parent.chain[-1]):
                # Spark's group-by already put each (key, window) whole in one partition, and windows of
                # one key never overlap in time: each partition's snapshots are complete as they are
                self._step(f"aggregate in Spark SQL: {labels}, one row per key and window")
                df = _sorted(df.coalesce(self.partitions))
                self._step("sort by sync time within partitions")
                return _Rel(df, partial_payload, (final,), True)
            if df is not None:
                self._step(f"map-side combine in Spark SQL: {labels}, partial aggregates per key and window")
            else:
                df = parent.df.mapInArrow(combine, from_arrow_schema(physical_schema(partial_payload)))
                self._step(f"map-side combine in each partition: {labels}, partial aggregates per key and window")
            return _Rel(self._shuffle(df, keys, "merge the partials (Aggregate)"), partial_payload, (final,), True)
        if not keys and not node.props.grouping:
            merge = global_partials(node)
            if merge is not None:
                # a decomposable global aggregate: per-partition partials, merged in one partition
                partial = replace(parent, chain=(*parent.chain, node))
                df, schema = self._materialize(partial, note="partial Aggregate")
                return _Rel(self._shuffle(df, (), "merge the partial aggregates"), schema, (merge,), True)
        if fused is not None:
            # the stateless prefix moves after the shuffle into the reducing task: every key field
            # is a source field carried unchanged, so partitioning the source by it places events as
            # partitioning the prefix's output would, and the data crosses into Python once
            why = ", ".join(n.label for n in (*parent.chain, node))
            return _Rel(self._shuffle(parent.df, fused, why), parent.schema, (*parent.chain, node), True)
        df, schema = self.frame(child)
        _check_keys(node, keys, schema)
        return _Rel(self._shuffle(df, keys, node.label), schema, (node,), True)

    def _fusable_keys(self, parent: _Rel, keys: tuple[str, ...]) -> tuple[str, ...] | None:
        """The source fields ``keys`` are copies of, when ``parent``'s chain can run after the shuffle."""
        if not parent.chain or parent.sorted or parent.side_payloads is not None or parent.broadcast is not None:
            return None
        if any(n.partitioning is not None or len(n.inputs) != 1 for n in parent.chain):
            return None
        for n in reversed(parent.chain):
            if isinstance(n, PAYLOAD_KEEPING):
                continue
            parts = n.parts if isinstance(n, NamedSelect) else None
            if parts is None or not all(isinstance(parts.get(k), str) for k in keys):
                return None
            keys = tuple(parts[k] for k in keys)
        return keys if all(k in parent.schema.names for k in keys) else None

    def _reduce_two(self, node: PlanNode) -> _Rel:
        if getattr(node.probe, "build_once", False) and not node.props.grouping:
            return self._broadcast(node, small=0)
        sides = [self.frame(child) for child in node.inputs]
        key_lists = [tuple(k) for k in node.partitioning]
        if len({len(k) for k in key_lists}) != 1:
            raise PlanError(f"{node.label}: both inputs must be partitioned by the same number of fields")
        for keys, (_, schema) in zip(key_lists, sides, strict=True):
            _check_keys(node, keys, schema)
        layout = _co_partition_layout(sides, key_lists)
        tagged = []
        for s, (df, _) in enumerate(sides):
            cols = [SYNC_FIELD, OTHER_FIELD, f"{s} AS {SIDE_FIELD}"]
            for name, (spark_type, sources) in layout.columns.items():
                value = ident(sources[s]) if sources[s] is not None else "NULL"
                cols.append(f"CAST({value} AS {spark_type.simpleString()}) AS {ident(name)}")
            tagged.append(df.selectExpr(*cols))
        both = tagged[0].unionByName(tagged[1])
        side_payloads = tuple(schema for _, schema in sides)
        how = " and ".join(_fields(k) for k in key_lists)
        self._step(f"co-partition both inputs of {node.label} by {how}")
        # within a sync time, by key (nulls last) too: a merge join's inputs (sorted_by their key, or
        # variant="merge") must arrive in key order, which a sort by sync time alone does not keep
        df = self._shuffle(both, layout.keys, node.label, by_key=True)
        return _Rel(df, pa.schema([]), (node,), True, side_payloads, side_columns=layout.side_columns)

    def _broadcast(self, node: PlanNode, small: int) -> _Rel:
        """The ``small`` input collected once and sent whole to every partition of the other input,
        which is neither shuffled nor moved (Trill's asymmetric two-input reduce; Spark's broadcast)."""
        small_df, small_schema = self.frame(node.inputs[small])
        big_df, big_schema = self.frame(node.inputs[1 - small])
        which = ("left", "right")
        self._step(
            f"broadcast {which[small]} of {node.label} to every partition of the {which[1 - small]} "
            f"(not shuffled), sort by sync time within partitions"
        )
        schemas = [None, None]
        schemas[small], schemas[1 - small] = small_schema, big_schema
        if self.explain_only:
            value = None
        else:
            table = small_df.toArrow()
            out = physical_schema(small_schema)
            table = pa.Table.from_arrays([table.column(f.name).cast(f.type) for f in out], schema=out)
            table = table.take(pa.compute.sort_indices(table, [(SYNC_FIELD, "ascending")]))
            value = self.spark.sparkContext.broadcast(ipc_bytes(table))
        return _Rel(_sorted(big_df), big_schema, (node,), True, None, (small, value, schemas))

    def _materialize(self, rel: _Rel, note: str = ""):
        from pyspark.sql.pandas.types import from_arrow_schema

        if not rel.chain:
            return rel.df, rel.schema
        df = rel.df
        if not rel.sorted and not all(isinstance(n, ORDER_FREE) for n in rel.chain):
            df = _sorted(df)
            self._step("sort by sync time within partitions")
        payload = self.payload_schema(rel.chain[-1])
        out = physical_schema(payload)
        if rel.broadcast is not None:
            small, value, schemas = rel.broadcast
            fragment = BroadcastFragment(list(rel.chain), schemas, out, small, value)
        elif rel.side_payloads is None:
            fragment = Fragment(list(rel.chain), [rel.schema], out)
        else:
            fragment = Fragment(list(rel.chain), list(rel.side_payloads), out, side_columns=rel.side_columns)
        labels = ", ".join(n.label for n in rel.chain)
        self._step(f"run in each partition: {labels}" + (f" ({note})" if note else ""))
        return df.mapInArrow(fragment, from_arrow_schema(out)), payload

    # -- schemas ------------------------------------------------------------------------
    def payload_schema(self, node: PlanNode) -> pa.Schema:
        """The node's payload fields; when only known at run time, found by running a sample embedded."""
        if node.schema is not None:
            return node.schema
        if id(node) not in self._schemas:
            sink = CollectSink(None)
            whole = _execute_sampled(node, sink)
            table = sink.table()
            if table.num_rows == 0 and whole:
                # the sample was the whole input and the node outputs nothing: no payload to describe,
                # as an embedded run of the same empty result has none
                self._schemas[id(node)] = pa.schema([])
                return self._schemas[id(node)]
            if table.num_rows == 0:
                raise PlanError(
                    f"{node.label}: its output fields are only known at run time and a sample of the input "
                    "produced no events to learn them from; give the operator a schema (e.g. a select with "
                    "named fields) before running on Spark"
                )
            self._schemas[id(node)] = pa.schema([f for f in table.schema if f.name not in (SYNC_FIELD, OTHER_FIELD)])
        return self._schemas[id(node)]


@dataclass(frozen=True)
class _CoPartition:
    """The columns of a co-partitioned two-input union (see :func:`_co_partition_layout`)."""

    columns: dict  # partition column -> (Spark type, (side 0's field or None, side 1's field or None))
    keys: tuple[str, ...]  # the columns to hash-partition by
    side_columns: tuple[dict[str, str], ...]  # per side: payload field -> partition column


def _co_partition_layout(sides, key_lists) -> _CoPartition:
    """One column per payload field, shared by both sides when they have a field of that name and
    type (a self-join of one source carries each field once, not twice with nulls on the other
    side: the rows crossing into Python are narrower), and key columns of one type on both sides
    so equal keys hash alike (a shared key field is its own key column)."""
    columns: dict[str, list] = {}
    side_columns: list[dict[str, str]] = [{}, {}]
    for s, (df, schema) in enumerate(sides):
        for name in schema.names:
            spark_type = df.schema[name].dataType
            shared = f"__tidal_{name}"
            if shared in columns and columns[shared][1][1 - s] is not None and columns[shared][0] == spark_type:
                column = shared
            else:
                column = shared if shared not in columns else side_field(s, name)
                while column in columns:  # a field whose own name looks like another's column
                    column = f"_{column}"
                columns[column] = [spark_type, [None, None]]
            columns[column][1][s] = name
            side_columns[s][name] = column
    keys = []
    for i, (left, right) in enumerate(zip(*key_lists, strict=True)):
        left_column, right_column = side_columns[0][left], side_columns[1][right]
        if left_column == right_column:
            keys.append(left_column)
            continue
        key_type = sides[0][0].schema[left].dataType
        name = f"__tidal_key{i}"
        while name in columns:
            name = f"_{name}"
        columns[name] = [key_type, [left, right]]
        keys.append(name)
    frozen = {name: (t, tuple(src)) for name, (t, src) in columns.items()}
    return _CoPartition(frozen, tuple(keys), tuple(side_columns))


def _sorted(df):
    """``df`` sorted by sync time within each partition."""
    return df.sortWithinPartitions(df[SYNC_FIELD])


def _disjoint_windows(node: PlanNode) -> bool:
    """Whether every lifetime out of ``node`` is a window of a grid whose windows never overlap
    (tumbling, or a window no longer than its hop)."""
    props = node.props
    return (
        props.constant_hop is not None
        and props.constant_duration is not None
        and (props.constant_duration <= props.constant_hop[0])
    )


def _fields(names) -> str:
    return "(" + ", ".join(names) + ")"


def _check_keys(node: PlanNode, keys: tuple[str, ...], schema: pa.Schema) -> None:
    missing = [k for k in keys if k not in schema.names]
    if missing:
        raise PlanError(f"{node.label}: partitioning field(s) {missing} are not in its input fields {schema.names}")


def _in_memory(node: PlanNode) -> bool:
    return isinstance(node, Source) and not isinstance(node, SparkSourceNode)


def _collect(node: PlanNode) -> pa.Table:
    sink = CollectSink(node.schema)
    execute(node, sink)
    return sink.table()


def _sample_messages(node: SparkSourceNode, truncated: list[bool]):
    if node.df.isStreaming:
        raise PlanError("cannot sample a streaming DataFrame to learn a schema; give the fields explicitly")
    from ..stream.sources import from_arrow

    table = node.df.limit(SAMPLE_ROWS).toArrow().sort_by(node.time)
    truncated.append(table.num_rows >= SAMPLE_ROWS)
    return from_arrow(table, node.time, node.end, other=node.other, kind=node.kind).node.open_messages()


def _execute_sampled(root: PlanNode, sink) -> bool:
    """Run ``root`` embedded over samples of its Spark sources (for output schemas); True when
    every sample was its whole source (in-memory sources always run whole)."""
    truncated: list[bool] = []

    def sampled(node: PlanNode, consumers) -> PlanNode:
        if isinstance(node, SparkSourceNode):
            return node.but(open_messages=lambda: _sample_messages(node, truncated))
        return node

    execute(apply_rule([root], sampled)[0], sink)
    return not any(truncated)


def _spark_of(node: PlanNode):
    if isinstance(node, SparkSourceNode):
        return node.df.sparkSession
    for child in node.inputs:
        found = _spark_of(child)
        if found is not None:
            return found
    return None


def _planned(stream: Stream) -> PlanNode:
    """The plan Spark runs: the stream's, rewritten by the rules that hold on any backend."""
    return optimize([stream.node], PORTABLE_RULES)[0]


def to_spark(stream: Stream, *, partitions: int | None = None, spark=None):
    """The stream's physical events as a Spark DataFrame: ``sync_time, other_time``, then payload.

    ``partitions`` is the number of partitions of every shuffle (default: Spark's default
    parallelism). Nothing runs until the DataFrame is used, except the small side of a broadcast
    join, which is collected here.
    """
    from .session import spark_session

    spark = spark or _spark_of(stream.node) or spark_session()
    partitions = partitions or spark.sparkContext.defaultParallelism
    df, _ = SparkPlanner(spark, partitions).frame(_planned(stream))
    return df


def explain(stream: Stream, *, partitions: int | None = None, spark=None) -> str:
    """The Spark steps that run ``stream`` (sources, map stages, shuffles, broadcasts), inputs first.

    Nothing runs, except that fields known only at run time are learned from a sample."""
    from .session import spark_session

    spark = spark or _spark_of(stream.node) or spark_session()
    planner = SparkPlanner(spark, partitions or spark.sparkContext.defaultParallelism, explain_only=True)
    return planner.explain(_planned(stream))


def to_arrow(stream: Stream, *, partitions: int | None = None, spark=None) -> pa.Table:
    """Run the stream on Spark and collect its physical events in :func:`canonical_order` (by sync time,
    then other time and payload: the same order on every run and partitioning; ``stream.to_arrow()``
    gives the same events, with ties within one sync time in its operators' order)."""
    from .session import spark_session

    spark = spark or _spark_of(stream.node) or spark_session()
    df, payload = SparkPlanner(spark, partitions or spark.sparkContext.defaultParallelism).frame(_planned(stream))
    table = df.toArrow()
    # Spark's types come back a little different (naive timestamps as UTC ones): restore the plan's
    table = pa.Table.from_arrays(
        [table.column(f.name).cast(f.type) for f in physical_schema(payload)], schema=physical_schema(payload)
    )
    return table.take(pa.compute.sort_indices(table, canonical_order(table)))


def canonical_order(table: pa.Table) -> list[tuple[str, str]]:
    """The order :func:`to_arrow` returns events in, whatever the partitioning: by sync time, then other
    time, then the payload columns that have an order (nested values, such as top_k's lists, do not)."""
    keys = [SYNC_FIELD, OTHER_FIELD]
    for field in table.schema:
        if field.name not in keys and not pa.types.is_nested(field.type) and not pa.types.is_null(field.type):
            keys.append(field.name)
    return [(k, "ascending") for k in keys if k in table.schema.names]


def to_changelog(stream: Stream, *, partitions: int | None = None, spark=None) -> pa.Table:
    """Run on Spark and collect ``time, undo, payload...`` (inserts and retractions in time order)."""
    from ..io.egress import changelog_from_table

    return changelog_from_table(to_arrow(stream, partitions=partitions, spark=spark))
