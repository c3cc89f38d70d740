"""From the logical plan to a tidal stream plan, and running it.

Temporal semantics of SQL in tidal:

* A row whose event time is not declared is relational: it becomes a start edge at time 0
  (``[0, inf)``), so every aggregate is a running relational aggregate and the stream's final
  snapshot is the batch answer. Under a ``TRIGGER`` the i-th row of each file is at tick ``i``
  instead, so the aggregate's value changes row by row and the trigger has updates to count.
* A watermark generator (``max_diff_watermark``, ``percentile_watermark``) or ``tumble``
  declares the event time: the file's rows become start edges at their event time, read in
  arrival order and sorted by the engine's disorder machinery (:mod:`tidal.io.disorder`: an
  Impatience sort whose reorder latency is the ``max_diff_watermark`` offset, so its
  punctuations are the thesis's watermark). Records behind the watermark when they arrive are
  late and always counted; the late policy (:data:`LATE_POLICIES`) drops them (``drop``), drops
  them and writes them to the late-records file (``file``; each run starts the file afresh), or
  moves their time up to the watermark in effect when they arrived (``adjust``, Trill's Adjust:
  the event-time column shows the new time too). Without a generator nothing is late (the
  watermark stays at its minimum until end of input).
  ``percentile_watermark`` computes its watermark per record (seed 002 section 2.5) and
  releases rows through an Impatience sorter as it passes them.
* ``tumble`` adds ``window_start``/``window_end``; the window end becomes the row's event
  time field, which ``TRIGGER ON WATERMARK`` waits for. ``session`` does the same for session
  windows (the engine's ``session_window``, per ``key => DESCRIPTOR(...)`` when given: the
  sessions of a key never depend on other keys' rows; ``GROUP BY`` does not define them). A
  session's rows come out once the session is over, as start edges at the session's start.
* A grouped aggregate over event time, or any aggregate with a ``TRIGGER``, is followed by a
  :class:`~tidal.ops.trigger.TriggerOp` that materialises each key's value per the clause
  (default: at end of input). End of input moves the watermark to infinity: every window is
  emitted, and the final snapshot is the batch answer.
* ``ORDER BY``/``LIMIT``/``OFFSET`` apply to the final snapshot.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from functools import partial

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from ..core.batch import EventBatch
from ..core.errors import InputError, PlanError
from ..core.messages import Completed, Punctuation
from ..core.time import INFINITY
from ..io.disorder import disordered_messages
from ..io.egress import CollectSink, changelog_from_table
from ..io.files import read_file
from ..ops.base import Consumer, Operator
from ..ops.impatience import ImpatienceSorter
from ..ops.selection import SelectOp, WhereOp
from ..ops.trigger import TriggerOp, TriggerSpec
from ..stream.disordered import DisorderedStream, LateNode, execute_many, sorts_in
from ..stream.plan import OperatorNode, Properties, SourceNode
from ..stream.streamable import Stream
from .dialect import parse
from .expressions import Evaluator, compiled, pushable_predicate, translate, translate_record
from .logical import (
    Aggregate,
    Builder,
    EventTime,
    Filter,
    Join,
    Node,
    Project,
    Query,
    Scan,
    Session,
    Tumble,
    UnionAll,
    column_labels,
    user_message,
)
from .rules import explain_logical, optimize
from .topk import TopKOp

BATCH_ROWS = 65_536
LATE_POLICIES = ("drop", "file", "adjust")


@dataclass
class RunStats:
    """What the sources saw: rows read, malformed rows skipped, late rows, the last watermark."""

    rows_read: int = 0
    rows_total: int = 0  # rows the sources hold (known once a file is read)
    skipped: int = 0
    late: int = 0
    watermark: int | None = None
    on_progress: object = None  # called with the stats after each batch a source sends

    def progress(self) -> None:
        if self.on_progress is not None:
            self.on_progress(self)


# -- watermark generators (seed 002, section 2.5) --------------------------------------------


def max_diff_watermarks(times: np.ndarray, offset: int) -> np.ndarray:
    """The watermark after each record: the largest event time seen so far minus ``offset``."""
    return np.maximum.accumulate(times) - offset if len(times) else times.copy()


def percentile_watermarks(times: np.ndarray, events: int, percentile: float, frequency: int) -> np.ndarray:
    """The watermark after each record, from the last ``events`` event times (by arrival).

    Once ``frequency`` records have arrived, the watermark is the largest stored time such that
    at most ``percentile``% of the stored times exceed it; it never moves back. Before that it is
    the minimum time (nothing is late).
    """
    n = len(times)
    out = np.full(n, np.iinfo(np.int64).min, dtype=np.int64)
    current = np.iinfo(np.int64).min
    for i in range(n):  # windows are small (``events``), the loop is per record by design of the generator
        if i + 1 >= frequency:
            window = np.sort(times[max(0, i + 1 - events) : i + 1])
            exceed = int(len(window) * percentile / 100)
            current = max(current, int(window[len(window) - exceed - 1]))
        out[i] = current
    return out


def late_mask(times: np.ndarray, watermarks: np.ndarray) -> np.ndarray:
    """A record is late when its time is behind the watermark before it arrived."""
    before = np.concatenate([[np.iinfo(np.int64).min], watermarks[:-1]]) if len(times) else watermarks
    return times < before


class TumbleOp(Operator):
    """Adds ``window_start``/``window_end`` from the event time; lifetimes are unchanged.

    Tumbling windows are ``[offset + k*length, offset + (k+1)*length)`` (start inclusive, end
    exclusive). With ``hop`` (``hop(...)``), windows of ``length`` start every ``hop``, and a row
    is copied once into every window containing its time (in place, so the stream stays in
    time order). The window end becomes the row's *event time field* (what ``TRIGGER ON
    WATERMARK`` waits for when grouping by it), while the row keeps its own time in the
    stream, so a trigger can also materialise a window's value before the window ends.
    """

    name = "Tumble"

    def __init__(self, length: int, offset: int, hop: int | None = None):
        super().__init__()
        self.length, self.offset, self.hop = length, offset, hop
        if hop is None:
            self.variant = f"length {length} us, offset {offset} us"
        else:
            self.name = "Hop"
            self.variant = f"length {length} us every {hop} us, offset {offset} us"

    def window_end(self, t: np.ndarray) -> np.ndarray:
        return (t - self.offset) // self.length * self.length + self.offset + self.length

    def on_batch(self, batch: EventBatch) -> None:
        dense = batch.compact()
        if self.hop is None:
            end = self.window_end(dense.sync)
        else:
            # the latest window start at or before t, then earlier ones while the window still holds t
            last = (dense.sync - self.offset) // self.hop * self.hop + self.offset
            copies = -(-self.length // self.hop)
            rows = np.repeat(np.arange(len(dense)), copies)
            starts = last[rows] - np.tile(np.arange(copies), len(dense)) * self.hop
            keep = starts + self.length > dense.sync[rows]
            rows, starts = rows[keep], starts[keep]
            dense = dense.take(rows)
            end = starts + self.length
        cols = dict(dense.columns)
        cols["window_start"] = pa.array(end - self.length, pa.int64()).cast(pa.timestamp("us"))
        cols["window_end"] = pa.array(end, pa.int64()).cast(pa.timestamp("us"))
        self.emit(dense.replace(columns=cols))


FLAG_BITS = 62  # null flags of this many columns share one int64


def _identity_names(prefix: str, n: int, taken: set) -> tuple[list[str], list[str]]:
    """Names of a side's identity columns: null-flag words, then one filled value per column."""
    base = prefix
    while any(t.startswith(base) for t in taken):
        base += "_"
    flags = [f"{base}_nulls{i}" for i in range((n + FLAG_BITS - 1) // FLAG_BITS)]
    return flags, [f"{base}_{i}" for i in range(n)]


def _zero(t: pa.DataType) -> pa.Scalar:
    """A value of type ``t`` to stand for null in an identity column (the null flag tells them apart)."""
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return pa.scalar("", t)
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return pa.scalar(b"", t)
    if pa.types.is_boolean(t):
        return pa.scalar(False)
    try:
        return pa.array([0]).cast(t)[0]
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        raise PlanError(f"a join condition over a column of type {t} is not supported") from None


class RowIdentityOp(Operator):
    """Adds a null-safe identity of each row: null flags (bit ``i`` of word ``i // 62`` set when
    column ``i`` is null) and every column with its nulls filled; lifetimes unchanged."""

    name = "RowIdentity"
    variant = "columnar: null flags and null-filled copies of every column"

    def __init__(self, names: list, flags: list, values: list):
        super().__init__()
        self.names, self.flags, self.values = names, flags, values

    def on_batch(self, batch: EventBatch) -> None:
        dense = batch.compact()
        cols = dict(dense.columns)
        words = [np.zeros(len(dense), np.int64) for _ in self.flags]
        for i, (name, value) in enumerate(zip(self.names, self.values, strict=True)):
            col = cols[name]
            if col.null_count:
                nulls = np.asarray(col.is_null().to_numpy(zero_copy_only=False), dtype=bool)
                words[i // FLAG_BITS] |= nulls.astype(np.int64) << (i % FLAG_BITS)
                col = col.fill_null(_zero(col.type))
            cols[value] = col
        for flag, word in zip(self.flags, words, strict=True):
            cols[flag] = pa.array(word)
        self.emit(dense.replace(columns=cols))


class ShapeOp(Operator):
    """Selects the columns of ``schema`` in its order; a column the input lacks is all null."""

    name = "Shape"

    def __init__(self, schema: pa.Schema):
        super().__init__()
        self.schema = schema
        self.variant = "columns " + ", ".join(schema.names)

    def on_batch(self, batch: EventBatch) -> None:
        dense = batch.compact()
        n = len(dense)
        cols = {f.name: dense.columns[f.name] if f.name in dense.columns else pa.nulls(n, f.type) for f in self.schema}
        self.emit(dense.replace(columns=cols))


def _shaped(stream: Stream, schema: pa.Schema) -> Stream:
    make = lambda: ShapeOp(schema)  # noqa: E731
    return Stream(OperatorNode("Shape", (stream._node,), schema, stream.properties, make))


class TimeColumnFromSyncOp(Operator):
    """After a sort that adjusts late rows: the event-time column is set to the row's (moved) time."""

    name = "AdjustedTime"

    def __init__(self, column: str):
        super().__init__()
        self.column = column
        self.variant = f"{column} := event time (late rows moved up to the watermark)"

    def on_batch(self, batch: EventBatch) -> None:
        dense = batch.compact()
        cols = dict(dense.columns)
        cols[self.column] = pa.array(dense.sync, pa.int64()).cast(cols[self.column].type)
        self.emit(dense.replace(columns=cols))


class SessionColumnsOp(Operator):
    """After the engine's ``session_window``: each row becomes a start edge again, at its session's
    start ``S``, with ``window_start = S`` and ``window_end = E`` (the session's exclusive end),
    columns back in the SQL order (a keyed session puts its key first)."""

    name = "SessionColumns"
    variant = "interval [S, E) -> start edge at S with window_start S, window_end E"

    def __init__(self, names: tuple):
        super().__init__()
        self.names = names

    def on_batch(self, batch: EventBatch) -> None:
        dense = batch.compact()
        cols = {n: dense.columns[n] for n in self.names}
        cols["window_start"] = pa.array(dense.sync, pa.int64()).cast(pa.timestamp("us"))
        cols["window_end"] = pa.array(dense.other, pa.int64()).cast(pa.timestamp("us"))
        self.emit(dense.replace(other=np.full(len(dense), INFINITY, np.int64), columns=cols, key=None, hash=None))


# -- translation -------------------------------------------------------------------------------

NO_WATERMARK_LATENCY = 1 << 62  # event time without a watermark generator: nothing is late, sorted at the end


@dataclass
class TimeSpec:
    column: str | None = None  # file column holding event time
    generator: str | None = None
    params: tuple = ()
    ordinal: bool = False  # relational input under a TRIGGER: row i of a file is at tick i


def event_time_field(node: Node) -> str | None:
    """The column of ``node``'s output that is the event time (a window end after ``tumble``)."""
    if isinstance(node, EventTime):
        return node.time_field
    if isinstance(node, Tumble | Session):
        return "window_end"
    if isinstance(node, Filter):
        return event_time_field(node.input)
    if isinstance(node, Project):
        inner = event_time_field(node.input)
        hits = [n for n, e in node.exprs if isinstance(e, exp.Column) and e.name == inner]
        return hits[0] if inner is not None and hits else None
    if isinstance(node, Aggregate):
        inner = event_time_field(node.input)
        return inner if inner in node.keys else None
    if isinstance(node, Join):  # a side's event time (the left's when both have one) passes through
        return event_time_field(node.left) or event_time_field(node.right)
    if isinstance(node, UnionAll):
        left = event_time_field(node.left)
        return left if left is not None and left == event_time_field(node.right) else None
    return None


def has_event_time(node: Node) -> bool:
    if isinstance(node, EventTime | Tumble | Session):
        return True
    return any(has_event_time(i) for i in node.inputs)


class Translator:
    def __init__(
        self,
        on_error: str,
        stats: RunStats,
        subresults: dict,
        late_path: str | None,
        progressive: bool = False,
        late: str = "drop",
        labels: dict | None = None,
    ):
        self.progressive = progressive
        self.late = late
        self.labels = labels or {}  # internal column -> user's SQL (Query.labels), for error messages
        self.on_error = on_error
        self.stats = stats
        self.subresults = subresults
        self.late_path = late_path

    def stream(self, node: Node, time: TimeSpec | None = None) -> Stream:
        time = time or TimeSpec()
        if isinstance(node, Scan):
            return self.source(node, time)
        if isinstance(node, Filter):
            inner = self.stream(node.input, time)
            return self._op(inner, "SqlFilter", self._where(node.condition, node.input), node)
        if isinstance(node, Project):
            renames = {n: e.name for n, e in node.exprs if isinstance(e, exp.Column)}
            inner_time = time
            if time.column is not None:
                hits = [n for n, e in node.exprs if n == time.column and isinstance(e, exp.Column)]
                if not hits:
                    raise PlanError(f"the event time field {time.column} must be a column, not a computed value")
                inner_time = TimeSpec(renames[time.column], time.generator, time.params, time.ordinal)
            inner = self.stream(node.input, inner_time)
            return self._op(inner, "SqlProject", self._select(node.exprs, node.input), node)
        if isinstance(node, EventTime):
            if time.generator is not None:
                raise PlanError("an event time is declared twice (two watermark generators)")
            if time.column is not None and time.column != node.time_field:
                raise PlanError(f"tumble's time field {time.column} is not the watermark's {node.time_field}")
            return self.stream(node.input, TimeSpec(node.time_field, node.generator, node.params, time.ordinal))
        if isinstance(node, Tumble):
            inner_time = time if time.column is not None else TimeSpec(node.time_field, None, (), time.ordinal)
            if inner_time.column != node.time_field:
                raise PlanError(f"tumble's time field {node.time_field} is not the declared event time {time.column}")
            inner = self.stream(node.input, inner_time)
            label = "Tumble" if node.hop is None else "Hop"
            return self._op(inner, label, lambda: TumbleOp(node.length, node.offset, node.hop), node)
        if isinstance(node, Session):
            return self.session(node, time)
        if isinstance(node, UnionAll):
            return self.stream(node.left, time).union(self.stream(node.right, time))
        if isinstance(node, Join):
            # each side has its own event time (or none): time flows into the sides separately
            if time.column is not None:
                raise PlanError("declare the event time on a join's inputs, not on the join's result")
            left = self.stream(node.left, TimeSpec(ordinal=time.ordinal))
            right = self.stream(node.right, TimeSpec(ordinal=time.ordinal))
            lk, rk = list(node.left_keys), list(node.right_keys)
            if node.condition is not None:
                return self.residual_join(node, left, right)
            if node.kind == "cross":
                return left.cross_join(right)
            if node.kind == "inner":
                return left.join(right, lk, rk, left_is_small=node.build_left)
            if node.kind == "left":
                return left.left_outer_join(right, lk, rk)
            if node.kind == "semi":
                return left.where_exists(right, lk, rk)
            if node.kind == "anti":
                return left.where_not_exists(right, lk, rk)
            return left.full_outer_join(right, lk, rk)
        if isinstance(node, Aggregate):
            timed = has_event_time(node.input)
            # FIRST/LAST mean first/last in input order: relational rows then need their row ordinal as time
            ordered = any(c.function in ("first", "last") for c in node.aggs)
            ordinal = (bool(node.trigger) or ordered) and not timed
            inner_time = TimeSpec(time.column, time.generator, time.params, True) if ordinal else time
            inner = self.stream(node.input, inner_time)
            return self.aggregate(inner, node, timed, ordinal)
        raise PlanError(f"cannot translate {node.describe()}")

    def residual_join(self, node: Join, left: Stream, right: Stream) -> Stream:
        """An outer, semi or anti join whose ON condition has more than key equalities.

        The pairs that match are the inner join (or cross join, without keys) filtered by the
        condition. Which rows of a side have a match is found by a semi- or anti-join of that
        side against the matched pairs on a row identity: every column of the side, null-safe
        (a null flag per column and the value with nulls filled), so a row with nulls still finds
        its own pairs. Rows with equal columns have the same partners, so the identity need not
        tell them apart. Unmatched rows are padded with nulls and unioned with the pairs.
        """
        if node.left.schema() is None or node.right.schema() is None:
            raise PlanError(f"{node.describe()}: the column types of both sides must be known")
        lnames, rnames = list(node.left.names), list(node.right.names)
        taken = set(lnames) | set(rnames)
        lid = _identity_names("__lid", len(lnames), taken)
        rid = _identity_names("__rid", len(rnames), taken)
        left_ids = self._with_identity(left, lnames, lid).multicast()
        right_ids = self._with_identity(right, rnames, rid).multicast() if node.kind == "full" else right
        if node.left_keys:
            pairs = left_ids.join(right_ids, list(node.left_keys), list(node.right_keys))
        else:
            pairs = left_ids.cross_join(right_ids)
        make = self._where(node.condition, node)
        pairs = Stream(OperatorNode("SqlFilter", (pairs._node,), pairs.schema, pairs.properties, make)).multicast()
        lkeys = lid[0] + lid[1]
        out_schema = node.schema()
        if node.kind in ("semi", "anti"):
            matched_ids = _shaped(pairs, pa.schema([pairs.schema.field(n) for n in lkeys]))
            kept = (
                left_ids.where_exists(matched_ids, lkeys, lkeys)
                if node.kind == "semi"
                else left_ids.where_not_exists(matched_ids, lkeys, lkeys)
            )
            return _shaped(kept, out_schema)
        out = _shaped(pairs, out_schema)
        unmatched_left = left_ids.where_not_exists(
            _shaped(pairs, pa.schema([pairs.schema.field(n) for n in lkeys])), lkeys, lkeys
        )
        out = out.union(_shaped(unmatched_left, out_schema))
        if node.kind == "full":
            rkeys = rid[0] + rid[1]
            unmatched_right = right_ids.where_not_exists(
                _shaped(pairs, pa.schema([pairs.schema.field(n) for n in rkeys])), rkeys, rkeys
            )
            out = out.union(_shaped(unmatched_right, out_schema))
        return out

    def _with_identity(self, side: Stream, names: list, ids: tuple) -> Stream:
        flags, values = ids
        fields = list(side.schema) + [pa.field(f, pa.int64()) for f in flags]
        fields += [pa.field(v, side.schema.field(n).type) for n, v in zip(names, values, strict=True)]
        schema = pa.schema(fields)
        make = lambda: RowIdentityOp(names, flags, values)  # noqa: E731
        return Stream(OperatorNode("RowIdentity", (side._node,), schema, side.properties, make))

    def session(self, node: Session, time: TimeSpec) -> Stream:
        """The engine's ``session_window`` (per key through ``group_apply``), then rows as start edges."""
        inner_time = time if time.column is not None else TimeSpec(node.time_field, None, (), time.ordinal)
        if inner_time.column != node.time_field:
            raise PlanError(f"session's time field {node.time_field} is not the declared event time {time.column}")
        inner = self.stream(node.input, inner_time)
        if not inner.properties.start_edge_only:
            raise PlanError("session(...) takes rows (a file, a filter or projection of one), not a changing result")
        gap, cap = node.gap, node.max_duration
        if node.keys:
            sessions = inner.group_apply(list(node.keys), lambda per_key: per_key.session_window(gap, cap))
        else:
            sessions = inner.session_window(gap, cap)
        names = node.input.names
        props = inner.properties.but(grouping=())
        make = lambda: SessionColumnsOp(names)  # noqa: E731
        return Stream(OperatorNode("SessionColumns", (sessions._node,), node.schema(), props, make))

    def labels_for(self, node: Node) -> dict[str, str]:
        return column_labels(node, self.labels)

    def _rewrite(self, node: Node):
        return partial(user_message, labels=self.labels_for(node))

    def _where(self, condition: exp.Expression, node: Node):
        """A factory of filters by ``condition`` over ``node``'s rows (translated once, per-run state per filter)."""
        expr, schema, rewrite = translate(condition), node.schema(), self._rewrite(node)
        return lambda: WhereOp(compiled(expr, truth=True, schema=schema, subresults=self.subresults, rewrite=rewrite))

    def _select(self, exprs: tuple, node: Node):
        """A factory of projections of ``node``'s rows by ``exprs`` (a SELECT list)."""
        expr, schema, rewrite = translate_record(exprs), node.schema(), self._rewrite(node)
        return lambda: SelectOp(compiled(expr, truth=False, schema=schema, subresults=self.subresults, rewrite=rewrite))

    def _op(self, inner: Stream, label: str, factory, node: Node) -> Stream:
        schema = node.schema()
        return Stream(OperatorNode(label, (inner._node,), schema, inner.properties.but(grouping=()), factory))

    def aggregate(self, inner: Stream, node: Aggregate, timed: bool, ordinal: bool = False) -> Stream:
        from .. import agg  # the engine's aggregates (tidal.agg)

        makers = {}
        for call in node.aggs:
            fn = getattr(agg, call.function, None)
            if fn is None:
                raise PlanError(f"aggregate {call.function} is not available in this engine")
            args = [] if call.argument is None else [call.argument]
            if call.parameter is not None:
                args.append(call.parameter)
            makers[call.output] = fn(*args)
        spec = trigger_spec(node.trigger)
        distinct = not makers
        if distinct and not (node.trigger or timed or ordinal):
            # DISTINCT of a changing result: the engine's distinct emits a row when its count
            # leaves 0 and retracts it when the count returns to 0 (no churn as counts change)
            return inner.select(*node.keys).distinct()
        if distinct:  # DISTINCT: group on every column, count, then drop the count
            makers[DISTINCT_COUNT] = agg.count()
        count_field = None
        if spec.counting is not None:
            count_field = DISTINCT_COUNT if distinct else TRIGGER_ROWS
            makers.setdefault(count_field, agg.count())
        if node.keys:
            out = inner.group_aggregate(list(node.keys), **makers)
        else:
            out = inner.aggregate(**makers)
        if node.trigger or timed or ordinal:
            # input over time changes a key's value at every tick: without a TRIGGER, materialise at end of input
            evt = event_time_field(node.input)
            schema = out.schema
            keys = tuple(node.keys)
            make = lambda: TriggerOp(  # noqa: E731
                spec, schema, keys, evt if evt in keys else None, count_field, has_clock=timed
            )
            out_schema = pa.schema([f for f in schema if f.name != count_field])
            out = Stream(OperatorNode("Trigger", (out._node,), out_schema, out.properties, make))
        if distinct:
            out = out.select(*node.keys)
        elif count_field is not None and count_field in out.schema.names:
            out = out.select(*[n for n in out.schema.names if n != count_field])
        return out

    def source(self, scan: Scan, time: TimeSpec) -> Stream:
        predicate = pushable_predicate(scan.predicate) if scan.predicate is not None else None
        file_names = list(scan.file_columns)
        if time.column is not None and time.column not in scan.names:
            raise PlanError(f"event time field {time.column} is not a column of {scan.path}")
        stats, on_error = self.stats, self.on_error

        def read_table() -> pa.Table:
            got = read_file(
                scan.path,
                format=scan.format,
                options=dict(scan.options),
                on_error=on_error,
                columns=file_names,
                predicate=predicate,
                schema=pa.schema([pa.field(c, t) for c, t in zip(scan.file_columns, scan.types, strict=True)]),
            )
            stats.skipped += got.skipped
            table = got.table.rename_columns(list(scan.names))
            if time.column is not None:
                table = _time_as_timestamp(table, time.column, scan.path)
            stats.rows_total += table.num_rows
            return table

        def record_batches(table: pa.Table | None = None):
            for rb in (table if table is not None else read_table()).to_batches(max_chunksize=BATCH_ROWS):
                stats.rows_read += rb.num_rows
                stats.progress()
                yield rb

        schema = scan.schema()
        if time.column is None:
            kind = "row ordinal" if time.ordinal else "time 0"
            if self.progressive:
                kind = f"their position in the file (ticks of 1/{PROGRESS_TICKS:,})"
            detail = f"{scan.describe()}; rows as start edges at {kind}"
            return Stream(
                SourceNode(
                    lambda: _relational(read_table, record_batches, time.ordinal, self.progressive),
                    schema,
                    Properties(start_edge_only=True),
                    detail,
                )
            )
        if time.generator == "percentile":
            detail = f"{scan.describe()}; rows as start edges at event time {time.column}"
            detail += f"; percentile_watermark {dict(time.params)}"
            late_path, adjust = self.late_path, self.late == "adjust"

            def open_messages():
                return _percentile_messages(record_batches(), time, stats, late_path, scan.path, adjust)

            return Stream(SourceNode(open_messages, schema, Properties(start_edge_only=True), detail))
        # event time: arrival order in, Impatience sort out; the reorder latency is the watermark's offset
        params = dict(time.params)
        latency = int(params.get("offset", 0)) if time.generator == "max_diff" else NO_WATERMARK_LATENCY
        detail = f"{scan.describe()}; rows as start edges at event time {time.column}, in arrival order"
        if time.generator:
            detail += f"; max_diff_watermark offset {latency} us"
        else:
            detail += "; no watermark generator: nothing is late, sorted at end of input"
        node = SourceNode(
            lambda: disordered_messages(record_batches, time.column, kind="start"),
            schema,
            Properties(start_edge_only=True),
            detail,
        )
        adjust = self.late == "adjust" and time.generator is not None
        out = DisorderedStream(node).to_stream(reorder_latency=latency, disorder="adjust" if adjust else "drop")
        if adjust:  # the sort moved late rows' times up: the event-time column says so too
            column = time.column
            make = lambda: TimeColumnFromSyncOp(column)  # noqa: E731
            out = Stream(OperatorNode("AdjustedTime", (out._node,), out.schema, out.properties, make))
        return out


DISTINCT_COUNT = "__distinct_count"
TRIGGER_ROWS = "__trigger_rows"


def trigger_spec(trigger: tuple) -> TriggerSpec:
    counting = [t[1] for t in trigger if t[0] == "counting"]
    delay = [t[1] for t in trigger if t[0] == "delay"]
    for n in counting:
        if n <= 0:
            raise PlanError(f"TRIGGER COUNTING needs a positive number of rows, got {n}")
    for d in delay:
        if d < 0:
            raise PlanError("TRIGGER AFTER DELAY needs a non-negative interval")
    return TriggerSpec(
        counting=min(counting) if counting else None,
        delay=min(delay) if delay else None,
        watermark=any(t[0] == "watermark" for t in trigger),
    )


def _time_as_timestamp(table: pa.Table, name: str, path: str) -> pa.Table:
    col = table.column(name)
    t = col.type
    if pa.types.is_date(t):
        return table.set_column(table.column_names.index(name), name, col.cast(pa.timestamp("us")))
    if not (pa.types.is_timestamp(t) or pa.types.is_integer(t)):
        raise InputError(f"{path}: event time field {name} is {t}; it must be a timestamp, date or integer")
    if pa.types.is_timestamp(t) and t.unit != "us":
        return table.set_column(table.column_names.index(name), name, col.cast(pa.timestamp("us", t.tz)))
    return table


PROGRESS_TICKS = 1_000_000  # progressive mode: a row's tick is its position in its file, in millionths


def _relational(read_table, record_batches, ordinal: bool, progressive: bool = False):
    """Rows as start edges at time 0, at their row ordinal (so a TRIGGER sees them one by one), or,
    in progressive mode, at their position in the file in millionths (all files share that axis)."""
    table = read_table()
    total = max(table.num_rows, 1)
    done = 0
    for rb in record_batches(table):
        n = rb.num_rows
        if n == 0:
            continue
        if progressive:
            sync = np.arange(done + 1, done + n + 1, dtype=np.int64) * PROGRESS_TICKS // total
        elif ordinal:
            sync = np.arange(done, done + n, dtype=np.int64)
        else:
            sync = np.zeros(n, np.int64)
        done += n
        cols = {name: rb.column(i) for i, name in enumerate(rb.schema.names)}
        yield EventBatch(sync, np.full(n, INFINITY, np.int64), cols)
        if ordinal or progressive:
            yield Punctuation(int(sync[-1]) + 1)
    yield Completed()


def _as_ticks(col: pa.ChunkedArray | pa.Array, name: str, path: str) -> np.ndarray:
    if col.null_count:
        row = int(pc.index(pc.is_null(col), True).as_py())
        raise InputError(f"{path}: row {row + 1}: event time field {name} is null")
    t = col.type
    if pa.types.is_timestamp(t):
        col = col.cast(pa.timestamp("us", t.tz)).cast(pa.int64())
    elif not pa.types.is_integer(t):
        raise InputError(f"{path}: event time field {name} is {t}; it must be a timestamp, date or integer")
    return np.asarray(col.to_numpy(), dtype=np.int64)


def _percentile_messages(
    batches, time: TimeSpec, stats: RunStats, late_path: str | None, path: str, adjust: bool = False
):
    """The percentile watermark (seed 002 section 2.5): late rows counted and routed (or, with
    ``adjust``, moved up to the watermark they were behind), the rest released in event-time order
    as the watermark passes them (an Impatience sorter holds the rest)."""
    params = dict(time.params)
    got = list(batches)
    if not got:
        yield Completed()
        return
    table = pa.Table.from_batches(got)
    n = table.num_rows
    ticks = _as_ticks(table.column(time.column), time.column, path) if n else np.empty(0, np.int64)
    marks = percentile_watermarks(ticks, int(params["events"]), float(params["percentile"]), int(params["frequency"]))
    if n:
        late = late_mask(ticks, marks)
        stats.watermark = int(marks[-1])
        if late.any():
            stats.late += int(late.sum())
            if adjust:
                ticks = np.where(late, np.concatenate([[ticks[0]], marks[:-1]]), ticks)
                i = table.column_names.index(time.column)
                table = table.set_column(i, time.column, pa.array(ticks, pa.int64()).cast(table.column(i).type))
            else:
                if late_path:
                    _write_late(table.filter(pa.array(late)), late_path)
                table, ticks, marks = table.filter(pa.array(~late)), ticks[~late], marks[~late]
    sorter = ImpatienceSorter()
    released = np.iinfo(np.int64).min
    for start in range(0, table.num_rows, BATCH_ROWS):
        stop = min(start + BATCH_ROWS, table.num_rows)
        sorter.push(ticks[start:stop])
        mark = int(marks[stop - 1])
        if mark > released:
            yield from _released(table, start, *sorter.punctuate(mark))
            yield Punctuation(mark)
            released = mark
    yield from _released(table, 0, *sorter.flush_all())
    stats.watermark = INFINITY
    yield Completed()


def _released(table: pa.Table, _offset: int, times: np.ndarray, rows: np.ndarray):
    if len(times):
        part = table.take(pa.array(rows)).combine_chunks()
        cols = {name: part.column(name).combine_chunks() for name in part.column_names}
        yield EventBatch(times, np.full(len(times), INFINITY, np.int64), cols)


def _write_late(rows: pa.Table, path: str) -> None:
    with open(path, "a") as fh:
        for row in rows.to_pylist():
            fh.write(json.dumps(row, default=str) + "\n")


# -- results ---------------------------------------------------------------------------------


def final_snapshot(events: pa.Table) -> pa.Table:
    """The payloads alive at the end of time: start edges not retracted by an end edge."""
    sync = events.column("sync_time").to_numpy()
    other = events.column("other_time").to_numpy()
    payload = events.drop_columns(["sync_time", "other_time"])
    starts = other == INFINITY
    ends = (other < sync) & ~starts
    if not ends.any():
        return payload.filter(pa.array(starts))
    names = payload.column_names
    rows = list(zip(*[payload.column(n).to_pylist() for n in names], strict=True)) if names else [()] * len(sync)
    retracted = Counter(r for r, e in zip(rows, ends, strict=True) if e)
    keep = np.zeros(len(rows), bool)
    # an end edge retracts one copy of the start edge with the same payload (the latest one)
    for i in range(len(rows) - 1, -1, -1):
        if not starts[i]:
            continue
        r = rows[i]
        if retracted[r] > 0:
            retracted[r] -= 1
        else:
            keep[i] = True
    return payload.filter(pa.array(keep))


@dataclass
class SqlQuery:
    """A planned statement: explain it, run it, read the final answer or the changelog."""

    text: str
    query: Query
    logical: Node
    optimized: Node
    rules_applied: list[str]
    on_error: str = "fail"
    late_path: str | None = None
    stats: RunStats = field(default_factory=RunStats)
    progressive: bool = False  # rows at their position in the input (see --progressive)
    late: str = "drop"  # LATE_POLICIES
    subquery: bool = False  # an IN (subquery) run by its outer query (which owns the late-records file)

    def _subresults(self) -> dict:
        out = {}
        for key, sub in self.query.subplans.items():
            inner = SqlQuery(
                self.text,
                sub,
                sub.root,
                optimize(sub.root)[0],
                [],
                self.on_error,
                self.late_path,
                late=self.late,
                subquery=True,
            )
            table = inner.result()
            out[key] = table.column(0).combine_chunks()
            for name in ("rows_read", "rows_total", "skipped", "late"):
                setattr(self.stats, name, getattr(self.stats, name) + getattr(inner.stats, name))
        return out

    def stream(self) -> Stream:
        """The tidal stream plan (runs the IN subqueries first: their results are constants)."""
        translator = Translator(
            self.on_error,
            self.stats,
            self._subresults(),
            self.late_path,
            self.progressive,
            self.late,
            self.query.labels,
        )
        return _with_limit(translator.stream(self.optimized), self.query)

    def _finish(self, table: pa.Table, ordered: bool = True, limited: bool = True) -> pa.Table:
        """The answer from a snapshot of the plan's output: ordered, visible columns under their
        display names (``limited=False``: also LIMIT/OFFSET, for a snapshot taken before the TopK)."""
        q = self.query
        if table.num_rows == 0 and _global_aggregate(self.optimized):
            table = _empty_aggregate_row(self.optimized, table.schema)
        if q.order and ordered:
            table = table.take(_order_indices(table, q.order))
        if (q.offset or q.limit is not None) and not limited:
            table = table.slice(q.offset, q.limit if q.limit is not None else None)
        visible = table.column_names[: table.num_columns - q.hidden]
        return table.select(visible).rename_columns(list(q.output_names))

    def run(self, sink: Consumer) -> Stream:
        """Run the plan once into ``sink``; late rows go to the late-records file, counts to ``stats``."""
        stats = self.stats
        stats.rows_read = stats.rows_total = stats.skipped = stats.late = 0
        stats.watermark = None
        if self.late_path and not self.subquery:
            open(self.late_path, "w").close()  # each run starts a fresh late-records file
        stream = self.stream()
        sorts = sorts_in(stream._node)
        roots: list = [stream._node]
        sinks: list = [sink]
        for sort in sorts:
            roots.append(LateNode(sort))
            sinks.append(_LateSink(self.late_path))
            roots.append(OperatorNode("WatermarkTap", (sort,), sort.schema, sort.props, lambda: _WatermarkTap(stats)))
            sinks.append(_Discard())
        execute_many(roots, sinks)
        stats.late += sum(s.stats.late for s in sorts)
        stats.watermark = INFINITY
        return stream

    def events(self) -> pa.Table:
        """The physical output events (``sync_time``, ``other_time``, payload)."""
        sink = CollectSink(None)
        stream = self.run(sink)
        sink.schema = stream.schema
        return sink.table()

    def result(self) -> pa.Table:
        """The final answer (the batch view), in SELECT order, ordered and limited."""
        return self._finish(final_snapshot(self.events()))

    def changelog(self) -> pa.Table:
        """Every insert and retraction: ``time``, ``undo``, then the SELECT columns."""
        events = self.events()
        q = self.query
        # payload columns by position while the log is built: a result column may be named time or undo
        width = events.num_columns - 2
        events = events.rename_columns([*events.column_names[:2], *(f"__c{i}" for i in range(width))])
        log = changelog_from_table(events)
        out = log.select(["time", "undo", *(f"__c{i}" for i in range(width - q.hidden))])
        return out.rename_columns(["time", "undo", *q.output_names])

    def visible_names(self) -> list[str]:
        """The physical names of the SELECT columns, in order (ORDER BY's hidden columns excluded)."""
        names = list(self.optimized.names)
        return names[: len(names) - self.query.hidden]

    def explain(self) -> str:
        parts = ["Logical plan:", explain_logical(self.logical), ""]
        parts.append("Rewrites applied: " + (", ".join(self.rules_applied) or "none"))
        parts += ["", "Optimized logical plan:", explain_logical(self.optimized), "", "Stream plan:"]
        translator = Translator(self.on_error, self.stats, {}, None, late=self.late)
        q = self.query
        parts.append(_with_limit(translator.stream(self.optimized), q).explain())
        if q.order or q.limit is not None or q.offset:
            parts.append(
                f"Final result: order by {[(n, 'desc' if d else 'asc') for n, d, _ in q.order]}, "
                f"limit {q.limit}, offset {q.offset}"
                + ("; the changelog carries the limited window as it changes (TopK)" if q.limit is not None else "")
            )
        return "\n".join(parts)


class _LateSink(Consumer):
    """Late rows of a sort: appended to the late-records file (payload columns, one JSON object a line)."""

    def __init__(self, path: str | None):
        self.path = path

    def on_batch(self, batch: EventBatch) -> None:
        if self.path:
            _write_late(
                pa.Table.from_batches([batch.to_record_batch()]).drop_columns(["sync_time", "other_time"]), self.path
            )


class _WatermarkTap(Operator):
    """Records the sort's punctuations (the watermark) in the run's statistics."""

    name = "WatermarkTap"

    def __init__(self, stats: RunStats):
        super().__init__()
        self.stats = stats

    def on_batch(self, batch: EventBatch) -> None:
        pass

    def on_punctuation(self, time: int) -> None:
        self.stats.watermark = time
        self.stats.progress()


class _Discard(Consumer):
    def on_batch(self, batch: EventBatch) -> None:
        pass


def _with_limit(stream: Stream, q: Query) -> Stream:
    """LIMIT/OFFSET of a changing result: the TopK keeps the window of every snapshot."""
    if q.limit is None and not q.offset:
        return stream
    schema, order, limit, offset = stream.schema, list(q.order), q.limit, q.offset
    starts_only = stream.properties.start_edge_only
    make = lambda: TopKOp(schema, order, limit, offset, starts_only)  # noqa: E731
    node = OperatorNode("TopK", (stream._node,), schema, stream.properties.but(grouping=()), make)
    node.partitioning = ((),)  # one window over the whole result
    return Stream(node)


PER_KEY_NULL_PLACEMENT = int(pa.__version__.split(".")[0]) >= 25


def _order_indices(table: pa.Table, order) -> pa.Array:
    """ORDER BY's row order: each key ascending or descending, nulls last unless NULLS FIRST; rows
    tied on the keys by every (flat) column ascending, as the changelog's TopK orders them."""
    keys = [(name, "descending" if desc else "ascending", "at_start" if nf else "at_end") for name, desc, nf in order]
    keys += [
        (f.name, "ascending", "at_end")
        for f in table.schema
        if not pa.types.is_nested(f.type) and f.name not in {k[0] for k in keys}
    ]
    if PER_KEY_NULL_PLACEMENT:
        return pc.sort_indices(table, sort_keys=keys)
    # older pyarrow: one null placement for all keys (the first key's)
    return pc.sort_indices(table, sort_keys=[k[:2] for k in keys], null_placement=keys[0][2])


def _global_aggregate(node: Node) -> Aggregate | None:
    while isinstance(node, Project | Filter):
        node = node.input
    return node if isinstance(node, Aggregate) and not node.keys and node.aggs else None


def _empty_aggregate_row(root: Node, schema: pa.Schema) -> pa.Table:
    """SQL's answer for a global aggregate over no rows: one row (count 0, others null), then HAVING."""
    chain = []
    node = root
    while isinstance(node, Project | Filter):
        chain.append(node)
        node = node.input
    cols = {}
    for call, t in zip(node.aggs, node.types, strict=True):
        zero = call.function in ("count", "count_not_null", "count_distinct")
        cols[call.output] = pa.array([0 if zero else None], t if t is not None else pa.int64())
    n = 1
    for step in reversed(chain):
        ev = Evaluator(cols, n)
        if isinstance(step, Filter):
            keep = ev.mask(step.condition)
            cols = {k: v.filter(keep) for k, v in cols.items()}
            n = len(keep.filter(keep))
        else:
            cols = {name: ev.array(e) for name, e in step.exprs}
    table = pa.table(cols) if cols else pa.table({})
    try:
        return table.cast(schema) if len(schema) == table.num_columns else table
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return table


def plan(text: str, *, on_error: str = "fail", late_path: str | None = None, late: str | None = None) -> SqlQuery:
    """Parse, plan and optimize one query of tidal's dialect.

    ``late`` is the late-row policy (:data:`LATE_POLICIES`): ``drop``, ``file`` (drop and write
    them to ``late_path``, truncated at the start of each run) or ``adjust`` (move their time up
    to the watermark). It defaults to ``file`` when ``late_path`` is given, else ``drop``.
    """
    late = late or ("file" if late_path else "drop")
    if late not in LATE_POLICIES:
        raise PlanError(f"the late-row policy is one of {', '.join(LATE_POLICIES)}, got {late!r}")
    if late == "file" and not late_path:
        raise PlanError("late rows to a file: give the file (--late-records PATH)")
    if late != "file" and late_path:
        raise PlanError(f"a late-records file only applies to the 'file' policy, not {late!r}")
    tree = parse(text)
    query = Builder().build(tree)
    optimized, applied = optimize(query.root)
    return SqlQuery(text, query, query.root, optimized, applied, on_error, late_path, late=late)
