"""User-facing constructors of streams from in-memory data: Arrow, pandas, numpy, Python rows."""

from __future__ import annotations

import weakref
from collections.abc import Iterable

import numpy as np
import pyarrow as pa

from ..core.batch import DEFAULT_BATCH_SIZE
from ..core.errors import InputError, PlanError
from ..io.ingress import IngressPolicy, OrderProof, arrow_messages, records_to_batches, table_batches
from ..io.sortedness import check_sorted, sorted_fields
from ..plan.nodes import Source
from ..plan.properties import Properties
from .streamable import Stream

# from_arrow's arrival batches of out-of-order rows: the sort's work per batch (a release, its Python, its cold caches
# after a pass over the batch) is paid 4x less often than with DEFAULT_BATCH_SIZE (bench/ab_disorder.py, to_arrow of
# every column, 2M rows: 41 -> 37 ms; numpy's stable argsort and take 38 ms); the rows stay in the table (no copy)
DISORDER_BATCH_SIZE = 4 * DEFAULT_BATCH_SIZE

# per immutable Arrow input (its id, while it lives) and time field: the proof that its time field is in
# order, shared by every stream over it (a later query over the same table skips the check)
_PROOFS: dict[tuple[int, str], OrderProof] = {}


def _order_proof(data, time: str) -> OrderProof:
    key = (id(data), time)
    proof = _PROOFS.get(key)
    if proof is None:
        proof = _PROOFS[key] = OrderProof()
        weakref.finalize(data, _PROOFS.pop, key, None)  # the id may be reused once the table is gone
    return proof


def _props(kind: str, end, other) -> Properties:
    if other is not None or end is not None:
        return Properties()
    if kind == "start":
        return Properties(start_edge_only=True)
    return Properties(constant_duration=1)


def _describe(origin: str, kind: str, end, other, policy: IngressPolicy) -> str:
    shape = "physical events" if other is not None else ("intervals" if end is not None else f"{kind} events")
    parts = [origin, shape, f"batch size {policy.batch_size or DEFAULT_BATCH_SIZE}"]
    if policy.punctuate_every:
        parts.append(f"punctuate every {policy.punctuate_every} ticks")
    if policy.punctuate_every_events:
        parts.append(f"punctuate every {policy.punctuate_every_events} events")
    return ", ".join(parts)


def _stream(batches, schema, origin, time, end, other, kind, policy, order: OrderProof | None = None) -> Stream:
    def open_messages():
        return arrow_messages(batches, time, end=end, other=other, kind=kind, policy=policy, order=order)

    node = Source(open_messages, schema, _props(kind, end, other), _describe(origin, kind, end, other, policy))
    return Stream(node)


def _wants_disorder(disorder, reorder_latency, sorted_: bool) -> bool:
    if disorder is None and reorder_latency is not None and sorted_:
        raise PlanError(
            "reorder_latency needs a disorder policy: pass disorder='drop', 'adjust' or 'throw' "
            "(what to do with events later than the latency)"
        )
    return disorder is not None or not sorted_


def _disordered(batches, schema, origin, time, end, other, kind, policy, disorder, reorder_latency, sorted_, size=None):
    """Out-of-order input: an arrival-ordered source, sorted here unless ``sorted=False``."""
    from ..io.disorder import disordered_messages
    from .disordered import DisorderedStream

    if other is not None:
        raise PlanError(
            "out-of-order input takes points, intervals (end=) or start edges (kind='start'); "
            "physical events (other=) with end edges must arrive in time order"
        )
    if kind not in ("point", "interval", "start"):
        raise ValueError(f"kind must be 'point', 'interval' or 'start', got {kind!r}")
    node = Source(
        lambda: disordered_messages(batches, time, end=end, kind=kind),
        schema,
        _props(kind, end, None),
        f"{origin} {'intervals' if end is not None else kind + ' events'} in arrival order (unsorted), "
        f"batch size {size or policy.batch_size or DEFAULT_BATCH_SIZE}",
    )
    defaults = {
        "disorder": disorder,
        "reorder_latency": reorder_latency,
        "punctuate_every": policy.punctuate_every,
        "punctuate_every_events": policy.punctuate_every_events,
        "on_completed": policy.on_completed,
    }
    ds = DisorderedStream(node, defaults)
    return ds.to_stream() if sorted_ else ds


def _check_field(schema: pa.Schema, spec, role: str) -> None:
    if isinstance(spec, str) and spec not in schema.names:
        raise InputError(f"{role} field {spec!r} not found; the input has fields {schema.names}")


def from_arrow(
    data: pa.Table | pa.RecordBatch | Iterable[pa.RecordBatch],
    time,
    end=None,
    *,
    other=None,
    kind: str = "point",
    punctuate_every: int | None = None,
    punctuate_every_events: int | None = None,
    flush: str = "punctuation",
    on_completed: str = "end_of_stream",
    batch_size: int | None = None,
    adaptive_batching: bool = True,
    disorder: str | None = None,
    reorder_latency: int | None = None,
    sorted: bool = True,
    sorted_by=None,
):
    """A stream over an Arrow table (or record batches), one event per row.

    ``time`` (and ``end`` for intervals) name an integer or timestamp field, or are a lambda
    over a row. ``other=`` reads physical events (``sync_time``/``other_time`` as written by
    ``to_arrow``). Numeric columns are not copied.

    Input must be in time order unless ``disorder`` is given: then it is sorted (Impatience
    sort) with punctuations at ``high watermark - reorder_latency``, and late events are
    dropped (``"drop"``), moved up to the punctuation (``"adjust"``) or raise (``"throw"``);
    see :mod:`tidal.io.disorder`. ``sorted=False`` returns a
    :class:`~tidal.stream.disordered.DisorderedStream` instead, to filter, project and
    window before sorting with ``to_stream()``. Out-of-order rows arrive in batches of
    ``batch_size`` or, by default, 320,000 rows (the sort releases once per arrival batch).

    ``sorted_by`` (a field name or a list of them) promises that within each sync time the
    rows come in that order, nulls last (Trill's snapshot-sorted property); it is checked as
    the rows come in (a row breaking it is an error) and lets joins on those fields merge
    instead of hash (see :mod:`tidal.ops.join`).
    """
    stream = _from_arrow(
        data, time, end, other, kind, punctuate_every, punctuate_every_events, flush, on_completed,
        batch_size, adaptive_batching, disorder, reorder_latency, sorted,
    )  # fmt: skip
    fields = sorted_fields(sorted_by, stream.schema)
    if fields:
        if not isinstance(stream, Stream) or not isinstance(stream.node, Source):
            raise PlanError("sorted_by applies to time-ordered input (not disorder= / sorted=False)")
        node = stream.node
        opened = node.open_messages
        return Stream(
            Source(
                lambda: check_sorted(opened(), fields),
                node.schema,
                node.props.but(sorted_by=fields),
                node.detail + f", sorted by {', '.join(fields)} within each sync time (checked)",
            )
        )
    return stream


def _as_arrow(data):
    """Tables of other libraries (polars, DuckDB relations, anything with the Arrow PyCapsule stream
    interface or ``to_arrow()``) as an Arrow table; Arrow data and iterables of batches as they are."""
    if isinstance(data, pa.Table | pa.RecordBatch):
        return data
    if hasattr(data, "__arrow_c_stream__"):
        return pa.table(data)
    if callable(getattr(data, "to_arrow", None)):
        got = data.to_arrow()
        if isinstance(got, pa.RecordBatchReader):
            got = got.read_all()
        if isinstance(got, pa.Table | pa.RecordBatch):
            return got
    if isinstance(data, str | bytes | dict) or not hasattr(data, "__iter__"):
        raise InputError(
            "from_arrow takes an Arrow table, record batches or a table with an Arrow interface, "
            f"not {type(data).__name__}"
        )
    return data


def _from_arrow(
    data, time, end, other, kind, punctuate_every, punctuate_every_events, flush, on_completed,
    batch_size, adaptive_batching, disorder, reorder_latency, sorted,
):  # fmt: skip
    policy = IngressPolicy(punctuate_every, punctuate_every_events, flush, on_completed, batch_size, adaptive_batching)
    disordered = _wants_disorder(disorder, reorder_latency, sorted)
    size = batch_size or (DISORDER_BATCH_SIZE if disordered else DEFAULT_BATCH_SIZE)
    data = _as_arrow(data)
    if isinstance(data, pa.Table | pa.RecordBatch):
        schema = data.schema
        batches = table_batches(data, size)
    else:
        materialised = list(data)
        if not materialised:
            raise InputError("from_arrow: no record batches given")
        schema = materialised[0].schema
        batches = table_batches(pa.Table.from_batches(materialised), size)
    for spec, role in ((time, "time"), (end, "end"), (other, "other")):
        _check_field(schema, spec, role)
    if disordered:
        return _disordered(
            batches, schema, "arrow", time, end, other, kind, policy, disorder, reorder_latency, sorted, size
        )
    if other is not None:
        schema = pa.schema([f for f in schema if f.name not in (time, other)])
        inner = batches
        batches = lambda: (
            rb.select([n for n in rb.schema.names if n not in (time, other)] + [time, other])  # noqa: E731
            for rb in inner()
        )
        return _stream_physical(batches, schema, time, other, policy)
    # an Arrow table is immutable: its time field's order is checked on the first complete run only (of
    # any stream over it)
    order = _order_proof(data, time) if isinstance(data, pa.Table | pa.RecordBatch) and isinstance(time, str) else None
    return _stream(batches, schema, "arrow", time, end, other, kind, policy, order)


def _stream_physical(batches, schema, time, other, policy) -> Stream:
    def open_messages():
        return _physical_messages(batches, time, other, policy)

    return Stream(Source(open_messages, schema, Properties(), _describe("arrow", "point", None, other, policy)))


def _physical_messages(batches, time, other, policy):
    from ..core.batch import EventBatch

    for msg in arrow_messages(batches, time, other=other, policy=policy):
        if isinstance(msg, EventBatch):
            msg = msg.replace(columns={k: v for k, v in msg.columns.items() if k not in (time, other)})
        yield msg


def from_pandas(df, time, end=None, **options):
    """A stream over a pandas DataFrame (converted to Arrow once; see :func:`from_arrow`)."""
    return from_arrow(pa.Table.from_pandas(df, preserve_index=False), time, end, **options)


def from_numpy(columns: dict[str, np.ndarray], time, end=None, **options):
    """A stream over a dict of equal-length numpy arrays (numeric arrays are not copied)."""
    return from_arrow(pa.table({k: pa.array(v) for k, v in columns.items()}), time, end, **options)


def from_records(
    rows: Iterable,
    time,
    end=None,
    *,
    names: list[str] | None = None,
    schema: pa.Schema | None = None,
    kind: str = "point",
    punctuate_every: int | None = None,
    punctuate_every_events: int | None = None,
    flush: str = "punctuation",
    on_completed: str = "end_of_stream",
    batch_size: int | None = None,
    adaptive_batching: bool = True,
    disorder: str | None = None,
    reorder_latency: int | None = None,
    sorted: bool = True,
):
    """A stream over Python rows: dicts, named tuples, dataclasses, or tuples with ``names=``.

    Rows are read lazily in chunks of the batch size, so ``rows`` may be a generator (then
    the stream can be run once). The payload schema is inferred from the data unless given.
    ``disorder``, ``reorder_latency`` and ``sorted`` accept out-of-order rows as in :func:`from_arrow`.
    """
    policy = IngressPolicy(punctuate_every, punctuate_every_events, flush, on_completed, batch_size, adaptive_batching)
    chunk = batch_size or DEFAULT_BATCH_SIZE
    inferred = schema
    if isinstance(rows, list | tuple) and rows:
        # a materialised list: read the first chunk now so the plan knows its fields and types
        first_batch = next(iter(records_to_batches(rows[:chunk], names, schema, chunk)()))
        inferred = schema or first_batch.schema
        for spec, role in ((time, "time"), (end, "end")):
            _check_field(first_batch.schema, spec, role)
    batches = records_to_batches(rows, names, schema, batch_size or DEFAULT_BATCH_SIZE)
    if _wants_disorder(disorder, reorder_latency, sorted):
        return _disordered(
            batches, inferred, "records", time, end, None, kind, policy, disorder, reorder_latency, sorted
        )
    return _stream(batches, inferred, "records", time, end, None, kind, policy)


def from_kafka(
    brokers: str,
    topic: str,
    format: str = "json",
    time_field: str | None = None,
    partitions: list[int] | None = None,
    start: str = "earliest",
    stop="never",
    *,
    schema: pa.Schema | None = None,
    avro_schema=None,
    kind: str = "point",
    max_delay: int = 0,
    group: str | None = None,
    batch_ms: int = 250,
    batch_size: int = 10_000,
    on_error: str = "fail",
    dead_letter: str | None = None,
    config: dict | None = None,
    give_up_after: float | None = None,
    report=None,
) -> Stream:
    """A stream over a Kafka topic (all partitions, or ``partitions``); see :mod:`tidal.io.kafka`.

    ``format``: ``json``, ``csv``, ``avro`` (with ``avro_schema``) or ``raw``; the payload schema is
    ``schema``, the Avro schema's, or inferred from the topic's first messages. ``time_field`` is the
    event time (points, or start edges with ``kind="start"``); rows are released in time order as
    the minimum of the partitions' watermarks (largest time read less ``max_delay``) passes them.
    ``start``: ``earliest``, ``latest`` or ``committed`` (the offsets ``group`` committed);
    ``stop``: ``never`` (until interrupted), ``latest`` (the end offsets seen at start) or
    ``{partition: offset}``. Malformed messages raise an error naming topic, partition and offset,
    or with ``on_error="skip"`` are counted and written to ``dead_letter`` (JSON lines). A durable
    run (``run_durable``) stores the feed's offsets with each checkpoint and resumes there.
    """
    from ..io.kafka import KafkaFeed

    feed = KafkaFeed(
        brokers, topic, format=format, schema=schema, avro_schema=avro_schema, time_field=time_field,
        kind=kind, max_delay=max_delay, partitions=partitions, start=start, stop=stop, group=group,
        batch_ms=batch_ms, batch_size=batch_size, on_error=on_error, dead_letter=dead_letter, config=config,
        give_up_after=give_up_after, report=report,
    )  # fmt: skip
    payload = feed.schema()
    if time_field is not None and time_field not in payload.names:
        raise InputError(f"time field {time_field!r} not found; topic {topic!r} has fields {payload.names}")
    props = Properties(constant_duration=1) if feed.kind == "point" else Properties(start_edge_only=True)
    return Stream(Source(None, payload, props, kafka_detail(feed), feed=feed))


def kafka_detail(feed) -> str:
    """How a Kafka source reads (part of the plan's fingerprint, so nothing run-specific)."""
    parts = "all partitions" if feed.partitions is None else f"partitions {feed.partitions}"
    shape = f"{feed.kind} events at {feed.time_field}" if feed.time_field else "start edges at time 0"
    detail = f"kafka {feed.topic} ({feed.format}, {parts}, start {feed.start}, stop {feed.stop}); {shape}"
    if feed.time_field:
        detail += f"; watermark: minimum over partitions of the largest time read - {feed.max_delay}"
    return detail
