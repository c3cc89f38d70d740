"""Message formats of the Kafka source: message values (bytes) to Arrow rows.

``json`` (one object per message), ``csv`` (one line per message, no header), ``avro`` (a
schemaless Avro datum written with the given Avro schema) and ``raw`` (the value's bytes as a
``value`` column). Values are decoded a batch at a time with pyarrow's readers; when a batch
fails, its messages are decoded one by one so that the error names the bad one (the caller
knows its topic, partition and offset).
"""

from __future__ import annotations

import io
import json

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.json as pajson

from ..core.errors import InputError

FORMATS = ("json", "csv", "avro", "raw")


class MalformedMessage(Exception):
    """A message that does not decode: ``index`` is its position in the batch given to ``decode``."""

    def __init__(self, index: int, reason: str):
        super().__init__(reason)
        self.index = index
        self.reason = reason


def _avro_type(t) -> pa.DataType:
    if isinstance(t, list):  # a union: ["null", x] is a nullable x
        rest = [x for x in t if x != "null"]
        if len(rest) != 1:
            raise InputError(f'avro union {t} is not supported (only ["null", type])')
        return _avro_type(rest[0])
    if isinstance(t, dict):
        logical = t.get("logicalType")
        if logical == "timestamp-micros":
            return pa.timestamp("us")
        if logical == "timestamp-millis":
            return pa.timestamp("ms")
        if logical == "date":
            return pa.date32()
        if t.get("type") == "array":
            return pa.list_(_avro_type(t["items"]))
        return _avro_type(t["type"])
    simple = {
        "string": pa.string(),
        "int": pa.int32(),
        "long": pa.int64(),
        "float": pa.float32(),
        "double": pa.float64(),
        "boolean": pa.bool_(),
        "bytes": pa.binary(),
    }
    if t not in simple:
        raise InputError(f"avro type {t!r} is not supported")
    return simple[t]


def avro_arrow_schema(avro_schema: dict) -> pa.Schema:
    if avro_schema.get("type") != "record":
        raise InputError("an avro schema for kafka must be a record")
    return pa.schema([pa.field(f["name"], _avro_type(f["type"])) for f in avro_schema["fields"]])


class Decoder:
    """Decodes message values of one format into Arrow tables of ``schema``."""

    def __init__(self, fmt: str, schema: pa.Schema | None = None, avro_schema: dict | str | None = None):
        if fmt not in FORMATS:
            raise InputError(f"kafka format must be one of {', '.join(FORMATS)}, got {fmt!r}")
        self.format = fmt
        self.avro_schema = None
        if fmt == "avro":
            if avro_schema is None:
                raise InputError("kafka format 'avro' needs the writer's Avro schema (avro_schema=...)")
            from fastavro import parse_schema

            raw = json.loads(avro_schema) if isinstance(avro_schema, str) else avro_schema
            self.avro_schema = parse_schema(raw)
            schema = schema or avro_arrow_schema(raw)
        if fmt == "raw":
            schema = pa.schema([pa.field("value", pa.binary())])
        self.schema = schema

    def infer(self, sample: list[bytes]) -> pa.Schema:
        """The schema of a sample of messages (json and csv without a given schema)."""
        if self.schema is not None:
            return self.schema
        if not sample:
            raise InputError(f"cannot infer a {self.format} schema from an empty topic: give the schema")
        if self.format == "json":
            table = pajson.read_json(io.BytesIO(b"\n".join(sample)), parse_options=_json_options(None))
        else:
            table = pacsv.read_csv(io.BytesIO(b"\n".join(sample)), read_options=_csv_read(None))
        self.schema = table.schema
        return self.schema

    def decode(self, values: list[bytes]) -> pa.Table:
        if not values:
            return self.schema.empty_table()
        try:
            return self._decode(values)
        except MalformedMessage:
            raise
        except Exception:  # noqa: BLE001 - find the message that broke the batch
            pass
        for i, v in enumerate(values):
            try:
                self._decode([v])
            except MalformedMessage as exc:
                raise MalformedMessage(i, exc.reason) from None
            except Exception as exc:  # noqa: BLE001 - pyarrow's reader errors name no message
                raise MalformedMessage(i, f"malformed {self.format}: {exc}") from None
        raise MalformedMessage(0, f"malformed {self.format} batch")  # each alone decodes: not expected

    def _decode(self, values: list[bytes]) -> pa.Table:
        if self.format == "raw":
            return pa.table({"value": pa.array(values, pa.binary())})
        if self.format == "avro":
            return self._avro(values)
        if None in values:
            raise MalformedMessage(values.index(None), "the message has no value (a tombstone)")
        data = b"\n".join(values) + b"\n"
        if data.count(b"\n") != len(values):  # messages holding line breaks
            if self.format == "json":  # in valid JSON a raw line break is only ever whitespace
                data = b"\n".join(v.replace(b"\r", b" ").replace(b"\n", b" ") for v in values) + b"\n"
            else:
                for i, v in enumerate(values):
                    if b"\n" in v.rstrip(b"\r\n"):
                        raise MalformedMessage(i, f"a csv message must hold one line, got {v[:40]!r}")
                data = b"\n".join(v.rstrip(b"\r\n") for v in values) + b"\n"
        if self.format == "json":
            table = pajson.read_json(io.BytesIO(data), parse_options=_json_options(self.schema))
            if table.num_rows != len(values):  # a blank or whitespace-only message, say
                raise ValueError("expected one JSON object per message")
            return table.select(self.schema.names)
        table = pacsv.read_csv(
            io.BytesIO(data),
            read_options=_csv_read(self.schema),
            convert_options=pacsv.ConvertOptions(column_types=self.schema),
        )
        if table.num_rows != len(values):
            raise ValueError("row count differs from message count")
        return table

    def _avro(self, values: list[bytes]) -> pa.Table:
        from fastavro import schemaless_reader

        rows = []
        for i, v in enumerate(values):
            try:
                buf = io.BytesIO(v or b"")
                rows.append(schemaless_reader(buf, self.avro_schema, None))
                if buf.tell() != len(v or b""):
                    raise ValueError(f"{len(v) - buf.tell()} bytes left after the record")
            except Exception as exc:  # noqa: BLE001 - any decoding failure names the message
                raise MalformedMessage(i, f"malformed avro: {exc!r}") from None
        return pa.Table.from_pylist(rows, schema=self.schema)


def _json_options(schema):
    return pajson.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore" if schema else "infer")


def _csv_read(schema):
    if schema is None:
        return pacsv.ReadOptions(autogenerate_column_names=True)
    return pacsv.ReadOptions(column_names=schema.names)
