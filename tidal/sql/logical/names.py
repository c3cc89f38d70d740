"""Column names of unaliased select items, spelled as DuckDB spells them.

DuckDB names such a column by printing the parsed expression back: every operator application in
parentheses (``x + 1`` is ``(x + 1)``, ``-x`` is ``(-(x))``), ``<>`` as ``!=``, ``LIKE`` as ``~~``,
function names in lower case (``COALESCE`` excepted), ``CASE`` with each condition and result in
parentheses, casts and typed literals as ``CAST(... AS TYPE)``. sqlglot's tree loses some of what the user
wrote (``substr`` and ``substring`` are one node, ``^`` and ``**`` too): such names follow the canonical
spelling. Nodes not listed here keep sqlglot's DuckDB spelling, inside a name spelled as DuckDB's.
"""

from __future__ import annotations

from sqlglot import exp

_BINARY = {
    exp.Add: "+",
    exp.Sub: "-",
    exp.Mul: "*",
    exp.Div: "/",
    exp.IntDiv: "//",
    exp.Mod: "%",
    exp.Pow: "^",
    exp.EQ: "=",
    exp.NEQ: "!=",
    exp.LT: "<",
    exp.LTE: "<=",
    exp.GT: ">",
    exp.GTE: ">=",
    exp.And: "AND",
    exp.Or: "OR",
    exp.DPipe: "||",
    exp.Like: "~~",
    exp.ILike: "~~*",
    exp.NullSafeEQ: "IS NOT DISTINCT FROM",
    exp.NullSafeNEQ: "IS DISTINCT FROM",
}
_NEGATED = {exp.Like: "!~~", exp.ILike: "!~~*"}
# function names that are DuckDB keywords: it quotes them when it prints their calls ("first"(s))
_QUOTED_CALLS = frozenset(
    "add aggregate century checkpoint day decade error filter first functions glob hour if json last left map "
    "microsecond millennium millisecond minute mode month nullif overlay position quarter range replace right row "
    "second show substring trim user version week year".split()
)
_TYPES = {"TEXT": "VARCHAR", "INT": "INTEGER"}


class _Unnamed(Exception):
    """A node this module does not spell: sqlglot's spelling of it is used."""


def duckdb_name(node: exp.Expression) -> str:
    """The name DuckDB gives an unaliased select item ``node`` (sqlglot's spelling for nodes not known)."""
    return _name(node)


def _name(e: exp.Expression) -> str:
    try:
        return _spelled(e)
    except _Unnamed:
        return e.sql(dialect="duckdb")


def _spelled(e: exp.Expression) -> str:
    kind = type(e)
    if kind in _NEGATED and e.args.get("negate"):
        return f"({_name(e.this)} {_NEGATED[kind]} {_name(e.expression)})"
    if kind in _BINARY:
        return f"({_name(e.this)} {_BINARY[kind]} {_name(e.expression)})"
    if isinstance(e, exp.Count) and isinstance(e.this, exp.Star):
        return "count_star()"
    if isinstance(e, exp.Paren):
        return _name(e.this)
    if isinstance(e, exp.Column):
        return e.sql(dialect="duckdb")
    if isinstance(e, exp.Literal):
        return e.sql(dialect="duckdb") if e.is_string else e.name
    if isinstance(e, exp.Null):
        return "NULL"
    if isinstance(e, exp.Boolean):
        return "true" if e.this else "false"
    if isinstance(e, exp.Neg):
        if isinstance(e.this, exp.Literal) and not e.this.is_string:
            return f"-{e.this.name}"  # a negative number is one literal
        return f"(-({_name(e.this)}))"
    if isinstance(e, exp.Not):
        inner = e.this.this if isinstance(e.this, exp.Paren) else e.this
        if type(inner) in _NEGATED:
            return f"({_name(inner.this)} {_NEGATED[type(inner)]} {_name(inner.expression)})"
        if isinstance(inner, exp.Is) and isinstance(inner.expression, exp.Null):
            return f"({_name(inner.this)} IS NOT NULL)"
        return f"(NOT {_name(e.this)})"
    if isinstance(e, exp.Is):
        if isinstance(e.expression, exp.Null):
            return f"({_name(e.this)} IS NULL)"
        if isinstance(e.expression, exp.Boolean):
            return f"(CAST({_name(e.this)} AS BOOLEAN) IS NOT DISTINCT FROM {_name(e.expression)})"
        raise _Unnamed
    if isinstance(e, exp.Between):
        return f"({_name(e.this)} BETWEEN {_name(e.args['low'])} AND {_name(e.args['high'])})"
    if isinstance(e, exp.In):
        if e.args.get("query") is not None or e.args.get("unnest") is not None or e.args.get("field") is not None:
            raise _Unnamed
        return f"({_name(e.this)} IN ({', '.join(_name(x) for x in e.expressions)}))"
    if isinstance(e, exp.Cast):  # TryCast is a Cast
        return _cast(e)
    if isinstance(e, exp.Case):
        return _case(e)
    if isinstance(e, exp.Coalesce):
        return f"COALESCE({', '.join(_name(x) for x in [e.this, *e.expressions])})"
    if isinstance(e, exp.Func) and not isinstance(e, exp.Window):
        return _call(e)
    raise _Unnamed


def _cast(e: exp.Cast) -> str:
    to = e.to.sql(dialect="duckdb")
    to = _TYPES.get(to, to).replace(",", ", ").replace(",  ", ", ")
    word = "TRY_CAST" if isinstance(e, exp.TryCast) else "CAST"
    return f"{word}({_name(e.this)} AS {to})"


def _case(e: exp.Case) -> str:
    subject = e.this
    parts = []
    for branch in e.args.get("ifs") or []:
        cond = branch.this
        cond_name = f"({_name(subject)} = {_name(cond)})" if subject is not None else _name(cond)
        parts.append(f"WHEN ({cond_name}) THEN ({_name(branch.args['true'])})")
    default = e.args.get("default")
    return f"CASE  {' '.join(parts)} ELSE {'NULL' if default is None else _name(default)} END"


def _call(e: exp.Func) -> str:
    """A function call: sqlglot's DuckDB spelling with its arguments named by :func:`_name`, the function's
    name in lower case."""
    args = [a for a in e.iter_expressions() if not isinstance(a, exp.DataType)]
    if any(isinstance(a, exp.Star | exp.Order | exp.Subquery | exp.Select | exp.Lambda) for a in args):
        raise _Unnamed
    copy = e.copy()
    marks = {}
    copied = [a for a in copy.iter_expressions() if not isinstance(a, exp.DataType)]
    for i, (a, original) in enumerate(zip(copied, args, strict=True)):
        if isinstance(a, exp.Literal):
            continue  # spelled alike (and some calls print only literal flags: regexp_replace's 'g')
        mark = f"__tidal_name_{i}__"
        marks[mark] = _distinct(a) if isinstance(a, exp.Distinct) else _name(original)
        a.replace(exp.column(mark))
    text = copy.sql(dialect="duckdb")
    head, paren, rest = text.partition("(")
    if not paren or not head.replace("_", "").isalnum() or any(text.count(m) != 1 for m in marks):
        raise _Unnamed  # an argument printed twice or not at all: sqlglot's spelling
    head = head.lower()
    text = (f'"{head}"' if head in _QUOTED_CALLS else head) + paren + rest
    for mark, name in marks.items():
        text = text.replace(mark, name)
    return text


def _distinct(d: exp.Distinct) -> str:
    return "DISTINCT " + ", ".join(_name(x) for x in d.expressions)
