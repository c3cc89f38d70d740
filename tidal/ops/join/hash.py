"""The symmetric hash variant: every mode (inner, outer, semi/anti-join, clip), each a set of cores run
over the same merged events, their outputs merged by time."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from ...core.batch import EventBatch, concat_batches
from ...core.errors import PlanError
from .base import _FIFO_BROKEN, _STAGED, JoinBase, JoinSpec
from .cores import _ClipCore, _ExistsCore, _JoinCore
from .keys import payload_hash
from .kinds import _ERR_FIFO, END
from .stage_kernels import _NO_ROWS, _merge_order, _stage

ALGORITHMS = {
    "inner": "symmetric hash join",
    "left_outer": "symmetric hash join + anti-join (left)",
    "full_outer": "symmetric hash join + anti-joins (both sides)",
    "exists": "semi-join (left by key, right counts)",
    "not_exists": "anti-join (left by key, right counts)",
    "clip": "clip (left by key, right starts)",
}


class HashJoin(JoinBase):
    """Both inputs merged in time order through symmetric hash tables (see the package docstring)."""

    @property
    def algorithm(self) -> str:
        return ALGORITHMS[self.mode]

    def _make_cores(self, spec: JoinSpec, qk: tuple[int, int]) -> list:
        # each core with how its outputs become batches, fixed here for the operator's life
        mode = spec.mode
        if mode in ("exists", "not_exists"):
            pairs = [(_ExistsCore(qk, exists=mode == "exists"), self._left_rows)]
        elif mode == "clip":
            pairs = [(_ClipCore(qk), self._left_rows)]
        else:
            pairs = [(_JoinCore(qk), self._pairs)]
            if mode in ("left_outer", "full_outer"):
                pairs.append((_ExistsCore(qk, exists=False), self._left_padded))
            if mode == "full_outer":
                pairs.append((_ExistsCore(qk[::-1], False, mirrored=True), self._right_padded))
        # plain functions, not bound methods: a list of the operator's own bound methods is a
        # reference cycle that keeps a finished join's state alive until a garbage collection
        self.assemblers = [a.__func__ for _, a in pairs]
        return [c for c, _ in pairs]

    def _left_rows(self, o_sync, o_other, o_a, o_b) -> EventBatch:
        """Semi/anti-join and clip outputs: the left events themselves."""
        if not self.payload_read():
            return EventBatch(o_sync, o_other, {})
        cols, key, hsh = self._side_columns(0, o_a)
        return EventBatch(o_sync, o_other, cols, key=key, hash=hsh)

    def _left_padded(self, o_sync, o_other, o_a, o_b) -> EventBatch:
        """Left events with no partner, the right's fields null."""
        if not self.payload_read():
            return EventBatch(o_sync, o_other, {})
        n = len(o_sync)
        lcols, key, hsh = self._side_columns(0, o_a)
        cols = self.results.columns(lcols, self._null_columns(1, n), n, missing=1)
        return EventBatch(o_sync, o_other, cols, key=key, hash=hsh)

    def _right_padded(self, o_sync, o_other, o_a, o_b) -> EventBatch:
        """Right events with no partner (``o_a``: the mirrored core's side 0 is the right), the left's fields
        null."""
        if not self.payload_read():
            return EventBatch(o_sync, o_other, {})
        n = len(o_sync)
        rcols, key, hsh = self._side_columns(1, o_a)
        cols = self.results.columns(self._null_columns(0, n), rcols, n, missing=0)
        return EventBatch(o_sync, o_other, cols, key=key, hash=hsh)

    def _process(self, parts: list[list[EventBatch]], bound: int, replay: tuple[int, int] | None = None) -> None:
        """Run the cores over the events of ``parts`` (per side, batches in time order) and any left replay."""
        total = sum(len(b) for side in parts for b in side) + (replay[1] - replay[0] if replay else 0)
        stage = self._stage_room(total)
        intervals = [0, 0]
        has_end = False
        off = 0 if replay is None else self._stage_replay(stage, *replay)
        intervals[0] = off
        n0 = off
        for side in (0, 1):
            for b, present, base, dense in self._stored(side, parts[side]):
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
        n_keys = self._n_keys()
        if has_end:
            order = np.lexsort((staged["kind"] != END, staged["sync"]))  # by time, ends first; stable: left first
        elif 0 < n0 < n:
            order = _merge_order(staged["sync"], n0)  # two runs sorted by time: one linear merge
        else:
            order = np.arange(n)
        outputs = []
        for core, assemble_of in zip(self.cores, self.assemblers, strict=True):
            assemble = assemble_of.__get__(self)
            if core.via_order:
                ev = dict(staged, order=order)
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
                raise PlanError(_FIFO_BROKEN)
            if len(o_sync):
                outputs.append(assemble(o_sync, o_other, o_a, o_b))
        if outputs:
            self._output(outputs[0] if len(outputs) == 1 else _merge_sorted(outputs))
        self._maybe_compact()

    def _stage_replay(self, stage: dict, lo: int, hi: int) -> int:
        """Stage the left's replayed events ``lo..hi`` first; returns how many (the build-once variant's)."""
        return 0


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


def _merge_sorted(batches: list[EventBatch]) -> EventBatch:
    cols = _unify([b.columns for b in batches])
    names = list(cols[0])
    batches = [b.replace(columns={k: c[k] for k in names}) for b, c in zip(batches, cols, strict=True)]
    keyed = [b.key is not None for b in batches]
    if any(keyed) and not all(keyed):
        raise PlanError("internal: join outputs disagree on grouping")
    merged = concat_batches(batches)
    return merged.take(np.argsort(merged.sync, kind="stable"))
