"""The command's start-up: the cyclic garbage collector paused while modules load and the query is planned.

Start-up makes many objects (modules, classes, the plan) and few cycles: collections during it
cost a command-line query about 15% of its CPU. :func:`pause` stops them (``entry()`` only: code
calling ``main()`` keeps its own collector); :func:`resume` freezes what exists by then (later
collections do not walk it again) and collects again, once the query is planned.

:func:`one_blas_thread`: numpy's OpenBLAS starts a pool of threads when numpy loads (pyarrow loads
numpy), and they spin waiting for work for a while: on a 2-core machine that was 60 ms of CPU for
each ``tidal query``, about a fifth of it. tidal never calls BLAS (no matrix products), so the command
asks for one BLAS thread, unless the user chose a number (``OPENBLAS_NUM_THREADS`` set: kept).
"""

from __future__ import annotations

import gc
import os
import sys

BLAS_THREADS = "OPENBLAS_NUM_THREADS"

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


def begin() -> None:
    """The `tidal` command's start (``entry()``): :func:`pause`, then :func:`one_blas_thread`."""
    pause()
    one_blas_thread()


def one_blas_thread() -> None:
    """Ask OpenBLAS for one thread (``entry()`` only, before numpy loads; a value the user set is kept)."""
    if "numpy" not in sys.modules:  # read when OpenBLAS loads: later it changes nothing
        os.environ.setdefault(BLAS_THREADS, "1")
