"""Shared pieces of the fuzzers: a worker process that runs ``tidal query`` in-process (fast: one
interpreter for every query) and can be killed when a query hangs, and the verdict on one run.

A run is acceptable when it exits 0, or exits 2 having printed one line ``tidal: ...`` (followed only
by an indented excerpt: the query with a caret) and no traceback. Anything else (status 1 or 3, a
traceback, an "internal error", a hang past the timeout) is a failure naming the query.
"""

from __future__ import annotations

import contextlib
import io
import multiprocessing
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = int(os.environ.get("TIDAL_FUZZ_EXAMPLES", "0"))  # a longer run: TIDAL_FUZZ_EXAMPLES=5000
TIMEOUT = float(os.environ.get("TIDAL_FUZZ_TIMEOUT", "30"))  # seconds one query may take


def _serve(conn, directory: str) -> None:  # pragma: no cover - runs in the worker process
    sys.path.insert(0, str(ROOT))
    os.chdir(directory)
    import warnings

    from tidal.cli.main import main as cli

    warnings.simplefilter("ignore")
    while True:
        argv = conn.recv()
        if argv is None:
            return
        out, err = io.StringIO(), io.StringIO()
        stdin = sys.stdin
        sys.stdin = io.TextIOWrapper(io.BytesIO(b""))  # a query of stdin.csv reads nothing, never waits
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                try:
                    status = cli(argv)
                except SystemExit as exc:  # argparse
                    status = exc.code if isinstance(exc.code, int) else 1
                except BaseException as exc:  # an escape from main() itself: the test reports it
                    status = -1
                    err.write(f"ESCAPED {type(exc).__name__}: {exc}\n")
        finally:
            sys.stdin = stdin
        text = err.getvalue()  # its head (the 'tidal: ' line, however long it is) and its tail
        conn.send((status, out.getvalue()[-200_000:], text if len(text) <= 8000 else text[:4000] + text[-4000:]))


class Worker:
    """A process running ``tidal query`` in-process, one argv at a time, killed if it takes too long."""

    def __init__(self, directory: Path):
        self.directory = directory
        self.proc = None
        self.conn = None

    def _start(self) -> None:
        ctx = multiprocessing.get_context("spawn")
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_serve, args=(child, str(self.directory)), daemon=True)
        self.proc.start()

    def run(self, argv: list[str], timeout: float = TIMEOUT) -> tuple[int, str, str] | None:
        """``(status, stdout, stderr)``, or None when the query did not finish within ``timeout``."""
        if self.proc is None or not self.proc.is_alive():
            self._start()
        self.conn.send(argv)
        if not self.conn.poll(timeout + 15):  # the first query also imports tidal
            self.proc.kill()
            self.proc.join()
            self.proc = None
            return None
        try:
            return self.conn.recv()
        except (EOFError, OSError):  # the worker died: a crash of the interpreter (or killed for memory)
            self.proc.join()
            code = self.proc.exitcode
            self.proc = None
            return -100, "", f"the process running the query died (exit code {code})"

    def close(self) -> None:
        if self.proc is not None and self.proc.is_alive():
            self.conn.send(None)
            self.proc.join(5)
            if self.proc.is_alive():
                self.proc.kill()


def verdict(argv: list[str], got: tuple[int, str, str] | None) -> str | None:
    """Why this run is a failure, or None when it is acceptable."""
    shown = " ".join(repr(a) if " " in a else a for a in argv)
    if got is None:
        return f"no answer within {TIMEOUT:.0f} s: {shown}"
    status, _, err = got
    if status == 0:
        if "Traceback" in err:
            return f"status 0 with a traceback on stderr: {shown}\n{err}"
        return None
    if status != 2:
        return f"status {status}: {shown}\n{err}"
    lines = [line for line in err.rstrip("\n").splitlines() if not line.startswith("tidal: warning: ")]
    if not lines or not lines[0].startswith("tidal: "):
        return f"rejected without a 'tidal: ' line: {shown}\n{err}"
    if "Traceback" in err or "internal error" in err:
        return f"rejected with a traceback: {shown}\n{err}"
    if any(not line.startswith("  ") for line in lines[1:]):
        return f"rejected in more than one line: {shown}\n{err}"
    return None
