"""Statements of a SQL script or shell session: ``CREATE TABLE``, ``CREATE VIEW``, ``INSERT INTO``, queries.

Flink SQL's DDL onto tidal's sources, watermark generators and sinks::

    CREATE TABLE clicks (ad BIGINT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '5' SECOND)
    WITH ('connector' = 'filesystem', 'path' = 'clicks.csv');
    CREATE VIEW per_minute AS SELECT ad, window_end, COUNT(*) AS n
        FROM tumble(source => TABLE(clicks), window_length => INTERVAL '1' MINUTE) GROUP BY ad, window_end;
    INSERT INTO out SELECT * FROM per_minute;

A table is a named query over one of tidal's table functions (:mod:`tidal.sql.connectors`): its
declared columns are read and cast to their declared types; ``WATERMARK FOR ts AS ts - INTERVAL d``
is ``max_diff_watermark(..., time_field => DESCRIPTOR(ts), offset => d)`` over them (for Kafka, the
feed's own per-partition watermark with ``max_delay => d``). A view is a named query. Both live in a
:class:`Catalog` and are planned where a query names them, as CTEs are (a name used twice is one
source). Nothing is read when a table is declared: its file or topic is opened when a query runs.

``CREATE TABLE`` is parsed by sqlglot's RisingWave dialect (which has Flink's ``WATERMARK FOR``);
queries, view bodies and ``INSERT``'s ``SELECT`` by tidal's dialect (:mod:`tidal.sql.dialect`).
Statements are split at ``;`` by the tokenizer (so a ``;`` inside a string or comment is not an end).
Not supported, with an error that says so: computed and metadata columns, watermarks other than
``col`` or ``col - INTERVAL ...``, ``CREATE TABLE ... AS``, column lists on views, partitioned
tables, ``INSERT OVERWRITE``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError
from sqlglot.tokens import TokenType

from ..core.errors import PlanError
from .connectors import SinkTarget, check_options, connector_of, sink_target, source_sql
from .dialect import SqlSyntaxError, Tidal, caret, parse

KINDS = ("create table", "create view", "insert", "drop", "show tables", "explain", "query")


@dataclass
class Statement:
    """One statement of a script: its kind (:data:`KINDS`), text and first line in the script."""

    kind: str
    text: str
    line: int = 1
    name: str | None = None  # the table or view created, dropped or inserted into
    body: str | None = None  # the query of a view, an INSERT or an EXPLAIN
    replace: bool = False  # CREATE OR REPLACE
    if_exists: bool = False  # CREATE ... IF NOT EXISTS, DROP ... IF EXISTS


@dataclass
class TableDef:
    name: str
    connector: str
    options: dict[str, str]
    columns: list[tuple[str, str]]  # (name, SQL type)
    watermark: tuple[str, str] | None  # (column, interval SQL)
    primary_key: tuple[str, ...] = ()  # PRIMARY KEY (...) NOT ENFORCED: a PostgreSQL sink's key


@dataclass
class Catalog:
    """The tables and views a session has declared."""

    tables: dict[str, TableDef] = field(default_factory=dict)
    views: dict[str, str] = field(default_factory=dict)

    def names(self) -> list[str]:
        return sorted([*self.tables, *self.views])

    def execute(self, stmt: Statement) -> str:
        """Apply a DDL statement; returns what to tell the user."""
        if stmt.kind == "create table":
            return self.create_table(stmt)
        if stmt.kind == "create view":
            if stmt.name in self.tables or stmt.name in self.views and not stmt.replace:
                if stmt.if_exists:
                    return f"view {stmt.name} exists"
                raise PlanError(f"{stmt.name} exists already (CREATE OR REPLACE VIEW replaces a view)")
            parse(stmt.body)  # a syntax error now, with a caret in the view's text
            self.views[stmt.name] = stmt.body
            return f"view {stmt.name} created"
        if stmt.kind == "drop":
            for kind, store in (("table", self.tables), ("view", self.views)):
                if stmt.name in store:
                    del store[stmt.name]
                    return f"{kind} {stmt.name} dropped"
            if stmt.if_exists:
                return f"no table or view {stmt.name}"
            raise PlanError(f"no table or view {stmt.name} to drop; there are: {', '.join(self.names()) or 'none'}")
        raise PlanError(f"not a DDL statement: {stmt.kind}")

    def create_table(self, stmt: Statement) -> str:
        try:
            tree = sqlglot.parse_one(stmt.text, read="risingwave")
        except (ParseError, TokenError) as exc:
            err = exc.errors[0] if isinstance(exc, ParseError) and exc.errors else {}
            line, col = err.get("line") or 1, err.get("col") or 1
            desc = err.get("description") or str(exc).splitlines()[0]
            raise SqlSyntaxError(
                f"syntax error at line {line}, column {col}: {desc}\n{caret(stmt.text, line, col)}"
            ) from None
        table = _table_def(tree)
        if table.name in self.tables or table.name in self.views:
            if tree.args.get("exists"):
                return f"table {table.name} exists"
            if not tree.args.get("replace"):
                raise PlanError(f"{table.name} exists already (DROP TABLE {table.name} first)")
        self.tables[table.name] = table
        self.views.pop(table.name, None)
        return f"table {table.name} created"

    def queries(self) -> Mapping[str, exp.Expression]:
        """name -> the query that defines it, for :func:`tidal.sql.plan`'s ``catalog``; a table's options
        are checked as a source only when a query reads it (a sink-only table need not be readable)."""
        return _Queries(self)

    def sink(self, name: str) -> tuple[SinkTarget, list[str]]:
        """Where ``INSERT INTO name`` writes, and the table's declared column names."""
        if name in self.views:
            raise PlanError(f"INSERT INTO {name}: {name} is a view; insert into a table (not supported)")
        if name not in self.tables:
            raise PlanError(
                f"INSERT INTO {name}: no table {name}; declare it with CREATE TABLE {name} (...) WITH (...)"
            )
        t = self.tables[name]
        check_options(name, t.connector, t.options, sink=True)
        return sink_target(name, t.connector, t.options, t.primary_key), [c for c, _ in t.columns]


TIMES = ("TIMESTAMP", "TIMESTAMPTZ")
RAW = "__raw_"  # a table's columns before its watermark: a hidden catalog entry


class _Queries(Mapping):
    def __init__(self, catalog: Catalog):
        self.catalog = catalog
        self.built: dict[str, exp.Expression] = {}

    def _names(self) -> list[str]:
        tables = self.catalog.tables
        return [*tables, *(RAW + t for t, d in tables.items() if d.watermark), *self.catalog.views]

    def __iter__(self):
        return iter(self._names())

    def __len__(self) -> int:
        return len(self._names())

    def __contains__(self, name) -> bool:
        return name in self._names()

    def __getitem__(self, name: str) -> exp.Expression:
        if name not in self.built:
            if name in self.catalog.views:
                self.built[name] = parse(self.catalog.views[name])
            else:
                table = self.catalog.tables.get(name[len(RAW) :] if name.startswith(RAW) else name)
                if table is None:
                    raise KeyError(name)
                self.built.update(_table_queries(table))
        return self.built[name]


def _table_queries(t: TableDef) -> dict[str, exp.Expression]:
    check_options(t.name, t.connector, t.options, sink=False)
    schema = ", ".join(f"{_ident(c)} {ty}" for c, ty in t.columns)
    item, own_watermark = source_sql(t.name, t.connector, t.options, schema, t.watermark)
    # timestamps pass through as the source types them: an event time must be a column the source reads
    # (tidal's watermark generators and windows work on the scan's own column), not a computed CAST
    cols = ", ".join(_ident(c) if ty in TIMES else f"CAST({_ident(c)} AS {ty}) AS {_ident(c)}" for c, ty in t.columns)
    cols = cols or "*"
    raw = f"SELECT {cols} FROM {item}"
    if t.watermark is None or own_watermark:
        return {t.name: parse(raw)}
    column, interval = t.watermark
    hidden = RAW + t.name
    top = (
        f"SELECT * FROM max_diff_watermark(source => TABLE({hidden}), time_field => DESCRIPTOR({_ident(column)}), "
        f"offset => {interval})"
    )
    return {hidden: parse(raw), t.name: parse(top)}


def _ident(name: str) -> str:
    return exp.to_identifier(name).sql(dialect="duckdb")


def _table_def(tree: exp.Expression) -> TableDef:
    if not isinstance(tree, exp.Create) or tree.kind != "TABLE":
        raise PlanError("expected CREATE TABLE name (columns...) WITH ('connector' = ...)")
    if tree.expression is not None:
        raise PlanError("CREATE TABLE ... AS SELECT is not supported; use CREATE VIEW ... AS SELECT")
    schema = tree.this
    target = schema.this if isinstance(schema, exp.Schema) else schema
    name = target.name.lower()
    columns, watermark, primary_key = [], None, ()
    for item in schema.expressions if isinstance(schema, exp.Schema) else []:
        if isinstance(item, exp.ColumnDef):
            if item.kind is None or item.args.get("constraints"):
                extra = item.sql(dialect="risingwave")
                raise PlanError(
                    f"table {name}: column {extra!r}: computed columns and column constraints are not supported"
                )
            columns.append((item.name, _type_sql(name, item)))
        elif isinstance(item, exp.WatermarkColumnConstraint):
            watermark = _watermark(name, item)
        elif isinstance(item, exp.PrimaryKey):
            primary_key = tuple(e.name for e in item.expressions)  # (NOT ENFORCED, as Flink's)
        else:
            raise PlanError(f"table {name}: {item.sql(dialect='risingwave')!r} is not supported in CREATE TABLE")
    names = [c.lower() for c, _ in columns]
    if len(set(names)) != len(names):
        raise PlanError(f"table {name}: a column is declared twice")
    if watermark is not None and watermark[0].lower() not in names:
        raise PlanError(f"table {name}: WATERMARK FOR {watermark[0]}: no such column; columns: {', '.join(names)}")
    options = {}
    for prop in tree.args.get("properties").expressions if tree.args.get("properties") else []:
        if not isinstance(prop, exp.Property) or not isinstance(prop.args.get("value"), exp.Literal):
            raise PlanError(f"table {name}: {prop.sql(dialect='risingwave')!r}: WITH takes 'key' = 'value' pairs")
        key = prop.this.name if isinstance(prop.this, exp.Literal | exp.Identifier) else prop.name
        options[key.lower()] = prop.args["value"].name
    missing = [k for k in primary_key if k.lower() not in names]
    if missing:
        raise PlanError(f"table {name}: PRIMARY KEY ({', '.join(missing)}): no such column")
    return TableDef(name, connector_of(name, options), options, columns, watermark, primary_key)


def _type_sql(table: str, col: exp.ColumnDef) -> str:
    kind = col.kind
    if kind.this in (exp.DataType.Type.TIMESTAMP, exp.DataType.Type.TIMESTAMPTZ, exp.DataType.Type.TIMESTAMPLTZ):
        params = kind.expressions
        if params and int(params[0].name) > 6:
            raise PlanError(
                f"table {table}: column {col.name}: {kind.sql('duckdb')} is not supported (tidal keeps microseconds)"
            )
        tz = kind.this != exp.DataType.Type.TIMESTAMP
        return "TIMESTAMPTZ" if tz else "TIMESTAMP"
    return kind.sql(dialect="duckdb")


def _watermark(table: str, item: exp.WatermarkColumnConstraint) -> tuple[str, str]:
    column, expr = item.this.name, item.expression
    if isinstance(expr, exp.Column) and expr.name == column:
        return column, "INTERVAL '0' SECOND"
    if isinstance(expr, exp.Sub) and isinstance(expr.this, exp.Column) and expr.this.name == column:
        if isinstance(expr.expression, exp.Interval):
            return column, expr.expression.sql(dialect="duckdb")
    raise PlanError(
        f"table {table}: WATERMARK FOR {column} AS {expr.sql(dialect='risingwave')} is not supported; "
        f"tidal takes WATERMARK FOR {column} AS {column} - INTERVAL '5' SECOND (a bounded delay) or AS {column}"
    )


def located(exc: Exception, where: str) -> Exception:
    """``exc`` (a tidal error) with its message prefixed by ``where`` (a file and line)."""
    text = str(exc)
    new = type(exc)(f"{where}: {text}")
    return new


def split(script: str) -> list[Statement]:
    """The statements of ``script``, split at ``;`` (not inside strings or comments)."""
    try:
        tokens = Tidal().tokenize(script)
    except TokenError as exc:
        raise SqlSyntaxError(f"syntax error: {exc}") from None
    out, current = [], []
    for tok in [*tokens, None]:
        if tok is None or tok.token_type == TokenType.SEMICOLON:
            if current:
                text = script[current[0].start : current[-1].end + 1]
                try:
                    out.append(classify(text, current, current[0].line))
                except PlanError as exc:
                    raise located(exc, f"line {current[0].line}") from None
            current = []
        else:
            current.append(tok)
    return out


def _word(tok) -> str:
    return tok.text.upper() if tok is not None else ""


def classify(text: str, tokens: list, line: int = 1) -> Statement:
    """What a statement is, from its first words."""
    words = [_word(t) for t in tokens[:8]]
    base = tokens[0].start

    def rest_after(i: int) -> str:
        return text[tokens[i].start - base :].strip() if i < len(tokens) else ""

    def name_at(i: int) -> str:
        if (
            i >= len(tokens)
            or tokens[i].token_type not in (TokenType.VAR, TokenType.IDENTIFIER)
            and not tokens[i].text.isidentifier()
        ):
            raise PlanError(f"expected a table name after {' '.join(words[:i])}")
        if i + 1 < len(tokens) and tokens[i + 1].token_type == TokenType.DOT:
            raise PlanError(f"catalog and database qualified names ({tokens[i].text}.…) are not supported")
        return tokens[i].text.lower()

    if words[0] == "CREATE":
        i = 1
        while i < len(words) and words[i] in ("OR", "REPLACE", "TEMPORARY", "TEMP"):
            i += 1
        replace = "REPLACE" in words[:i]
        if words[i : i + 1] == ["TABLE"]:
            return Statement("create table", text, line, replace=replace)
        if words[i : i + 1] == ["VIEW"]:
            i += 1
            if_exists = words[i : i + 3] == ["IF", "NOT", "EXISTS"]
            i += 3 if if_exists else 0
            name = name_at(i)
            if i + 1 >= len(tokens) or _word(tokens[i + 1]) != "AS":
                raise PlanError(
                    f"CREATE VIEW {name} AS SELECT ...: expected AS (column lists on views are not supported)"
                )
            body = rest_after(i + 2)
            return Statement("create view", text, line, name=name, body=body, replace=replace, if_exists=if_exists)
        raise PlanError(f"CREATE {' '.join(words[i : i + 1])} is not supported (CREATE TABLE and CREATE VIEW are)")
    if words[0] == "INSERT":
        if words[1:2] != ["INTO"]:
            raise PlanError(
                f"INSERT {words[1] if len(words) > 1 else ''} is not supported; write INSERT INTO table SELECT ..."
            )
        name = name_at(2)
        if len(tokens) > 3 and tokens[3].token_type == TokenType.L_PAREN:
            raise PlanError(f"INSERT INTO {name} (columns...) is not supported: select the table's columns in order")
        return Statement("insert", text, line, name=name, body=rest_after(3))
    if words[0] == "DROP":
        if words[1:2] not in (["TABLE"], ["VIEW"]):
            raise PlanError(f"DROP {' '.join(words[1:2])} is not supported (DROP TABLE and DROP VIEW are)")
        if_exists = words[2:4] == ["IF", "EXISTS"]
        return Statement("drop", text, line, name=name_at(4 if if_exists else 2), if_exists=if_exists)
    if words[:2] == ["SHOW", "TABLES"]:
        return Statement("show tables", text, line)
    if words[0] == "EXPLAIN":
        # (the tokenizer keeps EXPLAIN's rest as one token: the body is the text after the word)
        return Statement("explain", text, line, body=text[tokens[0].end - base + 1 :].strip())
    if words[0] in ("SELECT", "WITH", "VALUES", "FROM", "("):
        return Statement("query", text, line, body=text)
    raise PlanError(
        f"{words[0]} statements are not supported; tidal runs CREATE TABLE, CREATE VIEW, DROP, "
        "INSERT INTO, SHOW TABLES, EXPLAIN and queries"
    )
