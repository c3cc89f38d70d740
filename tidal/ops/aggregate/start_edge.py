"""The start-edge variant: no event ever ends (every ``other`` is infinity), so no endpoint queue.

A group's result changes only when an event starts; each change is the previous result's end
edge and the new one's start edge. Chosen when the stream's properties say start edges only.
"""

from __future__ import annotations

from .base import MODE_NONE
from .compiled import CompiledEngine
from .kernels import make_sweep
from .python_state import PythonEngine

_sweep = make_sweep(MODE_NONE)


class StartEdgeEngine(CompiledEngine):
    mode = MODE_NONE
    kernel = staticmethod(_sweep)


PythonStartEdgeEngine = PythonEngine  # the Python engine's own behaviour is this variant's
