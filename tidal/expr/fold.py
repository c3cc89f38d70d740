"""Filter-and-accumulate kernels: a where's predicate compiled into an aggregate's input loop.

One pass over a batch tests each row and, where the predicate holds, adds the row's contributions
to the aggregate's running sums: no mask, no kept positions, no gathered columns. What comes out
is the aggregate's input in a compact form, rows in time order:

* **merged** (every contribution adds exactly: counts, integer sums, the integer columns' float
  sums that only bound an overflow, min and max): one row per run of equal times and group key, in
  the order the groups are first touched in the run, carrying the number of events it stands for;
  grouping by key value goes through an open-addressing table whose slots are stamped with the
  run, so it is never cleared;
* **per event** (float sums, whose rounding depends on the order of additions, a variance's raw values, and order
  aggregates that keep every value): one row per kept event with its contributions.

A contribution follows the aggregate engine's own (``tidal.ops.aggregate.base.ArgumentValues``):
an event is valid for an argument unless its value is NaN; a float sum adds the value (0 when not
valid); an order key is the integer itself or the float's order-preserving bits. Columns with
nulls never reach these kernels (the caller takes the general path for such a batch).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .jit import _numpy, _source, load_kernel
from .nodes import Node

_INT64_MAX = 2**63 - 1
_INT64_MIN = -(2**63)
_NO_ABSENT = np.zeros(0, np.bool_)


@dataclass(frozen=True)
class FoldSpec:
    """What one aggregate reads, by source column: ``ints`` the integer slots (``("valid" | "value",
    column)``), ``floats`` the float slots (``("value" | "dev" | "dev2", column)``: a variance's
    shifted slots take the raw value, the aggregate's sweep shifts it by its group's pivot), ``orders``
    the order slots (column, kind: 0 min, 1 max, else an order aggregate that keeps every value), ``key`` the
    integer group column (None: one group)."""

    ints: tuple[tuple[str, str], ...]
    floats: tuple[tuple[str, str], ...]
    orders: tuple[tuple[str, int], ...]
    key: str | None

    def columns(self) -> set[str]:
        cols = {c for _, c in self.ints} | {c for _, c in self.floats} | {c for c, _ in self.orders}
        return cols | ({self.key} if self.key else set())

    def merges(self, dtypes: dict[str, np.dtype]) -> bool:
        """Whether equal-time rows of a group can be added up in the kernel with no change to any result."""
        if any(dtypes[c].kind == "f" or what in ("dev", "dev2") for what, c in self.floats):
            return False  # float sums round by order; shifted sums need each value
        return all(kind in (0, 1) for _, kind in self.orders)


def fold_body(predicate: Node, spec: FoldSpec, dtypes: dict[str, np.dtype], with_absent: bool) -> str:
    """Source of the kernel (see :func:`compile_fold` for its arguments)."""
    cols = sorted(dtypes)
    names = {c: f"c{i}" for i, c in enumerate(cols)}
    merge = spec.merges(dtypes)
    params = ["n", "absent", "sync", *(names[c] for c in cols), "tk", "tr", "ts", "st", "shift"]
    params += ["o_sync", "o_key", "o_wt", "o_ic", "o_fc", "o_mv"]
    lines = [f"def kernel({', '.join(params)}):"]
    lines += ["    fb = np.empty(1, np.float64)", "    ib = fb.view(np.int64)", "    mask = len(tk) - 1"]
    lines += ["    limit = len(tk) >> 1", "    stamp = st[0]", "    k = 0", "    first = 0", "    cur = 0"]
    lines += ["    for i in range(n):"]
    if with_absent:
        lines += ["        if absent[i]:", "            continue"]
    lines += [f"        if not ({_source(predicate, names, dtypes)}):", "            continue", "        t = sync[i]"]
    key = f"np.int64({names[spec.key]}[i])" if spec.key else "0"
    lines += [f"        key = {key}"]
    body = []
    if merge:
        lines += [
            "        if k == 0 or t != cur:",
            "            cur = t",
            "            stamp += 1",
            "            first = k",
        ]
        if spec.key:
            lines += [
                "        slot = np.int64((np.uint64(key) * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(shift))",
                "        while True:",
                "            if ts[slot] != stamp:",
                "                if k - first >= limit:",
                "                    return -1",
                "                ts[slot] = stamp",
                "                tk[slot] = key",
                "                tr[slot] = k",
                "                r = k",
                "                k += 1",
                "                new = True",
                "                break",
                "            if tk[slot] == key:",
                "                r = tr[slot]",
                "                new = False",
                "                break",
                "            slot = (slot + 1) & mask",
            ]
        else:
            lines += ["        new = k == first", "        if new:", "            r = k", "            k += 1"]
            lines += ["        else:", "            r = first"]
        lines += [
            "        if new:",
            "            o_sync[r] = t",
            "            o_key[r] = key",
            "            o_wt[r] = 0",
        ]
        lines += [f"            o_ic[r, {j}] = 0" for j in range(len(spec.ints))]
        lines += [f"            o_fc[r, {j}] = 0.0" for j in range(len(spec.floats))]
        lines += [
            f"            o_mv[r, {j}] = {_INT64_MAX if kind == 0 else _INT64_MIN}"
            for j, (_, kind) in enumerate(spec.orders)
        ]
        lines += ["        o_wt[r] += 1"]
    else:
        lines += ["        r = k", "        k += 1", "        o_sync[r] = t", "        o_key[r] = key"]
    op = "+=" if merge else "="
    for j, (what, c) in enumerate(spec.ints):
        x = f"{names[c]}[i]"
        floating = dtypes[c].kind == "f"
        if what == "valid":
            value = f"(1 if {x} == {x} else 0)" if floating else "1"
        else:
            value = f"np.int64({x})"
        body.append(f"        o_ic[r, {j}] {op} {value}")
    for j, (_, c) in enumerate(spec.floats):
        x = f"{names[c]}[i]"
        value = f"float({x})"
        if dtypes[c].kind == "f":
            value = f"({x} if {x} == {x} else 0.0)"
        body.append(f"        o_fc[r, {j}] {op} {value}")
    for j, (c, kind) in enumerate(spec.orders):
        x = f"{names[c]}[i]"
        if dtypes[c].kind == "f":
            # the float's order-preserving bits (NaN never counts: its row is not valid for this argument)
            body += [f"        fb[0] = {x} + 0.0", "        b = ib[0]", f"        v = b ^ {_INT64_MAX} if b < 0 else b"]
        else:
            body.append(f"        v = np.int64({x})")
        if not merge:
            body.append(f"        o_mv[r, {j}] = v")
        elif kind == 0:
            body.append(f"        if v < o_mv[r, {j}] and {x} == {x}:\n            o_mv[r, {j}] = v")
        else:
            body.append(f"        if v > o_mv[r, {j}] and {x} == {x}:\n            o_mv[r, {j}] = v")
    lines += body
    lines += ["    st[0] = stamp", "    return k", ""]
    return "\n".join(lines)


class FoldKernel:
    """A compiled filter-and-accumulate loop for one predicate, aggregate layout and set of column types.

    ``run(columns, n, absent, sync) -> (sync, key, weight, ints, floats, orders)``: the compact rows
    (``weight`` None when each row is one event)."""

    def __init__(self, predicate: Node, spec: FoldSpec, dtypes: dict[str, np.dtype], with_absent: bool):
        self.spec, self.dtypes = spec, dtypes
        self.cols = sorted(dtypes)
        self.merge = spec.merges(dtypes)
        self.body = fold_body(predicate, spec, dtypes, with_absent)
        self.fn = None
        self.stamp = np.zeros(1, np.int64)
        self._table(1024)
        self._cap = -1

    def _table(self, size: int) -> None:
        self.tk = np.zeros(size, np.int64)
        self.tr = np.zeros(size, np.int64)
        self.ts = np.zeros(size, np.int64)  # stamps: a slot is in use in the current run when it holds its stamp
        self.shift = 64 - (size.bit_length() - 1)

    def compile(self) -> None:
        self.fn = load_kernel(self.body)

    def _room(self, n: int) -> None:
        """Output buffers for ``n`` rows, kept between batches (the caller copies what it keeps)."""
        if n <= self._cap:
            return
        spec, cap = self.spec, max(n, 2 * self._cap)
        self._cap = cap
        self.o_sync = np.empty(cap, np.int64)
        self.o_key = np.empty(cap, np.int64)
        self.o_wt = np.empty(cap if self.merge else 0, np.int64)
        self.o_ic = np.empty((cap, len(spec.ints)), np.int64)
        self.o_fc = np.empty((cap, len(spec.floats)), np.float64)
        self.o_mv = np.empty((cap, len(spec.orders)), np.int64)

    def run(self, columns, n: int, absent, sync: np.ndarray):
        """The batch's compact rows: views of buffers that the next call overwrites."""
        inputs = [_numpy(columns[c]) for c in self.cols]
        absent = _NO_ABSENT if absent is None else absent
        self._room(n)
        while True:
            k = self.fn(n, absent, sync, *inputs, self.tk, self.tr, self.ts, self.stamp, self.shift,
                        self.o_sync, self.o_key, self.o_wt, self.o_ic, self.o_fc, self.o_mv)  # fmt: skip
            if k >= 0:
                break
            self._table(4 * len(self.tk))  # more groups in one run than the table holds at half load
        weight = self.o_wt[:k] if self.merge else None
        return self.o_sync[:k], self.o_key[:k], weight, self.o_ic[:k], self.o_fc[:k], self.o_mv[:k]
