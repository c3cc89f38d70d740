"""The window join's kernels: staging, linking each left event to its key's previous one, and the walk
that pairs each right point with its key's alive left events (optionally writing their payload)."""

from __future__ import annotations

import numba
import numpy as np

from ...core.time import INFINITY
from ...expr import jit


@numba.njit(cache=True)
def _stage_window(sync, other, points, absent, kid, base, dense, length, hop, offset, off, s_sync, s_gid, s_row):
    """:func:`_stage` for the window join, which reads only the time, key and row of each present event; also
    checks each is an interval of ``length`` ticks (starting on the grid ``hop``, ``offset`` when ``hop > 0``).
    Returns (end offset, whether one is not)."""
    has_absent = len(absent) > 0
    w = off
    r = 0
    bad = False
    last = sync[0] if len(sync) else 0
    if hop > 0 and len(sync):
        bad |= (last - offset) % hop != 0
    for i in range(len(sync)):
        keep = 1 - np.int64(absent[i]) if has_absent else 1
        t = sync[i]
        if not points:
            bad |= (keep == 1) & (other[i] - t != length)
        if hop > 0 and t != last:  # a window's events share their start: checked once per start
            bad |= (t - offset) % hop != 0
            last = t
        s_sync[w] = t
        s_gid[w] = kid[i]
        s_row[w] = base + (r if dense else i)
        w += keep
        r += keep
    bad |= points and length != 1 and w > off
    return w, bad


@numba.njit(cache=True)
def probe_link(sync, gid, n0, n, a_start, a_row, a_prev, row, tail, off, last, link):
    """The window join's first pass over a chunk (left events ``[0, n0)``, right points ``[n0, n)``, each run in
    time order): merged by time (left first on ties) without branching on which comes next, each left event
    gets the next left id and is linked to the previous left event of its key; each right point records the
    latest left event of its key before it (``link``). Key slot 0 takes the null keys (never probed)."""
    i = 0
    j = n0
    for _ in range(n):
        ta = sync[i] if i < n0 else INFINITY
        tb = sync[j] if j < n else INFINITY
        left = np.int64(ta <= tb)  # 1: the next event is the left's; selections below are arithmetic
        e = j + (i - j) * left
        ge = gid[e]
        g = (ge + 1) * np.int64(ge >= 0)
        v = last[g]
        link[e] = v
        last[g] = v + (tail + e - v) * left
        i += left
        j += 1 - left
    for e in range(n0):  # the left events of the chunk join the window
        a_start[tail + e - off] = sync[e]
        a_row[tail + e - off] = row[e]
        a_prev[tail + e - off] = link[e]


@numba.njit(cache=True)
def probe_emit(sync, gid, row, link, n0, n, duration, span, a_start, a_row, a_prev, lo, off, out, j0, y0):
    """The window join's second pass: each right point (from ``j0``; resuming its walk at left id ``y0`` when
    ``y0 >= 0``) meets the left events of its key alive at its time ``t``, newest first: those that started at
    or before it (linked in the first pass) and end after it (``t - start < duration``). Each pair is
    ``[t, t+span)``: the right event's lifetime (1 for points; the duration for windows on the left's grid,
    which meet only the left events of their own window). Returns (outputs, next right point, left id to
    resume at), pausing when ``out`` is full."""
    cap = out.shape[1]
    w = 0
    y = y0
    for j in range(j0, n):
        if gid[j] < 0:
            continue
        t = sync[j]
        if y < 0 or j != j0:
            y = link[j]
        while y >= lo and t - a_start[y - off] < duration:
            if w == cap:
                return w, j, y
            out[0, w] = t
            out[1, w] = t + span
            out[2, w] = a_row[y - off]
            out[3, w] = row[j]
            w += 1
            y = a_prev[y - off]
    return w, n, -1


_EMIT_COLUMNS = """
def kernel(sync, gid, row, link, n0, n, duration, span, a_start, a_row, a_prev, lo, off,
           lmat, lsel, rmat, rsel, o_sync, o_other, o_left, o_right, j0, y0):
    cap = len(o_sync)
{setup}
    w = 0
    y = y0
    for j in range(j0, n):
        if gid[j] < 0:
            continue
        t = sync[j]
        rr = row[j]
{per_point}
        if y < 0 or j != j0:
            y = link[j]
        while y >= lo and t - a_start[y - off] < duration:
            if w == cap:
                return w, j, y
            lr = a_row[y - off]
            o_sync[w] = t
            o_other[w] = t + span
{per_pair}
            w += 1
            y = a_prev[y - off]
    return w, n, -1
"""
_MAX_FUSED_FIELDS = 8  # per side; wider payloads are gathered after the walk


def probe_emit_columns(nl: int, nr: int):
    """:func:`probe_emit` writing each pair's payload straight into the output columns: the matrix rows ``lsel``
    of the left store and ``rsel`` of the right's (8-byte values) go to ``o_left``/``o_right``.

    The kernel is generated for ``nl`` left and ``nr`` right fields, each copied through its own array
    variable (a loop over the fields, or a branch on their number, costs a fifth of the walk), and compiled
    once per machine (:func:`~tidal.expr.jit.load_kernel`)."""
    lines = {"setup": [], "per_point": [], "per_pair": []}
    for c in range(nl):
        lines["setup"] += [f"l{c} = lmat[lsel[{c}]]", f"ol{c} = o_left[{c}]"]
        lines["per_pair"].append(f"ol{c}[w] = l{c}[lr]")
    for c in range(nr):
        lines["setup"] += [f"r{c} = rmat[rsel[{c}]]", f"or{c} = o_right[{c}]"]
        lines["per_point"].append(f"v{c} = r{c}[rr]")
        lines["per_pair"].append(f"or{c}[w] = v{c}")
    indent = {"setup": 4, "per_point": 8, "per_pair": 12}
    parts = {k: "\n".join(" " * indent[k] + s for s in v) or " " * indent[k] + "pass" for k, v in lines.items()}
    return jit.load_kernel(_EMIT_COLUMNS.format(**parts).lstrip("\n"))
