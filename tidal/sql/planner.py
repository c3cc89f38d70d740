"""From the logical plan to a tidal stream plan, and running it.

Temporal semantics of SQL in tidal:

* A row whose event time is not declared is relational: it becomes a start edge at time 0
  (``[0, inf)``), so every aggregate is a running relational aggregate and the stream's final
  snapshot is the batch answer. ``TRIGGER COUNTING n`` on such input gives the i-th row of each
  file the time ``i // n``, so results are materialised every n rows (an insert and, for a
  changed value, a retraction), with the same final snapshot.
* A watermark generator (``max_diff_watermark``, ``percentile_watermark``) or ``tumble``
  declares the event time: the file's rows become start edges at their event time. Records
  behind the watermark when they arrive are late: counted, and dropped or written to the
  late-records file. The others are put in event-time order (a finite file is sorted as a
  whole; tidal's operators then see in-order data) with a punctuation after every batch.
  ``tumble`` adds ``window_start``/``window_end`` and moves each row's time to its window end,
  so a ``GROUP BY window_end`` materialises each window once, when its end passes.
* End of input moves the watermark to infinity: every window is emitted.
* ``ORDER BY``/``LIMIT``/``OFFSET`` apply to the final snapshot.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from ..core.batch import EventBatch
from ..core.errors import InputError, PlanError
from ..core.messages import Completed, Punctuation
from ..core.time import INFINITY
from ..io.files import read_file
from ..ops.base import Operator
from ..stream.plan import OperatorNode, Properties, SourceNode
from ..stream.streamable import Stream
from .dialect import parse
from .expressions import Evaluator, pushable_predicate
from .logical import Aggregate, Builder, EventTime, Filter, Node, Project, Query, Scan, Tumble, UnionAll
from .rules import explain_logical, optimize

BATCH_ROWS = 65_536


@dataclass
class RunStats:
    """What the sources saw: rows read, malformed rows skipped, late rows, the last watermark."""

    rows_read: int = 0
    skipped: int = 0
    late: int = 0
    watermark: int | None = None
    late_rows: list = field(default_factory=list)


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


# -- operators that evaluate SQL expressions on batches ---------------------------------------


class SqlFilterOp(Operator):
    """WHERE/HAVING: keeps events whose payload satisfies the condition; lifetimes unchanged."""

    name = "SqlFilter"

    def __init__(self, condition: exp.Expression, subresults: dict):
        super().__init__()
        self.condition = condition
        self.subresults = subresults
        self.variant = f"columnar (pyarrow.compute): {condition.sql()}"

    def on_batch(self, batch: EventBatch) -> None:
        dense = batch.compact()
        keep = Evaluator(dense.columns, len(dense), self.subresults).mask(self.condition)
        mask = np.asarray(keep.to_numpy(zero_copy_only=False), dtype=bool)
        if mask.any():
            self.emit(dense.with_absent(~mask) if not mask.all() else dense)


class SqlProjectOp(Operator):
    """SELECT list: computes each output column from the payload; lifetimes unchanged."""

    name = "SqlProject"

    def __init__(self, exprs: tuple, subresults: dict):
        super().__init__()
        self.exprs = exprs
        self.subresults = subresults
        self.variant = "columnar (pyarrow.compute): " + ", ".join(
            e.sql() if e.sql() == f'"{n}"' else f"{e.sql()} AS {n}" for n, e in exprs
        )

    def on_batch(self, batch: EventBatch) -> None:
        dense = batch.compact()
        ev = Evaluator(dense.columns, len(dense), self.subresults)
        cols = {n: (dense.columns[e.name] if isinstance(e, exp.Column) else ev.array(e)) for n, e in self.exprs}
        self.emit(dense.replace(columns=cols))


class TumbleOp(Operator):
    """Adds ``window_start``/``window_end`` from the event time; the row's time becomes its window end.

    Windows are ``[offset + k*length, offset + (k+1)*length)`` (start inclusive, end exclusive).
    Moving a start edge later by a non-decreasing function keeps the stream in order.
    """

    name = "Tumble"

    def __init__(self, length: int, offset: int):
        super().__init__()
        self.length, self.offset = length, offset
        self.variant = f"length {length} us, offset {offset} us"

    def window_end(self, t: np.ndarray) -> np.ndarray:
        return (t - self.offset) // self.length * self.length + self.offset + self.length

    def on_batch(self, batch: EventBatch) -> None:
        dense = batch.compact()
        end = self.window_end(dense.sync)
        cols = dict(dense.columns)
        cols["window_start"] = pa.array(end - self.length, pa.int64()).cast(pa.timestamp("us"))
        cols["window_end"] = pa.array(end, pa.int64()).cast(pa.timestamp("us"))
        other = np.where(dense.other == INFINITY, INFINITY, dense.other)
        self.emit(dense.replace(sync=end, other=other, columns=cols))

    def on_punctuation(self, time: int) -> None:
        # no later event can have a window end before the window end of ``time``'s window... minus one window
        self.emit_punctuation(time if time in (INFINITY,) else int(self.window_end(np.array([time]))[0]) - self.length)


# -- translation -------------------------------------------------------------------------------


@dataclass
class TimeSpec:
    column: str | None = None  # file column holding event time
    generator: str | None = None
    params: tuple = ()
    ordinal: int | None = None  # TRIGGER COUNTING n on relational input


class Translator:
    def __init__(self, on_error: str, stats: RunStats, subresults: dict, late_path: str | None):
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
            return self._op(inner, "SqlFilter", lambda: SqlFilterOp(node.condition, self.subresults), node)
        if isinstance(node, Project):
            renames = {n: e.name for n, e in node.exprs if isinstance(e, exp.Column)}
            inner_time = time
            if time.column is not None:
                hits = [n for n, e in node.exprs if n == time.column and isinstance(e, exp.Column)]
                if not hits:
                    raise PlanError(f"the event time field {time.column} must be a column, not a computed value")
                inner_time = TimeSpec(renames[time.column], time.generator, time.params, time.ordinal)
            inner = self.stream(node.input, inner_time)
            return self._op(inner, "SqlProject", lambda: SqlProjectOp(node.exprs, self.subresults), node)
        if isinstance(node, EventTime):
            if time.generator is not None:
                raise PlanError("an event time is declared twice (two watermark generators)")
            if time.column is not None and time.column != node.time_field:
                raise PlanError(f"tumble's time field {time.column} is not the watermark's {node.time_field}")
            return self.stream(node.input, TimeSpec(node.time_field, node.generator, node.params, time.ordinal))
        if isinstance(node, Tumble):
            inner_time = time if time.column is not None else TimeSpec(node.time_field, None, (), None)
            if inner_time.column != node.time_field:
                raise PlanError(f"tumble's time field {node.time_field} is not the declared event time {time.column}")
            inner = self.stream(node.input, inner_time)
            return self._op(inner, "Tumble", lambda: TumbleOp(node.length, node.offset), node)
        if isinstance(node, UnionAll):
            return self.stream(node.left, time).union(self.stream(node.right, time))
        if isinstance(node, Aggregate):
            counting = [t[1] for t in node.trigger if t[0] == "counting"]
            inner_time = time if not counting else TimeSpec(time.column, time.generator, time.params, counting[0])
            inner = self.stream(node.input, inner_time)
            return self.aggregate(inner, node)
        raise PlanError(f"cannot translate {node.describe()}")

    def _op(self, inner: Stream, label: str, factory, node: Node) -> Stream:
        schema = node.schema()
        return Stream(OperatorNode(label, (inner._node,), schema, inner.properties.but(grouping=()), factory))

    def aggregate(self, inner: Stream, node: Aggregate) -> Stream:
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
        hidden = None
        if not makers:  # DISTINCT: group on every column, count, then drop the count
            hidden = "__distinct_count"
            makers[hidden] = agg.count()
        if node.keys:
            out = inner.group_aggregate(list(node.keys), **makers)
        else:
            out = inner.aggregate(**makers)
        if hidden is not None:
            out = out.select(*node.keys)
        return out

    def source(self, scan: Scan, time: TimeSpec) -> Stream:
        predicate = pushable_predicate(scan.predicate) if scan.predicate is not None else None
        file_names = list(scan.file_columns)
        if time.column is not None and time.column not in scan.names:
            raise PlanError(f"event time field {time.column} is not a column of {scan.path}")
        stats, on_error, late_path = self.stats, self.on_error, self.late_path

        def open_messages():
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
            stats.rows_read += table.num_rows
            return _messages(table, time, stats, late_path, scan.path)

        kind = "event time " + time.column if time.column else ("row ordinal" if time.ordinal else "time 0")
        detail = f"{scan.describe()}; rows as start edges at {kind}"
        if time.generator:
            detail += f"; {time.generator}_watermark {dict(time.params)}"
        return Stream(SourceNode(open_messages, scan.schema(), Properties(start_edge_only=True), detail))


def _as_ticks(col: pa.ChunkedArray, name: str, path: str) -> np.ndarray:
    if col.null_count:
        row = int(pc.index(pc.is_null(col), True).as_py())
        raise InputError(f"{path}: row {row + 1}: event time field {name} is null")
    t = col.type
    if pa.types.is_timestamp(t):
        col = col.cast(pa.timestamp("us", t.tz)).cast(pa.int64())
    elif pa.types.is_date(t):
        col = col.cast(pa.timestamp("us")).cast(pa.int64())
    elif not pa.types.is_integer(t):
        raise InputError(f"{path}: event time field {name} is {t}; it must be a timestamp, date or integer")
    return np.asarray(col.to_numpy(), dtype=np.int64)


def _messages(table: pa.Table, time: TimeSpec, stats: RunStats, late_path: str | None, path: str):
    n = table.num_rows
    if time.column is None:
        sync = np.zeros(n, np.int64) if time.ordinal is None else np.arange(n, dtype=np.int64) // time.ordinal
    else:
        ticks = _as_ticks(table.column(time.column), time.column, path)
        params = dict(time.params)
        if time.generator == "max_diff":
            marks = max_diff_watermarks(ticks, int(params.get("offset", 0)))
        elif time.generator == "percentile":
            marks = percentile_watermarks(
                ticks, int(params["events"]), float(params["percentile"]), int(params["frequency"])
            )
        else:
            marks = None
        if marks is not None and n:
            late = late_mask(ticks, marks)
            stats.watermark = int(marks[-1])
            if late.any():
                stats.late += int(late.sum())
                late_rows = table.filter(pa.array(late))
                if late_path:
                    _write_late(late_rows, late_path)
                keep = ~late
                table, ticks = table.filter(pa.array(keep)), ticks[keep]
        order = np.argsort(ticks, kind="stable")
        table = table.take(pa.array(order))
        sync = ticks[order]
    other = np.full(len(sync), INFINITY, np.int64)
    for start in range(0, table.num_rows, BATCH_ROWS):
        stop = min(start + BATCH_ROWS, table.num_rows)
        rb = table.slice(start, stop - start).combine_chunks()
        cols = {name: rb.column(name).combine_chunks() for name in rb.column_names}
        yield EventBatch(sync[start:stop], other[start:stop], cols)
        if time.column is not None or time.ordinal is not None:
            yield Punctuation(int(sync[stop - 1]))
    stats.watermark = INFINITY
    yield Completed()


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

    def _subresults(self) -> dict:
        out = {}
        for key, sub in self.query.subplans.items():
            inner = SqlQuery(
                self.text, sub, sub.root, optimize(sub.root)[0], [], self.on_error, self.late_path, self.stats
            )
            table = inner.result()
            out[key] = table.column(0).combine_chunks()
        return out

    def stream(self) -> Stream:
        """The tidal stream plan (runs the IN subqueries first: their results are constants)."""
        translator = Translator(self.on_error, self.stats, self._subresults(), self.late_path)
        return translator.stream(self.optimized)

    def _finish(self, table: pa.Table, ordered: bool = True) -> pa.Table:
        q = self.query
        if table.num_rows == 0 and _global_aggregate(self.optimized):
            table = _empty_aggregate_row(self.optimized, table.schema)
        if q.order and ordered:
            keys = [(name, "descending" if desc else "ascending") for name, desc, _ in q.order]
            nulls_first = q.order[0][2]
            table = (
                table.sort_by(keys)
                if not nulls_first
                else pc.take(table, pc.sort_indices(table, sort_keys=keys, null_placement="at_start"))
            )
        if q.offset or q.limit is not None:
            table = table.slice(q.offset, q.limit if q.limit is not None else None)
        visible = table.column_names[: table.num_columns - q.hidden]
        return table.select(visible).rename_columns(list(q.output_names))

    def result(self) -> pa.Table:
        """The final answer (the batch view), in SELECT order, ordered and limited."""
        return self._finish(final_snapshot(self.stream().to_arrow()))

    def changelog(self) -> pa.Table:
        """Every insert and retraction: ``time``, ``undo``, then the SELECT columns."""
        log = self.stream().to_changelog()
        q = self.query
        payload_names = log.column_names[2 : len(log.column_names) - q.hidden]
        out = log.select(["time", "undo", *payload_names])
        return out.rename_columns(["time", "undo", *q.output_names])

    def explain(self) -> str:
        parts = ["Logical plan:", explain_logical(self.logical), ""]
        parts.append("Rewrites applied: " + (", ".join(self.rules_applied) or "none"))
        parts += ["", "Optimized logical plan:", explain_logical(self.optimized), "", "Stream plan:"]
        parts.append(Translator(self.on_error, self.stats, {}, None).stream(self.optimized).explain())
        q = self.query
        if q.order or q.limit is not None or q.offset:
            parts.append(
                f"Final result: order by {[(n, 'desc' if d else 'asc') for n, d, _ in q.order]}, "
                f"limit {q.limit}, offset {q.offset}"
            )
        return "\n".join(parts)


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


def plan(text: str, *, on_error: str = "fail", late_path: str | None = None) -> SqlQuery:
    """Parse, plan and optimize one query of tidal's dialect."""
    tree = parse(text)
    query = Builder().build(tree)
    optimized, applied = optimize(query.root)
    return SqlQuery(text, query, query.root, optimized, applied, on_error, late_path)
