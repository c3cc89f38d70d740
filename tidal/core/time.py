"""Time in tidal: every timestamp is an int64 tick.

What a tick means is up to the user (SQL maps timestamps to microseconds since the epoch).
``INFINITY`` (the largest int64) is the end of time: a start edge has ``other_time == INFINITY``.
"""

from __future__ import annotations

import numpy as np

TIME_DTYPE = np.dtype(np.int64)
INFINITY = int(np.iinfo(np.int64).max)
MIN_TIME = int(np.iinfo(np.int64).min)


def align_down(t: np.ndarray | int, period: int, offset: int = 0):
    """Largest grid point ``offset + k*period`` that is <= t (works for negative times too)."""
    return t - ((t - offset) % period)


def align_up(t: np.ndarray | int, period: int, offset: int = 0):
    """Smallest grid point ``offset + k*period`` that is >= t."""
    return t + ((offset - t) % period)


# Event times leave room for durations: every start time lies in [EARLIEST, LATEST] and every end
# time in [EARLIEST, LATEST + 1] (a point at LATEST ends there) unless it is INFINITY; every duration,
# shift, window size, offset or timeout is at most MAX_SPAN, so a time plus a span never wraps around
# int64 nor reaches INFINITY. Ingress rejects times outside the range, naming the row; an operator
# whose output would leave it raises, naming the event.
LATEST = 2**62 - 1
EARLIEST = -(2**62)
MAX_SPAN = 2**61
TIME_RANGE_TEXT = "[-2**62, 2**62 - 1]"


def first_out_of_range(times: np.ndarray, allow_infinity: bool = False, latest: int = LATEST) -> int:
    """The position of the first time outside [EARLIEST, latest] (INFINITY allowed if asked), or -1."""
    if len(times) == 0:
        return -1
    lo, hi = int(times.min()), int(times.max())
    if lo >= EARLIEST and (hi <= latest or allow_infinity and hi == INFINITY and _max_finite(times) <= latest):
        return -1
    bad = (times < EARLIEST) | (times > latest)
    if allow_infinity:
        bad &= times != INFINITY
    found = np.flatnonzero(bad)
    return int(found[0]) if len(found) else -1


def _max_finite(times: np.ndarray) -> int:
    finite = times[times != INFINITY]
    return int(finite.max()) if len(finite) else EARLIEST


def check_span(value, what: str) -> None:
    """A duration, shift, size or timeout must fit the room times leave (at most MAX_SPAN either way)."""
    from .errors import PlanError

    if isinstance(value, int | np.integer) and not -MAX_SPAN <= int(value) <= MAX_SPAN:
        raise PlanError(f"{what} {int(value)} is longer than the longest supported span, 2**61 ticks")
