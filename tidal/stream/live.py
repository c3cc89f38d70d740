"""Streams over growing input: :func:`from_tail` (a file another process appends to) and
:func:`from_stdin` (standard input), read as they are written (:mod:`tidal.io.live`).

Rows become events at their time field (points, intervals with ``end=``, or start edges with
``kind="start"``) in arrival order, sorted by the engine's Impatience sort with
``reorder_latency`` (rows later than that are handled by ``disorder``: ``"drop"``, ``"adjust"`` or
``"throw"``), so output flows while input is still arriving. A batch goes out ``latency`` seconds
after its first line arrived, or when it holds ``batch_rows`` lines. The source is a
:class:`~tidal.core.feed.Feed`: ``run_durable`` stores its byte offset and a restart continues with
the next line (standard input cannot be resumed).
"""

from __future__ import annotations

import pyarrow as pa

from ..core.errors import InputError
from ..io.disorder import arrival_batch
from ..io.files import file_format
from ..io.live import DEFAULT_LATENCY, MAX_ROWS, LineParser, TextFeed, input_schema, live_bytes
from ..plan.nodes import Source
from ..plan.properties import Properties
from .disordered import DisorderedStream
from .streamable import Stream


def _live(
    path: str,
    source: str,
    time,
    *,
    end,
    kind,
    format,
    stop,
    latency,
    batch_rows,
    reorder_latency,
    disorder,
    on_error,
    options,
) -> Stream:
    fmt = file_format(path, format)
    options = dict(options)
    if fmt == "tsv":
        options.setdefault("sep", "\t")
        fmt = "csv"
    if fmt not in ("csv", "json"):
        raise InputError(f"{path}: growing input must be CSV, TSV or JSON lines, not {fmt} (not supported)")
    schema = input_schema(path, fmt, options, {"kind": source, "stop": stop})
    for name, role in ((time, "time"), (end, "end")):
        if name is not None and name not in schema.names:
            raise InputError(f"{path}: {role} field {name!r} not found; the input has fields {schema.names}")
    parser = LineParser(path, fmt, schema, list(schema.names), options, on_error)

    def to_messages(table: pa.Table, first_row: int) -> list:
        if table.num_rows == 0:
            return []
        rb = table.combine_chunks().to_batches()[0]
        return [arrival_batch(rb, time, end=end, kind=kind, offset=first_row)]

    feed = TextFeed(
        live_bytes(path, source),
        parser,
        to_messages,
        stop="eof" if source == "stdin" else stop,
        latency=latency,
        max_rows=batch_rows,
    )
    props = (
        Properties(start_edge_only=True)
        if kind == "start"
        else Properties(constant_duration=1)
        if end is None
        else Properties()
    )
    what = "standard input" if source == "stdin" else f"tail {path!r} (stop={stop})"
    node = Source(None, schema, props, f"{what}, {kind} events in arrival order, latency {latency} s", feed=feed)
    return DisorderedStream(node).to_stream(reorder_latency=reorder_latency, disorder=disorder)


def from_tail(
    path: str,
    time: str,
    *,
    end: str | None = None,
    kind: str = "point",
    format: str | None = None,
    stop: str = "eof",
    latency: float = DEFAULT_LATENCY,
    batch_rows: int = MAX_ROWS,
    reorder_latency: int = 0,
    disorder: str = "drop",
    on_error: str = "fail",
    **options,
) -> Stream:
    """A file another process appends to, read as it grows (CSV, TSV or JSON lines, by extension
    or ``format``; ``options`` are read_csv's). ``stop="eof"`` ends at the file's current end,
    ``stop="never"`` follows it until the query is stopped."""
    return _live(
        path,
        "tail",
        time,
        end=end,
        kind=kind,
        format=format,
        stop=stop,
        latency=latency,
        batch_rows=batch_rows,
        reorder_latency=reorder_latency,
        disorder=disorder,
        on_error=on_error,
        options=options,
    )


def from_stdin(
    time: str,
    *,
    format: str = "csv",
    end: str | None = None,
    kind: str = "point",
    latency: float = DEFAULT_LATENCY,
    batch_rows: int = MAX_ROWS,
    reorder_latency: int = 0,
    disorder: str = "drop",
    on_error: str = "fail",
    **options,
) -> Stream:
    """Standard input, read as it arrives, until it closes."""
    return _live(
        f"stdin.{format}",
        "stdin",
        time,
        end=end,
        kind=kind,
        format=format,
        stop="eof",
        latency=latency,
        batch_rows=batch_rows,
        reorder_latency=reorder_latency,
        disorder=disorder,
        on_error=on_error,
        options=options,
    )
