"""Helpers of :mod:`.select_list` for aggregate calls: FILTER (WHERE ...), ORDER BY inside an
aggregate, and a correlated subquery's reference to a group key."""

from __future__ import annotations

from sqlglot import exp

from ...core.errors import PlanError
from .exprs import _AGGS, _col


def _group_key(bound: exp.Expression, key_map: dict, labels: dict) -> exp.Expression:
    """A correlated subquery's reference to the grouped query: the group key it names."""
    phys = key_map.get(bound.sql())
    if phys is None:
        name = labels.get(bound.name, bound.sql()) if isinstance(bound, exp.Column) else bound.sql()
        raise PlanError(f"column {name} must appear in GROUP BY or be used in an aggregate (in a correlated subquery)")
    return _col(phys)


def _packed(order: list, value: exp.Expression) -> tuple[exp.Expression, tuple]:
    """The ORDER BY keys and the value as one struct argument (``__pack``), and each key's
    (descending, nulls first) for the aggregate's parameter."""
    spec = tuple((bool(o.args.get("desc")), bool(o.args.get("nulls_first"))) for o in order)
    return exp.Anonymous(this="__pack", expressions=[o.this.copy() for o in order] + [value.copy()]), spec


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
    ):
        raise PlanError(f"FILTER (WHERE ...) on {agg.sql(dialect='duckdb')} is not supported")

    def when(value: exp.Expression) -> exp.Expression:
        return exp.Case(ifs=[exp.If(this=cond.copy(), true=value)])

    arg = agg.this
    if isinstance(arg, exp.Order):  # string_agg(x ORDER BY k) FILTER (...): the value is filtered
        arg.set("this", when(arg.this.copy()))
    elif isinstance(agg, exp.Count) and (arg is None or isinstance(arg, exp.Star)):
        agg.set("this", when(exp.Literal.number(1)))
    elif isinstance(arg, exp.Distinct):
        arg.set("expressions", [when(arg.expressions[0].copy())])
    else:
        agg.set("this", when(arg.copy()))
    return agg


# aggregates whose engine state keeps a NaN as a value (Python multisets of packed values, or NaN-aware)
_NAN_AS_VALUE = ("sum_distinct", "average_distinct", "list_agg", "string_agg")
_NAN_FIXES = ("count_not_null", "count_distinct", "sum", "average", "max", "min", "variance", "stddev")
_NAN = exp.Cast(this=exp.Literal.string("nan"), to=exp.DataType.build("DOUBLE"))


def _nan_fix(fn: str, out: str, nans: str, others: str | None = None) -> exp.Expression:
    """The value of aggregate ``out`` as DuckDB computes it, from the engine's value (which skips NaN
    like NULL) and ``nans``, the group's count of NaN: NaN is a value, larger than every number, so
    COUNT counts it, SUM/AVG/MAX/variance are NaN with one, MIN is NaN when there is nothing else; ``others``
    (the count of the other values) keeps a sample variance of one value NULL."""
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
    return exp.Case(ifs=[exp.If(this=some, true=_NAN.copy())], default=value)
