"""The window join variant: an inner join of left intervals of one constant duration with right points (or with
right tumbling windows of that size on the left's grid),
where the left's events are ended by their start alone (no endpoint queue, nothing to remove)."""

from __future__ import annotations

import numpy as np

from ...core.batch import EventBatch
from ...core.errors import PlanError
from ...core.time import INFINITY, MIN_TIME
from .base import JoinBase, JoinSpec
from .kinds import FIFO
from .stage_kernels import _NO_ROWS
from .store import _HASH_COL, _KEY_COL, _pool_empty
from .window_kernels import _MAX_FUSED_FIELDS, _stage_window, probe_emit, probe_emit_columns, probe_link


class _WindowCore:
    """State of the window join: the left's events in arrival order (ids ``lo..tail-1`` alive), each linked to
    the previous left event of its key, and per key slot the latest left id. Left ids below ``lo`` have ended
    for every time still to come; arrays hold ids from ``off`` on."""

    mirrored = False
    out_capacity = 1 << 18

    def __init__(self, duration: int, span: int = 1):
        self.duration = duration
        self.span = span  # the right events' duration: 1 (points) or ``duration`` (windows on the left's grid)
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
                sync, gid, row, self.link, n0, n, self.duration, self.span, self.a_start, self.a_row, self.a_prev,
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
                staged["sync"], staged["gid"], staged["row"], self.link, n0, n, self.duration, self.span, self.a_start,
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


class WindowJoin(JoinBase):
    """Right points probing the left's window per key (see the package docstring)."""

    algorithm = "window join (right events probe the left's window per key; no endpoint queue)"

    def __init__(self, spec: JoinSpec):
        self.window, self.span = window_span(spec)
        self.spec_grid = spec.props[0].constant_hop  # (hop, offset) of both inputs' windows when span > 1
        super().__init__(spec)

    def _queues(self, spec: JoinSpec) -> list[tuple[int, str]]:
        right = "points" if self.span == 1 else f"tumbling windows of {self.span} on the left's grid"
        return [(FIFO, f"constant duration {self.window} (its alive events per key, newest first)"),
                (FIFO, f"{right} (each probes the left's alive events, never stored)")]  # fmt: skip

    def _make_cores(self, spec: JoinSpec, qkinds: tuple[int, int]) -> list:
        return [_WindowCore(self.window, self.span)]

    def _process(self, parts: list[list[EventBatch]], bound: int) -> None:
        stage = self._stage_room(sum(len(b) for side in parts for b in side))
        off = n0 = 0
        grid = self.spec_grid if self.span > 1 else (0, 0)  # windows on both sides: check their starts' grid
        for side in (0, 1):
            for b, present, base, dense in self._stored(side, parts[side]):
                off, bad = _stage_window(
                    b.sync, b.sync if b.points else b.other, b.points, _NO_ROWS if b.absent is None else b.absent,
                    self._present_key_ids(side, b, present), base, dense, (self.window, self.span)[side], *grid, off,
                    stage["sync"], stage["gid"], stage["row"],
                )  # fmt: skip
                if bad:
                    right = "points" if self.span == 1 else f"tumbling windows of {self.span} ticks on the left's grid"
                    raise PlanError(
                        f"a join input declared to hold intervals of {self.window} ticks (left) or {right} "
                        "(right) delivered an event of another kind"
                    )
            if side == 0:
                n0 = off
        staged = {k: stage[k][:off] for k in ("sync", "gid", "row")}
        core = self.cores[0]
        core.ensure(self._n_keys() + 1, n0, off)
        stores = self.stores
        names = self.results.fields or (None, None)
        lsel = rsel = None
        if stores[0].matrix is not None and stores[1].matrix is not None:
            lsel, rsel = stores[0].selection(names[0]), stores[1].selection(names[1])
        if not self.payload_read():  # counted only: the pairs' times, no payload
            o_sync, o_other, _, _ = core.run(staged, n0)
            if len(o_sync):
                self.emit(EventBatch(o_sync, o_other, {}))
        elif lsel is not None and max(len(lsel), len(rsel)) <= _MAX_FUSED_FIELDS:
            # every payload field is 8 bytes wide: the kernel writes the pairs' payload columns itself
            for o_sync, o_other, o_left, o_right in core.run_columns(
                staged, n0, stores[0].matrix, lsel, stores[1].matrix, rsel
            ):
                lcols, rcols = stores[0].wrap(o_left, lsel), stores[1].wrap(o_right, rsel)
                self.emit(self._pairs_batch(o_sync, o_other, lcols, rcols))
        else:
            o_sync, o_other, o_a, o_b = core.run(staged, n0)
            if len(o_sync):
                self.emit(self._pairs(o_sync, o_other, o_a, o_b))
        core.expire(bound)
        self._maybe_compact()

    def _pairs_batch(self, o_sync, o_other, lcols: dict, rcols: dict) -> EventBatch:
        """Output pairs from both sides' columns (the left's group key, if any, among them)."""
        key = lcols.pop(_KEY_COL, None)
        hsh = lcols.pop(_HASH_COL, None)
        rcols.pop(_KEY_COL, None)
        rcols.pop(_HASH_COL, None)
        hsh = None if hsh is None else np.asarray(hsh.to_numpy(zero_copy_only=False), np.int64)
        return EventBatch(o_sync, o_other, self.results.columns(lcols, rcols, len(o_sync)), key=key, hash=hsh)


def window_duration(spec: JoinSpec) -> int | None:
    """The left's constant duration when the window join applies: an inner join of left intervals of one
    length with right points, or of two inputs of tumbling windows on one grid."""
    span = window_span(spec)
    return None if span is None else span[0]


def window_span(spec: JoinSpec) -> tuple[int, int] | None:
    """``(left duration, right duration)`` when the window join applies. The right's events are points, or
    tumbling windows of the left's size on the left's grid: then a right window overlaps exactly the left
    events of its own window, which started at the same time (before it, as the left comes first at a time)
    and end with it."""
    left_props, right_props = spec.props
    if spec.mode != "inner" or spec.build_once or left_props is None or right_props is None:
        return None
    d = left_props.constant_duration
    if not (isinstance(d, int | np.integer) and d > 0):
        return None
    if right_props.constant_duration == 1:
        return int(d), 1
    grid = left_props.constant_hop
    if right_props.constant_duration == d and grid is not None and grid[0] == d and right_props.constant_hop == grid:
        return int(d), int(d)
    return None
