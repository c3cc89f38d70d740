"""The relational path: a query with no temporal operator, answered over whole Arrow columns.

A plan of file scans under filters and projections, with at most one ``GROUP BY`` (or global)
aggregate of the built-in numeric aggregates (:data:`.hashagg.FUNCTIONS`), has the same answer
as the stream plan's final snapshot: every row is a start edge at time 0, so the aggregate's last
snapshot is the aggregate of all rows. This module computes that answer directly: the file is read
into Arrow columns, WHERE/HAVING and SELECT lists run through the same compiled SQL expressions as
the stream operators (:class:`~tidal.expr.sqlcompile.CompiledSql`: the lambdas' numpy kernels, or
SQL's null rules), and the aggregate groups rows with :mod:`.hashagg` (numpy and Arrow compute).
Nothing on this path imports numba, so ``tidal query`` over a Parquet file starts in the time
of its imports of pyarrow and sqlglot.

Anything else (event time, windows, joins, TRIGGER, LIMIT/OFFSET, aggregates outside that list,
key or argument types :mod:`.hashagg` does not take, live inputs, databases and topics) runs on
the stream engine: :func:`relational_answer` returns None for it before reading anything.
"""

from __future__ import annotations

import sys

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from ..core.batch import EventBatch
from ..core.time import INFINITY
from ..io.files import read_file
from . import hashagg
from .expressions import compiled, pushable_predicate, translate, translate_record
from .logical import Aggregate, Filter, Node, Project, Scan, column_labels, user_message

_NOT_FILES = ("postgres", "kafka", "redis")


def _chain(node: Node) -> list[Node] | None:
    """The plan's nodes from the root down to its scan, when it is a relational chain; else None."""
    chain = []
    aggregates = 0
    while True:
        chain.append(node)
        if isinstance(node, Scan):
            ok = not node.live and node.format not in _NOT_FILES
            return chain if ok else None
        if isinstance(node, Filter | Project):
            node = node.input
            continue
        if isinstance(node, Aggregate):
            aggregates += 1
            if aggregates > 1 or node.trigger:  # over a changing result: the engine's running sums
                return None
            types = dict(zip(node.input.names, node.input.types, strict=True))
            for call in node.aggs:
                t = types.get(call.argument) if call.argument is not None else None
                if call.parameter is not None or not hashagg.supported(call.function, t):
                    return None
            if any(types.get(k) is None or not hashagg.key_supported(types[k]) for k in node.keys):
                return None
            node = node.input
            continue
        return None


def applies(sql_query) -> bool:
    """Whether ``sql_query`` (a :class:`~tidal.sql.query.SqlQuery`) runs on this path."""
    q = sql_query.query
    if sql_query.progressive or sql_query.live or q.limit is not None or q.offset:
        return False
    return _chain(sql_query.optimized) is not None


class _Runner:
    def __init__(self, sql_query, subresults: dict):
        self.q = sql_query
        self.stats = sql_query.stats
        self.subresults = subresults
        self.labels = sql_query.query.labels

    def _rewrite(self, node: Node):
        """An error message in the user's terms (the column labels are made only for an error)."""
        return lambda message: user_message(message, column_labels(node, self.labels))

    def scan(self, scan: Scan) -> pa.Table:
        names = list(scan.file_columns)
        if scan.rows is not None:  # VALUES / range: the rows are in the plan
            table = scan.rows.select(names)
            if scan.predicate is not None:
                table = table.filter(pushable_predicate(scan.predicate))
        else:
            schema = pa.schema([pa.field(c, t) for c, t in zip(scan.file_columns, scan.types, strict=True)])
            got = read_file(
                scan.path,
                format=scan.format,
                options=dict(scan.options),
                on_error=self.q.on_error,
                columns=names,
                predicate=pushable_predicate(scan.predicate) if scan.predicate is not None else None,
                schema=schema,
            )
            self.stats.skipped += got.skipped
            table = got.table
        table = table.rename_columns(list(scan.names)).combine_chunks()  # each column one array, once
        self.stats.rows_total += table.num_rows
        self.stats.rows_read += table.num_rows
        self.stats.progress()
        return table

    def run(self, node: Node, wanted: set | None = None) -> pa.Table:
        """``node``'s rows; ``wanted`` (None: all) the columns the caller reads."""
        if isinstance(node, Scan):
            return self.scan(node)
        if isinstance(node, Filter):
            inner = set(node.condition.find_all(exp.Column))
            table = self.run(node.input, None if wanted is None else wanted | {c.name for c in inner})
            if table.num_rows == 0:
                return table
            fn = compiled(translate(node.condition), truth=True, schema=node.input.schema(),
                          subresults=self.subresults, rewrite=self._rewrite(node.input))  # fmt: skip
            keep = _keep(fn, _batch(table))
            if wanted is not None:  # filter only what is read above
                table = table.select([c for c in table.column_names if c in wanted])
            if keep.all():
                return table
            if table.num_columns == 0:
                return table.slice(0, int(np.count_nonzero(keep)))  # no columns: the row count
            return table.filter(pa.array(keep))
        if isinstance(node, Project):
            needed = {c.name for _, e in node.exprs for c in e.find_all(exp.Column)}
            table = self.run(node.input, needed)
        else:
            needed = {*node.keys, *(c.argument for c in node.aggs)} - {None}
            table = self.run(node.input, needed)
        if isinstance(node, Project):
            return self.project(node, table)
        return self.aggregate(node, table)

    def project(self, node: Project, table: pa.Table) -> pa.Table:
        names = [n for n, _ in node.exprs]
        if not names:  # no columns (COUNT(*)'s input): the rows still count
            return table.select([])
        # the NaN count the SQL builder adds beside each aggregate of a DOUBLE column (CASE WHEN
        # isnan(x) THEN 1 ELSE 0 END) is all zeros when x holds no NaN: made without evaluating it
        zeros = {n for n, e in node.exprs if table.num_rows and _no_nan(_nan_indicator(e), table)}
        exprs = tuple((n, e) for n, e in node.exprs if n not in zeros)
        cols = {n: pa.array(np.zeros(table.num_rows, np.int64)) for n in zeros}
        if exprs:
            fn = compiled(translate_record(exprs), truth=False, schema=node.input.schema(),
                          subresults=self.subresults, rewrite=self._rewrite(node.input))  # fmt: skip
            batch = _batch(table)
            got = fn.project(batch) if table.num_rows else None
            cols.update(got if got is not None else fn.project_rows(batch))
        return pa.table([_array(cols[n]) for n in names], names=names)

    def aggregate(self, node: Aggregate, table: pa.Table) -> pa.Table:
        cols = {n: _array(table.column(n)) for n in {*node.keys, *(c.argument for c in node.aggs)} - {None}}
        groups = hashagg.group_ids([cols[k] for k in node.keys]) if node.keys else hashagg.no_keys(table.num_rows)
        calls = [(c.output, c.function, cols.get(c.argument)) for c in node.aggs]
        out = hashagg.aggregate(groups, calls)
        if not node.keys and table.num_rows == 0:  # over no rows SQL still has a row: counts 0, the rest NULL
            counts = ("count", "count_not_null", "count_distinct")
            out = {c.output: pa.array([0 if c.function in counts else None], out[c.output].type) for c in node.aggs}
        names = [*node.keys, *(c.output for c in node.aggs)]
        return pa.table([*groups.keys, *(out[c.output] for c in node.aggs)], names=names)


def _nan_indicator(e: exp.Expression) -> str | None:
    """The column ``x`` when ``e`` is ``CASE WHEN isnan(x) THEN 1 ELSE 0 END`` (the builder's NaN count)."""
    if not isinstance(e, exp.Case) or len(e.args.get("ifs") or ()) != 1 or e.this is not None:
        return None
    when, default = e.args["ifs"][0], e.args.get("default")
    test, then = when.this, when.args.get("true")
    if not (isinstance(test, exp.Anonymous) and test.name.lower() == "isnan" and len(test.expressions) == 1):
        return None
    if not (isinstance(test.expressions[0], exp.Column) and _literal(then, "1") and _literal(default, "0")):
        return None
    return test.expressions[0].name


def _literal(e, text: str) -> bool:
    return isinstance(e, exp.Literal) and not e.is_string and e.this == text


def _no_nan(name: str | None, table: pa.Table) -> bool:
    if name is None or name not in table.column_names or not pa.types.is_floating(table.column(name).type):
        return False
    return not pc.any(pc.is_nan(table.column(name))).as_py()


def _keep(fn, batch: EventBatch) -> np.ndarray:
    """WHERE's mask: by the stream engine's where loop (the lambdas' compiled kernel) when numba is
    already loaded, else by the numpy kernels or SQL's evaluator (``mask``): the same rows either way."""
    if "numba" in sys.modules:  # importing it would cost a command-line query more than it saves
        from ..ops.selection import WhereOp

        kept = WhereOp(fn).kept(batch)
        if kept is not None:
            keep = np.zeros(len(batch), bool)
            keep[kept] = True
            return keep
    return fn.mask(batch)


def _batch(table: pa.Table) -> EventBatch:
    """The table's rows as one batch of start edges at time 0 (as the stream plan's source makes them)."""
    n = table.num_rows
    cols = {name: _array(table.column(name)) for name in table.column_names}
    return EventBatch(np.zeros(n, np.int64), np.broadcast_to(np.int64(INFINITY), (n,)), cols)


def _array(col) -> pa.Array:
    """One array: a chunked column combined (a single chunk as it is)."""
    if isinstance(col, pa.ChunkedArray):
        return col.chunk(0) if col.num_chunks == 1 else col.combine_chunks()
    return col


def relational_answer(sql_query, subresults: dict) -> pa.Table | None:
    """The final snapshot's rows (before ORDER BY), or None when the plan is not relational."""
    if not applies(sql_query):
        return None
    table = _Runner(sql_query, subresults).run(sql_query.optimized)
    if table.num_rows == 0:
        schema = sql_query.optimized.schema()
        if schema is not None and schema.names == table.column_names:
            return schema.empty_table()
    return table
