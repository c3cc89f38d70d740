"""Feeds: inputs that say how far they have got and reopen there (brokers, growing files, database streams).

Connectors in :mod:`tidal.io` implement :class:`Feed`; a plan's ``Source`` node carries one, and a
running query checkpoints the feed's position with every delivered message.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any


class Feed:
    """An input that can say how far it has got and reopen there.

    ``open(position)`` returns an iterator of messages (``EventBatch``, ``Punctuation``,
    ``LowWatermark``, ``Flush``, ``Completed``); ``position`` is None for a first run, else a
    value an earlier ``position()`` returned. ``position()`` is where the iterator stands
    after the last message it yielded: the query stores it with each delivered message and
    checkpoints it, so it must be plain data (ints, strings, lists, dicts) and, reopened
    there, the feed must yield exactly the messages after that one. An unbounded feed
    simply never ends; when nothing new has arrived for a while it should yield :data:`IDLE`
    (a heartbeat: not delivered, position unchanged), so that the query can checkpoint on time
    and stop cleanly when asked to.
    """

    def open(self, position: Any = None) -> Iterator:
        raise NotImplementedError

    def position(self) -> Any:
        raise NotImplementedError

    def close(self) -> None:
        """Release connections; called when the query stops reading."""


class Idle:
    """A feed's heartbeat: nothing new has arrived yet (never delivered to operators)."""

    def __repr__(self) -> str:
        return "IDLE"


IDLE = Idle()
