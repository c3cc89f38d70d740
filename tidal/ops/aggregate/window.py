"""The tumbling-window variant (unfused): after a window whose duration is at most its hop.

Every event of a window lives exactly the window's interval, so no end needs queueing: when
time moves past a window start, each touched group's result is the interval
``[w, w + duration)`` and its state resets.
"""

from __future__ import annotations

from .base import MODE_WINDOW
from .compiled import CompiledEngine
from .kernels import make_sweep
from .python_state import PythonEngine

_sweep = make_sweep(MODE_WINDOW)


class WindowEngine(CompiledEngine):
    mode = MODE_WINDOW
    kernel = staticmethod(_sweep)


class PythonWindowEngine(PythonEngine):
    mode = MODE_WINDOW

    def _finalize(self, out):
        cur = self.cur
        for g in self.held:
            if self.counts[g] > 0:
                out.append((cur, cur + self.window_len, g, tuple(s.result() for s in self.states[g])))
            del self.states[g]
        self.held.clear()
