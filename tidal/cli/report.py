"""How the command line reports a failure: one line a person can act on, never a traceback.

* a :class:`~tidal.errors.TidalError` (the query or its input was rejected): ``tidal: <message>``
  and exit status 2; a syntax error's message goes on with the query and a caret under the place;
* an operating system error (a file that cannot be written, a full disk): ``tidal: <what>`` and 2;
* Ctrl-C: ``tidal: interrupted`` and 130, as shells expect;
* anything else is tidal's fault: ``tidal: internal error, please report it ...`` with the error and
  the query, exit status 3.

``--debug`` (or ``TIDAL_DEBUG=1``) prints the traceback first.
"""

from __future__ import annotations

import errno
import os
import sys
import traceback

REJECTED = 2
INTERNAL = 3
INTERRUPTED = 130


def _one_line(text: str, limit: int = 300) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def debugging(args) -> bool:
    return bool(getattr(args, "debug", False)) or os.environ.get("TIDAL_DEBUG", "") not in ("", "0")


def message(exc: BaseException, args) -> tuple[str, int]:
    """What to print on standard error for ``exc``, and the exit status."""
    from tidal.core.errors import InternalError, TidalError

    if isinstance(exc, KeyboardInterrupt):
        return "tidal: interrupted", INTERRUPTED
    if isinstance(exc, TidalError) and not isinstance(exc, InternalError):
        text = str(exc).rstrip("\n") or type(exc).__name__
        first, _, rest = text.partition("\n")
        # a message's further lines are an excerpt of the user's text (a query with a caret), indented
        rest_lines = [line if line.startswith("  ") else "  " + line for line in rest.splitlines()]
        return "\n".join([f"tidal: {first}", *rest_lines]), REJECTED
    if isinstance(exc, MemoryError):
        return "tidal: out of memory (try a smaller input, or a window that bounds the state)", REJECTED
    if isinstance(exc, OSError) and not isinstance(exc, BlockingIOError):
        what = exc.strerror or str(exc)
        if exc.errno == errno.ENOSPC:
            what = "no space left on device (the disk is full)"
        where = f": {exc.filename}" if exc.filename else ""
        return f"tidal: {_one_line(what)}{where}", REJECTED
    sql = getattr(args, "sql", None)
    query = f"; query: {_one_line(sql, 500)}" if sql else ""
    return (
        "tidal: internal error, please report it with the query and the output of --debug: "
        f"{type(exc).__name__}: {_one_line(exc)}{query}",
        INTERNAL,
    )


def show_warnings() -> None:
    """tidal's warnings as one line each (``tidal: warning: ...``), not Python's two with a source line."""
    import warnings

    from tidal.core.errors import TidalWarning

    plain = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None):
        if issubclass(category, TidalWarning):
            print(f"tidal: warning: {_one_line(message, 1000)}", file=sys.stderr)
        else:
            plain(message, category, filename, lineno, file, line)

    warnings.showwarning = show


def report(exc: BaseException, args) -> int:
    """Print ``exc`` for a person (and its traceback with ``--debug``); return the exit status."""
    if debugging(args):
        traceback.print_exception(exc, file=sys.stderr)
    text, status = message(exc, args)
    print(text, file=sys.stderr)
    return status
