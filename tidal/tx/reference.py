"""The serial reference: transactions run one at a time, row by row, in plain Python.

``reference(events, access, post=None)`` calls ``access(e, t)`` with each real event (a row object)
and applies its operations to the tables at once, with Python's semantics: the lambdas are called
on Python values, a failed condition undoes the transaction's earlier operations. Every scheduler
must produce what this produces; the tests compare them.
"""

from __future__ import annotations

import numpy as np

from ..expr.compile import row_class
from .engine import TransactionError
from .table import Table


class _Recorder:
    def __init__(self):
        self.ops: list[tuple] = []
        self.nreads = 0

    def read(self, table, key, column, name=None, when=None):
        name = name or f"read{self.nreads}"
        self.nreads += 1
        self.ops.append(("read", table, key, column, None, None, None, when, name))
        return name

    def write(self, table, key, column, value, condition=None, source=None, when=None):
        self.ops.append(("write", table, key, column, value, condition, source, when, None))

    def read_modify(self, table, key, column, fn, condition=None, source=None, when=None):
        self.ops.append(("read_modify", table, key, column, fn, condition, source, when, None))


def _index(table: Table, key, where: str) -> int:
    if table.keys is None:
        if isinstance(key, bool) or not isinstance(key, int | np.integer):
            raise TransactionError(f"{where}: key {key!r} of table {table.name!r} is not an integer")
        if not 0 <= key < table.size:
            raise TransactionError(f"{where}: key {key!r} is outside table {table.name!r} (size {table.size})")
        return int(key)
    i = table._index.get(key, -1)
    if i < 0:
        raise TransactionError(f"{where}: key {key!r} is outside table {table.name!r} ({table.size} keys)")
    return i


def _checked(table: Table, column: str, value, where: str):
    kind = table.columns[column].dtype.kind
    ok = isinstance(value, bool | int | np.integer) or (kind == "f" and isinstance(value, float | np.floating))
    if not ok:
        dtype = table.columns[column].dtype
        raise TransactionError(f"{where}: a {type(value).__name__} value ({value!r}) for the {dtype} column {column}")
    if kind == "i" and not -(2**63) <= int(value) < 2**63:
        raise TransactionError(f"{where}: {value} does not fit the int64 column {table.name}.{column}")
    return value


def reference(events, access, post=None) -> list:
    """Run the transactions of ``events`` (a ``pyarrow.Table`` with a ``sync_time`` or ``time`` column,
    or a list of dicts with ``time``), in order, and return per event ``{"committed": ..., reads}``,
    or ``post(e, r)``."""
    rows = events.to_pylist() if hasattr(events, "to_pylist") else list(events)
    out = []
    for pos, data in enumerate(rows):
        time = data.get("sync_time", data.get("time"))
        where = f"transact: event {pos} (time {time})"
        fields = {k: v for k, v in data.items() if k not in ("sync_time", "other_time")}
        e = row_class(tuple(fields))(**fields) if fields else None
        rec = _Recorder()
        try:
            access(e, rec)
        except Exception as exc:
            raise TransactionError(f"{where}: access raised {type(exc).__name__}: {exc}") from exc
        undo: list[tuple] = []
        reads: dict = {op[8]: None for op in rec.ops if op[0] == "read"}
        committed = True
        try:
            for kind, table, key, column, fn, cond, source, when, name in rec.ops:
                if when is not None and not when:
                    continue
                i = _index(table, key, where)
                col = table.columns[column]
                v = col[i].item()
                args = [v]
                if source is not None:
                    st, sk, sc = source
                    args.append(st.columns[sc][_index(st, sk, where)].item())
                if kind == "read":
                    reads[name] = v
                    continue
                if cond is not None and not _call(cond, args, where):
                    committed = False
                    break
                if kind == "write":
                    value = _call(fn, args[1:], where) if callable(fn) else fn
                else:
                    value = _call(fn, args, where)
                value = _checked(table, column, value, where)
                undo.append((col, i, col[i]))
                col[i] = value
        except BaseException:
            for col, i, old in reversed(undo):
                col[i] = old
            raise
        if not committed:
            for col, i, old in reversed(undo):
                col[i] = old
            reads = {k: None for k in reads}
        r = {"committed": committed, **reads}
        if post is None:
            out.append(r)
        else:
            out.append(post(e, row_class(tuple(r))(**r)))
    return out


def _call(fn, args, where):
    try:
        return fn(*args)
    except Exception as exc:
        raise TransactionError(f"{where}: {type(exc).__name__}: {exc}") from exc
