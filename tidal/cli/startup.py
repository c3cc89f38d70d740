"""The command's start-up: the cyclic garbage collector paused while modules load and the query is planned.

Start-up makes many objects (modules, classes, the plan) and few cycles: collections during it
cost a command-line query about 15% of its CPU. :func:`pause` stops them (``entry()`` only: code
calling ``main()`` keeps its own collector); :func:`resume` freezes what exists by then (later
collections do not walk it again) and collects again, once the query is planned.
"""

from __future__ import annotations

import gc

_paused = False


def pause() -> None:
    global _paused
    if gc.isenabled():
        gc.disable()
        _paused = True


def resume() -> None:
    global _paused
    if _paused:
        _paused = False
        gc.freeze()
        gc.enable()
