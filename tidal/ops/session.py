"""Stateful lifetime operators: session windows, stitch, and per-snapshot distinct.

Semantics, on the interval view ``[s, e)`` of each event; every operator works per group
when the stream is grouped (the batch key), and groups never interact:

* ``session_window(timeout, max_duration=None, lifetime="session")``: events are cut into
  sessions by their start times only (an input's end, and its end edge, are ignored: the
  session decides the lifetime, as ``alter_duration`` does). A session opens at its first
  event ``S``; an event starting at ``t`` joins the open session when ``t < last + timeout``
  (``last`` = the latest start in the session) and ``t < cap``, otherwise the session is over
  and ``t`` opens a new one. The session ends at ``E = min(last + timeout, cap)`` (exclusive).
  ``cap`` is ``INFINITY`` without ``max_duration``; with it, sessions never cross a multiple
  of ``max_duration``: ``cap`` is the first multiple strictly after ``S``. Every event of
  the session gets ``[S, E)`` (``lifetime="session"``: the whole session, so an aggregate
  over the session gives one row per session), or ``[s, E)`` (``lifetime="event"``:
  Trill's SessionTimeoutWindow, where an event lives from its own start to the session's end).
  Trill's aligned windows differ in one detail: a session Trill opens off the grid may run
  to the *second* grid point after its start (and later cuts depend on history); here the
  rule is the plain "never cross a grid point", which depends on nothing but the session.
  ``E`` is only known once the session is over (a later event of the group, or progress
  past ``E``), so events are held until then, and also until every session that started
  earlier has been released, because output must stay in sync-time order. Output
  punctuation is therefore the earlier of the input's progress and the start of the oldest
  open session. A session that never closes (events keep coming within ``timeout``) holds
  every event it receives: a :class:`~tidal.errors.TidalWarning` reports the held events
  once there are a million (and at each fourfold growth); ``max_duration`` bounds sessions.
* ``stitch()``: per payload (and key), the multiplicity over time is unchanged (snapshots
  are identical) but lifetimes are coalesced: the k-th copy of a payload lives on the
  maximal intervals where the multiplicity is at least k, so an end and a start of equal
  payloads at the same instant are joined into one lifetime, and overlapping copies are
  re-cut into nested layers. A change at time ``t`` is final once no more input at ``t``
  can come (a later event or a punctuation after ``t``); output is start edges when a layer
  opens and end edges when it closes (Trill's Stitch also emits edges).
* ``distinct()``: at every instant, each distinct payload of the snapshot once (Trill's
  Distinct). A payload's count goes up at each start and down at each end; a start edge is
  emitted when the count leaves 0 and an end edge when it returns to 0.

Input events may be intervals, start edges or end edges; absent (filtered) events are
ignored. An end edge without a matching earlier start is an input error.
"""

from __future__ import annotations

import warnings

import numba
import numpy as np

from ..core.batch import EventBatch, concat_batches, event_kinds
from ..core.errors import InputError, PlanError, TidalWarning
from ..core.time import INFINITY, MIN_TIME, check_span
from ..expr.compile import rows_of
from .base import Operator, check_time_range
from .keys import KeyIndex

_UNKNOWN = MIN_TIME  # a session end not known yet


def _group_ids(keys: KeyIndex | None, batch: EventBatch) -> tuple[KeyIndex | None, np.ndarray]:
    """Dense group ids of a batch's key (all 0 for an ungrouped stream)."""
    if batch.key is None:
        return keys, np.zeros(len(batch), np.int64)
    if keys is None:
        keys = KeyIndex(tuple(batch.key.type[i].name for i in range(batch.key.type.num_fields)))
    return keys, keys.ids(batch.key)


def _grown(arr: np.ndarray, size: int, fill) -> np.ndarray:
    if len(arr) >= size:
        return arr
    out = np.full(max(size, 2 * len(arr)), fill, dtype=arr.dtype)
    out[: len(arr)] = arr
    return out


# -- session windows -------------------------------------------------------------------------------
@numba.njit(cache=True, nogil=True)
def _assign_sessions(
    times, gids, g_open, g_start, g_last, g_cap, g_sid, timeout, max_duration, next_sid, closed_sid, closed_end
):
    """Give each event (in sync order) its group's session; record sessions that a new one ends."""
    n = len(times)
    sid = np.empty(n, np.int64)
    start = np.empty(n, np.int64)
    n_closed = 0
    for i in range(n):
        g = gids[i]
        t = times[i]
        if g_open[g]:
            end = min(g_last[g] + timeout, g_cap[g])
            if t >= end:
                closed_sid[n_closed] = g_sid[g]
                closed_end[n_closed] = end
                n_closed += 1
                g_open[g] = False
        if not g_open[g]:
            g_open[g] = True
            g_start[g] = t
            if max_duration > 0:
                g_cap[g] = t - (t % max_duration) + max_duration
            else:
                g_cap[g] = np.iinfo(np.int64).max
            g_sid[g] = next_sid
            next_sid += 1
        g_last[g] = t
        sid[i] = g_sid[g]
        start[i] = g_start[g]
    return sid, start, next_sid, n_closed


@numba.njit(cache=True, nogil=True)
def _counting_order(keys, span):
    """Stable order of ``keys`` (ints in ``[0, span)``) in O(n + span)."""
    starts = np.zeros(span + 1, np.int64)
    for k in keys:
        starts[k + 1] += 1
    for k in range(span):
        starts[k + 1] += starts[k]
    order = np.empty(len(keys), np.int64)
    for i in range(len(keys)):
        k = keys[i]
        order[starts[k]] = i
        starts[k] += 1
    return order


SESSION_WARN_EVENTS = 1_000_000  # held events past which an open session is reported (TidalWarning)


class SessionWindowOp(Operator):
    """Session windows per group; see the module docstring for the semantics."""

    name = "SessionWindow"

    def __init__(self, timeout: int, max_duration: int | None = None, lifetime: str = "session"):
        super().__init__()
        if timeout <= 0:
            raise PlanError(f"session_window timeout must be positive, got {timeout}")
        if max_duration is not None and max_duration <= 0:
            raise PlanError(f"session_window max_duration must be positive, got {max_duration}")
        check_span(timeout, "session_window: the timeout")
        check_span(max_duration, "session_window: max_duration")
        if lifetime not in ("session", "event"):
            raise PlanError(f"session_window lifetime is 'session' or 'event', got {lifetime!r}")
        self.timeout = int(timeout)
        self.max_duration = 0 if max_duration is None else int(max_duration)
        self.lifetime = lifetime
        self.keys: KeyIndex | None = None
        # per group: is a session open, its start, its latest event start, its cap, its id
        self.g_open = np.zeros(0, np.bool_)
        self.g_start = np.zeros(0, np.int64)
        self.g_last = np.zeros(0, np.int64)
        self.g_cap = np.zeros(0, np.int64)
        self.g_sid = np.zeros(0, np.int64)
        # session ends by id (minus sess_base); _UNKNOWN while the session is open
        self.next_sid = 0
        self.sess_base = 0
        self.sess_end = np.zeros(0, np.int64)
        # events waiting for their session to end (and for earlier sessions to be released)
        self.held: EventBatch | None = None
        self.h_sync = np.zeros(0, np.int64)  # output sync time of each held event
        self.h_sid = np.zeros(0, np.int64)
        self.now = MIN_TIME
        self.punctuated = MIN_TIME
        self.warn_at = SESSION_WARN_EVENTS

    @property
    def variant(self) -> str:
        cap = f", max duration {self.max_duration} (aligned)" if self.max_duration else ""
        return f"timeout {self.timeout}{cap}, lifetime per {self.lifetime}"

    def _ensure_groups(self, n: int) -> None:
        if len(self.g_open) < n:
            self.g_open = _grown(self.g_open, n, False)
            self.g_start = _grown(self.g_start, n, 0)
            self.g_last = _grown(self.g_last, n, 0)
            self.g_cap = _grown(self.g_cap, n, 0)
            self.g_sid = _grown(self.g_sid, n, -1)

    def on_batch(self, batch: EventBatch) -> None:
        batch = batch.compact()
        if len(batch) == 0:
            return
        self.now = max(self.now, int(batch.sync.max()))
        _, _, end = event_kinds(batch.sync, batch.other)
        starts = batch.take(np.flatnonzero(~end)) if end.any() else batch
        if len(starts):
            self.keys, gids = _group_ids(self.keys, starts)
            self._ensure_groups(1 if self.keys is None else len(self.keys))
            self.sess_end = _grown(self.sess_end, self.next_sid + len(starts) - self.sess_base, _UNKNOWN)
            closed_sid = np.empty(len(starts), np.int64)
            closed_end = np.empty(len(starts), np.int64)
            sid, start, self.next_sid, n_closed = _assign_sessions(
                starts.sync,
                gids,
                self.g_open,
                self.g_start,
                self.g_last,
                self.g_cap,
                self.g_sid,
                self.timeout,
                self.max_duration,
                self.next_sid,
                closed_sid,
                closed_end,
            )
            self.sess_end[closed_sid[:n_closed] - self.sess_base] = closed_end[:n_closed]
            out_sync = start if self.lifetime == "session" else starts.sync.copy()
            if self.held is None:
                self.held, self.h_sync, self.h_sid = starts, out_sync, sid
            else:
                self.held = concat_batches([self.held, starts])
                self.h_sync = np.concatenate([self.h_sync, out_sync])
                self.h_sid = np.concatenate([self.h_sid, sid])
        self._advance(self.now)
        if self.held is not None and len(self.held) >= self.warn_at:
            self._warn_held()

    def _warn_held(self) -> None:
        """Events wait for their session to end: a session that never closes keeps them all. Say so, with
        its size (again each time the held events grow fourfold)."""
        open_g = np.flatnonzero(self.g_open)
        since = int(self.g_start[open_g].min()) if len(open_g) else int(self.h_sync.min())
        warnings.warn(
            f"session_window(timeout {self.timeout}): {len(self.held):,} events are held waiting for their "
            f"session to end, the oldest open session since time {since}; a session that never closes keeps every "
            "event (memory and time grow): give max_duration to bound sessions",
            TidalWarning,
            stacklevel=2,
        )
        self.warn_at = len(self.held) * 4

    def _advance(self, t: int) -> int:
        """Close the sessions over by time ``t``, release what order allows; returns the release bound."""
        open_g = np.flatnonzero(self.g_open)
        if len(open_g):
            ends = np.minimum(self.g_last[open_g] + self.timeout, self.g_cap[open_g])
            over = ends <= t
            if over.any():
                closing = open_g[over]
                self.sess_end[self.g_sid[closing] - self.sess_base] = ends[over]
                self.g_open[closing] = False
                open_g = open_g[~over]
        bound = t if len(open_g) == 0 else min(t, int(self.g_start[open_g].min()))
        self._release(bound)
        return bound

    def _release(self, bound: int) -> None:
        if self.held is None:
            return
        h_end = self.sess_end[self.h_sid - self.sess_base]
        ready = (h_end != _UNKNOWN) & (self.h_sync <= bound)
        if not ready.any():
            return
        idx = np.flatnonzero(ready)
        if self.lifetime == "session":
            # held events are in arrival order; session ids follow session starts, so ordering
            # by id (a counting sort) orders by output sync time
            sids = self.h_sid[idx] - self.h_sid[idx].min()
            idx = idx[_counting_order(sids, int(sids.max()) + 1)]
        # lifetime "event": output sync is the event's own start, already in order
        out = self.held.take(idx).replace(sync=self.h_sync[idx], other=h_end[idx])
        if ready.all():
            self.held, self.h_sync, self.h_sid = None, np.zeros(0, np.int64), np.zeros(0, np.int64)
        else:
            keep = np.flatnonzero(~ready)
            self.held = self.held.take(keep)
            self.h_sync, self.h_sid = self.h_sync[keep], self.h_sid[keep]
        # forget the ends of sessions no held event refers to any more
        lowest = int(self.h_sid.min()) if len(self.h_sid) else self.next_sid
        if lowest - self.sess_base > len(self.sess_end) // 2:
            self.sess_end = self.sess_end[lowest - self.sess_base :].copy()
            self.sess_base = lowest
        check_time_range(out, f"{self.name} ({self.variant})")
        self.emit(out)

    def on_punctuation(self, time: int) -> None:
        self.now = max(self.now, time)
        bound = self._advance(self.now)
        if bound > self.punctuated:
            self.punctuated = bound
            self.emit_punctuation(bound)

    def on_completed(self) -> None:
        self._advance(INFINITY)
        self.emit_completed()

    def snapshot(self) -> dict:
        n = 0 if self.keys is None else len(self.keys)
        n = max(n, 1 if len(self.g_open) else 0)
        return {
            "keys": None if self.keys is None else self.keys.snapshot(),
            "key_names": None if self.keys is None else list(self.keys.names),
            "g_open": self.g_open[:n].copy(),
            "g_start": self.g_start[:n].copy(),
            "g_last": self.g_last[:n].copy(),
            "g_cap": self.g_cap[:n].copy(),
            "g_sid": self.g_sid[:n].copy(),
            "next_sid": self.next_sid,
            "sess_base": self.sess_base,
            "sess_end": self.sess_end[: self.next_sid - self.sess_base].copy(),
            "held": None if self.held is None else self.held.to_record_batch(with_key=True),
            "h_sync": self.h_sync.copy(),
            "h_sid": self.h_sid.copy(),
            "now": self.now,
            "punctuated": self.punctuated,
        }

    def restore(self, state: dict) -> None:
        self.keys = None
        if state["keys"] is not None:
            self.keys = KeyIndex(tuple(state["key_names"]))
            self.keys.restore(state["keys"])
        for name in ("g_open", "g_start", "g_last", "g_cap", "g_sid", "sess_end", "h_sync", "h_sid"):
            setattr(self, name, np.array(state[name], copy=True))
        self.next_sid, self.sess_base = int(state["next_sid"]), int(state["sess_base"])
        self.held = None if state["held"] is None else EventBatch.from_record_batch(state["held"])
        self.now, self.punctuated = int(state["now"]), int(state["punctuated"])


# -- stitch and distinct: layers of each payload's multiplicity ----------------------------------------
@numba.njit(cache=True, nogil=True)
def _apply_changes(
    times,
    pids,
    deltas,
    mult,
    head,
    node_start,
    node_next,
    free_head,
    max_level,
    acc,
    touched,
    out_sync,
    out_other,
    out_pid,
):
    """Apply multiplicity changes (sorted by time) and emit the edges of the layers that move.

    Changes at one instant are netted per payload first (``acc``, ``touched`` are scratch), so
    an end and a start of equal payloads at the same time cancel: that is the stitching. Each
    payload keeps a stack (linked nodes) of the start times of its open layers, up to
    ``max_level`` of them; a rise opens layers (start edges), a fall closes the newest ones
    (end edges). Returns (outputs, free list head, net nodes taken, and the payload and time
    where a count went negative, payload -1 when none did).
    """
    n_out = 0
    taken = 0
    i = 0
    n = len(times)
    while i < n:
        t = times[i]
        n_touched = 0
        while i < n and times[i] == t:
            p = pids[i]
            if acc[p] == 0:
                touched[n_touched] = p
                n_touched += 1
            acc[p] += deltas[i]
            i += 1
        for j in range(n_touched):
            p = touched[j]
            d = acc[p]
            if d == 0:
                continue  # no net change (or listed twice: the first visit took the whole net)
            acc[p] = 0
            old = mult[p]
            new = old + d
            if new < 0:
                return n_out, free_head, taken, p, t
            mult[p] = new
            if new > old:
                for _ in range(min(old, max_level), min(new, max_level)):
                    node = free_head
                    free_head = node_next[node]
                    node_start[node] = t
                    node_next[node] = head[p]
                    head[p] = node
                    out_sync[n_out] = t
                    out_other[n_out] = np.iinfo(np.int64).max
                    out_pid[n_out] = p
                    n_out += 1
                    taken += 1
            else:
                for _ in range(min(new, max_level), min(old, max_level)):
                    node = head[p]
                    head[p] = node_next[node]
                    out_sync[n_out] = t
                    out_other[n_out] = node_start[node]
                    out_pid[n_out] = p
                    n_out += 1
                    node_next[node] = free_head
                    free_head = node
                    taken -= 1
    return n_out, free_head, taken, -1, t


class _LayersOp(Operator):
    """Tracks every payload's multiplicity and emits the changes of its first ``max_level`` layers."""

    max_level = 1

    def __init__(self):
        super().__init__()
        self.ids: KeyIndex | None = None  # dense id per (key, payload)
        self.reps: EventBatch | None = None  # one row per id, to rebuild the output payloads
        self.mult = np.zeros(0, np.int64)
        self.head = np.zeros(0, np.int64)
        self.node_start = np.zeros(0, np.int64)
        self.node_next = np.zeros(0, np.int64)
        self.free_head = -1
        self.n_free = 0
        # changes not final yet (time >= the sealed bound), sorted by time
        self.pend_t = np.zeros(0, np.int64)
        self.pend_id = np.zeros(0, np.int64)
        self.pend_d = np.zeros(0, np.int64)

    def _payload_ids(self, batch: EventBatch) -> np.ndarray:
        cols = ([] if batch.key is None else list(batch.key.flatten())) + list(batch.columns.values())
        if not cols:
            new = np.zeros(len(batch), np.int64)
            count = 1
        else:
            if self.ids is None:
                self.ids = KeyIndex(tuple(f"c{i}" for i in range(len(cols))))
            new = self.ids.ids(cols)
            count = len(self.ids)
        known = 0 if self.reps is None else len(self.reps)
        if count > known:
            fresh, rows = np.unique(new[new >= known], return_index=True)
            rows = np.flatnonzero(new >= known)[rows]
            reps = batch.take(rows)
            self.reps = reps if self.reps is None else concat_batches([self.reps, reps])
            self.mult = _grown(self.mult, count, 0)
            self.head = _grown(self.head, count, -1)
        return new

    def on_batch(self, batch: EventBatch) -> None:
        batch = batch.compact()
        if len(batch) == 0:
            return
        ids = self._payload_ids(batch)
        interval, _, end = event_kinds(batch.sync, batch.other)
        # +1 at each start, -1 at each end edge: one run already in time order; -1 at each
        # interval's end: a second run. Merging them with the pending changes (sorted) is a
        # stable sort of three sorted runs, which the run-detecting sort does in near-linear time.
        n_ends = int(interval.sum())
        t = np.concatenate([self.pend_t, batch.sync, batch.other[interval]])
        p = np.concatenate([self.pend_id, ids, ids[interval]])
        d = np.concatenate([self.pend_d, np.where(end, -1, 1), np.full(n_ends, -1, np.int64)])
        if len(t) > 1 and (t[1:] < t[:-1]).any():
            order = np.argsort(t, kind="stable")
            t, p, d = t[order], p[order], d[order]
        self.pend_t, self.pend_id, self.pend_d = t, p, d
        # more input at the batch's last time may still come: only earlier changes are final
        self._seal(int(batch.sync[-1]))

    def _seal(self, bound: int) -> None:
        cut = len(self.pend_t) if bound >= INFINITY else int(np.searchsorted(self.pend_t, bound, side="left"))
        if cut == 0:
            return
        t, p, d = self.pend_t[:cut], self.pend_id[:cut], self.pend_d[:cut]
        self.pend_t, self.pend_id, self.pend_d = self.pend_t[cut:], self.pend_id[cut:], self.pend_d[cut:]
        self._ensure_nodes(cut)
        out_sync = np.empty(cut, np.int64)
        out_other = np.empty(cut, np.int64)
        out_pid = np.empty(cut, np.int64)
        acc = np.zeros(len(self.mult), np.int64)
        touched = np.empty(cut, np.int64)
        n_out, self.free_head, taken, bad, when = _apply_changes(
            t,
            p,
            d,
            self.mult,
            self.head,
            self.node_start,
            self.node_next,
            self.free_head,
            self.max_level,
            acc,
            touched,
            out_sync,
            out_other,
            out_pid,
        )
        self.n_free -= taken
        if bad >= 0:
            row = rows_of(self.reps.slice(int(bad), int(bad) + 1))[0]
            raise InputError(
                f"{self.name}: at time {int(when)} payload {tuple(row)} ends more often than it started "
                "(an end edge without its start edge)"
            )
        if n_out:
            ids = out_pid[:n_out]
            out = self.reps.take(ids).replace(sync=out_sync[:n_out], other=out_other[:n_out])
            check_time_range(out, f"{self.name} ({self.variant})")
            self.emit(out)

    def _ensure_nodes(self, needed: int) -> None:
        """Make sure the free list holds at least ``needed`` nodes (grows the pool)."""
        if self.n_free >= needed:
            return
        old = len(self.node_start)
        size = max(2 * old, old + needed - self.n_free, 64)
        self.node_start = _grown(self.node_start, size, 0)
        self.node_next = _grown(self.node_next, size, -1)
        fresh = np.arange(old, len(self.node_next))
        self.node_next[fresh[:-1]] = fresh[1:]
        self.node_next[fresh[-1]] = self.free_head
        self.free_head = old
        self.n_free += len(fresh)

    def on_punctuation(self, time: int) -> None:
        self._seal(time)
        self.emit_punctuation(time)

    def on_completed(self) -> None:
        self._seal(INFINITY)
        self.emit_completed()

    def snapshot(self) -> dict:
        return {
            "ids": None if self.ids is None else self.ids.snapshot(),
            "id_names": None if self.ids is None else list(self.ids.names),
            "reps": None if self.reps is None else self.reps.to_record_batch(with_key=True),
            "mult": self.mult.copy(),
            "head": self.head.copy(),
            "node_start": self.node_start.copy(),
            "node_next": self.node_next.copy(),
            "free_head": self.free_head,
            "n_free": self.n_free,
            "pend_t": self.pend_t.copy(),
            "pend_id": self.pend_id.copy(),
            "pend_d": self.pend_d.copy(),
        }

    def restore(self, state: dict) -> None:
        self.ids = None
        if state["ids"] is not None:
            self.ids = KeyIndex(tuple(state["id_names"]))
            self.ids.restore(state["ids"])
        self.reps = None if state["reps"] is None else EventBatch.from_record_batch(state["reps"])
        for name in ("mult", "head", "node_start", "node_next", "pend_t", "pend_id", "pend_d"):
            setattr(self, name, np.array(state[name], copy=True))
        self.free_head, self.n_free = int(state["free_head"]), int(state["n_free"])


class StitchOp(_LayersOp):
    """Coalesces the lifetimes of equal payloads into the layers of their multiplicity."""

    name = "Stitch"
    variant = "layers per (key, payload), edges out"
    max_level = int(np.iinfo(np.int64).max)


class DistinctOp(_LayersOp):
    """Each distinct payload once per snapshot: the first layer of its multiplicity."""

    name = "Distinct"
    variant = "count per (key, payload), edges out"
    max_level = 1
