"""Reorder: sort an out-of-order stream with Impatience sort, route late events, split delay bands.

Temporal semantics: the input is a stream of events (points, intervals, start edges; no end
edges) in *arrival* order. The output is the same events in non-decreasing sync time, each
released as soon as a generated punctuation covers it (see :mod:`tidal.io.disorder` for when
punctuations are generated and which events are late). Snapshots are unchanged except for
late events, which the policy drops (``"drop"``), moves to the punctuation keeping their
duration (``"adjust"``), or reports as an error (``"throw"``). Lifetimes are never split.

With several reorder latencies the operator partitions the input by delay: band ``j`` holds
the events that are late for latency ``j-1`` but not for latency ``j``. Each band is sorted
by its own Impatience sorter and punctuated at its own ``high watermark - latency``, so every
event is sorted exactly once. Consumers choose what they receive by their ``band`` attribute
(``LATE`` for the late events, which come out sorted by their original time when the input
completes: a late event can be arbitrarily early, so no punctuation can be promised before).
Plain consumers receive band 0.

Cost: an event at or above the high watermark before it extends its band's in-order queue
(:mod:`tidal.ops.reorder_queue`) and is not sorted; only the others go through the Impatience sorter. A
release is one compiled pass that merges the sorter's output with the queue's prefix by (time, arrival),
maps each row to its place in the payload store and copies its fixed-width columns there and then
(:mod:`tidal.ops.reorder_gather`); text columns are gathered after it, once each. For a sink that keeps the
batches (``to_arrow()``: ``Consumer.collects``) a large release is written by non-temporal stores, and for one
that reads other times (``Consumer.reads_other``) points' other times are written in that pass too. Payloads stay in
the input batches until released (:mod:`tidal.ops.reorder_store`). With one latency, a punctuation after
every event and ``"drop"``, one compiled pass per batch finds the late events and splits the others. A
band whose consumers read no payload (a count) keeps and releases times only: no column is stored or
gathered.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..core.batch import DEFAULT_BATCH_SIZE, START_EDGES, EventBatch, concat_batches
from ..core.errors import InputError, PlanError, describe_row
from ..core.time import INFINITY, MIN_TIME, align_up
from .base import Operator, PassThrough
from .impatience import ImpatienceSorter
from .reorder_kernels import _ingest
from .reorder_queue import InOrderQueue, scratch
from .reorder_store import PayloadStore

LATE = -1  # the band attribute of a late-events consumer
_EMPTY = np.empty(0, dtype=np.int64)


POLICIES = ("drop", "adjust", "throw")


def _latency(value) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 0:
        raise PlanError(f"reorder latency must be a non-negative integer number of ticks, got {value!r}")
    return int(value)


@dataclass(frozen=True)
class DisorderPolicy:
    """How an out-of-order stream is sorted: latencies, punctuation generation, late events."""

    latencies: tuple[int, ...] = (0,)
    disorder: str = "drop"
    punctuate_every: int | None = None
    punctuate_every_events: int | None = None
    on_completed: str = "end_of_stream"

    def __post_init__(self):
        if self.disorder not in POLICIES:
            raise PlanError(f"disorder must be one of {POLICIES}, got {self.disorder!r}")
        lats = tuple(_latency(v) for v in self.latencies)
        if not lats:
            raise PlanError("give at least one reorder latency")
        if list(lats) != sorted(set(lats)):
            raise PlanError(f"reorder latencies must be strictly increasing, got {list(lats)}")
        object.__setattr__(self, "latencies", lats)
        if self.punctuate_every is not None and self.punctuate_every_events is not None:
            raise PlanError("give punctuate_every (ticks) or punctuate_every_events, not both")
        for name in ("punctuate_every", "punctuate_every_events"):
            v = getattr(self, name)
            if v is not None and (not isinstance(v, int | np.integer) or v <= 0):
                raise PlanError(f"{name} must be a positive integer, got {v!r}")
        if self.on_completed not in ("end_of_stream", "flush", "none"):
            raise PlanError(f"on_completed must be 'end_of_stream', 'flush' or 'none', got {self.on_completed!r}")

    def describe(self) -> str:
        lat = ", ".join(str(v) for v in self.latencies)
        if self.punctuate_every:
            when = f"punctuations on the {self.punctuate_every}-tick grid"
        elif self.punctuate_every_events:
            when = f"a punctuation every {self.punctuate_every_events} events"
        else:
            when = "punctuation follows every event"
        return f"reorder latency {lat}; {when} at high watermark - latency; late events: {self.disorder}"


def _minus(x, lat: int):
    """x - lat without wrapping below MIN_TIME (MIN_TIME stands for 'nothing seen yet')."""
    return np.maximum(x, MIN_TIME + lat) - lat


def _grid_floor(x: np.ndarray, period: int) -> np.ndarray:
    low = MIN_TIME + 2 * period
    floored = x - (x % period)
    return np.where(x < low, MIN_TIME, floored)


class PunctuationGenerator:
    """Per-event late bounds and the punctuations to emit, for each latency, batch after batch.

    State: the high watermark, the count of events seen, and the last punctuation of each
    latency. ``bounds(times)`` returns ``(bounds, releases)``: ``bounds[j][i]`` is the
    punctuation of latency ``j`` in effect when event ``i`` arrives (it is late below it) and
    ``releases[j]`` the increasing punctuations latency ``j`` generated during the batch.
    """

    def __init__(self, policy: DisorderPolicy):
        self.policy = policy
        self.high = MIN_TIME
        self.seen = 0
        self.last = [MIN_TIME] * len(policy.latencies)

    def bounds(self, times: np.ndarray) -> tuple[list[np.ndarray], list[list[int]]]:
        n = len(times)
        pol = self.policy
        hw_before = np.empty(n, dtype=np.int64)
        hw_before[0] = self.high
        if n > 1:
            np.maximum(np.maximum.accumulate(times[:-1]), self.high, out=hw_before[1:])
        high_after = max(self.high, int(times.max()))
        out_bounds, out_releases = [], []
        for j, lat in enumerate(pol.latencies):
            prev = self.last[j]
            if pol.punctuate_every_events:
                every = pol.punctuate_every_events
                # punctuations right after the events whose global index g has (g + 1) % every == 0
                k = np.arange(every - 1 - self.seen % every, n, every, dtype=np.int64)
                hw_at = np.where(k + 1 < n, hw_before[np.minimum(k + 1, n - 1)], high_after)
                vals = np.maximum(_minus(hw_at, lat), prev)
                step = np.full(n, MIN_TIME, dtype=np.int64)
                inside = k + 1 < n
                step[k[inside] + 1] = vals[inside]
                bound = np.maximum(np.maximum.accumulate(step), prev)
                end = int(vals[-1]) if len(vals) else prev
                releases = np.unique(vals[vals > prev]).tolist()
            else:
                raw = _minus(hw_before, lat)
                end_raw = _minus(np.array([high_after], dtype=np.int64), lat)
                if pol.punctuate_every:
                    raw = _grid_floor(raw, pol.punctuate_every)
                    end_raw = _grid_floor(end_raw, pol.punctuate_every)
                bound = np.maximum(raw, prev)
                end = max(prev, int(end_raw[0]))
                if pol.punctuate_every:
                    inner = np.unique(bound[bound > prev]).tolist()
                    releases = [*inner, end] if end > (inner[-1] if inner else prev) else inner
                else:
                    releases = [end] if end > prev else []
            self.last[j] = end
            out_bounds.append(bound)
            out_releases.append(releases)
        self.high = high_after
        self.seen += n
        self.high_before = hw_before  # kept for error messages
        return out_bounds, out_releases

    def snapshot(self) -> dict:
        return {"high": self.high, "seen": self.seen, "last": list(self.last)}

    def restore(self, state: dict) -> None:
        self.high, self.seen, self.last = int(state["high"]), int(state["seen"]), list(state["last"])


def late_bounds_model(times: list[int], policy: DisorderPolicy, latency_index: int = 0) -> list[int]:
    """A plain, event-at-a-time statement of the punctuation rule (for tests and docs)."""
    lat = policy.latencies[latency_index]
    high, last, out = MIN_TIME, MIN_TIME, []
    for g, t in enumerate(times):
        out.append(last)
        high = max(high, t)
        cand = max(high - lat, MIN_TIME)
        if policy.punctuate_every_events:
            if (g + 1) % policy.punctuate_every_events == 0:
                last = max(last, cand)
        elif policy.punctuate_every:
            p = policy.punctuate_every
            if cand >= MIN_TIME + 2 * p:
                last = max(last, cand - cand % p)
        else:
            last = max(last, cand)
    return out


@dataclass
class DisorderStats:
    """What one run of a sort did (reset when a run starts)."""

    events: int = 0  # events that reached the sort
    late: int = 0  # late for the largest latency (dropped, adjusted or thrown)
    dropped: int = 0
    adjusted: int = 0
    per_band: list[int] = field(default_factory=list)  # events routed to each delay band
    punctuations: int = 0  # punctuations emitted on band 0
    peak_buffered: int = 0  # most events held by the sorters at once
    completed: bool = False


class BandTap(PassThrough):
    """Consumer marker: receives the sorted events of one delay band (or ``LATE``)."""

    name = "BandTap"

    def __init__(self, band: int):
        super().__init__()
        self.band = band

    @property
    def reads_payload(self) -> bool:  # as its consumers do (a band only counted keeps no columns)
        return self.payload_read()


class LateTap(Operator):
    """Receives late events (original times, arrival order) and emits them sorted at the end."""

    name = "LateEvents"
    variant = "released sorted by original time when the input completes"
    band = LATE

    def __init__(self):
        super().__init__()
        self.pending: list[EventBatch] = []

    def on_batch(self, batch: EventBatch) -> None:
        self.pending.append(batch)

    def on_punctuation(self, time: int) -> None:
        pass  # nothing can be promised about late events until the input ends

    def on_completed(self) -> None:
        if self.pending:
            whole = concat_batches(self.pending)
            self.pending = []
            whole = whole.take(np.argsort(whole.sync, kind="stable"))
            for start in range(0, len(whole), DEFAULT_BATCH_SIZE):
                self.emit(whole.slice(start, min(start + DEFAULT_BATCH_SIZE, len(whole))))
        self.emit_punctuation(INFINITY)
        self.emit_completed()

    def snapshot(self) -> dict:
        return {"pending": [b.to_record_batch() for b in self.pending]}

    def restore(self, state: dict) -> None:
        self.pending = [EventBatch.from_record_batch(rb) for rb in state["pending"]]


def _others(batch: EventBatch):
    """What the store keeps of the batch's other times: None for points, START_EDGES for start edges
    (neither is made), else the times."""
    return None if batch.points else START_EDGES if batch.starts else batch.other


class ReorderOp(Operator):
    """Impatience sort of an arrival-ordered stream into one sorted stream per delay band."""

    name = "ImpatienceSort"

    def __init__(
        self,
        policy: DisorderPolicy,
        stats: DisorderStats | None = None,
        hop: tuple[int, int] | None = None,
        row_word: str = "row",
    ):
        super().__init__()
        self.policy = policy
        self.stats = stats if stats is not None else DisorderStats()
        self.hop = hop  # (hop, offset) of a window grid: adjusted starts stay on it
        self.row_word = row_word  # "row" when the sort reads the ingress directly
        k = len(policy.latencies)
        self.sorters = [ImpatienceSorter() for _ in range(k)]
        self.stores = [PayloadStore() for _ in range(k)]
        self.generator = PunctuationGenerator(policy)
        self.emitted = [None] * k  # last punctuation emitted per band
        self.queues = [InOrderQueue() for _ in range(k)]  # per band: (times, row ids) that arrived in order
        self._scratch = _EMPTY  # the simple path's per-batch arrays (the sorter copies what it keeps)
        self._reads: list[bool] | None = None  # per band: whether a consumer reads the payload columns
        self._simple = (
            k == 1
            and policy.punctuate_every is None
            and policy.punctuate_every_events is None
            and policy.disorder == "drop"
        )
        self._reset_stats()

    @property
    def variant(self) -> str:
        return self.policy.describe()

    def _reset_stats(self) -> None:
        s = self.stats
        s.events = s.late = s.dropped = s.adjusted = s.punctuations = s.peak_buffered = 0
        s.per_band = [0] * len(self.policy.latencies)
        s.completed = False

    # -- routing -------------------------------------------------------------------------------
    def _consumers(self, band: int):
        return [d for d in self.downstream if getattr(d, "band", 0) == band]

    def _kept_columns(self, band: int, batch: EventBatch) -> dict:
        """The columns the band's store keeps of ``batch``: none when no consumer of the band reads them
        (a count): the released events then carry their times only, and nothing is gathered."""
        if self._reads is None:
            bands = range(len(self.policy.latencies))
            self._reads = [any(getattr(d, "reads_payload", True) for d in self._consumers(j)) for j in bands]
            for j in bands:  # points' other times (sync + 1) written in the releasing pass for a sink that reads them
                consumers = self._consumers(j)
                self.stores[j].write_other = all(getattr(d, "reads_other", False) for d in consumers)
                self.stores[j].streaming = all(getattr(d, "collects", False) for d in consumers)
        return batch.columns if self._reads[band] else {}

    def _send(self, band: int, batch: EventBatch) -> None:
        if len(batch):
            for d in self._consumers(band):
                d.on_batch(batch)

    def _punctuate(self, band: int, time: int) -> None:
        if band == 0:
            self.stats.punctuations += 1
        for d in self._consumers(band):
            d.on_punctuation(time)

    # -- data ----------------------------------------------------------------------------------
    def on_batch(self, batch: EventBatch) -> None:
        batch = batch.compact()
        n = len(batch)
        if n == 0:
            return
        sync = batch.sync
        if not (batch.points or batch.starts) and (batch.other < sync).any():
            other = batch.other
            i = int(np.flatnonzero(other < sync)[0])
            raise PlanError(
                f"{self.row_word} {self.stats.events + i}: an end edge (sync {int(sync[i])}, other {int(other[i])}) "
                "cannot be sorted: out-of-order input takes points, intervals and start edges"
            )
        if self._simple:
            self._simple_batch(batch)
            return
        bounds, releases = self.generator.bounds(sync)
        k = len(bounds)
        # band = number of latencies the event is late for (k: late for all of them)
        if k == 1:  # one latency: the band is "late or not"
            band = None
            late = sync < bounds[0]
        else:
            band = (sync < bounds[0]).astype(np.int64)
            for j in range(1, k):
                band += sync < bounds[j]
            late = band == k
        kept = None  # band 0 of a single latency: the events not late (None: all of them)
        if late.any():
            self._late(batch, late, bounds[k - 1])
            if self.policy.disorder == "adjust":
                batch, sync, _ = self._adjusted(batch, late, bounds[k - 1])
                if band is not None:
                    band = np.where(late, k - 1, band)
            elif band is None:
                kept = ~late
        self.stats.events += n
        for j in range(k):
            if band is None:
                sel = kept
                cnt = n if kept is None else int(np.count_nonzero(kept))
            else:
                sel = band == j
                cnt = int(np.count_nonzero(sel))
            if cnt:
                self.stats.per_band[j] += cnt
                idx = None if cnt == n else np.flatnonzero(sel)
                self._band(j, batch, sync if idx is None else sync[idx], idx, releases[j])
            else:
                for p in releases[j]:
                    self._release(j, p)

    def _simple_batch(self, batch: EventBatch) -> None:
        """One latency, a punctuation after every event, late events dropped: one compiled pass finds the
        late events and splits the others into those in arrival order (queued) and the rest (sorted)."""
        sync = np.ascontiguousarray(batch.sync, dtype=np.int64)
        n = len(sync)
        gen, store, sorter = self.generator, self.stores[0], self.sorters[0]
        first = store.next_row
        prev = gen.last[0]
        lat = self.policy.latencies[0]
        queue = self.queues[0]
        at = queue.reserve(n)  # the events in arrival order are written into the queue directly
        self._scratch = scratch(self._scratch, 3 * n)
        oth_t, oth_r, late = self._scratch[:n], self._scratch[n : 2 * n], self._scratch[2 * n : 3 * n]
        no, nu, nl, high = _ingest(
            sync, gen.high, prev, lat, first, queue.times[at:], queue.rows[at:], oth_t, oth_r, late
        )
        queue.tail = at + no
        gen.high = high
        gen.seen += n
        end = max(prev, max(int(high), MIN_TIME + lat) - lat)  # _minus in Python numbers (no arrays per batch)
        gen.last[0] = end
        stats = self.stats
        stats.events += n
        if nl:
            late = late[:nl]
            stats.late += nl
            stats.dropped += nl
            if self._consumers(LATE):
                self._send(LATE, batch.take(late))
        stats.per_band[0] += n - nl
        if nu:
            sorter.skip_to(first)
            sorter.push(oth_t[:nu], oth_r[:nu])
        if n > nl:
            cols = self._kept_columns(0, batch)
            store.add(_others(batch), cols, None, sync, late[:nl] if nl else None)
            if store.held > stats.peak_buffered:
                stats.peak_buffered = store.held
        if end > prev:
            self._release(0, end)

    def _band(self, j: int, batch: EventBatch, times: np.ndarray, idx: np.ndarray | None, releases) -> None:
        """Sort the events of band ``j`` (``times``, at ``idx`` of the batch, or all of it) and make the
        band's ``releases``. An event at or above every time that arrived before it extends the band's
        in-order queue (already sorted: nothing to do); only the others go through the Impatience sorter.
        The store keeps the batch by reference: an event's row id is the store's ``first`` + its position."""
        high = self.generator.high_before
        ordered = times >= (high if idx is None else high[idx])
        store = self.stores[j]
        first = store.next_row
        if ordered.all():
            ids = first + (np.arange(len(times), dtype=np.int64) if idx is None else idx)
            self.queues[j].append(times, ids)
        else:
            at = np.flatnonzero(ordered)
            out = np.flatnonzero(~ordered)
            if idx is not None:
                at, out, pos_out = idx[at], idx[out], out
            else:
                pos_out = out
            if len(at):
                self.queues[j].append(times[ordered] if idx is not None else times[at], first + at)
            sorter = self.sorters[j]
            sorter.skip_to(first)
            sorter.push(times[pos_out], first + out)
        store.add(_others(batch), self._kept_columns(j, batch), idx, batch.sync)
        held = sum(s.held for s in self.stores)
        if held > self.stats.peak_buffered:
            self.stats.peak_buffered = held
        for p in releases:
            self._release(j, p)

    def _release_rows(self, band: int, upto: int | None) -> None:
        """Emit band ``band``'s events up to ``upto`` (None: all of them) in (time, arrival) order: the
        sorter's output and the in-order queue's prefix are merged and mapped to the store's rows in one
        compiled pass, then each payload column is gathered once (a run of consecutive rows in order, as
        input that arrived in order gives, is handed on as zero-copy slices)."""
        sorter, queue = self.sorters[band], self.queues[band]
        t1, r1 = sorter.flush_all() if upto is None else sorter.punctuate(upto)
        c = len(queue) if upto is None else queue.count_le(upto)
        if len(t1) or c:
            t2, r2 = queue.view(c)
            parts = self.stores[band].release(t1, r1, t2, r2)
            queue.pop(c)
            for times, other, cols in parts:
                self._emit_sorted(band, EventBatch(times, other, cols))

    def _late(self, batch: EventBatch, late: np.ndarray, bound: np.ndarray) -> None:
        idx = np.flatnonzero(late)
        if self.policy.disorder == "throw":
            i = int(idx[0])
            row = {k: v[i].as_py() for k, v in batch.columns.items()}
            lat = self.policy.latencies[-1]
            high = int(self.generator.high_before[i])
            raise InputError(
                f"{self.row_word} {self.stats.events + i}: time {int(batch.sync[i])} is late: it is earlier than the "
                f"punctuation {int(bound[i])} generated before it arrived (high watermark then {high}, "
                f"reorder latency {lat}): {{{describe_row(row)}}}"
            )
        self.stats.late += len(idx)
        if self.policy.disorder == "drop":
            self.stats.dropped += len(idx)
        else:
            self.stats.adjusted += len(idx)
        self._send(LATE, batch.take(idx))

    def _adjusted(self, batch: EventBatch, late: np.ndarray, bound: np.ndarray):
        new_start = bound[late]
        if self.hop is not None:
            new_start = align_up(new_start, self.hop[0], self.hop[1])
        sync = batch.sync.copy()
        other = batch.other.copy()
        old = sync[late]
        sync[late] = new_start
        o = other[late]
        other[late] = np.where(o == INFINITY, INFINITY, o + (new_start - old))
        return batch.replace(sync=sync, other=other), sync, other

    def _release(self, band: int, upto: int) -> None:
        if self.emitted[band] is not None and upto <= self.emitted[band]:
            return
        self._release_rows(band, upto)
        self.emitted[band] = upto
        self._punctuate(band, upto)

    def _emit_sorted(self, band: int, batch: EventBatch) -> None:
        n = len(batch)
        if n <= DEFAULT_BATCH_SIZE:
            self._send(band, batch)
            return
        for start in range(0, n, DEFAULT_BATCH_SIZE):
            self._send(band, batch.slice(start, min(start + DEFAULT_BATCH_SIZE, n)))

    # -- control ------------------------------------------------------------------------------
    def on_punctuation(self, time: int) -> None:
        pass  # arrival-ordered input carries no progress: the sort generates punctuations

    def on_flush(self) -> None:
        for d in self.downstream:
            d.on_flush()

    def on_completed(self) -> None:
        for j in range(len(self.sorters)):
            self._release_rows(j, None)
            self.queues[j] = InOrderQueue()  # everything is out: the buffers go back now, not at a collection
            self.stores[j]._index = _EMPTY
            if self.policy.on_completed == "end_of_stream":
                self._punctuate(j, INFINITY)
            elif self.policy.on_completed == "flush":
                for d in self._consumers(j):
                    d.on_flush()
        self._scratch = _EMPTY
        self.stats.completed = True
        for d in self.downstream:
            d.on_completed()

    # -- state --------------------------------------------------------------------------------
    def snapshot(self) -> dict:
        return {
            "sorters": [s.snapshot() for s in self.sorters],
            "stores": [s.snapshot() for s in self.stores],
            "generator": self.generator.snapshot(),
            "emitted": list(self.emitted),
            "queues": [q.live() for q in self.queues],
        }

    def restore(self, state: dict) -> None:
        self.sorters = [ImpatienceSorter.restore(s) for s in state["sorters"]]
        for store, s in zip(self.stores, state["stores"], strict=True):
            store.restore(s)
        self.generator.restore(state["generator"])
        self.emitted = list(state["emitted"])
        self.queues = [InOrderQueue() for _ in self.sorters]
        for queue, (times, rows) in zip(self.queues, state.get("queues", []), strict=False):
            queue.append(np.asarray(times, dtype=np.int64), np.asarray(rows, dtype=np.int64))
