"""A Redis Stream as a :class:`~tidal.core.feed.Feed`: entries read with XREAD after the last id delivered.

Each entry is one row: with ``format="json"`` one field of the entry (``field``, or the first
entry's only field) holds a JSON object whose members are the columns; with ``format="fields"`` the
entry's fields are the columns, each value a JSON value or else a string. The columns and their
types are ``schema`` or are inferred from the stream's first entries (pyarrow's JSON reader:
numbers, strings, booleans, ISO timestamps).

Time: with ``time`` (a column of integers or timestamps) each row is an event at that time
(``kind``: points or start edges), else a start edge at time 0 (the relational view). The feed
yields rows in the stream's order, which is arrival order: ``ordered=True`` checks that times
never go back (an error names the entry) and punctuates after each batch; otherwise the plan
sorts them (Impatience sort, under the reorder latency the query declares).

Position: ``{"last": id, "end": id or None}``, plain data: the id of the last entry yielded and
where the feed stops. ``start``: ``"earliest"`` (the first entry) or ``"latest"`` (entries added
after the first open); ``stop``: ``"never"`` (read until interrupted; an idle feed yields an empty
batch every ``block_ms`` so merges do not stall), ``"latest"`` (the last entry at the first open,
then complete) or an entry id. Reopened at a position, the feed yields exactly the entries after
it, so a durable run repeats and loses nothing. Bad entries (invalid JSON, a value that does not
fit its column) raise an error naming the stream and the entry id, or with ``on_error="skip"``
are counted and written to the dead-letter file. A lost connection is retried with backoff and
reported (:mod:`.retry`).
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from urllib.parse import urlsplit

import numpy as np
import pyarrow as pa
import pyarrow.json as pj

from ..core.batch import EventBatch
from ..core.errors import InputError, PlanError
from ..core.feed import Feed
from ..core.messages import Completed, Punctuation
from ..core.time import INFINITY
from .dead_letter import BadRows
from .ingress import _time_column, other_times
from .retry import Backoff, with_retries

FORMATS = ("json", "fields")
SAMPLE = 1_000


def _redis():
    try:
        import redis
    except ImportError:  # pragma: no cover - the extra is part of the test install
        raise PlanError("the redis connector needs the redis client: pip install 'tidal[redis]'") from None
    return redis


def _id(text: str) -> tuple[int, int]:
    ms, _, seq = text.partition("-")
    try:
        return int(ms), int(seq or 0)
    except ValueError:
        raise PlanError(f"not a Redis stream entry id: {text!r} (expected 'milliseconds-sequence')") from None


def _text(v) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


def _micros(table: pa.Table) -> pa.Table:
    """Timestamps in microseconds, as tidal's time is."""
    for i, f in enumerate(table.schema):
        if pa.types.is_timestamp(f.type) and f.type.unit != "us":
            table = table.set_column(i, f.name, table.column(i).cast(pa.timestamp("us", f.type.tz)))
    return table


def _options(schema: pa.Schema | None):
    return pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore") if schema else None


class RedisStreamFeed(Feed):
    """One Redis Stream, entry by entry (see the module docstring)."""

    def __init__(
        self,
        url: str,
        stream: str,
        *,
        format: str = "json",
        field: str | None = None,
        schema: pa.Schema | None = None,
        time: str | None = None,
        kind: str = "start",
        ordered: bool = False,
        start: str = "earliest",
        stop: str = "never",
        batch_size: int = 10_000,
        block_ms: int = 250,
        on_error: str = "fail",
        dead_letter: str | None = None,
        stats=None,
        backoff: Backoff | None = None,
        predicate=None,
    ):
        if format not in FORMATS:
            raise PlanError(f"redis format must be one of {', '.join(FORMATS)}, got {format!r}")
        if start not in ("earliest", "latest"):
            raise PlanError(f"redis start must be 'earliest' or 'latest', got {start!r}")
        if stop not in ("never", "latest"):
            _id(stop)
        if kind not in ("point", "start"):
            raise PlanError(f"kind must be 'point' or 'start', got {kind!r}")
        self.url, self.stream, self.format, self.field = url, stream, format, field
        self.time, self.kind, self.ordered = time, kind if time else "start", ordered
        self.start, self.stop = start, stop
        self.batch_size, self.block_ms = batch_size, block_ms
        self.bad = BadRows(on_error, dead_letter)
        self.stats = stats
        self.backoff = backoff or Backoff()
        self._schema = schema
        self._client = None
        self._pos: dict | None = None
        self._punctuated: int | None = None
        self._skipped_told = 0
        self.predicate = predicate  # a pyarrow expression over the columns (a pushed-down filter)
        where = urlsplit(url)
        self.label = f"redis stream {stream} at {where.hostname}:{where.port or 6379}{where.path or '/0'}"

    # -- connection -------------------------------------------------------------------------
    def _call(self, what: str, fn):
        redis = _redis()

        def attempt():
            if self._client is None:
                from redis.backoff import NoBackoff
                from redis.retry import Retry

                # the client's own silent retries are off: every lost connection is retried here, and reported
                self._client = redis.Redis.from_url(
                    self.url, socket_timeout=max(5.0, self.block_ms / 500), retry=Retry(NoBackoff(), 0)
                )
            return fn(self._client)

        def reconnect():
            self.close()

        errors = (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError)
        refused = (redis.exceptions.AuthenticationError, redis.exceptions.AuthorizationError)
        try:
            return with_retries(
                f"{self.label}: {what}", attempt, errors, self.backoff, reconnect,
                transient=lambda exc: not isinstance(exc, refused),
            )  # fmt: skip
        except (redis.exceptions.ResponseError, *refused) as exc:  # the server's answer: no retry changes it
            raise InputError(f"{self.label}: {what}: {exc}") from None

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    # -- decoding ---------------------------------------------------------------------------
    def _document(self, entry_id: str, fields: dict) -> bytes | None:
        """The entry as one line of JSON, or None (reported) when it is malformed."""
        decoded = {_text(k): _text(v) for k, v in fields.items()}
        if self.format == "json":
            if self.field is None and len(decoded) == 1:
                self.field = next(iter(decoded))  # the stream's JSON field: the first entry's only field
            name = self.field
            if name is None or name not in decoded:
                problem = f"has fields {sorted(decoded)}: name the one holding the JSON with field => '...'"
                if self.field:
                    problem = f"has no field {self.field!r} (its fields: {sorted(decoded)})"
                self.bad.bad(f"{self.label}, entry {entry_id}", problem, decoded)
                return None
            text = decoded[name]
            try:
                value = json.loads(text)
            except ValueError as exc:
                self.bad.bad(f"{self.label}, entry {entry_id}", f"field {name} is not JSON ({exc})", decoded)
                return None
            if not isinstance(value, dict):
                self.bad.bad(f"{self.label}, entry {entry_id}", f"field {name} is not a JSON object", decoded)
                return None
            return json.dumps(value).encode()
        out = {}
        for k, v in decoded.items():
            try:
                out[k] = json.loads(v)
            except ValueError:
                out[k] = v
        return json.dumps(out).encode()

    def _raw_documents(self, entries: list) -> list[bytes] | None:
        """The JSON field of every entry as it is (one line each), or None if some entry needs a closer look."""
        if self.field is None:
            first = entries[0][1]
            if len(first) != 1:
                return None
            self.field = _text(next(iter(first)))
        name = self.field.encode()
        docs = []
        for _, fields in entries:
            raw = fields.get(name)
            if raw is None or not raw.lstrip().startswith(b"{"):
                return None
            docs.append(raw.replace(b"\n", b" "))  # newlines in JSON text are whitespace between tokens
        return docs

    def _decode(self, entries: list, schema: pa.Schema | None) -> tuple[pa.Table | None, list[str]]:
        """Rows of the good entries, and their ids."""
        if self.format == "json":  # the fast path: every entry's JSON straight to Arrow's reader
            raw = self._raw_documents(entries)
            if raw is not None:
                try:
                    table = _micros(pj.read_json(io.BytesIO(b"\n".join(raw)), parse_options=_options(schema)))
                    return table, [_text(e[0]) for e in entries]
                except pa.ArrowInvalid:
                    pass  # some entry is malformed: find and name it below
        docs, ids = [], []
        for entry_id, fields in entries:
            eid = _text(entry_id)
            doc = self._document(eid, fields)
            if doc is not None:
                docs.append(doc)
                ids.append(eid)
        if not docs:
            return None, []
        options = _options(schema)
        try:
            return _micros(pj.read_json(io.BytesIO(b"\n".join(docs)), parse_options=options)), ids
        except pa.ArrowInvalid:
            pass
        tables, kept = [], []  # one entry at a time, to name the bad ones
        for eid, doc in zip(ids, docs, strict=True):
            try:
                tables.append(_micros(pj.read_json(io.BytesIO(doc), parse_options=options)))
                kept.append(eid)
            except pa.ArrowInvalid as exc:
                self.bad.bad(f"{self.label}, entry {eid}", f"does not fit the columns {schema}: {exc}", {"json": doc})
        if not tables:
            return None, []
        return pa.concat_tables(tables), kept

    def schema(self) -> pa.Schema:
        """The columns: given, or inferred from the stream's first entries."""
        if self._schema is None:
            entries = self._call("sample", lambda r: r.xrange(self.stream, "-", "+", count=SAMPLE))
            table, _ = self._decode(entries, None) if entries else (None, [])
            if table is None:
                raise PlanError(
                    f"{self.label} has no entries to infer its columns from: give them, "
                    "e.g. schema => 'ts TIMESTAMP, user VARCHAR, amount BIGINT'"
                )
            self._schema = table.schema
        if self.time is not None and self.time not in self._schema.names:
            raise PlanError(f"time field {self.time!r} is not a column of {self.label}: {self._schema.names}")
        return self._schema

    # -- reading ----------------------------------------------------------------------------
    def position(self):
        return dict(self._pos) if self._pos is not None else None

    def _first_position(self) -> dict:
        def last_id(r) -> str:
            got = r.xrevrange(self.stream, "+", "-", count=1)
            return _text(got[0][0]) if got else "0-0"

        needs_last = self.start == "latest" or self.stop == "latest"
        last = self._call("read the last entry id", last_id) if needs_last else "0-0"
        end = None if self.stop == "never" else (last if self.stop == "latest" else self.stop)
        return {"last": last if self.start == "latest" else "0-0", "end": end}

    def open(self, position=None) -> Iterator:
        self._pos = dict(position) if position else self._first_position()
        self._punctuated = self._pos.get("punctuated")
        schema = self.schema()
        return self._messages(schema)

    def _messages(self, schema: pa.Schema) -> Iterator:
        empty = EventBatch(np.empty(0, np.int64), np.empty(0, np.int64), {f.name: pa.array([], f.type) for f in schema})
        end = _id(self._pos["end"]) if self._pos["end"] is not None else None
        while True:
            if end is not None and _id(self._pos["last"]) >= end:
                yield Completed()
                return
            last = self._pos["last"]
            got = self._call(
                "read",
                lambda r, last=last: r.xread({self.stream: last}, count=self.batch_size, block=self.block_ms),
            )
            entries = got[0][1] if got else []
            if end is not None:
                entries = [e for e in entries if _id(_text(e[0])) <= end]
            if not entries:
                yield empty  # idle: let the query see that this source is alive
                continue
            table, ids = self._decode(entries, schema)
            batch = None if table is None else self._batch(table, ids)
            self._pos = {**self._pos, "last": _text(entries[-1][0])}
            if self.stats is not None:
                self.stats.rows_read += len(entries)
                self.stats.skipped += self.bad.skipped - self._skipped_told
                self._skipped_told = self.bad.skipped
                self.stats.progress()
            if batch is not None and self.predicate is not None:
                batch = self._filtered(batch)
            if batch is None:
                yield empty
                continue
            if self.ordered and self.time is not None:
                self._punctuated = int(batch.sync[-1])
                self._pos["punctuated"] = self._punctuated
                yield batch
                yield Punctuation(self._punctuated)
            else:
                yield batch

    def _filtered(self, batch: EventBatch) -> EventBatch | None:
        """The rows the pushed filter keeps (a null condition drops the row, as WHERE does)."""
        numbered = pa.Table.from_pydict(batch.columns).append_column("__i", pa.array(np.arange(len(batch))))
        rows = numbered.filter(self.predicate, null_selection_behavior="drop").column("__i").to_numpy()
        return batch.take(rows) if len(rows) else None

    def _batch(self, table: pa.Table, ids: list[str]) -> EventBatch:
        cols = {f.name: table.column(f.name).combine_chunks() for f in table.schema}
        rb = pa.RecordBatch.from_pydict(cols)
        n = rb.num_rows
        if self.time is None:
            return EventBatch(np.zeros(n, np.int64), np.full(n, INFINITY, np.int64), cols)
        if rb.column(self.time).null_count:
            i = rb.column(self.time).to_pylist().index(None)
            raise InputError(f"{self.label}, entry {ids[i]}: the time field {self.time} is null")
        sync = _time_column(rb, self.time, "time", 0)
        if self.ordered:
            before = self._punctuated
            back = np.flatnonzero(sync[1:] < sync[:-1]) + 1
            if before is not None and len(sync) and sync[0] < before:
                back = np.array([0])
            if len(back):
                i = int(back[0])
                raise InputError(
                    f"{self.label}, entry {ids[i]}: time {int(sync[i])} is earlier than the time before it "
                    f"({int(before if i == 0 else sync[i - 1])}); pass disorder='drop' or 'adjust' to sort"
                )
        return EventBatch(sync, other_times(rb, sync, 0, kind=self.kind), cols)
