"""The constant-duration variant: every event lives equally long, so ends arrive in start order.

The endpoint compensation queue is a FIFO: a ring of arrays with a head and a size (compacted to
the front when it would outgrow them), a deque in the Python engine.
"""

from __future__ import annotations

from .base import MODE_FIFO
from .compiled import CompiledEngine
from .kernels import QHEAD, QSIZE, make_sweep
from .python_state import QueuedPythonEngine

_sweep = make_sweep(MODE_FIFO)


class FifoEngine(CompiledEngine):
    mode = MODE_FIFO
    kernel = staticmethod(_sweep)

    def _prepare_queue(self, extra: int) -> None:
        head, size = int(self.st[QHEAD]), int(self.st[QSIZE])
        if head > 0 and head + size + extra > len(self.q_time):  # move the live ends to the front first
            for a in (self.q_time, self.q_gid, self.q_int, self.q_flt, self.q_mv):
                a[:size] = a[head : head + size]
            self.st[QHEAD] = 0
            head = 0
        self._grow_queue(head + size + extra)


class PythonFifoEngine(QueuedPythonEngine):
    mode = MODE_FIFO

    def _peek(self):
        return self.fifo[0][0] if self.fifo else None

    def _pop(self):
        return self.fifo.popleft()

    def _push(self, entry) -> None:
        self.fifo.append(entry)
