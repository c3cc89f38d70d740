"""The merge join variant: ``join`` on one integer-like key field per side, both inputs sorted by it within
each sync time; each side keeps its alive rows sorted by key, and nothing is hashed."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from ...core.batch import EventBatch, concat_batches
from ...core.errors import PlanError
from ...core.time import INFINITY
from .base import _FIFO_BROKEN, JoinBase, JoinSpec
from .cores import _Core
from .keys import payload_hash
from .kinds import _ERR_FIFO, _ERR_ORDER, END, INTERVAL, START
from .merge_kernel import merge_join_kernel


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


class MergeJoin(JoinBase):
    """The inner join of key-sorted inputs (see the package docstring)."""

    algorithm = "merge join (inputs sorted by the key within each sync time; no hashing)"

    def _make_cores(self, spec: JoinSpec, qkinds: tuple[int, int]) -> list:
        return [_MergeCore(qkinds)]

    def _process(self, parts: list[list[EventBatch]], bound: int) -> None:
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
            base = self._store_rows(side, b)
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
            raise PlanError(_FIFO_BROKEN)
        if len(o_sync):
            order = np.argsort(o_sync, kind="stable")  # interval ends due inside the chunk come between steps
            self.emit(self._pairs(o_sync[order], o_other[order], o_a[order], o_b[order]))
        self._maybe_compact()


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


def choose_merge(spec: JoinSpec) -> bool:
    """Whether the join merges: forced by ``variant``, or chosen when both inputs are sorted by their keys."""
    variant, schemas, props = spec.forced, spec.schemas, spec.props
    if variant not in (None, "hash", "merge"):
        raise PlanError(f"join variant is 'hash' or 'merge', got {variant!r}")
    if variant == "hash":
        return False
    specs = [(k.kind, k.spec) for k in spec.keys]
    why = None
    if spec.mode != "inner" or spec.build_once:
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
