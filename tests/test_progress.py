"""Progress of long Python API runs: drawn (rich) on a terminal once a run lasts a while, never
off a terminal; the answer is the same either way."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from rich.console import Console

import tidal
from tidal.stream import progress

ROOT = Path(__file__).resolve().parents[1]


def _stream(n: int = 400_000):
    t = np.arange(n, dtype=np.int64)
    return tidal.from_arrow(pa.table({"t": t, "k": t % 7}), time="t", batch_size=5_000).where(lambda e: e.k != 3)


@pytest.fixture
def restore():
    yield
    progress.show_progress(None)


def test_on_a_terminal_a_long_run_shows_events_read(restore, monkeypatch):
    screen = io.StringIO()
    progress.show_progress(True, console=Console(file=screen, force_terminal=True, width=100))
    monkeypatch.setattr(progress, "DELAY", 0.0)
    monkeypatch.setattr(progress, "REFRESH", 1e9)  # draw at every batch
    assert _stream().count() == 400_000 - len(range(3, 400_000, 7))
    drawn = screen.getvalue()
    shown = [int(x.replace(",", "")) for x in re.findall(r"tidal: ([\d,]+) events read", drawn)]
    assert shown and shown == sorted(shown) and max(shown) <= 400_000 and "M events/s" in drawn


def test_a_short_run_draws_nothing(restore):
    screen = io.StringIO()
    progress.show_progress(True, console=Console(file=screen, force_terminal=True))
    assert _stream(1_000).count() > 0  # well under DELAY
    assert screen.getvalue() == ""


def test_off_a_terminal_nothing_is_drawn(tmp_path):
    # a child whose standard error is a file, TIDAL_PROGRESS unset: no progress, even with no delay
    code = (
        "import tidal, numpy as np, pyarrow as pa\n"
        "from tidal.stream import progress\n"
        "progress.DELAY = 0.0\n"
        "t = np.arange(300_000)\n"
        "print(tidal.from_arrow(pa.table({'t': t}), time='t', batch_size=1000).count())\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "TIDAL_PROGRESS"} | {"PYTHONPATH": str(ROOT)}
    with open(tmp_path / "err", "w") as err:
        done = subprocess.run([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=err, env=env, timeout=300)
    assert done.stdout.decode().strip() == "300000"
    assert (tmp_path / "err").read_text() == ""


def test_the_switch_and_the_environment(restore, monkeypatch):
    monkeypatch.setenv("TIDAL_PROGRESS", "1")
    assert progress.enabled()
    monkeypatch.setenv("TIDAL_PROGRESS", "0")
    assert not progress.enabled()
    tidal.show_progress(True)
    assert progress.enabled()  # the call wins over the environment
    tidal.show_progress(False)
    assert not progress.enabled()
