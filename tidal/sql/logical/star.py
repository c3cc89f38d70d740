"""``*`` in a select list: every visible column of the FROM item (``t.*``: of one table), less the
``EXCLUDE (...)`` ones, with ``REPLACE (expr AS name)`` computing a column in its place (DuckDB's
star modifiers). Names starting with ``__`` (tidal's helper columns) are never expanded."""

from __future__ import annotations

from sqlglot import exp

from ...core.errors import PlanError
from .exprs import _col
from .nodes import Node


def _star_modifiers(star: exp.Star) -> tuple[set, dict]:
    """``* EXCLUDE (a, b)`` and ``* REPLACE (expr AS a)``: the excluded names and the replacements."""
    for arg in ("rename",):
        if star.args.get(arg):
            raise PlanError(f"* {arg.upper()} (...) is not supported: alias the columns in the select list")
    excluded = {c.name.lower() for c in star.args.get("except_") or star.args.get("except") or ()}
    replaced = {}
    for r in star.args.get("replace") or ():
        if not isinstance(r, exp.Alias):
            raise PlanError(f"* REPLACE needs expr AS column, got {r.sql(dialect='duckdb')}")
        replaced[r.alias.lower()] = r.this
    return excluded, replaced


def expand_star(items, node: Node) -> list[exp.Expression]:
    """The select list with each ``*`` / ``t.*`` (with EXCLUDE / REPLACE) spelled out as columns."""
    out = []
    for item in items:
        star = item if isinstance(item, exp.Star) else None
        if isinstance(item, exp.Column) and isinstance(item.this, exp.Star):
            star = item
        if star is None:
            out.append(item)
            continue
        qual = star.table if isinstance(star, exp.Column) else None
        inner = star.this if isinstance(star, exp.Column) else star
        excluded, replaced = _star_modifiers(inner)
        seen = set()
        for phys, (q, n) in zip(node.names, node.scope, strict=True):
            if n.startswith("__") or not n or phys.startswith("__using_"):
                continue
            if qual and (q or "").lower() != qual.lower():
                continue
            if n.lower() in excluded:
                seen.add(n.lower())
                continue
            if n.lower() in replaced:
                seen.add(n.lower())
                out.append(exp.Alias(this=replaced[n.lower()].copy(), alias=exp.to_identifier(n)))
                continue
            col = exp.Alias(this=_col(phys), alias=exp.to_identifier(n))
            col._bound = True
            out.append(col)
        missing = [n for n in (*excluded, *replaced) if n not in seen]
        if missing:
            raise PlanError(f"column {missing[0]} in the EXCLUDE/REPLACE list of * is not among its columns")
    return out
