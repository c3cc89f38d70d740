"""Map-side combine for windowed aggregates on Spark: partial aggregates before the shuffle.

Semantics: after a window every event lives ``[w, w+d)`` on the window grid, and at each
instant an aggregate sees the multiset of events alive then. Events of one key with the same
lifetime are alive at exactly the same instants, so they can be replaced, before the shuffle,
by one event with that lifetime carrying their partial aggregate (a count, an integer sum, a
minimum, a maximum). After the shuffle the reducing task aggregates the partials (sums of
counts and sums, minimum of minima, maximum of maxima): every snapshot's result is the one
of the original events, while the shuffle moves one row per key, window and partition instead
of one per event (the combiner of map-reduce; Spark's own ``window()`` aggregation does the
same). Integer arithmetic is exact, so regrouping never changes an answer; floating-point
sums, averages and order-dependent aggregates are left to the plain path.

The events before the shuffle need no sort: the window and the other per-event operators see
one event at a time, so each Arrow batch is sorted on its own and run through a fresh chain.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np
import pyarrow as pa

from ..core.batch import OTHER_FIELD, SYNC_FIELD
from ..core.time import INFINITY
from ..plan.node import PlanNode
from ..plan.nodes import Aggregate as AggregateNode
from ..plan.nodes import (
    AlterLifetime,
    HoppingWindow,
    Multicast,
    NamedSelect,
    Select,
    ShiftLifetime,
    Source,
    Where,
)
from ..stream.streamable import Stream
from .fragment import _Collect, conform, detach, physical
from .sqltext import columns, ident

# operators that change each event on its own (no state across events, edges included)
PER_EVENT = (Where, Select, NamedSelect, Multicast, ShiftLifetime, AlterLifetime, HoppingWindow)
# aggregate kind -> (pyarrow function for the partial, pyarrow function merging partials, final tidal kind)
COMBINE = {
    "count": ("count", "sum", "sum"),
    "count_not_null": ("count", "sum", "sum"),
    "sum": ("sum", "sum", "sum"),
    "min": ("min", "min", "min"),
    "max": ("max", "max", "max"),
}
MERGE_ROWS = 1_000_000  # merge accumulated partials once they hold this many rows
CHUNK_ROWS = 131_072  # input rows combined per step (few large steps: grouping has a fixed cost per call)


def partial_column(i: int) -> str:
    return f"__tidal_partial{i}"


class PartialCombine:
    """mapInArrow function: per-event chain, then partial aggregates per key and lifetime."""

    def __init__(self, chain: list[PlanNode], in_payload: pa.Schema, keys, parts, out_payload: pa.Schema):
        self.nodes = [detach(n) for n in chain]
        self.in_payload = in_payload
        self.keys = list(keys)
        self.parts = parts  # [(argument field or None, partial function, merge function)]
        self.out_schema = physical(out_payload)

    def _events(self, rb: pa.RecordBatch) -> list[pa.RecordBatch]:
        from ..core.batch import EventBatch

        ops = [n.make() for n in self.nodes]
        for i in range(1, len(ops)):
            ops[i - 1].downstream.append(self.nodes[i].ports(ops[i])[0])
        sink = _Collect()
        ops[-1].downstream.append(sink)
        head = self.nodes[0].ports(ops[0])[0]
        head.on_batch(EventBatch.from_record_batch(rb))
        head.on_punctuation(INFINITY)
        head.on_completed()
        return sink.out

    def _group(self, table: pa.Table, aggs: list[tuple[str, str]], names: list[str]) -> pa.Table:
        # every lifetime has the same length, so (key, start) determines the end: group by fewer columns
        group = [*self.keys, SYNC_FIELD]
        out = table.group_by(group, use_threads=False).aggregate([*aggs, (OTHER_FIELD, "min")])
        cols = [f"{c}_{fn}" for c, fn in aggs]
        out = out.select([*group, f"{OTHER_FIELD}_min", *cols])
        return out.rename_columns([*group, OTHER_FIELD, *names])

    def _partials(self, table: pa.Table) -> pa.Table:
        aggs = [(arg or SYNC_FIELD, fn) for arg, fn, _ in self.parts]
        return self._group(table, aggs, [partial_column(i) for i in range(len(aggs))])

    def _merge(self, tables: list[pa.Table]) -> pa.Table:
        aggs = [(partial_column(i), merge) for i, (_, _, merge) in enumerate(self.parts)]
        return self._group(pa.concat_tables(tables), aggs, [c for c, _ in aggs])

    def _step(self, pending: list[pa.RecordBatch]) -> pa.Table | None:
        table = pa.Table.from_batches(pending).combine_chunks()
        rb = table.to_batches()[0]
        order = np.argsort(rb.column(SYNC_FIELD).to_numpy())  # ties: order-free here
        events = self._events(rb.take(pa.array(order)))
        return self._partials(pa.Table.from_batches(events)) if events else None

    def __call__(self, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        acc: list[pa.Table] = []
        rows = 0
        in_schema = physical(self.in_payload)
        pending: list[pa.RecordBatch] = []
        pending_rows = 0
        for rb in [*batches, None]:
            if rb is not None and rb.num_rows:
                pending.append(conform(rb, in_schema))
                pending_rows += rb.num_rows
            if not pending or (rb is not None and pending_rows < CHUNK_ROWS):
                continue
            part = self._step(pending)
            pending, pending_rows = [], 0
            if part is None:
                continue
            acc.append(part)
            rows += part.num_rows
            if rows >= MERGE_ROWS and len(acc) > 1:
                acc = [self._merge(acc)]
                rows = acc[0].num_rows
        if acc:
            merged = self._merge(acc) if len(acc) > 1 else acc[0]
            for rb in merged.to_batches():
                yield conform(rb, self.out_schema)


def combinable(chain: tuple[PlanNode, ...], agg_node: PlanNode) -> list | None:
    """The aggregate's (name, kind, argument) list when a map-side combine keeps its answers."""
    if not chain or not isinstance(agg_node, AggregateNode) or agg_node.props.grouping:
        return None
    if not all(isinstance(n, PER_EVENT) for n in chain):
        return None
    props = chain[-1].props
    schema = chain[-1].schema
    # every event an interval of one length on a grid: many share a lifetime
    if props.constant_duration is None or props.constant_hop is None or schema is None:
        return None
    keys = tuple(agg_node.partitioning[0])
    if not keys:
        return None
    op = agg_node.probe
    if getattr(op, "user_results", None):
        return None
    specs = []
    for name, fn in op.fns:
        if fn.kind not in COMBINE or fn.param is not None or fn.udf is not None:
            return None
        if fn.kind != "count":
            if not isinstance(fn.arg, str) or fn.arg not in schema.names:
                return None
            if not pa.types.is_integer(schema.field(fn.arg).type):
                return None
        specs.append((name, fn.kind, fn.arg if fn.kind != "count" else None))
    return specs


def split_aggregate(chain, in_payload: pa.Schema, agg_node: PlanNode, specs):
    """(pre-shuffle PartialCombine, partial payload schema, final aggregate node over the partials)."""
    schema = chain[-1].schema
    keys = tuple(agg_node.partitioning[0])
    parts, fields = [], [schema.field(k) for k in keys]
    final = {}
    for i, (name, kind, arg) in enumerate(specs):
        partial_fn, merge_fn, final_kind = COMBINE[kind]
        parts.append((arg, partial_fn, merge_fn))
        ptype = pa.int64() if partial_fn in ("count", "sum") else schema.field(arg).type
        fields.append(pa.field(partial_column(i), ptype))
        final[name] = (final_kind, partial_column(i))
    payload = pa.schema(fields)
    from .. import agg

    source = Source(lambda: iter(()), payload, chain[-1].props, "partial aggregates")
    makers = {"sum": agg.sum, "min": agg.min, "max": agg.max}
    stream = Stream(source).group_aggregate(list(keys), **{n: makers[k](c) for n, (k, c) in final.items()})
    combine = PartialCombine(list(chain), in_payload, keys, parts, payload)
    return combine, payload, stream.node


# a global aggregate's partial kind -> how the per-partition results merge
GLOBAL_MERGE = {"count": "sum", "count_not_null": "sum", "sum": "sum", "min": "min", "max": "max"}


def global_partials(agg_node: PlanNode) -> PlanNode | None:
    """For a global aggregate (no key) whose aggregates merge exactly, the node merging its partials.

    The aggregate runs unchanged in every partition (each partition's snapshot aggregate over
    the events it holds); at each instant the global answer is the sum of the partitions'
    counts and integer sums, the minimum of their minima, the maximum of their maxima. A
    partition with no event alive has no row then, and adds nothing. The merge node reads the
    partials (the aggregate's own output fields) and writes the same fields and types.
    """
    if not isinstance(agg_node, AggregateNode) or agg_node.partitioning != ((),) or agg_node.props.grouping:
        return None
    schema = agg_node.schema
    if schema is None:
        return None
    op = agg_node.make()
    if getattr(op, "user_results", None):
        return None
    merges = {}
    for name, fn in op.fns:
        merge = GLOBAL_MERGE.get(fn.kind)
        if merge is None or fn.param is not None or fn.udf is not None:
            return None
        out_type = schema.field(name).type
        exact = pa.types.is_integer(out_type) or (merge != "sum" and pa.types.is_floating(out_type))
        if not exact:  # floating-point sums depend on the order of additions: left whole
            return None
        merges[name] = merge
    from .. import agg

    makers = {"sum": agg.sum, "min": agg.min, "max": agg.max}
    source = Source(lambda: iter(()), schema, agg_node.props, "partial aggregates")
    merged = Stream(source).aggregate(**{name: makers[m](name) for name, m in merges.items()})
    if not merged.schema.equals(schema):
        return None
    return merged.node


def sql_combine(df, chain: tuple[PlanNode, ...], agg_node: PlanNode, specs):
    """The map-side combine as Spark SQL, when the prefix is one window over intervals.

    ``df`` holds intervals (no edges; ``sync_time, other_time``, payload). A tumbling or
    hopping window moves each start down to the hop grid and gives every event the window's
    length (dropping events in the gaps of a window shorter than its hop), so the partial
    aggregates per key and window are a relational group-by on ``(key, window start)`` that
    Spark's own hash aggregation runs in the JVM; only the partials then cross into Python.
    Returns the DataFrame of partials in the layout of :class:`PartialCombine`'s output, or
    None when the prefix is something else.
    """
    from pyspark.sql import functions as F

    if len(chain) != 1 or not isinstance(chain[0], HoppingWindow) or chain[0].align != "start":
        return None
    props = chain[0].props
    if props.constant_duration is None or props.constant_hop is None:
        return None
    hop, offset = props.constant_hop
    duration = int(props.constant_duration)
    keys = list(agg_node.partitioning[0])
    phase = f"pmod({SYNC_FIELD} - {offset}L, {hop}L)"
    if duration < hop:  # a window shorter than its hop: events in the gaps belong to no window
        df = df.where(f"{phase} < {duration}L")
    aggs = []
    for i, (_, kind, arg) in enumerate(specs):
        name = partial_column(i)
        value = ident(arg) if arg is not None else None
        if kind == "count":
            aggs.append(f"count(1) AS {name}")
        elif kind == "count_not_null":
            aggs.append(f"count({value}) AS {name}")
        elif kind == "sum":
            aggs.append(f"sum(CAST({value} AS BIGINT)) AS {name}")
        else:
            aggs.append(f"{kind}({value}) AS {name}")
    fields = list(dict.fromkeys([*keys, *(arg for _, _, arg in specs if arg is not None)]))
    grouped = df.selectExpr(f"{SYNC_FIELD} - {phase} AS {SYNC_FIELD}", *[ident(n) for n in fields])
    out = grouped.groupBy(*columns(grouped, [*keys, SYNC_FIELD])).agg(*[F.expr(a) for a in aggs])
    partials = [partial_column(i) for i in range(len(specs))]
    other = f"{SYNC_FIELD} + {duration}L AS {OTHER_FIELD}"
    return out.selectExpr(SYNC_FIELD, other, *[ident(k) for k in keys], *partials)
