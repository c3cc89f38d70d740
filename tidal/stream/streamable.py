"""The fluent streaming API: immutable :class:`Stream` objects that build a plan.

Every method returns a new stream; nothing runs until an egress method (``to_arrow``,
``to_events``, ``to_intervals``, ``to_changelog``, ``to_pandas``, ``subscribe``) is called.
Each egress call runs the query from its sources (a stream over a one-shot Python
iterator can be consumed once).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from ..core.errors import PlanError
from ..core.time import align_down
from ..expr.compile import CompiledLambda
from ..expr.kernels import Evaluator, record_fields, to_arrow_column
from ..io import egress
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
from ..ops.union import UnionOp
from .plan import OperatorNode, PlanNode, Properties, execute, explain


def _positive(name: str, value: int) -> int:
    if not isinstance(value, int | np.integer) or value <= 0:
        raise PlanError(f"{name} must be a positive integer number of ticks, got {value!r}")
    return int(value)


def _projection_schema(fn: CompiledLambda, schema: pa.Schema | None) -> pa.Schema | None:
    """Output schema of a columnar projection, found by evaluating it over empty columns."""
    if schema is None or fn.mode != "columnar":
        return None
    empty = {f.name: pa.array([], type=f.type) for f in schema}
    ev = Evaluator(empty, 0)
    fields = []
    for name, node in record_fields(fn.node):
        try:
            fields.append(pa.field(name, to_arrow_column(ev.eval(node), 0).type))
        except Exception:
            return None
    return pa.schema(fields)


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

    def _derive(self, label, factory, schema=None, props=None, inputs=None, detail="") -> Stream:
        node = OperatorNode(
            label,
            inputs or (self._node,),
            self._node.schema if schema is None else schema,
            self._node.props if props is None else props,
            factory,
            detail,
        )
        return Stream(node)

    # -- stateless payload operators --------------------------------------------------
    def where(self, predicate) -> Stream:
        """Keep the events whose payload satisfies ``predicate`` (a lambda over a row)."""
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
        out_schema = _projection_schema(probe, schema)
        return self._derive(
            "Select",
            lambda: SelectOp(CompiledLambda(fn, schema, truth=False)),
            schema=out_schema,
            props=self.properties.but(grouping=()),
        )

    def _select_named(self, named: dict) -> Stream:
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
                s = _projection_schema(compiled[k], schema)
                if s is None:
                    out_fields = None
                    break
                out_fields.append(pa.field(k, s.field(0).type))
        out_schema = pa.schema(out_fields) if out_fields is not None else None
        return self._derive(
            "Select", lambda: _NamedSelectOp(parts, schema), schema=out_schema, props=self.properties.but(grouping=())
        )

    def select_many(self, fn) -> Stream:
        """Map each payload to zero or more payloads (``fn`` returns an iterable), keeping lifetimes."""
        schema = self.schema
        return self._derive(
            "SelectMany",
            lambda: SelectManyOp(CompiledLambda(fn, schema, truth=False)),
            schema=None,
            props=self.properties.but(constant_hop=self.properties.constant_hop),
        )

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
        )
        label = f"window size {size}, hop {hop}, offset {offset}"
        kind = "TumblingWindow" if size == hop else "HoppingWindow"
        return self._derive(kind, lambda: AlterLifetimeOp(start, duration, keep=keep, label=label), props=props)

    def tumbling_window(self, size: int, offset: int = 0) -> Stream:
        """Non-overlapping windows of ``size`` ticks: a hopping window whose hop is its size."""
        return self.hopping_window(size, size, offset)

    def clip_duration(self, limit: int) -> Stream:
        """End every lifetime at most ``limit`` ticks after it starts: ``[s, min(e, s+limit))``."""
        limit = _positive("limit", limit)
        cd = self.properties.constant_duration
        props = self.properties.but(constant_duration=min(cd, limit) if cd is not None else None, start_edge_only=False)
        return self._derive("ClipDuration", lambda: ClipDurationOp(limit), props=props)

    def extend_lifetime(self, delta: int) -> Stream:
        """End every lifetime ``delta`` ticks later: ``[s, e+d)``."""
        cd = self.properties.constant_duration
        props = self.properties.but(constant_duration=None if cd is None else cd + int(delta))
        return self._derive("ExtendLifetime", lambda: ExtendLifetimeOp(delta), props=props)

    def quantize_lifetime(self, size: int, hop: int | None = None, offset: int = 0) -> Stream:
        """Snap starts down and ends up to the hop grid: ``[snap(s), snap(e-1)+size)``."""
        size = _positive("size", size)
        hop = size if hop is None else _positive("hop", hop)
        props = self.properties.but(constant_duration=None, constant_hop=(hop, int(offset) % hop))
        return self._derive("QuantizeLifetime", lambda: QuantizeLifetimeOp(size, hop, offset), props=props)

    def point_at_end(self) -> Stream:
        """Replace each lifetime that ends by a point at its end: ``[e, e+1)``."""
        props = self.properties.but(constant_duration=1, constant_hop=None, start_edge_only=False)
        return self._derive("PointAtEnd", PointAtEndOp, props=props)

    def chop(self, period: int, offset: int = 0) -> Stream:
        """Split lifetimes at every ``offset + k*period`` (snapshots unchanged)."""
        period = _positive("period", period)
        props = self.properties.but(constant_duration=None)
        return self._derive("Chop", lambda: ChopOp(period, offset), props=props)

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
    def join(self, other: Stream, left_key, right_key, result=None, *, left_is_small: bool = False) -> Stream:
        """Temporal equi-join: each key-equal pair whose lifetimes overlap, over their intersection.

        Keys are a field name, a list of field names, or a row lambda. ``result(l, r)`` builds
        the payload (default: left fields then right fields; a clashing right name gets
        ``_right``). ``left_is_small=True`` picks the build-once variant: the right waits until
        the (finite) left has completed, the left is indexed once, and right intervals probe it
        without being stored.
        """
        return self._join("inner", other, left_key, right_key, result, build_once=left_is_small)

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

    def _join(self, mode: str, other: Stream, left_key, right_key, result, build_once: bool = False) -> Stream:
        from ..ops.join import JoinOp, key_spec, output_names, result_types

        if not isinstance(other, Stream):
            raise PlanError(f"{mode} join: the other input must be a Stream, got {type(other).__name__}")
        ls, rs = self.schema, other.schema
        lp, rp = self.properties, other.properties
        probe = JoinOp(mode, left_key, right_key, ls, rs, lp, rp, result, build_once)  # validates keys now
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
            lambda: JoinOp(mode, left_key, right_key, ls, rs, lp, rp, result, build_once),
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

    # -- egress ---------------------------------------------------------------------------
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
