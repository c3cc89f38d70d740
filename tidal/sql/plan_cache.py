"""Plans of repeated queries, kept only while everything they were made from is unchanged.

Planning a query (parsing, building, rewriting) reads only the query's text, the settings
:func:`.query.plan` takes, the working directory (relative paths) and each input file's schema
(Parquet's footer, a CSV file's sample). A plan is kept under its text, settings and working
directory, with a stamp of every file it reads: ``(path, device, inode, size, mtime_ns, ctime_ns)``
from ``os.stat``. A later :func:`.query.plan` of the same text and settings reuses it only when every
file's stamp is the same again (a file rewritten, replaced or touched is planned afresh).

A plan is never kept when it could be different if made again from the same inputs:

* its text calls a volatile function (``now()``, ``current_timestamp``, ``current_date``,
  ``random()``, ...): constant folding would have evaluated it at planning time;
* it reads anything but regular files and rows written in the query: standard input, growing
  inputs (``tail``), globs, folders, Kafka, PostgreSQL, Redis;
* it was planned against a catalog (CREATE TABLE / VIEW of a script or the shell);
* its rows written in the query are large (they would stay in memory);
* a file it reads changed within :data:`FRESH_NS` before planning began (it may have changed while
  it was planned, after its schema was read).

Each reuse gets its own :class:`.logical.Query` (a shallow copy: the CLI renames an INSERT's output
columns on it) and its own run state; the plan nodes are immutable and shared.
"""

from __future__ import annotations

import dataclasses
import os
import threading
from collections import OrderedDict

from sqlglot import exp

from .logical import Node, Query
from .logical.nodes import Scan
from .rules import Applied

KEEP = 64  # plans kept, the least recently used dropped first
_FILE_FORMATS = {"csv", "json", "parquet", "arrow"}  # Scan formats read from a local file
_WRITTEN = {"inline", "no FROM"}  # rows written in the query (VALUES, range, SELECT without FROM)
_INLINE_BYTES = 1 << 20  # larger rows written in the query are not kept
# a file changed this shortly before planning began may have changed while it was planned (and file
# times come from a clock that lags by a few milliseconds): its plan is not kept
FRESH_NS = 100_000_000
_VOLATILE_CLASSES = tuple(
    c
    for c in (
        getattr(exp, name, None)
        for name in (
            "CurrentTimestamp",
            "CurrentDate",
            "CurrentTime",
            "CurrentDatetime",
            "CurrentTimestampLTZ",
            "Localtime",
            "Localtimestamp",
            "Rand",
            "Randn",
            "Random",
            "Uuid",
            "GenerateUuid",
            "SysDate",
        )  # fmt: skip
    )
    if isinstance(c, type)
)
_VOLATILE_NAMES = {
    "now", "current_timestamp", "current_date", "current_time", "localtime", "localtimestamp", "today",
    "random", "rand", "uuid", "gen_random_uuid", "setseed", "transaction_timestamp", "get_current_time",
}  # fmt: skip

_plans: OrderedDict = OrderedDict()
_lock = threading.Lock()


def volatile(tree: exp.Expression) -> bool:
    """Whether the parsed statement calls a function whose value changes from one evaluation to the next."""
    for node in tree.walk():
        if isinstance(node, _VOLATILE_CLASSES):
            return True
        if isinstance(node, exp.Func) and node.sql_name().lower() in _VOLATILE_NAMES:
            return True
        if isinstance(node, exp.Anonymous) and str(node.this).lower() in _VOLATILE_NAMES:
            return True
        if isinstance(node, exp.Column) and not node.table and node.name.lower() in _VOLATILE_NAMES:
            return True  # current_date without parentheses, read as a column by some dialects
    return False


def _scans(value, out: list, seen: set) -> None:
    """Every Scan under ``value`` (a plan node, a Query, or a container of them), by every field."""
    if not isinstance(value, Node | Query | tuple | list | dict):  # names, types, expressions: no Scan inside
        return
    if id(value) in seen:
        return
    seen.add(id(value))
    if isinstance(value, Scan):
        out.append(value)
    if isinstance(value, Node | Query) and dataclasses.is_dataclass(value):
        for f in dataclasses.fields(value):
            if f.name != "rows":
                _scans(getattr(value, f.name), out, seen)
    elif isinstance(value, tuple | list):
        for v in value:
            _scans(v, out, seen)
    elif isinstance(value, dict):
        for v in value.values():
            _scans(v, out, seen)


def _stamp(path: str) -> tuple | None:
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    if not os.path.isfile(path):  # (S_ISREG: not a folder, a pipe or a device)
        return None
    return (path, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def stamps(query: Query, began_ns: int) -> tuple | None:
    """The stamps of the files ``query`` reads, or None when it reads anything else or a file that
    changed after ``began_ns`` less :data:`FRESH_NS` (``time.time_ns()`` when planning began)."""
    scans: list[Scan] = []
    _scans(query, scans, set())
    out = []
    for scan in scans:
        if scan.format in _WRITTEN and not scan.live:
            if scan.rows is not None and scan.rows.nbytes > _INLINE_BYTES:
                return None
            continue
        if scan.format not in _FILE_FORMATS or scan.live:
            return None
        stamp = _stamp(scan.path)
        if stamp is None or max(stamp[4], stamp[5]) >= began_ns - FRESH_NS:
            return None
        out.append(stamp)
    return tuple(sorted(set(out)))


def key(text: str, settings: tuple) -> tuple | None:
    """The cache key of a query's text and settings (None: the working directory is gone)."""
    try:
        cwd = os.getcwd()
    except OSError:
        return None
    return (text, settings, cwd)


def get(k: tuple | None):
    """``(query, optimized, rules applied)`` planned before under ``k``, its files unchanged since, or None."""
    if k is None:
        return None
    with _lock:
        entry = _plans.get(k)
        if entry is None:
            return None
        _plans.move_to_end(k)
    files, query, optimized, applied = entry
    if any(_stamp(f[0]) != f for f in files):
        with _lock:
            _plans.pop(k, None)
        return None
    return dataclasses.replace(query), optimized, applied  # (immutable: rules.Applied or a tuple)


def put(k: tuple | None, began_ns: int, calls_volatile: bool, query: Query, optimized: Node, applied):
    """Keep the plan under ``k`` when it may be reused (see the module's docstring): planning began
    at ``began_ns`` (``time.time_ns()``); ``calls_volatile``: :func:`volatile` of the parsed statement."""
    if k is None or calls_volatile:
        return
    files = stamps(query, began_ns)
    if files is None:
        return
    with _lock:
        kept = applied if isinstance(applied, Applied) else tuple(applied)
        _plans[k] = (files, dataclasses.replace(query), optimized, kept)
        _plans.move_to_end(k)
        while len(_plans) > KEEP:
            _plans.popitem(last=False)


def clear() -> None:
    with _lock:
        _plans.clear()
