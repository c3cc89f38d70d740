"""Sources: where events enter a plan.

A source is either replayable (``open_messages()`` returns the same messages on every call:
files, tables, lists; a restored query skips the number of messages already delivered) or a
:class:`Feed` (brokers, database streams, growing files: reopened at a stored *position*,
such as a Kafka offset per partition, rather than re-read from the start).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from ...ops.base import Operator, PassThrough
from ..node import PlanNode


class Feed:
    """An input that can say how far it has got and reopen there.

    ``open(position)`` returns an iterator of messages (``EventBatch``, ``Punctuation``,
    ``LowWatermark``, ``Flush``, ``Completed``); ``position`` is None for a first run, else a
    value an earlier ``position()`` returned. ``position()`` is where the iterator stands
    after the last message it yielded: the query stores it with each delivered message and
    checkpoints it, so it must be plain data (ints, strings, lists, dicts) and, reopened
    there, the feed must yield exactly the messages after that one. An unbounded feed
    simply never ends; it should yield now and then even when idle (a punctuation or an
    empty batch), so that a query merging it with other sources does not stall.
    """

    def open(self, position: Any = None) -> Iterator:
        raise NotImplementedError

    def position(self) -> Any:
        raise NotImplementedError

    def close(self) -> None:
        """Release connections; called when the query stops reading."""


class Source(PlanNode):
    """Events read by ``open_messages()`` (a fresh iterator of messages on every run), or by a ``feed``."""

    label = "Ingress"

    def __init__(
        self, open_messages: Callable[[], Iterator] | None, schema, props, detail: str, feed: Feed | None = None
    ):
        if open_messages is None:
            if feed is None:
                raise ValueError("a source needs open_messages or a feed")
            open_messages = feed.open
        super().__init__((), schema, props, open_messages=open_messages, detail=detail, feed=feed)

    def make(self) -> Operator:
        return PassThrough()

    def describe(self) -> str:
        return self.detail
