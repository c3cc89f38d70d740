"""Running a stream into a Kafka topic, exactly once when durable (see :mod:`tidal.io.kafka_sink`)."""

from __future__ import annotations

from ..io.kafka_sink import KafkaSink
from .query import Query


def to_kafka(
    stream,
    brokers: str,
    topic: str,
    *,
    state: str | None = None,
    name: str = "query",
    every_messages: int = 200,
    partition: int = 0,
    config: dict | None = None,
) -> KafkaSink:
    """Write ``stream``'s physical events to ``topic`` as JSON messages (``sync_time``, ``other_time``, payload).

    With ``state`` (a checkpoint file, as ``run_durable``'s) the run is durable: output is staged
    in each checkpoint and sent once the checkpoint is saved, and after a crash the same call
    sends exactly the messages that had not arrived, so the topic holds each one once. Returns
    the sink (``sink.sent``: messages sent by this run).
    """
    sink = KafkaSink(brokers, topic, query=name, partition=partition, config=config)
    query = Query([stream.node], [sink])
    try:
        if state is None:
            query.run()
            sink.close()
            return sink
        from ..state.store import CheckpointStore

        with CheckpointStore(state) as store:
            query.run_durably(store, name, query.fingerprint, every_messages, on_checkpoint=lambda seq: sink.publish())
        return sink
    finally:
        query.close()
