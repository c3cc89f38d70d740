"""Helpers of :mod:`.select_list` for aggregate calls: FILTER (WHERE ...), ORDER BY inside an
aggregate, and a correlated subquery's reference to a group key."""

from __future__ import annotations

from functools import partial

from sqlglot import exp

from ...core.errors import PlanError
from ..dialect import Product
from .exprs import _AGGS, _col

# DuckDB's mode, arg_min/argmin/min_by, arg_max/argmax/max_by and product: the engine's aggregates of those names
PICKS = {exp.Mode: "mode", exp.ArgMin: "arg_min", exp.ArgMax: "arg_max", Product: "product"}


def pick_aggregate(e: exp.Expression, distinct: bool) -> tuple[str, exp.Expression]:
    """One of :data:`PICKS`: the engine's aggregate and its argument (arg_min's ``(by, x)`` packed as one struct)."""
    fn = PICKS[type(e)]
    text = e.sql(dialect="duckdb")
    if distinct:
        raise PlanError(f"DISTINCT in {fn.upper()} is not supported: {text}")
    if e.this is None:
        raise PlanError(f"{fn.upper()}() needs an argument: no function {fn} matches")
    if e.args.get("count") is not None:
        raise PlanError(f"{text}: {fn} with a count (a list of the n best rows) is not supported")
    if fn in ("arg_min", "arg_max"):
        return fn, exp.Anonymous(this="__pack", expressions=[e.expression.copy(), e.this.copy()])
    return fn, e.this


def _group_key(bound: exp.Expression, key_map: dict, labels) -> exp.Expression:
    """A correlated subquery's reference to the grouped query: the group key it names (``labels()``:
    the input's column labels, made only for the error: every grouped query passes it)."""
    phys = key_map.get(bound.sql())
    if phys is None:
        name = labels().get(bound.name, bound.sql()) if isinstance(bound, exp.Column) else bound.sql()
        raise PlanError(f"column {name} must appear in GROUP BY or be used in an aggregate (in a correlated subquery)")
    return _col(phys)


def grouped_column_error(column: exp.Column) -> PlanError:
    """The error for a column of a grouped query outside GROUP BY and aggregates: an unknown function
    around it is named first (``product2(i)`` is not a column problem)."""
    from ..expressions import translate

    node = column.parent
    while node is not None:
        if isinstance(node, exp.Anonymous):
            try:
                translate(exp.Anonymous(this=node.this, expressions=[exp.Null() for _ in node.expressions]))
            except Exception as exc:  # noqa: BLE001 - only "unknown function" is reported here
                if str(exc).startswith("unknown function"):
                    return PlanError(f"unknown function {node.sql(dialect='duckdb')}")
        node = node.parent
    return PlanError(f"column {column.sql()} must appear in GROUP BY or be used in an aggregate")


def _packed(order: list, value: exp.Expression) -> tuple[exp.Expression, tuple]:
    """The ORDER BY keys and the value as one struct argument (``__pack``), and each key's
    (descending, nulls first) for the aggregate's parameter."""
    spec = tuple((bool(o.args.get("desc")), bool(o.args.get("nulls_first"))) for o in order)
    return exp.Anonymous(this="__pack", expressions=[o.this.copy() for o in order] + [value.copy()]), spec


FILTERED = (
    "__filtered"  # list(x) FILTER (WHERE c): __filtered(c, x), the whole packed argument NULL where c is not true
)


def packed_list(order: list, value: exp.Expression) -> tuple[exp.Expression, tuple]:
    """list(x [ORDER BY ...])'s packed argument (:func:`_packed`), NULL on the rows a FILTER drops."""
    if isinstance(value, exp.Anonymous) and value.name == FILTERED:
        cond, value = value.expressions
        packed, spec = _packed(order, value)
        return exp.Case(ifs=[exp.If(this=cond.copy(), true=packed)]), spec
    return _packed(order, value)


def _filtered_aggregate(f: exp.Filter) -> exp.Expression:
    """``agg(x) FILTER (WHERE c)`` as ``agg(CASE WHEN c THEN x END)``: the aggregates tidal has all skip
    NULLs, so the rows where ``c`` is not true drop out; ``COUNT(*)`` counts ``CASE WHEN c THEN 1 END``."""
    agg, cond = f.this.copy(), f.expression.this
    if isinstance(agg, exp.WithinGroup):
        raise PlanError(f"FILTER (WHERE ...) on an ordered-set aggregate is not supported: {f.sql(dialect='duckdb')}")
    # FIRST/LAST keep NULLs (a filtered-out row would become a NULL they could return)
    keeps_nulls = isinstance(agg, exp.First | exp.Last | exp.AnyValue)
    if keeps_nulls or not (
        isinstance(
            agg,
            exp.Count
            | exp.LogicalOr
            | exp.LogicalAnd
            | exp.PercentileCont
            | exp.PercentileDisc
            | exp.GroupConcat
            | exp.ArrayAgg,
        )
        or type(agg) in _AGGS
        or type(agg) in PICKS
    ):
        raise PlanError(f"FILTER (WHERE ...) on {agg.sql(dialect='duckdb')} is not supported")

    def when(value: exp.Expression) -> exp.Expression:
        if not any(type(c) is exp.Cast for c in value.find_all(exp.Cast)):
            return exp.Case(ifs=[exp.If(this=cond.copy(), true=value)])
        # DuckDB casts the argument on every row, the ones FILTER drops too (its error is an error): a first
        # branch that is never taken evaluates it on every row (CASE evaluates a THEN only where it is taken)
        every_row = exp.Is(this=exp.Paren(this=exp.Is(this=value.copy(), expression=exp.Null())), expression=exp.Null())
        return exp.Case(ifs=[exp.If(this=every_row, true=exp.Null()), exp.If(this=cond.copy(), true=value)])

    arg = agg.this
    if isinstance(agg, exp.ArrayAgg) and not isinstance(
        arg, exp.Distinct
    ):  # list(x) keeps NULLs: the rows filtered out are marked, then dropped
        value = arg.this if isinstance(arg, exp.Order) else arg
        marked = exp.Anonymous(this=FILTERED, expressions=[cond.copy(), value.copy()])
        if isinstance(arg, exp.Order):
            arg.set("this", marked)
        else:
            agg.set("this", marked)
    elif isinstance(arg, exp.Order):  # string_agg(x ORDER BY k) FILTER (...): the value is filtered
        arg.set("this", when(arg.this.copy()))
    elif isinstance(agg, exp.Count) and (arg is None or isinstance(arg, exp.Star)):
        agg.set("this", when(exp.Literal.number(1)))
    elif isinstance(arg, exp.Distinct):
        arg.set("expressions", [when(arg.expressions[0].copy())])
    else:
        agg.set("this", when(arg.copy()))
    return agg


# aggregates whose engine state keeps a NaN as a value (Python multisets of packed values, or NaN-aware)
_NAN_AS_VALUE = ("sum_distinct", "average_distinct", "list_agg", "string_agg", *PICKS.values())
_NAN_FIXES = ("count_not_null", "count_distinct", "sum", "average", "max", "min", "variance", "stddev")
_NAN = exp.Cast(this=exp.Literal.string("nan"), to=exp.DataType.build("DOUBLE"))


def _nan_fix(fn: str, out: str, nans: str, others: str | None = None, float32: bool = False) -> exp.Expression:
    """The value of aggregate ``out`` as DuckDB computes it, from the engine's value (which skips NaN
    like NULL) and ``nans``, the group's count of NaN: NaN is a value, larger than every number, so
    COUNT counts it, SUM/AVG/MAX/variance are NaN with one, MIN is NaN when there is nothing else; ``others``
    (the count of the other values) keeps a sample variance of one value NULL. ``float32``: MIN/MAX of a FLOAT
    stay FLOAT (DuckDB's type), so their NaN is a FLOAT too."""
    value, n = _col(out), _col(nans)
    some = exp.GT(this=n.copy(), expression=exp.Literal.number(0))
    if fn == "count_not_null":
        return exp.Add(this=value, expression=exp.Coalesce(this=n, expressions=[exp.Literal.number(0)]))
    if fn == "count_distinct":
        return exp.Add(
            this=value,
            expression=exp.Case(ifs=[exp.If(this=some, true=exp.Literal.number(1))], default=exp.Literal.number(0)),
        )
    if fn == "min":
        some = exp.And(this=exp.Is(this=value.copy(), expression=exp.Null()), expression=some)
    if others is not None:  # a sample variance of fewer than two values (NaN counted) stays NULL
        total = exp.Add(this=n.copy(), expression=_col(others))
        some = exp.And(this=some, expression=exp.GTE(this=total, expression=exp.Literal.number(2)))
    nan = _NAN.copy()
    if float32 and fn in ("min", "max"):
        nan.set("to", exp.DataType.build("FLOAT"))
    return exp.Case(ifs=[exp.If(this=some, true=nan)], default=value)


def check_arity(e: exp.Expression) -> None:
    """Refuse an aggregate call with arguments tidal would otherwise drop: ``COUNT(a, b)``,
    ``FIRST(x, y)``, ``STRING_AGG(x, sep, extra)`` (DuckDB's errors), ``MIN(x, n)``/``MAX(x, n)`` (DuckDB's
    lists of the n smallest/largest), ``mode(x ORDER BY k)`` (the order breaks mode's ties)."""
    text = partial(e.sql, dialect="duckdb")  # printed only for an error (every plan checks its aggregates)
    if isinstance(e, exp.Count) and e.expressions:
        raise PlanError(f"{text()}: COUNT takes one argument (no function count matches {len(e.expressions) + 1})")
    if isinstance(e, exp.First | exp.Last) and e.args.get("expression") is not None:
        raise PlanError(f"{text()}: {e.sql_name()} takes one argument")
    if isinstance(e, exp.GroupConcat) and e.args.get("on_overflow") is not None:
        raise PlanError(f"{text()}: STRING_AGG takes at most two arguments")
    if isinstance(e, exp.Min | exp.Max) and e.args.get("count") is not None:
        raise PlanError(f"{text()}: {e.sql_name()} with a count (a list of the n best values) is not supported")
    if isinstance(e, exp.Mode) and isinstance(e.this, exp.Order):
        raise PlanError(f"ORDER BY inside mode is not supported: {text()}")


def within_group_order(x: exp.WithinGroup) -> list:
    """``percentile_cont(p) WITHIN GROUP (ORDER BY x)``'s ORDER BY, the percentile checked to be one argument."""
    if x.this.args.get("expression") is not None:
        raise PlanError(f"{x.sql(dialect='duckdb')}: {x.this.sql_name()} WITHIN GROUP takes one fraction")
    return x.expression.expressions
