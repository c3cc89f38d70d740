"""``redis(url => 'redis://host:port/0', stream => 'key', ...)`` in tidal's SQL: a Redis Stream as a source.

Arguments: ``format`` (``'json'``: one field of each entry holds a JSON object, ``field => 'name'``
picks it when an entry has several; ``'fields'``: the entry's fields are the columns), ``schema =>
'ts TIMESTAMP, user VARCHAR, ...'`` (else inferred from the first entries), ``time_field =>
DESCRIPTOR(ts)`` with ``max_delay => INTERVAL ...`` (the event time and its watermark, as
``max_diff_watermark`` declares them; the source can also be wrapped in ``max_diff_watermark``),
``start => 'earliest'|'latest'``, ``stop => 'never'|'latest'|'<entry id>'``, ``dead_letter =>
'path'``. The stream is a :class:`~tidal.io.redis_streams.RedisStreamFeed`: entries in arrival order,
sorted by the engine under the watermark's delay like a file's rows; the last entry id delivered
is the source's position in a durable run. Column pruning and pushed filters apply: the decoder
reads only the columns the query uses and drops rows the pushed filter rejects.
"""

from __future__ import annotations

import pyarrow as pa

from ..core.errors import PlanError
from ..core.time import EARLIEST, LATEST
from ..io.redis_streams import RedisStreamFeed
from ..plan.nodes import Source
from ..plan.nodes import relational as rel
from ..plan.properties import Properties
from ..stream.disordered import DisorderedStream
from ..stream.streamable import Stream
from .expressions import pushable_predicate

FORMAT = "redis"
NO_WATERMARK_LATENCY = (
    LATEST - EARLIEST
)  # event time without a watermark: nothing is late (planner.NO_WATERMARK_LATENCY)


def feed_for(opts: dict, schema: pa.Schema | None = None, **extra) -> RedisStreamFeed:
    return RedisStreamFeed(
        opts["url"], opts["stream"], format=opts.get("format", "json"), field=opts.get("field"), schema=schema,
        start=opts.get("start", "earliest"), stop=opts.get("stop", "never"), **extra,
    )  # fmt: skip


def redis_source(translator, scan, time) -> Stream:
    """The stream plan of a redis Scan: the feed (only the used columns), sorted under the watermark."""
    opts = dict(scan.options)
    if list(scan.names) != list(scan.file_columns):
        raise PlanError("redis(...): renamed columns are not supported")
    if time.generator == "percentile":
        raise PlanError("percentile_watermark over redis(...) is not supported; use max_delay or max_diff_watermark")
    schema = pa.schema([pa.field(c, t) for c, t in zip(scan.file_columns, scan.types, strict=True)])
    predicate = pushable_predicate(scan.predicate) if scan.predicate is not None else None
    feed = feed_for(
        opts, schema, time=time.column, kind="start", on_error=translator.on_error, stats=translator.stats,
        predicate=predicate, dead_letter=opts.get("dead_letter") or getattr(translator, "dead_letter", None),
    )  # fmt: skip
    detail = f"{scan.describe()}; {feed.label}, entries after the last id delivered"
    if time.column is None:
        detail += "; rows as start edges at time 0"
        return Stream(Source(None, schema, Properties(start_edge_only=True), detail, feed=feed))
    latency = int(dict(time.params).get("offset", 0)) if time.generator == "max_diff" else NO_WATERMARK_LATENCY
    detail += f"; rows as start edges at event time {time.column}, in arrival order"
    node = Source(None, schema, Properties(start_edge_only=True), detail, feed=feed)
    adjust = translator.late == "adjust" and time.generator is not None
    out = DisorderedStream(node).to_stream(reorder_latency=latency, disorder="adjust" if adjust else "drop")
    if adjust:
        out = Stream(rel.AdjustedTime(out.node, time.column))
    return out
