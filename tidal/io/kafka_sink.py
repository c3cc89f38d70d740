"""A Kafka sink: each output event (or changelog record) a message, exactly once under a durable run.

Messages are JSON: by default a physical event ``{"sync_time", "other_time", ...payload}`` as
``to_arrow()`` has it; ``write(record)`` sends any record (the SQL CLI sends stream-json changes,
retractions with ``"sys.undo": true``). Every message carries the headers ``tidal.query``,
``tidal.run`` (an id fixed at the first start of a durable run), ``tidal.commit`` and
``tidal.index`` (its position in that commit), all written to one partition (``partition``,
default 0) by an idempotent producer, so a partition holds each run's messages in order.

Exactly-once without transactions (tansu, the broker the tests run, accepts transactions but
still delivers an aborted transaction's records to ``read_committed`` readers, so they would not
hide a half-written commit). Under :meth:`~tidal.stream.query.Query.run_durably`:

1. ``commit()`` *stages* the output of the interval: it becomes part of the checkpoint that is
   saved next (``committed`` holds the messages), and nothing is sent yet;
2. once that checkpoint is saved, ``publish()`` sends them (the run's ``on_checkpoint`` calls it,
   and ``commit()`` calls it first for the previous commit in any case);
3. after a crash, ``resume_at(position)`` reads the partition from where the previous commit's
   messages ended, finds which of the restored commit's messages already arrived (by their
   headers) and sends only the others.

So the topic receives each message exactly once, in order, with no reader-side deduplication.
The one window left: a produce request still in the kernel's socket buffer of a process killed
with SIGKILL can reach the broker after the restarted process has read the partition; restarts
take long enough (an interpreter start) that this does not happen in practice, and a reader
that must be certain can drop a repeated (``tidal.run``, ``tidal.commit``, ``tidal.index``).
Without a durable run (``resume_at`` never called) messages are sent as they come.
"""

from __future__ import annotations

import datetime as dt
import json
import uuid

from ..core.batch import EventBatch
from ..core.errors import TidalError
from .kafka import BrokerWatch, _stderr, client_config, with_retries
from .segments import DurableSink


def _plain(v):
    if isinstance(v, dt.datetime | dt.date | dt.time):
        return v.isoformat(sep=" ") if isinstance(v, dt.datetime) else v.isoformat()
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    return str(v)


def physical_records(batch: EventBatch) -> list[dict]:
    """The batch's events as ``{"sync_time", "other_time", ...payload}`` records."""
    batch = batch.compact()
    rb = batch.to_record_batch()
    return rb.to_pylist()


class KafkaSink(DurableSink):
    """Output to ``topic`` on ``brokers``; see the module docstring for the exactly-once protocol."""

    def __init__(self, brokers: str, topic: str, query: str = "query", partition: int = 0,
                 config: dict | None = None, report=None, give_up_after: float | None = None):  # fmt: skip
        from confluent_kafka import Producer

        self.brokers, self.topic, self.query, self.partition = brokers, topic, query, partition
        self.report = report or _stderr
        self.watch = BrokerWatch(brokers, self.report, give_up_after)
        self.config = dict(config or {})
        conf = {**client_config(brokers, self.config), "enable.idempotence": True, "acks": "all",
                "linger.ms": 5, "error_cb": self.watch}  # fmt: skip
        conf.pop("fetch.wait.max.ms", None)  # a consumer setting
        self.producer = Producer(conf)
        self.pending: list[bytes] = []
        self.durable = False
        self.committed: dict | int = 0
        self.published = True
        self.sent = 0
        self._end: int | None = None  # the offset after the last message this run published
        self._errors: list = []

    # -- output ---------------------------------------------------------------------------------
    def on_batch(self, batch: EventBatch) -> None:
        for rec in physical_records(batch):
            self.write(rec)

    def write(self, record: dict) -> None:
        self.write_bytes(json.dumps(record, default=_plain).encode())

    def write_bytes(self, value: bytes) -> None:
        if self.durable:
            self.pending.append(value)
        else:
            self._send(value, [("tidal.query", self.query)])
            self.producer.poll(0)

    def on_completed(self) -> None:
        if not self.durable:
            self._flush()

    def close(self) -> None:
        self._flush()

    # -- exactly once ---------------------------------------------------------------------------
    def commit(self):
        self.publish()  # the previous commit is in a saved checkpoint by now
        run = self.committed["run"]
        seq = self.committed["seq"] + 1
        self.committed = {"run": run, "seq": seq, "messages": self.pending, "start": self._end}
        self.pending = []
        self.published = False
        return self.committed

    def publish(self, present: set | None = None) -> None:
        """Send the staged commit's messages (those not in ``present``) and wait until all arrived."""
        if self.published or not isinstance(self.committed, dict):
            return
        run, seq = self.committed["run"], self.committed["seq"]
        for i, value in enumerate(self.committed["messages"]):
            if present and i in present:
                continue
            headers = [("tidal.query", self.query), ("tidal.run", run), ("tidal.commit", str(seq)),
                       ("tidal.index", str(i))]  # fmt: skip
            self._send(value, headers)
        self._flush()
        self.published = True

    def resume_at(self, position) -> None:
        self.durable = True
        self.pending = []
        if not position:  # a first start
            self.committed = {"run": uuid.uuid4().hex, "seq": 0, "messages": [], "start": None}
            self.published = True
            return
        self.committed = dict(position)
        self._end = position["start"]
        present = self._present(position["run"], position["seq"], position["start"])
        self.published = False
        self.publish(present)

    def _present(self, run: str, seq: int, start: int | None) -> set[int]:
        """Indices of the commit's messages already in the partition, read from ``start`` to its end."""
        from confluent_kafka import Consumer, KafkaError, TopicPartition

        c = Consumer({**client_config(self.brokers, self.config), "group.id": f"tidal-sink-{uuid.uuid4().hex}",
                      "enable.partition.eof": True, "enable.auto.commit": False})  # fmt: skip
        found: set[int] = set()
        try:
            with_retries(f"reading metadata of {self.topic}", lambda: c.list_topics(self.topic, timeout=5), self.watch)
            c.assign([TopicPartition(self.topic, self.partition, start if start is not None else -2)])
            while True:
                for m in c.consume(1000, 0.5):
                    err = m.error()
                    if err is not None:
                        if err.code() == KafkaError._PARTITION_EOF:
                            return found
                        if err.code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
                            return found
                        continue
                    self._end = m.offset() + 1
                    h = dict(m.headers() or [])
                    if h.get("tidal.run") == run.encode() and h.get("tidal.commit") == str(seq).encode():
                        found.add(int(h["tidal.index"]))
                self.watch.check()
        finally:
            c.close()

    # -- the producer ---------------------------------------------------------------------------
    def _send(self, value: bytes, headers) -> None:
        def delivered(err, msg):
            if err is not None:
                self._errors.append(err)
            else:
                self._end = max(self._end or 0, msg.offset() + 1)

        while True:
            try:
                self.producer.produce(self.topic, value=value, partition=self.partition, headers=headers,
                                      on_delivery=delivered)  # fmt: skip
                break
            except BufferError:  # the local queue is full: let deliveries drain it
                self.producer.poll(0.1)
                self.watch.check()
        self.sent += 1

    def _flush(self) -> None:
        while self.producer.flush(1.0):
            self.watch.check()
        if self._errors:
            errs, self._errors = self._errors, []
            raise TidalError(f"kafka: writing to {self.topic}/{self.partition} failed: {errs[0].str()}")
