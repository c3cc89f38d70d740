"""Control messages that flow between operators alongside data batches.

* ``Punctuation(t)``: no event with sync time < t will follow; operators flush their output.
* ``LowWatermark(t)``: the same promise across partitions (a merged stream's progress).
* ``Flush()``: push partially filled output batches downstream now.
* ``Completed()``: the stream has ended.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Punctuation:
    time: int


@dataclass(frozen=True, slots=True)
class LowWatermark:
    time: int


@dataclass(frozen=True, slots=True)
class Flush:
    pass


@dataclass(frozen=True, slots=True)
class Completed:
    pass
