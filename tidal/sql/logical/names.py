"""Column names of unaliased select items, spelled as DuckDB spells them.

DuckDB names such a column by printing the parsed expression back: every operator application in
parentheses (``x + 1`` is ``(x + 1)``, ``-x`` is ``(-(x))``), ``<>`` as ``!=``, ``LIKE`` as ``~~``,
function names in lower case (``COALESCE`` excepted), ``CASE`` with each condition and result in
parentheses, casts and typed literals as ``CAST(... AS TYPE)``. sqlglot's tree loses some of what the user
wrote (``substr`` and ``substring`` are one node, ``^`` and ``**`` too): such names follow the canonical
spelling, and so do those it parses alike: ``x IS NOT NULL`` (also ``NOT x IS NULL``), ``b IS NOT TRUE``
(also ``NOT b IS TRUE``), ``VARCHAR`` (also ``TEXT``), ``DECIMAL(18, 3)`` (also ``DECIMAL``). A minus sign
before a number is folded into it as DuckDB's parser does (``-(1)`` is ``-1``), chains of AND or OR are
flattened (``(a AND b AND c)``), EXTRACT is ``date_part``. Nodes not listed here keep sqlglot's DuckDB
spelling, inside a name spelled as DuckDB's.
"""

from __future__ import annotations

import re

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
    exp.Glob: "~~~",
    exp.BitwiseAnd: "&",
    exp.BitwiseOr: "|",
    exp.BitwiseLeftShift: "<<",
    exp.BitwiseRightShift: ">>",
}
_NEGATED = {exp.Like: "!~~", exp.ILike: "!~~*"}
# function names that are DuckDB keywords: it quotes them when it prints their calls ("first"(s))
_QUOTED_CALLS = frozenset(
    "add aggregate century checkpoint day decade error filter first functions glob hour if json last left map "
    "microsecond millennium millisecond minute mode month nullif overlay position quarter range replace right row "
    "second show substring trim user version week year".split()
)
# sqlglot's DuckDB names of types that DuckDB prints otherwise (REAL is how sqlglot prints FLOAT)
_TYPES = {"TEXT": "VARCHAR", "INT": "INTEGER", "REAL": "FLOAT", "INT128": "HUGEINT", "UINT128": "UHUGEINT"}
_TYPE_WORD = re.compile(r"\b(?:" + "|".join(_TYPES) + r")\b")


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
    if kind in (exp.And, exp.Or):  # DuckDB flattens a chain of one connective, parenthesised or not
        return f"({f' {_BINARY[kind]} '.join(_name(x) for x in _chain(e, kind))})"
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
        number = _negated_number(e)
        return f"(-({_name(e.this)}))" if number is None else number
    if isinstance(e, exp.Not):
        # x IS NOT NULL and NOT x IS NULL are one tree (DuckDB names the first; NOT (x IS NULL) keeps its
        # parentheses); s NOT LIKE p is a LIKE with negate, so a NOT above a LIKE was written NOT s LIKE p
        inner = e.this
        if isinstance(inner, exp.Is) and isinstance(inner.expression, exp.Null):
            return f"({_name(inner.this)} IS NOT NULL)"
        if isinstance(inner, exp.Is) and isinstance(inner.expression, exp.Boolean):  # b IS NOT TRUE
            return f"(CAST({_name(inner.this)} AS BOOLEAN) IS DISTINCT FROM {_name(inner.expression)})"
        return f"(NOT {_name(e.this)})"
    if isinstance(e, exp.IgnoreNulls) and isinstance(e.this, exp.AnyValue):  # DuckDB's any_value
        return _call(e.this)
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
    if isinstance(e, exp.If) and e.args.get("false") is not None:  # if(c, a, b), not a CASE
        return f'"if"({_name(e.this)}, {_name(e.args["true"])}, {_name(e.args["false"])})'
    if isinstance(e, exp.Filter) and isinstance(e.expression, exp.Where):
        return f"{_name(e.this)} FILTER (WHERE {_name(e.expression.this)})"
    if isinstance(e, exp.LogicalAnd | exp.LogicalOr):  # sqlglot prints BOOL_AND(CAST(x AS BOOLEAN))
        return f"{'bool_and' if isinstance(e, exp.LogicalAnd) else 'bool_or'}({_name(e.this)})"
    if isinstance(e, exp.GroupConcat):  # string_agg(x[, sep][ ORDER BY k]): sqlglot prints LISTAGG(x, ',' ...)
        return _string_agg(e)
    if isinstance(e, exp.WithinGroup) and isinstance(e.this, exp.PercentileCont | exp.PercentileDisc):
        word = "quantile_cont" if isinstance(e.this, exp.PercentileCont) else "quantile_disc"
        return f"{word}({_name(e.this.this)}{_order_by(e.expression)})"  # as DuckDB rewrites it
    if isinstance(e, exp.SimilarTo):
        return f"regexp_full_match({_name(e.this)}, {_name(e.expression)})"
    if isinstance(e, exp.BitwiseNot):
        return f"(~({_name(e.this)}))"
    if isinstance(e, exp.Array):  # [1, 2] and list_value(1, 2) alike
        return f"list_value({', '.join(_name(x) for x in e.expressions)})"
    if isinstance(e, exp.Extract) and isinstance(e.this, exp.Var):  # extract(year FROM d)
        return f"date_part('{_part(e.this.name)}', {_name(e.expression)})"
    if isinstance(e, exp.CurrentDate) and e.this is None:
        return "current_date"
    if isinstance(e, exp.Cast):  # TryCast is a Cast
        return _cast(e)
    if isinstance(e, exp.Case):
        return _case(e)
    if isinstance(e, exp.Coalesce):
        return f"COALESCE({', '.join(_name(x) for x in [e.this, *e.expressions])})"
    if isinstance(e, exp.Func) and not isinstance(e, exp.Window):
        return _call(e)
    raise _Unnamed


def _string_agg(e: exp.GroupConcat) -> str:
    this, order = e.this, ""
    if isinstance(this, exp.Order):
        this, order = this.this, _order_by(this)
    value = _distinct(this) if isinstance(this, exp.Distinct) else _name(this)
    separator = e.args.get("separator")
    return f"string_agg({value}{'' if separator is None else ', ' + _name(separator)}{order})"


def _order_by(order: exp.Expression) -> str:
    """`` ORDER BY k [DESC] [NULLS FIRST], ...`` of an aggregate's ORDER BY (ASC and NULLS LAST, the
    defaults, are not in sqlglot's tree: left out)."""
    if not isinstance(order, exp.Order) or not order.expressions:
        raise _Unnamed
    keys = []
    for key in order.expressions:
        if not isinstance(key, exp.Ordered):
            raise _Unnamed
        desc, nulls_first = bool(key.args.get("desc")), bool(key.args.get("nulls_first"))
        keys.append(_name(key.this) + (" DESC" if desc else "") + (" NULLS FIRST" if nulls_first else ""))
    return " ORDER BY " + ", ".join(keys)


def _chain(e: exp.Expression, kind: type) -> list[exp.Expression]:
    """The operands of a chain of ``kind`` (AND or OR) through parentheses: ``(a AND b) AND c`` is a, b, c."""
    while isinstance(e, exp.Paren):
        e = e.this
    if type(e) is not kind:
        return [e]
    return [*_chain(e.this, kind), *_chain(e.expression, kind)]


def _negated_number(e: exp.Expression) -> str | None:
    """DuckDB's parser folds a minus sign into the number it negates, as text: ``-(1)`` is ``-1``,
    ``- -1.50`` is ``1.50``, ``-(0)`` is ``-0``; None when ``e`` is no (negated) number."""
    while isinstance(e, exp.Paren):
        e = e.this
    if isinstance(e, exp.Literal) and not e.is_string:
        return e.name
    if not isinstance(e, exp.Neg):
        return None
    inner = _negated_number(e.this)
    if inner is None:
        return None
    return inner[1:] if inner.startswith("-") else f"-{inner}"


# EXTRACT's parts that are DuckDB keywords (it prints them in capitals) and those that are not
_KEYWORD_PARTS = {
    p: p.upper() for p in "year month day hour minute second century decade millennium week quarter".split()
}
_KEYWORD_PARTS |= {"microsecond": "MICROSECONDS", "millisecond": "MILLISECONDS"}
_OTHER_PARTS = frozenset("epoch dow doy isodow yearweek julian timezone era isoyear".split())


def _part(unit: str) -> str:
    if unit.lower() in _KEYWORD_PARTS:
        return _KEYWORD_PARTS[unit.lower()]
    if unit.lower() in _OTHER_PARTS:  # DuckDB keeps these as written; tidal's parser lost how: lower case
        return unit.lower()
    raise _Unnamed


def _cast(e: exp.Cast) -> str:
    to = e.to.sql(dialect="duckdb")
    to = _TYPE_WORD.sub(lambda m: _TYPES[m.group()], to).replace(",", ", ").replace(",  ", ", ")
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
