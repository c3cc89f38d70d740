"""SQL constructs tidal does not support, refused up front with an error naming the construct.

Without this check some of them would fail later with a misleading message ("column x must appear
in GROUP BY" for ``GROUP BY ROLLUP``) or, worse, be silently ignored (``QUALIFY``, ``TABLESAMPLE``)
and give a wrong answer.
"""

from __future__ import annotations

from sqlglot import exp

from ...core.errors import PlanError

# clauses of a SELECT (or UNION) tidal does not evaluate: sqlglot's argument name -> the SQL
_CLAUSES = {
    "qualify": "QUALIFY",
    "windows": "a named WINDOW clause",
    "sample": "TABLESAMPLE / USING SAMPLE",
    "pivots": "PIVOT / UNPIVOT",
    "laterals": "LATERAL VIEW",
    "connect": "CONNECT BY",
    "prewhere": "PREWHERE",
    "sort": "SORT BY",
    "cluster": "CLUSTER BY",
    "distribute": "DISTRIBUTE BY",
    "into": "SELECT ... INTO",
    "locks": "FOR UPDATE / FOR SHARE",
    "settings": "SETTINGS",
}
# where a subquery may stand: as a FROM item, a UNION side, a CTE, IN (subquery), EXISTS (subquery)
_SUBQUERY_PARENTS = (exp.From, exp.Join, exp.Union, exp.CTE, exp.Subquery, exp.In, exp.Exists, exp.Lateral)


def _short(e: exp.Expression) -> str:
    text = e.sql(dialect="duckdb")
    return text if len(text) <= 120 else text[:117] + "..."


def refuse_unsupported(tree: exp.Expression) -> None:
    """Raise a :class:`PlanError` naming the first unsupported construct in ``tree``, if any."""
    for node in tree.walk():
        if isinstance(node, exp.With) and node.args.get("recursive"):
            raise PlanError("WITH RECURSIVE is not supported (recursive CTEs)")
        if isinstance(node, exp.Group):
            if node.args.get("all"):
                raise PlanError("GROUP BY ALL is not supported: list the grouping columns")
            for key, what in (("rollup", "ROLLUP"), ("cube", "CUBE"), ("grouping_sets", "GROUPING SETS")):
                if node.args.get(key):
                    raise PlanError(f"GROUP BY {what} is not supported: {_short(node)}")
            for e in node.expressions:
                for cls, what in ((exp.Rollup, "ROLLUP"), (exp.Cube, "CUBE"), (exp.GroupingSets, "GROUPING SETS")):
                    if isinstance(e, cls):
                        raise PlanError(f"GROUP BY {what} is not supported: {_short(node)}")
        if isinstance(node, exp.Window):
            raise PlanError(f"window functions (... OVER (...)) are not supported: {_short(node)}")
        if isinstance(node, exp.Select | exp.Union | exp.Table):
            for key, what in _CLAUSES.items():
                if node.args.get(key):
                    raise PlanError(f"{what} is not supported: {_short(node.args[key] if key != 'pivots' else node)}")
        if isinstance(node, exp.Subquery | exp.Select | exp.Union) and node is not tree:
            parent = node.parent
            if not isinstance(parent, _SUBQUERY_PARENTS):
                raise PlanError(f"scalar subqueries are not supported: {_short(node)}")
        if isinstance(node, exp.Exists):
            raise PlanError(f"EXISTS (subquery) is not supported: {_short(node)}; use a SEMI or ANTI JOIN")
