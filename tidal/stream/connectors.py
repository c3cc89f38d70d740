"""Streams from external systems: ``from_postgres`` (a bounded table) and ``from_redis`` (a Redis Stream, never ending).

The readers live in :mod:`tidal.io` (``postgres``, ``redis_streams``); these constructors wrap
them in a plan ``Source`` and a :class:`Stream`.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from ..core.batch import EventBatch
from ..core.messages import Completed
from ..core.time import INFINITY
from ..io.dead_letter import BadRows
from ..io.postgres import Relation, read
from ..plan.nodes import Source
from ..plan.properties import Properties
from .sources import from_arrow
from .streamable import Stream


def from_postgres(
    dsn: str,
    *,
    table: str | None = None,
    query: str | None = None,
    time=None,
    on_error: str = "fail",
    dead_letter: str | None = None,
    **options,
) -> Stream:
    """The rows of a PostgreSQL ``table`` (or the result of ``query``), read through psycopg 3.

    Without ``time`` the rows are relational, as in SQL: start edges at time 0, read when the
    stream runs. With ``time`` (a field, or a lambda) they are events at that time, sorted by it,
    and ``options`` are :func:`~tidal.stream.sources.from_arrow`'s (``kind``, ``end``, ...).
    Malformed rows (dates and timestamps tidal cannot hold) raise an error naming the table and
    the row's primary key, or with ``on_error="skip"`` are counted and written to ``dead_letter``.
    """
    relation = Relation(dsn, table, query)
    bad = BadRows(on_error, dead_letter)
    if time is not None:
        rows = read(relation, bad=bad)
        if isinstance(time, str) and time in rows.column_names:
            rows = rows.sort_by(time)
        return from_arrow(rows, time, **options)
    if options:
        raise TypeError(f"from_postgres without time takes no options {sorted(options)}")
    columns = relation.columns()
    schema = pa.schema([pa.field(c.name, c.type) for c in columns])

    def open_messages():
        rows = read(relation, bad=bad)
        for rb in rows.to_batches(max_chunksize=65_536):
            n = rb.num_rows
            cols = {name: rb.column(i) for i, name in enumerate(rb.schema.names)}
            yield EventBatch(np.zeros(n, np.int64), np.full(n, INFINITY, np.int64), cols)
        yield Completed()

    detail = f"{relation.label()}; rows as start edges at time 0"
    return Stream(Source(open_messages, schema, Properties(start_edge_only=True), detail))


def from_redis(
    url: str,
    stream: str,
    *,
    time=None,
    kind: str = "point",
    format: str = "json",
    field: str | None = None,
    schema: pa.Schema | None = None,
    start: str = "earliest",
    stop: str = "never",
    disorder: str | None = None,
    reorder_latency: int | None = None,
    batch_size: int = 10_000,
    block_ms: int = 250,
    on_error: str = "fail",
    dead_letter: str | None = None,
) -> Stream:
    """The entries of the Redis Stream ``stream`` at ``url``, read with XREAD (:mod:`tidal.io.redis_streams`).

    Each entry is a row (``format="json"``: a field holding a JSON object, ``field`` naming it when
    the entry has several; ``"fields"``: the entry's fields); the columns are ``schema`` or inferred
    from the first entries. With ``time`` (a column) rows are events at that time (``kind``
    ``"point"`` or ``"start"``), which must not go back unless ``disorder`` (``"drop"``,
    ``"adjust"``, ``"throw"``) sorts them under ``reorder_latency``; without it they are start edges
    at time 0. ``stop``: ``"never"`` (until interrupted), ``"latest"`` (the last entry at the first
    open) or an entry id. A durable run (``run_durable``) stores the last entry id delivered with
    each checkpoint and continues after it. Malformed entries raise an error naming the stream and
    the entry id, or with ``on_error="skip"`` are counted and written to ``dead_letter``.
    """
    from ..io.redis_streams import RedisStreamFeed
    from .disordered import DisorderedStream

    if disorder is not None and time is None:
        raise TypeError("from_redis: disorder sorts by time; give time=")
    feed = RedisStreamFeed(
        url, stream, format=format, field=field, schema=schema, time=time, kind=kind if time else "start",
        ordered=disorder is None, start=start, stop=stop, batch_size=batch_size, block_ms=block_ms,
        on_error=on_error, dead_letter=dead_letter,
    )  # fmt: skip
    payload = feed.schema()
    if time is None or kind == "start":
        props = Properties(start_edge_only=True)
    else:
        props = Properties(constant_duration=1)
    shape = "start edges at time 0" if time is None else f"{kind} events at {time}"
    detail = f"{feed.label} ({format}, start {start}, stop {stop}); {shape}"
    node = Source(None, payload, props, detail, feed=feed)
    if disorder is not None:
        return DisorderedStream(node).to_stream(reorder_latency=reorder_latency or 0, disorder=disorder)
    return Stream(node)
