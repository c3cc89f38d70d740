"""The join family: temporal equi-join, outer joins, cross join, semi/anti-joins and clip.

Every operator here is defined per snapshot (CEDR): at each instant ``T`` the output
snapshot is a relational operation applied to the two inputs' snapshots at ``T``. Lifetimes
are half-open ``[s, e)``; ``e = INFINITY`` for a start edge whose end has not come.

* ``join(r, lk, rk, result)`` (inner equi-join): one output per pair ``(l, r)`` whose keys are
  equal and whose lifetimes overlap, alive over the intersection ``[max(ls, rs), min(le, re))``,
  payload ``result(l, r)`` (default: left fields, then right fields, a clashing right name
  gets the suffix ``_right``). A pair of intervals comes out as one interval; a pair with an
  edge comes out as a start edge at ``max(ls, rs)`` and an end edge when either side ends.
* ``cross_join(r, result)``: the join with every pair's keys equal.
* ``left_outer_join``: at every instant ``T``, the inner join of the snapshots at ``T``, plus
  every left row of ``L(T)`` that has no key-equal row in ``R(T)``, with the right fields null.
  A left event is thus padded exactly over the parts of its lifetime where no partner is
  alive. ``full_outer_join`` adds the right rows of ``R(T)`` with no partner in ``L(T)``,
  left fields null. With a ``result`` lambda, the missing side is a row whose fields are all
  None.
* ``where_exists(r, lk, rk)`` (semi-join): a left event is present at ``T`` iff some right
  event with an equal key is alive at ``T``; its lifetime is cut to those instants.
  ``where_not_exists`` (anti-join): present iff no such right event is alive.
* ``clip(r, lk, rk)`` (Trill's ClipEventDuration): each left event's lifetime ends at the start
  of the first right event with an equal key that starts strictly after the left event
  starts: ``[s, min(e, c))``. Right lifetimes' ends play no part.

Keys are a field name, a list of field names, or a row lambda. SQL's null rule applies: a key
with a null field equals nothing, so such a left event never joins, is always present for
``where_not_exists`` and in outer joins, never for ``where_exists``, and is never clipped.
On grouped inputs (``batch.key`` set), events only meet within the same group: the group
key's fields are prepended to the join key (group-key nulls are an ordinary value, as in
GROUP BY); outputs carry the left's group key and hash (the right's, for right-only rows of
a full outer join).

Physically, both inputs are merged in sync-time order: events at time ``t`` are processed only
once both sides have moved past ``t`` (by data or punctuation), ends before starts, so every
output is produced at its own sync time and leaves in order. State is a symmetric hash table:
per side and per key, a linked list of the events alive now (numba kernels over dense key
ids from :class:`~tidal.ops.keys.KeyIndex`), plus an endpoint queue of interval ends chosen
from the side's stream properties: none for start-edge-only inputs, a FIFO for constant
duration, a binary heap otherwise. End edges find their start edge by key, start time and a
64-bit payload hash. ``where_exists``/``where_not_exists`` keep the left events by key and only
a count of alive right events per key; a left event's first output waits until its time step
is complete (a right end and start at the same instant must not produce an empty piece).
``clip`` keeps only the unclipped left events. Output punctuation is the smaller of the two
inputs' punctuations.

Variants (``explain()`` names them): per input, *start edges only* (no endpoint queue, no
end-edge matching), *constant duration* (FIFO endpoint queue) or *general* (binary heap);
and for ``join(..., left_is_small=True)`` the *build-once* join: the right is held until the
finite left completes, the left's lifetimes are resolved and indexed by key once, right
intervals probe that index vectorised and are never stored (their outputs may start in the
future, so they pass through a reorder buffer), and right edges meet the left replayed into
the symmetric kernel as its intervals start. No output punctuation leaves before the left
completes.

The *merge join* (``join`` on one integer-like key field per side, both inputs sorted by it
within each sync time: ``Properties.sorted_by``, Trill's snapshot-sorted streams; or forced
with ``variant="merge"``) hashes nothing: each side keeps its alive rows as a list sorted by
key; a time step's events, already in key order, find their partners in the other side's
list by a forward galloping walk, meet the other side's new events by merging the two runs,
and join their own side's list in one linear merge. An input found out of key order within a
sync time is an error. Each step with new starts costs a pass over its side's alive rows, so
the variant suits many events per sync time (relational, progressive data).

In the hash join a right *point* (``[t, t+1)``) is never stored: the left events at ``t``
come first and those ending at ``t`` are gone, so it meets exactly the left events alive now,
each pair being ``[t, t+1)``. When the properties say so for the whole stream (an inner join
of left intervals of one constant duration ``d`` with right points), the *window join* goes
further: the left's events are ended by their start alone, so there is no endpoint queue and
nothing to remove. Left events are kept in arrival order, each linked to the previous one of
its key; one pass over a chunk's events in time order (choosing the next side arithmetically,
without a branch) links each left event and notes, for each right point, the latest left
event of its key before it; a second pass walks each point's chain, newest first, while
``t - start < d``. That is the hash kernel's output, row for row and in the same order.
An event of another kind on either input is an error (the declared durations are wrong).
When every payload field is 8 bytes wide, that walk writes the pairs' payload columns itself.

A ``result`` lambda is translated into one expression over both sides' columns where the
lambda compiler can (``explain()`` says ``columnar``), so outputs are built column by column;
otherwise (or for a batch needing Python semantics, such as nulls in arithmetic) it runs per
output row.

Partitioning (for a distributed backend): each input must be hash-partitioned by its key
fields; lambda keys name no field and a cross join has no key, so those ask for each whole
input in one partition (``((), ())``).
"""

from __future__ import annotations

import numba
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..core.batch import EventBatch, concat_batches, gather
from ..core.errors import PlanError
from ..core.time import INFINITY, MIN_TIME
from ..expr import jit
from ..expr.compile import CompiledLambda, describe_columnar, records_to_columns, row_class, rows_of
from ..expr.kernels import Evaluator, Fallback, Unsupported, record_fields, to_arrow_column
from ..expr.lambdas import Opaque, translate_rows
from ..expr.nodes import Col
from .base import InputPort, Operator, ReorderBuffer
from .keys import KeyIndex, stable_hash

END, START, INTERVAL = 0, 1, 2
FIFO, HEAP = 0, 1
NONE = MIN_TIME  # no open output piece
_ERR_FIFO = 1
_ERR_ORDER = 2

_KEY_COL = "__key"
_LEFT, _RIGHT = "left.", "right."  # column prefixes of the two rows in a compiled result lambda
_HASH_COL = "__hash"
_STAGED = ("side", "kind", "sync", "other", "gid", "row", "ph")  # a chunk's events, as the kernels read them
_NO_ROWS = np.zeros(0, np.bool_)  # stands for "no absence vector" in a kernel's arguments


# --------------------------------------------------------------------------------------
# kernels. They are written flat on purpose: a numba helper taking arrays, or an array
# variable rebound inside the loop, costs tens to hundreds of nanoseconds per event in
# reference counting, so queue and list operations are spelled out inline, and output goes
# into a caller-owned buffer ``out`` (rows: sync, other, left row, right row). Before each
# item a kernel checks there is room for everything the item can emit (the other side's
# list length for the key); if not, it returns ``(n, i, need, err)`` with ``need > 0`` and
# the caller drains the buffer (growing it to ``need``) and calls again from event ``i``.
# --------------------------------------------------------------------------------------
_EXPIRE, _END_EDGE, _START = 0, 1, 2


@numba.njit(cache=True)
def join_kernel(
    e_side, e_kind, e_sync, e_other, e_gid, e_row, e_ph, e_order, bound, out, i0,
    st, en, ph, gr, nxt, prv, inl, head, lcount, openc, qt, qv, qmeta, qkind, alive,
):  # fmt: skip
    """Symmetric hash join over merged events (event ``i`` is at ``e_order[i]``: by time, ends first); see the
    module docstring.

    Outputs (sync, other, left row, right row) in sync-time order.
    """
    n_ev = len(e_order)
    cap = out.shape[1]
    n = 0
    err = 0
    i = i0
    while True:
        # the earliest queued interval end, of either side
        qs = -1
        qtime = INFINITY
        if qmeta[0, 1] > qmeta[0, 0]:
            qs = 0
            qtime = qt[0, qmeta[0, 0]]
        if qmeta[1, 1] > qmeta[1, 0] and (qs < 0 or qt[1, qmeta[1, 0]] < qtime):
            qs = 1
            qtime = qt[1, qmeta[1, 0]]
        e = e_order[i] if i < n_ev else 0
        if i < n_ev:
            t = e_sync[e]
            use_queue = qs >= 0 and qtime <= t  # ends at t go before the events at t
        else:
            use_queue = qs >= 0 and qtime < bound
            if not use_queue:
                break
        if use_queue:
            need = lcount[1 - qs, gr[qs, qv[qs, qmeta[qs, 0]]]]
        else:
            need = lcount[1 - e_side[e], e_gid[e]] if e_gid[e] >= 0 else 0
        if n + need > cap:
            return n, i, need, err
        if use_queue:
            s = qs
            t = qtime
            if qkind[s] == FIFO:
                x = qv[s, qmeta[s, 0]]
                qmeta[s, 0] += 1
            else:
                x = qv[s, 0]
                m = qmeta[s, 1] - 1
                qmeta[s, 1] = m
                if m > 0:
                    lt = qt[s, m]
                    lv = qv[s, m]
                    j = 0
                    while True:
                        c = 2 * j + 1
                        if c >= m:
                            break
                        if c + 1 < m and qt[s, c + 1] < qt[s, c]:
                            c += 1
                        if qt[s, c] >= lt:
                            break
                        qt[s, j] = qt[s, c]
                        qv[s, j] = qv[s, c]
                        j = c
                    qt[s, j] = lt
                    qv[s, j] = lv
            g = gr[s, x]
            mode = _EXPIRE
        else:
            g = e_gid[e]
            k = e_kind[e]
            s = e_side[e]
            other_time = e_other[e]
            h = e_ph[e]
            x = e_row[e]
            i += 1
            if g < 0:
                continue
            if s == 1 and k == INTERVAL and other_time == t + 1:
                # a right point meets exactly the left events alive now (the left's at t came first,
                # those ending at t are gone): each pair is [t, t+1), known now; the point is never stored
                y = head[0, g]
                while y >= 0:
                    out[0, n] = t
                    out[1, n] = t + 1
                    out[2, n] = y
                    out[3, n] = x
                    n += 1
                    y = nxt[0, y]
                continue
            if k == END:
                x = head[s, g]
                while x >= 0:
                    if st[s, x] == other_time and en[s, x] == INFINITY and ph[s, x] == h:
                        break
                    x = nxt[s, x]
                if x < 0:
                    continue
                openc[s, g] -= 1
                mode = _END_EDGE
            else:
                st[s, x] = t
                gr[s, x] = g
                ph[s, x] = h
                if k == START:
                    en[s, x] = INFINITY
                    openc[s, g] += 1
                else:
                    en[s, x] = other_time
                    j = qmeta[s, 1]
                    if qkind[s] == FIFO:
                        if j > qmeta[s, 0] and qt[s, j - 1] > other_time:
                            err = _ERR_FIFO
                        qt[s, j] = other_time
                        qv[s, j] = x
                        qmeta[s, 1] = j + 1
                    else:
                        qmeta[s, 1] = j + 1
                        while j > 0:
                            p = (j - 1) >> 1
                            if qt[s, p] <= other_time:
                                break
                            qt[s, j] = qt[s, p]
                            qv[s, j] = qv[s, p]
                            j = p
                        qt[s, j] = other_time
                        qv[s, j] = x
                q = head[s, g]
                nxt[s, x] = q
                prv[s, x] = -1
                if q >= 0:
                    prv[s, q] = x
                head[s, g] = x
                inl[s, x] = True
                lcount[s, g] += 1
                alive[s] += 1
                mode = _START
        if mode != _START:
            p = prv[s, x]
            q = nxt[s, x]
            if p >= 0:
                nxt[s, p] = q
            else:
                head[s, g] = q
            if q >= 0:
                prv[s, q] = p
            inl[s, x] = False
            lcount[s, g] -= 1
            alive[s] -= 1
        o = 1 - s
        if mode == _EXPIRE and openc[o, g] == 0:
            continue  # pairs of two intervals came out as intervals: nothing to end
        xs = st[s, x]
        xe = en[s, x]
        y = head[o, g]
        while y >= 0:
            ye = en[o, y]
            if mode == _START:
                emit = True
                other_out = min(xe, ye) if (xe != INFINITY and ye != INFINITY) else INFINITY
            else:
                emit = mode == _END_EDGE or ye == INFINITY
                other_out = max(xs, st[o, y])
            if emit:
                out[0, n] = t
                out[1, n] = other_out
                if s == 0:
                    out[2, n] = x
                    out[3, n] = y
                else:
                    out[2, n] = y
                    out[3, n] = x
                n += 1
            y = nxt[o, y]
    return n, i, 0, err


@numba.njit(cache=True)
def exists_kernel(
    e_side, e_kind, e_sync, e_other, e_gid, e_row, e_ph, bound, out, i0, exists,
    st, en, ph, gr, seg, nxt, prv, inl, head, lcount, cnt, mark, before, stamp, touched, pending, step,
    qt, qv, qmeta, qkind, alive,
):  # fmt: skip
    """Semi-join (``exists``) or anti-join of side 0 against side 1; outputs (sync, other, left row, -1).

    Side 0 keeps its alive events per key; side 1 only a count of alive events per key. Key
    ids of side 0's null keys are 0, which side 1 never uses. Work happens per time step:
    ends, then starts, then the keys whose count crossed zero flip their left events, and
    the left events that started in the step get their first piece.
    """
    n_ev = len(e_side)
    cap = out.shape[1]
    n = 0
    err = 0
    n_touched = step[0]
    n_pending = step[1]
    cur = step[2]
    i = i0
    while True:
        qs = -1
        qtime = INFINITY
        if qmeta[0, 1] > qmeta[0, 0]:
            qs = 0
            qtime = qt[0, qmeta[0, 0]]
        if qmeta[1, 1] > qmeta[1, 0] and (qs < 0 or qt[1, qmeta[1, 0]] < qtime):
            qs = 1
            qtime = qt[1, qmeta[1, 0]]
        use_queue = qs >= 0 and qtime < bound and (i >= n_ev or qtime <= e_sync[i])
        if use_queue:
            t = qtime
        elif i < n_ev:
            t = e_sync[i]
        else:
            t = INFINITY
        if t > cur:
            # the step at ``cur`` is complete
            need = n_pending
            for j in range(n_touched):
                need += lcount[0, touched[j]]
            if n + need > cap:
                step[0] = n_touched
                step[1] = n_pending
                step[2] = cur
                return n, i, need, err
            for j in range(n_touched):
                g = touched[j]
                now = cnt[g] > 0
                if (before[g] > 0) != now:
                    want = now == exists
                    x = head[0, g]
                    while x >= 0:
                        if st[0, x] < cur:
                            emit_other = -1
                            if want and seg[x] == NONE:
                                emit_other = INFINITY
                                seg[x] = cur
                            elif not want and seg[x] != NONE:
                                emit_other = seg[x]
                                seg[x] = NONE
                            if emit_other != -1:
                                out[0, n] = cur
                                out[1, n] = emit_other
                                out[2, n] = x
                                out[3, n] = -1
                                n += 1
                        x = nxt[0, x]
            n_touched = 0
            for j in range(n_pending):
                x = pending[j]
                if inl[0, x] and (cnt[gr[0, x]] > 0) == exists:
                    out[0, n] = cur
                    out[1, n] = INFINITY
                    out[2, n] = x
                    out[3, n] = -1
                    n += 1
                    seg[x] = cur
            n_pending = 0
            stamp[0] += 1
            cur = t
        if t == INFINITY:
            break
        if n + 1 > cap:
            step[0] = n_touched
            step[1] = n_pending
            step[2] = cur
            return n, i, 1, err
        x = -1  # a left event that ends now, if any
        if use_queue:
            s = qs
            if qkind[s] == FIFO:
                v = qv[s, qmeta[s, 0]]
                qmeta[s, 0] += 1
            else:
                v = qv[s, 0]
                m = qmeta[s, 1] - 1
                qmeta[s, 1] = m
                if m > 0:
                    lt = qt[s, m]
                    lv = qv[s, m]
                    j = 0
                    while True:
                        c = 2 * j + 1
                        if c >= m:
                            break
                        if c + 1 < m and qt[s, c + 1] < qt[s, c]:
                            c += 1
                        if qt[s, c] >= lt:
                            break
                        qt[s, j] = qt[s, c]
                        qv[s, j] = qv[s, c]
                        j = c
                    qt[s, j] = lt
                    qv[s, j] = lv
            if s == 0:
                if inl[0, v]:
                    x = v
            else:
                if mark[v] != stamp[0]:
                    mark[v] = stamp[0]
                    before[v] = cnt[v]
                    touched[n_touched] = v
                    n_touched += 1
                cnt[v] -= 1
        else:
            g = e_gid[i]
            k = e_kind[i]
            side = e_side[i]
            other_time = e_other[i]
            h = e_ph[i]
            row = e_row[i]
            i += 1
            if g < 0:
                continue
            if side == 1:
                if mark[g] != stamp[0]:
                    mark[g] = stamp[0]
                    before[g] = cnt[g]
                    touched[n_touched] = g
                    n_touched += 1
                if k == END:
                    cnt[g] -= 1
                else:
                    cnt[g] += 1
                    if k == INTERVAL:
                        j = qmeta[1, 1]
                        if qkind[1] == FIFO:
                            if j > qmeta[1, 0] and qt[1, j - 1] > other_time:
                                err = _ERR_FIFO
                            qt[1, j] = other_time
                            qv[1, j] = g
                            qmeta[1, 1] = j + 1
                        else:
                            qmeta[1, 1] = j + 1
                            while j > 0:
                                p = (j - 1) >> 1
                                if qt[1, p] <= other_time:
                                    break
                                qt[1, j] = qt[1, p]
                                qv[1, j] = qv[1, p]
                                j = p
                            qt[1, j] = other_time
                            qv[1, j] = g
            elif k == END:
                y = head[0, g]
                while y >= 0:
                    if st[0, y] == other_time and en[0, y] == INFINITY and ph[0, y] == h:
                        break
                    y = nxt[0, y]
                x = y
            else:
                x = row
                st[0, x] = t
                gr[0, x] = g
                ph[0, x] = h
                seg[x] = NONE
                if k == START:
                    en[0, x] = INFINITY
                else:
                    en[0, x] = other_time
                    j = qmeta[0, 1]
                    if qkind[0] == FIFO:
                        if j > qmeta[0, 0] and qt[0, j - 1] > other_time:
                            err = _ERR_FIFO
                        qt[0, j] = other_time
                        qv[0, j] = x
                        qmeta[0, 1] = j + 1
                    else:
                        qmeta[0, 1] = j + 1
                        while j > 0:
                            p = (j - 1) >> 1
                            if qt[0, p] <= other_time:
                                break
                            qt[0, j] = qt[0, p]
                            qv[0, j] = qv[0, p]
                            j = p
                        qt[0, j] = other_time
                        qv[0, j] = x
                q = head[0, g]
                nxt[0, x] = q
                prv[0, x] = -1
                if q >= 0:
                    prv[0, q] = x
                head[0, g] = x
                inl[0, x] = True
                lcount[0, g] += 1
                alive[0] += 1
                pending[n_pending] = x
                n_pending += 1
                x = -1
        if x >= 0:
            # left event x ends at t: leave the table, close its open piece
            g = gr[0, x]
            p = prv[0, x]
            q = nxt[0, x]
            if p >= 0:
                nxt[0, p] = q
            else:
                head[0, g] = q
            if q >= 0:
                prv[0, q] = p
            inl[0, x] = False
            lcount[0, g] -= 1
            alive[0] -= 1
            if seg[x] != NONE:
                out[0, n] = t
                out[1, n] = seg[x]
                out[2, n] = x
                out[3, n] = -1
                n += 1
                seg[x] = NONE
    step[0] = 0
    step[1] = 0
    step[2] = MIN_TIME
    return n, i, 0, err


@numba.njit(cache=True)
def clip_kernel(
    e_side, e_kind, e_sync, e_other, e_gid, e_row, e_ph, bound, out, i0,
    st, en, ph, gr, nxt, prv, inl, head, lcount, qt, qv, qmeta, qkind, alive,
):  # fmt: skip
    """Clip side 0's lifetimes at the next start of a key-equal side-1 event; outputs edges."""
    n_ev = len(e_side)
    cap = out.shape[1]
    n = 0
    err = 0
    i = i0
    while True:
        has_q = qmeta[0, 1] > qmeta[0, 0]
        qtime = qt[0, qmeta[0, 0]] if has_q else INFINITY
        if i < n_ev:
            t = e_sync[i]
            use_queue = has_q and qtime <= t
        else:
            use_queue = has_q and qtime < bound
            if not use_queue:
                break
        need = 1
        if not use_queue and e_side[i] == 1 and e_gid[i] >= 0:
            need = lcount[0, e_gid[i]]
        if n + need > cap:
            return n, i, need, err
        x = -1  # a left event whose output ends now
        if use_queue:
            t = qtime
            if qkind[0] == FIFO:
                v = qv[0, qmeta[0, 0]]
                qmeta[0, 0] += 1
            else:
                v = qv[0, 0]
                m = qmeta[0, 1] - 1
                qmeta[0, 1] = m
                if m > 0:
                    lt = qt[0, m]
                    lv = qv[0, m]
                    j = 0
                    while True:
                        c = 2 * j + 1
                        if c >= m:
                            break
                        if c + 1 < m and qt[0, c + 1] < qt[0, c]:
                            c += 1
                        if qt[0, c] >= lt:
                            break
                        qt[0, j] = qt[0, c]
                        qv[0, j] = qv[0, c]
                        j = c
                    qt[0, j] = lt
                    qv[0, j] = lv
            if inl[0, v]:
                x = v
        else:
            g = e_gid[i]
            k = e_kind[i]
            other_time = e_other[i]
            h = e_ph[i]
            row = e_row[i]
            side = e_side[i]
            i += 1
            if g < 0:
                continue
            if side == 1:
                if k == END:
                    continue
                # every unclipped left event of this key that started earlier ends now
                y = head[0, g]
                while y >= 0:
                    ny = nxt[0, y]
                    if st[0, y] < t:
                        p = prv[0, y]
                        if p >= 0:
                            nxt[0, p] = ny
                        else:
                            head[0, g] = ny
                        if ny >= 0:
                            prv[0, ny] = p
                        inl[0, y] = False
                        lcount[0, g] -= 1
                        alive[0] -= 1
                        out[0, n] = t
                        out[1, n] = st[0, y]
                        out[2, n] = y
                        out[3, n] = -1
                        n += 1
                    y = ny
                continue
            if k == END:
                y = head[0, g]
                while y >= 0:
                    if st[0, y] == other_time and en[0, y] == INFINITY and ph[0, y] == h:
                        break
                    y = nxt[0, y]
                x = y
            else:
                x = row
                st[0, x] = t
                gr[0, x] = g
                ph[0, x] = h
                if k == START:
                    en[0, x] = INFINITY
                else:
                    en[0, x] = other_time
                    j = qmeta[0, 1]
                    if qkind[0] == FIFO:
                        if j > qmeta[0, 0] and qt[0, j - 1] > other_time:
                            err = _ERR_FIFO
                        qt[0, j] = other_time
                        qv[0, j] = x
                        qmeta[0, 1] = j + 1
                    else:
                        qmeta[0, 1] = j + 1
                        while j > 0:
                            p = (j - 1) >> 1
                            if qt[0, p] <= other_time:
                                break
                            qt[0, j] = qt[0, p]
                            qv[0, j] = qv[0, p]
                            j = p
                        qt[0, j] = other_time
                        qv[0, j] = x
                q = head[0, g]
                nxt[0, x] = q
                prv[0, x] = -1
                if q >= 0:
                    prv[0, q] = x
                head[0, g] = x
                inl[0, x] = True
                lcount[0, g] += 1
                alive[0] += 1
                out[0, n] = t
                out[1, n] = INFINITY
                out[2, n] = x
                out[3, n] = -1
                n += 1
                continue
        if x >= 0:
            g = gr[0, x]
            p = prv[0, x]
            q = nxt[0, x]
            if p >= 0:
                nxt[0, p] = q
            else:
                head[0, g] = q
            if q >= 0:
                prv[0, q] = p
            inl[0, x] = False
            lcount[0, g] -= 1
            alive[0] -= 1
            out[0, n] = t
            out[1, n] = st[0, x]
            out[2, n] = x
            out[3, n] = -1
            n += 1
    return n, i, 0, err


@numba.njit(cache=True)
def merge_join_kernel(
    e_kind, e_sync, e_other, e_key, e_row, e_ph, n0, bound, out,
    st, en, ph, kc, inl, srt, m, tmp, qt, qv, qmeta, qkind, alive,
):  # fmt: skip
    """Merge join over both sides' events (side 0 then side 1, each key-sorted within a sync time).

    Each side keeps its alive events in ``srt``, row numbers sorted by key: a time step's new
    events, already in key order, find their partners by a forward (galloping) walk over the
    other side's sorted rows, meet the other side's new events by a merge of the two runs,
    and are merged into their own side's sorted rows in one linear pass. Ends go first, as in
    the hash join. Returns (out, n, err); ``out`` grows as needed.
    """
    n_ev = len(e_kind)
    n = 0
    err = 0
    p0 = 0
    p1 = n0
    while True:
        t = INFINITY
        if p0 < n0:
            t = e_sync[p0]
        if p1 < n_ev and e_sync[p1] < t:
            t = e_sync[p1]
        qs = -1
        qtime = INFINITY
        if qmeta[0, 1] > qmeta[0, 0]:
            qs = 0
            qtime = qt[0, qmeta[0, 0]]
        if qmeta[1, 1] > qmeta[1, 0] and (qs < 0 or qt[1, qmeta[1, 0]] < qtime):
            qs = 1
            qtime = qt[1, qmeta[1, 0]]
        if qs >= 0 and qtime < bound and qtime < t:
            t = qtime
        if t == INFINITY or t >= bound:
            break
        # 1. interval ends due now (either side): pairs with an open start edge end here
        while True:
            qs = -1
            qtime = INFINITY
            if qmeta[0, 1] > qmeta[0, 0]:
                qs = 0
                qtime = qt[0, qmeta[0, 0]]
            if qmeta[1, 1] > qmeta[1, 0] and (qs < 0 or qt[1, qmeta[1, 0]] < qtime):
                qs = 1
                qtime = qt[1, qmeta[1, 0]]
            if qs < 0 or qtime != t:
                break
            s = qs
            if qkind[s] == FIFO:
                x = qv[s, qmeta[s, 0]]
                qmeta[s, 0] += 1
            else:
                x = qv[s, 0]
                mm = qmeta[s, 1] - 1
                qmeta[s, 1] = mm
                if mm > 0:
                    lt = qt[s, mm]
                    lv = qv[s, mm]
                    j = 0
                    while True:
                        c = 2 * j + 1
                        if c >= mm:
                            break
                        if c + 1 < mm and qt[s, c + 1] < qt[s, c]:
                            c += 1
                        if qt[s, c] >= lt:
                            break
                        qt[s, j] = qt[s, c]
                        qv[s, j] = qv[s, c]
                        j = c
                    qt[s, j] = lt
                    qv[s, j] = lv
            if not inl[s, x]:
                continue
            inl[s, x] = False
            alive[s] -= 1
            o = 1 - s
            key = kc[s, x]
            lo = 0
            hi = m[o]
            while lo < hi:
                mid = (lo + hi) >> 1
                if kc[o, srt[o, mid]] < key:
                    lo = mid + 1
                else:
                    hi = mid
            while lo < m[o] and kc[o, srt[o, lo]] == key:
                y = srt[o, lo]
                lo += 1
                if inl[o, y] and en[o, y] == INFINITY:
                    if n >= out.shape[1]:
                        bigger = np.empty((4, 2 * out.shape[1] + 1), np.int64)
                        bigger[:, :n] = out[:, :n]
                        out = bigger
                    out[0, n] = t
                    out[1, n] = max(st[s, x], st[o, y])
                    out[2, n] = x if s == 0 else y
                    out[3, n] = y if s == 0 else x
                    n += 1
        # the runs of events at t: [a0, b0) and [a1, b1)
        a0 = p0
        while p0 < n0 and e_sync[p0] == t:
            p0 += 1
        a1 = p1
        while p1 < n_ev and e_sync[p1] == t:
            p1 += 1
        # 2. end edges at t: find their start edge among the side's sorted rows
        for s in range(2):
            a = a0 if s == 0 else a1
            b = p0 if s == 0 else p1
            o = 1 - s
            prev_key = MIN_TIME
            for i in range(a, b):
                key = e_key[i]
                if key < prev_key:
                    err = _ERR_ORDER
                    return out, n, err
                prev_key = key
                if e_kind[i] != END:
                    continue
                lo = 0
                hi = m[s]
                while lo < hi:
                    mid = (lo + hi) >> 1
                    if kc[s, srt[s, mid]] < key:
                        lo = mid + 1
                    else:
                        hi = mid
                x = -1
                while lo < m[s] and kc[s, srt[s, lo]] == key:
                    y = srt[s, lo]
                    lo += 1
                    if inl[s, y] and st[s, y] == e_other[i] and en[s, y] == INFINITY and ph[s, y] == e_ph[i]:
                        x = y
                        break
                if x < 0:
                    continue
                inl[s, x] = False
                alive[s] -= 1
                lo = 0
                hi = m[o]
                while lo < hi:
                    mid = (lo + hi) >> 1
                    if kc[o, srt[o, mid]] < key:
                        lo = mid + 1
                    else:
                        hi = mid
                while lo < m[o] and kc[o, srt[o, lo]] == key:
                    y = srt[o, lo]
                    lo += 1
                    if inl[o, y]:
                        if n >= out.shape[1]:
                            bigger = np.empty((4, 2 * out.shape[1] + 1), np.int64)
                            bigger[:, :n] = out[:, :n]
                            out = bigger
                        out[0, n] = t
                        out[1, n] = max(st[s, x], st[o, y])
                        out[2, n] = x if s == 0 else y
                        out[3, n] = y if s == 0 else x
                        n += 1
        # 3. starts at t: register them, then meet the other side's older rows by a forward walk
        for s in range(2):
            a = a0 if s == 0 else a1
            b = p0 if s == 0 else p1
            o = 1 - s
            lo = 0
            for i in range(a, b):
                k = e_kind[i]
                if k == END:
                    continue
                x = e_row[i]
                key = e_key[i]
                st[s, x] = t
                kc[s, x] = key
                ph[s, x] = e_ph[i]
                inl[s, x] = True
                alive[s] += 1
                if k == START:
                    en[s, x] = INFINITY
                else:
                    other_time = e_other[i]
                    en[s, x] = other_time
                    j = qmeta[s, 1]
                    if qkind[s] == FIFO:
                        if j > qmeta[s, 0] and qt[s, j - 1] > other_time:
                            err = _ERR_FIFO
                        qt[s, j] = other_time
                        qv[s, j] = x
                        qmeta[s, 1] = j + 1
                    else:
                        qmeta[s, 1] = j + 1
                        while j > 0:
                            pj = (j - 1) >> 1
                            if qt[s, pj] <= other_time:
                                break
                            qt[s, j] = qt[s, pj]
                            qv[s, j] = qv[s, pj]
                            j = pj
                        qt[s, j] = other_time
                        qv[s, j] = x
                # gallop: keys only grow along the run, so the walk never goes back
                step = 1
                while lo + step < m[o] and kc[o, srt[o, lo + step - 1]] < key:
                    step *= 2
                hi = min(lo + step, m[o])
                while lo < hi:
                    mid = (lo + hi) >> 1
                    if kc[o, srt[o, mid]] < key:
                        lo = mid + 1
                    else:
                        hi = mid
                xe = en[s, x]
                q = lo
                while q < m[o] and kc[o, srt[o, q]] == key:
                    y = srt[o, q]
                    q += 1
                    if inl[o, y]:
                        ye = en[o, y]
                        if n >= out.shape[1]:
                            bigger = np.empty((4, 2 * out.shape[1] + 1), np.int64)
                            bigger[:, :n] = out[:, :n]
                            out = bigger
                        out[0, n] = t
                        out[1, n] = min(xe, ye) if (xe != INFINITY and ye != INFINITY) else INFINITY
                        out[2, n] = x if s == 0 else y
                        out[3, n] = y if s == 0 else x
                        n += 1
        # 4. the two new runs meet each other: a merge of two key-sorted runs
        i = a0
        j = a1
        while i < p0 and j < p1:
            if e_kind[i] == END:
                i += 1
                continue
            if e_kind[j] == END:
                j += 1
                continue
            if e_key[i] < e_key[j]:
                i += 1
            elif e_key[i] > e_key[j]:
                j += 1
            else:
                key = e_key[i]
                i_end = i
                while i_end < p0 and e_key[i_end] == key:
                    i_end += 1
                j_end = j
                while j_end < p1 and e_key[j_end] == key:
                    j_end += 1
                for ii in range(i, i_end):
                    if e_kind[ii] == END:
                        continue
                    x = e_row[ii]
                    xe = en[0, x]
                    for jj in range(j, j_end):
                        if e_kind[jj] == END:
                            continue
                        y = e_row[jj]
                        ye = en[1, y]
                        if n >= out.shape[1]:
                            bigger = np.empty((4, 2 * out.shape[1] + 1), np.int64)
                            bigger[:, :n] = out[:, :n]
                            out = bigger
                        out[0, n] = t
                        out[1, n] = min(xe, ye) if (xe != INFINITY and ye != INFINITY) else INFINITY
                        out[2, n] = x
                        out[3, n] = y
                        n += 1
                i = i_end
                j = j_end
        # 5. each side's new run joins its sorted rows: one linear merge, dropping the dead
        for s in range(2):
            a = a0 if s == 0 else a1
            b = p0 if s == 0 else p1
            starts = 0
            for i in range(a, b):
                if e_kind[i] != END:
                    starts += 1
            if starts == 0 and m[s] <= 2 * alive[s] + 64:
                continue
            u = 0
            v = a
            w = 0
            while True:
                while u < m[s] and not inl[s, srt[s, u]]:
                    u += 1
                while v < b and e_kind[v] == END:
                    v += 1
                if u >= m[s] and v >= b:
                    break
                if v >= b or (u < m[s] and kc[s, srt[s, u]] <= e_key[v]):
                    tmp[w] = srt[s, u]
                    u += 1
                else:
                    tmp[w] = e_row[v]
                    v += 1
                w += 1
            for u in range(w):
                srt[s, u] = tmp[u]
            m[s] = w
    return out, n, err


@numba.njit(cache=True)
def _stage(
    sync, other, points, absent, kid, base, dense, side, off,
    s_side, s_kind, s_sync, s_other, s_gid, s_row, s_ph,
):  # fmt: skip
    """Write one batch's present events into the staging arrays from ``off`` on, with their kind and store row
    (``base`` plus the rank among present rows when ``dense``, else plus the position).

    Returns (end offset, intervals, end edges, edges of either kind). Every event is written and an absent
    one overwritten by the next: a branch on absence would be mispredicted about as often as it is taken."""
    has_absent = len(absent) > 0
    w = off
    r = 0
    n_int = 0
    n_end = 0
    n_edge = 0
    for i in range(len(sync)):
        keep = 1 - np.int64(absent[i]) if has_absent else 1
        t = sync[i]
        o = t + 1 if points else other[i]
        start = np.int64(o == INFINITY)
        end = np.int64(o < t)
        s_kind[w] = INTERVAL - start * (INTERVAL - START) - end * (INTERVAL - END)
        n_int += keep * (1 - start - end)
        n_end += keep * end
        n_edge += keep * (start + end)
        s_side[w] = side
        s_sync[w] = t
        s_other[w] = o
        s_gid[w] = kid[i]
        s_row[w] = base + (r if dense else i)
        s_ph[w] = 0
        w += keep
        r += keep
    return w, n_int, n_end, n_edge


@numba.njit(cache=True)
def _stage_window(sync, other, points, absent, kid, base, dense, length, off, s_sync, s_gid, s_row):
    """:func:`_stage` for the window join, which reads only the time, key and row of each present event; also
    checks each is an interval of ``length`` ticks. Returns (end offset, whether one is not)."""
    has_absent = len(absent) > 0
    w = off
    r = 0
    bad = False
    for i in range(len(sync)):
        keep = 1 - np.int64(absent[i]) if has_absent else 1
        t = sync[i]
        if not points:
            bad |= (keep == 1) & (other[i] - t != length)
        s_sync[w] = t
        s_gid[w] = kid[i]
        s_row[w] = base + (r if dense else i)
        w += keep
        r += keep
    bad |= points and length != 1 and w > off
    return w, bad


@numba.njit(cache=True)
def _merge_order(sync, n0):
    """The order merging ``sync[:n0]`` and ``sync[n0:]``, each sorted (the first run first on ties)."""
    n = len(sync)
    order = np.empty(n, np.int64)
    i = 0
    j = n0
    for w in range(n):
        if j >= n or (i < n0 and sync[i] <= sync[j]):
            order[w] = i
            i += 1
        else:
            order[w] = j
            j += 1
    return order


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
def probe_emit(sync, gid, row, link, n0, n, duration, a_start, a_row, a_prev, lo, off, out, j0, y0):
    """The window join's second pass: each right point (from ``j0``; resuming its walk at left id ``y0`` when
    ``y0 >= 0``) meets the left events of its key alive at its time ``t``, newest first: those that started at
    or before it (linked in the first pass) and end after it (``t - start < duration``). Each pair is
    ``[t, t+1)``. Returns (outputs, next right point, left id to resume at), pausing when ``out`` is full."""
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
            out[1, w] = t + 1
            out[2, w] = a_row[y - off]
            out[3, w] = row[j]
            w += 1
            y = a_prev[y - off]
    return w, n, -1


_EMIT_COLUMNS = """
def kernel(sync, gid, row, link, n0, n, duration, a_start, a_row, a_prev, lo, off,
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
            o_other[w] = t + 1
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


@numba.njit(cache=True)
def _remap_links(nxt, prv, head, s, keep, mapping):
    """Renumber side s's rows after compaction (``keep``: old row of each new row)."""
    for j in range(len(keep)):
        a = nxt[s, keep[j]]
        b = prv[s, keep[j]]
        nxt[s, j] = mapping[a] if a >= 0 else -1
        prv[s, j] = mapping[b] if b >= 0 else -1
    for g in range(head.shape[1]):
        h = head[s, g]
        if h >= 0:
            head[s, g] = mapping[h]


# --------------------------------------------------------------------------------------
# per-side payload stores and key extraction
# --------------------------------------------------------------------------------------
def _fixed_width(t: pa.DataType) -> bool:
    """Numbers and times of 1, 2, 4 or 8 bytes: the columns a store can keep as numpy buffers."""
    if not (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_temporal(t)):
        return False
    try:
        return t.bit_width in (8, 16, 32, 64)
    except ValueError:
        return False


def _values(col: pa.Array, dtype: np.dtype) -> np.ndarray:
    """The value buffer of a fixed-width column without nulls, as signed integers of its width (no copy)."""
    return np.frombuffer(col.buffers()[1], dtype, count=len(col), offset=col.offset * dtype.itemsize)


def _pool_empty(shape: tuple[int, ...], dtype=np.int64) -> np.ndarray:
    """An uninitialised array in memory from Arrow's pool, which keeps freed pages for reuse (fresh numpy
    memory of output size goes back to the system when freed and is faulted in again for the next chunk)."""
    dtype = np.dtype(dtype)
    n = int(np.prod(shape))
    return np.frombuffer(pa.allocate_buffer(max(n, 1) * dtype.itemsize), dtype, count=n).reshape(shape)


@numba.njit(cache=True)
def _gather_into(values, rows, out):
    for i in range(len(rows)):
        out[i] = values[rows[i]]


def _take_values(values: np.ndarray, rows: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """``values[rows]`` (rows valid int64 positions) by one compiled loop per value width, into ``out`` or pool
    memory."""
    if out is None:
        out = _pool_empty((len(rows),), values.dtype)
    width = f"i{values.dtype.itemsize}"
    _gather_into(values.view(width), rows.astype(np.int64, copy=False), out.view(width))
    return out


class _Store:
    """The payload rows of one input that state refers to, by row number.

    While every stored column is fixed-width with no nulls (numbers, times), the present rows
    are copied into growing numpy buffers and an output's rows are gathered by a compiled loop
    (Arrow wraps the result without a copy). A column of any other kind (strings,
    nulls, a struct key) makes the store a list of Arrow batches, gathered by Arrow.
    """

    def __init__(self):
        self.batches: list[pa.RecordBatch] = []  # the Arrow form (used when ``dense`` is None)
        self.dense: list[np.ndarray] | None = None  # the numpy form: one buffer per column
        self.matrix: np.ndarray | None = None  # all columns 8 bytes wide: ``dense`` are the rows of this matrix
        self.rows = 0
        self.schema: pa.Schema | None = None

    def append(self, batch: EventBatch) -> int:
        """Store every row of ``batch``: its row ``i`` becomes row ``base + i``; returns ``base``."""
        return self.append_present(batch, None)[0]

    def append_present(self, batch: EventBatch, present: np.ndarray | None) -> tuple[int, bool]:
        """Store the rows of ``batch`` at ``present`` (None: all). Returns ``(base, dense)``: with ``dense``, the
        ``r``-th present row became row ``base + r``; otherwise row ``i`` of the batch became ``base + i``."""
        cols = dict(batch.columns)
        if batch.key is not None:
            cols[_KEY_COL] = batch.key
            cols[_HASH_COL] = pa.array(batch.hash, pa.int64())
        return self._append(cols, len(batch), present)

    def _append(self, cols: dict[str, pa.Array], n: int, present: np.ndarray | None) -> tuple[int, bool]:
        base = self.rows
        if self.schema is None:
            self.schema = pa.schema([pa.field(k, v.type) for k, v in cols.items()])
            if cols and all(_fixed_width(v.type) for v in cols.values()):
                self.dense = [np.empty(0, f"i{v.type.bit_width // 8}") for v in cols.values()]
                if all(b.dtype.itemsize == 8 for b in self.dense):
                    self.matrix = np.empty((len(self.dense), 0), np.int64)
        if self.dense is not None and self._fits(cols):
            k = n if present is None else len(present)
            if self.rows + k > len(self.dense[0]):
                size = max(self.rows + k, 2 * len(self.dense[0]), 1024)
                if self.matrix is not None:
                    grown = np.empty((len(self.dense), size), np.int64)
                    grown[:, : self.rows] = self.matrix[:, : self.rows]
                    self.matrix, self.dense = grown, list(grown)
                for j, buf in enumerate(self.dense):
                    if self.matrix is None:
                        grown = np.empty(size, buf.dtype)
                        grown[: self.rows] = buf[: self.rows]
                        self.dense[j] = grown
            for buf, col in zip(self.dense, cols.values(), strict=True):
                if k == 0:
                    break  # (an empty column may have no value buffer at all)
                values = _values(col, buf.dtype)
                if present is None:
                    buf[self.rows : self.rows + k] = values
                else:
                    _take_values(values, present, out=buf[self.rows : self.rows + k])
            self.rows += k
            return base, True
        self._to_arrow()
        dense = present is None
        if present is not None and 2 * len(present) < n:
            # mostly filtered out: store a copy of the present rows rather than all of them
            cols = {name: gather(col, present) for name, col in cols.items()}
            dense = True
        rb = pa.RecordBatch.from_arrays(list(cols.values()), names=list(cols))
        if not rb.schema.equals(self.schema):
            rb = rb.cast(self.schema) if rb.schema.names == self.schema.names else rb
        self.batches.append(rb)
        self.rows += rb.num_rows
        if len(self.batches) > 32:
            self.batches = pa.Table.from_batches(self.batches).combine_chunks().to_batches()
        return base, dense

    def _fits(self, cols: dict[str, pa.Array]) -> bool:
        """Whether these columns can join the numpy form (a differing type is cast when that is safe)."""
        if list(cols) != self.schema.names:
            return False
        for field in self.schema:
            col = cols[field.name]
            if col.null_count:
                return False
            if col.type != field.type:
                try:
                    cols[field.name] = col.cast(field.type)
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                    return False
        return True

    def _arrays(self, rows: np.ndarray | None, names=None) -> dict[str, pa.Array]:
        """The numpy form's columns at ``rows`` (None: all stored rows), as Arrow arrays."""
        out = {}
        for buf, f in zip(self.dense, self.schema, strict=True):
            if names is not None and f.name not in names and f.name not in (_KEY_COL, _HASH_COL):
                continue
            if rows is None:
                values = buf[: self.rows].copy()
            else:
                values = _take_values(buf[: self.rows], rows)
            out[f.name] = pa.Array.from_buffers(f.type, len(values), [None, pa.py_buffer(values)])
        return out

    def selection(self, names=None) -> np.ndarray:
        """Positions of the matrix rows an output needs (the ``names`` fields, or all, plus any group key)."""
        keep = [
            i for i, f in enumerate(self.schema) if names is None or f.name in names or f.name in (_KEY_COL, _HASH_COL)
        ]
        return np.array(keep, np.int64)

    def wrap(self, values: np.ndarray, sel: np.ndarray) -> dict[str, pa.Array]:
        """Output rows gathered from the matrix rows ``sel`` (``values[c]`` for field ``sel[c]``) as Arrow columns."""
        fields = [self.schema.field(int(i)) for i in sel]
        return {
            f.name: pa.Array.from_buffers(f.type, values.shape[1], [None, pa.py_buffer(v)])
            for f, v in zip(fields, values, strict=True)
        }

    def _to_arrow(self) -> None:
        """Leave the numpy form for good (a batch came that it cannot hold)."""
        if self.dense is None:
            return
        if self.rows:
            self.batches = [pa.RecordBatch.from_pydict(self._arrays(None), schema=self.schema)]
        self.dense = self.matrix = None

    def take(self, rows: np.ndarray, names: list[str] | None = None) -> dict[str, pa.Array]:
        """The payload of these rows (only the ``names`` fields, plus any group key, when given)."""
        if self.dense is not None:
            return self._arrays(rows, names)
        if not self.batches:
            return {}
        if len(self.batches) > 1:
            # one contiguous batch: compaction keeps the store near the alive rows, so this is cheap
            self.batches = [pa.concat_batches(self.batches)]
        batch = self.batches[0]
        if names is not None:
            batch = batch.select([n for n in batch.schema.names if n in names or n in (_KEY_COL, _HASH_COL)])
        # Arrow's take, not numpy's: its memory pool reuses pages where fresh numpy arrays fault them in
        taken = batch.take(pa.array(rows, pa.int64()))
        return dict(zip(taken.schema.names, taken.columns, strict=True))

    def compact(self, keep: np.ndarray) -> None:
        if self.dense is not None:
            for buf in self.dense:
                buf[: len(keep)] = buf[keep]
        elif self.batches:
            table = pa.Table.from_batches(self.batches).take(pa.array(keep, pa.int64()))
            self.batches = table.combine_chunks().to_batches() or []
        self.rows = len(keep)

    def snapshot(self) -> dict:
        if self.dense is not None:
            table = pa.Table.from_pydict(self._arrays(None), schema=self.schema)
        else:
            table = pa.Table.from_batches(self.batches) if self.batches else None
        return {"rows": table, "count": self.rows}

    def restore(self, state: dict) -> None:
        self.batches, self.dense, self.matrix, self.rows, self.schema = [], None, None, 0, None
        table = state["rows"]
        if table is not None:
            cols = {name: table.column(name).combine_chunks() for name in table.schema.names}
            self._append(cols, table.num_rows, None)
        self.rows = state["count"]


def key_spec(key) -> tuple[str, object]:
    """Normalise a key argument: ("fields", names), ("lambda", fn) or ("none", None)."""
    if key is None:
        return ("none", ())
    if isinstance(key, str):
        return ("fields", (key,))
    if isinstance(key, list | tuple) and all(isinstance(k, str) for k in key):
        if not key:
            raise PlanError("a join key needs at least one field")
        return ("fields", tuple(key))
    if callable(key):
        return ("lambda", key)
    raise PlanError(f"a join key is a field name, a list of field names, or a lambda; got {key!r}")


class _KeyColumns:
    """Computes one input's join-key columns for a batch."""

    def __init__(self, key, schema: pa.Schema | None, side: str):
        self.kind, self.spec = key_spec(key)
        self.fn = None
        if self.kind == "fields" and schema is not None:
            missing = [f for f in self.spec if f not in schema.names]
            if missing:
                raise PlanError(f"{side} join key field(s) {missing} not in the stream; fields are {schema.names}")
        if self.kind == "lambda":
            self.fn = CompiledLambda(self.spec, schema, truth=False)

    def describe(self) -> str:
        if self.kind == "fields":
            return ", ".join(self.spec)
        if self.kind == "lambda":
            return f"lambda ({self.fn.describe()})"
        return "none"

    def columns(self, batch: EventBatch) -> list[pa.Array]:
        if self.kind == "none":
            return []
        if self.kind == "fields":
            try:
                return [batch.columns[f] for f in self.spec]
            except KeyError as exc:
                raise PlanError(f"join key field {exc.args[0]!r} not in the stream; fields are {batch.names}") from None
        got = self.fn.project(batch) if self.fn.mode == "columnar" else None
        if got is None:
            got = self.fn.project_rows(batch)
        return [pa.array(c) if not isinstance(c, pa.Array) else c for c in got.values()]


def _flatten(struct: pa.Array) -> list[pa.Array]:
    if isinstance(struct, pa.ChunkedArray):
        struct = struct.combine_chunks()
    return list(struct.flatten()) if isinstance(struct, pa.StructArray) else [struct]


def payload_hash(columns: dict[str, pa.Array], n: int) -> np.ndarray:
    """A 64-bit hash per row of the payload (end edges find their start edge by it).

    Non-numeric columns are dictionary-encoded first, so each distinct value is hashed once.
    """
    if not columns:
        return np.zeros(n, np.int64)
    parts = []
    for col in columns.values():
        t = col.type
        if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t) or pa.types.is_temporal(t):
            parts.append(col)
            continue
        enc = pc.dictionary_encode(col, null_encoding="encode")
        dictionary_hash = stable_hash([enc.dictionary]) if len(enc.dictionary) else np.zeros(0, np.int64)
        idx = np.asarray(enc.indices.to_numpy(zero_copy_only=False), dtype=np.int64)
        parts.append(pa.array(dictionary_hash[idx], pa.int64()))
    return stable_hash(parts)


# --------------------------------------------------------------------------------------
# cores: the state and kernel of one operation over the merged events
# --------------------------------------------------------------------------------------
def _queue_kind(props) -> tuple[int, str]:
    if props is None:
        return HEAP, "general (priority endpoint queue)"
    if props.start_edge_only:
        return FIFO, "start edges only (no endpoint queue)"
    if props.constant_duration is not None:
        return FIFO, f"constant duration {props.constant_duration} (FIFO endpoint queue)"
    return HEAP, "general (priority endpoint queue)"


def _grow_rows(a: np.ndarray, n: int, fill) -> np.ndarray:
    if a.shape[-1] >= n:
        return a
    size = max(n, 2 * a.shape[-1], 64)
    out = np.full(a.shape[:-1] + (size,), fill, a.dtype)
    out[..., : a.shape[-1]] = a
    return out


class _Core:
    """State of one kernel: per-row arrays for both sides, per-key heads, endpoint queues."""

    ROW_ARRAYS = {"st": (np.int64, 0), "en": (np.int64, 0), "ph": (np.int64, 0), "gr": (np.int64, -1)}
    LINK_ARRAYS = {"nxt": (np.int64, -1), "prv": (np.int64, -1), "inl": (np.bool_, False)}
    KEY_ARRAYS = {"head": (np.int64, -1)}
    out_capacity = 1 << 18

    def __init__(self, qkinds: tuple[int, int], mirrored: bool = False):
        self.mirrored = mirrored  # side 0 of this core is the operator's right input
        for name, (dt, fill) in {**self.ROW_ARRAYS, **self.LINK_ARRAYS}.items():
            setattr(self, name, np.full((2, 0), fill, dt))
        for name, (dt, fill) in self.KEY_ARRAYS.items():
            setattr(self, name, np.full((2, 0), fill, dt))
        self.qt = np.zeros((2, 16), np.int64)
        self.qv = np.zeros((2, 16), np.int64)
        self.qmeta = np.zeros((2, 2), np.int64)
        self.qkind = np.array(qkinds, np.int64)
        self.alive = np.zeros(2, np.int64)
        self.out = np.empty((4, self.out_capacity), np.int64)  # output buffer, drained after each kernel call

    def local(self, side: int) -> int:
        return 1 - side if self.mirrored else side

    def ensure(self, rows: tuple[int, int], keys: int, intervals: tuple[int, int]) -> None:
        n = max(rows)
        for name, (_, fill) in {**self.ROW_ARRAYS, **self.LINK_ARRAYS}.items():
            setattr(self, name, _grow_rows(getattr(self, name), n, fill))
        for name, (_, fill) in self.KEY_ARRAYS.items():
            setattr(self, name, _grow_rows(getattr(self, name), keys + 1, fill))
        for s in (0, 1):
            h = int(self.qmeta[s, 0])
            if h and self.qkind[s] == FIFO and h * 2 >= self.qmeta[s, 1]:
                tail = int(self.qmeta[s, 1])
                self.qt[s, : tail - h] = self.qt[s, h:tail]
                self.qv[s, : tail - h] = self.qv[s, h:tail]
                self.qmeta[s] = (0, tail - h)
        need = int(self.qmeta[:, 1].max()) + max(intervals) + 1
        self.qt = _grow_rows(self.qt, need, 0)
        self.qv = _grow_rows(self.qv, need, 0)

    def live(self, s: int, n: int) -> np.ndarray:
        return self.inl[s, :n]

    def remap(self, s: int, keep: np.ndarray, mapping: np.ndarray) -> None:
        for name in self.ROW_ARRAYS:
            arr = getattr(self, name)
            arr[s, : len(keep)] = arr[s, keep]
        _remap_links(self.nxt, self.prv, self.head, s, keep, mapping)
        self.inl[s, : len(keep)] = self.inl[s, keep]
        self.inl[s, len(keep) :] = False
        self._remap_queue(s, mapping)

    def _remap_queue(self, s: int, mapping: np.ndarray) -> None:
        h, t = self.qmeta[s]
        self.qv[s, h:t] = mapping[self.qv[s, h:t]]

    def run(self, ev: dict, bound: int):
        """Run the kernel over one chunk, draining the output buffer whenever it fills."""
        self.begin(ev)
        parts = []
        i = 0
        while True:
            n, i, need, err = self.call(ev, bound, i)
            if need == 0 and not parts:
                # the only part, left in the buffer: the row views stay valid until this core runs again,
                # and the caller gathers from them before that
                out = self.out
                return out[0, :n].copy(), out[1, :n].copy(), out[2, :n], out[3, :n], err
            if n:
                parts.append(self.out[:, :n].copy())
            if need == 0 or err:
                break
            if need > self.out.shape[1]:
                self.out = np.empty((4, max(need, 2 * self.out.shape[1])), np.int64)
        out = np.concatenate(parts, axis=1) if len(parts) > 1 else (parts[0] if parts else np.empty((4, 0), np.int64))
        return out[0], out[1], out[2], out[3], err

    def begin(self, ev: dict) -> None:
        pass

    def snapshot(self) -> dict:
        state = {name: getattr(self, name).copy() for name in (*self.ROW_ARRAYS, *self.LINK_ARRAYS, *self.KEY_ARRAYS)}
        state.update(qt=self.qt.copy(), qv=self.qv.copy(), qmeta=self.qmeta.copy(), alive=self.alive.copy())
        return state

    def restore(self, state: dict) -> None:
        for name, value in state.items():
            setattr(self, name, np.array(value, copy=True))


class _JoinCore(_Core):
    KEY_ARRAYS = {"head": (np.int64, -1), "lcount": (np.int64, 0), "openc": (np.int64, 0)}

    def gids(self, side: int, kid: np.ndarray) -> np.ndarray:
        return kid

    def call(self, ev: dict, bound: int, i: int):
        return join_kernel(
            ev["side"], ev["kind"], ev["sync"], ev["other"], ev["gid"], ev["row"], ev["ph"], ev["order"], bound,
            self.out, i,
            self.st, self.en, self.ph, self.gr, self.nxt, self.prv, self.inl, self.head, self.lcount, self.openc,
            self.qt, self.qv, self.qmeta, self.qkind, self.alive,
        )  # fmt: skip


class _ExistsCore(_Core):
    KEY_ARRAYS = {
        "head": (np.int64, -1),
        "lcount": (np.int64, 0),
        "cnt": (np.int64, 0),
        "mark": (np.int64, -1),
        "before": (np.int64, 0),
    }

    def __init__(self, qkinds, exists: bool, mirrored: bool = False):
        super().__init__(qkinds, mirrored)
        self.exists = exists
        self.seg = np.full(0, NONE, np.int64)
        self.stamp = np.zeros(1, np.int64)
        self.touched = np.empty(0, np.int64)
        self.pending = np.empty(0, np.int64)
        self.step = np.array([0, 0, MIN_TIME], np.int64)

    def begin(self, ev: dict) -> None:
        # per-chunk scratch: keys touched in the current time step, left events started in it
        if len(self.touched) < self.head.shape[1] + 1:
            self.touched = np.empty(2 * self.head.shape[1] + 1, np.int64)
        if len(self.pending) < len(ev["side"]) + 1:
            self.pending = np.empty(2 * len(ev["side"]) + 1, np.int64)
        self.step[:] = (0, 0, MIN_TIME)

    def gids(self, side: int, kid: np.ndarray) -> np.ndarray:
        # local side 0 (kept): null keys get id 0, which local side 1 never touches
        if side == 0:
            return np.where(kid >= 0, kid + 1, 0)
        return np.where(kid >= 0, kid + 1, -1)

    def ensure(self, rows, keys, intervals) -> None:
        super().ensure(rows, keys + 1, intervals)
        self.seg = _grow_rows(self.seg, self.st.shape[1], NONE)

    def remap(self, s, keep, mapping) -> None:
        if s == 1:  # side 1 keeps no rows: its queue holds key ids
            return
        super().remap(s, keep, mapping)
        self.seg[: len(keep)] = self.seg[keep]

    def live(self, s: int, n: int) -> np.ndarray:
        return self.inl[s, :n] if s == 0 else np.zeros(n, bool)

    def call(self, ev: dict, bound: int, i: int):
        return exists_kernel(
            ev["side"], ev["kind"], ev["sync"], ev["other"], ev["gid"], ev["row"], ev["ph"], bound, self.out, i,
            self.exists, self.st, self.en, self.ph, self.gr, self.seg, self.nxt, self.prv, self.inl, self.head,
            self.lcount, self.cnt[1], self.mark[1], self.before[1], self.stamp, self.touched, self.pending, self.step,
            self.qt, self.qv, self.qmeta, self.qkind, self.alive,
        )  # fmt: skip

    def snapshot(self) -> dict:
        state = super().snapshot()
        state.update(seg=self.seg.copy(), stamp=self.stamp.copy())
        return state


class _ClipCore(_Core):
    KEY_ARRAYS = {"head": (np.int64, -1), "lcount": (np.int64, 0)}

    def gids(self, side: int, kid: np.ndarray) -> np.ndarray:
        if side == 0:
            return np.where(kid >= 0, kid + 1, 0)
        return np.where(kid >= 0, kid + 1, -1)

    def ensure(self, rows, keys, intervals) -> None:
        super().ensure(rows, keys + 1, intervals)

    def live(self, s: int, n: int) -> np.ndarray:
        return self.inl[s, :n] if s == 0 else np.zeros(n, bool)

    def remap(self, s, keep, mapping) -> None:
        if s == 0:
            super().remap(s, keep, mapping)

    def call(self, ev: dict, bound: int, i: int):
        return clip_kernel(
            ev["side"], ev["kind"], ev["sync"], ev["other"], ev["gid"], ev["row"], ev["ph"], bound, self.out, i,
            self.st, self.en, self.ph, self.gr, self.nxt, self.prv, self.inl, self.head, self.lcount,
            self.qt, self.qv, self.qmeta, self.qkind, self.alive,
        )  # fmt: skip


class _MergeCore(_Core):
    """Merge-join state: per side, alive rows with their key codes, and the row numbers sorted by key."""

    ROW_ARRAYS = {"st": (np.int64, 0), "en": (np.int64, 0), "ph": (np.int64, 0), "kc": (np.int64, 0)}
    LINK_ARRAYS = {"inl": (np.bool_, False), "srt": (np.int64, -1)}
    KEY_ARRAYS = {}

    def __init__(self, qkinds):
        super().__init__(qkinds)
        self.m = np.zeros(2, np.int64)
        self.tmp = np.empty(0, np.int64)

    def ensure(self, rows, keys, intervals) -> None:
        super().ensure(rows, keys, intervals)
        if len(self.tmp) < self.st.shape[1]:
            self.tmp = np.empty(self.st.shape[1], np.int64)

    def remap(self, s: int, keep: np.ndarray, mapping: np.ndarray) -> None:
        rows = self.srt[s, : self.m[s]]
        rows = mapping[rows[self.inl[s, rows]]]  # sorted order kept, the dead dropped
        for name in self.ROW_ARRAYS:
            arr = getattr(self, name)
            arr[s, : len(keep)] = arr[s, keep]
        self.inl[s, : len(keep)] = self.inl[s, keep]
        self.inl[s, len(keep) :] = False
        self.srt[s, : len(rows)] = rows
        self.m[s] = len(rows)
        self._remap_queue(s, mapping)

    def run(self, ev: dict, bound: int):
        self.out, n, err = merge_join_kernel(
            ev["kind"], ev["sync"], ev["other"], ev["key"], ev["row"], ev["ph"], ev["n0"], bound, self.out,
            self.st, self.en, self.ph, self.kc, self.inl, self.srt, self.m, self.tmp,
            self.qt, self.qv, self.qmeta, self.qkind, self.alive,
        )  # fmt: skip
        out = self.out[:, :n].copy()
        return out[0], out[1], out[2], out[3], err

    def snapshot(self) -> dict:
        return {**super().snapshot(), "m": self.m.copy()}


class _WindowCore:
    """State of the window join: the left's events in arrival order (ids ``lo..tail-1`` alive), each linked to
    the previous left event of its key, and per key slot the latest left id. Left ids below ``lo`` have ended
    for every time still to come; arrays hold ids from ``off`` on."""

    mirrored = False
    out_capacity = 1 << 18

    def __init__(self, duration: int):
        self.duration = duration
        self.a_start = np.empty(0, np.int64)
        self.a_row = np.empty(0, np.int64)
        self.a_prev = np.empty(0, np.int64)
        self.last = np.full(1, -1, np.int64)  # key slot (key id + 1; 0: null keys) -> latest left id
        self.lo = self.tail = self.off = 0
        self.link = np.empty(0, np.int64)
        self.out = np.empty((4, self.out_capacity), np.int64)
        self.qmeta = np.zeros((2, 2), np.int64)  # no endpoint queue: ends are implied by the constant duration
        self.qt = np.zeros((2, 1), np.int64)
        self.pairs_per_point = 1.0  # sizes the output columns of the next chunk

    @property
    def alive(self) -> np.ndarray:
        return np.array([self.tail - self.lo, 0], np.int64)

    def local(self, side: int) -> int:
        return side

    def ensure(self, keys: int, n0: int, n: int) -> None:
        if len(self.last) < keys + 1:
            grown = np.full(max(keys + 1, 2 * len(self.last)), -1, np.int64)
            grown[: len(self.last)] = self.last
            self.last = grown
        if self.lo - self.off > (self.tail - self.off) // 2:  # drop ended events from the front
            keep = slice(self.lo - self.off, self.tail - self.off)
            m = self.tail - self.lo
            for name in ("a_start", "a_row", "a_prev"):
                arr = getattr(self, name)
                arr[:m] = arr[keep]
            self.off = self.lo
        need = self.tail - self.off + n0
        if len(self.a_start) < need:
            size = max(need, 2 * len(self.a_start), 1024)
            for name in ("a_start", "a_row", "a_prev"):
                grown = np.empty(size, np.int64)
                grown[: self.tail - self.off] = getattr(self, name)[: self.tail - self.off]
                setattr(self, name, grown)
        if len(self.link) < n:
            self.link = np.empty(max(n, 2 * len(self.link)), np.int64)

    def link_chunk(self, staged: dict, n0: int) -> None:
        """The first pass over a chunk (see :func:`probe_link`): its left events join the window."""
        n = len(staged["sync"])
        sync, gid, row = staged["sync"], staged["gid"], staged["row"]
        probe_link(
            sync, gid, n0, n, self.a_start, self.a_row, self.a_prev, row, self.tail, self.off, self.last, self.link
        )
        self.tail += n0

    def run(self, staged: dict, n0: int):
        """The pairs of a chunk as (sync, other, left row, right row)."""
        self.link_chunk(staged, n0)
        n = len(staged["sync"])
        sync, gid, row = staged["sync"], staged["gid"], staged["row"]
        parts = []
        j, y = n0, -1
        while True:
            w, j, y = probe_emit(
                sync, gid, row, self.link, n0, n, self.duration, self.a_start, self.a_row, self.a_prev,
                self.lo, self.off, self.out, j, y,
            )  # fmt: skip
            if j >= n and not parts:
                out = self.out  # the only part: the row views are gathered before this core runs again
                return out[0, :w].copy(), out[1, :w].copy(), out[2, :w], out[3, :w]
            if w:
                parts.append(self.out[:, :w].copy())
            if j >= n:
                break
            self.out = np.empty((4, 2 * self.out.shape[1]), np.int64)
        out = np.concatenate(parts, axis=1) if len(parts) > 1 else parts[0]
        return out[0], out[1], out[2], out[3]

    def run_columns(self, staged: dict, n0: int, lmat, lsel, rmat, rsel) -> list[tuple]:
        """The pairs of a chunk with their payload, as parts (sync, other, left values, right values): each part's
        arrays are allocated for the pairs expected from the pairs per point seen so far."""
        self.link_chunk(staged, n0)
        n = len(staged["sync"])
        parts = []
        j, y = n0, -1
        while j < n:
            cap = max(1, min(int(self.pairs_per_point * (n - j) * 1.25) + 1024, 4 * self.out_capacity))
            o_sync, o_other = _pool_empty((cap,)), _pool_empty((cap,))
            o_left, o_right = _pool_empty((len(lsel), cap)), _pool_empty((len(rsel), cap))
            w, j, y = probe_emit_columns(len(lsel), len(rsel))(
                staged["sync"], staged["gid"], staged["row"], self.link, n0, n, self.duration, self.a_start,
                self.a_row, self.a_prev, self.lo, self.off, lmat, lsel, rmat, rsel, o_sync, o_other, o_left, o_right,
                j, y,
            )  # fmt: skip
            if w:
                parts.append((o_sync[:w], o_other[:w], o_left[:, :w], o_right[:, :w]))
        if n > n0:
            pairs = sum(len(p[0]) for p in parts)
            self.pairs_per_point = 0.5 * self.pairs_per_point + 0.5 * pairs / (n - n0)
        return parts

    def expire(self, bound: int) -> None:
        """Left events that end at or before ``bound`` meet nothing still to come."""
        if bound >= INFINITY:
            self.lo = self.tail
            return
        window = self.a_start[self.lo - self.off : self.tail - self.off]
        self.lo += int(np.searchsorted(window, max(bound - self.duration, MIN_TIME), side="right"))

    def live(self, s: int, n: int) -> np.ndarray:
        mask = np.zeros(n, bool)
        if s == 0:
            mask[self.a_row[self.lo - self.off : self.tail - self.off]] = True
        return mask

    def remap(self, s: int, keep: np.ndarray, mapping: np.ndarray) -> None:
        if s == 0:
            rows = self.a_row[self.lo - self.off : self.tail - self.off]
            rows[:] = mapping[rows]

    def snapshot(self) -> dict:
        window = slice(self.lo - self.off, self.tail - self.off)
        return {
            "a_start": self.a_start[window].copy(),
            "a_row": self.a_row[window].copy(),
            "a_prev": self.a_prev[window].copy(),
            "last": self.last.copy(),
            "ids": np.array([self.lo, self.tail], np.int64),
        }

    def restore(self, state: dict) -> None:
        self.a_start, self.a_row, self.a_prev = (np.array(state[k], np.int64) for k in ("a_start", "a_row", "a_prev"))
        self.last = np.array(state["last"], np.int64)
        self.lo, self.tail = (int(v) for v in state["ids"])
        self.off = self.lo


# --------------------------------------------------------------------------------------
# the operator
# --------------------------------------------------------------------------------------
class _NullRow:
    """Stands for the missing side of an outer join in a ``result`` lambda: every field is None."""

    def __getattr__(self, name):
        return None

    def __getitem__(self, name):
        return None


def output_names(left: list[str], right: list[str]) -> list[str]:
    """Default result fields: the left's, then the right's (a clashing name gets ``_right``)."""
    taken = set(left)
    out = list(left)
    for name in right:
        new = name
        while new in taken:
            new = new + "_right"
        taken.add(new)
        out.append(new)
    return out


def _unify(columns: list[dict[str, pa.Array]]) -> list[dict[str, pa.Array]]:
    """Cast null-typed columns (a missing side seen before its type was known) to the others' type."""
    if len(columns) < 2:
        return columns
    types = {}
    for cols in columns:
        for k, v in cols.items():
            if not pa.types.is_null(v.type):
                types.setdefault(k, v.type)
    return [
        {k: (v.cast(types[k]) if pa.types.is_null(v.type) and k in types else v) for k, v in cols.items()}
        for cols in columns
    ]


class JoinOp(Operator):
    """The two-input operator behind every member of the family (see the module docstring).

    ``mode`` is one of ``inner``, ``left_outer``, ``full_outer``, ``exists``, ``not_exists``,
    ``clip``. ``left_key``/``right_key`` of None make a cross join.
    """

    name = "Join"

    def __init__(
        self,
        mode: str,
        left_key,
        right_key,
        left_schema: pa.Schema | None = None,
        right_schema: pa.Schema | None = None,
        left_props=None,
        right_props=None,
        result=None,
        build_once: bool = False,
        variant: str | None = None,
    ):
        super().__init__()
        self.mode = mode
        self.build_once = build_once and mode == "inner"
        self.ports = (InputPort(self, 0), InputPort(self, 1))
        self.keys = (_KeyColumns(left_key, left_schema, "left"), _KeyColumns(right_key, right_schema, "right"))
        schemas, props = (left_schema, right_schema), (left_props, right_props)
        self.merge = _choose_merge(mode, self.build_once, variant, (left_key, right_key), schemas, props)
        self.schemas = [left_schema, right_schema]
        self.result = result
        q = [_queue_kind(left_props), _queue_kind(right_props)]
        if self.build_once:  # the built left replays as intervals of any length
            q[0] = (HEAP, "built once when it completes (right intervals probe it, unstored)")
        qk = (q[0][0], q[1][0])
        self.start_edge_only = (
            bool(left_props and left_props.start_edge_only),
            bool(right_props and right_props.start_edge_only),
        )
        self.window = None if self.merge else _window_duration(mode, self.build_once, left_props, right_props)
        if self.merge:
            self.cores = [_MergeCore(qk)]
        elif self.window is not None:
            self.cores = [_WindowCore(self.window)]
            q = [(FIFO, f"constant duration {self.window} (its alive events per key, newest first)"),
                 (FIFO, "points (each probes the left's alive events, never stored)")]  # fmt: skip
        elif mode == "inner":
            self.cores = [_JoinCore(qk)]
        elif mode == "left_outer":
            self.cores = [_JoinCore(qk), _ExistsCore(qk, exists=False)]
        elif mode == "full_outer":
            self.cores = [_JoinCore(qk), _ExistsCore(qk, exists=False), _ExistsCore(qk[::-1], False, mirrored=True)]
        elif mode in ("exists", "not_exists"):
            self.cores = [_ExistsCore(qk, exists=mode == "exists")]
        elif mode == "clip":
            self.cores = [_ClipCore(qk)]
        else:
            raise PlanError(f"unknown join mode {mode!r}")
        algorithm = {
            "inner": "symmetric hash join",
            "left_outer": "symmetric hash join + anti-join (left)",
            "full_outer": "symmetric hash join + anti-joins (both sides)",
            "exists": "semi-join (left by key, right counts)",
            "not_exists": "anti-join (left by key, right counts)",
            "clip": "clip (left by key, right starts)",
        }[mode]
        cross = self.keys[0].kind == "none"
        if self.merge:
            algorithm = "merge join (inputs sorted by the key within each sync time; no hashing)"
        elif self.window is not None:
            algorithm = "window join (right points probe the left's window per key; no endpoint queue)"
        self.variant = (
            f"{'cross join' if cross and mode == 'inner' else algorithm}; left: {q[0][1]}; right: {q[1][1]}; "
            f"keys: {self.keys[0].describe()} = {self.keys[1].describe()}"
        )
        self._compile_result(result, schemas)
        if result is not None:
            how = (
                describe_columnar(self.result_node)
                if self.result_node is not None
                else f"row mode ({self.result_reason})"
            )
            self.variant += f"; result: {how}"
        self.result_types: dict[str, pa.DataType] = dict(result_types(result, left_schema, right_schema) or {})
        self.stores = (_Store(), _Store())
        self.index: KeyIndex | None = None
        self.pending: list[list[EventBatch]] = [[], []]
        self.seen = [MIN_TIME, MIN_TIME]
        self.punct = [MIN_TIME, MIN_TIME]
        self.completed = [False, False]
        self.last_punct = MIN_TIME
        self.grouped: bool | None = None
        self.built: dict[str, np.ndarray] | None = None  # build-once: the left as intervals, by key then start
        self.replay: dict[str, np.ndarray] | None = None  # the same, by start
        self.replay_pos = 0  # build-once: left intervals (by start) already fed to the kernel
        self.reorder = ReorderBuffer()  # build-once: probe outputs that start in the future
        self.stage = {k: np.empty(0, np.int8 if k in ("side", "kind") else np.int64) for k in _STAGED}  # reused

    def _compile_result(self, result, schemas) -> None:
        """Translate ``result(l, r)`` to an expression over both sides' columns, so outputs are built columnar."""
        self.result_node = None
        self.result_reason = ""
        self.result_fields: tuple[list[str], list[str]] | None = None  # the fields each side's store must give
        if result is None:
            return
        try:
            node = translate_rows(result, [_LEFT, _RIGHT])
        except Opaque as exc:
            self.result_reason = str(exc)
            return
        if all(s is not None for s in schemas):
            empty = {
                p + f.name: pa.array([], f.type) for p, sc in zip((_LEFT, _RIGHT), schemas, strict=True) for f in sc
            }
            missing = node.columns() - set(empty)
            if missing:
                names = sorted(c.split(".", 1)[1] for c in missing)
                raise PlanError(f"the join's result lambda uses field(s) {names} its inputs do not have")
            try:
                ev = Evaluator(empty, 0)
                for _, part in record_fields(node):
                    ev.eval(part)
            except Unsupported as exc:
                self.result_reason = str(exc)
                return
            except Fallback:
                pass
        self.result_node = node
        used = node.columns()
        self.result_fields = tuple(
            [c[len(p) :] for c in sorted(used) if c.startswith(p)] for p in (_LEFT, _RIGHT)
        )  # fmt: skip

    # -- control -----------------------------------------------------------------------
    def on_side_batch(self, side: int, batch: EventBatch) -> None:
        # absent (filtered-out) events stay in the batch: the kernels skip them, no copy is made
        if len(batch) == 0:
            return
        self._check_grouping(batch)
        if batch.absent is None or not batch.absent.all():
            self.pending[side].append(batch)
        self.seen[side] = max(self.seen[side], int(batch.sync[-1]))
        self._advance()

    def on_side_punctuation(self, side: int, time: int) -> None:
        self.punct[side] = max(self.punct[side], time)
        self._advance()
        if self.build_once and not self.completed[0]:
            return  # held right events may still produce output before the right's punctuation
        low = min(self.punct)
        if low > self.last_punct:
            self.last_punct = low
            self.emit_punctuation(low)

    def on_side_flush(self, side: int) -> None:
        self.emit_flush()

    def on_side_completed(self, side: int) -> None:
        self.completed[side] = True
        self.seen[side] = self.punct[side] = INFINITY
        if self.build_once and side == 0:
            self._build()
        self._advance()
        if all(self.completed):
            self.emit_completed()

    def _check_grouping(self, batch: EventBatch) -> None:
        grouped = batch.key is not None
        if self.grouped is None:
            self.grouped = grouped
        elif grouped != self.grouped:
            raise PlanError("a join needs both inputs grouped the same way (both inside group_apply, or neither)")

    # -- processing --------------------------------------------------------------------
    def _advance(self) -> None:
        if self.build_once and not self.completed[0]:
            return  # the right waits until the left is built
        # events at time t are processed once both inputs are past t, so ends precede starts at t
        bound = min(max(self.seen[s], self.punct[s]) for s in (0, 1))
        if bound == MIN_TIME:
            return
        parts: list[list[EventBatch]] = [[], []]
        for side in (0, 1):
            # the pieces before the bound go now, without concatenating pending batches (that copies payloads)
            pending, rest = self.pending[side], []
            for j, b in enumerate(pending):
                if len(b) == 0:
                    continue
                if bound >= INFINITY or b.sync[-1] < bound:
                    parts[side].append(b)
                    continue
                cut = int(np.searchsorted(b.sync, bound, side="left"))
                if cut:
                    parts[side].append(b.slice(0, cut))
                rest = [b.slice(cut, len(b)), *pending[j + 1 :]]
                break
            self.pending[side] = rest
        if self.build_once:
            self._probe_built(concat_batches(parts[1]) if parts[1] else None, bound)
            return
        if not parts[0] and not parts[1] and not self._queued_before(bound):
            return
        if self.merge:
            self._process_merge(parts, bound)
        else:
            self._process(parts, bound)

    def _queued_before(self, bound: int) -> bool:
        for core in self.cores:
            for s in (0, 1):
                if core.qmeta[s, 1] > core.qmeta[s, 0] and int(core.qt[s, core.qmeta[s, 0]]) < bound:
                    return True
        return False

    def _key_ids(self, side: int, batch: EventBatch) -> np.ndarray:
        cols = self.keys[side].columns(batch)
        n = len(batch)
        valid = None
        for c in cols:
            if c.null_count:
                v = np.asarray(c.is_valid().to_numpy(zero_copy_only=False))
                valid = v if valid is None else valid & v
        if valid is not None and not valid.any():
            return np.full(n, -1, np.int64)  # every key has a null field (row mode may even type it null)
        if batch.key is not None:
            cols = _flatten(batch.key) + cols
        if not cols:
            return np.zeros(n, np.int64)
        if self.index is None:
            self.index = KeyIndex(tuple(f"k{i}" for i in range(len(cols))))
        elif len(cols) != len(self.index.names):
            raise PlanError(
                f"the two join keys have different numbers of fields ({len(self.index.names)} vs {len(cols)})"
            )
        ids = self.index.ids(cols)
        if valid is not None:
            ids = np.where(valid, ids, -1)
        return ids

    # -- build once (a small left side) -----------------------------------------------------
    def _build(self) -> None:
        """The whole left is in: resolve its edges to intervals and index them by key, then start."""
        whole = concat_batches(self.pending[0]).compact() if self.pending[0] else None
        self.pending[0] = []
        empty = np.empty(0, np.int64)
        if whole is None or len(whole) == 0:
            self.built = {"g": empty, "s": empty, "e": empty, "row": empty}
            self.replay = {"g": empty, "s": empty, "e": empty, "row": empty}
            return
        base = self.stores[0].append(whole)
        kid = self._key_ids(0, whole)
        sync, other = whole.sync, whole.other
        rows = np.arange(base, base + len(whole), dtype=np.int64)
        end = np.where(other < sync, -1, other)  # intervals keep their end; start edges: INFINITY for now
        starts = np.flatnonzero(other == INFINITY)
        ends = np.flatnonzero(other < sync)
        if len(ends):
            # an end edge closes a start edge with the same key, start time and payload
            ph = payload_hash(whole.columns, len(whole))
            keys = np.concatenate(
                [np.stack([kid[starts], sync[starts], ph[starts]], 1), np.stack([kid[ends], other[ends], ph[ends]], 1)]
            )
            _, group = np.unique(keys, axis=0, return_inverse=True)
            group = group.reshape(-1)
            gs, ge = group[: len(starts)], group[len(starts) :]
            rank_s = _rank_within(gs)
            rank_e = _rank_within(ge)
            width = max(len(starts), len(ends)) + 1
            code_s = gs * width + rank_s
            order = np.argsort(code_s)
            at = order[np.searchsorted(code_s[order], ge * width + rank_e)]
            end[starts[at]] = sync[ends]
        keep = (end >= 0) & (kid >= 0)
        g, s_, e, row = kid[keep], sync[keep], end[keep], rows[keep]
        by_key = np.lexsort((s_, g))
        self.built = {"g": g[by_key], "s": s_[by_key], "e": e[by_key], "row": row[by_key]}
        by_start = np.argsort(s_, kind="stable")
        self.replay = {"g": g[by_start], "s": s_[by_start], "e": e[by_start], "row": row[by_start]}

    def _probe_built(self, right: EventBatch | None, bound: int) -> None:
        """Right intervals probe the built left (never stored); right edges and the left replay run the kernel."""
        edges = None
        if right is not None:
            right = right.compact()
            kind_interval = (right.other != INFINITY) & (right.other > right.sync)
            intervals = right.take(np.flatnonzero(kind_interval)) if not kind_interval.all() else right
            if len(intervals):
                self._probe_intervals(intervals)
            if not kind_interval.all():
                edges = right.take(np.flatnonzero(~kind_interval))
        # the left replays into the kernel as its intervals start, so right edges meet them in time order
        stop = (
            len(self.replay["s"]) if bound >= INFINITY else int(np.searchsorted(self.replay["s"], bound, side="left"))
        )
        lo, self.replay_pos = self.replay_pos, stop
        if lo < stop or edges is not None or self._queued_before(bound):
            self._process([[], [] if edges is None else [edges]], bound, replay=(lo, stop))
        ready = self.reorder.release(bound - 1 if bound < INFINITY else INFINITY)
        if ready is not None:
            self.emit(ready)

    def _probe_intervals(self, right: EventBatch) -> None:
        b = self.built
        kid = self._key_ids(1, right)
        lo = np.searchsorted(b["g"], kid, side="left")
        hi = np.searchsorted(b["g"], kid, side="right")
        counts = np.where(kid >= 0, hi - lo, 0)
        total = int(counts.sum())
        if total == 0:
            return
        r = np.repeat(np.arange(len(right)), counts)
        li = np.repeat(lo, counts) + (np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts))
        start = np.maximum(b["s"][li], right.sync[r])
        end = np.minimum(b["e"][li], right.other[r])
        ok = np.flatnonzero(start < end)
        if len(ok) == 0:
            return
        base = self.stores[1].append(right)
        out = self._assemble(self.cores[0], start[ok], end[ok], b["row"][li[ok]], base + r[ok])
        self.reorder.push(out)

    def _process(self, parts: list[list[EventBatch]], bound: int, replay: tuple[int, int] | None = None) -> None:
        """Run the cores over the events of ``parts`` (per side, batches in time order) and any left replay."""
        total = sum(len(b) for side in parts for b in side) + (replay[1] - replay[0] if replay else 0)
        stage = self.stage
        if len(stage["sync"]) < total:
            size = max(total, 2 * len(stage["sync"]))
            self.stage = stage = {k: np.empty(size, v.dtype) for k, v in stage.items()}
        intervals = [0, 0]
        has_end = False
        off = 0
        if replay is not None and replay[0] < replay[1]:
            r = slice(*replay)
            n = replay[1] - replay[0]
            e = self.replay["e"][r]
            stage["side"][:n] = 0
            stage["kind"][:n] = np.where(e == INFINITY, START, INTERVAL)
            stage["sync"][:n] = self.replay["s"][r]
            stage["other"][:n] = e
            stage["gid"][:n] = self.replay["g"][r]
            stage["row"][:n] = self.replay["row"][r]
            stage["ph"][:n] = 0
            intervals[0] = n
            off = n
        n0 = off
        for side in (0, 1):
            for b in parts[side]:
                present = None if b.absent is None else np.flatnonzero(~b.absent)
                if present is not None and len(present) == 0:
                    continue
                base, dense = self.stores[side].append_present(b, present)  # absent rows are never referenced
                if self.window is not None:
                    off, bad = _stage_window(
                        b.sync, b.sync if b.points else b.other, b.points, _NO_ROWS if b.absent is None else b.absent,
                        self._present_key_ids(side, b, present), base, dense, self.window if side == 0 else 1, off,
                        stage["sync"], stage["gid"], stage["row"],
                    )  # fmt: skip
                    if bad:
                        raise PlanError(
                            f"a join input declared to hold intervals of {self.window} ticks (left) or points "
                            "(right) delivered an event of another kind"
                        )
                    continue
                end, n_int, n_end, n_edge = _stage(
                    b.sync, b.sync if b.points else b.other, b.points, _NO_ROWS if b.absent is None else b.absent,
                    self._present_key_ids(side, b, present), base, dense, side, off,
                    *(stage[k] for k in _STAGED),
                )  # fmt: skip
                if n_edge and not self.start_edge_only[side]:
                    ph = payload_hash(b.columns, len(b))  # end edges find their start edge by it
                    stage["ph"][off:end] = ph if present is None else ph[present]
                intervals[side] += n_int
                has_end = has_end or n_end > 0
                off = end
            if side == 0:
                n0 = off
        n = off
        staged = {k: v[:n] for k, v in stage.items()}
        n_keys = len(self.index) if self.index is not None else 1
        if self.window is not None:
            self._process_window(staged, n0, n_keys, bound)
            return
        if has_end:
            order = np.lexsort((staged["kind"] != END, staged["sync"]))  # by time, ends first; stable: left first
        elif 0 < n0 < n:
            order = _merge_order(staged["sync"], n0)  # two runs sorted by time: one linear merge
        else:
            order = np.arange(n)
        outputs = []
        for core in self.cores:
            if isinstance(core, _JoinCore) and not core.mirrored:
                ev = dict(staged, order=order)  # the kernel reads the staged events through ``order``
            else:
                ev = {k: v[order] for k, v in staged.items()}
                kid = ev.pop("gid")
                if core.mirrored:
                    ev["side"] = (1 - ev["side"]).astype(np.int8)
                ev["gid"] = np.where(ev["side"] == 0, core.gids(0, kid), core.gids(1, kid))
            rows_local = (self.stores[0].rows, self.stores[1].rows)
            ints = (intervals[0], intervals[1])
            if core.mirrored:
                rows_local, ints = rows_local[::-1], ints[::-1]
            core.ensure(rows_local, max(n_keys, 1), ints)
            o_sync, o_other, o_a, o_b, err = core.run(ev, bound)
            if err == _ERR_FIFO:
                raise PlanError(
                    "a join input declared constant duration delivered intervals whose ends go back in time"
                )
            if len(o_sync):
                outputs.append(self._assemble(core, o_sync, o_other, o_a, o_b))
        if outputs:
            out = outputs[0] if len(outputs) == 1 else _merge_sorted(outputs)
            if self.build_once:
                self.reorder.push(out)
            else:
                self.emit(out)
        self._maybe_compact()

    def _process_window(self, staged: dict, n0: int, n_keys: int, bound: int) -> None:
        core = self.cores[0]
        core.ensure(n_keys + 1, n0, len(staged["sync"]))
        stores = self.stores
        names = self.result_fields or (None, None)
        lsel = rsel = None
        if stores[0].matrix is not None and stores[1].matrix is not None:
            lsel, rsel = stores[0].selection(names[0]), stores[1].selection(names[1])
        if lsel is not None and max(len(lsel), len(rsel)) <= _MAX_FUSED_FIELDS:
            # every payload field is 8 bytes wide: the kernel writes the pairs' payload columns itself
            for o_sync, o_other, o_left, o_right in core.run_columns(
                staged, n0, stores[0].matrix, lsel, stores[1].matrix, rsel
            ):
                lcols, rcols = stores[0].wrap(o_left, lsel), stores[1].wrap(o_right, rsel)
                self.emit(self._pairs_batch(o_sync, o_other, lcols, rcols))
        else:
            o_sync, o_other, o_a, o_b = core.run(staged, n0)
            if len(o_sync):
                self.emit(self._assemble(core, o_sync, o_other, o_a, o_b))
        core.expire(bound)
        self._maybe_compact()

    def _pairs_batch(self, o_sync, o_other, lcols: dict, rcols: dict) -> EventBatch:
        """Output pairs from both sides' columns (the left's group key, if any, among them)."""
        key = lcols.pop(_KEY_COL, None)
        hsh = lcols.pop(_HASH_COL, None)
        rcols.pop(_KEY_COL, None)
        rcols.pop(_HASH_COL, None)
        hsh = None if hsh is None else np.asarray(hsh.to_numpy(zero_copy_only=False), np.int64)
        return EventBatch(o_sync, o_other, self._result(lcols, rcols, len(o_sync)), key=key, hash=hsh)

    def _present_key_ids(self, side: int, batch: EventBatch, present: np.ndarray | None) -> np.ndarray:
        """Key ids aligned with the batch's rows (those of absent rows are never read)."""
        if present is None or self.keys[side].kind != "lambda":
            return self._key_ids(side, batch)
        # a key lambda must not see filtered-out rows (they may be what the filter guarded against)
        kid = np.full(len(batch), -1, np.int64)
        kid[present] = self._key_ids(side, batch.take(present))
        return kid

    def _process_merge(self, parts: list[list[EventBatch]], bound: int) -> None:
        """The merge join's chunk: each side's events as they came (key-sorted within a sync time), side 0 first."""
        cols = {k: [] for k in ("kind", "sync", "other", "key", "row", "ph")}
        intervals = [0, 0]
        n0 = 0
        for side in (0, 1):
            b = concat_batches(parts[side]) if parts[side] else None
            if b is None:
                continue
            if b.key is not None:
                raise PlanError("the merge join takes ungrouped inputs")
            field = self.keys[side].spec[0]
            codes, valid = merge_key_codes(b.columns[field], field)
            keep = valid if b.absent is None else valid & ~b.absent  # a null key never joins
            idx = None if keep.all() else np.flatnonzero(keep)
            sync, other = (b.sync, b.other) if idx is None else (b.sync[idx], b.other[idx])
            kind = np.full(len(sync), INTERVAL, np.int8)
            kind[other == INFINITY] = START
            kind[other < sync] = END
            if self.start_edge_only[side] or not (kind != INTERVAL).any():
                ph = np.zeros(len(sync), np.int64)
            else:
                ph = payload_hash(b.columns, len(b))
                ph = ph if idx is None else ph[idx]
            base = self.stores[side].append(b)
            rows = np.arange(base, base + len(b), dtype=np.int64)
            intervals[side] = int(np.count_nonzero(kind == INTERVAL))
            for name, value in (
                ("kind", kind),
                ("sync", sync),
                ("other", other),
                ("key", codes if idx is None else codes[idx]),
                ("row", rows if idx is None else rows[idx]),
                ("ph", ph),
            ):
                cols[name].append(value)
            if side == 0:
                n0 = len(sync)
        ev = {
            k: (np.concatenate(v) if v else np.empty(0, np.int8 if k == "kind" else np.int64)) for k, v in cols.items()
        }
        ev["n0"] = n0
        core = self.cores[0]
        core.ensure((self.stores[0].rows, self.stores[1].rows), 0, tuple(intervals))
        o_sync, o_other, o_a, o_b, err = core.run(ev, bound)
        if err == _ERR_ORDER:
            raise PlanError(
                "a merge join input is not sorted by its join key within a sync time (declare sorted_by only for "
                "sorted data, or let the join hash)"
            )
        if err == _ERR_FIFO:
            raise PlanError("a join input declared constant duration delivered intervals whose ends go back in time")
        if len(o_sync):
            order = np.argsort(o_sync, kind="stable")  # interval ends due inside the chunk come between steps
            out = self._assemble(core, o_sync[order], o_other[order], o_a[order], o_b[order])
            self.emit(out)
        self._maybe_compact()

    # -- output --------------------------------------------------------------------------
    def _side_columns(self, side: int, rows: np.ndarray) -> tuple[dict, pa.Array | None, np.ndarray | None]:
        taken = self.stores[side].take(rows, self.result_fields[side] if self.result_fields else None)
        key = taken.pop(_KEY_COL, None)
        hsh = taken.pop(_HASH_COL, None)
        return taken, key, (None if hsh is None else np.asarray(hsh.to_numpy(zero_copy_only=False), np.int64))

    def _null_columns(self, side: int, n: int) -> dict[str, pa.Array]:
        schema = self.stores[side].schema or self.schemas[side]
        if schema is None:
            return {}
        return {f.name: pa.nulls(n, f.type) for f in schema if f.name not in (_KEY_COL, _HASH_COL)}

    def _assemble(self, core: _Core, o_sync, o_other, o_a, o_b) -> EventBatch:
        n = len(o_sync)
        if self.mode in ("exists", "not_exists", "clip"):
            cols, key, hsh = self._side_columns(0, o_a)
            return EventBatch(o_sync, o_other, cols, key=key, hash=hsh)
        if isinstance(core, _JoinCore | _MergeCore | _WindowCore):
            lcols, key, hsh = self._side_columns(0, o_a)
            rcols, _, _ = self._side_columns(1, o_b)
        elif not core.mirrored:
            lcols, key, hsh = self._side_columns(0, o_a)
            rcols = self._null_columns(1, n)
        else:
            rcols, key, hsh = self._side_columns(1, o_a)
            lcols = self._null_columns(0, n)
            return EventBatch(o_sync, o_other, self._result(lcols, rcols, n, missing=0), key=key, hash=hsh)
        missing = 1 if not isinstance(core, _JoinCore | _MergeCore | _WindowCore) else None
        return EventBatch(o_sync, o_other, self._result(lcols, rcols, n, missing), key=key, hash=hsh)

    def _result(self, lcols: dict, rcols: dict, n: int, missing: int | None = None) -> dict[str, pa.Array]:
        if self.result is None:
            names = output_names(list(lcols), list(rcols))
            return dict(zip(names, list(lcols.values()) + list(rcols.values()), strict=True))
        cols = self._columnar_result(lcols, rcols, n)
        if cols is not None:
            return cols
        zeros = np.zeros(n, np.int64)
        lrows = [_NullRow()] * n if missing == 0 else rows_of(EventBatch(zeros, zeros, lcols))
        rrows = [_NullRow()] * n if missing == 1 else rows_of(EventBatch(zeros, zeros, rcols))
        fn = self.result
        cols = records_to_columns([fn(a, b) for a, b in zip(lrows, rrows, strict=True)], self.result_types or None)
        for name, col in cols.items():  # later batches keep the types the first informative one had
            if not pa.types.is_null(col.type):
                self.result_types.setdefault(name, col.type)
        return cols

    def _columnar_result(self, lcols: dict, rcols: dict, n: int) -> dict[str, pa.Array] | None:
        """The result lambda over whole columns; None when this batch needs it row by row (nulls, say)."""
        node = self.result_node
        if node is None:
            return None
        inputs = {_LEFT + k: v for k, v in lcols.items()} | {_RIGHT + k: v for k, v in rcols.items()}
        if not node.columns() <= set(inputs):
            return None  # a missing side whose fields are not known yet
        try:
            ev = Evaluator(inputs, n)
            out = {}
            for name, part in record_fields(node):
                col = inputs[part.name] if isinstance(part, Col) else to_arrow_column(ev.eval(part), n)
                want = self.result_types.get(name)
                if want is not None and col.type != want:
                    col = col.cast(want)
                out[name] = col
        except Fallback:
            return None
        except Unsupported as exc:
            self.result_node, self.result_reason = None, str(exc)
            return None
        for name, col in out.items():
            if not pa.types.is_null(col.type):
                self.result_types.setdefault(name, col.type)
        return out

    # -- memory ----------------------------------------------------------------------------
    def _maybe_compact(self) -> None:
        for side in (0, 1):
            store = self.stores[side]
            n = store.rows
            if n < 4096:
                continue
            alive = sum(int(core.alive[core.local(side)]) for core in self.cores)
            if n <= 2 * alive + 4096:
                continue
            if self.build_once and side == 0:
                continue  # the built left is referenced by its index for the whole run
            live = np.zeros(n, bool)
            for core in self.cores:
                live |= core.live(core.local(side), n)
            keep = np.flatnonzero(live)
            mapping = np.full(n, -1, np.int64)
            mapping[keep] = np.arange(len(keep))
            for core in self.cores:
                core.remap(core.local(side), keep, mapping)
            store.compact(keep)

    # -- state -----------------------------------------------------------------------------
    def snapshot(self) -> dict:
        return {
            "pending": [[b.to_record_batch(with_key=True) for b in side] for side in self.pending],
            "seen": list(self.seen),
            "punct": list(self.punct),
            "completed": list(self.completed),
            "last_punct": self.last_punct,
            "grouped": self.grouped,
            "keys": None if self.index is None else self.index.snapshot(),
            "key_names": None if self.index is None else list(self.index.names),
            "stores": [s.snapshot() for s in self.stores],
            "cores": [c.snapshot() for c in self.cores],
            "built": None if self.built is None else {**self.built, **{"r_" + k: v for k, v in self.replay.items()}},
            "replay_pos": self.replay_pos,
            "reorder": self.reorder.snapshot(),
        }

    def restore(self, state: dict) -> None:
        self.pending = [[EventBatch.from_record_batch(rb) for rb in side] for side in state["pending"]]
        self.seen = list(state["seen"])
        self.punct = list(state["punct"])
        self.completed = list(state["completed"])
        self.last_punct = state["last_punct"]
        self.grouped = state["grouped"]
        if state["keys"] is None:
            self.index = None
        else:
            self.index = KeyIndex(tuple(state["key_names"]))
            self.index.restore(state["keys"])
        for store, s in zip(self.stores, state["stores"], strict=True):
            store.restore(s)
        for core, s in zip(self.cores, state["cores"], strict=True):
            core.restore(s)
        built = state["built"]
        if built is not None:
            self.built = {k: np.array(v) for k, v in built.items() if not k.startswith("r_")}
            self.replay = {k[2:]: np.array(v) for k, v in built.items() if k.startswith("r_")}
        self.replay_pos = state["replay_pos"]
        self.reorder.restore(state["reorder"])


def _window_duration(mode: str, build_once: bool, left_props, right_props) -> int | None:
    """The left's constant duration when the window join applies: an inner join of left intervals of one
    length with right points."""
    if mode != "inner" or build_once or left_props is None or right_props is None:
        return None
    d = left_props.constant_duration
    if isinstance(d, int | np.integer) and d > 0 and right_props.constant_duration == 1:
        return int(d)
    return None


def _mergeable_type(t: pa.DataType) -> bool:
    return pa.types.is_integer(t) or pa.types.is_temporal(t) or pa.types.is_boolean(t)


def merge_key_codes(col, field: str) -> tuple[np.ndarray, np.ndarray]:
    """Order-preserving int64 codes of a merge-join key column, and which rows have a key (not null)."""
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks()
    if not _mergeable_type(col.type):
        raise PlanError(f"the merge join compares integer, temporal or boolean keys; {field!r} is {col.type}")
    if pa.types.is_boolean(col.type):
        col = col.cast(pa.int8())
    valid = np.ones(len(col), bool) if col.null_count == 0 else np.asarray(col.is_valid().to_numpy(False))
    codes = col.cast(pa.int64()).fill_null(0)
    return np.asarray(codes.to_numpy(zero_copy_only=False), np.int64), valid


def _choose_merge(mode, build_once, variant, keys, schemas, props) -> bool:
    """Whether the join merges: forced by ``variant``, or chosen when both inputs are sorted by their keys."""
    if variant not in (None, "hash", "merge"):
        raise PlanError(f"join variant is 'hash' or 'merge', got {variant!r}")
    if variant == "hash":
        return False
    specs = [key_spec(k) for k in keys]
    why = None
    if mode != "inner" or build_once:
        why = "the merge join is an inner join (not outer, semi/anti, clip or build-once)"
    elif any(kind != "fields" or len(fields) != 1 for kind, fields in specs):
        why = "the merge join takes one key field per side"
    elif any(p is not None and p.grouping for p in props):
        why = "the merge join takes ungrouped inputs"
    elif any(
        sc is not None and not _mergeable_type(sc.field(f[1][0]).type) for sc, f in zip(schemas, specs, strict=True)
    ):
        why = "the merge join compares integer, temporal or boolean keys"
    if variant == "merge":
        if why:
            raise PlanError(f"cannot force the merge join: {why}")
        return True
    if why or any(sc is None for sc in schemas):
        return False
    return all(p is not None and p.sorted_by[:1] == f[1] for p, f in zip(props, specs, strict=True))


def _probe_value(t: pa.DataType):
    if pa.types.is_integer(t):
        return 1
    if pa.types.is_floating(t):
        return 1.0
    if pa.types.is_boolean(t):
        return False
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "a"
    return None


def result_types(result, left: pa.Schema | None, right: pa.Schema | None) -> dict[str, pa.DataType] | None:
    """Output field types of a ``result`` lambda, found by calling it once on made-up rows.

    None when the schemas are unknown, the lambda fails on the probe, or a field's type cannot
    be told (a None value): the operator then learns the types from the data.
    """
    if result is None or left is None or right is None:
        return None
    lrow = row_class(tuple(left.names))._make([_probe_value(f.type) for f in left])
    rrow = row_class(tuple(right.names))._make([_probe_value(f.type) for f in right])
    try:
        value = result(lrow, rrow)
        cols = records_to_columns([value])
    except Exception:
        return None
    if any(pa.types.is_null(c.type) for c in cols.values()):
        return None
    return {k: c.type for k, c in cols.items()}


def _rank_within(group: np.ndarray) -> np.ndarray:
    """0, 1, 2, ... for the successive occurrences of each value of ``group``."""
    order = np.argsort(group, kind="stable")
    sorted_g = group[order]
    first = np.r_[0, np.flatnonzero(sorted_g[1:] != sorted_g[:-1]) + 1] if len(group) else np.empty(0, np.int64)
    starts = np.repeat(first, np.diff(np.r_[first, len(group)]))
    rank = np.empty(len(group), np.int64)
    rank[order] = np.arange(len(group)) - starts
    return rank


def _merge_sorted(batches: list[EventBatch]) -> EventBatch:
    cols = _unify([b.columns for b in batches])
    names = list(cols[0])
    batches = [b.replace(columns={k: c[k] for k in names}) for b, c in zip(batches, cols, strict=True)]
    keyed = [b.key is not None for b in batches]
    if any(keyed) and not all(keyed):
        raise PlanError("internal: join outputs disagree on grouping")
    merged = concat_batches(batches)
    return merged.take(np.argsort(merged.sync, kind="stable"))


def null_row(names) -> object:
    """A row of Nones with the given field names (the missing side in a reference outer join)."""
    return row_class(tuple(names))._make([None] * len(names))
