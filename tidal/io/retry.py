"""Retrying a lost connection with exponential backoff, saying so on standard error.

A connector wraps each call to its server (connect, query, read, write) in :func:`with_retries`:
a connection error is reported with the server, the attempt and the wait, then retried after a
doubling delay (capped); after the last attempt the error is raised as :class:`ConnectionLost`,
naming the server and what failed. Nothing stalls silently.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from ..core.errors import TidalError

T = TypeVar("T")


class ConnectionLost(TidalError):
    """A server stayed unreachable after every retry."""


@dataclass(frozen=True)
class Backoff:
    attempts: int = 8  # tries in all, the first included
    first: float = 0.1  # seconds before the second try; doubles each time
    cap: float = 5.0

    def delays(self):
        d = self.first
        for _ in range(self.attempts - 1):
            yield d
            d = min(d * 2, self.cap)


def report(message: str) -> None:
    print(f"tidal: {message}", file=sys.stderr, flush=True)


def with_retries(
    what: str,
    call: Callable[[], T],
    retryable: tuple[type[BaseException], ...],
    backoff: Backoff = Backoff(),
    on_retry: Callable[[], None] | None = None,
    transient: Callable[[BaseException], bool] | None = None,
) -> T:
    """``call()``, retried on ``retryable`` errors with backoff; ``on_retry`` (to reconnect) runs before each retry."""
    delays = backoff.delays()
    attempt = 1
    while True:
        try:
            return call()
        except retryable as exc:
            if transient is not None and not transient(exc):
                raise  # the server answered, and no retry changes its answer (a wrong password, say)
            delay = next(delays, None)
            if delay is None:
                raise ConnectionLost(f"{what}: gave up after {attempt} attempts: {_first_line(exc)}") from exc
            report(f"{what}: {_first_line(exc)}; retry {attempt} of {backoff.attempts - 1} in {delay:.1f} s")
            time.sleep(delay)
            attempt += 1
            if on_retry is not None:
                try:
                    on_retry()
                except retryable:
                    pass  # the call itself will fail again and count an attempt


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]
