"""Checks of a query's text that DuckDB's parser makes and sqlglot's does not (each an error, never an answer).

- chained comparisons (``1 < 2 < 3``, ``a = b = c``, ``x IS DISTINCT FROM y IS DISTINCT FROM z``): DuckDB's
  parser refuses them ("use AND"); sqlglot reads them as a comparison of a boolean;
- a number written ``1e308+1e308`` or ``1e3+1`` without spaces: sqlglot's tokenizer reads ``1e308+1`` as one
  number (and ``e308`` as an alias): :func:`unglue_numbers` puts the space in;
- a string before ``:`` in the select list (``SELECT 'j': 42``): DuckDB's prefix alias takes an identifier
  only, sqlglot takes the string as the alias.

:func:`normalise` rewrites what sqlglot reads into a shape the rest of tidal reads in full: the joins of a
FROM-first query (``FROM a JOIN b USING (i)``), which sqlglot hangs on the table (the planner would drop them),
and ``FETCH FIRST n ROWS ONLY`` as ``LIMIT n``.
"""

from __future__ import annotations

import re

from sqlglot import exp
from sqlglot.tokens import TokenType

from ..core.errors import PlanError

_COMPARISONS = (exp.EQ, exp.NEQ, exp.LT, exp.LTE, exp.GT, exp.GTE)
# tokens an operand of IS [NOT] DISTINCT FROM may hold without ending it (at parenthesis depth 0)
_OPERAND = {
    TokenType.NUMBER, TokenType.STRING, TokenType.VAR, TokenType.DOT, TokenType.PLUS, TokenType.DASH,
    TokenType.STAR, TokenType.SLASH, TokenType.NULL, TokenType.TRUE, TokenType.FALSE, TokenType.DCOLON,
    TokenType.IDENTIFIER, TokenType.MOD, TokenType.DPIPE,
}  # fmt: skip
_GLUED_NUMBER = re.compile(r"[eE][+-]?\d+[+-]")
_GLUED_AT = re.compile(r"^[\d_.]*[eE][+-]?\d+(?=[+-])")


def unglue_numbers(sql: str, tokens) -> str:
    """``sql`` with a space after each number with an exponent that sqlglot glued to a sign after it (``1e3+1``:
    one number for sqlglot, ``1e3 + 1`` for DuckDB); ``sql`` itself when there is none."""
    for tok in reversed(tokens):
        if (
            tok.token_type == TokenType.NUMBER
            and (m := _GLUED_AT.match(tok.text))
            and sql[tok.start : tok.end + 1] == tok.text
        ):
            sql = sql[: tok.start + m.end()] + " " + sql[tok.start + m.end() :]
    return sql


def _at(sql: str, tok) -> str:
    return f"line {tok.line}, column {tok.col}"


def check_tokens(sql: str, tokens) -> None:
    """The token-level checks: a glued number, a string prefix alias, a chain of IS DISTINCT FROM."""
    brackets: list = []
    for i, tok in enumerate(tokens):
        kind = tok.token_type
        if kind in (TokenType.L_PAREN, TokenType.L_BRACE, TokenType.L_BRACKET):
            brackets.append(kind)
        elif kind in (TokenType.R_PAREN, TokenType.R_BRACE, TokenType.R_BRACKET) and brackets:
            brackets.pop()
        if kind == TokenType.NUMBER and _GLUED_NUMBER.search(tok.text):
            raise PlanError(
                f"{_at(sql, tok)}: the number {tok.text!r} followed by more digits (a sum of numbers with exponents "
                "written without spaces, 1e308+1e308) is not supported: write spaces around + and -"
            )
        if (
            kind == TokenType.STRING
            and i + 1 < len(tokens)
            and tokens[i + 1].token_type == TokenType.COLON
            and (not brackets or brackets[-1] == TokenType.L_PAREN)
        ):
            raise PlanError(
                f"{_at(sql, tok)}: a string before ':' ('{tok.text}': ...) is not an alias; DuckDB's prefix alias "
                "takes a name (j: 42): not supported"
            )
        after = _distinct_from_at(tokens, i) if kind == TokenType.IS else 0
        if after and _chained_distinct(tokens, after):
            raise PlanError(
                f"{_at(sql, tok)}: chained comparisons (a IS DISTINCT FROM b IS DISTINCT FROM c) are not supported: "
                "use AND to combine comparisons (as DuckDB says)"
            )


def _distinct_from_at(tokens, i: int) -> int:
    """The index after ``IS [NOT] DISTINCT FROM`` starting at ``i``, or 0."""
    j = i + 1
    if j < len(tokens) and tokens[j].token_type == TokenType.NOT:
        j += 1
    kinds = [t.token_type for t in tokens[j : j + 2]]
    return j + 2 if kinds == [TokenType.DISTINCT, TokenType.FROM] else 0


def _chained_distinct(tokens, start: int) -> bool:
    depth = 0
    for k in range(start, len(tokens)):
        kind = tokens[k].token_type
        if kind == TokenType.L_PAREN:
            depth += 1
        elif kind == TokenType.R_PAREN:
            depth -= 1
            if depth < 0:
                return False
        elif depth == 0 and kind == TokenType.IS:
            return bool(_distinct_from_at(tokens, k))
        elif depth == 0 and kind not in _OPERAND:
            return False
    return False


def check_tree(sql: str, tree: exp.Expression) -> None:
    """A comparison whose operand is a comparison not in parentheses (``1 < 2 < 3``)."""
    for node in tree.find_all(*_COMPARISONS):
        for side in (node.this, node.expression):
            if isinstance(side, _COMPARISONS):
                raise PlanError(
                    f"chained comparisons ({node.sql(dialect='duckdb')}) are not supported: use AND to combine "
                    "comparisons (as DuckDB says), or parentheses to compare a comparison's truth value"
                )


def normalise(tree: exp.Expression) -> exp.Expression:
    """``tree`` with a FROM-first query's joins on its SELECT and ``FETCH FIRST n ROWS`` as ``LIMIT n``."""
    for source in list(tree.find_all(exp.Table)):
        joins = source.args.get("joins")
        holder = source.parent
        if not joins:
            continue
        select = holder.parent if isinstance(holder, exp.From) else None
        if not isinstance(select, exp.Select) or holder.arg_key not in ("from", "from_"):
            raise PlanError(
                f"joins attached to a table outside a FROM are not supported: {source.sql(dialect='duckdb')}"
            )
        source.set("joins", None)
        select.set("joins", [*joins, *(select.args.get("joins") or [])])
    for fetch in list(tree.find_all(exp.Fetch)):
        options = fetch.args.get("limit_options")
        for flag, what in (("percent", "FETCH ... PERCENT"), ("with_ties", "FETCH ... WITH TIES")):
            if options is not None and options.args.get(flag):
                raise PlanError(f"{what} is not supported: {fetch.sql(dialect='duckdb')}")
        count = fetch.args.get("count") or exp.Literal.number(1)  # FETCH FIRST ROW ONLY: one row
        fetch.replace(exp.Limit(expression=count))
    return tree
