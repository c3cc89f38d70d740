"""Flink-style ``WITH ('connector' = ..., ...)`` options mapped onto tidal's sources and sinks.

A table declared with ``CREATE TABLE`` (:mod:`tidal.sql.ddl`) is read through one of tidal's table
functions and written through one of the command line's outputs:

=============  ==========================================  ===========================================
connector      read as                                     written as (``INSERT INTO``)
=============  ==========================================  ===========================================
filesystem     ``read_csv`` / ``read_json`` /              the final answer as CSV, JSON lines or
               ``read_parquet``, or ``tail(...)`` with     Parquet; with ``'changelog' = 'true'`` every
               ``'follow' = 'true'``                       change (``live-csv`` / ``stream-json``)
kafka          ``kafka(...)`` (its watermark is the        ``kafka://brokers/topic``: each change a
               feed's own, per partition)                  JSON message
postgres       ``postgres(dsn, table)``                    ``postgresql://...?table=t``: the final
(jdbc)                                                     state kept in the table
print          (not a source)                              standard output, as a table (or ``format``)
=============  ==========================================  ===========================================

Option names follow Flink's where Flink has one (``path``, ``format``, ``topic``,
``properties.bootstrap.servers``, ``scan.startup.mode``, ``url``, ``table-name``...). An option
tidal does not know is an error that lists the ones it does, never ignored.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

from ..core.errors import PlanError

# connector -> (options it takes, options it needs)
SOURCE_OPTIONS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "filesystem": (("path", "format", "csv.field-delimiter", "csv.null-literal", "follow"), ("path",)),
    "kafka": (
        (
            "topic",
            "properties.bootstrap.servers",
            "properties.group.id",
            "format",
            "scan.startup.mode",
            "scan.bounded.mode",
            "scan.bounded.specific-offsets",
            "avro.schema",
            "dead-letter",
        ),
        ("topic", "properties.bootstrap.servers"),
    ),
    "postgres": (("url", "table-name", "query", "username", "password"), ("url",)),
}
SINK_OPTIONS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "filesystem": (("path", "format", "changelog"), ("path",)),
    "kafka": (("topic", "properties.bootstrap.servers", "format"), ("topic", "properties.bootstrap.servers")),
    "postgres": (("url", "table-name", "username", "password"), ("url", "table-name")),
    "print": (("format", "changelog"), ()),
}
CONNECTORS = ("filesystem", "kafka", "postgres", "jdbc", "print")
FILE_FORMATS = {"csv": "read_csv", "json": "read_json", "parquet": "read_parquet"}
STARTUP = {"earliest-offset": "earliest", "latest-offset": "latest", "group-offsets": "committed"}
BOUNDED = {"unbounded": "never", "latest-offset": "latest"}


def connector_of(table: str, options: dict[str, str]) -> str:
    """The connector named by ``'connector'`` (``jdbc`` is PostgreSQL's through a ``jdbc:postgresql:`` URL)."""
    name = options.get("connector")
    if name is None:
        raise PlanError(f"table {table}: WITH ('connector' = ...) is missing; connectors: {', '.join(CONNECTORS)}")
    if name not in CONNECTORS:
        raise PlanError(
            f"table {table}: unknown connector {name!r} (not supported); connectors: {', '.join(CONNECTORS)}"
        )
    return "postgres" if name == "jdbc" else name


def check_options(table: str, connector: str, options: dict[str, str], sink: bool) -> None:
    """Refuse options the connector does not take (listing those it does) and missing required ones."""
    table_of = SINK_OPTIONS if sink else SOURCE_OPTIONS
    role = "sink" if sink else "source"
    if connector not in table_of:
        takes = ", ".join(sorted(table_of))
        raise PlanError(f"table {table}: connector {connector!r} cannot be a {role} (not supported); {role}s: {takes}")
    allowed, required = table_of[connector]
    given = [k for k in options if k != "connector"]
    unknown = [k for k in given if k not in allowed]
    if unknown:
        raise PlanError(
            f"table {table}: connector {connector!r} has no option {', '.join(repr(k) for k in unknown)} as a {role}; "
            f"its options are {', '.join(repr(k) for k in ('connector', *allowed))}"
        )
    missing = [k for k in required if k not in options]
    if missing:
        raise PlanError(f"table {table}: connector {connector!r} needs {', '.join(repr(k) for k in missing)}")


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _file_format(table: str, options: dict[str, str]) -> str:
    fmt = options.get("format")
    if fmt is None:
        path = options["path"].lower()
        fmt = next((f for f in FILE_FORMATS if path.endswith(f".{f}") or path.endswith(f".{f}l")), "csv")
    if fmt not in FILE_FORMATS:
        raise PlanError(f"table {table}: format {fmt!r} is not supported by filesystem; formats: csv, json, parquet")
    return fmt


def _dsn(table: str, options: dict[str, str]) -> str:
    url = options["url"]
    if url.startswith("jdbc:"):
        url = url[len("jdbc:") :]
    parts = urlsplit(url)
    if parts.scheme not in ("postgresql", "postgres"):
        raise PlanError(f"table {table}: url must be postgresql://host:port/db (or jdbc:postgresql://...), got {url!r}")
    if "username" in options:
        user = quote(options["username"], safe="")
        if "password" in options:
            user += ":" + quote(options["password"], safe="")
        parts = parts._replace(netloc=f"{user}@{parts.netloc.rpartition('@')[2]}")
    return urlunsplit(parts)


def source_sql(table: str, connector: str, options: dict[str, str], schema: str, watermark) -> tuple[str, bool]:
    """The FROM item that reads the table, and whether it declares the watermark itself (Kafka's).

    ``schema`` is the declared columns as ``'a BIGINT, ts TIMESTAMP'``; ``watermark`` is
    ``(column, interval SQL)`` or None."""
    if connector == "filesystem":
        fmt = _file_format(table, options)
        args = [f"path => {_quote(options['path'])}"]
        if "csv.field-delimiter" in options:
            args.append(f"sep => {_quote(options['csv.field-delimiter'])}")
        if "csv.null-literal" in options:
            args.append(f"nullstr => {_quote(options['csv.null-literal'])}")
        if fmt != "csv" and len(args) > 1:
            raise PlanError(f"table {table}: csv.* options apply to format 'csv', not {fmt!r}")
        follow = options.get("follow", "false").lower()
        if follow not in ("true", "false"):
            raise PlanError(f"table {table}: 'follow' is 'true' (read the file as it grows) or 'false'")
        if follow == "true":
            if fmt == "parquet":
                raise PlanError(f"table {table}: 'follow' reads CSV or JSON lines, not parquet (not supported)")
            return f"tail({', '.join(args)}, format => {_quote(fmt)}, stop => 'never')", False
        return f"{FILE_FORMATS[fmt]}({', '.join(args)})", False
    if connector == "kafka":
        args = [
            f"brokers => {_quote(options['properties.bootstrap.servers'])}",
            f"topic => {_quote(options['topic'])}",
            f"format => {_quote(options.get('format', 'json'))}",
        ]
        if schema:
            args.append(f"schema => {_quote(schema)}")
        if "properties.group.id" in options:
            args.append(f"group => {_quote(options['properties.group.id'])}")
        if "scan.startup.mode" in options:
            mode = options["scan.startup.mode"]
            if mode not in STARTUP:
                raise PlanError(f"table {table}: scan.startup.mode is one of {', '.join(STARTUP)}, got {mode!r}")
            args.append(f"start => {_quote(STARTUP[mode])}")
        args.extend(_kafka_stop(table, options))
        if "avro.schema" in options:
            args.append(f"avro_schema => {_quote(options['avro.schema'])}")
        if "dead-letter" in options:
            args.append(f"dead_letter => {_quote(options['dead-letter'])}")
        if watermark is not None:
            args.append(f"time_field => DESCRIPTOR({watermark[0]}), max_delay => {watermark[1]}")
        return f"kafka({', '.join(args)})", True
    what = f"query => {_quote(options['query'])}" if "query" in options else None
    if "table-name" in options:
        if what:
            raise PlanError(f"table {table}: give 'table-name' or 'query', not both")
        what = f"table => {_quote(options['table-name'])}"
    if what is None:
        raise PlanError(f"table {table}: connector 'postgres' needs 'table-name' (or 'query')")
    return f"postgres(dsn => {_quote(_dsn(table, options))}, {what})", False


def _kafka_stop(table: str, options: dict[str, str]) -> list[str]:
    mode = options.get("scan.bounded.mode")
    offsets = options.get("scan.bounded.specific-offsets")
    if mode is None and offsets is None:
        return []
    if mode in BOUNDED and offsets is None:
        return [f"stop => {_quote(BOUNDED[mode])}"]
    if mode in (None, "specific-offsets") and offsets is not None:
        # Flink's 'partition:0,offset:42;partition:1,offset:300' -> tidal's '0:42,1:300'
        stops = []
        for part in offsets.split(";"):
            fields = dict(f.split(":", 1) for f in part.split(",") if ":" in f)
            if set(fields) != {"partition", "offset"}:
                raise PlanError(
                    f"table {table}: scan.bounded.specific-offsets is 'partition:0,offset:42;partition:1,offset:300', "
                    f"got {offsets!r}"
                )
            stops.append(f"{int(fields['partition'])}:{int(fields['offset'])}")
        return [f"stop => {_quote(','.join(stops))}"]
    raise PlanError(
        f"table {table}: scan.bounded.mode is one of {', '.join((*BOUNDED, 'specific-offsets'))} "
        f"(with scan.bounded.specific-offsets), got {mode!r}"
    )


@dataclass(frozen=True)
class SinkTarget:
    """Where ``INSERT INTO`` writes: the command line's ``--output`` and ``--format``."""

    output: str | None  # None: standard output
    format: str | None  # one of tidal.cli.main.FORMATS; None: the output's default


def sink_target(table: str, connector: str, options: dict[str, str], key: tuple[str, ...] = ()) -> SinkTarget:
    """Where INSERT INTO writes; ``key`` (the table's PRIMARY KEY) keys a PostgreSQL table's rows."""
    if connector in ("filesystem", "print"):
        fmt = options.get("format", "csv" if connector == "filesystem" else "table")
        changelog = options.get("changelog", "false").lower()
        if changelog not in ("true", "false"):
            raise PlanError(f"table {table}: 'changelog' is 'true' (every change as it happens) or 'false'")
        formats = {"csv": "batch-csv", "json": "batch-json", "parquet": "parquet", "table": "batch-table"}
        if changelog == "true":
            formats = {"csv": "live-csv", "json": "stream-json"}
        if connector == "filesystem":
            formats.pop("table", None)
        else:
            formats.pop("parquet", None)
        if fmt not in formats:
            raise PlanError(
                f"table {table}: format {fmt!r} is not supported by the {connector} sink"
                f"{' with changelog' if changelog == 'true' else ''}; formats: {', '.join(formats)}"
            )
        return SinkTarget(options.get("path"), formats[fmt])
    if connector == "kafka":
        if options.get("format", "json") != "json":
            raise PlanError(
                f"table {table}: the kafka sink writes JSON changes; format {options['format']!r} is not supported"
            )
        return SinkTarget(f"kafka://{options['properties.bootstrap.servers']}/{options['topic']}", None)
    parts = urlsplit(_dsn(table, options))
    params = [*parse_qsl(parts.query), ("table", options["table-name"])]
    if key:
        params.append(("key", ",".join(key)))
    query = urlencode(params)
    return SinkTarget(urlunsplit(parts._replace(query=query)), None)
