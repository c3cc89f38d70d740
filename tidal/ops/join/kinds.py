"""Codes shared by the join's kernels and operators: event kinds, endpoint-queue kinds, kernel errors."""

from __future__ import annotations

from ...core.time import MIN_TIME

END, START, INTERVAL = 0, 1, 2
FIFO, HEAP = 0, 1
NONE = MIN_TIME  # no open output piece
_ERR_FIFO = 1
_ERR_ORDER = 2
