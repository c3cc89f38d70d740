"""Building a logical plan from sqlglot's tree: statements, CTEs, UNION, and binding names to columns.

The FROM clause (files, table functions, joins) is :class:`~.from_items.FromItems`; SELECT (projections,
aggregates, ORDER BY/LIMIT, triggers) is :class:`~.select_list.SelectList`.
"""

from __future__ import annotations

import pyarrow as pa
from sqlglot import exp

from ...core.errors import PlanError
from ...expr.sqldecimal import common_type
from ..expressions import (
    IN_SUBQUERY,
    SCALAR_SUBQUERY,
    SqlTypeError,
    has_subquery,
    in_subquery,
    output_type,
    scalar_subquery,
)
from .correlated import CorrelatedSubqueries
from .decimal_union import width_node
from .exprs import _col, _is_agg, _transform, _unique, column_labels
from .from_items import FromItems
from .inline import _scan as inline_scan
from .match import MatchItems
from .nodes import AggCall, Aggregate, EventTime, Filter, Limit, Node, Project, Query, Scan, Session, Tumble, UnionAll
from .quantified import QuantifiedSubqueries, is_quantified
from .select_list import SelectList
from .types import _sql_type, duckdb_type_name, user_message
from .unsupported import refuse_unsupported
from .windows import WindowList


class Builder(FromItems, SelectList, WindowList, MatchItems, CorrelatedSubqueries, QuantifiedSubqueries):
    """Turns a parsed query into a :class:`Query`, resolving files against the current directory."""

    def __init__(self, catalog=None):
        self.ctes: list[dict[str, Node]] = [{}]
        # tables and views of a session (tidal.sql.ddl.Catalog): name -> the query that defines it
        self.catalog = catalog if catalog is not None else {}
        self._catalog_nodes: dict[str, Node] = {}
        self.subplans: dict[int, Query] = {}
        self.subquery_types: dict[int, pa.DataType | None] = {}  # scalar subqueries' column types
        self._n = 0
        self.trigger: tuple = ()
        self.labels: dict[str, str] = {}  # internal column -> the user's SQL (for error messages)
        self.outer: list[Node] = []  # the enclosing queries' inputs while planning IN (subquery)
        self.correlating: list = []  # subqueries being planned: their outer references (correlated.py)
        self.pending: list = []  # joins that correlated subqueries being bound need (correlated.py)
        self.placeholder_types: dict[str, pa.DataType | None] = {}  # outer references' types
        self.injected: dict[str, tuple] = {}  # column -> (outer node, bound value, SQL text, type): quantified.py

    def fresh(self, prefix: str) -> str:
        self._n += 1
        return f"__{prefix}{self._n}"

    # -- statements --------------------------------------------------------------------
    def build(self, tree: exp.Expression) -> Query:
        if isinstance(tree, exp.Summarize):  # planned as the query it becomes (checked there)
            return self.summarize(tree)
        refuse_unsupported(tree)
        tree = _inline_selects(tree)
        if isinstance(tree, exp.Describe):
            return self.describe(tree)
        query = self.query(tree, top=True)
        query.subplans = self.subplans
        query.labels = self.labels
        for sub in self.subplans.values():
            sub.labels = self.labels
        return query

    def describe(self, tree: exp.Describe) -> Query:
        """``DESCRIBE query`` / ``DESCRIBE 'file'`` / ``DESCRIBE name``: the query's columns and their
        types, as DuckDB lists them (column_name, column_type, null, key, default, extra)."""
        target = tree.this
        if isinstance(target, exp.Table):
            target = exp.select("*").from_(target.copy())
        elif isinstance(target, exp.Subquery):
            target = target.this
        q = self.query(target, top=True)
        width = len(q.root.names) - q.hidden
        types = [duckdb_type_name(t) for t in q.root.types[:width]]
        if isinstance(target, exp.Select) and not (target.args.get("from") or target.args.get("from_")):
            types = _literal_integers(target.expressions, types)  # DESCRIBE SELECT 42: an INTEGER
        none = pa.array([None] * width, pa.string())
        table = pa.table(
            {
                "column_name": pa.array(list(q.output_names), pa.string()),
                "column_type": pa.array(types, pa.string()),
                "null": pa.array(["YES"] * width, pa.string()),
                "key": none,
                "default": none,
                "extra": none,
            }
        )
        scan = inline_scan("DESCRIBE", table)
        return Query(scan, scan.names)

    def summarize(self, tree: exp.Summarize) -> Query:
        """``SUMMARIZE file | table | query``: DuckDB's statistics per column (tidal/sql/logical/summarize.py)."""
        from ..dialect import parse
        from .summarize import summarize_tree, summarized_query

        target = summarized_query(tree)
        q = type(self)(self.catalog).query(target.copy(), top=True)
        width = len(q.root.names) - q.hidden
        texts = None
        if isinstance(target, exp.Select) and not (target.args.get("from") or target.args.get("from_")):
            texts = _literal_integers(target.expressions, [duckdb_type_name(t) for t in q.root.types[:width]])
        summary = summarize_tree(target, list(q.output_names[:width]), list(q.root.types[:width]), parse, texts)
        return self.build(summary)

    def labels_for(self, node: Node) -> dict[str, str]:
        return column_labels(node, self.labels)

    def _label(self, phys: str, user: exp.Expression, node: Node | None = None) -> None:
        """Remember that the internal column ``phys`` computes ``user`` (bound over ``node`` if given)."""
        text = user.sql(dialect="duckdb")
        if node is not None:  # (user_message renames only quoted names: without one, every column's label unused)
            text = user_message(text, self.labels_for(node) if '"' in text else {})
        self.labels[phys] = text

    def query(self, tree: exp.Expression, top: bool = False) -> Query:
        with_ = tree.args.get("with_") or tree.args.get("with")
        self.ctes.append({})
        try:
            if with_ is not None:
                for cte in with_.expressions:
                    if cte.alias.lower() in self.ctes[-1]:  # DuckDB's parser error too
                        raise PlanError(f"duplicate CTE name {cte.alias!r} in one WITH: not supported")
                    node, names = self._rename_visible(self.query(cte.this)), cte.args["alias"].columns
                    if names:  # WITH t(a, b) AS (...): the first columns take these names
                        node = self._rename_columns(node, [c.name for c in names], cte)
                    self.ctes[-1][cte.alias.lower()] = node
            if isinstance(tree, exp.Union):
                return self.union(tree)
            if isinstance(tree, exp.Except | exp.Intersect):
                return self.set_difference(tree)
            if isinstance(tree, exp.Subquery):
                return self.query(tree.this)
            if isinstance(tree, exp.Select):
                return self.select(tree)
            if isinstance(tree, exp.Values):  # a bare VALUES list is SELECT * FROM it
                return self.select(exp.select("*").from_(tree))
            raise PlanError(f"unsupported query: {tree.sql()[:80]}")
        finally:
            self.ctes.pop()

    def _rename_visible(self, q: Query) -> Node:
        """A subquery's result as a FROM item: visible columns under their display names, its
        LIMIT/OFFSET applied (an ORDER BY without them orders nothing: a relation has no order)."""
        root = q.root
        if q.limit is not None or q.offset:
            root = Limit(root, tuple(q.order), q.limit, q.offset)
        names = root.names[: len(root.names) - q.hidden]
        exprs = []
        seen: set[str] = set()
        for phys, disp in zip(names, q.output_names, strict=True):
            out = _unique(disp, seen)
            exprs.append((out, _col(phys)))
        types = root.types[: len(names)]
        return Project(root, tuple(exprs), scope=tuple((None, n) for n, _ in exprs), types=tuple(types))

    def union(self, tree: exp.Union) -> Query:
        root: Node = self._union_all(tree)
        if tree.args.get("distinct"):
            root = Aggregate(root, root.names, (), scope=root.scope, types=root.types)
        q = Query(root, root.names)
        self._order_limit(q, tree, None, None)
        return q

    def set_difference(self, tree: exp.Except | exp.Intersect) -> Query:
        """EXCEPT / INTERSECT as sets: both sides tagged, unioned and grouped on every column (so NULLs
        match NULLs), keeping the groups seen on the left only (EXCEPT) or on both sides (INTERSECT)."""
        if not tree.args.get("distinct"):  # ALL: as sets of (row, its number among its copies)
            return self.query(_numbered_copies(tree, self.query(tree.this).output_names))
        tags = ("__in_left", "__in_right")
        root = self._union_all(tree, tags)
        keys = root.names[:-2]
        calls = tuple(AggCall(f"__n{i}", "sum", tag) for i, tag in enumerate(tags))
        agg = Aggregate(
            root,
            keys,
            calls,
            scope=tuple((None, n) for n in keys) + tuple((None, c.output) for c in calls),
            types=tuple(root.types[: len(keys)]) + (pa.int64(), pa.int64()),
        )
        right_test = exp.GT if isinstance(tree, exp.Intersect) else exp.EQ
        keep = exp.And(
            this=exp.GT(this=_col("__n0"), expression=exp.Literal.number(0)),
            expression=right_test(this=_col("__n1"), expression=exp.Literal.number(0)),
        )
        out = Project(
            Filter(agg, keep),
            tuple((n, _col(n)) for n in keys),
            scope=root.scope[: len(keys)],
            types=tuple(root.types[: len(keys)]),
        )
        q = Query(out, out.names)
        self._order_limit(q, tree, None, None)
        return q

    def _union_all(self, tree: exp.SetOperation, tags: tuple[str, str] | None = None) -> Node:
        """Both sides of a set operation, cast to common column types, one after the other; with
        ``tags``, each side also gets those two columns, 1 for its own side and 0 for the other."""
        what = tree.key.upper()
        left = self._rename_visible(self.query(tree.this))
        right = self._rename_visible(self.query(tree.expression))
        if len(left.names) != len(right.names):
            raise PlanError(f"{what} sides have {len(left.names)} and {len(right.names)} columns")
        types = []
        for lt, rt in zip(left.types, right.types, strict=True):
            if lt == rt or rt is None or pa.types.is_null(rt):
                types.append(lt)
            elif lt is None or pa.types.is_null(lt):
                types.append(rt)
            elif (exact := common_type([lt, rt], _widths(left, right, len(types)))) is not None and all(
                map(_is_number, (lt, rt))
            ):
                types.append(exact)  # a DECIMAL beside a number: DuckDB's common type
            elif (pa.types.is_integer(lt) or pa.types.is_floating(lt)) and (
                pa.types.is_integer(rt) or pa.types.is_floating(rt)
            ):
                types.append(pa.float64() if pa.types.is_floating(lt) or pa.types.is_floating(rt) else pa.int64())
            elif pa.types.is_string(lt) + pa.types.is_string(rt) == 1 and all(map(_text_castable, (lt, rt))):
                types.append(pa.string())  # a number or boolean beside text: DuckDB's VARCHAR
            else:
                raise PlanError(f"{what} column types differ: {lt} vs {rt}")
        names = left.names + (tags or ())
        all_types = tuple(types) + ((pa.int64(), pa.int64()) if tags else ())

        def cast(side: Node, tag: int) -> Node:
            exprs = tuple(
                (ln, _col(n) if t == st else exp.Cast(this=_col(n), to=exp.DataType.build(_sql_type(t))))
                for ln, n, t, st in zip(left.names, side.names, types, side.types, strict=True)
            )
            if tags:
                exprs += tuple((name, exp.Literal.number(int(i == tag))) for i, name in enumerate(tags))
            return Project(side, exprs, scope=tuple((None, n) for n in names), types=all_types)

        return UnionAll(cast(left, 0), cast(right, 1))

    # -- expressions -----------------------------------------------------------------------
    def resolve(self, column: exp.Column, node: Node) -> str:
        name, qual = column.name, column.table or None
        hits = [
            phys
            for phys, (q, n) in zip(node.names, node.scope, strict=True)
            if n.lower() == name.lower()
            and (
                (qual is None and not phys.startswith("__using_"))
                or (qual is not None and (q or "").lower() == qual.lower())
            )
        ]
        if not hits and qual is None:
            hits = [phys for phys in node.names if phys == name]
        if not hits and (placeholder := self.outer_reference(column)) is not None:
            return placeholder
        if not hits and any(self._resolves(column, outer) for outer in self.outer):
            raise PlanError(
                f"correlated subqueries are not supported here: {column.sql()} refers to a column of a query "
                "two or more levels out, or outside the subquery's WHERE"
            )
        if not hits:
            known = ", ".join(f"{q}.{n}" if q else n for q, n in node.scope)
            raise PlanError(f"unknown column {column.sql()}; available: {known}")
        if len(hits) > 1:
            raise PlanError(f"column {column.sql()} is ambiguous; qualify it with its table alias")
        return hits[0]

    def _resolves(self, column: exp.Column, node: Node) -> bool:
        name, qual = column.name.lower(), (column.table or "").lower()
        return any(n.lower() == name and (not qual or (q or "").lower() == qual) for q, n in node.scope)

    def bind(self, expr: exp.Expression, node: Node) -> exp.Expression:
        """Replace SQL names by the physical columns of ``node``; plan IN (subquery)."""

        def visit(e: exp.Expression):
            if isinstance(e, exp.Column) and not isinstance(e.this, exp.Star):
                return _col(self.resolve(e, node))
            if isinstance(e, exp.In) and e.args.get("query") is not None:
                self.outer.append(node)
                try:
                    return self.in_subquery(e, _transform(e.this.copy(), visit), node)
                finally:
                    self.outer.pop()
            if is_quantified(e):
                return self.quantified(e, node, lambda x: _transform(x.copy(), visit), visit)
            if isinstance(e, exp.Subquery | exp.Exists):
                self.outer.append(node)
                try:
                    return self.scalar_subquery(e) if isinstance(e, exp.Subquery) else self.exists_value(e)
                finally:
                    self.outer.pop()
            return None

        return _transform(expr.copy(), visit)

    def scalar_subquery(self, e: exp.Subquery) -> exp.Expression:
        """``(SELECT ...)`` as a value: planned here, run before the query, its one row a constant.
        Over files at rest that is exact; a subquery over an event-time stream (whose answer
        changes as time passes) is refused."""
        first = len(self.subplans)
        sub, refs = self.plan_subquery(e.this)
        sub.subplans = {k: self.subplans[k] for k in range(first, len(self.subplans))}  # its own subqueries
        if len(sub.root.names) - sub.hidden != 1:
            raise PlanError(f"a subquery used as a value must return one column: {e.sql(dialect='duckdb')}")
        if refs:
            return self.correlated_value(e, sub, refs)
        if (sub.limit is not None or sub.offset) and not sub.order and not _file_order(sub.root):
            # tidal's rows have no scan order to take "the first" from (DuckDB takes the file's)
            raise PlanError(
                f"a scalar subquery with LIMIT/OFFSET but no ORDER BY is not supported (which row it "
                f"returns is not determined; add ORDER BY): {e.sql(dialect='duckdb')}"
            )
        if any(isinstance(n, EventTime | Tumble | Session) for n in _walk(sub.root)):
            raise PlanError(f"a scalar subquery over an event-time stream is not supported: {e.sql(dialect='duckdb')}")
        key = len(self.subplans)
        self.subplans[key] = sub
        self.subquery_types[key] = sub.root.types[0]
        return scalar_subquery(key)

    def in_subquery(self, e: exp.In, value: exp.Expression, node: Node | None = None) -> exp.Expression:
        """``value IN (subquery)`` with ``value`` bound: the subquery is planned (run before the query);
        correlated, it is ``value = ANY (subquery)`` (quantified.py) over ``node``, the outer input."""
        query = e.args["query"]
        if isinstance(e.this, exp.Tuple) or (isinstance(e.this, exp.Anonymous) and e.this.name.lower() == "row"):
            raise PlanError(f"a row value IN (subquery) is not supported: {e.sql(dialect='duckdb')}")
        first = len(self.subplans)
        sub, refs = self.plan_subquery(query.this if isinstance(query, exp.Subquery) else query)
        sub.subplans = {k: self.subplans[k] for k in range(first, len(self.subplans))}  # its own subqueries
        if len(sub.root.names) - sub.hidden != 1:
            raise PlanError(f"IN (subquery) must return one column: {e.sql()}")
        if refs:
            self._forget_subplans(first)
            if node is None:
                raise PlanError(f"a correlated IN (subquery) is not supported here: {e.sql(dialect='duckdb')}")
            self.outer.pop()  # correlated_in plans its subqueries with ``node`` as their outer input
            try:
                return self.correlated_in(e, value, node, lambda s: self.bind(s, node))
            finally:
                self.outer.append(node)
        key = len(self.subplans)
        self.subplans[key] = sub
        return in_subquery(value, key)

    def check(self, expr: exp.Expression, node: Node) -> pa.DataType | None:
        schema = node.schema()
        if schema is None:
            return None
        bare = isinstance(expr, exp.Column) and not expr.table and isinstance(expr.this, exp.Identifier)
        if bare and expr.name not in self.placeholder_types:  # (an outer query's column: typed below)
            at = schema.get_field_index(expr.name)  # -1: not there, or there twice (evaluated: its error)
            if at >= 0:  # a bare column of the input: its type, as evaluating it over empty columns gives
                return schema.field(at).type
        outer = {c.name for c in expr.find_all(exp.Column)} & self.placeholder_types.keys()
        for name in sorted(outer):  # a correlated subquery's reference to the outer query
            t = self.placeholder_types[name]
            if t is None:
                return None
            schema = schema.append(pa.field(name, t))
        if has_subquery(expr):
            # IN (subquery) typed as ``value IN (value)`` (a boolean, its value checked); a scalar
            # subquery as a NULL of its column's type
            def typed(x):
                if isinstance(x, exp.Anonymous) and x.name == IN_SUBQUERY:
                    return exp.In(this=x.expressions[0].copy(), expressions=[x.expressions[0].copy()])
                if isinstance(x, exp.Anonymous) and x.name == SCALAR_SUBQUERY:
                    t = self.subquery_types[int(x.expressions[0].name)]
                    if t is None or pa.types.is_null(t):
                        return exp.Null()
                    return exp.Cast(this=exp.Null(), to=exp.DataType.build(_sql_type(t)))
                return None

            expr = _transform(expr.copy(), typed)
        try:
            return output_type(expr, schema)
        except SqlTypeError as err:
            raise SqlTypeError(user_message(str(err), self.labels_for(node))) from None


def _file_order(node: Node) -> bool:
    """Whether ``node``'s rows come in one input's order (as SqlQuery.result takes them for LIMIT)."""
    while isinstance(node, Project | Filter):
        node = node.input
    return isinstance(node, Scan) and not node.live and node.format not in ("kafka", "redis", "postgres")


def _walk(node: Node):
    yield node
    for child in node.inputs:
        yield from _walk(child)


_ONE_ROW_CLAUSES = ("from_", "from", "joins", "where", "group", "having", "qualify", "order", "limit", "offset",
                    "distinct", "windows", "with_", "with")  # fmt: skip


def _inline_selects(tree: exp.Expression) -> exp.Expression:
    """``(SELECT e)`` (no FROM, nothing but one value, no aggregate) used as a value is ``(e)``: it names no
    columns of its own, so e's columns belong to the query around it."""

    def visit(node: exp.Expression) -> exp.Expression:
        inner = node.this if isinstance(node, exp.Subquery) else None
        if (
            isinstance(inner, exp.Select)
            and not node.alias
            and not isinstance(
                node.parent,
                exp.From
                | exp.Join
                | exp.SetOperation
                | exp.CTE
                | exp.Lateral
                | exp.In
                | exp.Exists
                | exp.Any
                | exp.All,
            )
            and not isinstance(node.parent, exp.Array | exp.Unnest | exp.Describe)
            and not any(inner.args.get(k) for k in _ONE_ROW_CLAUSES)
            and len(inner.expressions) == 1
            and not isinstance(inner.expressions[0], exp.Star)
            and inner.expressions[0].find(exp.Window) is None
            and not any(_is_agg(x) for x in inner.expressions[0].walk())  # (SELECT SUM(1)) aggregates its one row
        ):
            value = inner.expressions[0]
            return exp.Paren(this=(value.this if isinstance(value, exp.Alias) else value).copy())
        return node

    return tree.transform(visit)


def _widths(left: Node, right: Node, i: int) -> list:
    """The integer literals under column ``i`` of a set operation's sides (DuckDB's INTEGER width)."""
    return [width_node(side, side.names[i]) for side in (left, right)]


def _numbered_copies(tree: exp.Except | exp.Intersect, names: list[str]) -> exp.Select:
    """``a EXCEPT ALL b`` / ``a INTERSECT ALL b`` as the set operation over each side's rows numbered
    among their copies (``ROW_NUMBER() OVER (PARTITION BY`` every column``)``, NULLs one partition), the
    numbers then dropped: the k-th copy of a row meets the k-th copy on the other side (DuckDB's bags)."""
    cols = [f"_all_c{i}" for i in range(len(names))]

    def numbered(side: exp.Expression, alias: str) -> exp.Select:
        rn = exp.Window(this=exp.RowNumber(), partition_by=[exp.column(c) for c in cols])
        src = exp.TableAlias(this=exp.to_identifier(alias), columns=[exp.to_identifier(c) for c in cols])
        return exp.select("*", exp.alias_(rn, "_all_rn")).from_(exp.Subquery(this=side.copy(), alias=src))

    op = type(tree)(this=numbered(tree.this, "_all_l"), expression=numbered(tree.expression, "_all_r"), distinct=True)
    out = exp.select(*(exp.alias_(exp.column(c), n, quoted=True) for c, n in zip(cols, names, strict=True)))
    out = out.from_(exp.Subquery(this=op, alias=exp.TableAlias(this=exp.to_identifier("_all"))))
    for key in ("order", "limit", "offset"):
        if tree.args.get(key) is not None:
            out.set(key, tree.args[key].copy())
    return out


def _text_castable(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_boolean(t) or _is_number(t)


def _is_number(t: pa.DataType) -> bool:
    return pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t)


def _literal_integers(items, types: list[str]) -> list[str]:
    """DuckDB's INTEGER where a BIGINT item of a FROM-less SELECT is one (``typeof``'s rule: tidal computes
    integers as BIGINT; a literal that fits 32 bits, and sums of such, are DuckDB's INTEGER)."""
    from ...expr.sqldecimal import expr_int_width
    from ..expressions import translate

    out = list(types)
    for k, item in enumerate(items[: len(types)]):
        if out[k] == "BIGINT" and not isinstance(item, exp.Star):
            try:
                width = expr_int_width(translate(item.this if isinstance(item, exp.Alias) else item).node, None)
            except PlanError:
                continue
            out[k] = "INTEGER" if width == 10 else out[k]
    return out
