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

Inner lookup joins on one key (:mod:`.relational_join`) may sit below the aggregate; ``LIMIT``/``OFFSET``
cut the final answer (:meth:`~tidal.sql.query.SqlQuery.result`). Anything else (event time, windows,
other joins, TRIGGER, aggregates outside that list,
key or argument types :mod:`.hashagg` does not take, live inputs, databases and topics) runs on
the stream engine: :func:`relational_answer` returns None for it before reading anything.
"""

from __future__ import annotations

import math
import sys

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from ..core.arrow import from_numpy
from ..core.batch import EventBatch
from ..core.time import INFINITY
from ..io.files import _is_stdin, read_file
from ..io.pieces import parquet_pieces
from . import hashagg, relational_join
from .expressions import compiled, pushable_predicate, translate, translate_record
from .logical import Aggregate, Filter, Join, Node, Project, Scan, column_labels, user_message

_NOT_FILES = ("postgres", "kafka", "redis")


def _chain(node: Node, aggregates: int = 0) -> list[Node] | None:
    """The plan's nodes from the root down to its scans, when it is a relational tree (filters,
    projections, at most one aggregate, lookup joins of :mod:`.relational_join` below it); else None."""
    chain = []
    while True:
        chain.append(node)
        if isinstance(node, Scan):
            ok = not node.live and node.format not in _NOT_FILES
            return chain if ok else None
        if isinstance(node, Filter | Project):
            node = node.input
            continue
        if isinstance(node, Join):
            if not relational_join.supported(node):
                return None
            sides = [_chain(side, 1) for side in (node.left, node.right)]  # no aggregate below a join
            return None if None in sides else chain + sides[0] + sides[1]
        if isinstance(node, Aggregate):
            aggregates += 1
            if aggregates > 1 or node.trigger:  # over a changing result: the engine's running sums
                return None
            types = dict(zip(node.input.names, node.input.types, strict=True))
            for call in node.aggs:
                t = types.get(call.argument) if call.argument is not None else None
                if not hashagg.supported(call.function, t, call.parameter):
                    return None
            if any(types.get(k) is None or not hashagg.key_supported(types[k]) for k in node.keys):
                return None
            node = node.input
            continue
        return None


def applies(sql_query) -> bool:
    """Whether ``sql_query`` (a :class:`~tidal.sql.query.SqlQuery`) runs on this path (its final answer:
    LIMIT/OFFSET then cut the whole snapshot, as the engine's TopK does at the end)."""
    if sql_query.progressive or sql_query.live:
        return False
    return _chain(sql_query.optimized) is not None


class _Runner:
    def __init__(self, sql_query, subresults: dict):
        self.q = sql_query
        self.stats = sql_query.stats
        self.subresults = subresults
        self.labels = sql_query.query.labels
        self.zeros: set[str] = set()  # columns known to be all zeros (the NaN counts of NaN-free columns)
        self.read: dict[int, pa.Table] = {}  # id(scan) -> its table, read already (in pieces)

    def _rewrite(self, node: Node):
        """An error message in the user's terms (the column labels are made only for an error)."""
        return lambda message: user_message(message, column_labels(node, self.labels))

    def scan(self, scan: Scan) -> pa.Table:
        names = list(scan.file_columns)
        if id(scan) in self.read:  # read already, in pieces (:meth:`in_pieces`)
            table = self.read.pop(id(scan))
            self.stats.rows_total += table.num_rows
            self.stats.rows_read += table.num_rows
            self.stats.progress()
            return table
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
            return table.filter(from_numpy(keep))
        if isinstance(node, Join):
            keys = {*node.left_keys, *node.right_keys}
            inner = None if wanted is None else wanted | keys
            left, right = self.run(node.left, inner), self.run(node.right, inner)
            return relational_join.join(node, left, right, wanted)
        if isinstance(node, Project):
            needed = {c.name for _, e in node.exprs for c in e.find_all(exp.Column)}
            table = self.run(node.input, needed)
            return self.project(node, table)
        piecewise = self.in_pieces(node)
        if piecewise is not None:
            return piecewise
        needed = {*node.keys, *(c.argument for c in node.aggs)} - {None}
        if isinstance(node.input, Project):  # a column only SUM reads need not be made when it is all zeros
            others = {*node.keys, *(c.argument for c in node.aggs if c.function != "sum")}
            below = {c.name for _, e in node.input.exprs for c in e.find_all(exp.Column)}
            table = self.project(node.input, self.run(node.input.input, below), needed - others)
        else:
            table = self.run(node.input, needed)
        return self.aggregate(node, table)

    def in_pieces(self, node: Aggregate) -> pa.Table | None:
        """The aggregate grouped as its Parquet file is read, piece by piece (:class:`.hashagg.PieceGroups`:
        the compiled pass over each piece while the next one is decoded), or None: then the file is read
        whole. Only for one numeric key, COUNT(*) and SUM/AVG of one float64 column (with the NaN
        counts the builder adds beside them) straight from the file; a null or NaN in that column ends
        the pieces: the whole columns go on to :meth:`project` and :meth:`aggregate`, as the scan's."""
        shape = _piece_shape(node)
        if shape is None:
            return None
        scan, key, argument, zero = shape
        columns = list(scan.file_columns)
        at = {name: i for i, name in enumerate(scan.names)}
        k, a = at[key], (at[argument] if argument is not None else None)
        acc = hashagg.PieceGroups()
        pieces = []
        try:
            for piece in parquet_pieces(scan.path, columns):
                if list(piece.schema.types) != list(scan.types):  # times to normalise: read whole
                    return None
                pieces.append(piece)
                if acc.ok:
                    acc.add(piece.column(k), piece.column(a) if a is not None else None)
        except (pa.ArrowException, OSError, KeyError, ValueError):  # read again, whole: its errors are the scan's
            return None
        if not pieces:
            return None
        arg = pieces[-1].column(a) if a is not None else None
        calls = [(c.output, c.function, arg if c.argument is not None else None) for c in node.aggs]
        got = acc.result([c for c in calls if c[0] not in zero])
        if got is None:  # a null or NaN in the argument: the whole columns, as the scan reads them
            table = pa.Table.from_batches(pieces, pieces[0].schema)
            self.read[id(scan)] = table.rename_columns(list(scan.names)).combine_chunks()
            return None
        rows = sum(len(p) for p in pieces)
        self.stats.rows_total += rows
        self.stats.rows_read += rows
        self.stats.progress()
        groups, out = got
        out.update((n, from_numpy(np.zeros(len(groups.order), np.int64))) for n in zero)
        names = [*node.keys, *(c.output for c in node.aggs)]
        return pa.table([*groups.keys, *(out[c.output] for c in node.aggs)], names=names)

    def project(self, node: Project, table: pa.Table, unmade: set = frozenset()) -> pa.Table:
        """``node``'s columns over ``table``; those in ``unmade`` found all zeros are left out (in ``zeros``)."""
        names = [n for n, _ in node.exprs]
        self.zeros = set()
        if not names:  # no columns (COUNT(*)'s input): the rows still count
            return table.select([])
        # the NaN count the SQL builder adds beside each aggregate of a DOUBLE column (CASE WHEN
        # isnan(x) THEN 1 ELSE 0 END) is all zeros when x holds no NaN: made without evaluating it
        zeros = {n for n, e in node.exprs if table.num_rows and _no_nan(_nan_indicator(e), table)}
        if not set(names) - (zeros & unmade):
            unmade = frozenset()  # a table of no columns would lose its row count
        self.zeros = zeros  # this table's (a Project above replaces the set: it may reuse a name)
        # a bare column of its own type is that column (a rename): taken as it is, not evaluated
        types = dict(zip(node.input.names, node.input.types, strict=True))
        have = dict(zip(table.column_names, table.schema.types, strict=True))
        bare = {n: e.name for (n, e), t in zip(node.exprs, node.types, strict=True)
                if _bare(e) and e.name in have and types.get(e.name) == t == have[e.name]}  # fmt: skip
        # an aggregate's NaN fix (CASE WHEN nans > 0 THEN NaN ELSE value END) where no group saw a NaN: the value
        for (n, e), t in zip(node.exprs, node.types, strict=True):
            guard = _nan_guard(e)
            if guard is not None and guard[1] in have and types.get(guard[1]) == t == have[guard[1]]:
                if guard[0] in have and _all_zero(table.column(guard[0])):
                    bare[n] = guard[1]
        exprs = tuple((n, e) for n, e in node.exprs if n not in zeros and n not in bare)
        cols = {n: from_numpy(np.zeros(table.num_rows, np.int64)) for n in zeros - unmade}
        cols.update((n, table.column(c)) for n, c in bare.items())
        if exprs:
            fn = compiled(translate_record(exprs), truth=False, schema=node.input.schema(),
                          subresults=self.subresults, rewrite=self._rewrite(node.input))  # fmt: skip
            batch = _batch(table)
            got = fn.project(batch) if table.num_rows else None
            cols.update(got if got is not None else fn.project_rows(batch))
        names = [n for n in names if n not in zeros or n not in unmade]
        return pa.table([_array(cols[n]) for n in names], names=names)

    def aggregate(self, node: Aggregate, table: pa.Table) -> pa.Table:
        cols = {n: _array(table.column(n)) for n in {*node.keys, *(c.argument for c in node.aggs)} - {None}
                if n in table.column_names}  # fmt: skip
        # SUM of an all-zeros column (the NaN count of a column without NaN) is 0 in every group
        zero_sums = {c.output for c in node.aggs if c.function == "sum" and c.argument in self.zeros}
        calls = [(c.output, c.function, cols.get(c.argument)) for c in node.aggs if c.output not in zero_sums]
        params = {c.output: c.parameter for c in node.aggs if c.parameter is not None}
        if node.keys:
            groups, out = hashagg.grouped([cols[k] for k in node.keys], calls, params)
        else:
            groups = hashagg.no_keys(table.num_rows)
            out = hashagg.aggregate(groups, calls, params=params)
        out.update((n, from_numpy(np.zeros(len(groups.order), np.int64))) for n in zero_sums)
        if not node.keys and table.num_rows == 0:  # over no rows SQL still has a row: counts 0, the rest NULL
            counts = ("count", "count_not_null", "count_distinct")
            out = {c.output: pa.array([0 if c.function in counts else None], out[c.output].type) for c in node.aggs}
        names = [*node.keys, *(c.output for c in node.aggs)]
        return pa.table([*groups.keys, *(out[c.output] for c in node.aggs)], names=names)


def _piece_shape(node: Aggregate) -> tuple[Scan, str, str | None, set[str]] | None:
    """``(scan, key, argument, NaN counts)`` (the key and argument as the scan names them; the outputs
    that sum the argument's NaN counts) when ``node`` groups a Parquet file's rows
    as :class:`.hashagg.PieceGroups` can, piece by piece: one key, COUNT(*) and SUM/AVG of one float64
    column, read straight from the file (or through a projection of bare columns and the NaN counts
    of that column, whose sums are 0 when the argument's sums show no NaN); else None."""
    below = node.input
    project = below if isinstance(below, Project) else None
    scan = project.input if project is not None else below
    if len(node.keys) != 1 or not isinstance(scan, Scan) or scan.rows is not None or scan.predicate is not None:
        return None
    if scan.format != "parquet" or scan.live or scan.options or _is_stdin(scan.path):
        return None
    types = dict(zip(scan.names, scan.types, strict=True))
    source = {n: (n, False) for n in scan.names}  # the aggregate's input column -> (scan column, NaN count)
    if project is not None:
        source = {}
        for (n, e), t in zip(project.exprs, project.types, strict=True):
            if _bare(e) and types.get(e.name) == t:
                source[n] = (e.name, False)
            elif _nan_indicator(e) in types:
                source[n] = (_nan_indicator(e), True)
            else:
                return None
    key = source.get(node.keys[0])
    if key is None or key[1]:
        return None
    calls, counted, zero = [], set(), set()
    for c in node.aggs:
        if c.parameter is not None or (c.argument is not None and c.argument not in source):
            return None
        column, nan_count = source[c.argument] if c.argument is not None else (None, False)
        if nan_count:
            if c.function != "sum":
                return None
            counted.add(column)
            zero.add(c.output)
        else:
            calls.append((c.function, column, types.get(column)))
    summed = {a for f, a, _ in calls if f != "count"}
    if not hashagg.PieceGroups.applies(types[key[0]], calls) or not counted <= summed:
        return None
    return scan, key[0], next(iter(summed), None), zero


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


def _nan_guard(e: exp.Expression) -> tuple[str, str] | None:
    """``(n, x)`` when ``e`` is ``CASE WHEN n > 0 THEN CAST('nan' AS DOUBLE) ELSE x END`` (the builder's NaN
    fix of SUM/AVG/MAX of a DOUBLE column, ``n`` the group's NaN count), both plain columns."""
    if not isinstance(e, exp.Case) or len(e.args.get("ifs") or ()) != 1 or e.this is not None:
        return None
    when, default = e.args["ifs"][0], e.args.get("default")
    test, then = when.this, when.args.get("true")
    if not (isinstance(test, exp.GT) and _bare(test.this) and _literal(test.expression, "0") and _bare(default)):
        return None
    if not (isinstance(then, exp.Cast) and then.this.is_string and then.this.this == "nan"):
        return None
    if not then.to.is_type(exp.DataType.Type.DOUBLE):
        return None
    return test.this.name, default.name


def _all_zero(col) -> bool:
    """Whether an integer column holds only zeros (no nulls)."""
    col = _array(col)
    if col.null_count or not pa.types.is_integer(col.type):
        return False
    return len(col) == 0 or not np.asarray(col.to_numpy()).any()


def _bare(e: exp.Expression) -> bool:
    """Whether ``e`` is a plain column reference (no table: the plan's physical names are unique)."""
    return isinstance(e, exp.Column) and not e.table and isinstance(e.this, exp.Identifier)


def _literal(e, text: str) -> bool:
    return isinstance(e, exp.Literal) and not e.is_string and e.this == text


def _no_nan(name: str | None, table: pa.Table) -> bool:
    if name is None or name not in table.column_names or not pa.types.is_floating(table.column(name).type):
        return False
    col = table.column(name)
    total = pc.sum(col).as_py()  # NaN when a value is NaN (or +inf meets -inf: then look at each value)
    return (total is None or not math.isnan(total)) or not pc.any(pc.is_nan(col)).as_py()


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
