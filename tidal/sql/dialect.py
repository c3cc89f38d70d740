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

import contextlib
import re
import sys

import sqlglot
from sqlglot import exp
from sqlglot.dialects.duckdb import DuckDB
from sqlglot.errors import ParseError, TokenError
from sqlglot.tokens import TokenType

from ..core.errors import ParseError as TidalParseError
from ..core.errors import PlanError
from ..core.trees import tree_depth
from . import dialect_checks


class SqlSyntaxError(TidalParseError):
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


class Product(exp.Expression, exp.AggFunc):
    """DuckDB's ``product(x)``: the product of the values (sqlglot has no class for it)."""

    arg_types = {"this": True}
    _sql_names = ["PRODUCT"]


def _one_argument(name: str, build):
    def checked(args, *rest):
        if len(args) != 1:
            raise PlanError(f"{name}() takes one argument, got {len(args)}: no function {name.lower()} matches")
        return build(this=args[0])

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
            "MEAN": _one_argument("MEAN", exp.Avg),  # DuckDB's alias of avg
            "PRODUCT": _one_argument("PRODUCT", Product),
        }

        _parse_match_recognize = _parse_match_recognize

        def _parse_interval(self, require_interval: bool = True, parse_function_unit: bool = True):
            # sqlglot reads INTERVAL '1 day 2' as INTERVAL '1' DAY (the rest dropped): text with a unit
            # is whole 'number unit' parts, or an error
            ahead = self._tokens[self._index : self._index + 2]
            if (
                len(ahead) == 2
                and ahead[0].token_type == TokenType.INTERVAL
                and ahead[1].token_type == TokenType.STRING
            ):
                text = ahead[1].text
                if re.search(r"[a-zA-Z]", text) and not re.fullmatch(r"(\s*-?[0-9]+(\.[0-9]+)?\s*[a-zA-Z]+\s*)+", text):
                    self.raise_error(f"INTERVAL '{text}' is not supported: write numbers and units ('1 day 2 hours')")
            return super()._parse_interval(require_interval, parse_function_unit)

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
    col = max(1, col)
    if len(text) > 100:  # a window of the line around the place
        start = max(0, col - 60)
        head = "..." if start else ""
        tail = "..." if start + 100 < len(text) else ""
        text = head + text[start : start + 100] + tail
        col = col - start + len(head)
    return f"  {text}\n  {' ' * (col - 1)}^"


_TYPED_LITERALS = {TokenType.TIMESTAMP, TokenType.TIMESTAMPNTZ, TokenType.TIMESTAMPTZ, TokenType.DATE, TokenType.TIME}


def _group_typed_literals(sql: str, tokens=None) -> str:
    """``TIMESTAMP '...'::T`` with the literal in parentheses: sqlglot binds the ``::`` to the string
    (a cast of text to TIMESTAMP), DuckDB to the typed literal (a cast of the timestamp to T).
    ``tokens``: ``sql``'s tokens, made already (None: made here)."""
    if tokens is None:
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


# Limits that are checked, not hit (Python's recursion): a query past them is an error naming the place
MAX_NESTING = 100  # parentheses, CASE ... END and unary operators inside each other
MAX_DEPTH = 1000  # levels of the parsed tree: a chain of n ORs (or +, ||, ...) is n levels
RECURSION_LIMIT = 20_000  # what parsing, planning and running a query within those limits may use
_UNARY = {TokenType.NOT, TokenType.DASH, TokenType.PLUS, TokenType.TILDE}
_AFTER_OPERAND = {TokenType.R_PAREN, TokenType.NUMBER, TokenType.STRING, TokenType.VAR, TokenType.IDENTIFIER}


@contextlib.contextmanager
def room_to_recurse():
    """Run with a recursion limit that fits queries within :data:`MAX_NESTING` and :data:`MAX_DEPTH`
    (the trees of the parser and the planner are walked recursively)."""
    before = sys.getrecursionlimit()
    sys.setrecursionlimit(max(before, RECURSION_LIMIT))
    try:
        yield
    finally:
        sys.setrecursionlimit(before)


def _check_nesting(sql: str, tokens) -> None:
    depth, run, previous = 0, 0, None
    for tok in tokens:
        kind = tok.token_type
        if kind in (TokenType.L_PAREN, TokenType.CASE):
            depth += 1
        elif kind in (TokenType.R_PAREN, TokenType.END):
            depth = max(0, depth - 1)
        unary = kind in _UNARY and (kind == TokenType.NOT or previous not in _AFTER_OPERAND)
        run = run + 1 if unary else 0
        previous = kind
        if depth + run > MAX_NESTING:
            raise PlanError(
                f"line {tok.line}, column {tok.col}: the query nests parentheses, CASE and unary operators "
                f"more than {MAX_NESTING} levels deep; not supported\n{caret(sql, tok.line, tok.col)}"
            )


def _check_literals(sql: str, tree: exp.Expression) -> None:
    """Integer literals must be BIGINTs (DuckDB widens to HUGEINT; tidal does not)."""
    for lit in tree.find_all(exp.Literal):
        text = lit.name
        if lit.is_string or not text.isdigit():
            continue
        if len(text) > 19 or int(text) >= 2**63:
            shown = text if len(text) <= 30 else f"{text[:12]}...{text[-6:]} ({len(text)} digits)"
            where = lit.meta.get("line"), lit.meta.get("col")
            at = f"line {where[0]}, column {where[1] - len(text) + 1}: " if where[0] else ""
            excerpt = f"\n{caret(sql, where[0], where[1] - len(text) + 1)}" if where[0] else ""
            raise PlanError(
                f"{at}the integer literal {shown} is out of BIGINT's range (-2**63 .. 2**63-1); larger integers"
                f" (DuckDB's HUGEINT) are not supported; a DOUBLE is written with an exponent (1e20){excerpt}"
            )


# arguments DuckDB requires that sqlglot's classes leave optional (for other dialects)
_DUCKDB_REQUIRED = {
    exp.Replace: ("replacement",),
    exp.Substring: ("start",),
    exp.PercentileCont: ("expression",),
    exp.PercentileDisc: ("expression",),
}


def _function_at(sql: str, name: str) -> str:
    m = re.search(rf"\b{re.escape(name)}\s*\(", sql, re.IGNORECASE)
    if not m:
        return ""
    line = sql.count("\n", 0, m.start()) + 1
    col = m.start() - (sql.rfind("\n", 0, m.start()) + 1) + 1
    return f"\n{caret(sql, line, col)}"


def _check_arguments(sql: str, tree: exp.Expression) -> None:
    """Every function has the arguments it needs (``MIN()``, ``COUNT(DISTINCT)``, ``replace(s, 'a')``)."""
    for node in tree.find_all(exp.Func):
        name = node.sql_name()
        required = [k for k, need in type(node).arg_types.items() if need]
        if not isinstance(node.parent, exp.WithinGroup):  # percentile_cont(0.3) WITHIN GROUP (ORDER BY x)
            required += _DUCKDB_REQUIRED.get(type(node), ())
        missing = [k for k in required if node.args.get(k) is None or node.args.get(k) == []]
        distinct = node.this if isinstance(node.this, exp.Distinct) else None
        if missing or (distinct is not None and not distinct.expressions):
            what = "an argument" if distinct is not None or missing == ["this"] else "more arguments"
            raise PlanError(f"{name}() needs {what}: no function {name.lower()} matches{_function_at(sql, name)}")


def _missing_keyword(desc: str) -> str:
    """sqlglot's "Required keyword: 'this' missing for <class '...Upper'>" in the user's terms."""
    m = re.match(r"Required keyword: '(\w+)' missing for <class '[\w.]*?(\w+)'>", desc)
    if not m:
        return desc
    cls = getattr(exp, m.group(2), None)
    name = cls.sql_names()[0] if cls is not None and hasattr(cls, "sql_names") else m.group(2).upper()
    return f"{name}() is missing an argument"


def parse(sql: str) -> exp.Expression:
    """Parse one statement of tidal's dialect."""
    dialect = Tidal()
    try:
        tokens = dialect.tokenize(sql)
    except TokenError:
        tokens = None  # the parser reports it
    if tokens is not None and (unglued := dialect_checks.unglue_numbers(sql, tokens)) != sql:
        sql, tokens = unglued, dialect.tokenize(unglued)
    if tokens is not None:
        _check_nesting(sql, tokens)
        dialect_checks.check_tokens(sql, tokens)
    try:
        with room_to_recurse():
            grouped = _group_typed_literals(sql, tokens) if tokens is not None else sql
            if tokens is not None and grouped == sql:  # the text parsed is the text tokenized: its tokens, once
                trees = dialect.parser().parse(tokens, sql)
            else:
                trees = sqlglot.parse(grouped, read=Tidal)
    except ParseError as exc:
        err = exc.errors[0] if exc.errors else {}
        line, col = err.get("line") or 1, err.get("col") or 1
        desc = _missing_keyword(err.get("description") or str(exc))
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
    if not isinstance(tree, exp.Query | exp.Values | exp.Describe | exp.Summarize):
        raise SqlSyntaxError(f"only queries (SELECT ...) are supported, got: {tree.sql()[:60]}")
    if (depth := tree_depth(tree, exp.Expression.iter_expressions)) > MAX_DEPTH:
        raise PlanError(
            f"the query's expressions are {depth} levels deep, more than {MAX_DEPTH} (a chain of n OR, AND or "
            "+ terms is n levels); not supported: write x IN (a, b, ...) for long OR chains, or split the query"
        )
    _check_literals(sql, tree)
    _check_arguments(sql, tree)
    dialect_checks.check_tree(sql, tree)
    return dialect_checks.normalise(tree)
