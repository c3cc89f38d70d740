"""The fluent streaming API: immutable :class:`Stream` objects that build a plan.

Every method returns a new stream; nothing runs until an egress method (``to_arrow``,
``to_events``, ``to_intervals``, ``to_changelog``, ``to_pandas``, ``subscribe``) is called.
Each egress call runs the query from its sources (a stream over a one-shot Python
iterator can be consumed once).
"""

from __future__ import annotations

import hashlib

import numpy as np
import pyarrow as pa

from ..core.errors import PlanError
from ..core.time import align_down
from ..expr.compile import CompiledLambda, projection_schema
from ..io import egress
from ..ops.aggregate import MODE_WINDOW, FusedWindowAggregateOp, SnapshotAggregateOp, choose_mode
from ..ops.aggregate.functions import AggregateFunction, result_type, user_defined
from ..ops.grouping import GroupOp, UngroupOp
from ..ops.lifetime import (
    AlterLifetimeOp,
    ChopOp,
    ClipDurationOp,
    ExtendLifetimeOp,
    PointAtEndOp,
    QuantizeLifetimeOp,
    ShiftLifetimeOp,
)
from ..ops.selection import SelectManyOp, SelectOp, WhereOp
from ..ops.session import DistinctOp, SessionWindowOp, StitchOp
from ..ops.union import UnionOp
from .plan import OperatorNode, PlanNode, Properties, explain
from .query import Query, execute


def _positive(name: str, value: int) -> int:
    if not isinstance(value, int | np.integer) or value <= 0:
        raise PlanError(f"{name} must be a positive integer number of ticks, got {value!r}")
    return int(value)


_KEEP = object()  # _derive: the payload fields do not change


class Stream:
    """A temporal stream: a plan that produces events in sync-time order."""

    def __init__(self, node: PlanNode):
        self._node = node

    # -- introspection ----------------------------------------------------------------
    @property
    def schema(self) -> pa.Schema | None:
        """The payload fields (None when they are only known once the query runs)."""
        return self._node.schema

    @property
    def properties(self) -> Properties:
        return self._node.props

    def explain(self) -> str:
        """The physical plan: each operator, its variant (columnar or row mode), its properties."""
        return explain(self._node)

    def _derive(self, label, factory, schema=_KEEP, props=None, inputs=None, detail="") -> Stream:
        """A stream one operator further; ``schema`` defaults to this stream's, ``None`` means unknown."""
        node = OperatorNode(
            label,
            inputs or (self._node,),
            self._node.schema if schema is _KEEP else schema,
            self._node.props if props is None else props,
            factory,
            detail,
        )
        return Stream(node)

    # -- stateless payload operators --------------------------------------------------
    def where(self, predicate) -> Stream:
        """Keep the events whose payload satisfies ``predicate`` (a lambda over a row)."""
        window = getattr(self._node, "window", None)
        if window is not None:
            # a filter reads payloads only and a window changes lifetimes only: filtering first keeps the
            # same events, does the window's work for fewer of them, and lets an aggregate fuse with it
            return Stream(self._node.inputs[0]).where(predicate).hopping_window(*window)
        schema = self.schema
        make = lambda: WhereOp(CompiledLambda(predicate, schema, truth=True))  # noqa: E731
        make()  # validate fields now, not at run time
        return self._derive("Where", make)

    def select(self, *fields: str, **named) -> Stream:
        """Project each payload: ``select(lambda e: {...})``, ``select("a", "b")`` or ``select(x=lambda e: ...)``."""
        if len(fields) == 1 and callable(fields[0]) and not named:
            fn = fields[0]
        elif named and not fields:
            return self._select_named(named)
        elif fields and all(isinstance(f, str) for f in fields) and not named:
            missing = [f for f in fields if self.schema is not None and f not in self.schema.names]
            if missing:
                raise PlanError(f"select: unknown field(s) {missing}; fields are {self.schema.names}")
            return self._select_named({f: f for f in fields})
        else:
            raise PlanError("select takes one lambda, field names, or name=lambda keywords")
        schema = self.schema
        probe = CompiledLambda(fn, schema, truth=False)
        out_schema = projection_schema(probe, schema)
        return self._derive(
            "Select",
            lambda: SelectOp(CompiledLambda(fn, schema, truth=False)),
            schema=out_schema,
            props=self.properties.but(sorted_by=()),  # a lambda may rewrite the sorted fields
        )

    def _select_named(self, named: dict, keep_grouping: bool = True) -> Stream:
        # build a record lambda equivalent: each value is a field name or a one-row lambda
        schema = self.schema
        parts = dict(named)
        compiled = {
            k: CompiledLambda(v, schema, truth=False, allow_record=False)
            for k, v in parts.items()
            if not isinstance(v, str)
        }
        out_fields = []
        for k, v in named.items():
            if isinstance(v, str):
                if schema is None:
                    out_fields = None
                    break
                out_fields.append(pa.field(k, schema.field(v).type))
            else:
                s = projection_schema(compiled[k], schema)
                if s is None:
                    out_fields = None
                    break
                out_fields.append(pa.field(k, s.field(0).type))
        out_schema = pa.schema(out_fields) if out_fields is not None else None
        props = self.properties.but(sorted_by=_renamed_sort(self.properties.sorted_by, named))
        return self._derive("Select", lambda: _NamedSelectOp(parts, schema), schema=out_schema, props=props)

    def select_many(self, fn) -> Stream:
        """Map each payload to zero or more payloads (``fn`` returns an iterable), keeping lifetimes."""
        schema = self.schema
        out = self._derive(
            "SelectMany",
            lambda: SelectManyOp(CompiledLambda(fn, schema, truth=False)),
            props=self.properties.but(sorted_by=()),
        )
        out._node.schema = None  # the payload fields are whatever fn returns: known at run time
        return out

    # -- lifetimes --------------------------------------------------------------------
    def shift_lifetime(self, delta: int) -> Stream:
        """Move every lifetime by ``delta`` ticks: ``[s+d, e+d)``."""
        hop = self.properties.constant_hop
        props = self.properties.but(constant_hop=None if hop is None else (hop[0], hop[1] + int(delta)))
        return self._derive("ShiftLifetime", lambda: ShiftLifetimeOp(delta), props=props)

    def alter_lifetime(self, start=None, duration=None) -> Stream:
        """``[f(s), f(s)+d)``; ``start`` maps a start time (non-decreasing), ``duration`` an int or f(s)."""
        if duration is not None and isinstance(duration, int | np.integer):
            _positive("duration", duration)
        props = self.properties.but(
            constant_duration=int(duration) if isinstance(duration, int | np.integer) else None,
            start_edge_only=self.properties.start_edge_only and duration is None,
            constant_hop=None,
            # a new start function moves events of several sync times together; a duration alone moves none
            sorted_by=self.properties.sorted_by if start is None else (),
        )
        return self._derive("AlterLifetime", lambda: AlterLifetimeOp(start, duration), props=props)

    def alter_duration(self, duration) -> Stream:
        """Every event lives ``duration`` ticks from its start: ``[s, s+d)``."""
        return self.alter_lifetime(duration=duration)

    def hopping_window(self, size: int, hop: int, offset: int = 0) -> Stream:
        """Windows of ``size`` ticks starting every ``hop`` ticks (grid ``offset + k*hop``)."""
        size, hop = _positive("size", size), _positive("hop", hop)
        offset = int(offset)
        start = lambda t: align_down(t, hop, offset)  # noqa: E731
        keep = None
        if hop > size:
            keep = lambda t: (t - offset) % hop < size  # noqa: E731
            duration: object = size
        elif size % hop == 0:
            duration = size
        else:
            duration = lambda t: align_down(t + size, hop, offset) - align_down(t, hop, offset)  # noqa: E731
        props = self.properties.but(
            constant_duration=duration if isinstance(duration, int) else None,
            constant_hop=(hop, offset % hop),
            start_edge_only=False,
            sorted_by=(),  # starts move: events of several sync times meet
        )
        label = f"window size {size}, hop {hop}, offset {offset}"
        kind = "TumblingWindow" if size == hop else "HoppingWindow"
        out = self._derive(
            kind,
            lambda: AlterLifetimeOp(
                start, duration, keep=keep, label=label, grid=(hop, offset, size if hop > size else -1)
            ),
            props=props,
        )
        out._node.window = (size, hop, offset)  # an aggregate right after may fuse with it
        return out

    def tumbling_window(self, size: int, offset: int = 0) -> Stream:
        """Non-overlapping windows of ``size`` ticks: a hopping window whose hop is its size."""
        return self.hopping_window(size, size, offset)

    def clip_duration(self, limit: int) -> Stream:
        """End every lifetime at most ``limit`` ticks after it starts: ``[s, min(e, s+limit))``."""
        limit = _positive("limit", limit)
        cd = self.properties.constant_duration
        props = self.properties.but(
            constant_duration=min(cd, limit) if cd is not None else None, start_edge_only=False, sorted_by=()
        )
        return self._derive("ClipDuration", lambda: ClipDurationOp(limit), props=props)

    def extend_lifetime(self, delta: int) -> Stream:
        """End every lifetime ``delta`` ticks later: ``[s, e+d)``."""
        cd = self.properties.constant_duration
        props = self.properties.but(constant_duration=None if cd is None else cd + int(delta), sorted_by=())
        return self._derive("ExtendLifetime", lambda: ExtendLifetimeOp(delta), props=props)

    def quantize_lifetime(self, size: int, hop: int | None = None, offset: int = 0) -> Stream:
        """Snap starts down and ends up to the hop grid: ``[snap(s), snap(e-1)+size)``."""
        size = _positive("size", size)
        hop = size if hop is None else _positive("hop", hop)
        props = self.properties.but(constant_duration=None, constant_hop=(hop, int(offset) % hop), sorted_by=())
        return self._derive("QuantizeLifetime", lambda: QuantizeLifetimeOp(size, hop, offset), props=props)

    def point_at_end(self) -> Stream:
        """Replace each lifetime that ends by a point at its end: ``[e, e+1)``."""
        props = self.properties.but(constant_duration=1, constant_hop=None, start_edge_only=False, sorted_by=())
        return self._derive("PointAtEnd", PointAtEndOp, props=props)

    def chop(self, period: int, offset: int = 0) -> Stream:
        """Split lifetimes at every ``offset + k*period``, open ones as time passes (snapshots unchanged)."""
        period = _positive("period", period)
        props = self.properties.but(constant_duration=None, sorted_by=())
        return self._derive("Chop", lambda: ChopOp(period, offset), props=props)

    # -- stateful lifetimes (tidal.ops.session) ------------------------------------------------
    def session_window(self, timeout: int, max_duration: int | None = None, lifetime: str = "session") -> Stream:
        """Cut each group's events into sessions: a gap of ``timeout`` ticks (or a multiple of
        ``max_duration``) ends one. Every event lives through its session ``[S, E)``
        (``lifetime="event"``: ``[s, E)``, Trill's SessionTimeoutWindow), ``E`` being the last
        start plus ``timeout``, capped at the next ``max_duration`` grid point."""
        timeout = _positive("timeout", timeout)
        max_duration = None if max_duration is None else _positive("max_duration", max_duration)
        make = lambda: SessionWindowOp(timeout, max_duration, lifetime)  # noqa: E731
        make()  # validate arguments now
        props = self.properties.but(constant_duration=None, constant_hop=None, start_edge_only=False, sorted_by=())
        stream = self._derive("SessionWindow", make, props=props)
        stream._node.partitioning = (self.properties.grouping,)
        return stream

    def stitch(self) -> Stream:
        """Coalesce lifetimes of equal payloads (adjacent ones join; snapshots unchanged)."""
        props = self.properties.but(constant_duration=None, constant_hop=None, sorted_by=())
        stream = self._derive("Stitch", StitchOp, props=props)
        stream._node.partitioning = (self.properties.grouping,)
        return stream

    def distinct(self) -> Stream:
        """At every instant, each distinct payload of the snapshot once (per group)."""
        props = self.properties.but(constant_duration=None, constant_hop=None, sorted_by=())
        stream = self._derive("Distinct", DistinctOp, props=props)
        stream._node.partitioning = (self.properties.grouping,)
        return stream

    # -- combining ----------------------------------------------------------------------
    def union(self, other: Stream) -> Stream:
        """The temporal merge: at every instant, the multiset union of both snapshots."""
        a, b = self.schema, other.schema
        if a is not None and b is not None and not a.equals(b):
            raise PlanError(f"union needs the same payload fields and types on both sides: {a} vs {b}")
        props = Properties(
            constant_duration=self.properties.constant_duration
            if self.properties.constant_duration == other.properties.constant_duration
            else None,
            constant_hop=self.properties.constant_hop
            if self.properties.constant_hop == other.properties.constant_hop
            else None,
            start_edge_only=self.properties.start_edge_only and other.properties.start_edge_only,
            grouping=self.properties.grouping if self.properties.grouping == other.properties.grouping else (),
        )
        return self._derive(
            "Union", UnionOp, schema=a if a is not None else b, props=props, inputs=(self._node, other._node)
        )

    # -- joins (tidal/ops/join.py states the temporal semantics) -----------------------
    def join(
        self,
        other: Stream,
        left_key,
        right_key,
        result=None,
        *,
        left_is_small: bool = False,
        variant: str | None = None,
    ) -> Stream:
        """Temporal equi-join: each key-equal pair whose lifetimes overlap, over their intersection.

        Keys are a field name, a list of field names, or a row lambda. ``result(l, r)`` builds
        the payload (default: left fields then right fields; a clashing right name gets
        ``_right``). ``left_is_small=True`` picks the build-once variant: the right waits until
        the (finite) left has completed, the left is indexed once, and right intervals probe it
        without being stored. When both inputs are sorted by their (one-field, integer-like) keys
        within each sync time (``Properties.sorted_by``, e.g. ``from_arrow(..., sorted_by="k")``),
        the join merges instead of hashing; ``variant="hash"`` or ``"merge"`` forces a choice.
        """
        return self._join("inner", other, left_key, right_key, result, build_once=left_is_small, variant=variant)

    def left_outer_join(self, other: Stream, left_key, right_key, result=None) -> Stream:
        """The join plus, at every instant, each left row with no partner alive, right fields null."""
        return self._join("left_outer", other, left_key, right_key, result)

    def full_outer_join(self, other: Stream, left_key, right_key, result=None) -> Stream:
        """The left outer join plus each right row with no partner alive, left fields null."""
        return self._join("full_outer", other, left_key, right_key, result)

    def cross_join(self, other: Stream, result=None) -> Stream:
        """Every pair of events whose lifetimes overlap (within the same group on grouped streams)."""
        return self._join("inner", other, None, None, result)

    def where_exists(self, other: Stream, left_key, right_key) -> Stream:
        """Semi-join: keep each left event while some key-equal right event is alive."""
        return self._join("exists", other, left_key, right_key, None)

    def where_not_exists(self, other: Stream, left_key, right_key) -> Stream:
        """Anti-join: keep each left event while no key-equal right event is alive."""
        return self._join("not_exists", other, left_key, right_key, None)

    def clip(self, other: Stream, left_key, right_key) -> Stream:
        """End each left lifetime at the next start of a key-equal right event (Trill's ClipEventDuration)."""
        return self._join("clip", other, left_key, right_key, None)

    def _join(
        self, mode: str, other: Stream, left_key, right_key, result, build_once: bool = False, variant=None
    ) -> Stream:
        from ..ops.join import JoinOp, key_spec, output_names, result_types

        if not isinstance(other, Stream):
            raise PlanError(f"{mode} join: the other input must be a Stream, got {type(other).__name__}")
        ls, rs = self.schema, other.schema
        lp, rp = self.properties, other.properties
        probe = JoinOp(mode, left_key, right_key, ls, rs, lp, rp, result, build_once, variant)  # validates keys now
        lk, rk = key_spec(left_key), key_spec(right_key)
        if (lk[0] == "none") != (rk[0] == "none"):
            raise PlanError("give both join keys or neither (a cross join)")
        if lk[0] == "fields" and rk[0] == "fields" and len(lk[1]) != len(rk[1]):
            raise PlanError(f"join keys have different numbers of fields: {list(lk[1])} vs {list(rk[1])}")
        if mode in ("exists", "not_exists", "clip"):
            schema = ls
        elif result is not None:
            types = result_types(result, ls, rs)
            schema = None if types is None else pa.schema(list(types.items()))
        elif ls is None or rs is None:
            schema = None
        else:
            names = output_names(ls.names, rs.names)
            schema = pa.schema([pa.field(n, f.type) for n, f in zip(names, list(ls) + list(rs), strict=True)])
        both_start = lp.start_edge_only and rp.start_edge_only
        seo = {"inner": both_start, "exists": both_start}.get(mode, False)
        props = Properties(start_edge_only=seo, grouping=lp.grouping)
        label = {
            "inner": "CrossJoin" if lk[0] == "none" else "Join",
            "left_outer": "LeftOuterJoin",
            "full_outer": "FullOuterJoin",
            "exists": "WhereExists",
            "not_exists": "WhereNotExists",
            "clip": "Clip",
        }[mode]
        stream = self._derive(
            label,
            lambda: JoinOp(mode, left_key, right_key, ls, rs, lp, rp, result, build_once, variant),
            schema=schema,
            props=props,
            inputs=(self._node, other._node),
        )
        stream._node._probe = probe
        # a distributed backend must bring equal keys together; lambda keys name no field,
        # so they (and a cross join) need each input whole in one partition
        lfields = lk[1] if lk[0] == "fields" else ()
        rfields = rk[1] if rk[0] == "fields" else ()
        if not lfields or not rfields:
            lfields = rfields = ()
        stream._node.partitioning = (tuple(lfields), tuple(rfields))
        return stream

    def multicast(self, fn=None):
        """Share this stream between several consumers in one query (built and run once).

        ``multicast()`` returns the stream itself, marked for sharing; ``multicast(fn)``
        returns ``fn(stream)``, for queries that use a stream more than once.
        """
        shared = self._derive("Multicast", _passthrough)
        return shared if fn is None else fn(shared)

    # -- grouping and aggregation -------------------------------------------------------------
    def aggregate(
        self,
        *fns,
        initial_state=None,
        accumulate=None,
        deaccumulate=None,
        difference=None,
        compute_result=None,
        variant: str | None = None,
        engine: str | None = None,
        **named,
    ) -> Stream:
        """Snapshot aggregate: at every instant, one row of aggregates over the events alive then.

        ``aggregate(agg.count(), total=agg.sum("v"))``, or a user-defined aggregate with
        ``initial_state=``, ``accumulate=``, ``deaccumulate=``, ``difference=``,
        ``compute_result=``. On a grouped stream (inside ``group_apply``) one row per key.
        ``variant`` forces a physical variant (``"start_edge"``, ``"fifo"``, ``"general"``,
        ``"window"``); by default it comes from the stream's properties. ``engine`` forces
        ``"compiled"`` or ``"python"`` evaluation (tests use it; the default picks compiled
        kernels whenever they can evaluate every aggregate).
        """
        if accumulate is not None or initial_state is not None:
            if initial_state is None or accumulate is None:
                raise PlanError("a user-defined aggregate needs at least initial_state= and accumulate=")
            named = {"aggregate": user_defined(initial_state, accumulate, deaccumulate, difference, compute_result)}
        specs = _name_aggregates(fns, named)
        return self._aggregate_node(specs, (), variant, engine)

    def group_aggregate(self, key, *fns, variant: str | None = None, engine: str | None = None, **named) -> Stream:
        """Aggregates per key and snapshot; the result holds the key fields, then the aggregates."""
        specs = _name_aggregates(fns, named)
        source, fields, drop = self._keyed(key)
        if self.properties.grouping:
            return self.group_apply(key, lambda g: g.aggregate(*fns, variant=variant, engine=engine, **named))
        clash = [name for name, _ in specs if name in fields]
        if clash:
            raise PlanError(f"aggregate name(s) {clash} clash with key field(s); name them, e.g. total=agg.sum(...)")
        return source._aggregate_node(specs, fields, variant, engine)

    def _aggregate_node(self, specs, key_fields: tuple[str, ...], variant, engine=None) -> Stream:
        schema, props = self.schema, self.properties
        force = None if variant == "fused" else variant  # unfused (e.g. on Spark), "fused" is the window variant
        mode = choose_mode(props, force)
        make = lambda: SnapshotAggregateOp(specs, schema, props, key_fields, force=force, engine=engine)  # noqa: E731
        make()  # validate arguments now
        out_schema = _aggregate_schema(specs, schema, key_fields)
        window = mode == MODE_WINDOW
        out_props = Properties(
            constant_duration=props.constant_duration if window else None,
            constant_hop=props.constant_hop if window else None,
            grouping=props.grouping,
        )
        stream = self._derive("Aggregate", make, schema=out_schema, props=out_props)
        stream._node.partitioning = (key_fields or props.grouping,)
        if variant in (None, "fused"):
            stream._node.fuse = lambda node: _fused_window_aggregate(node, specs, props, key_fields, engine)
            if variant == "fused" and stream._node.fusion() is None:
                raise PlanError(
                    "variant='fused' needs a window (size <= hop, or a multiple of hop) right before the aggregate "
                    "and only linear aggregates (count, count_not_null, sum, average, variance, stddev, running sums)"
                )
        return stream

    def _keyed(self, key) -> tuple[Stream, tuple[str, ...], tuple[str, ...]]:
        """(stream carrying the key as fields, key field names, fields added only for the key)."""
        if isinstance(key, str):
            fields = (key,)
        elif isinstance(key, list | tuple) and key and all(isinstance(k, str) for k in key):
            fields = tuple(key)
        elif callable(key):
            if self.schema is None:
                raise PlanError("a lambda key needs a stream whose fields are known; select the fields first")
            if "key" in self.schema.names:
                raise PlanError("a lambda key is named 'key', which is already a field; group by field names instead")
            parts = {name: name for name in self.schema.names} | {"key": key}
            return self._select_named(parts, keep_grouping=True), ("key",), ("key",)
        else:
            raise PlanError(f"a key is a field name, a list of field names, or a lambda; got {key!r}")
        missing = [f for f in fields if self.schema is not None and f not in self.schema.names]
        if missing:
            raise PlanError(f"key field(s) {missing} not in the stream; fields are {self.schema.names}")
        return self, fields, ()

    def group_apply(self, key, subquery, result=None) -> Stream:
        """Run ``subquery`` on each key's sub-stream and union the results (Trill's GroupApply).

        The output payload is the key fields followed by the subquery's fields, or
        ``result(key, payload)`` (row mode). Grouping nests.
        """
        source, fields, drop = self._keyed(key)
        outer = self.properties.grouping
        grouping = outer + fields
        schema = source.schema
        inner_schema = None if schema is None else pa.schema([f for f in schema if f.name not in drop])
        grouped = source._derive(
            "Group",
            lambda: GroupOp(fields, drop),
            schema=inner_schema,
            props=source.properties.but(grouping=grouping),
        )
        grouped._node.partitioning = (fields,)
        inner = subquery(grouped)
        if not isinstance(inner, Stream):
            raise PlanError(f"group_apply's subquery must return a Stream, got {type(inner).__name__}")
        out_schema = None
        if result is None and inner.schema is not None and schema is not None:
            key_types = [schema.field(f) for f in fields]
            out_schema = pa.schema(key_types + [f for f in inner.schema if f.name not in fields])
        return inner._derive(
            "Ungroup",
            lambda: UngroupOp(len(fields), result),
            schema=out_schema,
            props=inner.properties.but(grouping=outer, sorted_by=inner.properties.sorted_by if result is None else ()),
        )

    def map(self, mapper=None, key=None) -> MappedStream:
        """Trill's Map: ``mapper`` (a Stream -> Stream function, stateless work that runs where the
        data is) then the ``key`` the following ``reduce`` groups by. The Spark backend runs the map
        stage per partition and shuffles by the key; embedded, it is one plan."""
        if key is None:
            raise PlanError("map needs key=: the field(s) or lambda the reduce stage groups by")
        return MappedStream(mapper(self) if mapper is not None else self, key)

    def map_reduce(self, map_fn, key, reduce_fn, result=None) -> Stream:
        """Trill's temporal map-reduce: ``map_fn`` on the whole stream, then ``reduce_fn`` per key."""
        return self.map(map_fn, key).reduce(reduce_fn, result)

    # -- out-of-order input (see tidal.stream.disordered) ----------------------------------
    def late_count(self) -> int:
        """Events the sorts feeding this stream found late (dropped, adjusted or thrown).

        Taken from the last completed run; if there was none, the sorts are run to count."""
        from .disordered import late_count

        return late_count(self)

    def late_events(self) -> Stream:
        """The late events of the sorts feeding this stream, with their original times.

        Released sorted by time when the input completes (a late event can be arbitrarily early)."""
        from .disordered import late_events

        return late_events(self)

    def disorder_stats(self) -> list:
        """Per sort feeding this stream: events, late, dropped, adjusted, per band, peak buffered."""
        from .disordered import disorder_stats

        return disorder_stats(self)

    # -- egress ---------------------------------------------------------------------------
    def query(self, sink=None) -> Query:
        """A runnable query over this stream, for step-by-step runs and checkpoints.

        ``q = stream.query(); q.run(max_messages=100); state = q.checkpoint()``; later
        ``q2 = stream.query(); q2.restore(state); q2.run()`` continues exactly. Without a
        ``sink`` the output is collected: ``q.sink.table()``.
        """
        sink = sink if sink is not None else egress.CollectSink(self.schema)
        q = Query([self._node], [sink])
        q.sink = sink
        return q

    def run_durable(
        self, output: str, checkpoints: str, name: str = "query", every_messages: int = 200, on_checkpoint=None
    ) -> pa.Table | None:
        """Run with exactly-once output that survives a crash, and return the whole output.

        The physical events go to Arrow files in the directory ``output``; every ``every_messages``
        messages the output is committed and then the query's state is saved in the SQLite file
        ``checkpoints`` (see :mod:`tidal.state.store`). Run the same call again after a crash or a
        kill and it continues from the last checkpoint: the output ends up exactly as one
        uninterrupted run would have written it. Sources must replay the same messages when
        reopened (tables, files, lists; not one-shot generators).
        """
        from ..io.segments import SegmentSink
        from ..state.store import CheckpointStore

        fingerprint = hashlib.sha256(self.explain().encode()).hexdigest()[:16]
        sink = SegmentSink(output)
        with CheckpointStore(checkpoints) as store:
            Query([self._node], [sink]).run_durably(store, name, fingerprint, every_messages, on_checkpoint)
        return sink.table()

    def to_arrow(self) -> pa.Table:
        """The physical events as an Arrow table: ``sync_time, other_time``, then payload fields."""
        sink = egress.CollectSink(self.schema)
        execute(self._node, sink)
        return sink.table()

    def to_events(self) -> list[egress.Event]:
        return egress.events_from_table(self.to_arrow())

    def to_intervals(self) -> pa.Table:
        """Coalesced lifetimes (``start, end``, payload): the stream's meaning, whatever its batching."""
        return egress.intervals_from_table(self.to_arrow())

    def to_changelog(self) -> pa.Table:
        """``time, undo`` and payload: inserts when lifetimes start, retractions when they end."""
        return egress.changelog_from_table(self.to_arrow())

    def to_pandas(self):
        return self.to_arrow().to_pandas()

    def subscribe(self, on_batch, on_punctuation=None, on_completed=None) -> None:
        """Run the query, calling ``on_batch(record_batch)`` for each output batch as it is produced."""
        execute(self._node, egress.CallbackSink(on_batch, on_punctuation, on_completed))

    def count(self) -> int:
        """Number of physical events the query produces (runs it)."""
        counter = _Counter()
        execute(self._node, counter)
        return counter.n


def _passthrough():
    from ..ops.base import PassThrough

    return PassThrough()


class _Counter(egress.Consumer):
    def __init__(self):
        self.n = 0

    def on_batch(self, batch) -> None:
        self.n += batch.present_count


class _NamedSelectOp(SelectOp):
    """select(name=lambda e: ..., other="field"): several one-value lambdas, each compiled."""

    def __init__(self, parts: dict, schema):
        from ..ops.base import Operator

        Operator.__init__(self)
        self.parts = {
            k: v if isinstance(v, str) else CompiledLambda(v, schema, truth=False, allow_record=False)
            for k, v in parts.items()
        }

    @property
    def variant(self) -> str:
        return "; ".join(f"{k}: {v if isinstance(v, str) else v.describe()}" for k, v in self.parts.items())

    def on_batch(self, batch) -> None:
        cols = {}
        for k, fn in self.parts.items():
            if isinstance(fn, str):
                cols[k] = batch.columns[fn]
                continue
            got = fn.project(batch) if fn.mode == "columnar" else None
            if got is None:
                break
            cols[k] = got["value"]
        else:
            self.emit(batch.replace(columns=cols))
            return
        dense = batch.compact()
        cols = {}
        for k, fn in self.parts.items():
            if isinstance(fn, str):
                cols[k] = dense.columns[fn]
                continue
            got = fn.project(dense) if fn.mode == "columnar" else None
            cols[k] = (got or fn.project_rows(dense))["value"]
        self.emit(dense.replace(columns=cols))


def _renamed_sort(sorted_by: tuple[str, ...], named: dict) -> tuple[str, ...]:
    """The sort order after a projection: the longest prefix of the sorted fields passed through (maybe renamed)."""
    out = []
    for field in sorted_by:
        new = next((k for k, v in named.items() if isinstance(v, str) and v == field), None)
        if new is None:
            break
        out.append(new)
    return tuple(out)


def _name_aggregates(fns, named) -> list[tuple[str, AggregateFunction]]:
    specs = []
    for fn in fns:
        if not isinstance(fn, AggregateFunction):
            raise PlanError(f"not an aggregate: {fn!r}; use tidal.agg.count(), tidal.agg.sum('field'), ...")
        specs.append((fn.default_name, fn))
    for name, fn in named.items():
        if not isinstance(fn, AggregateFunction):
            raise PlanError(f"{name}={fn!r} is not an aggregate; use tidal.agg.count(), tidal.agg.sum('field'), ...")
        specs.append((name, fn))
    names = [n for n, _ in specs]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise PlanError(f"two aggregates would both be named {dup}; give them names, e.g. a=agg.sum('x')")
    if not specs:
        raise PlanError("aggregate needs at least one aggregate function")
    return specs


def _aggregate_schema(specs, schema: pa.Schema | None, key_fields) -> pa.Schema | None:
    if schema is None:
        return None
    fields = [schema.field(k) for k in key_fields]
    for name, fn in specs:
        arg = schema.field(fn.arg).type if isinstance(fn.arg, str) else None
        t = result_type(fn, arg)
        if t is None:
            return None
        fields.append(pa.field(name, t))
    return pa.schema(fields)


class MappedStream:
    """The result of ``Stream.map``: a stream and the key its ``reduce`` will group by."""

    def __init__(self, stream: Stream, key):
        self.stream = stream
        self.key = key

    def reduce(self, reducer, result=None) -> Stream:
        """Trill's Reduce: ``reducer`` (Stream -> Stream) per key, then ``result(key, payload)`` (default: key
        fields, then the reducer's fields)."""
        return self.stream.group_apply(self.key, reducer, result)


def _fused_window_aggregate(node: PlanNode, specs, props, key_fields, engine):
    """A factory of the window + aggregate operator when ``node`` is a window it can absorb, else None."""
    window = getattr(node, "window", None)
    if window is None or engine == "python" or (window[0] > window[1] and window[0] % window[1]):
        return None
    schema = node.inputs[0].schema if node.inputs and node.inputs[0] is not None else None
    if schema is None or not FusedWindowAggregateOp.fusable(SnapshotAggregateOp(specs, schema, props, key_fields)):
        return None
    return lambda: FusedWindowAggregateOp(specs, schema, props, key_fields, window)
