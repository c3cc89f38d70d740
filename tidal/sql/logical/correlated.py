"""Correlated subqueries, decorrelated into joins: EXISTS, IN, and subqueries used as values.

A subquery is planned with the enclosing query's input as its outer scope; a column that only the
outer scope has becomes a *placeholder* column (``__outerN``). Only placeholders in the subquery's
WHERE (the filter right above its FROM) are decorrelated; anywhere else (its SELECT list, GROUP BY,
HAVING, a join inside it, a subquery two levels down) the subquery is refused, naming the column.

- ``EXISTS (q)`` / ``NOT EXISTS (q)`` / ``x IN (q)`` / ``x NOT IN (q)`` as a conjunct of WHERE: a
  semi-join (anti-join) of the outer rows with q's FROM rows, on q's WHERE conjuncts that mention
  the outer query (equalities become join keys, the rest a join condition). ``x NOT IN (q)`` keeps
  SQL's NULL rules: an outer row is dropped when some correlated row has ``y = x``, ``y IS NULL``
  or (when there is any correlated row) ``x IS NULL``.
- ``(SELECT agg FROM ... WHERE inner = outer ...)`` anywhere in an expression (and EXISTS anywhere
  else, as ``(SELECT COUNT(*) > 0 ...)``): q grouped by the inner sides of its correlated
  equalities, left-joined to the outer rows on them; an outer row without a group gets q's answer
  over no rows (COUNT 0, the other aggregates NULL), computed from the same expression. Correlated
  conditions that are not such equalities, non-aggregate scalar subqueries and HAVING inside a
  correlated scalar subquery are refused.
"""

from __future__ import annotations

import contextlib
import dataclasses
from dataclasses import field, replace

import pyarrow as pa
from sqlglot import exp

from ...core.errors import PlanError
from ...core.frozen import FACTORY, Fields, mutable
from ...io.files import NO_FROM
from .exprs import _and, _col, _conjuncts, _is_agg, _transform
from .lift import lift
from .nodes import AggCall, Aggregate, EventTime, Filter, Node, Project, Query, Scan, Session, Tumble
from .types import _sql_type

_COUNTS = ("count", "count_not_null", "count_distinct")


@mutable
class _Correlation(Fields):
    """Collects the outer columns a subquery being planned refers to."""

    depth: int  # len(Builder.outer) while the subquery's own columns are resolved
    refs: dict = field(default_factory=dict)  # placeholder -> (outer physical column, SQL text)

    def __init__(self, depth, refs=FACTORY):
        self.depth = depth
        self.refs = dict() if refs is FACTORY else refs


@mutable
class _Pending(Fields):
    """Left joins that expressions being bound need, attached to the node by the caller."""

    outer_map: object  # bound expression over the outer node -> expression over the node joined to
    joins: list = field(default_factory=list)  # (inner node, bound join condition), or node -> joined node

    def __init__(self, outer_map, joins=FACTORY):
        self.outer_map = outer_map
        self.joins = list() if joins is FACTORY else joins


def _sql(e: exp.Expression) -> str:
    text = e.sql(dialect="duckdb")
    return text if len(text) <= 120 else text[:117] + "..."


def _mentions(value, names: set) -> bool:
    """Whether a plan node's fields (expressions, column names, nested calls) mention any of ``names``."""
    if isinstance(value, exp.Expression):
        return any(c.name in names for c in value.find_all(exp.Column))
    if isinstance(value, str):
        return value in names
    if isinstance(value, tuple | list):
        return any(_mentions(v, names) for v in value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type | pa.Table):
        return any(
            _mentions(getattr(value, f.name), names) for f in dataclasses.fields(value) if f.name not in ("rows",)
        )
    return False


class CorrelatedSubqueries:
    """Part of :class:`~.builder.Builder`: planning subqueries that refer to the enclosing query."""

    # -- planning a subquery, collecting its outer references ---------------------------------
    def plan_subquery(self, tree: exp.Expression) -> tuple[Query, dict]:
        """Plan ``tree`` (the outer input is ``self.outer[-1]``): its Query and its outer references."""
        ctx = _Correlation(len(self.outer))
        self.correlating.append(ctx)
        try:
            return self.query(tree), ctx.refs
        finally:
            self.correlating.pop()

    def outer_reference(self, column: exp.Column) -> str | None:
        """A placeholder for ``column`` when it names a column of the immediately enclosing query."""
        if not self.correlating or not self.outer:
            return None
        ctx = self.correlating[-1]
        injected = self.injected.get(column.name)
        if injected is not None and ctx.depth == len(self.outer) and injected[0] is self.outer[-1]:
            # a value of the outer query put into the subquery by a rewrite (quantified.py): bound already
            ph = self.fresh("outer")
            ctx.refs[ph] = injected[1:3]
            self.placeholder_types[ph] = injected[3]
            return ph
        if ctx.depth != len(self.outer) or not self._resolves(column, self.outer[-1]):
            return None
        outer_node = self.outer[-1]
        saved = self.outer
        self.outer = saved[:-1]
        try:
            phys = self.resolve(column, outer_node)
        finally:
            self.outer = saved
        ph = self.fresh("outer")
        ctx.refs[ph] = (phys, column.sql(dialect="duckdb"))
        self.placeholder_types[ph] = outer_node.types[outer_node.names.index(phys)]
        return ph

    @contextlib.contextmanager
    def correlated_joins(self, outer_map=None):
        """Within: correlated scalar subqueries may be bound; ``.joins`` lists the joins they need."""
        pending = _Pending(outer_map or (lambda e: e))
        self.pending.append(pending)
        try:
            yield pending
        finally:
            self.pending.pop()

    def attach(self, node: Node, pending: _Pending) -> Node:
        """``node`` left-joined with each subquery result the bound expressions need (then forgotten)."""
        for join in pending.joins:
            if callable(join):  # built over the node it attaches to (per distinct outer value)
                node = join(node)
                continue
            inner, cond = join
            node = self._join_on(node, inner, "left", None, None, bound_on=cond)
        pending.joins.clear()
        return node

    def bind_attached(self, expr: exp.Expression, node: Node) -> tuple[exp.Expression, Node]:
        """``expr`` bound over ``node``, and ``node`` with the joins its correlated subqueries need."""
        with self.correlated_joins() as pending:
            bound = self.bind(expr, node)
            return bound, self.attach(node, pending)

    def _forget_subplans(self, count: int) -> None:
        for key in [k for k in self.subplans if k >= count]:
            del self.subplans[key]
            self.subquery_types.pop(key, None)

    # -- the shape of a planned subquery ----------------------------------------------------------
    def _split_where(self, sub: Query, refs: dict, what: str, text: str, allow_aggregate: bool, outer_values=False):
        """q's plan as (top Project, Aggregate or None, FROM node, uncorrelated WHERE conjuncts,
        correlated WHERE conjuncts), or a PlanError naming what cannot be decorrelated."""
        names = set(refs)
        shown = ", ".join(t for _, t in refs.values())
        root = sub.root
        if any(isinstance(n, EventTime | Tumble | Session) for n in _walk(root)):
            raise PlanError(f"a correlated subquery over an event-time stream is not supported: {text}")
        if isinstance(root, Aggregate) and not root.aggs and what in ("EXISTS", "IN"):
            root = root.input  # SELECT DISTINCT: the same rows exist
        if not isinstance(root, Project):
            raise PlanError(f"this correlated subquery ({what}) is not supported: {text}")
        top, below = root, root.input
        agg = None
        if isinstance(below, Aggregate):
            if not allow_aggregate or below.keys or below.trigger:
                raise PlanError(f"a correlated {what} subquery with GROUP BY or aggregates is not supported: {text}")
            agg, pre = below, below.input
            if not isinstance(pre, Project):
                raise PlanError(f"this correlated subquery is not supported: {text}")
            below = pre.input
        elif isinstance(below, Filter) and allow_aggregate and isinstance(below.input, Aggregate):
            raise PlanError(f"HAVING in a correlated subquery is not supported: {text}")
        where = below if isinstance(below, Filter) else None
        source = where.input if where is not None else below
        lifted: list = []
        if _mentions(source, names):
            moved = lift(self, source, names, _mentions)  # a derived table's WHERE: lifted to q's
            if moved is None:
                raise PlanError(f"a correlated column ({shown}) in the subquery's FROM is not supported: {text}")
            source, lifted = moved
        if outer_values:
            pass  # the caller maps outer columns in q's values (per distinct outer value)
        elif agg is not None:
            if _mentions(pre.exprs, names) or _mentions(top.exprs, names):
                raise PlanError(f"a correlated column ({shown}) outside the subquery's WHERE is not supported: {text}")
        elif what != "EXISTS" and _mentions(top.exprs, names):
            raise PlanError(f"a correlated column ({shown}) outside the subquery's WHERE is not supported: {text}")
        parts = _conjuncts(where.condition) if where is not None else []
        plain = [p for p in parts if not _mentions(p, names)]
        correlated = [p for p in parts if _mentions(p, names)] + lifted
        return top, agg, (pre if agg is not None else None), source, plain, correlated

    def _outer_expr(self, e: exp.Expression, refs: dict, outer_map) -> exp.Expression:
        def visit(x):
            if isinstance(x, exp.Column) and x.name in refs:
                ref = refs[x.name][0]
                return ref.copy() if isinstance(ref, exp.Expression) else outer_map(_col(ref))
            return None

        return _transform(e.copy(), visit)

    # -- WHERE ... [NOT] EXISTS / [NOT] IN (correlated) -------------------------------------------
    def where_subquery(self, node: Node, part: exp.Expression) -> Node | None:
        """``node`` semi- or anti-joined for a correlated [NOT] EXISTS / [NOT] IN conjunct of WHERE;
        None when ``part`` is not one (or its subquery is not correlated: it is a plain condition)."""
        negated = isinstance(part, exp.Not)
        inner = part.this if negated else part
        while isinstance(inner, exp.Paren):
            inner = inner.this
        if isinstance(inner, exp.Exists):
            what, tree, value = "EXISTS", inner.this, None
        elif isinstance(inner, exp.In) and inner.args.get("query") is not None:
            query = inner.args["query"]
            what, tree, value = "IN", query.this if isinstance(query, exp.Subquery) else query, inner.this
        else:
            return None
        count = len(self.subplans)
        self.outer.append(node)
        try:
            sub, refs = self.plan_subquery(tree)
        finally:
            self.outer.pop()
        if not refs:
            self._forget_subplans(count)
            return None
        text = _sql(part)
        if what == "IN" and len(sub.root.names) - sub.hidden != 1:
            raise PlanError(f"IN (subquery) must return one column: {text}")
        if sub.offset or (sub.limit is not None and (what == "IN" or sub.limit < 1)):
            raise PlanError(f"LIMIT/OFFSET in a correlated {what} subquery is not supported: {text}")
        top, _, _, source, plain, correlated = self._split_where(sub, refs, what, text, allow_aggregate=False)
        rows: Node = Filter(source, _and(plain)) if plain else source
        fresh = {n: self.fresh("r") for n in rows.names}
        renamed = Project(
            rows,
            tuple((fresh[n], _col(n)) for n in rows.names),
            scope=tuple((None, fresh[n]) for n in rows.names),
            types=rows.types,
        )

        def inner_expr(e: exp.Expression) -> exp.Expression:
            def visit(x):
                if isinstance(x, exp.Column) and x.name in refs:
                    ref = refs[x.name][0]
                    return ref.copy() if isinstance(ref, exp.Expression) else _col(ref)
                if isinstance(x, exp.Column) and x.name in fresh:
                    return _col(fresh[x.name])
                return None

            return _transform(e.copy(), visit)

        conds = [inner_expr(p) for p in correlated]
        if what == "IN":
            x = self.bind(value, node)
            y = inner_expr(top.exprs[0][1])
            eq = exp.EQ(this=x, expression=y)
            if negated:  # NOT IN: no correlated row equal to x, none NULL, and x not NULL unless there is none
                eq = exp.Paren(
                    this=exp.Or(
                        this=exp.Or(this=eq, expression=exp.Is(this=y.copy(), expression=exp.Null())),
                        expression=exp.Is(this=x.copy(), expression=exp.Null()),
                    )
                )
            conds.append(eq)
        cond = _and(conds) if conds else exp.true()  # EXISTS (SELECT outer.x): any row at all
        return self._join_on(node, renamed, "anti" if negated else "semi", None, None, bound_on=cond)

    # -- (SELECT agg ... WHERE inner = outer) as a value --------------------------------------------
    def correlated_value(self, e: exp.Expression, sub: Query, refs: dict) -> exp.Expression:
        """The value of a correlated scalar subquery ``e``: a column of a left join the caller attaches."""
        text = _sql(e)
        root = sub.root
        if isinstance(root, Project) and isinstance(root.input, Scan) and root.input.format == NO_FROM:
            if sub.offset or sub.limit == 0:
                raise PlanError(f"LIMIT/OFFSET in a correlated subquery is not supported: {text}")
            outer_map = self.pending[-1].outer_map if self.pending else (lambda x: x)
            return self._outer_expr(root.exprs[0][1], refs, outer_map)  # SELECT outer.x: the value itself
        if not self.pending:
            shown = ", ".join(t for _, t in refs.values())
            raise PlanError(f"correlated subqueries are not supported here: {shown} (outer query) in {text}")
        pending = self.pending[-1]
        if sub.offset or (sub.limit is not None and sub.limit < 1):
            raise PlanError(f"LIMIT/OFFSET in a correlated subquery is not supported: {text}")
        top, agg, pre, source, plain, correlated = self._split_where(
            sub, refs, "scalar", text, allow_aggregate=True, outer_values=True
        )
        single = agg is None  # no aggregate: at most one row per outer row, or DuckDB's error at run time
        if single:
            if sub.limit is not None:
                raise PlanError(f"LIMIT in a correlated subquery without an aggregate is not supported: {text}")
            top, agg, pre = _one_row_aggregate(self, top, source)
        names = set(refs)
        sides = [_equality_sides(p, names) for p in correlated]
        rows: Node = Filter(source, _and(plain)) if plain else source
        in_values = _mentions(pre.exprs, names) or _mentions(top.exprs, names)
        args = dict(pre.exprs)
        for call in () if single else agg.aggs:
            cols = {c.name for c in args[call.argument].find_all(exp.Column)} if call.argument in args else set()
            if cols & names and not cols - names:  # SQL makes it an aggregate of the outer query
                raise PlanError(
                    f"an aggregate of only the outer query's columns in a subquery is not supported: {text}"
                )
        # ``single``: the row count per key travels with the value and is checked after the join, on the
        # outer rows only (a key no outer row has may hold several rows: no error, as in DuckDB)
        value, mark, counted = self.fresh("sv"), self.fresh("sm"), self.fresh("sn") if single else None
        if all(sides) and not in_values:  # inner = outer equalities: q grouped by its inner sides
            inner_keys = [s[0] for s in sides]
            outer_keys = [self._outer_expr(s[1], refs, pending.outer_map) for s in sides]
            keys = [self.fresh("ck") for _ in inner_keys]
            key_types = [self.check(k, rows) for k in inner_keys]
            inner = self._grouped_value(
                rows, pre, agg, top, inner_keys, keys, key_types, (value, mark, counted), single
            )
            join_on = [exp.EQ(this=o, expression=_col(k)) for o, k in zip(outer_keys, keys, strict=True)]
            pending.joins.append((inner, _and(join_on)))
            to_outer = {}
        else:  # any other condition: q per distinct outer value, joined back NULL-safely
            phs = sorted(refs)
            keys = [self.fresh("ck") for _ in phs]
            to_key = dict(zip(phs, keys, strict=True))  # q's values name the outer ones as D's columns
            pre = replace(pre, exprs=tuple((n, _renamed(x, to_key)) for n, x in pre.exprs))
            top = replace(top, exprs=tuple((n, _renamed(x, to_key)) for n, x in top.exprs))
            cond = _and([_renamed(p, to_key) for p in correlated]) if correlated else exp.true()
            outer = [self._outer_expr(exp.column(ph), refs, pending.outer_map) for ph in phs]

            def per_outer_value(base: Node) -> Node:
                """``base`` (the node the joins attach to) left-joined with q's value for each distinct
                combination D of the outer values q names: D from ``base`` itself, joined with q's rows on
                q's correlated conditions (any of them), aggregated per D; a NULL in D matches a NULL."""
                types = [self.check(o, base) for o in outer]
                values = Project(
                    base,
                    tuple((k, o.copy()) for k, o in zip(keys, outer, strict=True)),
                    scope=tuple((None, k) for k in keys),
                    types=tuple(types),
                )
                distinct = Aggregate(values, tuple(keys), (), scope=values.scope, types=values.types)
                joined = self._join_on(distinct, rows, "inner", None, None, bound_on=cond)
                inner = self._grouped_value(
                    joined, pre, agg, top, [_col(k) for k in keys], keys, types, (value, mark, counted), single
                )
                join_on = []
                for o, k in zip(outer, keys, strict=True):
                    null_o = exp.Paren(this=exp.Is(this=o.copy(), expression=exp.Null()))
                    null_k = exp.Paren(this=exp.Is(this=_col(k), expression=exp.Null()))
                    join_on.append(exp.EQ(this=null_o, expression=null_k))
                    join_on.append(
                        exp.Paren(this=exp.Or(this=exp.EQ(this=o.copy(), expression=_col(k)), expression=null_o.copy()))
                    )
                return self._join_on(base, inner, "left", None, None, bound_on=_and(join_on))

            pending.joins.append(per_outer_value)
            to_outer = {k: ph for ph, k in to_key.items()}
        empty = self._outer_expr(_renamed(_over_no_rows(top.exprs[0][1], agg), to_outer), refs, pending.outer_map)
        return exp.Case(
            ifs=[exp.If(this=exp.Is(this=_col(mark), expression=exp.Null()), true=empty)],
            default=_one_row(counted, value) if single else _col(value),
        )

    def _grouped_value(self, rows, pre, agg, top, inner_keys, keys, key_types, out, single) -> Project:
        """q's value per key: q's aggregate over ``rows`` grouped by ``inner_keys`` (named ``keys``), as
        (value, keys..., mark = TRUE); ``single``: at most one row per key, or DuckDB's error."""
        value, mark, counted = out
        pre2 = Project(
            rows,
            (*pre.exprs, *zip(keys, inner_keys, strict=True)),
            scope=(*pre.scope, *((None, k) for k in keys)),
            types=(*pre.types, *key_types),
        )
        agg2 = replace(
            agg,
            input=pre2,
            keys=tuple(keys),
            scope=(*((None, k) for k in keys), *agg.scope),
            types=(*key_types, *agg.types),
        )
        expr = top.exprs[0][1]
        extra: tuple = ()
        if single:
            count, first = (c.output for c in agg.aggs)
            expr, extra = _col(first), ((counted, _col(count)),)
        out_names = (value, *keys, mark, *(n for n, _ in extra))
        return Project(
            agg2,
            ((value, expr), *((k, _col(k)) for k in keys), (mark, exp.true()), *extra),
            scope=tuple((None, n) for n in out_names),
            types=(top.types[0], *key_types, pa.bool_(), *((pa.int64(),) if extra else ())),
        )

    def exists_value(self, e: exp.Exists) -> exp.Expression:
        """``EXISTS (q)`` as a value: ``(SELECT COUNT(*) > 0 FROM q's FROM WHERE q's WHERE)``."""
        tree = e.this
        if (
            isinstance(tree, exp.Select)
            and (tree.args.get("from_") or tree.args.get("from")) is None
            and not any(tree.args.get(k) for k in ("group", "having", "offset", "limit", "qualify", "joins"))
        ):
            # no FROM: one row (an aggregate's too), kept when WHERE (over the outer row alone) holds
            count = len(self.subplans)
            self.plan_subquery(tree)  # its errors are the query's (an unknown column, a misplaced aggregate...)
            self._forget_subplans(count)
            where = tree.args.get("where")
            if any(_is_aggregate(x) or x.find(exp.Window) for x in tree.expressions):
                # whose aggregate is it (an aggregate of outer columns belongs to the outer query)?
                raise PlanError(f"EXISTS over a SELECT without FROM that aggregates is not supported: {_sql(e)}")
            if where is None:
                return exp.true()
            return self.scalar_subquery(
                exp.Subquery(this=exp.select(exp.func("coalesce", where.this.copy(), exp.false())))
            )
        simple = isinstance(tree, exp.Select) and not any(
            tree.args.get(k) for k in ("group", "having", "offset", "qualify", "windows")
        )
        limit = tree.args.get("limit") if simple else None
        if simple and limit is not None:
            expr = limit.expression
            simple = isinstance(expr, exp.Literal) and expr.is_int and int(expr.name) >= 1
        if simple and (tree.args.get("from_") or tree.args.get("from")) is not None:
            counted = tree.copy()
            for k in ("order", "limit", "distinct"):
                counted.set(k, None)
            counted.set("expressions", [exp.GT(this=exp.Count(this=exp.Star()), expression=exp.Literal.number(0))])
        else:
            counted = exp.select(exp.GT(this=exp.Count(this=exp.Star()), expression=exp.Literal.number(0))).from_(
                exp.Subquery(this=tree.copy(), alias=exp.TableAlias(this=exp.to_identifier("__exists")))
            )
        return self.scalar_subquery(exp.Subquery(this=counted))


def _is_aggregate(e: exp.Expression) -> bool:
    return any(_is_agg(n) for n in e.walk())


def _equality_sides(p: exp.Expression, outer: set) -> tuple | None:
    """``inner = outer`` (either way round) as (inner side, outer side), else None."""
    if isinstance(p, exp.Paren):
        return _equality_sides(p.this, outer)
    if not isinstance(p, exp.EQ):
        return None
    for a, b in ((p.this, p.expression), (p.expression, p.this)):
        acols = {c.name for c in a.find_all(exp.Column)}
        bcols = {c.name for c in b.find_all(exp.Column)}
        if acols and bcols and not (acols & outer) and bcols <= outer:
            return a, b
    return None


def _renamed(e: exp.Expression, names: dict) -> exp.Expression:
    """``e`` with the columns named in ``names`` renamed."""
    return _transform(
        e.copy(), lambda x: _col(names[x.name]) if isinstance(x, exp.Column) and x.name in names else None
    )


def _one_row_aggregate(builder, top: Project, source: Node) -> tuple[Project, Aggregate, Project]:
    """A subquery's value without an aggregate, as one: per group (outer row) its row count and its
    value (``max``, exact when the count is at most one, which ``__one_row`` checks)."""
    arg, count, first = builder.fresh("sa"), builder.fresh("sc"), builder.fresh("sf")
    pre = Project(source, ((arg, top.exprs[0][1]),), scope=((None, arg),), types=(top.types[0],))
    agg = Aggregate(
        pre,
        (),
        (AggCall(count, "count", None), AggCall(first, "max", arg)),
        scope=((None, count), (None, first)),
        types=(pa.int64(), top.types[0]),
    )
    out = Project(agg, ((top.names[0], _col(first)),), scope=top.scope[:1], types=top.types[:1])
    return out, agg, pre


def _one_row(count: str, value: str) -> exp.Expression:
    return exp.Anonymous(this="__one_row", expressions=[_col(count), _col(value)])


def _over_no_rows(value: exp.Expression, agg: Aggregate) -> exp.Expression:
    """``value`` (over ``agg``'s columns) when the aggregate saw no rows: counts 0, the rest NULL."""
    types = dict(zip(agg.names, agg.types, strict=True))
    counts = {c.output for c in agg.aggs if c.function in _COUNTS}

    def visit(x):
        if isinstance(x, exp.Column) and x.name in types:
            if x.name in counts:
                return exp.Literal.number(0)
            t = types[x.name]
            if t is None or pa.types.is_null(t):
                return exp.Null()
            return exp.Cast(this=exp.Null(), to=exp.DataType.build(_sql_type(t)))
        return None

    return _transform(value.copy(), visit)


def _walk(node: Node):
    yield node
    for child in node.inputs:
        yield from _walk(child)
