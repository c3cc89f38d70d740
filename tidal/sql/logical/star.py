"""``*`` in a select list: every visible column of the FROM item (``t.*``: of one table), less the
``EXCLUDE (...)`` ones, with ``REPLACE (expr AS name)`` computing a column in its place (DuckDB's
star modifiers). Names starting with ``__`` (tidal's helper columns) are never expanded."""

from __future__ import annotations

from sqlglot import exp

from ...core.errors import PlanError
from .exprs import _col, _display, _transform
from .nodes import Node


def _star_modifiers(star: exp.Star) -> tuple[list, dict]:
    """``* EXCLUDE (a, t.b)`` and ``* REPLACE (expr AS a)``: the excluded (qualifier or None, name) pairs and the
    replacements by name; a name twice, or in both lists, is DuckDB's error."""
    for arg in ("rename", "ilike"):
        if star.args.get(arg):
            raise PlanError(f"* {arg.upper()} (...) is not supported: name the columns in the select list")
    excluded = [
        ((c.table.lower() or None) if isinstance(c, exp.Column) else None, c.name.lower())
        for c in star.args.get("except_") or star.args.get("except") or ()
    ]
    for k, (qual, name) in enumerate(excluded):
        if any(n == name and (q is None or qual is None or q == qual) for q, n in excluded[:k]):
            raise PlanError(f"duplicate entry {name!r} in the EXCLUDE list of *")
    replaced = {}
    for r in star.args.get("replace") or ():
        if not isinstance(r, exp.Alias):
            raise PlanError(f"* REPLACE needs expr AS column, got {r.sql(dialect='duckdb')}")
        if r.alias.lower() in replaced:
            raise PlanError(f"duplicate entry {r.alias!r} in the REPLACE list of *")
        if any(n == r.alias.lower() for _, n in excluded):
            raise PlanError(f"column {r.alias!r} cannot occur in both the EXCLUDE and the REPLACE list of *")
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
        if qual and not any((q or "").lower() == qual.lower() for q, _ in node.scope):
            if any(n.lower() == qual.lower() for _, n in node.scope):
                raise PlanError(f"{qual}.* of a STRUCT column (its fields as columns) is not supported")
            raise PlanError(f"{qual}.*: no table {qual} in the FROM clause")
        seen = set()
        for phys, (q, n) in zip(node.names, node.scope, strict=True):
            if n.startswith("__") or not n or phys.startswith("__using_"):
                continue
            if qual and (q or "").lower() != qual.lower():
                continue
            hits = [(eq, en) for eq, en in excluded if en == n.lower() and eq in (None, (q or "").lower())]
            if hits:
                seen.update(hits)
                continue
            if n.lower() in replaced:
                seen.add(n.lower())
                out.append(exp.Alias(this=replaced[n.lower()].copy(), alias=exp.to_identifier(n)))
                continue
            col = exp.Alias(this=_col(phys), alias=exp.to_identifier(n))
            col._bound = True
            out.append(col)
        missing = [
            ".".join(filter(None, e)) if isinstance(e, tuple) else e for e in (*excluded, *replaced) if e not in seen
        ]
        if missing:
            raise PlanError(f"column {missing[0]} in the EXCLUDE/REPLACE list of * is not among its columns")
    if items and not out:
        raise PlanError("the SELECT list is empty after resolving * (EXCLUDE took every column)")
    return out


def lateral_aliases(items: list, node: Node, plain) -> list[exp.Expression]:
    """DuckDB's lateral column aliases: an item may name an earlier item's alias that is not an input
    column (``SELECT 1 AS a, a * 2``); the name stands for that item's expression (``plain`` ones only:
    no aggregate, no window). The item keeps its own name."""
    in_scope = {n.lower() for _, n in node.scope}
    aliases: dict[str, exp.Expression] = {}
    out = []

    def visit(x):
        if isinstance(x, exp.Column) and not x.table and x.name.lower() in aliases:
            return aliases[x.name.lower()].copy()
        return x if isinstance(x, exp.Subquery | exp.Select) else None

    for item in items:
        if aliases and not getattr(item, "_bound", False):
            inner = item.this if isinstance(item, exp.Alias) else item
            new = _transform(inner.copy(), visit)
            if new.sql() != inner.sql():
                item = exp.Alias(this=new, alias=exp.to_identifier(_display(item)))
        if isinstance(item, exp.Alias) and item.alias.lower() not in in_scope and plain(item):
            aliases[item.alias.lower()] = item.this
        out.append(item)
    return out


def set_op_position(tree: exp.Expression, key: exp.Expression) -> int | None:
    """DuckDB's ORDER BY of a set operation that names no output column: a side's alias (``l`` in
    ``SELECT a AS k FROM t UNION SELECT a AS l FROM t ORDER BY l``) or a side's selected expression
    (``ORDER BY a - 10``) orders by that column; the sides are searched left to right (None: none). Sides
    naming it at different positions make it ambiguous: DuckDB's binder error, refused here."""
    text = key.sql(dialect="duckdb").lower()
    sides = [tree]
    found: list[int] = []
    while sides:
        side = sides.pop(0)
        if isinstance(side, exp.SetOperation):
            sides[:0] = [side.this, side.expression]
        elif isinstance(side, exp.Subquery):
            sides.insert(0, side.this)
        elif isinstance(side, exp.Select) and not any(i.find(exp.Star) for i in side.expressions):
            for pos, item in enumerate(side.expressions):
                named = isinstance(item, exp.Alias) and isinstance(key, exp.Column) and not key.table
                if (named and item.alias.lower() == key.name.lower()) or (
                    (item.this if isinstance(item, exp.Alias) else item).sql(dialect="duckdb").lower() == text
                ):
                    found.append(pos)
                    break
    if len(set(found)) > 1:
        raise PlanError(
            f"ORDER BY {key.sql()} of a set operation is ambiguous (its sides hold it at different positions)"
        )
    return found[0] if found else None


def no_effect_literal(key: exp.Expression) -> bool:
    """Whether an ORDER BY / DISTINCT ON key is a constant that orders nothing ('a', NULL, TRUE): DuckDB errs."""
    return isinstance(key, exp.Null | exp.Boolean) or (isinstance(key, exp.Literal) and key.is_string)
