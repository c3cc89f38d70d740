"""From the logical plan to a tidal stream plan (running it and shaping its result: :mod:`.query`).

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
  late and always counted; the late policy (:data:`~tidal.sql.query.LATE_POLICIES`) drops them (``drop``), drops
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

from dataclasses import dataclass
from functools import partial

import numpy as np
import pyarrow as pa
from sqlglot import exp

from ..core.batch import EventBatch
from ..core.errors import InputError, PlanError
from ..core.messages import Completed, Punctuation
from ..core.time import EARLIEST, INFINITY, LATEST
from ..io.disorder import disordered_messages
from ..io.files import read_file
from ..ops.aggregate.functions import ORDER_SENSITIVE
from ..ops.pattern.conditions import SqlDefine
from ..ops.shape import identity_names
from ..ops.trigger import TriggerSpec
from ..ops.watermark import percentile_messages
from ..plan import nodes
from ..plan.nodes import Source
from ..plan.nodes import relational as rel
from ..plan.properties import Properties
from ..stream.disordered import DisorderedStream
from ..stream.streamable import Stream
from .expressions import pushable_predicate, translate, translate_record
from .logical import (
    Aggregate,
    EventTime,
    Filter,
    Join,
    Limit,
    MatchRecognize,
    Node,
    Project,
    Query,
    Scan,
    Session,
    Tumble,
    UnionAll,
    WindowFunctions,
    column_labels,
    event_time_field,
    user_message,
)
from .stats import RunStats  # noqa: F401  (where the runners have always found it)
from .topn import endless, top_n, top_n_filters

# aggregates of values in input order (or ties broken by it): relational rows then need their row ordinal as time
ORDERED_AGGS = ORDER_SENSITIVE

BATCH_ROWS = 65_536


def _shaped(stream: Stream, schema: pa.Schema) -> Stream:
    return Stream(rel.Shape(stream.node, schema))


# -- translation -------------------------------------------------------------------------------

# event time without a watermark generator: nothing is late, sorted at the end. The latency spans the whole range of
# event times (2**62 did not: after a row at 2**62 - 1, one at -2**62 was dropped as late)
NO_WATERMARK_LATENCY = LATEST - EARLIEST


@dataclass
class TimeSpec:
    column: str | None = None  # file column holding event time
    generator: str | None = None
    params: tuple = ()
    ordinal: bool = False  # relational input under a TRIGGER: row i of a file is at tick i


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
        batch_latency: float | None = None,
        batch_rows: int | None = None,
        live: bool = False,
    ):
        self.live = live  # the live table: keys without a TRIGGER fire as they change (same final answer)
        self.final_only: set[int] = set()  # ids of Top-N filters whose changes only the final snapshot reads
        self.batch_latency = batch_latency  # seconds; None: the live reader's default
        self.batch_rows = batch_rows
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
            found = top_n(node)
            if found is None:
                inner = self.stream(node.input, time)
            else:  # WHERE rn <= N over ROW_NUMBER(): a Top-N per partition, then the filter
                window, call, limit = found
                below = self.stream(window.input, time).node
                at_end = id(node) in self.final_only  # read only by a window function computed at the end
                rn = rel.RowNumber(below, list(call.partition), list(call.order), limit, call.output, at_end)
                inner = Stream(rn)
            filtered = self._filter(inner, node.condition, node.input)
            return Stream(filtered.node.but(schema=node.schema(), props=inner.properties.but(grouping=())))
        if isinstance(node, Project):
            renames = {n: e.name for n, e in node.exprs if isinstance(e, exp.Column)}
            inner_time = time
            if time.column is not None:
                hits = [n for n, e in node.exprs if n == time.column and isinstance(e, exp.Column)]
                if not hits:
                    raise PlanError(f"the event time field {time.column} must be a column, not a computed value")
                inner_time = TimeSpec(renames[time.column], time.generator, time.params, time.ordinal)
            inner = self.stream(node.input, inner_time)
            record, rows = translate_record(node.exprs), node.input.schema()
            projected = nodes.SqlProject(inner.node, record, rows, self.subresults, self._rewrite(node.input))
            return Stream(projected.but(schema=node.schema(), props=inner.properties.but(grouping=())))
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
            return Stream(rel.Tumble(inner.node, node.length, node.offset, node.hop, node.schema(), node.align))
        if isinstance(node, Session):
            return self.session(node, time)
        if isinstance(node, MatchRecognize):
            return self.match_recognize(node, time)
        if isinstance(node, UnionAll):
            return self.stream(node.left, time).union(self.stream(node.right, time))
        if isinstance(node, Join):
            # each side has its own event time (or none): time flows into the sides separately
            if time.column is not None:
                raise PlanError("declare the event time on a join's inputs, not on the join's result")
            if node.kind == "inner" and node.build_left and isinstance(node.left, Project | Scan):
                from . import postgres  # a stream joined to a database table: look its keys up

                looked = postgres.lookup_join(self, node, TimeSpec(ordinal=time.ordinal))
                if looked is not None:
                    return looked
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
        if isinstance(node, WindowFunctions):
            # over event time, as a grouped aggregate without a TRIGGER, computed at end of input (a live
            # view, or input that may never end: at every tick); a Top-N read only through filters and
            # projections then numbers once too. Rows without event time are all at time 0 (one tick: the
            # end is the only answer), unless a TRIGGER numbers them by row (each row then its own tick)
            timed = has_event_time(node.input) or not time.ordinal
            at_end = not self.live and timed and not endless(node.input)
            if at_end:
                self.final_only |= top_n_filters(node.input)
            inner = self.stream(node.input, time)
            types = node.types[len(node.input.names) :]
            return Stream(rel.WindowFunctions(inner.node, node.calls, types, at_end))
        if isinstance(node, Limit):
            if time.column is not None:
                raise PlanError("an event time over a subquery with LIMIT/OFFSET is not supported")
            inner = self.stream(node.input, time)
            return Stream(rel.TopK(inner.node, list(node.order), node.limit, node.offset))
        if isinstance(node, Aggregate):
            timed = has_event_time(node.input)
            # FIRST/LAST mean first/last in input order: relational rows then need their row ordinal as time
            ordered = any(c.function in ORDERED_AGGS for c in node.aggs)
            ordinal = (bool(node.trigger) or ordered) and not timed
            if timed:  # GROUP BY a tumble's or hop's window: on the engine's windows where that applies
                from .windowed import windowed_aggregate

                def rows_of(tumble: Tumble) -> Stream:
                    return self.stream(tumble.input, TimeSpec(tumble.time_field, None, (), time.ordinal))

                def project(rows: Stream, below: Node, exprs: tuple, schema: pa.Schema) -> Stream:
                    record = translate_record(exprs)
                    added = nodes.SqlProject(rows.node, record, below.schema(), self.subresults, self._rewrite(below))
                    return Stream(added.but(schema=schema, props=rows.properties.but(grouping=())))

                distinct = None if node.aggs else DISTINCT_COUNT
                spec = trigger_spec(node.trigger)
                windowed = windowed_aggregate(rows_of, node, spec, distinct, time, project)
                if windowed is not None:
                    return windowed
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
        lid = identity_names("__lid", len(lnames), taken)
        rid = identity_names("__rid", len(rnames), taken)
        left_ids = self._with_identity(left, lnames, lid).multicast()
        right_ids = self._with_identity(right, rnames, rid).multicast() if node.kind == "full" else right
        if node.left_keys:
            pairs = left_ids.join(right_ids, list(node.left_keys), list(node.right_keys))
        else:
            pairs = left_ids.cross_join(right_ids)
        pairs = self._filter(pairs, node.condition, node).multicast()
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
        return Stream(rel.RowIdentity(side.node, names, flags, values))

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
        return Stream(rel.SessionColumns(sessions.node, names, node.schema(), props))

    def match_recognize(self, node: MatchRecognize, time: TimeSpec) -> Stream:
        """The engine's ``detect`` per partition (``group_apply``) over the rows in event-time order;
        each match a row (a start edge) at the time of its last row."""
        if time.column is not None:
            raise PlanError("declare the event time on MATCH_RECOGNIZE's input, not on its result")
        inner = self.stream(node.input, TimeSpec(node.time_field, None, (), time.ordinal))
        if not inner.properties.start_edge_only:
            raise PlanError("MATCH_RECOGNIZE takes rows (a file, a filter or projection of one), not a changing result")
        rows = node.input.schema()
        define = {}
        for var, cond, refs in node.define:
            types = dict(zip(node.input.names, node.input.types, strict=True))
            extra = [pa.field(f"__ref{k}", types[r.column]) for k, r in enumerate(refs)]
            schema = None if rows is None else pa.schema([*rows, *extra])
            e = translate(cond)
            define[var] = SqlDefine(e.node, e.texts, e.sql, refs, schema, self._rewrite(node.input))
        measures = dict(node.measures)

        def detect(s: Stream) -> Stream:
            return Stream(nodes.Detect(s.node, node.pattern, define, measures, node.within, node.skip, "start_edge"))

        out = inner.group_apply(list(node.keys), detect) if node.keys else detect(inner)
        return Stream(out.node.but(schema=node.schema(), props=out.properties.but(grouping=())))

    def labels_for(self, node: Node) -> dict[str, str]:
        return column_labels(node, self.labels)

    def _rewrite(self, node: Node):
        """Rewrites an error message about ``node``'s rows into the user's terms."""
        return partial(user_message, labels=self.labels_for(node))

    def _filter(self, inner: Stream, condition: exp.Expression, rows: Node) -> Stream:
        """``inner`` filtered by a SQL ``condition`` over ``rows`` (translated once; compiled per run)."""
        return Stream(
            nodes.SqlFilter(inner.node, translate(condition), rows.schema(), self.subresults, self._rewrite(rows))
        )

    def aggregate(self, inner: Stream, node: Aggregate, timed: bool, ordinal: bool = False) -> Stream:
        from .. import agg  # the engine's aggregates (tidal.agg)

        makers = {}
        for call in node.aggs:
            fn = getattr(agg, call.function, None)
            if fn is None:
                raise PlanError(f"aggregate {call.function} is not available in this engine")
            args = [] if call.argument is None else [call.argument]
            if call.parameter is not None or call.function == "string_agg":  # its None separator means NULL
                args.append(call.parameter)
            makers[call.output] = fn(*args)
        spec = trigger_spec(node.trigger)
        if self.live and not node.trigger and (timed or ordinal):
            # a live view shows the current snapshot: each key fires at every tick it changes (a
            # trigger decides how often the view is materialised, never the final answer)
            spec = TriggerSpec(counting=1)
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
        if (timed or ordinal) and not (node.trigger or self.live or self.progressive):
            # only the value at end of input is read (the trigger fires every key there, once)
            out = _read_at_end(out)
        if not node.keys and not (node.trigger or timed):  # over no rows SQL still has a row: counts 0, the rest NULL
            zero = {c.output: 0 for c in node.aggs if c.function in ("count", "count_not_null", "count_distinct")}
            out = Stream(rel.EmptyDefault(out.node, zero))
        if node.trigger or timed or ordinal:
            # input over time changes a key's value at every tick: without a TRIGGER, materialise at end of input
            evt = event_time_field(node.input)
            keys = tuple(node.keys)
            out = Stream(rel.Trigger(out.node, spec, keys, evt if evt in keys else None, count_field, has_clock=timed))
        if distinct:
            out = out.select(*node.keys)
        elif count_field is not None and count_field in out.schema.names:
            out = out.select(*[n for n in out.schema.names if n != count_field])
        return out

    def source(self, scan: Scan, time: TimeSpec) -> Stream:
        if scan.format == "kafka":  # a topic, not a file (tidal/sql/kafka.py)
            from .kafka import kafka_source

            return kafka_source(self, scan, time)
        if scan.format == "redis":  # a Redis Stream, not a file (tidal/sql/redis.py)
            from .redis import redis_source

            return redis_source(self, scan, time)
        predicate = pushable_predicate(scan.predicate) if scan.predicate is not None else None
        reader = read_file
        if scan.format == "postgres":  # a database: the pushed filter and projection go into its SQL
            from . import postgres

            reader = partial(postgres.read_table, scan, dead_letter=getattr(self, "dead_letter", None))
        file_names = list(scan.file_columns)
        if time.column is not None and time.column not in scan.names:
            raise PlanError(f"event time field {time.column} is not a column of {scan.path}")
        stats, on_error = self.stats, self.on_error
        if scan.live:
            from .live import live_source

            node = live_source(self, scan, time, predicate, _time_as_timestamp)
            if time.column is None:
                return Stream(node)
            return self._sorted(node, time)

        def read_table() -> pa.Table:
            if scan.rows is not None:  # VALUES / range: the rows are in the plan
                table = scan.rows.select(file_names)
                table = table.filter(predicate) if predicate is not None else table
            else:
                got = reader(
                    scan.path,
                    format=scan.format,
                    options=dict(scan.options),
                    on_error=on_error,
                    columns=file_names,
                    predicate=predicate,
                    schema=pa.schema([pa.field(c, t) for c, t in zip(scan.file_columns, scan.types, strict=True)]),
                )
                stats.skipped += got.skipped
                table = got.table
            table = table.rename_columns(list(scan.names))
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
                Source(
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
                return percentile_messages(
                    record_batches(), time.column, dict(time.params), stats, late_path, scan.path, adjust, BATCH_ROWS
                )

            return Stream(Source(open_messages, schema, Properties(start_edge_only=True), detail))
        # event time: arrival order in, Impatience sort out; the reorder latency is the watermark's offset
        params = dict(time.params)
        latency = int(params.get("offset", 0)) if time.generator == "max_diff" else NO_WATERMARK_LATENCY
        detail = f"{scan.describe()}; rows as start edges at event time {time.column}, in arrival order"
        if time.generator:
            detail += f"; max_diff_watermark offset {latency} us"
        else:
            detail += "; no watermark generator: nothing is late, sorted at end of input"
        node = Source(
            lambda: _naming_file(disordered_messages(record_batches, time.column, kind="start"), scan.path),
            schema,
            Properties(start_edge_only=True),
            detail,
        )
        return self._sorted(node, time)

    def _sorted(self, node: Source, time: TimeSpec) -> Stream:
        """Events in arrival order, sorted by the watermark's Impatience sort (late rows per the policy)."""
        params = dict(time.params)
        latency = int(params.get("offset", 0)) if time.generator == "max_diff" else NO_WATERMARK_LATENCY
        adjust = self.late == "adjust" and time.generator is not None
        out = DisorderedStream(node).to_stream(reorder_latency=latency, disorder="adjust" if adjust else "drop")
        if adjust:  # the sort moved late rows' times up: the event-time column says so too
            out = Stream(rel.AdjustedTime(out.node, time.column))
        return out


def _naming_file(messages, path: str):
    """``messages``, with the file named in an input error (the row numbers count the file's data rows from 0)."""
    try:
        yield from messages
    except InputError as exc:
        raise InputError(f"{path}: {exc}") from None


DISTINCT_COUNT = "__distinct_count"
TRIGGER_ROWS = "__trigger_rows"


def _read_at_end(out: Stream) -> Stream:
    """``out``'s aggregate told that only its result at end of input is read."""
    if isinstance(out.node, nodes.Aggregate):
        return Stream(out.node.but(final_only=True))
    return out


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


def with_limit(stream: Stream, q: Query) -> Stream:
    """LIMIT/OFFSET of a changing result: the TopK keeps the window of every snapshot."""
    if q.limit is None and not q.offset:
        return stream
    return Stream(rel.TopK(stream.node, list(q.order), q.limit, q.offset))
