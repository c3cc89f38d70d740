"""Kernel state ("cores") of the symmetric hash variants: per-row arrays for both sides, per-key list heads,
endpoint queues, and the output buffer; one core per operation an operator runs over the merged events."""

from __future__ import annotations

import numpy as np

from ...core.time import MIN_TIME
from .exists_kernel import exists_kernel
from .hash_kernels import clip_kernel, join_kernel
from .kinds import FIFO, NONE
from .stage_kernels import _remap_links


def _grow_rows(a: np.ndarray, n: int, fill) -> np.ndarray:
    if a.shape[-1] >= n:
        return a
    size = max(n, 2 * a.shape[-1], 64)
    out = np.empty(a.shape[:-1] + (size,), a.dtype)  # each element written once: the old rows, then the fill
    out[..., : a.shape[-1]] = a
    out[..., a.shape[-1] :] = fill
    return out


class _Core:
    """State of one kernel: per-row arrays for both sides, per-key heads, endpoint queues."""

    ROW_ARRAYS = {"st": (np.int64, 0), "en": (np.int64, 0), "ph": (np.int64, 0), "gr": (np.int64, -1)}
    LINK_ARRAYS = {"nxt": (np.int64, -1), "prv": (np.int64, -1), "inl": (np.bool_, False)}
    KEY_ARRAYS = {"head": (np.int64, -1)}
    out_capacity = 1 << 18
    via_order = False

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
    via_order = True  # the kernel reads the staged events through ``order`` (no reordered copy)
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


class _LeftKeyedCore(_Core):
    """A core keeping only its side 0's events by key; side 1's events are counted (exists) or probe (clip)."""

    def gids(self, side: int, kid: np.ndarray) -> np.ndarray:
        # local side 0 (kept): null keys get id 0, which local side 1 never touches
        if side == 0:
            return np.where(kid >= 0, kid + 1, 0)
        return np.where(kid >= 0, kid + 1, -1)

    def ensure(self, rows, keys, intervals) -> None:
        super().ensure(rows, keys + 1, intervals)

    def live(self, s: int, n: int) -> np.ndarray:
        return self.inl[s, :n] if s == 0 else np.zeros(n, bool)

    def remap(self, s, keep, mapping) -> None:
        if s == 0:  # side 1 keeps no rows (an exists core's queue holds key ids)
            super().remap(s, keep, mapping)


class _ExistsCore(_LeftKeyedCore):
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

    def ensure(self, rows, keys, intervals) -> None:
        super().ensure(rows, keys, intervals)
        self.seg = _grow_rows(self.seg, self.st.shape[1], NONE)

    def remap(self, s, keep, mapping) -> None:
        super().remap(s, keep, mapping)
        if s == 0:
            self.seg[: len(keep)] = self.seg[keep]

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


class _ClipCore(_LeftKeyedCore):
    KEY_ARRAYS = {"head": (np.int64, -1), "lcount": (np.int64, 0)}

    def call(self, ev: dict, bound: int, i: int):
        return clip_kernel(
            ev["side"], ev["kind"], ev["sync"], ev["other"], ev["gid"], ev["row"], ev["ph"], bound, self.out, i,
            self.st, self.en, self.ph, self.gr, self.nxt, self.prv, self.inl, self.head, self.lcount,
            self.qt, self.qv, self.qmeta, self.qkind, self.alive,
        )  # fmt: skip
