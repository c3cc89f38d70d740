"""Quantified comparisons ``x op ANY (q)`` / ``x op ALL (q)`` and a correlated ``x IN (q)`` used as a
value, rewritten into subqueries that aggregate (their decorrelation is :mod:`.correlated`'s).

SQL's three-valued logic over the set S of q's values: ``x op ANY (S)`` is TRUE when some ``x op y``
is TRUE, else NULL when some is NULL (a NULL y, or x NULL and S not empty), else FALSE (so FALSE
over an empty S, even for a NULL x). With n = COUNT(*) and nn = COUNT(y) of S:

- ``>``/``>=`` ANY compare with MIN(y), ``<``/``<=`` ANY with MAX(y) (a TRUE comparison with the
  extreme is a TRUE one with some y); ``<>`` ANY is ``x <> MIN(y) OR x <> MAX(y)``;
- ``= ANY`` is ``IN``: uncorrelated, the set is materialised before the query; correlated, the
  number of rows with ``y = x`` is a subquery whose WHERE gains that equality (x is the outer
  query's value, so it becomes a correlated key like any other);
- the answer is ``CASE WHEN n = 0 THEN FALSE WHEN <comparison> THEN TRUE WHEN x IS NULL OR nn < n
  THEN NULL ELSE FALSE END``;
- ``x op ALL (S)`` is ``NOT (x op' ANY (S))`` with op' the negated comparison (TRUE over an empty S).

A correlated q must be one plain SELECT of one value (no GROUP BY, HAVING, LIMIT, window); row
values (``(a, b) = ANY (q)``) and ANY/ALL over a list are refused, naming the construct.
"""

from __future__ import annotations

from sqlglot import exp

from ...core.errors import PlanError
from .exprs import _and, _is_agg

_COMPARISONS = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE)
_NEGATED = {exp.EQ: exp.NEQ, exp.NEQ: exp.EQ, exp.GT: exp.LTE, exp.GTE: exp.LT, exp.LT: exp.GTE, exp.LTE: exp.GT}
_EXTREME = {exp.GT: "min", exp.GTE: "min", exp.LT: "max", exp.LTE: "max"}


def is_quantified(e: exp.Expression) -> bool:
    """Whether ``e`` is ``x op ANY/ALL/SOME (...)``."""
    return isinstance(e, _COMPARISONS) and isinstance(e.expression, exp.Any | exp.All)


def _null_bool() -> exp.Expression:
    return exp.Cast(this=exp.Null(), to=exp.DataType.build("BOOLEAN"))


def _query_of(e: exp.Expression) -> exp.Expression | None:
    while isinstance(e, exp.Subquery | exp.Paren) and not isinstance(e.this, exp.Array):
        e = e.this
    return e if isinstance(e, exp.Query) else None


def _plain(q: exp.Expression) -> bool:
    """q is one SELECT of one non-aggregate value, whose rows its aggregates may replace."""
    if not isinstance(q, exp.Select) or len(q.expressions) != 1:
        return False
    if any(q.args.get(k) for k in ("group", "having", "limit", "offset", "qualify", "windows", "with_", "with")):
        return False
    item = q.expressions[0]
    value = item.this if isinstance(item, exp.Alias) else item
    if isinstance(value, exp.Star) or (isinstance(value, exp.Column) and isinstance(value.this, exp.Star)):
        return False
    return not any(_is_agg(n) for n in value.walk()) and value.find(exp.Window) is None


class QuantifiedSubqueries:
    """Part of :class:`~.builder.Builder`: ANY/ALL comparisons and correlated IN as values."""

    def quantified(self, e: exp.Expression, node, bind_value, bind_sub) -> exp.Expression:
        """``e`` (``x op ANY/ALL (q)``) bound: ``bind_value`` binds x (over the query), ``bind_sub``
        a scalar subquery; ``node`` is the input the subquery's outer references name."""
        text = e.sql(dialect="duckdb")
        quant = e.expression
        q = _query_of(quant.this)
        if q is None:
            raise PlanError(f"ANY/ALL over a list (not a subquery) is not supported: {text}")
        if isinstance(e.this, exp.Tuple):
            raise PlanError(f"a row value compared with ANY/ALL (subquery) is not supported: {text}")
        op = type(e)
        if isinstance(quant, exp.All):
            return exp.Not(this=exp.Paren(this=self._any(_NEGATED[op], e.this, q, node, bind_value, bind_sub, text)))
        return self._any(op, e.this, q, node, bind_value, bind_sub, text)

    def _any(self, op, x: exp.Expression, q: exp.Expression, node, bind_value, bind_sub, text: str):
        if (q.args.get("limit") or q.args.get("offset")) and not q.args.get("order"):
            # which rows LIMIT keeps is not determined without ORDER BY (DuckDB takes its scan's first)
            raise PlanError(f"ANY/ALL/IN over a subquery with LIMIT/OFFSET but no ORDER BY is not supported: {text}")
        width, correlated, name = self._subquery_shape(q, node)
        if width != 1:
            raise PlanError(f"ANY/ALL (subquery) must return one column: {text}")
        if isinstance(q, exp.Select) and len(q.expressions) == 1 and isinstance(q.expressions[0], exp.Star):
            q = q.copy()  # SELECT * of one column: that column, by name
            q.set("expressions", [exp.column(exp.to_identifier(name, quoted=True))])
        bx = bind_value(x)
        if _one_row(q):  # an aggregate without GROUP BY: one value v, and x op ANY ({v}) is x op v
            return op(this=bx, expression=bind_sub(exp.Subquery(this=q.copy())))
        if op is exp.EQ and not correlated:
            return self.in_subquery(exp.In(this=x.copy(), query=exp.Subquery(this=q.copy())), bx)
        plain = _plain(q)
        if correlated and not plain:
            raise PlanError(
                f"ANY/ALL/IN over a correlated subquery with GROUP BY, aggregates, LIMIT or set operations is "
                f"not supported: {text}"
            )

        def over(*calls: exp.Expression, where: exp.Expression | None = None) -> exp.Expression:
            if plain:
                s = q.copy()
                item = s.expressions[0]
                y = item.this if isinstance(item, exp.Alias) else item
                s.set("expressions", [c.transform(lambda n: y.copy() if _is_y(n) else n) for c in calls])
                s.set("order", None)
                if where is not None:
                    old = s.args.get("where")
                    cond = where.transform(lambda n: y.copy() if _is_y(n) else n)
                    s.set("where", exp.Where(this=_and([old.this, cond]) if old is not None else cond))
            else:
                y = exp.column("__y", table="__q")
                outer = exp.Subquery(
                    this=q.copy(),
                    alias=exp.TableAlias(this=exp.to_identifier("__q"), columns=[exp.to_identifier("__y")]),
                )
                s = exp.select(*[c.transform(lambda n: y.copy() if _is_y(n) else n) for c in calls]).from_(outer)
            return bind_sub(exp.Subquery(this=s))

        y = exp.column("__any_y")
        n = over(exp.Count(this=exp.Star()))
        nn = over(exp.Count(this=y))
        if op is exp.EQ:  # correlated: the count of rows with y = x
            marker = self.fresh("anyx")
            self.injected[marker] = (node, bx, x.sql(dialect="duckdb"), None)
            try:
                hits = over(exp.Count(this=exp.Star()), where=exp.EQ(this=y, expression=exp.column(marker)))
            finally:
                del self.injected[marker]
            hit = exp.GT(this=hits, expression=exp.Literal.number(0))
        elif op is exp.NEQ:
            lo, hi = over(exp.Min(this=y)), over(exp.Max(this=y))
            hit = exp.Or(this=exp.NEQ(this=bx.copy(), expression=lo), expression=exp.NEQ(this=bx.copy(), expression=hi))
        else:
            extreme = over(exp.Min(this=y) if _EXTREME[op] == "min" else exp.Max(this=y))
            hit = op(this=bx.copy(), expression=extreme)
        unknown = exp.Or(
            this=exp.Is(this=bx.copy(), expression=exp.Null()),
            expression=exp.LT(this=nn, expression=n.copy()),
        )
        return exp.Case(
            ifs=[
                exp.If(this=exp.EQ(this=n, expression=exp.Literal.number(0)), true=exp.false()),
                exp.If(this=hit, true=exp.true()),
                exp.If(this=unknown, true=_null_bool()),
            ],
            default=exp.false(),
        )

    def _subquery_shape(self, q: exp.Expression, node) -> tuple[int, bool, str]:
        """q's number of columns, whether it refers to the outer query and its first column's name
        (planned, then forgotten)."""
        count = len(self.subplans)
        self.outer.append(node)
        try:
            sub, refs = self.plan_subquery(q)
        finally:
            self.outer.pop()
            self._forget_subplans(count)
        return len(sub.root.names) - sub.hidden, bool(refs), (sub.output_names or ("",))[0]

    def correlated_in(self, e: exp.In, value: exp.Expression, node, bind_sub) -> exp.Expression:
        """A correlated ``x IN (q)`` outside WHERE's conjuncts: ``x = ANY (q)``, ``value`` x bound."""
        query = e.args["query"]
        q = query.this if isinstance(query, exp.Subquery) else query
        return self._any(exp.EQ, e.this, q, node, lambda _x: value, bind_sub, e.sql(dialect="duckdb"))


def _one_row(q: exp.Expression) -> bool:
    """q is one SELECT of one aggregate value without GROUP BY, HAVING, LIMIT or OFFSET: exactly one row."""
    if not isinstance(q, exp.Select) or len(q.expressions) != 1 or isinstance(q.expressions[0], exp.Star):
        return False
    if any(q.args.get(k) for k in ("group", "having", "limit", "offset", "qualify")):
        return False
    value = q.expressions[0]
    return any(_is_agg(n) for n in value.walk()) and value.find(exp.Window, exp.Subquery) is None


def _is_y(n: exp.Expression) -> bool:
    return isinstance(n, exp.Column) and n.name == "__any_y" and not n.table
