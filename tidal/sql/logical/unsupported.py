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
    "when": "AT (VERSION => ...) / AT (TIMESTAMP => ...) (time travel)",
    "version": "FOR VERSION (time travel)",
    "system_time": "FOR SYSTEM_TIME (time travel)",
}
# where a subquery may stand: as a FROM item, a UNION side, a CTE, IN (subquery), EXISTS (subquery)
_SUBQUERY_PARENTS = (
    exp.From, exp.Join, exp.SetOperation, exp.CTE, exp.Subquery, exp.In, exp.Exists, exp.Lateral, exp.Describe,
    exp.Any, exp.All,
)  # fmt: skip


def _short(e: exp.Expression) -> str:
    text = e.sql(dialect="duckdb")
    return text if len(text) <= 120 else text[:117] + "..."


def refuse_unsupported(tree: exp.Expression) -> None:
    """Raise a :class:`PlanError` naming the first unsupported construct in ``tree``, if any."""
    for node in tree.walk():
        if isinstance(node, exp.With) and node.args.get("recursive"):
            raise PlanError("WITH RECURSIVE is not supported (recursive CTEs)")
        if isinstance(node, exp.Group):
            for key, what in (("rollup", "ROLLUP"), ("cube", "CUBE"), ("grouping_sets", "GROUPING SETS")):
                if node.args.get(key):
                    raise PlanError(f"GROUP BY {what} is not supported: {_short(node)}")
            for e in node.expressions:
                for cls, what in ((exp.Rollup, "ROLLUP"), (exp.Cube, "CUBE"), (exp.GroupingSets, "GROUPING SETS")):
                    if isinstance(e, cls):
                        raise PlanError(f"GROUP BY {what} is not supported: {_short(node)}")
        if isinstance(node, exp.Anonymous) and str(node.this).lower() == "proctime":
            raise PlanError(
                "PROCTIME() is not supported: tidal's windows and joins run on event time (a processing-time "
                "attribute would make the answer depend on the clock); declare event time with max_diff_watermark"
            )
        if isinstance(node, exp.Window) and not _in_select_list(node) and node.arg_key != "windows":
            raise PlanError(f"window functions (... OVER (...)) are supported in the SELECT list only: {_short(node)}")
        if isinstance(node, exp.Select | exp.SetOperation | exp.Table):
            for key, what in _CLAUSES.items():
                if node.args.get(key):
                    value = node.args[key]
                    shown = node if key == "pivots" or not isinstance(value, exp.Expression) else value
                    raise PlanError(f"{what} is not supported: {_short(shown)}")
        if isinstance(node, exp.Subquery | exp.Select | exp.SetOperation) and node is not tree:
            parent = node.parent
            # (SELECT ...) used as a value is planned as a scalar subquery (uncorrelated only)
            if not isinstance(parent, _SUBQUERY_PARENTS) and not isinstance(node, exp.Subquery):
                raise PlanError(f"scalar subqueries are not supported: {_short(node)}")
        if isinstance(node, exp.SetOperation) and node.args.get("by_name"):  # it matches columns by name
            raise PlanError(f"{node.key.upper()} BY NAME is not supported: {_short(node)}")
        if (
            isinstance(node, exp.Limit)
            and node.args.get("limit_options")
            and node.args["limit_options"].args.get("percent")
        ):
            raise PlanError(f"LIMIT ... PERCENT is not supported: {_short(node)}")
        if isinstance(node, exp.Subquery) and node.args.get("joins"):  # sqlglot's FROM (a), (b): joins tidal would drop
            raise PlanError(f"joins attached to a parenthesised subquery are not supported: {_short(node)}")
        if isinstance(node, exp.IgnoreNulls):
            raise PlanError(f"IGNORE NULLS is not supported: {_short(node)}")


def _in_select_list(node: exp.Expression) -> bool:
    """Whether ``node`` sits in the expressions of its nearest SELECT (not WHERE, GROUP BY, ...)."""
    child, parent = node, node.parent
    while parent is not None and not isinstance(parent, exp.Select):
        if isinstance(parent, exp.Window):  # a window call inside another's arguments
            return False
        child, parent = parent, parent.parent
    return parent is not None and child.arg_key == "expressions"
