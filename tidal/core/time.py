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
