"""The build-once variant (``join(..., left_is_small=True)``): the finite left is resolved to intervals and
indexed by key once it completes; right intervals (and right start edges, when the right has only start
edges) probe that index, right edges meet the left replayed into the symmetric hash kernel."""

from __future__ import annotations

import numpy as np

from ...core.batch import EventBatch, concat_batches
from ...core.time import INFINITY
from ..base import ReorderBuffer
from .base import JoinSpec
from .hash import HashJoin
from .keys import payload_hash
from .kinds import HEAP, INTERVAL, START


class BuildOnceJoin(HashJoin):
    """An inner join holding the right until the left is built (see the package docstring)."""

    build_once = True

    def __init__(self, spec: JoinSpec):
        super().__init__(spec)
        self.built: dict[str, np.ndarray] | None = None  # the left as intervals, by key then start
        self.replay: dict[str, np.ndarray] | None = None  # the same, by start
        self.replay_pos = 0  # left intervals (by start) already fed to the kernel
        self.reorder = ReorderBuffer()  # probe outputs that start in the future
        self._offsets_of: np.ndarray | None = None  # the built keys ``_offsets`` was made from
        self._offsets = np.zeros(1, np.int64)

    def _queues(self, spec: JoinSpec) -> list[tuple[int, str]]:
        q = super()._queues(spec)
        q[0] = (HEAP, "built once when it completes (right intervals probe it, unstored)")  # replays any length
        return q

    def _held(self) -> bool:
        return not self.completed[0]

    def _input_completed(self, side: int) -> None:
        if side == 0:
            self._build()

    def _chunk(self, parts: list[list[EventBatch]], bound: int) -> None:
        self._probe_built(concat_batches(parts[1]) if parts[1] else None, bound)

    def _output(self, batch: EventBatch) -> None:
        self.reorder.push(batch)

    def _compactable(self, side: int) -> bool:
        return side != 0  # the built left is referenced by its index for the whole run

    def _build(self) -> None:
        """The whole left is in: resolve its edges to intervals and index them by key, then start."""
        whole = concat_batches(self.pending[0]).compact() if self.pending[0] else None
        self.pending[0] = []
        empty = np.empty(0, np.int64)
        if whole is None or len(whole) == 0:
            self.built = {"g": empty, "s": empty, "e": empty, "row": empty}
            self.replay = {"g": empty, "s": empty, "e": empty, "row": empty}
            return
        base = self._store_rows(0, whole)
        kid = self._key_ids(0, whole)
        sync, other = whole.sync, whole.other
        rows = np.arange(base, base + len(whole), dtype=np.int64)
        is_end = other < sync
        end = other.copy()  # intervals keep their end; start edges: INFINITY for now (times may be negative)
        starts = np.flatnonzero(other == INFINITY)
        ends = np.flatnonzero(is_end)
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
        keep = ~is_end & (kid >= 0)

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
            # intervals probe the built left; so do start edges when the right never ends any (its
            # properties say start edges only): their pairs are [max(starts), left end), as for an interval
            kind_interval = right.other > right.sync
            if not self.start_edge_only[1]:
                kind_interval &= right.other != INFINITY
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
        offsets = self._key_offsets()  # key id -> where its rows begin in the built left (ids are dense)
        known = (kid >= 0) & (kid < len(offsets) - 2)
        at = np.where(known, kid, 0)
        lo = offsets[at]
        counts = np.where(known, offsets[at + 1] - lo, 0)
        total = int(counts.sum())
        if total == 0:
            return
        if total == int(np.count_nonzero(counts)):  # one built row per key (a dimension table): no repeats
            r = np.flatnonzero(counts)
            li = lo[r]
        else:
            r = np.repeat(np.arange(len(right)), counts)
            li = np.repeat(lo, counts) + (np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts))
        start = np.maximum(b["s"][li], right.sync[r])
        end = np.minimum(b["e"][li], right.other[r])
        ok = np.flatnonzero(start < end)
        if len(ok) == 0:
            return
        base = self._store_rows(1, right)
        self.reorder.push(self._pairs(start[ok], end[ok], b["row"][li[ok]], base + r[ok]))

    def _key_offsets(self) -> np.ndarray:
        """Offsets of each key id's rows in the built left (sorted by key): one gather per probe, no search.
        Ids ``0 .. len - 3`` have rows from ``offsets[id]`` to ``offsets[id + 1]``; the last entry repeats."""
        g = self.built["g"]
        if self._offsets_of is not g:
            counts = np.bincount(g, minlength=int(g.max()) + 1 if len(g) else 0)
            ends = np.cumsum(counts)
            self._offsets = np.concatenate([[0], ends, ends[-1:] if len(ends) else [0]]).astype(np.int64)
            self._offsets_of = g
        return self._offsets

    def _stage_replay(self, stage: dict, lo: int, hi: int) -> int:
        if lo >= hi:
            return 0
        r = slice(lo, hi)
        n = hi - lo
        e = self.replay["e"][r]
        stage["side"][:n] = 0
        stage["kind"][:n] = np.where(e == INFINITY, START, INTERVAL)
        stage["sync"][:n] = self.replay["s"][r]
        stage["other"][:n] = e
        stage["gid"][:n] = self.replay["g"][r]
        stage["row"][:n] = self.replay["row"][r]
        stage["ph"][:n] = 0
        return n

    def _build_state(self) -> dict:
        return {
            "built": None if self.built is None else {**self.built, **{"r_" + k: v for k, v in self.replay.items()}},
            "replay_pos": self.replay_pos,
            "reorder": self.reorder.snapshot(),
        }

    def _restore_build(self, state: dict) -> None:
        built = state["built"]
        if built is not None:
            self.built = {k: np.array(v) for k, v in built.items() if not k.startswith("r_")}
            self.replay = {k[2:]: np.array(v) for k, v in built.items() if k.startswith("r_")}
        self.replay_pos = state["replay_pos"]
        self.reorder.restore(state["reorder"])


def _rank_within(group: np.ndarray) -> np.ndarray:
    """0, 1, 2, ... for the successive occurrences of each value of ``group``."""
    order = np.argsort(group, kind="stable")
    sorted_g = group[order]
    first = np.r_[0, np.flatnonzero(sorted_g[1:] != sorted_g[:-1]) + 1] if len(group) else np.empty(0, np.int64)
    starts = np.repeat(first, np.diff(np.r_[first, len(group)]))
    rank = np.empty(len(group), np.int64)
    rank[order] = np.arange(len(group)) - starts
    return rank
