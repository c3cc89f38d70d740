"""Running a planned statement and shaping its answer: :class:`SqlQuery` and :func:`plan`.

The stream plan (:mod:`.planner`) produces events; the answer is their final snapshot
(:func:`final_snapshot`: the payloads alive at the end of time), then SQL's finishing touches
(:meth:`SqlQuery.finish`): a global aggregate over no rows still has one row, ``ORDER BY`` orders
it, and ``LIMIT``/``OFFSET`` cut it when no TopK in the plan already did.
"""

from __future__ import annotations

import re
import time
from dataclasses import field
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from ..core.canonical_columnar import payload_ids, sort_order
from ..core.errors import PlanError
from ..core.frozen import FACTORY, Fields, mutable
from ..core.time import INFINITY
from . import plan_cache
from .dialect import SqlSyntaxError, parse, room_to_recurse
from .expressions import Evaluator
from .logical import Aggregate, Builder, Filter, Node, Project, Query
from .rules import explain_logical, optimize
from .stats import RunStats

if TYPE_CHECKING:  # the stream engine (and numba) loads only when a plan runs on it
    from collections.abc import Sequence

    from ..ops.base import Consumer
    from ..stream.query import Query as QueryRunner
    from ..stream.streamable import Stream

LATE_POLICIES = ("drop", "file", "adjust")


def final_snapshot(events: pa.Table) -> pa.Table:
    """The payloads alive at the end of time: start edges not retracted by an end edge."""
    sync = events.column("sync_time").to_numpy()
    other = events.column("other_time").to_numpy()
    payload = events.drop_columns(["sync_time", "other_time"])
    starts = other == INFINITY
    ends = (other < sync) & ~starts
    if not ends.any():
        if starts.all():  # every event a start edge: the payloads as they are, no copy
            return payload
        return payload.filter(pa.array(starts))
    # an end edge retracts one copy of the start edge with the same payload (the latest one): of a
    # payload's start edges, the first (start edges - end edges) in event order survive
    ids, _ = payload_ids(payload)
    width = int(ids.max()) + 1
    rows = np.flatnonzero(starts)
    order = sort_order(ids[rows])  # by payload, then position
    grouped = ids[rows][order]
    rank = np.arange(len(grouped)) - np.searchsorted(grouped, grouped, side="left")
    alive = np.bincount(grouped, minlength=width) - np.bincount(ids[ends], minlength=width)
    keep = np.zeros(len(sync), bool)
    keep[rows[order[rank < alive[grouped]]]] = True
    return payload.filter(pa.array(keep))


@mutable
class SqlQuery(Fields):
    """A planned statement: explain it, run it, read the final answer or the changelog."""

    text: str
    query: Query
    logical: Node
    optimized: Node
    rules_applied: Sequence[str]  # rules.Applied: the names worked out when read
    on_error: str = "fail"
    late_path: str | None = None
    stats: RunStats = field(default_factory=RunStats)
    progressive: bool = False  # rows at their position in the input (see --progressive)
    late: str = "drop"  # LATE_POLICIES
    subquery: bool = False  # an IN (subquery) run by its outer query (which owns the late-records file)
    batch_latency: float | None = None  # seconds: how long a live input's batch waits for more lines
    batch_rows: int | None = None  # the most lines in one batch of a live input
    running: QueryRunner | None = None  # the runtime of the current (or last) run
    live: bool = False  # a live view: grouped results without a TRIGGER are materialised as they change

    def __init__(
        self,
        text,
        query,
        logical,
        optimized,
        rules_applied,
        on_error="fail",
        late_path=None,
        stats=FACTORY,
        progressive=False,
        late="drop",
        subquery=False,
        batch_latency=None,
        batch_rows=None,
        running=None,
        live=False,
    ):
        self.text = text
        self.query = query
        self.logical = logical
        self.optimized = optimized
        self.rules_applied = rules_applied
        self.on_error = on_error
        self.late_path = late_path
        self.stats = RunStats() if stats is FACTORY else stats
        self.progressive = progressive
        self.late = late
        self.subquery = subquery
        self.batch_latency = batch_latency
        self.batch_rows = batch_rows
        self.running = running
        self.live = live

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
        from .planner import Translator, with_limit

        translator = Translator(
            self.on_error,
            self.stats,
            self._subresults(),
            self.late_path,
            self.progressive,
            self.late,
            self.query.labels,
            batch_latency=self.batch_latency,
            batch_rows=self.batch_rows,
            live=self.live,
        )
        return with_limit(translator.stream(self.optimized), self.query)

    def finish(self, table: pa.Table, ordered: bool = True, limited: bool = True, grouped: bool = False) -> pa.Table:
        """The answer from a snapshot of the plan's output: ordered, visible columns under their
        display names (``limited=False``: also LIMIT/OFFSET, for a snapshot taken before the TopK;
        ``grouped``: the snapshot is an aggregate's, whose TopK without ORDER BY orders by every column)."""
        q = self.query
        if table.num_rows == 0 and _global_aggregate(self.optimized):
            table = _empty_aggregate_row(self.optimized, table.schema)
        cut = (q.offset or q.limit is not None) and not limited
        if cut and q.order and ordered and q.limit is not None and q.offset + q.limit < table.num_rows:
            from ..ops.topk import first_rows

            table = table.take(first_rows(table, q.order, q.offset + q.limit))  # the window's rows, any order
        if (q.order and ordered) or (cut and grouped):
            from ..ops.topk import order_indices

            table = table.take(order_indices(table, q.order))
        if cut:
            table = table.slice(q.offset, q.limit if q.limit is not None else None)
        visible = table.column_names[: table.num_columns - q.hidden]
        return table.select(visible).rename_columns(list(q.output_names))

    def prepare(self, sink: Consumer, late_sink=None) -> tuple[Stream, QueryRunner, list]:
        """The stream plan wired to ``sink`` (and the late-records and watermark taps), not yet run:
        ``(stream, runner, sorts)``; ``late_sink`` replaces the late-records file's writer."""
        from ..ops.watermark import Discard, LateSink
        from ..plan.nodes import LateEvents, sorts_in
        from ..plan.nodes.relational import WatermarkTap
        from ..stream.query import Query as QueryRunner

        stats = self.stats
        stats.rows_read = stats.rows_total = stats.skipped = stats.late = 0
        stats.watermark = None
        stream = self.stream()
        sorts = sorts_in(stream.node)
        roots: list = [stream.node]
        sinks: list = [sink]
        for sort in sorts:
            roots.append(LateEvents(sort))
            sinks.append(late_sink if late_sink is not None else LateSink(self.late_path))
            roots.append(WatermarkTap(sort, stats))
            sinks.append(Discard())
        self.running = QueryRunner(roots, sinks)
        return stream, self.running, sorts

    def run(self, sink: Consumer) -> Stream:
        """Run the plan once into ``sink``; late rows go to the late-records file, counts to ``stats``.
        ``self.running.stop()`` (from a signal handler) ends the run early, between two messages."""
        if self.late_path and not self.subquery:
            open(self.late_path, "w").close()  # each run starts a fresh late-records file
        with room_to_recurse():
            stream, runner, sorts = self.prepare(sink)
            try:
                runner.run()
            finally:
                runner.close()
        self.ran(sorts, runner)
        return stream

    def ran(self, sorts: list, runner: QueryRunner) -> None:
        """After a run: the late rows' count and the final watermark in ``stats``."""
        self.stats.late += sum(s.stats.late for s in sorts)
        if not runner.stopping:
            self.stats.watermark = INFINITY

    def events(self) -> pa.Table:
        """The physical output events (``sync_time``, ``other_time``, payload)."""
        from ..io.egress import CollectSink

        sink = CollectSink(None)
        stream = self.run(sink)
        sink.schema = stream.schema
        return sink.table()

    def result(self) -> pa.Table:
        """The final answer (the batch view), in SELECT order, ordered and limited."""
        table = self.relational()
        if table is not None:  # the whole snapshot: LIMIT/OFFSET cut it here (the engine's TopK did it above)
            return self.finish(table, limited=False, grouped=_grouped(self.optimized))
        return self.finish(final_snapshot(self.events()))

    def relational(self) -> pa.Table | None:
        """The final snapshot computed without the stream engine when the plan has no temporal
        operator (:mod:`.relational`), else None."""
        from .relational import applies, relational_answer

        if not applies(self):
            return None
        if self.late_path and not self.subquery:
            open(self.late_path, "w").close()  # each run starts a fresh late-records file
        stats = self.stats
        stats.rows_read = stats.rows_total = stats.skipped = stats.late = 0
        stats.watermark = None
        self.running = None
        with room_to_recurse():
            table = relational_answer(self, self._subresults())
        stats.watermark = INFINITY
        return table

    def changelog(self) -> pa.Table:
        """Every insert and retraction: ``time``, ``undo``, then the SELECT columns."""
        events = self.events()
        q = self.query
        # payload columns by position while the log is built: a result column may be named time or undo
        width = events.num_columns - 2
        events = events.rename_columns([*events.column_names[:2], *(f"__c{i}" for i in range(width))])
        from ..io.egress import changelog_from_table

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
        from .planner import Translator, with_limit

        translator = Translator(self.on_error, self.stats, {}, None, late=self.late)
        q = self.query
        parts.append(with_limit(translator.stream(self.optimized), q).explain())
        if q.order or q.limit is not None or q.offset:
            parts.append(
                f"Final result: order by {[(n, 'desc' if d else 'asc') for n, d, _ in q.order]}, "
                f"limit {q.limit}, offset {q.offset}"
                + ("; the changelog carries the limited window as it changes (TopK)" if q.limit is not None else "")
            )
        return "\n".join(parts)


def _grouped(node: Node) -> bool:
    """Whether the answer is an aggregate's (rows in no arrival order: a TopK orders them by every column)."""
    while isinstance(node, Project | Filter):
        node = node.input
    return isinstance(node, Aggregate)


def _global_aggregate(node: Node) -> Aggregate | None:
    """The global aggregate under a chain of projections: an empty answer then means it saw no rows.
    (Under a filter, HAVING may have dropped its row: the plan itself makes the row of no input.)"""
    while isinstance(node, Project):
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


_QUERY_OPENINGS = frozenset("SsWwFfVv(")  # first letters no statement word starts with, in any case


def plan(
    text: str,
    *,
    on_error: str = "fail",
    late_path: str | None = None,
    late: str | None = None,
    batch_latency: float | None = None,
    batch_rows: int | None = None,
    catalog: dict | None = None,
) -> SqlQuery:
    """Parse, plan and optimize one query of tidal's dialect.

    ``late`` is the late-row policy (:data:`LATE_POLICIES`): ``drop``, ``file`` (drop and write
    them to ``late_path``, truncated at the start of each run) or ``adjust`` (move their time up
    to the watermark). It defaults to ``file`` when ``late_path`` is given, else ``drop``.
    ``batch_latency`` (seconds) is how long a batch of a growing input (standard input,
    ``tail(...)``) waits for more lines before it goes out (default 0.25), ``batch_rows`` the most
    lines it holds (default 65,536). ``catalog`` maps table and view names (of CREATE TABLE / CREATE
    VIEW, :mod:`tidal.sql.ddl`) to the queries that define them.
    """
    late = late or ("file" if late_path else "drop")
    if late not in LATE_POLICIES:
        raise PlanError(f"the late-row policy is one of {', '.join(LATE_POLICIES)}, got {late!r}")
    if late == "file" and not late_path:
        raise PlanError("late rows to a file: give the file (--late-records PATH)")
    if late != "file" and late_path:
        raise PlanError(f"a late-records file only applies to the 'file' policy, not {late!r}")
    # (a query opening with SELECT, WITH, FROM, VALUES or a parenthesis needs no look: no regex compiled)
    statement = text.lstrip()[:1] not in _QUERY_OPENINGS and re.match(
        r"\s*(CREATE|INSERT|DROP|UPDATE|DELETE|MERGE|ALTER|TRUNCATE|BEGIN|COMMIT|ROLLBACK)\b", text, re.I
    )
    if statement:
        where = (
            "CREATE TABLE, CREATE VIEW and INSERT INTO run in a script (tidal run job.sql) or the shell (tidal)"
            if statement.group(1).upper() in ("CREATE", "INSERT", "DROP")
            else "tidal reads data, it does not change it"
        )
        raise SqlSyntaxError(
            f"{statement.group(1).upper()} statements are not supported here, only queries (SELECT ...): {where}; "
            f"got: {' '.join(text.split())[:60]}"
        )
    # the plan of the same text and settings is reused while the files it read are unchanged (see .plan_cache)
    key = plan_cache.key(text, (on_error, late_path, late, batch_latency, batch_rows)) if not catalog else None
    kept = plan_cache.get(key)
    if kept is not None:
        query, optimized, applied = kept
    else:
        began = time.time_ns()
        tree = parse(text)
        calls_volatile = key is None or plan_cache.volatile(tree)  # (as parsed: the builder may rewrite the tree)
        with room_to_recurse():
            query = Builder(catalog).build(tree)
            optimized, applied = optimize(query.root)
        plan_cache.put(key, began, calls_volatile, query, optimized, applied)
    return SqlQuery(
        text,
        query,
        query.root,
        optimized,
        applied,
        on_error,
        late_path,
        late=late,
        batch_latency=batch_latency,
        batch_rows=batch_rows,
    )
