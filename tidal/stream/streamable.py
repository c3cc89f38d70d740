"""The fluent streaming API: immutable :class:`Stream` objects that build a plan.

Every method returns a new stream; nothing runs until an egress method (``to_arrow``,
``to_events``, ``to_intervals``, ``to_changelog``, ``to_pandas``, ``subscribe``) is called.
Each egress call runs the query from its sources (a stream over a one-shot Python
iterator can be consumed once).
"""

from __future__ import annotations

import hashlib

import pyarrow as pa

from ..core.errors import PlanError
from ..io import egress
from ..ops.aggregate.functions import AggregateFunction, user_defined
from ..ops.keys import tuple_key_fields
from ..plan import nodes
from ..plan.node import PlanNode, explain
from ..plan.properties import Properties
from ..plan.rules import optimize
from .query import Query, execute, execute_many


class Stream:
    """A temporal stream: a plan that produces events in sync-time order."""

    def __init__(self, node: PlanNode):
        self.node = node

    # -- introspection ----------------------------------------------------------------
    @property
    def schema(self) -> pa.Schema | None:
        """The payload fields (None when they are only known once the query runs)."""
        return self.node.schema

    @property
    def properties(self) -> Properties:
        return self.node.props

    def plan(self) -> PlanNode:
        """The plan the runtime executes: this stream's plan after the rewrite rules."""
        return optimize([self.node])[0]

    def explain(self) -> str:
        """The physical plan: each operator, its variant (columnar or row mode), its properties."""
        return explain(self.plan())

    # -- stateless payload operators --------------------------------------------------
    def where(self, predicate) -> Stream:
        """Keep the events whose payload satisfies ``predicate`` (a lambda over a row)."""
        return Stream(nodes.Where(self.node, predicate))

    def select(self, *fields: str, **named) -> Stream:
        """Project each payload: ``select(lambda e: {...})``, ``select("a", "b")`` or ``select(x=lambda e: ...)``."""
        if len(fields) == 1 and callable(fields[0]) and not named:
            return Stream(nodes.Select(self.node, fields[0]))
        if named and not fields:
            return Stream(nodes.NamedSelect(self.node, named))
        if fields and all(isinstance(f, str) for f in fields) and not named:
            missing = [f for f in fields if self.schema is not None and f not in self.schema.names]
            if missing:
                raise PlanError(f"select: unknown field(s) {missing}; fields are {self.schema.names}")
            return Stream(nodes.NamedSelect(self.node, {f: f for f in fields}))
        raise PlanError("select takes one lambda, field names, or name=lambda keywords")

    def select_many(self, fn) -> Stream:
        """Map each payload to zero or more payloads (``fn`` returns an iterable), keeping lifetimes."""
        return Stream(nodes.SelectMany(self.node, fn))

    # -- lifetimes --------------------------------------------------------------------
    def shift_lifetime(self, delta: int) -> Stream:
        """Move every lifetime by ``delta`` ticks: ``[s+d, e+d)``."""
        return Stream(nodes.ShiftLifetime(self.node, delta))

    def alter_lifetime(self, start=None, duration=None) -> Stream:
        """``[f(s), f(s)+d)``; ``start`` maps a start time (non-decreasing), ``duration`` an int or f(s)."""
        return Stream(nodes.AlterLifetime(self.node, start, duration))

    def alter_duration(self, duration) -> Stream:
        """Every event lives ``duration`` ticks from its start: ``[s, s+d)``."""
        return self.alter_lifetime(duration=duration)

    def hopping_window(self, size: int, hop: int, offset: int = 0, align: str = "start") -> Stream:
        """Windows of ``size`` ticks starting every ``hop`` ticks (grid ``offset + k*hop``).

        ``align="start"`` (default): each start moves down to the grid, a window's result shows
        from its start; ``align="end"`` (Trill's convention): up, a window's result shows from its end."""
        return Stream(nodes.window(self.node, size, hop, offset, align))

    def tumbling_window(self, size: int, offset: int = 0, align: str = "start") -> Stream:
        """Non-overlapping windows of ``size`` ticks: a hopping window whose hop is its size."""
        return self.hopping_window(size, size, offset, align)

    def clip_duration(self, limit: int) -> Stream:
        """End every lifetime at most ``limit`` ticks after it starts: ``[s, min(e, s+limit))``."""
        return Stream(nodes.ClipDuration(self.node, limit))

    def extend_lifetime(self, delta: int) -> Stream:
        """End every lifetime ``delta`` ticks later: ``[s, e+d)``; a negative ``delta`` ends it earlier
        and drops the lifetimes that become empty (Trill's negative ExtendLifetime)."""
        return Stream(nodes.ExtendLifetime(self.node, delta))

    def quantize_lifetime(self, size: int, hop: int | None = None, offset: int = 0, align: str = "start") -> Stream:
        """Snap lifetimes to the hop grid: ``[snap(s), snap(e-1)+size)``, ``snap`` rounding down
        (``align="start"``, default) or up (``align="end"``)."""
        return Stream(nodes.QuantizeLifetime(self.node, size, hop, offset, align))

    def point_at_end(self) -> Stream:
        """Replace each lifetime that ends by a point at its end: ``[e, e+1)``."""
        return Stream(nodes.PointAtEnd(self.node))

    def chop(self, period: int, offset: int = 0) -> Stream:
        """Split lifetimes at every ``offset + k*period``, open ones as time passes (snapshots unchanged)."""
        return Stream(nodes.Chop(self.node, period, offset))

    # -- stateful lifetimes (tidal.ops.session) ------------------------------------------------
    def session_window(self, timeout: int, max_duration: int | None = None, lifetime: str = "session") -> Stream:
        """Cut each group's events into sessions: a gap of ``timeout`` ticks (or a multiple of
        ``max_duration``) ends one. Every event lives through its session ``[S, E)``
        (``lifetime="event"``: ``[s, E)``, Trill's SessionTimeoutWindow), ``E`` being the last
        start plus ``timeout``, capped at the next ``max_duration`` grid point (Trill caps a new
        session later, at the first grid point at or after its start plus ``max_duration``)."""
        return Stream(nodes.SessionWindow(self.node, timeout, max_duration, lifetime))

    def stitch(self) -> Stream:
        """Coalesce lifetimes of equal payloads (adjacent ones join; snapshots unchanged)."""
        return Stream(nodes.Stitch(self.node))

    def distinct(self) -> Stream:
        """At every instant, each distinct payload of the snapshot once (per group)."""
        return Stream(nodes.Distinct(self.node))

    # -- pattern matching (tidal.ops.pattern.detect states the semantics) ---------------------
    def detect(self, pattern: str, define=None, measures=None, *, within: int | None = None,
               skip="past_last_row", partition_by=None) -> Stream:  # fmt: skip
        """Find ``pattern`` (``"A B+ C?"``: concatenation, ``|``, ``*``, ``+``, ``?``, ``{n,m}``) in
        each group's events in time order: one point event per match, at its last event, with the
        ``measures`` (``{"start": "first(A.t)", "n": "count(B)", "top": "max(B.price)"}``).

        ``define`` maps a variable to its condition: ``lambda e: e.price > 10``, or ``lambda e, A:
        e.price > A.price`` to read the last row mapped to ``A`` too. ``within`` bounds a match's span
        (last time - first time < within), and with it the state; ``skip`` is where the search goes on
        after a match: ``"past_last_row"``, ``"to_next_row"``, ``("to_first", "B")``, ``("to_last", "B")``.
        ``partition_by`` (fields) matches per key, like SQL's PARTITION BY."""
        if partition_by is not None:
            return self.group_apply(
                partition_by, lambda g: g.detect(pattern, define, measures, within=within, skip=skip)
            )
        return Stream(nodes.Detect(self.node, pattern, define, measures, within, skip))

    # -- shared state under transactions (tidal.tx) --------------------------------------
    def transact(
        self, access, post=None, scheduler: str = "auto", interval: int = 500, workers=None, partitions=None
    ) -> Stream:
        """Each event runs ``access(e, t)``: a transaction of ``t.read``/``t.write``/``t.read_modify`` on
        ``tx.Table``s, with the outcome of running them one by one in event-time order (ties by arrival).
        Output: each event with ``committed``, or ``post(e, r)`` (``r.committed``, ``r.<read name>``).
        ``scheduler``: ``"chains"`` (TStream's operation chains, parallel), ``"serial"``, ``"lock"``,
        ``"pat"``, or ``"auto"`` (the default: the fastest known for the worker threads,
        ``tidal.tx.schedule.pick``); ``interval``: events per state-access batch (the punctuation interval)."""
        from ..tx.node import Transact

        return Stream(Transact(self.node, access, post, scheduler, interval, workers, partitions))

    # -- combining ----------------------------------------------------------------------
    def union(self, other: Stream) -> Stream:
        """The temporal merge: at every instant, the multiset union of both snapshots."""
        return Stream(nodes.Union(self.node, other.node))

    # -- joins (tidal/ops/join/ states the temporal semantics) -----------------------
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
        if not isinstance(other, Stream):
            raise PlanError(f"{mode} join: the other input must be a Stream, got {type(other).__name__}")
        return Stream(nodes.Join(self.node, other.node, mode, left_key, right_key, result, build_once, variant))

    def multicast(self, fn=None):
        """Share this stream between several consumers in one query (built and run once).

        ``multicast()`` returns the stream itself, marked for sharing; ``multicast(fn)``
        returns ``fn(stream)``, for queries that use a stream more than once.
        """
        shared = Stream(nodes.Multicast(self.node))
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
        stream = Stream(nodes.Aggregate(self.node, specs, key_fields, variant, engine))
        if variant == "fused" and not isinstance(stream.plan(), nodes.FusedWindowAggregate):
            raise PlanError(
                "variant='fused' needs a window (size <= hop, or a multiple of hop; align='start') right before "
                "the aggregate "
                "and only linear aggregates (count, count_not_null, sum, average, variance, stddev, running sums)"
            )
        return stream

    def _keyed(self, key) -> tuple[Stream, tuple[str, ...], tuple[str, ...]]:
        """(stream carrying the key as fields, key field names, fields added only for the key)."""
        if isinstance(key, str):
            fields = (key,)
        elif isinstance(key, list | tuple) and key and all(isinstance(k, str) for k in key):
            fields = tuple(key)
        elif callable(key) and tuple_key_fields(key) is not None:  # lambda e: (e.a, e.b): the fields a, b
            fields = tuple_key_fields(key)
        elif callable(key):
            if self.schema is None:
                raise PlanError("a lambda key needs a stream whose fields are known; select the fields first")
            if "key" in self.schema.names:
                raise PlanError("a lambda key is named 'key', which is already a field; group by field names instead")
            parts = {name: name for name in self.schema.names} | {"key": key}
            return Stream(nodes.NamedSelect(self.node, parts)), ("key",), ("key",)
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
        grouped = Stream(nodes.Group(source.node, fields, drop, outer + fields))
        inner = subquery(grouped)
        if not isinstance(inner, Stream):
            raise PlanError(f"group_apply's subquery must return a Stream, got {type(inner).__name__}")
        out_schema = None
        schema = source.schema
        if result is None and inner.schema is not None and schema is not None:
            key_types = [schema.field(f) for f in fields]
            out_schema = pa.schema(key_types + [f for f in inner.schema if f.name not in fields])
        return Stream(nodes.Ungroup(inner.node, len(fields), result, out_schema, outer))

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
        return sum(s.late for s in self.disorder_stats())

    def late_events(self) -> Stream:
        """The late events of the sorts feeding this stream, with their original times.

        Released sorted by time when the input completes (a late event can be arbitrarily early)."""
        sorts = nodes.sorts_in(self.node)
        if not sorts:
            raise PlanError("this stream has no sort: its input was read in order, so it has no late events")
        out = Stream(nodes.LateEvents(sorts[0]))
        for s in sorts[1:]:
            out = out.union(Stream(nodes.LateEvents(s)))
        return out

    def disorder_stats(self) -> list:
        """Per sort feeding this stream: events, late, dropped, adjusted, per band, peak buffered."""
        sorts = nodes.sorts_in(self.node)
        pending = [s for s in sorts if not s.stats.completed]
        if pending:
            execute_many(pending, [_Discard() for _ in pending])
        return [s.stats for s in sorts]

    # -- egress ---------------------------------------------------------------------------
    def query(self, sink=None) -> Query:
        """A runnable query over this stream, for step-by-step runs and checkpoints.

        ``q = stream.query(); q.run(max_messages=100); state = q.checkpoint()``; later
        ``q2 = stream.query(); q2.restore(state); q2.run()`` continues exactly. Without a
        ``sink`` the output is collected: ``q.sink.table()``.
        """
        sink = sink if sink is not None else egress.CollectSink(self.schema)
        q = Query([self.node], [sink])
        q.sink = sink
        return q

    def run_durable(
        self,
        output: str,
        checkpoints: str,
        name: str = "query",
        every_messages: int | None = None,
        on_checkpoint=None,
        every_seconds: float | None = 1.0,
    ) -> pa.Table | None:
        """Run with exactly-once output that survives a crash, and return the whole output.

        The physical events go to Arrow files in the directory ``output``; every ``every_seconds``
        of wall clock (default 1 s) or ``every_messages`` messages, whichever comes first, the output
        is committed and then the query's state is saved in the SQLite file ``checkpoints`` (see
        :mod:`tidal.state.store`: incremental, checksummed). Run the same call again after a crash
        or a kill and it continues from the last checkpoint: the output ends up exactly as one
        uninterrupted run would have written it. A committed output file that went missing or
        changed, or a damaged checkpoint, is an error. Sources must replay the same messages when
        reopened (tables, files, lists; not one-shot generators) or be feeds.
        """
        from ..io.segments import SegmentSink
        from ..state.store import CheckpointStore

        fingerprint = hashlib.sha256(explain(self.plan(), measured=False).encode()).hexdigest()[:16]
        sink = SegmentSink(output)
        query = Query([self.node], [sink])
        try:
            with CheckpointStore(checkpoints) as store:
                query.run_durably(
                    store,
                    name,
                    fingerprint,
                    every_messages,
                    on_checkpoint,
                    every_seconds=every_seconds,
                    plan=self.explain(),
                )
        finally:
            query.close()
            sink.close()
        return sink.table()

    def to_arrow(self) -> pa.Table:
        """The physical events as an Arrow table: ``sync_time, other_time``, then payload fields."""
        sink = egress.CollectSink(self.schema)
        execute(self.node, sink)
        table = sink.table()
        sink.batches = []  # the operators may form a cycle: the table alone keeps the data, freed with it
        return table

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
        execute(self.node, egress.CallbackSink(on_batch, on_punctuation, on_completed))

    def count(self) -> int:
        """Number of physical events the query produces (runs it)."""
        counter = _Counter()
        execute(self.node, counter)
        return counter.n


class _Discard(egress.Consumer):
    reads_payload = False

    def on_batch(self, batch) -> None:
        pass


class _Counter(egress.Consumer):
    reads_payload = False

    def __init__(self):
        self.n = 0

    def on_batch(self, batch) -> None:
        self.n += batch.present_count


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


class MappedStream:
    """The result of ``Stream.map``: a stream and the key its ``reduce`` will group by."""

    def __init__(self, stream: Stream, key):
        self.stream = stream
        self.key = key

    def reduce(self, reducer, result=None) -> Stream:
        """Trill's Reduce: ``reducer`` (Stream -> Stream) per key, then ``result(key, payload)`` (default: key
        fields, then the reducer's fields)."""
        return self.stream.group_apply(self.key, reducer, result)
