"""GROUP BY, HAVING and aggregate calls of a SELECT: its items rewritten over the groups' keys and aggregates."""

from __future__ import annotations

from functools import partial

import pyarrow as pa
from sqlglot import exp

from ...core.errors import PlanError
from . import aggregate_args as aggregate_args_
from .aggregate_args import _NAN_AS_VALUE, _NAN_FIXES, _filtered_aggregate, _group_key, _nan_fix, _packed
from .decimal_aggs import DECIMAL_AGGREGATES
from .exprs import (
    _AGGS,
    _col,
    _display,
    _fraction,
    _is_agg,
    _subtree_sizes,
    _transform,
    column_labels,
)
from .nodes import AggCall, Aggregate, Node, Project
from .order_by import explicitly_named, named_item
from .quantified import is_quantified
from .types import _agg_type, checked_agg, sql_type_name


class GroupedSelect:
    """Part of :class:`~.select_list.SelectList`: GROUP BY and the aggregates of a SELECT."""

    def aggregate(self, node, items, group, having, order_exprs, triggers):
        key_exprs = []
        if group is not None and group.args.get("all"):
            # GROUP BY ALL (DuckDB): every SELECT item that does not aggregate
            key_exprs = [i.this if isinstance(i, exp.Alias) else i for i in items if not _has_aggregate(i)]
        elif group is not None:
            for g in group.expressions:
                if isinstance(g, exp.Literal) and not g.is_string:
                    if not 1 <= int(g.name) <= len(items):
                        raise PlanError(f"GROUP BY position {g.name} is out of range (1 to {len(items)})")
                    item = items[int(g.name) - 1]
                    g = item.this if isinstance(item, exp.Alias) else item
                elif isinstance(g, exp.Column) and not g.table:
                    # GROUP BY may name a SELECT alias
                    aliased = [i.this for i in items if isinstance(i, exp.Alias) and i.alias.lower() == g.name.lower()]
                    if aliased and not any(n.lower() == g.name.lower() for _, n in node.scope):
                        g = aliased[0]
                key_exprs.append(g)
        pre: list[tuple[str, exp.Expression]] = []
        key_names = []
        key_map: dict[str, str] = {}
        for g in key_exprs:
            bound = self.bind(g, node)
            text = bound.sql()
            if text in key_map:
                continue
            phys = bound.name if isinstance(bound, exp.Column) else self.fresh("k")
            if phys in key_names:
                continue
            if not isinstance(bound, exp.Column):
                self._label(phys, g)
            pre.append((phys, bound))
            key_names.append(phys)
            key_map[text] = phys
        calls: list[AggCall] = []
        agg_map: dict[str, str] = {}
        nan_fixes: dict[str, exp.Expression] = {}
        # DuckDB lets HAVING and aggregate arguments name a SELECT alias that is not an input column
        in_scope = {n.lower() for _, n in node.scope}
        aliases = {
            i.alias.lower(): i.this
            for i in items
            if isinstance(i, exp.Alias) and not getattr(i, "_bound", False) and i.alias.lower() not in in_scope
        }

        def with_aliases(e: exp.Expression) -> exp.Expression:
            def visit(x):
                if isinstance(x, exp.Column) and not x.table and x.name.lower() in aliases:
                    return aliases[x.name.lower()].copy()
                if isinstance(x, exp.Subquery | exp.Select):
                    return x  # a subquery's names are its own
                return None

            return _transform(e.copy(), visit) if aliases else e

        def add_agg(e: exp.Expression) -> str:
            aggregate_args_.check_arity(e)
            if isinstance(e.this, exp.Order) and not isinstance(e, exp.GroupConcat | exp.ArrayAgg):
                if isinstance(e, exp.First | exp.Last | exp.AnyValue):
                    raise PlanError(f"ORDER BY inside {e.sql_name()} is not supported: {e.sql(dialect='duckdb')}")
                e = e.copy()  # the order of the values changes nothing these aggregates compute
                e.set("this", e.this.this)
            bound = self.bind(e, node)
            text = bound.sql()
            if text in agg_map:
                return agg_map[text]
            distinct = isinstance(e.this, exp.Distinct)
            arg = e.this.expressions[0] if distinct else e.this
            out = self.fresh("g")
            param = None
            if isinstance(e, exp.Count):
                if isinstance(arg, exp.Star) or arg is None:
                    if distinct:  # DuckDB: a binder error, * only at the root of a select item
                        raise PlanError(f"COUNT(DISTINCT *) is not supported (DuckDB rejects it too): {e.sql()}")
                    fn, arg_phys = "count", None
                else:
                    fn = "count_distinct" if distinct else "count_not_null"
                    arg_phys = self._agg_arg(arg, node, pre)
            elif isinstance(e, exp.GroupConcat):
                # string_agg(x [, sep]): values in input order (relational rows get their row ordinal as time)
                if distinct:
                    raise PlanError(f"DISTINCT in STRING_AGG is not supported: {e.sql(dialect='duckdb')}")
                order = None
                if isinstance(arg, exp.Order):  # string_agg(x, sep ORDER BY k ...): the values sorted by k
                    order, arg = arg.expressions, arg.this
                sep = e.args.get("separator")
                if (
                    sep is not None
                    and not isinstance(sep, exp.Null)
                    and not (isinstance(sep, exp.Literal) and sep.is_string)
                ):
                    raise PlanError(f"STRING_AGG's separator must be a constant string: {e.sql(dialect='duckdb')}")
                fn, param = "string_agg", (None if isinstance(sep, exp.Null) else ("," if sep is None else sep.name))
                t = self.check(self.bind(arg, node), node)
                text_arg = (
                    arg
                    if t is not None and pa.types.is_string(t)
                    else exp.Cast(this=arg.copy(), to=exp.DataType.build("VARCHAR"))
                )
                if order:
                    text_arg, spec = _packed(order, text_arg)
                    param = (param, spec)
                arg_phys = self._agg_arg(text_arg, node, pre)
            elif isinstance(e, exp.ArrayAgg):
                # list(x [ORDER BY k ...]) / array_agg: the values (NULLs too) in input order or sorted by k
                if distinct:
                    raise PlanError(f"DISTINCT in LIST/ARRAY_AGG is not supported: {e.sql(dialect='duckdb')}")
                order = None
                if isinstance(arg, exp.Order):
                    order, arg = arg.expressions, arg.this
                packed, spec = aggregate_args_.packed_list(order or [], arg)
                fn, param = "list_agg", spec
                arg_phys = self._agg_arg(packed, node, pre)
            elif isinstance(e, exp.LogicalOr | exp.LogicalAnd):
                # bool_or / bool_and: the largest / smallest boolean (false < true); nulls ignored as in MAX/MIN
                fn = "max" if isinstance(e, exp.LogicalOr) else "min"
                if distinct:
                    raise PlanError(f"DISTINCT in BOOL_OR/BOOL_AND is not supported: {e.sql()}")
                t = self.check(self.bind(arg, node), node)
                if t is not None and not (pa.types.is_boolean(t) or pa.types.is_null(t)):
                    name = "bool_or" if isinstance(e, exp.LogicalOr) else "bool_and"
                    raise PlanError(f"{name}({arg.sql(dialect='duckdb')}) takes a BOOLEAN, not {sql_type_name(t)}")
                arg_phys = self._agg_arg(arg, node, pre)
            elif type(e) in _AGGS:
                fn = _AGGS[type(e)]
                if distinct and fn in ("sum", "average"):  # over the set of values
                    fn = f"{fn}_distinct"
                elif distinct and fn not in ("min", "max"):  # (MIN and MAX: the same answer without DISTINCT)
                    raise PlanError(f"DISTINCT is supported in COUNT, SUM, AVG, MIN and MAX only: {e.sql()}")
                arg_phys = self._agg_arg(arg, node, pre)
                if fn == "median":
                    fn, param = "percentile_cont", 0.5
            elif isinstance(e, exp.PercentileCont | exp.PercentileDisc):
                # quantile_cont(x, p) / quantile_disc(x, p) (DuckDB's names); WITHIN GROUP comes here rewritten
                fn = "percentile_cont" if isinstance(e, exp.PercentileCont) else "percentile_disc"
                if e.expression is None:
                    raise PlanError(
                        f"{e.sql()} needs a column: write quantile_cont(x, p) or ... WITHIN GROUP (ORDER BY x)"
                    )
                param = _fraction(e.expression, e.sql())
                arg_phys = self._agg_arg(arg, node, pre)
            elif type(e) in aggregate_args_.PICKS:
                fn, picked = aggregate_args_.pick_aggregate(e, distinct)
                arg_phys = self._agg_arg(picked, node, pre)
            else:
                raise PlanError(f"unsupported aggregate {e.sql()}")
            arg_expr = dict(pre).get(arg_phys)
            arg_type = self.check(arg_expr, node) if arg_expr is not None else None
            if arg_type is not None and pa.types.is_decimal(arg_type) and fn in DECIMAL_AGGREGATES:
                # DuckDB's exact DECIMAL(38, s) sum and AVG (a global one divided otherwise), its quantiles
                param, planned = (not key_names if fn == "average" else param), DECIMAL_AGGREGATES[fn]
                arg_phys, fn, param = planned(fn, out, arg_expr, arg_type, param, self.fresh, pre, calls, nan_fixes)
            elif arg_type is not None and pa.types.is_decimal(arg_type) and fn in _OF_DOUBLES:
                arg_phys = self.fresh("a")  # DuckDB's AVG, VARIANCE, STDDEV of a DECIMAL: a DOUBLE
                pre.append((arg_phys, exp.Cast(this=arg_expr.copy(), to=exp.DataType.build("DOUBLE"))))
            if arg_type is not None and pa.types.is_floating(arg_type) and fn not in _NAN_AS_VALUE:
                # the engine skips NaN as it skips NULL; DuckDB counts it, as the largest value
                if fn not in _NAN_FIXES:  # a NaN in its values is an error when it comes (not supported)
                    guard = exp.Anonymous(
                        this="__nan_guard", expressions=[arg_expr.copy(), exp.Literal.string(e.sql(dialect="duckdb"))]
                    )
                    arg_phys = self.fresh("a")
                    pre.append((arg_phys, guard))
                    calls.append(AggCall(out, fn, arg_phys, param))
                    self._label(out, e)
                    agg_map[text] = out
                    return out
                counted = exp.Case(
                    ifs=[exp.If(this=exp.Anonymous(this="isnan", expressions=[dict(pre)[arg_phys].copy()]),
                                true=exp.Literal.number(1))],
                    default=exp.Literal.number(0),
                )  # fmt: skip
                nan_phys = self.fresh("a")
                pre.append((nan_phys, counted))
                nans = self.fresh("g")
                calls.append(AggCall(nans, "sum", nan_phys))
                others = self.fresh("g") if fn in ("variance", "stddev") else None
                if others is not None:
                    calls.append(AggCall(others, "count_not_null", arg_phys))
                nan_fixes[out] = _nan_fix(fn, out, nans, others, pa.types.is_float32(arg_type))
            calls.append(AggCall(out, fn, arg_phys, param))
            self._label(out, e)
            agg_map[text] = out
            return out

        def visit_population(x: exp.Expression) -> exp.Expression:
            # population variance from the sample variance: var_samp * (n - 1) / n (0 for one value, null for none)
            n = _col(add_agg(exp.Count(this=x.this.copy())))
            samp = _col(add_agg(exp.Variance(this=x.this.copy())))
            pop = exp.Case(
                ifs=[
                    exp.If(this=exp.EQ(this=n.copy(), expression=exp.Literal.number(0)), true=exp.Null()),
                    exp.If(this=exp.EQ(this=n.copy(), expression=exp.Literal.number(1)), true=exp.Literal.number(0.0)),
                ],
                default=exp.Div(
                    this=exp.Mul(
                        this=samp, expression=exp.Paren(this=exp.Sub(this=n.copy(), expression=exp.Literal.number(1)))
                    ),
                    expression=n.copy(),
                ),
            )
            out = exp.Sqrt(this=pop) if isinstance(x, exp.StddevPop) else pop
            return exp.Cast(this=out, to=exp.DataType.build("DOUBLE"))

        def rewrite(e: exp.Expression) -> exp.Expression:
            def visit(x):
                if isinstance(x, exp.WithinGroup) and isinstance(x.this, exp.PercentileCont | exp.PercentileDisc):
                    # percentile_cont(p) WITHIN GROUP (ORDER BY x): the same aggregate as quantile_cont(x, p)
                    order = aggregate_args_.within_group_order(x)
                    if len(order) != 1 or order[0].args.get("desc"):
                        raise PlanError(f"{x.sql()}: WITHIN GROUP takes one ascending ORDER BY column")
                    return _col(add_agg(type(x.this)(this=order[0].this, expression=x.this.this)))
                if isinstance(x, exp.VariancePop | exp.StddevPop):
                    return visit_population(x)
                if isinstance(x, exp.Filter):
                    return visit(_filtered_aggregate(x))
                if isinstance(x, exp.Subquery | exp.Exists):  # a scalar subquery: its aggregates are its own
                    return self.bind(x, node)
                if isinstance(x, exp.Window):  # over the groups: its inputs are rewritten, not the call
                    w = x.copy()
                    fn = w.this
                    for key, value in list(fn.args.items()):
                        if isinstance(value, exp.Expression) and not isinstance(value, exp.Star):
                            fn.set(key, _transform(value, visit))
                    for key in ("partition_by", "order"):
                        if w.args.get(key) is not None:
                            w.set(
                                key,
                                _transform(w.args[key], visit)
                                if key == "order"
                                else [_transform(p, visit) for p in w.args[key]],
                            )
                    return w
                if _is_agg(x):
                    return _col(add_agg(with_aliases(x)))
                if isinstance(x, exp.Column) and getattr(x, "_bound", False):
                    return x
                if isinstance(x, exp.In) and x.args.get("query") is not None:
                    # value IN (subquery) over the groups: the value is rewritten, the subquery planned
                    self.outer.append(node)
                    try:
                        return self.in_subquery(x, _transform(x.this.copy(), visit), node)
                    finally:
                        self.outer.pop()
                if is_quantified(x):  # x op ANY/ALL (subquery) over the groups
                    return self.quantified(x, node, lambda v: _transform(v.copy(), visit), lambda s: self.bind(s, node))
                # only a subtree as small as a GROUP BY expression can be one (binding and printing every
                # subtree of a long chain of ORs took time quadratic in its length)
                if isinstance(x, exp.Column) or (
                    sizes.get(id(x), 1) <= key_nodes and x.find(exp.Subquery, exp.Exists) is None
                ):
                    try:
                        text = self.bind(x, node).sql()
                    except PlanError:
                        return None
                    if text in key_map:
                        return _col(key_map[text])
                    if isinstance(x, exp.Column) and text.strip('"') in self.placeholder_types:
                        raise PlanError(
                            f"a correlated column ({x.sql()}) outside the subquery's WHERE is not supported"
                        )
                if isinstance(x, exp.Column):
                    raise aggregate_args_.grouped_column_error(x)
                return None

            copied = e.copy()
            sizes = _subtree_sizes(copied)
            return _transform(copied, visit)

        key_nodes = max((len(_subtree_sizes(g)) for g in key_exprs), default=0)
        # a correlated subquery over the groups refers to group keys: its joins attach to the aggregate
        labels = partial(column_labels, node, dict(self.labels))  # (as they are now, made if an error needs them)
        pending_joins = self.correlated_joins(partial(_group_key, key_map=key_map, labels=labels))
        with pending_joins as pending:
            new_items = []
            for item in items:
                inner = item.this if isinstance(item, exp.Alias) else item
                if getattr(item, "_bound", False):
                    phys = inner.name
                    if phys not in key_names:
                        raise PlanError(f"column {item.alias} must appear in GROUP BY or be used in an aggregate")
                    new = exp.Alias(this=_col(phys), alias=exp.to_identifier(item.alias))
                else:
                    new_inner = rewrite(inner)
                    new = exp.Alias(this=new_inner, alias=exp.to_identifier(_display(item)))
                new._bound = True
                new_items.append(new)
            having_expr = rewrite(with_aliases(having.this)) if having is not None else None
            new_order = []
            names = [_display(i) for i in items]
            explicit = explicitly_named(items, node.scope)
            for o in order_exprs:
                key = o.this
                if isinstance(key, exp.Column) and not key.table:
                    if named_item(key.name, names, explicit) is not None:
                        new_order.append(o)  # an item of the SELECT: resolved over the output
                        continue
                    if any(n.lower() == key.name.lower() for n in names):
                        self.bind(key, node)  # two items of that name: the FROM's column (an error if ambiguous)
                if isinstance(key, exp.Literal):
                    new_order.append(o)
                    continue
                o2 = o.copy()
                o2.set("this", rewrite(key))
                o2._bound = True
                new_order.append(o2)
        if nan_fixes:  # each aggregate of a DOUBLE column read with its NaN count (see _nan_fix)
            fix = partial(
                _transform,
                visit=lambda x: nan_fixes[x.name].copy() if isinstance(x, exp.Column) and x.name in nan_fixes else None,
            )  # noqa: E501
            for item in new_items:
                item.set("this", fix(item.this))
            having_expr = fix(having_expr) if having_expr is not None else None
            for o in new_order:
                if getattr(o, "_bound", False):
                    o.set("this", fix(o.this))
        if not key_names and not calls:
            # HAVING without aggregates or GROUP BY: still one group of all rows (DuckDB); a count makes it one
            calls.append(AggCall(self.fresh("g"), "count", None))
        pre_node = Project(
            node,
            tuple(pre) + tuple((n, _col(n)) for n in ()),
            scope=tuple((None, n) for n, _ in pre),
            types=tuple(self.check(e, node) for _, e in pre),
        )
        in_types = dict(zip(pre_node.names, pre_node.types, strict=True))
        calls = [checked_agg(c, in_types.get(c.argument), self.labels.get(c.output, c.output)) for c in calls]
        agg_types = tuple(_agg_type(c, in_types.get(c.argument)) for c in calls)
        agg = Aggregate(
            pre_node,
            tuple(key_names),
            tuple(calls),
            scope=tuple((None, n) for n in key_names) + tuple((None, c.output) for c in calls),
            types=tuple(in_types[k] for k in key_names) + agg_types,
            trigger=triggers,
        )
        return self.attach(agg, pending), new_items, having_expr, new_order

    def _agg_arg(self, arg: exp.Expression, node: Node, pre: list) -> str:
        bound = self.bind(arg, node)
        for phys, e in pre:
            if e.sql() == bound.sql():
                return phys
        phys = self.fresh("a")
        self.check(bound, node)
        self._label(phys, arg)
        pre.append((phys, bound))
        return phys


_OF_DOUBLES = ("average", "average_distinct", "variance", "stddev")


def _has_aggregate(e: exp.Expression) -> bool:
    """Whether ``e`` aggregates (outside any scalar subquery in it, whose aggregates are its own, and
    apart from a window call itself: ``SUM(x) OVER ()`` does not group, ``RANK() OVER (ORDER BY SUM(x))`` does)."""
    if isinstance(e, exp.Window):
        return any(_has_aggregate(c) for c in e.this.iter_expressions()) or any(
            _has_aggregate(c) for key in ("partition_by", "order") for c in _as_list(e.args.get(key))
        )
    if _is_agg(e):
        return True
    if isinstance(e, exp.Subquery | exp.Query):  # its own aggregates (ALL (SELECT ...) has no Subquery)
        return False
    return any(_has_aggregate(c) for c in e.iter_expressions())


def _as_list(value) -> list:
    return [] if value is None else value if isinstance(value, list) else [value]
