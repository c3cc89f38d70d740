"""``SELECT DISTINCT ON (keys) ... ORDER BY ...`` as a query tidal already plans.

DuckDB keeps, of each distinct value of ``keys``, the first row in ``ORDER BY`` order (any row
without ORDER BY), then orders and limits the kept rows. That is ``ROW_NUMBER() OVER (PARTITION BY
keys ORDER BY order) = 1``, so the statement is rewritten into::

    SELECT * FROM (SELECT items, key0 AS __don0, ..., order0 AS __dord0, ...,
                          ROW_NUMBER() OVER (PARTITION BY key0, ... ORDER BY order0, ...) AS __drn
                   FROM ... WHERE ... GROUP BY ... HAVING ...)
    WHERE __drn = 1 ORDER BY __dord0, ... LIMIT ... OFFSET ...

The helper columns start with ``__``, which ``*`` never expands to. Keys and ORDER BY terms name a
select alias (which wins over an input column of that name, as in DuckDB's ORDER BY), a position
(``ORDER BY 2``, ``DISTINCT ON (1)``) or any expression over the input.
"""

from __future__ import annotations

from sqlglot import exp

from ...core.errors import PlanError
from .star import no_effect_literal


def _target(term: exp.Expression, items: list[exp.Expression], positional: bool) -> exp.Expression:
    """The expression ``term`` stands for: a select item by alias (or position), else itself."""
    if positional and isinstance(term, exp.Literal) and not term.is_string:
        k = int(term.name)
        if not 1 <= k <= len(items):
            raise PlanError(f"ORDER BY / DISTINCT ON position {k} is not in the select list (1 to {len(items)})")
        item = items[k - 1]
        if isinstance(item, exp.Star) or (isinstance(item, exp.Column) and isinstance(item.this, exp.Star)):
            raise PlanError("DISTINCT ON with ORDER BY a position of * is not supported: name the column")
        return (item.this if isinstance(item, exp.Alias) else item).copy()
    if isinstance(term, exp.Column) and not term.table:
        for item in items:
            if isinstance(item, exp.Alias) and item.alias.lower() == term.name.lower():
                return item.this.copy()
    return term.copy()


def rewrite_distinct_on(sel: exp.Select) -> exp.Select:
    """The DISTINCT ON select ``sel`` as plain SELECTs over a ROW_NUMBER window (see the module)."""
    distinct = sel.args["distinct"]
    on = distinct.args["on"]
    keys = list(on.expressions) if isinstance(on, exp.Tuple) else [on]
    items = list(sel.expressions)
    order = sel.args.get("order")
    ordered = list(order.expressions) if order is not None else []
    if sel.args.get("trigger") is not None:
        raise PlanError("DISTINCT ON with a TRIGGER is not supported")
    inner = sel.copy()
    for arg in ("distinct", "order", "limit", "offset"):
        inner.set(arg, None)
    extra = []
    part = []
    for i, key in enumerate(keys):
        if no_effect_literal(key):  # DuckDB's error: the key would be one constant
            raise PlanError(f"DISTINCT ON a non-integer literal ({key.sql()}) has no effect: not supported")
        target = _target(key, items, positional=True)  # DISTINCT ON (1): the first select item, as DuckDB
        extra.append(exp.alias_(target, f"__don{i}"))
        part.append(target.copy())
    window_order = []
    outer_order = []
    for j, o in enumerate(ordered):
        if no_effect_literal(o.this):  # as a plain SELECT's ORDER BY: DuckDB's error
            raise PlanError(f"ORDER BY a non-integer literal ({o.this.sql()}) is not supported: it has no effect")
        name = f"__dord{j}"
        target = _target(o.this, items, positional=True)
        extra.append(exp.alias_(target, name))
        copy = o.copy()
        copy.set("this", target.copy())
        window_order.append(copy)
        copy = o.copy()
        copy.set("this", exp.column(name))
        outer_order.append(copy)
    over = exp.Window(
        this=exp.RowNumber(),
        partition_by=part,
        order=exp.Order(expressions=window_order) if window_order else None,
    )
    inner.set("expressions", [*items, *extra, exp.alias_(over, "__drn")])
    outer = exp.select(exp.Star()).from_(exp.Subquery(this=inner)).where("__drn = 1")
    if outer_order:
        outer.set("order", exp.Order(expressions=outer_order))
    for arg in ("limit", "offset"):
        if sel.args.get(arg) is not None:
            outer.set(arg, sel.args[arg].copy())
    return outer
