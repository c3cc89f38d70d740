"""Progress of long runs of the Python API (``to_arrow()``, ``to_pandas()``, ``count()``, ``subscribe()``...).

When standard error is a terminal and a run has lasted :data:`DELAY` seconds, a progress line
(rich) shows the events the sources have delivered, the rate and the time elapsed, redrawn at
most :data:`REFRESH` times a second and removed when the run ends. Off a terminal (a pipe, a log
file, a notebook's captured stderr, tests) nothing is drawn. ``tidal.show_progress(False)`` or
``TIDAL_PROGRESS=0`` turns it off everywhere, ``show_progress(True)`` or ``TIDAL_PROGRESS=1`` on
even off a terminal; ``show_progress(None)`` goes back to deciding by the terminal.

The SQL command line has its own progress bar (``tidal query``, rows read of the file's total).
"""

from __future__ import annotations

import contextlib
import os
import sys
import time

DELAY = 1.0  # seconds a run lasts before its progress appears (short runs never flicker)
REFRESH = 10  # redraws a second at most

_setting: bool | None = None
_console = None  # a rich Console to draw on (tests); None: standard error
_active: list = []  # the display being drawn (a run inside a run, such as a callback's, draws none)


def show_progress(on: bool | None = True, console=None) -> None:
    """Show the progress of long runs: always (True), never (False) or on a terminal (None, the default)."""
    global _setting, _console
    _setting, _console = on, console


@contextlib.contextmanager
def paused():
    """No progress drawn inside the block (a timed run: tidal demo), whatever the setting."""
    global _setting
    saved, _setting = _setting, False
    try:
        yield
    finally:
        _setting = saved


def enabled() -> bool:
    if _setting is not None:
        return _setting
    env = os.environ.get("TIDAL_PROGRESS", "").strip().lower()
    if env in ("0", "false", "no", "off"):
        return False
    if env in ("1", "true", "yes", "on"):
        return True
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # a closed or replaced stderr
        return False


class _Display:
    def __init__(self, delay: float):
        self.started = time.monotonic()
        self.delay = delay
        self.last = 0.0
        self.progress = None
        self.task = None

    def __call__(self, query) -> None:
        now = time.monotonic()
        if now - self.started < self.delay or now - self.last < 1 / REFRESH:
            return
        self.last = now
        if self.progress is None:
            self._open()
        elapsed = max(now - self.started, 1e-9)
        rate = query.events_read / elapsed
        self.progress.update(self.task, completed=query.events_read, rate=f"{rate / 1e6:.2f} M events/s")
        self.progress.refresh()

    def _open(self) -> None:
        from rich.console import Console
        from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        self.progress = Progress(
            SpinnerColumn(),
            TextColumn("tidal: {task.completed:,} events read"),
            TextColumn("{task.fields[rate]}"),
            TimeElapsedColumn(),
            console=_console or Console(stderr=True),
            transient=True,
            auto_refresh=False,
        )
        self.progress.start()
        self.task = self.progress.add_task("run", total=None, rate="")

    def close(self) -> None:
        if self.progress is not None:
            self.progress.stop()


@contextlib.contextmanager
def watching(query, delay: float | None = None):
    """Draw ``query``'s progress while the block runs, if :func:`enabled`."""
    if _active or not enabled() or query.on_progress is not None:
        yield
        return
    display = _Display(DELAY if delay is None else delay)
    query.on_progress = display
    _active.append(display)
    try:
        yield
    finally:
        _active.pop()
        query.on_progress = None
        display.close()
