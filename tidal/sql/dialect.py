"""tidal's SQL dialect: DuckDB's, plus the OctoSQL thesis's TRIGGER clause.

Everything is parsed by sqlglot; the only grammar added is a query modifier::

    TRIGGER COUNTING n | AFTER DELAY INTERVAL ... | ON WATERMARK [, ...]

stored on the SELECT as ``trigger``; and ``MATCH_RECOGNIZE (...)`` after a FROM item, with Flink's
``WITHIN INTERVAL ...`` after its PATTERN (stored on the SELECT as ``match``). Table-valued
functions with named arguments (``tumble(source => TABLE(s), time_field => DESCRIPTOR(t), ...)``)
and quoted file paths in FROM are DuckDB syntax already; ``session`` is taken off the keyword list so that
``session(...)`` parses as such a function. A syntax error is a :class:`SqlSyntaxError` whose message
shows the query with a caret under the position.
"""

from __future__ import annotations

import sqlglot
from sqlglot import exp
from sqlglot.dialects.duckdb import DuckDB
from sqlglot.errors import ParseError, TokenError
from sqlglot.tokens import TokenType

from ..core.errors import PlanError


class SqlSyntaxError(PlanError):
    """The query does not parse; the message points at the place."""


class Trigger(exp.Expression):
    """``TRIGGER t1, t2, ...``: when a grouped result is materialised (multitrigger if several)."""

    arg_types = {"expressions": True}


class CountingTrigger(exp.Expression):
    arg_types = {"this": True}


class DelayTrigger(exp.Expression):
    arg_types = {"this": True}


class WatermarkTrigger(exp.Expression):
    arg_types = {}


def _parse_trigger(self) -> tuple[str, Trigger]:
    self._match(TokenType.TRIGGER)
    items = []
    while True:
        if self._match_text_seq("COUNTING"):
            items.append(CountingTrigger(this=self._parse_number()))
        elif self._match_text_seq("AFTER", "DELAY"):
            items.append(DelayTrigger(this=self._parse_interval() or self._parse_primary()))
        elif self._match_text_seq("ON", "WATERMARK"):
            items.append(WatermarkTrigger())
        else:
            self.raise_error("expected COUNTING n, AFTER DELAY INTERVAL ... or ON WATERMARK after TRIGGER")
        if not self._match(TokenType.COMMA):
            break
    return "trigger", Trigger(expressions=items)


class MatchRecognize(exp.MatchRecognize):
    """sqlglot's MATCH_RECOGNIZE with Flink's ``WITHIN INTERVAL ...`` (between PATTERN and DEFINE)."""

    arg_types = {**exp.MatchRecognize.arg_types, "within": False}


def _parse_match_recognize(self) -> MatchRecognize | None:
    """``MATCH_RECOGNIZE ( [PARTITION BY ..] [ORDER BY ..] [MEASURES ..] [rows] [AFTER MATCH SKIP ..]
    PATTERN (..) [WITHIN INTERVAL ..] [DEFINE ..] ) [AS alias]``; the pattern is kept as its text."""
    if not self._match(TokenType.MATCH_RECOGNIZE):
        return None
    self._match_l_paren()
    args: dict = {"partition_by": self._parse_partition_by(), "order": self._parse_order()}
    if self._match_text_seq("MEASURES"):
        args["measures"] = self._parse_csv(self._parse_match_recognize_measure)
    for words in (("ONE", "ROW", "PER", "MATCH"), ("ALL", "ROWS", "PER", "MATCH")):
        if self._match_text_seq(*words):
            args["rows"] = exp.var(" ".join(words))
    if self._match_text_seq("AFTER", "MATCH", "SKIP"):
        text = "AFTER MATCH SKIP"
        for words in (("PAST", "LAST", "ROW"), ("TO", "NEXT", "ROW"), ("TO", "FIRST"), ("TO", "LAST")):
            if self._match_text_seq(*words):
                text += " " + " ".join(words)
                if words[-1] in ("FIRST", "LAST"):
                    var = self._advance_any()
                    if var is None:
                        self.raise_error(f"expected a pattern variable after AFTER MATCH SKIP {' '.join(words)}")
                    text += f" {var.text}"
                break
        else:
            self.raise_error(
                "AFTER MATCH SKIP takes PAST LAST ROW, TO NEXT ROW, TO FIRST var or TO LAST var; "
                "other forms (TO var) are not supported"
            )
        args["after"] = exp.var(text)
    if not self._match_text_seq("PATTERN"):
        self.raise_error("MATCH_RECOGNIZE needs a PATTERN (...)")
    self._match_l_paren()
    start, depth, end = self._curr, 1, None
    while self._curr and depth:
        depth += {TokenType.L_PAREN: 1, TokenType.R_PAREN: -1}.get(self._curr.token_type, 0)
        if depth:
            end = self._curr
        self._advance()
    if depth or end is None:
        self.raise_error("expected the pattern and ')' after PATTERN (")
    args["pattern"] = exp.var(self._find_sql(start, end))
    for word in ("SUBSET", "INITIAL", "SEEK"):
        if self._curr is not None and self._curr.text.upper() == word:
            self.raise_error(f"MATCH_RECOGNIZE {word} is not supported")
    if self._match_text_seq("WITHIN"):
        args["within"] = self._parse_interval() or self.raise_error("expected INTERVAL '...' unit after WITHIN")
    if self._match_text_seq("DEFINE"):
        args["define"] = self._parse_csv(self._parse_name_as_expression)
    if self._curr is not None and self._curr.text.upper() in ("SUBSET", "WITHIN"):
        self.raise_error(f"MATCH_RECOGNIZE {self._curr.text.upper()} after DEFINE: not supported (WITHIN goes "
                         "right after PATTERN (...); SUBSET is not supported)")  # fmt: skip
    self._match_r_paren()
    args["alias"] = self._parse_table_alias()
    return self.expression(MatchRecognize(**args))


def _at_most(name: str, n: int, build):
    def checked(args, *rest):
        if len(args) > n:
            raise PlanError(f"{name} takes at most {n} arguments, got {len(args)}: no function {name.lower()} matches")
        return build(args, *rest)

    return checked


class Tidal(DuckDB):
    class Tokenizer(DuckDB.Tokenizer):
        # ``session(...)`` is a table function here (session windows), not the SESSION keyword
        KEYWORDS = {k: v for k, v in DuckDB.Tokenizer.KEYWORDS.items() if k != "SESSION"}
        KEYWORDS["MATCH_RECOGNIZE"] = TokenType.MATCH_RECOGNIZE

    class Parser(DuckDB.Parser):
        QUERY_MODIFIER_PARSERS = {
            **DuckDB.Parser.QUERY_MODIFIER_PARSERS,
            TokenType.TRIGGER: _parse_trigger,
            TokenType.MATCH_RECOGNIZE: lambda self: ("match", self._parse_match_recognize()),
        }
        QUERY_MODIFIER_TOKENS = set(QUERY_MODIFIER_PARSERS)
        # LIMIT and OFFSET are reserved words in DuckDB: never an alias (``FROM t LIMIT`` is an
        # error, not a table aliased "LIMIT")
        TABLE_ALIAS_TOKENS = DuckDB.Parser.TABLE_ALIAS_TOKENS - {TokenType.LIMIT, TokenType.OFFSET}
        ALIAS_TOKENS = DuckDB.Parser.ALIAS_TOKENS - {TokenType.LIMIT, TokenType.OFFSET}

        # sqlglot keeps two arguments of LTRIM/RTRIM/TRIM and drops the rest: more is DuckDB's error
        FUNCTIONS = {
            **DuckDB.Parser.FUNCTIONS,
            **{
                name: _at_most(name, 2, DuckDB.Parser.FUNCTIONS[name])
                for name in ("LTRIM", "RTRIM", "TRIM")
                if name in DuckDB.Parser.FUNCTIONS
            },
        }

        _parse_match_recognize = _parse_match_recognize

        def _parse_using_identifiers(self):
            # USING (a, b): plain names; sqlglot would drop a qualifier (USING (t.a)), DuckDB rejects it
            def name():
                this = self._parse_column()
                if isinstance(this, exp.Column):
                    if this.table:
                        self.raise_error(f"USING takes column names, not a qualified column: {this.sql()}")
                    return this.this
                return this

            return self._parse_wrapped_csv(name, optional=True)


def caret(sql: str, line: int, col: int) -> str:
    """The query's line ``line`` (1-based) with a caret under column ``col`` (1-based)."""
    lines = sql.splitlines() or [""]
    line = max(1, min(line, len(lines)))
    text = lines[line - 1]
    return f"  {text}\n  {' ' * max(0, col - 1)}^"


_TYPED_LITERALS = {TokenType.TIMESTAMP, TokenType.TIMESTAMPNTZ, TokenType.TIMESTAMPTZ, TokenType.DATE, TokenType.TIME}


def _group_typed_literals(sql: str) -> str:
    """``TIMESTAMP '...'::T`` with the literal in parentheses: sqlglot binds the ``::`` to the string
    (a cast of text to TIMESTAMP), DuckDB to the typed literal (a cast of the timestamp to T)."""
    try:
        tokens = Tidal().tokenize(sql)
    except TokenError:
        return sql  # the parser reports it
    spans = [
        (kw.start, lit.end)
        for kw, lit, after in zip(tokens, tokens[1:], tokens[2:], strict=False)
        if kw.token_type in _TYPED_LITERALS
        and lit.token_type == TokenType.STRING
        and after.token_type == TokenType.DCOLON
    ]
    for start, end in reversed(spans):
        sql = f"{sql[:start]}({sql[start : end + 1]}){sql[end + 1 :]}"
    return sql


def parse(sql: str) -> exp.Expression:
    """Parse one statement of tidal's dialect."""
    try:
        trees = sqlglot.parse(_group_typed_literals(sql), read=Tidal)
    except ParseError as exc:
        err = exc.errors[0] if exc.errors else {}
        line, col = err.get("line") or 1, err.get("col") or 1
        desc = err.get("description") or str(exc)
        # sqlglot's col points at the end of the offending token; put the caret at its start
        token = err.get("highlight") or ""
        start = max(1, col - len(token) + 1) if token else col
        raise SqlSyntaxError(
            f"syntax error at line {line}, column {start}: {desc}\n{caret(sql, line, start)}"
        ) from None
    except TokenError as exc:
        raise SqlSyntaxError(f"syntax error: {exc}") from None
    trees = [t for t in trees if t is not None]
    if len(trees) != 1:
        raise SqlSyntaxError(f"expected one SQL statement, got {len(trees)}")
    tree = trees[0]
    if not isinstance(tree, exp.Query | exp.Values):
        raise SqlSyntaxError(f"only queries (SELECT ...) are supported, got: {tree.sql()[:60]}")
    return tree
