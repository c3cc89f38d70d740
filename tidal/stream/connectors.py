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
from ..io.postgres import BadRows, Relation, read
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
