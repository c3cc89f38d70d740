"""Kafka topics as a :class:`~tidal.core.feed.Feed`: events in time order, punctuations from per-partition watermarks.

Temporal semantics. Each message's ``time_field`` is its event time (points by default, start
edges for SQL; without a time field every row is a start edge at time 0, the relational view).
Kafka orders messages only within a partition, so each partition has its own watermark: the
largest event time read from it, less ``max_delay``. The feed's watermark is the *minimum* over
the partitions still being read (OctoSQL's shuffle receivers merge partition watermarks the
same way; seed 002, section 2.5): rows are held until the watermark reaches their time, then
released sorted by (time, partition, offset), followed by ``Punctuation(watermark)``; rows at the
watermark itself wait for the next one, so that when every partition is in time order the rows
leave in the order of one global sort by (time, partition, offset), whatever the batching. A row
whose time is below the last punctuation when it arrives is *late*: it is counted, reported and
dropped. A partition that has nothing to read holds the watermark back (as in Flink without an
idleness timeout); a partition that reached its stop offset no longer does.

Positions. ``position()`` is plain data: per partition the offset of the first message not yet
handled (``low``), the handled messages at or after it (rows released out of offset order,
late or malformed ones) with their times, the largest time before ``low``, the last
punctuation, and the stop offsets fixed at the first open. Reopened there, the feed re-reads
from ``low``, skips what was handled, and yields exactly the rows that had not been yielded,
never earlier than the last punctuation: a durable query over a topic loses and repeats
nothing. Batches are cut by wall clock (``batch_ms``, default 250 ms) and by size; an idle feed
still yields a punctuation (or an empty batch) every ``batch_ms`` so that merges do not stall.

``stop``: ``"never"`` (read until interrupted), ``"latest"`` (the end offsets seen at the first
open, then complete: Spark's available-now) or a dict ``{partition: end offset}`` (Spark's
``endingOffsets``). The client is confluent-kafka (librdkafka); the end of a partition is read
from fetch responses, not from ListOffsets (which tansu, the test broker, answers with the last
batch's base offset + 1).
"""

from __future__ import annotations

import base64
import itertools
import json
import sys
import time as _time
import uuid
from pathlib import Path

import numpy as np
import pyarrow as pa

from ..core.batch import EventBatch
from ..core.errors import InputError, TidalError
from ..core.feed import Feed
from ..core.messages import Completed, Punctuation
from ..core.time import INFINITY, TIME_RANGE_TEXT, first_out_of_range
from .kafka_formats import Decoder, MalformedMessage
from .kafka_state import FeedState

STARTS = ("earliest", "latest", "committed")
_MAX_BATCH = 65_536


def _stderr(msg: str) -> None:
    print(f"tidal: {msg}", file=sys.stderr, flush=True)


def client_config(brokers: str, extra: dict | None = None) -> dict:
    conf = {
        "bootstrap.servers": brokers,
        "reconnect.backoff.ms": 100,
        "reconnect.backoff.max.ms": 5000,
        "fetch.wait.max.ms": 50,  # a fetch with nothing new returns soon: idle feeds stay responsive
    }
    conf.update(extra or {})
    return conf


class BrokerWatch:
    """librdkafka's error callback: reports a lost broker at once and every ``every`` s while it lasts."""

    def __init__(self, brokers: str, report, give_up_after: float | None, every: float = 5.0):
        self.brokers, self.report, self.give_up_after, self.every = brokers, report, give_up_after, every
        self.down_since: float | None = None
        self.last_report = 0.0
        self.reason = ""

    def __call__(self, err) -> None:
        from confluent_kafka import KafkaError

        if err.code() in (KafkaError._ALL_BROKERS_DOWN, KafkaError._TRANSPORT, KafkaError._RESOLVE):
            if self.down_since is None:
                self.down_since = _time.monotonic()
                self.last_report = self.down_since
                self.report(f"kafka: lost brokers {self.brokers} ({err.str()}); retrying with backoff")
            self.reason = err.str()

    def check(self) -> None:
        if self.down_since is None:
            return
        now = _time.monotonic()
        if self.give_up_after is not None and now - self.down_since > self.give_up_after:
            raise TidalError(
                f"kafka: brokers {self.brokers} unreachable for {now - self.down_since:.0f} s "
                f"({self.reason}); giving up"
            )
        if now - self.last_report >= self.every:
            self.last_report = now
            waited = now - self.down_since
            self.report(f"kafka: brokers {self.brokers} still unreachable after {waited:.0f} s; retrying")

    def up(self) -> None:
        if self.down_since is not None:
            waited = _time.monotonic() - self.down_since
            self.report(f"kafka: brokers {self.brokers} reachable again after {waited:.1f} s")
            self.down_since = None


def with_retries(what: str, fn, watch: BrokerWatch):
    """``fn()`` until it succeeds, backing off 0.1 s doubling to 5 s; reports each failure."""
    from confluent_kafka import KafkaException

    delay, started = 0.1, _time.monotonic()
    while True:
        try:
            return fn()
        except KafkaException as exc:
            waited = _time.monotonic() - started
            if watch.give_up_after is not None and waited > watch.give_up_after:
                raise TidalError(f"kafka: {what} failed for {waited:.0f} s on {watch.brokers}: {exc}") from None
            watch.report(f"kafka: {what} failed ({exc.args[0].str() if exc.args else exc}); retrying in {delay:.1f} s")
            _time.sleep(delay)
            delay = min(delay * 2, 5.0)


def partitions_of(consumer, topic: str, watch: BrokerWatch) -> list[int]:
    md = with_retries(f"reading metadata of topic {topic!r}", lambda: consumer.list_topics(topic, timeout=5), watch)
    t = md.topics.get(topic)
    if t is None or t.error is not None or not t.partitions:
        raise InputError(f"kafka topic {topic!r} does not exist on {watch.brokers}")
    return sorted(t.partitions)


def end_offsets(brokers: str, topic: str, partitions: list[int], conf: dict, watch: BrokerWatch) -> dict[int, int]:
    """The offset after the last message of each partition now, read from fetch responses."""
    from confluent_kafka import Consumer, KafkaError, TopicPartition

    c = Consumer({**client_config(brokers, conf), "group.id": f"tidal-probe-{uuid.uuid4().hex}",
                  "enable.partition.eof": True, "enable.auto.commit": False})  # fmt: skip
    try:
        starts = []
        for p in partitions:
            low, listed = with_retries(
                f"listing offsets of {topic}/{p}",
                lambda p=p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=5),
                watch,
            )
            starts.append(TopicPartition(topic, p, max(low, listed - 1)))  # listed may be too small, never large
        c.assign(starts)
        ends: dict[int, int] = {}
        while len(ends) < len(partitions):
            for m in c.consume(1000, 0.05):
                if m.error() is not None and m.error().code() == KafkaError._PARTITION_EOF:
                    ends.setdefault(m.partition(), m.offset())
            watch.check()
        return ends
    finally:
        c.close()


class KafkaFeed(Feed):
    """One topic (all or some partitions) as a feed of time-ordered events; see the module docstring."""

    def __init__(
        self,
        brokers: str,
        topic: str,
        *,
        format: str = "json",
        schema: pa.Schema | None = None,
        avro_schema=None,
        time_field: str | None = None,
        kind: str = "point",
        max_delay: int = 0,
        partitions: list[int] | None = None,
        start: str = "earliest",
        stop="never",
        group: str | None = None,
        batch_ms: int = 250,
        batch_size: int = 10_000,
        on_error: str = "fail",
        dead_letter: str | None = None,
        config: dict | None = None,
        give_up_after: float | None = None,
        report=None,
        stats=None,
        predicate=None,
    ):
        if start not in STARTS:
            raise InputError(f"kafka start must be one of {', '.join(STARTS)}, got {start!r}")
        if not (stop in ("never", "latest") or isinstance(stop, dict)):
            raise InputError(f"kafka stop must be 'never', 'latest' or {{partition: offset}}, got {stop!r}")
        if on_error not in ("fail", "skip"):
            raise InputError(f"on_error must be 'fail' or 'skip', got {on_error!r}")
        if kind not in ("point", "start"):
            raise InputError(f"kind must be 'point' or 'start', got {kind!r}")
        if start == "committed" and not group:
            raise InputError("kafka start 'committed' needs a consumer group (group=...)")
        self.brokers, self.topic, self.format = brokers, topic, format
        self.decoder = Decoder(format, schema, avro_schema)
        self.time_field, self.kind, self.max_delay = time_field, kind if time_field else "start", int(max_delay)
        self.partitions = None if partitions is None else sorted(int(p) for p in partitions)
        self.start, self.stop, self.group = start, stop, group
        self.batch_ms, self.batch_size = batch_ms, min(batch_size, _MAX_BATCH)
        self.on_error, self.dead_letter = on_error, dead_letter
        self.config = dict(config or {})
        self.report = report or _stderr
        self.watch = BrokerWatch(brokers, self.report, give_up_after)
        self.stats, self.predicate = stats, predicate
        self.late = self.skipped = 0
        self._consumer = None
        self._pos = None
        self._st = None
        self._written_dead: set | None = None

    # -- schema --------------------------------------------------------------------------------
    def schema(self, sample_wait: float = 5.0) -> pa.Schema:
        """The payload schema: given, from the format, or inferred from the topic's first messages."""
        if self.decoder.schema is not None:
            return self.decoder.schema
        from confluent_kafka import Consumer, KafkaError, TopicPartition

        group = f"tidal-sample-{uuid.uuid4().hex}"
        c = Consumer({**client_config(self.brokers, self.config), "group.id": group, "enable.partition.eof": True})
        try:
            parts = self.partitions or partitions_of(c, self.topic, self.watch)
            c.assign([TopicPartition(self.topic, p, -2) for p in parts])  # -2: the beginning
            sample, ended, deadline = [], set(), _time.monotonic() + sample_wait
            while len(sample) < 100 and len(ended) < len(parts) and _time.monotonic() < deadline:
                for m in c.consume(100, 0.2):
                    if m.error() is None and m.value() is not None:
                        sample.append(m.value())
                    elif m.error() is not None and m.error().code() == KafkaError._PARTITION_EOF:
                        ended.add(m.partition())
        finally:
            c.close()
        schema = self.decoder.infer(sample[:100])
        if self.format == "csv" and schema.names and schema.names[0] == "f0":
            schema = pa.schema([f.with_name(f"column{i}") for i, f in enumerate(schema)])
            self.decoder.schema = schema
        return schema

    # -- the feed ------------------------------------------------------------------------------
    def position(self):
        return self._pos

    def close(self) -> None:
        if self._consumer is not None:
            self._commit_group(asynchronous=False)
            try:
                self._consumer.close()
            except RuntimeError:
                pass
            self._consumer = None

    def open(self, position=None):
        return self._run(position)

    def _connect(self):
        from confluent_kafka import Consumer

        self.close()
        conf = {
            **client_config(self.brokers, self.config),
            "group.id": self.group or f"tidal-{uuid.uuid4().hex}",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "error_cb": self.watch,
        }
        self._consumer = Consumer(conf)
        return self._consumer

    def _initial(self, consumer, parts: list[int]) -> dict:
        from confluent_kafka import TopicPartition

        if self.start == "latest":
            lows = end_offsets(self.brokers, self.topic, parts, self.config, self.watch)
        elif self.start == "committed":
            got = with_retries(
                "reading committed offsets",
                lambda: consumer.committed([TopicPartition(self.topic, p) for p in parts], timeout=10),
                self.watch,
            )
            lows = {tp.partition: tp.offset for tp in got}
        else:
            lows = {}
        for p in parts:
            if lows.get(p, -1) < 0:  # earliest, or no committed offset: the partition's first message
                lows[p] = with_retries(
                    f"listing offsets of {self.topic}/{p}",
                    lambda p=p: consumer.get_watermark_offsets(TopicPartition(self.topic, p), timeout=5),
                    self.watch,
                )[0]
        if self.stop == "latest":
            end = end_offsets(self.brokers, self.topic, parts, self.config, self.watch)
        elif isinstance(self.stop, dict):
            end = {int(p): int(o) for p, o in self.stop.items()}
            missing = [p for p in parts if p not in end]
            if missing:
                raise InputError(f"kafka stop offsets name no end for partitions {missing} of {self.topic!r}")
        else:
            end = None
        return {
            "watermark": None,
            "parts": {str(p): [int(lows[p]), [], None] for p in parts},
            "end": None if end is None else {str(p): int(end[p]) for p in parts},
        }

    def _run(self, position):
        from confluent_kafka import KafkaError, TopicPartition

        if self.decoder.schema is None:
            self.schema()
        consumer = self._connect()
        available = partitions_of(consumer, self.topic, self.watch)
        parts = self.partitions or available
        unknown = [p for p in parts if p not in available]
        if unknown:
            raise InputError(f"kafka topic {self.topic!r} has no partitions {unknown} (it has {available})")
        pos = position or self._initial(consumer, parts)
        if sorted(int(p) for p in pos["parts"]) != parts:
            raise TidalError(f"kafka position is of partitions {sorted(pos['parts'])}, this feed reads {parts}")
        st = self._st = FeedState(pos, self.time_field is not None)
        self._pos = st.snapshot()
        active = [p for p in parts if not st.done(p)]
        consumer.assign([TopicPartition(self.topic, p, st.next_off[p]) for p in active])
        last_commit = _time.monotonic()  # progress commits for the consumer group (start="committed")
        while True:
            if st.all_done():
                yield from self._release(st, INFINITY)
                self._commit_group(asynchronous=False)
                yield Completed()
                return
            values, parts_l, offs_l, eofs, got_any = [], [], [], [], False
            deadline = _time.monotonic() + self.batch_ms / 1000
            while len(values) < self.batch_size:
                left = deadline - _time.monotonic()
                if left <= 0:
                    break
                want = min(self.batch_size - len(values), 10_000)
                got = consumer.consume(want, left)
                for m in got:
                    err = m.error()
                    if err is None:
                        values.append(m.value())
                        parts_l.append(m.partition())
                        offs_l.append(m.offset())
                    elif err.code() == KafkaError._PARTITION_EOF:
                        eofs.append((m.partition(), m.offset()))
                    else:
                        self.report(f"kafka: {self.topic}/{m.partition()}: {err.str()}")
                got_any = got_any or bool(got)
                if st.end is not None and self._reached_end(st, active, parts_l, offs_l, eofs):
                    break
                if len(got) < want and values:
                    break  # the client has nothing more ready: cut the batch now rather than wait
            values, meta = self._accept(st, values, parts_l, offs_l, eofs)
            if got_any:
                self.watch.up()
            self.watch.check()
            if values:
                self._ingest(st, values, *meta)
            for p in active:
                if st.done(p) and p not in st.finished:
                    st.finished.add(p)
                    consumer.incremental_unassign([TopicPartition(self.topic, p)])
            yielded = False
            if not st.all_done():
                w = st.watermark(self.max_delay)
                for msg in self._release(st, w):
                    yielded = True
                    yield msg
                if not yielded:  # idle: still say where we stand, so merges and commits go on
                    self._pos = st.snapshot()
                    yield Punctuation(st.emitted) if st.emitted is not None else EventBatch.empty(self.out_schema)
            if self.group and _time.monotonic() - last_commit > 1.0:
                last_commit = _time.monotonic()  # progress commits for the consumer group (start="committed")
                self._commit_group(asynchronous=True)

    def _commit_group(self, asynchronous: bool) -> None:
        """Commit, for the consumer group, the first offset of each partition not yet handed on."""
        from confluent_kafka import TopicPartition

        st, consumer = self._st, self._consumer
        if not self.group or st is None or consumer is None:
            return
        lows = [TopicPartition(self.topic, p, st.low(p)) for p in st.parts if st.low(p) >= 0]
        try:
            consumer.commit(offsets=lows, asynchronous=asynchronous)
        except Exception as exc:  # noqa: BLE001 - a failed progress commit is reported, not fatal
            self.report(f"kafka: committing offsets of group {self.group}: {exc}")

    @staticmethod
    def _reached_end(st: FeedState, active, parts_l, offs_l, eofs) -> bool:
        top = {p: st.next_off[p] for p in active}
        for p, o in eofs:
            top[p] = max(top[p], o)
        if offs_l:
            parts, offs = np.asarray(parts_l), np.asarray(offs_l)
            for p in active:
                mine = offs[parts == p]
                if len(mine):
                    top[p] = max(top[p], int(mine.max()) + 1)
        return all(top[p] >= st.end[p] for p in active)

    @staticmethod
    def _accept(st: FeedState, values, parts_l, offs_l, eofs):
        """The cycle's messages that are new (not re-fetched, not beyond the stop offset, not handled
        before a restart), with their partitions and offsets; advances each partition's next offset."""
        parts, offs = np.asarray(parts_l, np.int64), np.asarray(offs_l, np.int64)
        if len(parts):
            size = max(st.parts) + 1
            nxt = np.zeros(size, np.int64)
            for p in st.parts:
                nxt[p] = st.next_off[p]
            keep = offs >= nxt[parts]
            if st.end is not None:
                end = np.zeros(size, np.int64)
                for p in st.parts:
                    end[p] = st.end[p]
                keep &= offs < end[parts]
            for p in st.parts:
                mine = parts == p
                if st.skip[p]:  # handled before the restart
                    keep &= ~(mine & np.isin(offs, np.fromiter(st.skip[p], np.int64)))
                seen = offs[mine & (offs >= nxt[p])]
                if st.end is not None:
                    seen = seen[seen < st.end[p]]
                if len(seen):
                    st.next_off[p] = int(seen.max()) + 1
            if not keep.all():
                values = list(itertools.compress(values, keep.tolist()))
                parts, offs = parts[keep], offs[keep]
        for p, o in eofs:  # everything before the fetch position was delivered (markers included)
            st.caught_up.add(p)
            o = o if st.end is None else min(o, st.end[p])
            if o > st.next_off[p]:
                st.next_off[p] = o
                st._normalise(p)
        return values, (parts, offs)

    @property
    def out_schema(self) -> pa.Schema:
        return self.decoder.schema

    def _ingest(self, st: FeedState, values: list, parts, offs):
        """Decode a cycle's messages (malformed ones fail or go to the dead-letter file) and queue them."""
        table = None
        while values:
            try:
                table = self.decoder.decode(values)
                break
            except MalformedMessage as bad:
                p, o = int(parts[bad.index]), int(offs[bad.index])
                where = f"kafka topic {self.topic} partition {p} offset {o}"
                if self.on_error == "fail":
                    raise InputError(f"{where}: {bad.reason}") from None
                self._dead(p, o, values[bad.index], bad.reason)
                st.handle(p, o, None)
                del values[bad.index]
                parts, offs = np.delete(parts, bad.index), np.delete(offs, bad.index)
        if not values:
            return
        if self.stats is not None:
            self.stats.rows_read += len(values)
            self.stats.progress()
        if self.time_field is None:
            sync = np.zeros(len(parts), np.int64)
        else:
            sync = self._times(table, parts, offs)
            bad = first_out_of_range(sync)  # (INFINITY, or a time with no room for a duration, would wrap)
            if bad >= 0:
                raise InputError(
                    f"kafka topic {self.topic} partition {parts[bad]} offset {offs[bad]}: time field "
                    f"{self.time_field!r} is {int(sync[bad])}, outside the range of event times {TIME_RANGE_TEXT}"
                )
        late = sync < st.emitted if st.emitted is not None else np.zeros(len(sync), bool)
        if late.any():
            n = int(late.sum())
            self.late += n
            if self.stats is not None:
                self.stats.late += n
            i = int(np.flatnonzero(late)[0])
            self.report(
                f"kafka: {n} late row(s) dropped in {self.topic} (first: partition {parts[i]} offset {offs[i]}, "
                f"time {sync[i]} behind the watermark {st.emitted})"
            )
            for j in np.flatnonzero(late).tolist():
                st.handle(int(parts[j]), int(offs[j]), int(sync[j]))
            keep = ~late
            table, parts, offs, sync = table.filter(pa.array(keep)), parts[keep], offs[keep], sync[keep]
        st.add(table, parts, offs, sync)

    def _times(self, table: pa.Table, parts, offs) -> np.ndarray:
        name = self.time_field
        if name not in table.column_names:
            raise InputError(f"kafka topic {self.topic}: time field {name!r} is not a field of {table.column_names}")
        col = table.column(name)
        if col.null_count:
            i = int(np.flatnonzero(col.is_null().to_numpy(zero_copy_only=False))[0])
            raise InputError(
                f"kafka topic {self.topic} partition {parts[i]} offset {offs[i]}: time field {name!r} is null"
            )
        t = col.type
        if pa.types.is_timestamp(t):
            col = col.cast(pa.timestamp("us", t.tz)) if t.unit != "us" else col
            return col.combine_chunks().view(pa.int64()).to_numpy().copy() if len(col) else np.zeros(0, np.int64)
        if pa.types.is_date(t):
            return self._times(table.set_column(table.column_names.index(name), name, col.cast(pa.timestamp("us"))),
                               parts, offs)  # fmt: skip
        if pa.types.is_integer(t):
            return col.cast(pa.int64()).to_numpy().copy()
        raise InputError(f"kafka topic {self.topic}: time field {name!r} is {t}; it must be a timestamp or integer")

    def _release(self, st: FeedState, upto: int):
        """Yield the queued rows with time <= ``upto`` in (time, partition, offset) order, then a punctuation."""
        for table, sync in st.take(upto, self.batch_size):
            self._pos = st.snapshot()
            if self.predicate is None:
                yield self._batch(table, sync)
            else:
                yield self._filtered(table, sync)
        if upto != INFINITY and upto is not None and (st.emitted is None or upto > st.emitted):
            st.emitted = upto
            self._pos = st.snapshot()
            yield Punctuation(upto)

    def _filtered(self, table: pa.Table, sync: np.ndarray) -> EventBatch:
        idx = pa.array(np.arange(table.num_rows, dtype=np.int64))
        with_idx = table.append_column("__i", idx).filter(self.predicate)
        rows = with_idx.column("__i").to_numpy()
        return self._batch(with_idx.drop_columns(["__i"]), sync[rows])

    def _batch(self, table: pa.Table, sync: np.ndarray) -> EventBatch:
        cols = {n: table.column(n).combine_chunks() for n in table.column_names}
        other = np.full(len(sync), INFINITY, np.int64) if self.kind == "start" else None
        return EventBatch(np.ascontiguousarray(sync, np.int64), other, cols)

    def _dead(self, p: int, o: int, value, reason: str) -> None:
        self.skipped += 1
        if self.stats is not None:
            self.stats.skipped += 1
        self.report(f"kafka topic {self.topic} partition {p} offset {o}: {reason}; skipped")
        if self.dead_letter is None:
            return
        path = Path(self.dead_letter)
        if self._written_dead is None:  # rows written before a restart are not written twice
            self._written_dead = set()
            if path.exists():
                for line in path.read_text().splitlines():
                    rec = json.loads(line)
                    self._written_dead.add((rec["topic"], rec["partition"], rec["offset"]))
        if (self.topic, p, o) in self._written_dead:
            return
        self._written_dead.add((self.topic, p, o))
        raw = value or b""
        rec = {"topic": self.topic, "partition": p, "offset": o, "error": reason,
               "value": raw.decode("utf-8", "replace"), "value_base64": base64.b64encode(raw).decode()}  # fmt: skip
        with open(path, "a") as f:
            f.write(json.dumps(rec) + "\n")
