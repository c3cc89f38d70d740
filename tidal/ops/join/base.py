"""What every physical join variant shares: input control (pending batches, the processing bound,
punctuation), key ids, payload stores, output assembly, compaction and checkpoint state.

A variant (:mod:`.hash`, :mod:`.build_once`, :mod:`.merge`, :mod:`.window`) supplies its cores, the
queue descriptions ``explain()`` shows, and ``_process``, which runs a chunk of events before the bound.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from ...core.batch import EventBatch
from ...core.errors import PlanError
from ...core.time import INFINITY, MIN_TIME
from ..base import Operator, ReorderBuffer, two_ports
from ..keys import KeyIndex
from .keys import _flatten, _KeyColumns, check_key_types
from .kinds import FIFO, HEAP
from .result import _Result
from .store import _HASH_COL, _KEY_COL, _Store

_STAGED = ("side", "kind", "sync", "other", "gid", "row", "ph")  # a chunk's events, as the kernels read them
_FIFO_BROKEN = "a join input declared constant duration delivered intervals whose ends go back in time"


def _queue_kind(props) -> tuple[int, str]:
    if props is None:
        return HEAP, "general (priority endpoint queue)"
    if props.start_edge_only:
        return FIFO, "start edges only (no endpoint queue)"
    if props.constant_duration is not None:
        return FIFO, f"constant duration {props.constant_duration} (FIFO endpoint queue)"
    return HEAP, "general (priority endpoint queue)"


class JoinSpec:
    """The logical join: what to compute, from which inputs; :func:`~tidal.ops.join.JoinOp` picks the physical
    variant from it once."""

    def __init__(self, mode, left_key, right_key, schemas, props, result, build_once, variant):
        self.mode = mode
        self.keys = (_KeyColumns(left_key, schemas[0], "left"), _KeyColumns(right_key, schemas[1], "right"))
        fields = [k.spec if k.kind == "fields" else None for k in self.keys]
        if None not in fields and None not in schemas:
            check_key_types(*[[s.field(f).type for f in fs] for s, fs in zip(schemas, fields, strict=True)], *fields)
        self.schemas = schemas
        self.props = props
        self.result = result
        self.build_once = build_once and mode == "inner"
        self.forced = variant  # "hash" or "merge" forces that choice


class JoinBase(Operator):
    """The two-input operator behind every member of the family (see the package docstring); built by
    :func:`~tidal.ops.join.JoinOp` as one of its variants."""

    name = "Join"
    build_once = False
    algorithm = ""  # what explain() calls the variant

    @property
    def ports(self):
        return two_ports(self)

    def __init__(self, spec: JoinSpec):
        super().__init__()
        self.mode = spec.mode
        self.keys = spec.keys
        self.schemas = list(spec.schemas)
        self.start_edge_only = tuple(bool(p and p.start_edge_only) for p in spec.props)
        queues = self._queues(spec)
        self.cores = self._make_cores(spec, (queues[0][0], queues[1][0]))
        cross = self.keys[0].kind == "none"
        self.variant = (
            f"{'cross join' if cross and self.mode == 'inner' else self.algorithm}; left: {queues[0][1]}; "
            f"right: {queues[1][1]}; keys: {self.keys[0].describe()} = {self.keys[1].describe()}"
        )
        self.results = _Result(spec.result, spec.schemas)
        if spec.result is not None:
            self.variant += f"; result: {self.results.describe()}"
        self.stores = (_Store(), _Store())
        self.index: KeyIndex | None = None
        self.pending: list[list[EventBatch]] = [[], []]
        self.seen = [MIN_TIME, MIN_TIME]
        self.punct = [MIN_TIME, MIN_TIME]
        self.completed = [False, False]
        self.last_punct = MIN_TIME
        self.grouped: bool | None = None
        self.stage = {k: np.empty(0, np.int8 if k in ("side", "kind") else np.int64) for k in _STAGED}  # reused

    def _queues(self, spec: JoinSpec) -> list[tuple[int, str]]:
        """Per input, its endpoint-queue kind and how explain() describes it."""
        return [_queue_kind(p) for p in spec.props]

    def _make_cores(self, spec: JoinSpec, qkinds: tuple[int, int]) -> list:
        raise NotImplementedError

    def _process(self, parts: list[list[EventBatch]], bound: int) -> None:
        """Run the events of ``parts`` (per side, batches in time order, all before ``bound``)."""
        raise NotImplementedError

    # -- control -----------------------------------------------------------------------
    def _held(self) -> bool:
        """Whether the right waits (no processing, no punctuation) until the left is complete."""
        return False

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
        if self._held():
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
        self._input_completed(side)
        self._advance()
        if all(self.completed):
            self.emit_completed()

    def _input_completed(self, side: int) -> None:
        pass

    def _check_grouping(self, batch: EventBatch) -> None:
        grouped = batch.key is not None
        if self.grouped is None:
            self.grouped = grouped
        elif grouped != self.grouped:
            raise PlanError("a join needs both inputs grouped the same way (both inside group_apply, or neither)")

    # -- processing --------------------------------------------------------------------
    def _advance(self) -> None:
        if self._held():
            return
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
        self._chunk(parts, bound)

    def _chunk(self, parts: list[list[EventBatch]], bound: int) -> None:
        if not parts[0] and not parts[1] and not self._queued_before(bound):
            return
        self._process(parts, bound)

    def _queued_before(self, bound: int) -> bool:
        for core in self.cores:
            for s in (0, 1):
                if core.qmeta[s, 1] > core.qmeta[s, 0] and int(core.qt[s, core.qmeta[s, 0]]) < bound:
                    return True
        return False

    def _store_rows(self, side: int, batch: EventBatch) -> int:
        """Store every row of ``batch`` on ``side``; returns the first one's row number (a count downstream:
        the rows are numbered, their payload never kept, as in :meth:`_stored`)."""
        store = self.stores[side]
        if not self.payload_read():
            base = store.rows
            store.rows += len(batch)
            return base
        return store.append(batch)

    def _stored(self, side: int, batches: list[EventBatch]):
        """Each batch with present events, once its present rows are stored: (batch, present positions or None,
        store base, dense) as :meth:`~.store._Store.append_present` says."""
        counted = not self.payload_read()  # a count downstream: rows are numbered, their payload never kept
        for b in batches:
            present = None if b.absent is None else np.flatnonzero(~b.absent)
            if present is not None and len(present) == 0:
                continue
            store = self.stores[side]
            if counted:
                base, dense = store.rows, present is not None
                store.rows += len(b) if present is None else len(present)
            else:
                base, dense = store.append_present(b, present)  # absent rows are never referenced
            yield b, present, base, dense

    def _stage_room(self, total: int) -> dict[str, np.ndarray]:
        """The staging arrays, with room for ``total`` events."""
        stage = self.stage
        if len(stage["sync"]) < total:
            size = max(total, 2 * len(stage["sync"]))
            self.stage = stage = {k: np.empty(size, v.dtype) for k, v in stage.items()}
        return stage

    def _check_key_types(self, side: int, cols: list) -> None:
        """Key lambdas' types are known once each side has computed keys: they must be able to match."""
        seen = self.__dict__.setdefault("_key_types", [None, None])
        if seen[side] is None and cols:
            seen[side] = [c.type for c in cols]
            if seen[1 - side] is not None:
                check_key_types(seen[0], seen[1])

    def _n_keys(self) -> int:
        return len(self.index) if self.index is not None else 1

    def _key_ids(self, side: int, batch: EventBatch) -> np.ndarray:
        cols = self.keys[side].columns(batch)
        self._check_key_types(side, cols)
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

    def _present_key_ids(self, side: int, batch: EventBatch, present: np.ndarray | None) -> np.ndarray:
        """Key ids aligned with the batch's rows (those of absent rows are never read)."""
        if present is None or self.keys[side].kind != "lambda":
            return self._key_ids(side, batch)
        # a key lambda must not see filtered-out rows (they may be what the filter guarded against)
        kid = np.full(len(batch), -1, np.int64)
        kid[present] = self._key_ids(side, batch.take(present))
        return kid

    # -- output --------------------------------------------------------------------------
    def _side_columns(self, side: int, rows: np.ndarray) -> tuple[dict, pa.Array | None, np.ndarray | None]:
        fields = self.results.fields
        taken = self.stores[side].take(rows, fields[side] if fields else None)
        key = taken.pop(_KEY_COL, None)
        hsh = taken.pop(_HASH_COL, None)
        return taken, key, (None if hsh is None else np.asarray(hsh.to_numpy(zero_copy_only=False), np.int64))

    def _null_columns(self, side: int, n: int) -> dict[str, pa.Array]:
        schema = self.stores[side].schema or self.schemas[side]
        if schema is None:
            return {}
        return {f.name: pa.nulls(n, f.type) for f in schema if f.name not in (_KEY_COL, _HASH_COL)}

    def _pairs(self, o_sync, o_other, o_a, o_b) -> EventBatch:
        """Outputs of joined pairs (left row ``o_a``, right row ``o_b``), with the left's group key."""
        if not self.payload_read():
            return EventBatch(o_sync, o_other, {})  # counted only: no payload gathered
        lcols, key, hsh = self._side_columns(0, o_a)
        rcols, _, _ = self._side_columns(1, o_b)
        return EventBatch(o_sync, o_other, self.results.columns(lcols, rcols, len(o_sync)), key=key, hash=hsh)

    def _output(self, batch: EventBatch) -> None:
        self.emit(batch)

    # -- memory ----------------------------------------------------------------------------
    def _compactable(self, side: int) -> bool:
        return True

    def _maybe_compact(self) -> None:
        for side in (0, 1):
            store = self.stores[side]
            n = store.rows
            if n < 4096:
                continue
            alive = sum(int(core.alive[core.local(side)]) for core in self.cores)
            if n <= 2 * alive + 4096 or not self._compactable(side):
                continue
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
    def _build_state(self) -> dict:
        """The build-once entries of the checkpoint state (the same keys for every variant)."""
        return {"built": None, "replay_pos": 0, "reorder": ReorderBuffer().snapshot()}

    def _restore_build(self, state: dict) -> None:
        pass

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
            **self._build_state(),
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
        self._restore_build(state)
