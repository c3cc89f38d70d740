"""Triggers: when each key's aggregate value is materialised (the OctoSQL thesis, seed 002 section 2.3).

The input is a grouped aggregate's output (start edges for new values, end edges retracting
old ones) in sync-time order. Its meaning is, per key, the value at every tick. The output is
the same kind of stream, but a key's value only changes when the key *fires*: at a firing at
tick ``f`` the previously materialised value (if any) ends at ``f`` (a retraction) and the
key's current value starts at ``f`` (an insert). So the output is the changelog the TRIGGER
clause asks for, and a trigger decides only how often the view is materialised, never the
final answer: end of input fires every key whose materialised value differs from its current
one, so the final snapshot equals the input's final snapshot.

A tick is *complete* once a later tick or a punctuation beyond it arrives; a key fires at most
once per tick, with its value as of the end of that tick. Firing rules (several = multitrigger:
a key fires when any rule says so, and a firing resets every rule's state for that key):

* ``COUNTING n``: when the key has accumulated ``n`` input rows since its last firing (the
  aggregate carries a hidden row count per key, ``count_field``). Rows at one tick count
  together, so a tick that brings the key past ``n`` fires it once.
* ``ON WATERMARK``: at tick ``E``, the key's event time (``event_time_field``, a key column:
  e.g. a window's end), once every tick ``<= E`` is complete, i.e. once the watermark passes
  ``E``. In-order input therefore emits each window exactly once, with no retraction; a value
  that still changes after ``E`` (late rows moved up by an ``adjust`` policy) fires again at
  the tick it changes. A key without an event time fires at end of input.
* ``AFTER DELAY d``: at tick ``t + d`` where ``t`` is the tick of the key's latest change: each
  change pushes the deadline back (a key fires once it has been quiet for ``d`` ticks of event
  time). Input without an event time has no clock, so such keys fire at end of input. ``d`` is at
  most ``MAX_SPAN`` (2**61 ticks, about 73,000 years of microseconds), so no deadline passes INFINITY.
* no rule: the key fires at end of input only.

A firing whose value equals the value already materialised emits nothing (it still resets the
rules). Firings caused by deadlines between ticks happen at the deadline's tick, so the output
timestamps (and hence the changelog) depend only on the data, never on batching or on how
often punctuations arrive. The bookkeeping is per changed key and per firing (Python dicts and
a heap); its input is an aggregate's output, which is per key and tick, not per input row.

:class:`FinalValuesOp` is a grouped aggregate and a trigger without rules in one operator, for
input of start edges only (rows in event time that never end). Such a trigger fires every key
once, at end of input, at the last tick its aggregate changed, which for start edges is the last
input tick (every row changes its group's count); its values are the aggregates over all rows.
So the operator feeds the aggregate every row at one tick (no per-tick changes to emit or to
discard) and stamps the trigger's firings with the last input tick: the same output as the two
operators apart, without a change per input tick in between. Punctuations pass through up to the last
input tick (the firings' time).

Without rules, as long as the input holds only start edges (new values, no retractions), the
batches are kept as they are and the final value of each key (its last row, keys in the order
they first appeared, as the per-key bookkeeping emits them) is picked in Arrow at end of input;
a retraction, a floating-point key or a checkpoint switches to the per-key bookkeeping first.
"""

from __future__ import annotations

import datetime as dt
import heapq
import math
import pickle
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from ..core.batch import EventBatch
from ..core.time import INFINITY, MIN_TIME, check_span
from .base import Operator

SNAPSHOT_BLOCK = 4096  # keys per pickled block of a snapshot; a block no key of which changed is reused


@dataclass(frozen=True)
class TriggerSpec:
    """The rules of one TRIGGER clause (all optional; none = fire at end of input)."""

    counting: int | None = None
    delay: int | None = None  # ticks of event time; None = no delay rule
    watermark: bool = False

    def __post_init__(self):
        # a deadline is a time plus the delay: beyond MAX_SPAN it could pass INFINITY (and wrap in int64)
        check_span(self.delay, "TRIGGER AFTER DELAY: the delay (microseconds)")

    def describe(self) -> str:
        parts = []
        if self.counting is not None:
            parts.append(f"counting {self.counting}")
        if self.delay is not None:
            parts.append(f"after delay {self.delay}")
        if self.watermark:
            parts.append("on watermark")
        return ", ".join(parts) or "at end of input"


class _Key:
    __slots__ = ("current", "rows", "emitted", "emitted_at", "rows_at_fire", "event_time", "deadline", "waiting", "pos")

    def __init__(self, pos: int = 0):
        self.pos = pos  # the key's place in insertion order (its snapshot block: pos // SNAPSHOT_BLOCK)
        self.current: tuple | None = None  # payload tuple of the value now (None: no value)
        self.rows = 0  # input rows accumulated (the hidden count), as of the last change
        self.emitted: tuple | None = None  # materialised payload
        self.emitted_at = 0
        self.rows_at_fire = 0
        self.event_time: int | None = None
        self.deadline: int | None = None
        self.waiting = False  # a watermark deadline is scheduled


class TriggerOp(Operator):
    """Materialises a grouped aggregate's values per key according to a :class:`TriggerSpec`."""

    name = "Trigger"

    def __init__(
        self,
        spec: TriggerSpec,
        schema: pa.Schema,
        key_fields: tuple[str, ...],
        event_time_field: str | None = None,
        count_field: str | None = None,
        has_clock: bool = True,
    ):
        super().__init__()
        self.spec = spec
        self.in_schema = schema
        self.key_fields = tuple(key_fields)
        self.event_time_field = event_time_field
        self.count_field = count_field
        self.has_clock = has_clock  # False: ticks are row ordinals, so AFTER DELAY cannot be measured
        self.out_names = [n for n in schema.names if n != count_field]
        self.out_schema = pa.schema([schema.field(n) for n in self.out_names])
        self._key_pos = [self.out_names.index(k) for k in self.key_fields]
        # float columns: every NaN as one object, so a NaN key is one key and a NaN value equals itself
        self._floats = [i for i, n in enumerate(self.out_names) if pa.types.is_floating(self.out_schema.field(n).type)]
        self._time_pos = self.out_names.index(event_time_field) if event_time_field else None
        self.keys: dict[tuple, _Key] = {}
        self._order: list[tuple] = []  # keys in insertion order
        self._blocks: list = []  # the pickled snapshot blocks of the last snapshot (None: to rebuild)
        self._stale: set[int] = set()  # blocks with a key touched since then
        self.tick: int | None = None  # the tick whose changes are buffered (not yet complete)
        self.changed: dict[tuple, None] = {}  # keys changed at ``tick`` (insertion ordered)
        # keys whose value differs from the materialised one: end of input fires them (at the latest), stamped
        # max(last_out, last_tick), so no punctuation beyond that may pass while one is left (see on_punctuation)
        self._unfired: set[tuple] = set()
        self.timers: list[tuple[int, int, tuple]] = []  # (tick, seq, key) heap of watermark/delay deadlines
        self._seq = 0
        self.last_out = MIN_TIME  # no output yet (times may be negative: before 1970 in SQL)
        self.last_tick = MIN_TIME
        self._out: list[tuple[int, int, tuple]] = []  # (sync, other, payload) awaiting emission
        # no rules: start-edge batches kept as they are until end of input (None: per-key bookkeeping)
        plain = all(_plain_key(schema.field(k).type) for k in self.key_fields)
        no_rules = spec.counting is None and spec.delay is None and not spec.watermark
        self._held: list[EventBatch] | None = [] if no_rules and plain else None
        rules = spec.describe()
        extra = f"; key event time {event_time_field}" if event_time_field else ""
        self.variant = f"per key: {rules}{extra}"

    # -- input ----------------------------------------------------------------------------------
    def on_batch(self, batch: EventBatch) -> None:
        batch = batch.compact()
        if len(batch) == 0:
            return
        if self._held is not None:
            if bool(np.all(batch.other == INFINITY)):
                self._held.append(batch)
                self.last_tick = int(batch.sync[-1])
                return
            self._per_key()
        self._changes(batch)

    def _per_key(self) -> None:
        """Leave the held mode: the held batches go through the per-key bookkeeping."""
        held, self._held = self._held or [], None
        for batch in held:
            self._changes(batch)

    def _changes(self, batch: EventBatch) -> None:
        n = len(batch)
        sync, other = batch.sync, batch.other
        is_start = other == INFINITY
        cols = [batch.columns[name].to_pylist() for name in self.out_names]
        counts = batch.columns[self.count_field].to_pylist() if self.count_field else None
        for i in self._floats:
            cols[i] = [math.nan if v != v else v for v in cols[i]]  # (v != v: NaN)
        rows = list(zip(*cols, strict=True))
        bounds = np.flatnonzero(np.diff(sync)) + 1
        starts = np.concatenate([[0], bounds])
        stops = np.concatenate([bounds, [n]])
        for lo, hi in zip(starts.tolist(), stops.tolist(), strict=True):
            t = int(sync[lo])
            if self.tick is not None and t != self.tick:
                self._close_tick()
            self._fire_timers(before=t)
            self.tick = self.last_tick = t
            # end edges first: a key's new value at this tick (a start edge) wins over its retraction
            for i in range(lo, hi):
                if not is_start[i]:
                    key = tuple(rows[i][p] for p in self._key_pos)
                    state = self._state(key)
                    if state.current == rows[i]:
                        state.current = None
                    self.changed[key] = None
                    self._mark(key, state)
            for i in range(lo, hi):
                if is_start[i]:
                    row = rows[i]
                    key = tuple(row[p] for p in self._key_pos)
                    state = self._state(key)
                    state.current = row
                    if counts is not None:
                        state.rows = int(counts[i])
                    self.changed[key] = None
                    self._mark(key, state)
        self._flush_out()

    def _mark(self, key: tuple, state: _Key) -> None:
        if state.current != state.emitted:
            self._unfired.add(key)
        else:
            self._unfired.discard(key)

    def on_punctuation(self, time: int) -> None:
        if self.tick is not None and self.tick < time:
            self._close_tick()
        self._fire_timers(before=time)
        self._flush_out()
        if self._unfired or self._held:
            # a value not materialised yet fires at end of input at the latest, at max(last_out, last_tick):
            # a punctuation beyond that would let a consumer (a join) finish that time before the firing
            # arrives, so it passes only up to there (a punctuation at t promises no event before t follows)
            time = min(time, max(self.last_out, self.last_tick))
        self.emit_punctuation(time)

    def on_completed(self) -> None:
        if self._held is not None:
            self._emit_held()
            self.emit_completed()
            return
        if self.tick is not None:
            self._close_tick()
        # end of input moves the watermark to infinity: every deadline comes due, then every key fires
        self._fire_timers(before=INFINITY)
        for key, state in self.keys.items():
            if state.current != state.emitted:
                self._stale.add(state.pos // SNAPSHOT_BLOCK)
                self._fire(key, state, max(self.last_out, self.last_tick))
        self._flush_out()
        self.emit_completed()

    # -- firing ---------------------------------------------------------------------------------
    def _state(self, key: tuple) -> _Key:
        state = self.keys.get(key)
        if state is None:
            state = self.keys[key] = _Key(len(self._order))
            self._order.append(key)
            if self._time_pos is not None:
                # the key's event time, in ticks (timestamps are microseconds, like the stream's time)
                value = key[self._key_pos.index(self._time_pos)] if self._time_pos in self._key_pos else None
                state.event_time = _ticks(value)
        self._stale.add(state.pos // SNAPSHOT_BLOCK)
        return state

    def _schedule(self, when: int, key: tuple) -> None:
        self._seq += 1
        heapq.heappush(self.timers, (when, self._seq, key))

    def _close_tick(self) -> None:
        """Every change at ``self.tick`` is in: decide which changed keys fire at this tick."""
        t = self.tick
        spec = self.spec
        fired: list[tuple] = []
        for key in self.changed:
            state = self.keys[key]
            fire = False
            if spec.counting is not None and state.rows - state.rows_at_fire >= spec.counting:
                fire = True
            if spec.watermark and state.event_time is not None:
                if state.event_time <= t:
                    fire = True
                elif not state.waiting:
                    state.waiting = True
                    self._schedule(state.event_time, key)
            if spec.delay is not None and self.has_clock:
                state.deadline = t + spec.delay
                if spec.delay == 0:
                    fire = True
                else:
                    self._schedule(state.deadline, key)
            if fire:
                fired.append(key)
        self.changed = {}
        self.tick = None
        for key in fired:
            self._fire(key, self.keys[key], t)
        # deadlines at exactly this tick (a key's window end equal to a data tick)
        self._fire_timers(before=t + 1)

    def _fire_timers(self, before: int) -> None:
        """Fire the deadlines earlier than ``before`` (every tick before it is complete)."""
        while self.timers and self.timers[0][0] < before:
            when, _, key = heapq.heappop(self.timers)
            state = self.keys[key]
            self._stale.add(state.pos // SNAPSHOT_BLOCK)
            if self.spec.watermark and state.event_time == when:
                state.waiting = False
            due = (self.spec.watermark and state.event_time == when) or state.deadline == when
            if due and state.current != state.emitted:
                self._fire(key, state, max(when, self.last_out))
            elif due:
                self._reset(state)

    def _reset(self, state: _Key) -> None:
        state.rows_at_fire = state.rows
        state.deadline = None

    def _fire(self, key: tuple, state: _Key, at: int) -> None:
        self._reset(state)
        self._unfired.discard(key)
        if state.current == state.emitted:
            return
        if state.emitted is not None:
            self._out.append((at, state.emitted_at, state.emitted))
        if state.current is not None:
            self._out.append((at, INFINITY, state.current))
        state.emitted, state.emitted_at = state.current, at
        self.last_out = max(self.last_out, at)

    def _flush_out(self) -> None:
        if not self._out:
            return
        out, self._out = self._out, []
        sync = np.fromiter((o[0] for o in out), np.int64, len(out))
        other = np.fromiter((o[1] for o in out), np.int64, len(out))
        cols = {f.name: pa.array([o[2][j] for o in out], type=f.type) for j, f in enumerate(self.out_schema)}
        self.emit(EventBatch(sync, other, cols))

    def _emit_held(self) -> None:
        """End of input without rules: each key's last row, keys in order of first appearance."""
        held, self._held = self._held, []
        if not held:
            return
        table = pa.table({f.name: pa.chunked_array([b.columns[f.name] for b in held], f.type) for f in self.out_schema})
        n = table.num_rows
        if self.key_fields:
            order = pa.array(np.arange(n, dtype=np.int64))
            groups = (
                table.select(list(self.key_fields))
                .append_column("__row", order)
                .group_by(list(self.key_fields), use_threads=False)
                .aggregate([("__row", "min"), ("__row", "max")])
            )
            first = groups.column("__row_min").to_numpy()
            rows = groups.column("__row_max").to_numpy()[np.argsort(first, kind="stable")]
        else:
            rows = np.array([n - 1], np.int64)
        picked = table.take(pa.array(rows))
        at = max(self.last_out, self.last_tick)
        m = picked.num_rows
        cols = {name: picked.column(name).combine_chunks() for name in self.out_names}
        self.emit(EventBatch(np.full(m, at, np.int64), np.full(m, INFINITY, np.int64), cols))
        self.last_out = max(self.last_out, at)

    # -- state ----------------------------------------------------------------------------------
    def snapshot(self) -> dict:
        """The keys go in blocks of :data:`SNAPSHOT_BLOCK` (insertion order), each pickled into a numpy
        byte array: only blocks with a key touched since the last snapshot are pickled again, and the
        checkpoint store writes only the blocks that changed (the cost of a checkpoint follows the
        keys that changed, not all keys ever seen)."""
        if self._held is not None:
            self._per_key()
        count = -(-len(self._order) // SNAPSHOT_BLOCK)
        self._blocks += [None] * (count - len(self._blocks))
        for b in range(count):
            if self._blocks[b] is None or b in self._stale:
                keys = self._order[b * SNAPSHOT_BLOCK : (b + 1) * SNAPSHOT_BLOCK]
                rows = [
                    (k, s.current, s.rows, s.emitted, s.emitted_at, s.rows_at_fire, s.event_time, s.deadline, s.waiting)
                    for k, s in ((k, self.keys[k]) for k in keys)
                ]
                self._blocks[b] = np.frombuffer(pickle.dumps(rows, protocol=5), np.uint8)
        self._stale = set()
        return {
            "key_blocks": list(self._blocks),
            "tick": self.tick,
            "changed": list(self.changed),
            "timers": list(self.timers),
            "seq": self._seq,
            "last_out": self.last_out,
            "last_tick": self.last_tick,
        }

    def restore(self, state: dict) -> None:
        self._held = None
        self.keys, self._order, self._stale = {}, [], set()
        blocks = state.get("key_blocks")
        rows = [r for block in blocks for r in pickle.loads(np.asarray(block).tobytes())] if blocks is not None else []
        for k, cur, n, em, em_at, at_fire, et, dl, waiting in state.get("keys", rows):
            key = tuple(k)
            s = self.keys[key] = _Key(len(self._order))
            self._order.append(key)
            s.current, s.rows, s.emitted, s.emitted_at = cur, n, em, em_at
            s.rows_at_fire, s.event_time, s.deadline, s.waiting = at_fire, et, dl, waiting
        self._blocks = list(blocks) if blocks is not None else []
        self._unfired = {k for k, s in self.keys.items() if s.current != s.emitted}
        self.tick = state["tick"]
        self.changed = dict.fromkeys(tuple(k) for k in state["changed"])
        self.timers = [tuple(t) for t in state["timers"]]
        heapq.heapify(self.timers)
        self._seq, self.last_out, self.last_tick = state["seq"], state["last_out"], state["last_tick"]


def _plain_key(t: pa.DataType) -> bool:
    """Whether Arrow's grouping of this type agrees with Python's equality of its values
    (floats do not: NaN is unequal to itself in Python, and -0.0 equals 0.0)."""
    return (
        pa.types.is_integer(t)
        or pa.types.is_string(t)
        or pa.types.is_large_string(t)
        or pa.types.is_boolean(t)
        or pa.types.is_timestamp(t)
        or pa.types.is_date(t)
    )


_EPOCH = dt.datetime(1970, 1, 1)
_EPOCH_TZ = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def _ticks(value) -> int | None:
    """A key's event time as ticks: integers as they are, timestamps as microseconds since the epoch."""
    if value is None:
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, dt.datetime):
        epoch = _EPOCH_TZ if value.tzinfo is not None else _EPOCH
        return (value - epoch) // dt.timedelta(microseconds=1)
    if isinstance(value, dt.date):
        return (value - _EPOCH.date()).days * 86_400_000_000
    raise TypeError(f"an event time must be an integer or a timestamp, got {value!r}")


class FinalValuesOp(Operator):
    """A grouped aggregate over start edges and a :class:`TriggerOp` without rules, as one operator
    (see the module docstring): the rows reach the aggregate at one tick, the firings come out at the
    last input tick."""

    name = "Aggregate"

    def __init__(self, aggregate: Operator, trigger: TriggerOp):
        super().__init__()
        if trigger.spec != TriggerSpec():
            raise ValueError(f"FinalValuesOp takes a trigger without rules, not {trigger.spec.describe()}")
        self.aggregate, self.trigger = aggregate, trigger
        aggregate.downstream = [trigger]
        trigger.downstream = [_Stamped(self)]
        self.last: int | None = None  # the last input tick
        self.variant = f"{aggregate.variant}; values at end of input (no change per tick)"

    def on_batch(self, batch: EventBatch) -> None:
        batch = batch.compact()
        if len(batch) == 0:
            return
        self.last = int(batch.sync[-1])
        at_one_tick = np.zeros(len(batch), np.int64)
        self.aggregate.on_batch(EventBatch(at_one_tick, batch.other, batch.columns, key=batch.key, hash=batch.hash))

    def on_punctuation(self, time: int) -> None:
        # every value fires at end of input, stamped with the last input tick: a punctuation passes only up to
        # there (one beyond would let a consumer finish that time before the values arrive)
        self.emit_punctuation(time if self.last is None else min(time, self.last))

    def on_completed(self) -> None:
        self.aggregate.on_completed()  # the aggregate emits, the trigger fires, then completes through _Stamped

    def snapshot(self) -> dict:
        return {"aggregate": self.aggregate.snapshot(), "trigger": self.trigger.snapshot(), "last": self.last}

    def restore(self, state: dict) -> None:
        self.aggregate.restore(state["aggregate"])
        self.trigger.restore(state["trigger"])
        self.last = state["last"]


class _Stamped(Operator):
    """The trigger's firings (at tick 0) moved to the last input tick, emitted by the owner."""

    def __init__(self, owner: FinalValuesOp):
        super().__init__()
        self.owner = owner

    def on_batch(self, batch: EventBatch) -> None:
        at = np.full(len(batch), self.owner.last if self.owner.last is not None else 0, np.int64)
        self.owner.emit(EventBatch(at, batch.other, batch.columns, key=batch.key, hash=batch.hash))

    def on_punctuation(self, time: int) -> None:
        pass  # the owner passes its input's punctuations on itself

    def on_flush(self) -> None:
        pass

    def on_completed(self) -> None:
        self.owner.emit_completed()
