"""Helpers on sqlglot expressions while building and rewriting the plan: conjuncts, columns, constants."""

from __future__ import annotations

from decimal import Decimal
from functools import lru_cache

from sqlglot import exp

from ...core.errors import PlanError
from ...io.files import CSV_OPTIONS
from ..expressions import Evaluator, has_subquery, interval_micros
from .names import duckdb_name
from .nodes import Node, Project

_AGGS = {
    exp.Sum: "sum",
    exp.Avg: "average",
    exp.Min: "min",
    exp.Max: "max",
    exp.First: "first",
    exp.Last: "last",
    exp.Stddev: "stddev",
    exp.StddevSamp: "stddev",
    exp.Variance: "variance",
    exp.Median: "median",
    exp.AnyValue: "first",
}


# the parameters of the table functions in order, for positional arguments
TVF_PARAMETERS = {
    "tumble": ("source", "time_field", "window_length", "offset"),
    "hop": ("source", "time_field", "window_length", "hop", "offset"),
    "session": ("source", "time_field", "gap", "max_duration", "key"),
    "max_diff_watermark": ("source", "time_field", "offset"),
    "percentile_watermark": ("source", "time_field", "events", "percentile", "frequency"),
    **{f: ("path",) for f in ("read_csv", "read_csv_auto", "read_json", "read_json_auto", "read_parquet")},
    "tail": ("path", "stop", "format", "latency"),
}
FILE_FUNCTIONS = ("read_csv", "read_csv_auto", "read_json", "read_json_auto", "read_parquet")
# each table function: (the arguments it takes, the required ones: a tuple of alternative names each)
TVF_SIGNATURES: dict[str, tuple[tuple[str, ...], tuple[tuple[str, ...], ...]]] = {
    "tumble": (("source", "time_field", "window_length", "offset", "align"), (("source",), ("window_length",))),
    "hop": (
        ("source", "time_field", "window_length", "hop", "slide", "hop_length", "offset", "align"),
        (("source",), ("window_length",), ("hop", "slide", "hop_length")),
    ),
    "session": (
        ("source", "time_field", "gap", "timeout", "max_duration", "key"),
        (("source",), ("gap", "timeout")),
    ),
    "max_diff_watermark": (("source", "time_field", "offset"), (("source",), ("time_field",))),
    "percentile_watermark": (
        ("source", "time_field", "events", "percentile", "frequency"),
        (("source",), ("time_field",), ("events",), ("percentile",), ("frequency",)),
    ),
    **{f: (("path", *sorted(CSV_OPTIONS)), (("path",),)) for f in ("read_csv", "read_csv_auto")},
    **{f: (("path",), (("path",),)) for f in ("read_json", "read_json_auto", "read_parquet")},
    "tail": (("path", "stop", "format", "latency", *sorted(CSV_OPTIONS)), (("path",),)),
}
_REQUIRED_HINTS = {
    "source": "source => TABLE(...)",
    "time_field": "time_field => DESCRIPTOR(column)",
    "window_length": "window_length => INTERVAL ...",
    "hop": "hop => INTERVAL ... (how often a window starts)",
    "gap": "gap => INTERVAL ... (the silence that ends a session)",
    "path": "path => 'file' (or the path as its first argument)",
}
# PostgreSQL (tidal/sql/postgres.py): a bounded table, or the lookup side of a join with a stream
TVF_PARAMETERS["postgres"] = ("dsn", "table")
TVF_SIGNATURES["postgres"] = (("dsn", "table", "query", "dead_letter", "cache_keys"), (("dsn",),))
_REQUIRED_HINTS["dsn"] = "dsn => 'postgresql://user@host:port/db'"
# Redis Streams (tidal/sql/redis.py): entries read after the last id delivered
TVF_PARAMETERS["redis"] = ("url", "stream")
TVF_SIGNATURES["redis"] = (
    ("url", "stream", "format", "field", "schema", "time_field", "max_delay", "start", "stop", "dead_letter"),
    (("url",), ("stream",)),
)
_REQUIRED_HINTS["url"] = "url => 'redis://host:port/0'"
_REQUIRED_HINTS["stream"] = "stream => 'key'"


def check_tvf_args(fn: str, args: dict) -> None:
    """Refuse a table function's unknown, missing or repeated (under two names) arguments."""
    allowed, required = TVF_SIGNATURES[fn]
    unknown = [k for k in args if k not in allowed]
    if unknown:
        raise PlanError(f"{fn}(...) has no argument {', '.join(unknown)}; its arguments are {', '.join(allowed)}")
    for names in required:
        given = [k for k in names if k in args]
        if not given:
            hint = _REQUIRED_HINTS.get(names[0], f"{names[0]} => ...")
            raise PlanError(f"{fn}(...) needs {hint}")
        if len(given) > 1:
            raise PlanError(f"{fn}(...): {' and '.join(given)} name the same argument; give one")


def _interval_arg(args: dict, key: str, fn: str) -> int:
    """A table function's duration argument (an INTERVAL literal), in microseconds."""
    value = args[key]
    if not isinstance(value, exp.Expression):
        raise PlanError(f"{fn}(...): {key} must be an INTERVAL such as INTERVAL 5 SECONDS, got {value!r}")
    return interval_micros(value)


def column_labels(node: Node, labels: dict[str, str]) -> dict[str, str]:
    """How the user names each of ``node``'s columns: ``alias.column``, or the SQL an internal
    column computes (``labels``: an aggregate call, a GROUP BY expression, a join key)."""
    out = {}
    for phys, (qual, name) in zip(node.names, node.scope, strict=True):
        if phys in labels:
            out[phys] = labels[phys]
        elif name and not name.startswith("__"):
            out[phys] = _column_sql(name, qual)
    return out


@lru_cache(maxsize=4096)
def _column_sql(name: str, qual: str | None) -> str:
    """``qual.name`` as DuckDB's SQL writes it (made once per name: every plan labels its columns)."""
    return exp.column(name, table=qual).sql(dialect="duckdb")


def _fraction(node: exp.Expression, where: str) -> float:
    try:
        value = Evaluator({}, 0).eval(node).as_py()
    except Exception:
        value = None
    value = float(value) if isinstance(value, Decimal) else value  # 0.25 is a DECIMAL literal
    if not isinstance(value, int | float) or isinstance(value, bool) or not 0 <= value <= 1:
        raise PlanError(f"{where}: the fraction must be a constant between 0 and 1, got {node.sql()}")
    return float(value)


def _is_agg(node: exp.Expression) -> bool:
    return isinstance(node, exp.Count | exp.AggFunc) or type(node) in _AGGS


def _display(node: exp.Expression) -> str:
    if isinstance(node, exp.Alias):
        return node.alias
    if isinstance(node, exp.Column):
        return node.name
    if isinstance(node, exp.Count) and isinstance(node.this, exp.Star):
        return "count_star()"
    if isinstance(node, exp.Window):  # DuckDB names a call in lower case: rank() OVER (...)
        text = node.sql(dialect="duckdb", normalize_functions="lower")
    else:
        text = duckdb_name(node)  # (x + 1), sum((x + 1)), upper(s), as DuckDB names them
    return "string_agg" + text[len("listagg") :] if text.startswith("listagg(") else text


def _col(name: str) -> exp.Column:
    return exp.Column(this=exp.Identifier(this=name, quoted=True))


def _const_int(node: exp.Expression, what: str) -> int:
    try:
        value = Evaluator({}, 0).eval(node).as_py()
    except Exception:
        value = None
    if not isinstance(value, int):
        raise PlanError(f"{what} must be an integer constant, got {node.sql()}")
    if value < 0 and what in ("LIMIT", "OFFSET"):  # DuckDB: an error (a negative count is no count)
        raise PlanError(f"a negative {what} is not supported: {node.sql()}")
    return value


def _unique(name: str, taken: set[str]) -> str:
    """``name``, else the first of ``name_1``, ``name_2``, ... not in ``taken``; it joins ``taken``."""
    out, i = name, 1
    while out in taken:
        out = f"{name}_{i}"
        i += 1
    taken.add(out)
    return out


def _conjuncts(e: exp.Expression) -> list[exp.Expression]:
    if isinstance(e, exp.And):
        return _conjuncts(e.this) + _conjuncts(e.expression)
    if isinstance(e, exp.Paren) and isinstance(e.this, exp.And):
        return _conjuncts(e.this)
    return [e]


def _and(parts: list[exp.Expression]) -> exp.Expression:
    out = parts[0]
    for p in parts[1:]:
        out = exp.And(this=out, expression=p)
    return out


def _columns(e: exp.Expression) -> set[str]:
    return {c.name for c in e.find_all(exp.Column)}


def _key_sides(part: exp.Expression, lnames: set, rnames: set) -> tuple | None:
    """``left expr = right expr`` (either way round) as (left, right); None for any other condition."""
    if not isinstance(part, exp.EQ) or has_subquery(part):
        return None
    a, b = _columns(part.this), _columns(part.expression)
    if a and b and a <= lnames and b <= rnames:
        return part.this, part.expression
    if a and b and a <= rnames and b <= lnames:
        return part.expression, part.this
    return None


def _with_columns(node: Node, extra: list) -> Node:
    """``node``'s columns plus computed ones (hidden from ``*``: their names start with ``__``)."""
    exprs = tuple((n, _col(n)) for n in node.names) + tuple((n, e) for n, e, _ in extra)
    scope = (*node.scope, *((None, n) for n, _, _ in extra))
    return Project(node, exprs, scope=scope, types=(*node.types, *(t for _, _, t in extra)))


def _transform(expr: exp.Expression, visit) -> exp.Expression:
    """Pre-order rewrite: ``visit`` returns a replacement (not descended into) or None."""
    got = visit(expr)
    if got is not None:
        return got
    for key, value in list(expr.args.items()):
        if isinstance(value, exp.Expression):
            expr.set(key, _transform(value, visit))
        elif isinstance(value, list):
            expr.set(key, [_transform(v, visit) if isinstance(v, exp.Expression) else v for v in value])
    return expr


def _order_all(order: list, width: int) -> list:
    """``ORDER BY ALL [DESC]`` (DuckDB): by every SELECT column, left to right, in the direction given."""
    if len(order) != 1 or not (isinstance(order[0].this, exp.Var) and order[0].this.name.upper() == "ALL"):
        return list(order)
    o = order[0]
    return [
        exp.Ordered(this=exp.Literal.number(i + 1), desc=o.args.get("desc"), nulls_first=o.args.get("nulls_first"))
        for i in range(width)
    ]


def _subtree_sizes(tree: exp.Expression) -> dict[int, int]:
    """The number of nodes under each node of ``tree`` (by ``id``), without recursion."""
    sizes: dict[int, int] = {}
    for n in reversed(list(tree.walk(bfs=True))):
        sizes[id(n)] = 1 + sum(sizes.get(id(c), 0) for c in n.iter_expressions())
    return sizes
