"""Sources: where events enter a plan.

A source is either replayable (``open_messages()`` returns the same messages on every call:
files, tables, lists; a restored query skips the number of messages already delivered) or a
:class:`Feed` (brokers, database streams, growing files: reopened at a stored *position*,
such as a Kafka offset per partition, rather than re-read from the start).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from ...core.feed import Feed
from ...ops.base import Operator, PassThrough
from ..node import PlanNode

__all__ = ["Feed", "Source"]


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
