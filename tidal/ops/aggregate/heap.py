"""The general variant: events of any lifetime, so ends arrive in any order.

The endpoint compensation queue is a binary min-heap on end time (``heapq`` in the Python engine).
"""

from __future__ import annotations

import heapq

from .base import MODE_HEAP
from .compiled import CompiledEngine
from .kernels import QSIZE, make_sweep
from .python_state import QueuedPythonEngine

_sweep = make_sweep(MODE_HEAP)


class HeapEngine(CompiledEngine):
    mode = MODE_HEAP
    kernel = staticmethod(_sweep)

    def _prepare_queue(self, extra: int) -> None:
        self._grow_queue(int(self.st[QSIZE]) + extra)


class PythonHeapEngine(QueuedPythonEngine):
    mode = MODE_HEAP

    def _peek(self):
        return self.queue[0][0] if self.queue else None

    def _pop(self):
        return heapq.heappop(self.queue)

    def _push(self, entry) -> None:
        heapq.heappush(self.queue, entry)
