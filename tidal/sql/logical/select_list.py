"""A SELECT's list, WHERE, GROUP BY/HAVING, aggregates, triggers and ORDER BY/LIMIT as plan nodes."""

from __future__ import annotations

from sqlglot import exp

from ...core.errors import PlanError
from ...io.files import NO_FROM
from ..dialect import CountingTrigger, DelayTrigger, Trigger, WatermarkTrigger
from ..expressions import SqlTypeError, interval_micros
from .exprs import (
    _and,
    _conjuncts,
    _const_int,
    _display,
    _order_all,
    _transform,
    _unique,
)
from .grouping import GroupedSelect, _has_aggregate
from .nodes import Aggregate, Filter, Node, Project, Query
from .order_by import explicitly_named, named_item
from .star import expand_star, lateral_aliases, no_effect_literal, set_op_position
from .types import is_condition_type, sql_type_name
from .windows import has_window, named_windows


class SelectList(GroupedSelect):
    """Part of :class:`~.builder.Builder`: SELECT and its aggregates."""

    # -- SELECT ---------------------------------------------------------------------------------
    def select(self, sel: exp.Select) -> Query:
        sel = named_windows(sel.copy())
        distinct = sel.args.get("distinct")
        if distinct is not None and distinct.args.get("on") is not None:
            # DuckDB keeps the first row of each key in ORDER BY order: ROW_NUMBER() ... = 1
            from .distinct_on import rewrite_distinct_on

            return self.select(rewrite_distinct_on(sel))
        from_ = sel.args.get("from_") or sel.args.get("from")
        if not sel.expressions:
            raise PlanError("a SELECT without a selection list is not supported (DuckDB rejects it too)")
        if from_ is None and any(
            isinstance(i.this if isinstance(i, exp.Column) else i, exp.Star) for i in sel.expressions
        ):
            raise PlanError("SELECT * without FROM is not supported (DuckDB rejects it too)")
        # a SELECT without FROM reads one row of no visible columns (DuckDB's answer: one row)
        node = self.from_item(from_.this) if from_ is not None else self.scan("(no FROM)", NO_FROM, {})
        match = sel.args.get("match")
        if match is not None:
            if sel.args.get("joins"):
                raise PlanError("MATCH_RECOGNIZE over a join is not supported: match a subquery that joins")
            node = self.match_recognize(node, match)
        for join in sel.args.get("joins") or ():
            node = self.join(node, join)
        trigger = sel.args.get("trigger")
        triggers = self._triggers(trigger) if trigger is not None else ()
        where = sel.args.get("where")
        if where is not None:
            kept = []
            for part in _conjuncts(_select_aliases(where.this, sel.expressions, node)):
                joined = self.where_subquery(node, part)  # a correlated [NOT] EXISTS / IN: a semi/anti-join
                if joined is None:
                    kept.append(part)
                else:
                    node = joined
            if kept:
                cond, node = self.bind_attached(_and(kept), node)
                t = self.check(cond, node)
                if t is not None and not is_condition_type(t):
                    raise SqlTypeError(f"WHERE {where.this.sql(dialect='duckdb')} is {sql_type_name(t)}, not boolean")
                node = Filter(node, cond)
        group = sel.args.get("group")
        items = self._expand_star(sel.expressions, node, lateral=group is None)
        having = sel.args.get("having")
        aggs_present = any(_has_aggregate(e) for e in items) or having is not None
        order_exprs = _order_all(sel.args.get("order").expressions if sel.args.get("order") else [], len(items))
        explicit = explicitly_named(items, node.scope)
        if group is not None or aggs_present:
            node, items, having_expr, order_exprs = self.aggregate(node, items, group, having, order_exprs, triggers)
        else:
            having_expr = None
            if triggers:
                raise PlanError("TRIGGER applies to a query with GROUP BY or aggregates")
        if having_expr is not None:
            t = self.check(having_expr, node)
            if t is not None and not is_condition_type(t):
                raise SqlTypeError(f"HAVING {having.this.sql(dialect='duckdb')} is {sql_type_name(t)}, not boolean")
            node = Filter(node, having_expr)
        if any(has_window(i) for i in items):
            if any(has_window(o.this) for o in order_exprs):
                raise PlanError("a window function in ORDER BY is not supported: select it and order by its alias")
            node, items = self.windows(node, items, sel)
        # projection, with ORDER BY expressions that are not outputs as hidden trailing columns
        exprs, names, types = [], [], []
        used: set[str] = set()
        for item in items:
            disp = _display(item)
            bound = item.this if isinstance(item, exp.Alias) else item
            if not getattr(item, "_bound", False):
                bound, node = self.bind_attached(bound, node)
            phys = _unique(disp, used)
            exprs.append((phys, bound))
            names.append(disp)
            types.append(self.check(bound, node))
        order = []
        hidden = 0
        out_scope = tuple((None, n) for n in names)
        visible = list(exprs)
        for o in order_exprs:
            key = o.this
            desc = bool(o.args.get("desc"))
            target = None
            if no_effect_literal(key):  # DuckDB: an error, it orders nothing ('a', NULL, TRUE)
                raise PlanError(f"ORDER BY a non-integer literal ({key.sql()}) is not supported: it has no effect")
            if isinstance(key, exp.Literal) and not key.is_string:
                pos = int(key.name)
                if not 1 <= pos <= len(exprs):
                    raise PlanError(f"ORDER BY position {pos} is out of range")
                target = exprs[pos - 1][0]
            elif isinstance(key, exp.Column) and not key.table and not getattr(o, "_bound", False):
                # (a key rewritten over the groups names a physical column, which may share an item's name)
                position = named_item(key.name, names, explicit)
                target = visible[position][0] if position is not None else None
            if target is None:
                text = key.sql()
                hits = [p for (p, e), item in zip(visible, items, strict=True) if item.sql() == text]
                target = hits[0] if hits else None
            if target is None and not getattr(o, "_bound", False):
                # a qualified column (ORDER BY t.x) that is also selected: order by the output
                try:
                    text = self.bind(key, node).sql()
                except PlanError:
                    text = None
                hits = [p for p, e in visible if e.sql() == text]
                target = hits[0] if hits else None
            if target is None:
                bound = key
                if not getattr(o, "_bound", False):
                    bound, node = self.bind_attached(key, node)
                phys = f"__order{len(order)}"
                self._label(phys, key, node)
                exprs.append((phys, bound))
                types.append(self.check(bound, node))
                hidden += 1
                target = phys
            order.append((target, desc, o.args.get("nulls_first")))
        project = Project(
            node, tuple(exprs), scope=out_scope + tuple((None, "") for _ in range(hidden)), types=tuple(types)
        )
        root: Node = project
        if sel.args.get("distinct"):
            if hidden:
                raise PlanError("ORDER BY of SELECT DISTINCT must use selected columns")
            root = Aggregate(root, root.names, (), scope=project.scope, types=project.types)
        q = Query(root, tuple(names), tuple(order), hidden=hidden)
        self._order_limit(q, sel, None, None)
        return q

    def _order_limit(self, q: Query, tree, _a, _b) -> None:
        limit = tree.args.get("limit")
        offset = tree.args.get("offset")
        if limit is not None:
            q.limit = _const_int(limit.expression, "LIMIT")
        if offset is not None:
            q.offset = _const_int(offset.expression, "OFFSET")
        if isinstance(tree, exp.SetOperation) and tree.args.get("order"):
            for o in tree.args["order"].expressions:
                key = o.this
                hits = [p for p in q.root.names if p.lower() == key.name.lower()] if isinstance(key, exp.Column) else []
                if isinstance(key, exp.Literal):
                    hits = list(q.root.names[int(key.name) - 1 : int(key.name)]) if int(key.name) >= 1 else []
                hits = hits or ([q.root.names[p]] if (p := set_op_position(tree, key)) is not None else [])
                if not hits:
                    raise PlanError(f"ORDER BY of a {tree.key.upper()} must name an output column: {key.sql()}")
                q.order = (*q.order, (hits[0], bool(o.args.get("desc")), o.args.get("nulls_first")))

    def _expand_star(self, items, node: Node, lateral: bool = False) -> list[exp.Expression]:
        items = expand_star(items, node)  # lateral: (no GROUP BY) an item may name an earlier item's alias
        return lateral_aliases(items, node, lambda e: not (_has_aggregate(e) or has_window(e))) if lateral else items

    def _triggers(self, trigger: Trigger) -> tuple:
        out = []
        for t in trigger.expressions:
            if isinstance(t, CountingTrigger):
                out.append(("counting", _const_int(t.this, "TRIGGER COUNTING")))
            elif isinstance(t, DelayTrigger):
                out.append(("delay", interval_micros(t.this)))
            elif isinstance(t, WatermarkTrigger):
                out.append(("watermark",))
        return tuple(out)


def _select_aliases(e: exp.Expression, items: list, node: Node) -> exp.Expression:
    """DuckDB lets WHERE name a SELECT alias (of an expression without aggregates or windows) that is
    not an input column: the alias stands for its expression."""
    in_scope = {n.lower() for _, n in node.scope}
    aliases = {
        i.alias.lower(): i.this
        for i in items
        if isinstance(i, exp.Alias) and i.alias.lower() not in in_scope and not _has_aggregate(i) and not has_window(i)
    }
    if not aliases:
        return e

    def visit(x):
        if isinstance(x, exp.Column) and not x.table and x.name.lower() in aliases:
            return aliases[x.name.lower()].copy()
        if isinstance(x, exp.Subquery | exp.Select):
            return x
        return None

    return _transform(e.copy(), visit)
