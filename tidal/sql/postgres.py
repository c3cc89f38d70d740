"""``postgres(dsn => ..., table => ... | query => ...)`` in tidal's SQL: a bounded table read from a
PostgreSQL server (:mod:`tidal.io.postgres`), with the query's filter and projection pushed into the
statement the server runs, and the lookup join (:mod:`tidal.ops.lookup`) when a stream is joined to it.

The table is relational: its rows are start edges at time 0 (like a file's), read once per run. In
a lookup join the stream's rows ask the server for their keys' rows instead, batch by batch; each
key's answer is cached for the run, so a row that changes in the database while the query runs is
seen as it was at its key's first lookup (seed 002's lookup join). Pushed filters keep SQL's
meaning: only comparisons, IN, BETWEEN, IS NULL, AND/OR/NOT over columns and constants of the same
type go to the server, strings compare by bytes (``COLLATE "C"``, as tidal and DuckDB do), and
everything else is evaluated by tidal after the read.
"""

from __future__ import annotations

from decimal import Decimal

import pyarrow as pa
from sqlglot import exp

from ..core.errors import PlanError
from ..io.files import FileRead
from ..io.postgres import BadRows, Lookup, Relation, quote_ident, read
from .expressions import Evaluator
from .logical.nodes import Scan

FORMAT = "postgres"  # the Scan format of postgres(...) (built by logical/from_items.py)


def relation_of(options) -> Relation:
    opts = dict(options)
    return Relation(opts["dsn"], opts.get("table"), opts.get("query"))


# -- filter pushdown -------------------------------------------------------------------------------

_COMPARE = {exp.EQ: "=", exp.NEQ: "<>", exp.GT: ">", exp.GTE: ">=", exp.LT: "<", exp.LTE: "<="}


def _kind(t: pa.DataType) -> str | None:
    if pa.types.is_integer(t) or pa.types.is_float64(t):  # float4 next to a double: left to tidal
        return "number"
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "string"
    if pa.types.is_boolean(t):
        return "bool"
    if pa.types.is_date(t):
        return "date"
    if pa.types.is_timestamp(t):
        return "tz" if t.tz else "timestamp"
    return None


class _Renderer:
    """A predicate over a postgres Scan's columns as PostgreSQL text with ``%s`` parameters."""

    def __init__(self, scan: Scan):
        self.types = {n: t for n, t in zip(scan.names, scan.types, strict=True)}
        self.sql = dict(dict(scan.options).get("columns_sql", ()))
        self.file_of = dict(zip(scan.names, scan.file_columns, strict=True))
        self.params: list = []

    def operand(self, node: exp.Expression) -> tuple[str, str] | None:
        """(SQL, kind) of a column or a constant; None if it cannot go to the server."""
        if isinstance(node, exp.Paren):
            return self.operand(node.this)
        if isinstance(node, exp.Column):
            name = self.file_of.get(node.name)
            kind = _kind(self.types[node.name]) if name is not None else None
            if kind is None:
                return None
            text = self.sql.get(name, quote_ident(name))
            return (f'{text} COLLATE "C"' if kind == "string" else text), kind
        if isinstance(node, exp.Boolean):
            self.params.append(bool(node.this))
            return "%s", "bool"
        if isinstance(node, exp.Literal):
            value = node.name if node.is_string else Evaluator({}, 0).eval(node).as_py()
            # a DECIMAL literal is a numeric parameter: PostgreSQL compares it as DuckDB does (float8 beside a double)
            if not node.is_string and (not isinstance(value, int | float | Decimal) or isinstance(value, bool)):
                return None
            self.params.append(value)
            return "%s", "string" if node.is_string else "number"
        if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal) and not node.this.is_string:
            inner = self.operand(node.this)
            if inner is None:
                return None
            self.params[-1] = -self.params[-1]
            return inner
        if isinstance(node, exp.Cast) and isinstance(node.this, exp.Literal) and node.this.is_string:
            target = node.to.this
            types = exp.DataType.Type
            kind = {types.DATE: "date", types.TIMESTAMP: "timestamp", types.TIMESTAMPNTZ: "timestamp"}.get(target)
            if kind is None:
                return None
            self.params.append(node.this.name)
            return f"%s::{kind}", kind
        return None

    def condition(self, node: exp.Expression) -> str | None:
        mark = len(self.params)
        out = self._condition(node)
        if out is None:
            del self.params[mark:]
        return out

    def _condition(self, node: exp.Expression) -> str | None:
        if isinstance(node, exp.Paren):
            inner = self.condition(node.this)
            return None if inner is None else f"({inner})"
        if isinstance(node, exp.And | exp.Or):
            a = self.condition(node.this)
            b = self.condition(node.expression) if a is not None else None
            if b is None:
                return None
            return f"({a} {'AND' if isinstance(node, exp.And) else 'OR'} {b})"
        if isinstance(node, exp.Not):
            inner = self.condition(node.this)
            return None if inner is None else f"(NOT {inner})"
        if isinstance(node, exp.Column):
            a = self.operand(node)
            return a[0] if a is not None and a[1] == "bool" else None
        if type(node) in _COMPARE:
            a, b = self.operand(node.this), self.operand(node.expression)
            if a is None or b is None or a[1] != b[1] or "%s" in a[0] and "%s" in b[0]:
                return None
            return f"{a[0]} {_COMPARE[type(node)]} {b[0]}"
        if isinstance(node, exp.Is) and isinstance(node.expression, exp.Null):
            a = self.operand(node.this)
            return None if a is None or "%s" in a[0] else f"{a[0]} IS NULL"
        if isinstance(node, exp.Between):
            a, lo, hi = self.operand(node.this), self.operand(node.args["low"]), self.operand(node.args["high"])
            if None in (a, lo, hi) or len({a[1], lo[1], hi[1]}) != 1 or "%s" in a[0]:
                return None
            return f"{a[0]} BETWEEN {lo[0]} AND {hi[0]}"
        if isinstance(node, exp.In) and not node.args.get("query") and node.expressions:
            a = self.operand(node.this)
            if a is None or "%s" in a[0]:
                return None
            items = [self.operand(e) for e in node.expressions]
            if any(i is None or i[1] != a[1] or "%s" not in i[0] for i in items):
                return None  # a NULL or an expression in the list: tidal evaluates it
            return f"{a[0]} IN ({', '.join(i[0] for i in items)})"
        return None


def pushable(predicate: exp.Expression, scan: Scan) -> bool:
    return _Renderer(scan).condition(predicate) is not None


def render(predicate: exp.Expression | None, scan: Scan) -> tuple[str, list] | None:
    """The pushed filter of ``scan`` as (SQL, parameters)."""
    if predicate is None:
        return None
    r = _Renderer(scan)
    text = r.condition(predicate)
    if text is None:
        raise PlanError(f"cannot send the filter {predicate.sql()} to PostgreSQL")
    return text, r.params


def bad_rows(scan: Scan, on_error: str, dead_letter: str | None = None) -> BadRows:
    """``dead_letter => ...`` of the table function, else the query's dead-letter file (if any)."""
    return BadRows(on_error, dict(scan.options).get("dead_letter") or dead_letter)


def read_table(
    scan: Scan, path: str, *, on_error: str = "fail", dead_letter: str | None = None, **_file_reader_options
) -> FileRead:
    """The rows of a postgres Scan: its columns, its pushed filter, in one statement (called as the
    planner calls a file reader; the Scan says what to read)."""
    bad = bad_rows(scan, on_error, dead_letter)
    table = read(relation_of(scan.options), list(scan.file_columns), render(scan.predicate, scan), bad)
    return FileRead(scan.path, table, bad.skipped)


def lookup(scan: Scan, keys: list[str], on_error: str, dead_letter: str | None = None) -> Lookup:
    opts = dict(scan.options)
    files = dict(zip(scan.names, scan.file_columns, strict=True))
    return Lookup(
        relation_of(scan.options),
        list(scan.file_columns),
        [files[k] for k in keys],
        render(scan.predicate, scan),
        cache_keys=opts.get("cache_keys", 100_000),
        bad=bad_rows(scan, on_error, dead_letter),
    )


# -- lookup join --------------------------------------------------------------------------------------


def _table_side(node) -> tuple[Scan, dict[str, str]] | None:
    """The postgres Scan under a chain of renaming projections, and each output name's Scan column."""
    from .logical import Project

    names = {n: n for n in node.names}
    while isinstance(node, Project):
        if not all(isinstance(e, exp.Column) for _, e in node.exprs):
            return None
        inner = {n: e.name for n, e in node.exprs}
        names = {out: inner[mid] for out, mid in names.items()}
        node = node.input
    if not isinstance(node, Scan) or node.format != FORMAT:
        return None
    files = dict(zip(node.names, node.file_columns, strict=True))
    return node, {out: files[n] for out, n in names.items()}


def lookup_join(translator, join, probe_time):
    """``join`` (an inner join whose left is the table, see the lookup_joins rule) as a lookup join
    when its left is a postgres table and its right a stream of start edges or intervals; else None."""
    from ..plan.nodes.lookup import LookupJoin
    from ..stream.streamable import Stream

    found = _table_side(join.left)
    if found is None or probe_time.ordinal or join.condition is not None:
        return None
    scan, column_of = found
    probe = translator.stream(join.right, probe_time)
    if not (probe.properties.start_edge_only or probe.properties.constant_duration is not None):
        return None
    scan_name = dict(zip(scan.file_columns, scan.names, strict=True))
    table_keys = [scan_name[column_of[k]] for k in join.left_keys]
    output = [(n, "table", column_of[n]) for n in join.left.names]
    output += [(n, "probe", n) for n in join.right.names]
    on_error, dead_letter = translator.on_error, getattr(translator, "dead_letter", None)

    def open_lookup():
        looked = lookup(scan, table_keys, on_error, dead_letter)
        return looked.match, looked.close

    relation = relation_of(scan.options)
    where = f", where {scan.predicate.sql()}" if scan.predicate is not None else ""
    detail = f"{relation.label()}{where}, cached per key"
    node = LookupJoin(probe.node, open_lookup, list(join.right_keys), output, join.schema(), detail)
    return Stream(node)
