"""The in-order queue of the reorder operator and of the Impatience sorter's large pushes: the elements that
arrived at or above every time before them.

No temporal semantics of its own (:mod:`tidal.ops.reorder` and :mod:`tidal.ops.impatience` state them).
Such elements are already sorted by (time, row id), so they need no sorting: their (time, row id) pairs
are appended to one growable buffer, written there directly by the splitting kernel, and a release reads
the buffer's prefix up to the punctuation in place (no list of chunks to concatenate). The buffer is
compacted (its live part moved to the front) or doubled when an append does not fit.
"""

from __future__ import annotations

import numpy as np


def scratch(buffer: np.ndarray, n: int) -> np.ndarray:
    """``buffer`` if it holds ``n`` int64s, else a larger one, for the caller to keep and reuse (fresh memory
    costs a page fault per 4 KiB page touched: per batch, that was a large share of a release)."""
    if len(buffer) >= n:
        return buffer
    return np.empty(max(n, 2 * len(buffer)), dtype=np.int64)


def _numpy_empty(n: int) -> np.ndarray:
    return np.empty(n, dtype=np.int64)


class InOrderQueue:
    """(time, row id) pairs sorted by both, held in ``times[head:tail]`` and ``rows[head:tail]``."""

    __slots__ = ("times", "rows", "head", "tail", "empty")

    def __init__(self, capacity: int = 1024, empty=None):
        self.empty = empty or _numpy_empty  # allocates the buffers when they grow (or are handed off)
        self.times = self.empty(capacity)
        self.rows = self.empty(capacity)
        self.head = 0
        self.tail = 0

    def __len__(self) -> int:
        return self.tail - self.head

    def reserve(self, n: int) -> int:
        """Room for ``n`` more pairs after ``tail`` (returned); the live pairs may move, so views from
        :meth:`view` are invalid afterwards."""
        if self.tail + n <= len(self.times):
            return self.tail
        live = self.tail - self.head
        if 2 * (live + n) > len(self.times):
            size = max(2 * (live + n), 2 * len(self.times))
            times, rows = self.empty(size), self.empty(size)
            times[:live] = self.times[self.head : self.tail]
            rows[:live] = self.rows[self.head : self.tail]
            self.times, self.rows = times, rows
        elif live:
            self.times[:live] = self.times[self.head : self.tail]  # numpy copies overlapping ranges safely
            self.rows[:live] = self.rows[self.head : self.tail]
        self.head, self.tail = 0, live
        return self.tail

    def append(self, times: np.ndarray, rows: np.ndarray) -> None:
        n = len(times)
        if n:
            at = self.reserve(n)
            self.times[at : at + n] = times
            self.rows[at : at + n] = rows
            self.tail = at + n

    def count_le(self, upto: int) -> int:
        """How many queued pairs have time ``<= upto`` (a prefix: the times increase)."""
        if self.tail == self.head or self.times[self.head] > upto:
            return 0
        if self.times[self.tail - 1] <= upto:
            return self.tail - self.head
        return int(np.searchsorted(self.times[self.head : self.tail], upto, side="right"))

    def view(self, count: int) -> tuple[np.ndarray, np.ndarray]:
        """The first ``count`` pairs, in place (valid until the next append)."""
        return self.times[self.head : self.head + count], self.rows[self.head : self.head + count]

    def pop(self, count: int) -> None:
        self.head += count
        if self.head == self.tail:
            self.head = self.tail = 0

    def live(self) -> tuple[np.ndarray, np.ndarray]:
        """Copies of the queued times and row ids."""
        return self.times[self.head : self.tail].copy(), self.rows[self.head : self.tail].copy()

    def hand_off(self, count: int, room: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """The first ``count`` pairs for the caller to keep, without a copy: views of the buffers themselves.
        The pairs after them move to fresh buffers, with room for a quarter more than
        was taken and kept (the next release's pairs, if they come as often, fit without growing), or, when not
        ``room`` (the end of the stream), only for those kept."""
        old_t, old_r, head, tail = self.times, self.rows, self.head, self.tail
        rest = tail - head - count
        size = max(rest + count + count // 4 if room else rest, 1024)
        self.times, self.rows = self.empty(size), self.empty(size)
        self.times[:rest] = old_t[head + count : tail]
        self.rows[:rest] = old_r[head + count : tail]
        self.head, self.tail = 0, rest
        return old_t[head : head + count], old_r[head : head + count]
