"""The ``kafka(...)`` table function: a Kafka topic as a SQL source (see :mod:`tidal.io.kafka`).

``kafka(brokers => 'host:port', topic => 't', format => 'json'|'csv'|'avro'|'raw',
time_field => DESCRIPTOR(ts), partitions => [0, 1], start => 'earliest'|'latest'|'committed',
stop => 'never'|'latest'|'0:1500,1:1500', schema => 'ts TIMESTAMP, k VARCHAR, ...',
max_delay => INTERVAL ..., group => 'g', avro_schema => '{...}', dead_letter => 'bad.json')``;
with ``--on-error skip`` malformed messages are counted and written to ``dead_letter``.

The topic becomes a :class:`~.logical.Scan` of format ``kafka`` (so column pruning and filter
pushdown apply: the decoder reads only the columns the query uses, and a pushed filter runs on
rows as they are released) and, with ``time_field``, an :class:`~.logical.EventTime` whose
watermark is the feed's own: the minimum over partitions of the largest event time read, less
``max_delay``. Rows are start edges at their event time (at time 0 without one), as the file
sources' rows are.
"""

from __future__ import annotations

import re

import pyarrow as pa
from sqlglot import exp

from ..core.errors import PlanError
from ..plan.nodes import Source
from ..plan.properties import Properties
from ..stream.streamable import Stream
from .expressions import arrow_type, pushable_predicate
from .logical.nodes import EventTime, Node, Scan

ARGS = ("brokers", "topic", "format", "time_field", "partitions", "start", "stop", "schema", "max_delay", "group",
        "avro_schema", "dead_letter")  # fmt: skip
REQUIRED = (("brokers",), ("topic",))


def parse_schema(text: str) -> pa.Schema:
    """``'a BIGINT, b VARCHAR, t TIMESTAMP'`` as an Arrow schema (SQL types as DuckDB names them)."""
    fields, depth, start = [], 0, 0
    parts = []
    for i, ch in enumerate(text):
        depth += ch == "("
        depth -= ch == ")"
        if ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    for part in parts:
        m = re.match(r"\s*(\"[^\"]+\"|\w+)\s+(.+?)\s*$", part)
        if not m:
            raise PlanError(f"kafka(...) schema: expected 'name TYPE, ...', got {part.strip()!r}")
        name = m.group(1).strip('"')
        try:
            fields.append(pa.field(name, arrow_type(exp.DataType.build(m.group(2), dialect="duckdb"))))
        except Exception as exc:  # noqa: BLE001 - sqlglot's and our type errors alike
            raise PlanError(f"kafka(...) schema: unknown type {m.group(2)!r} for {name}: {exc}") from None
    return pa.schema(fields)


def _partitions(value) -> tuple[int, ...] | None:
    if value is None:
        return None
    if isinstance(value, int | float):
        return (int(value),)
    if isinstance(value, str):
        return tuple(int(p) for p in value.split(",") if p.strip())
    if isinstance(value, exp.Array | exp.Tuple):
        return tuple(int(e.name) for e in value.expressions)
    raise PlanError(f"kafka(...) partitions: expected [0, 1, ...] or '0,1', got {value.sql()}")


def _stop(stop):
    return dict(stop) if isinstance(stop, tuple) else stop


def _text(args: dict, key: str, default: str | None = None) -> str | None:
    value = args.get(key, default)
    if value is None or isinstance(value, str):
        return value
    raise PlanError(f"kafka(...) {key} must be a quoted string, got {value.sql()}")


def kafka_scan(builder, args: dict) -> Node:
    """The logical node of ``kafka(...)``: a Scan (and EventTime when a time field is named)."""
    from ..io.kafka import KafkaFeed
    from .logical.exprs import _interval_arg

    unknown = [k for k in args if k not in ARGS]
    if unknown:
        raise PlanError(f"kafka(...) has no argument {', '.join(unknown)}; its arguments are {', '.join(ARGS)}")
    for (name,) in REQUIRED:
        if name not in args:
            raise PlanError(f"kafka(...) needs {name} => '...'")
    brokers, topic = _text(args, "brokers"), _text(args, "topic")
    fmt, start, stop = _text(args, "format", "json"), _text(args, "start", "earliest"), _text(args, "stop", "never")
    schema_text, group, avro = _text(args, "schema"), _text(args, "group"), _text(args, "avro_schema")
    dead_letter = _text(args, "dead_letter")
    partitions = _partitions(args.get("partitions"))
    if stop not in ("never", "latest"):  # '0:1500,1:1500': end offsets per partition (Spark's endingOffsets)
        try:
            stop = tuple((int(p), int(o)) for p, o in (item.split(":") for item in stop.split(",")))
        except ValueError:
            raise PlanError(
                f"kafka(...) stop must be 'never', 'latest' or 'partition:offset,...', got {stop!r}"
            ) from None
    max_delay = _interval_arg(args, "max_delay", "kafka") if "max_delay" in args else 0
    time_names = builder.descriptor_names(args.get("time_field"), "kafka")
    if len(time_names) > 1:
        raise PlanError("kafka(...) time_field names one column")
    time_field = time_names[0] if time_names else None
    options = {"brokers": brokers, "topic": topic, "format": fmt, "start": start, "stop": stop,
               "partitions": partitions, "group": group, "avro_schema": avro, "max_delay": max_delay,
               "time_field": time_field, "dead_letter": dead_letter}  # fmt: skip
    schema = parse_schema(schema_text) if schema_text else None
    probe = KafkaFeed(brokers, topic, format=fmt, schema=schema, avro_schema=avro, start=start, stop=_stop(stop),
                      group=group, partitions=list(partitions) if partitions else None)  # fmt: skip
    schema = probe.schema()
    if time_field is not None and time_field not in schema.names:
        raise PlanError(f"kafka(...) time_field {time_field} is not a field of topic {topic!r}: {schema.names}")
    scan = Scan(
        path=f"kafka://{brokers}/{topic}",
        format="kafka",
        options=tuple(sorted(options.items())),
        names=tuple(schema.names),
        scope=tuple((None, n) for n in schema.names),
        types=tuple(schema.types),
        file_columns=tuple(schema.names),
    )
    return scan if time_field is None else EventTime(scan, time_field, "kafka", (("max_delay", max_delay),))


def kafka_source(translator, scan: Scan, time) -> Stream:
    """The stream plan of a kafka Scan: a feed over the topic, decoding the columns the query uses."""
    from ..io.kafka import KafkaFeed

    opts = dict(scan.options)
    if time.generator not in (None, "kafka"):
        raise PlanError("kafka(...) declares its own watermark (per partition); give max_delay => INTERVAL ... "
                        "instead of wrapping it in a watermark function")  # fmt: skip
    schema = pa.schema([pa.field(c, t) for c, t in zip(scan.file_columns, scan.types, strict=True)])
    predicate = pushable_predicate(scan.predicate) if scan.predicate is not None else None
    time_field = opts["time_field"]
    feed = KafkaFeed(
        opts["brokers"], opts["topic"], format=opts["format"], schema=schema, avro_schema=opts["avro_schema"],
        time_field=time_field, kind="start", max_delay=opts["max_delay"],
        partitions=list(opts["partitions"]) if opts["partitions"] else None, start=opts["start"],
        stop=_stop(opts["stop"]),
        group=opts["group"], on_error=translator.on_error, stats=translator.stats, predicate=predicate,
        dead_letter=opts["dead_letter"],
    )  # fmt: skip
    if list(scan.names) != list(scan.file_columns):
        raise PlanError("kafka(...): renamed columns are not supported")  # Scan names are its file columns
    from ..stream.sources import kafka_detail

    detail = f"{scan.describe()}; {kafka_detail(feed)}"
    return Stream(Source(None, schema, Properties(start_edge_only=True), detail, feed=feed))
