"""ORDER BY a bare name: which SELECT item it names (DuckDB's rule)."""

from __future__ import annotations

from collections.abc import Sequence

from sqlglot import exp


def named_item(name: str, names: Sequence[str], explicit: Sequence[bool]) -> int | None:
    """The position of the SELECT item that ``ORDER BY name`` (an unqualified column) names, or None when it
    names none and binds as an expression over the FROM clause instead.

    DuckDB's rule: the last item with that explicit alias; else the one item that selects a column of that name
    without an alias. Two or more such items name none (``SELECT a.k, b.k ... ORDER BY k``): ``k`` then binds
    over the FROM clause, an ambiguity error where two tables hold it and the same column where one does."""
    lowered = name.lower()
    named = [i for i, n in enumerate(names) if n.lower() == lowered]
    aliased = [i for i in named if explicit[i]]
    if aliased:
        return aliased[-1]
    return named[0] if len(named) == 1 else None


def explicitly_named(items: Sequence[exp.Expression], scope: Sequence[tuple[str | None, str]]) -> list[bool]:
    """Which SELECT items carry a name of their own: an explicit AS (a * expansion's is not one), or, as DuckDB
    takes it, a column written in another case than its input's (``SELECT t.ID`` of a column ``id``)."""

    def own_name(item: exp.Expression) -> bool:
        if isinstance(item, exp.Alias):
            return not getattr(item, "_bound", False)
        if not isinstance(item, exp.Column) or isinstance(item.this, exp.Star):
            return False
        table = item.table.lower()
        spelled = [n for q, n in scope if n.lower() == item.name.lower() and (not table or (q or "").lower() == table)]
        return bool(spelled) and item.name not in spelled

    return [own_name(i) for i in items]
