"""The payload store of the reorder operator: buffered events' other times and columns, by sorter row id.

No temporal semantics of its own: the Impatience sorter (:mod:`tidal.ops.impatience`) moves only
``(time, row id)`` pairs; this store keeps the rest of each buffered event and hands it back, in the
order the sorter releases the row ids, when a punctuation releases them. A row is handed back once
and then forgotten.

Nothing is copied when rows arrive: the store keeps a reference to each pushed batch's arrays (a
*piece*), and the row at position ``i`` of a piece has row id ``first + i`` (rows of the batch that
were not pushed simply leave their ids unused). All pieces' arrays together form one index space;
a release maps its row ids into it and takes every column once (one Arrow take over the pieces it
touches; a release with rows from the sorter copies the fixed-width columns in the pass that merges and
maps them, :mod:`tidal.ops.reorder_gather`). When the released rows are one contiguous run of one piece,
in order (input that arrived in order), the columns are handed on as zero-copy slices. A piece is dropped
when its last row is released. A piece pins its whole batch, so when the rows the pieces but the newest pin exceed twice
the live rows plus ``slack``, the live rows are copied into one compact piece (each compaction frees at least as
many rows as it copies: a row is copied a constant number of times on average). The newest piece (an arrival batch) is
left out of the count: the next punctuations release most of it anyway, and counting it compacted after every batch
larger than ``slack`` (each release then read the rows left over from the compact piece by binary search: from_arrow's
disorder sort with 100,000-row batches ran 55 ms where 80,000-row batches ran 41). Point events keep
no other times: theirs is the sync time + 1.
"""

from __future__ import annotations

import numba as nb
import numpy as np
import pyarrow as pa

from ..core.batch import START_EDGES
from ..core.time import INFINITY
from .join.store import _fixed_width, _pool_empty, _values
from .reorder_gather import Plan, layout, merge_gather, numbers
from .reorder_kernels import _merge_map, _position
from .reorder_queue import scratch

_SLACK = 65_536  # rows the pieces may pin on top of twice the live rows before compacting
_FUSE_FROM = 4_096  # releases of this many rows or more, some from the sorter, gather in the merging pass
_OTHER = "\x00other"  # the other times, as a column the merging pass copies


class _Piece:
    """Arrays of ``length`` rows: row ``i`` has id ``first + i``, or ``rows[i]`` (a compact piece)."""

    __slots__ = ("first", "length", "rows", "other", "sync", "columns", "starts", "_layout", "syncs")

    def __init__(self, first, length, rows, other, sync, columns):
        self.first = first
        self.length = length
        self.rows = rows  # None: ids first, first + 1, ...; else the sorted ids of a compact piece
        self.other = other  # None: points (other = sync + 1); START_EDGES: start edges (INFINITY, not made)
        self.sync = sync
        self.columns = columns
        # start edges only (every other time INFINITY): a gather reads no other time, it hands on START_EDGES
        self.starts = other is START_EDGES or (
            other is not None and len(other) > 0 and other[0] == INFINITY and bool((other == INFINITY).all())
        )
        self._layout = None

    def layout(self) -> dict[str, tuple]:
        """Where the columns lie (:func:`~tidal.ops.reorder_gather.layout`), worked out at the first release
        that copies them; ``syncs`` then names the columns that are the sync times themselves."""
        if self._layout is None:
            self._layout = layout(self.columns)
            self.syncs = {k for k, v in self.columns.items() if _is_sync(v, self.sync, self.sync)}
        return self._layout

    def local(self, rows: np.ndarray) -> np.ndarray:
        return rows - self.first if self.rows is None else np.searchsorted(self.rows, rows)

    def others(self, pos) -> np.ndarray:
        if self.other is START_EDGES:
            return np.full(len(range(self.length)[pos]) if isinstance(pos, slice) else len(pos), INFINITY, np.int64)
        return self.sync[pos] + 1 if self.other is None else self.other[pos]

    def ids(self, pos: np.ndarray) -> np.ndarray:
        return pos + self.first if self.rows is None else self.rows[pos]


@nb.njit(cache=True, nogil=True)
def _index(rows, compact, split, base, alive, index):
    """Positions in the pieces' index space of ``rows`` (ids below ``split`` are in the compact piece
    ``compact``, found by binary search; the others at ``id - base``), marking them released."""
    lo = alive.shape[0]
    hi = 0
    for k in range(rows.shape[0]):
        i = _position(rows[k], compact, split, base)
        index[k] = i
        alive[i] = False
        lo = min(lo, i)
        hi = max(hi, i)
    return lo, hi


@nb.njit(cache=True, nogil=True)
def _gather2(a, b, index, out):
    """``out[k]`` = position ``index[k]`` of ``a`` followed by ``b``."""
    split = a.shape[0]
    for k in range(index.shape[0]):
        i = index[k]
        out[k] = a[i] if i < split else b[i - split]


def _take(arrays: list[pa.Array], index: np.ndarray) -> pa.Array:
    """Position ``index`` of the arrays one after the other: one compiled gather for numbers and times
    without nulls from one or two arrays, else Arrow's take."""
    t = arrays[0].type
    if len(arrays) <= 2 and _fixed_width(t) and all(a.type == t and not a.null_count for a in arrays):
        width = np.dtype(f"i{t.bit_width // 8}")
        out = _pool_empty((len(index),), width)
        first = _values(arrays[0], width)
        _gather2(first, _values(arrays[1], width) if len(arrays) == 2 else first[:0], index, out)
        return pa.Array.from_buffers(t, len(index), [None, pa.py_buffer(out)])
    if len(arrays) == 1:
        return arrays[0].take(pa.array(index, pa.int64()))
    taken = pa.chunked_array(arrays).take(pa.array(index, pa.int64()))
    return taken.combine_chunks() if taken.num_chunks != 1 else taken.chunk(0)


_NONE = np.empty(0, dtype=np.int64)


def _others(used: list[_Piece], index: np.ndarray):
    """The other times at ``index`` of the pieces one after the other (start edges: START_EDGES, none read)."""
    if all(p.starts for p in used):
        return START_EDGES
    if len(used) == 1:
        return used[0].other[index]
    return np.concatenate([p.others(slice(None)) for p in used])[index]


def _is_sync(col: pa.Array, sync: np.ndarray | None, times: np.ndarray | None) -> bool:
    """Whether ``col`` holds exactly the piece's sync times: the same memory, 8 bytes wide, no nulls."""
    if times is None or sync is None or col.null_count or len(col) != len(sync) or not _fixed_width(col.type):
        return False
    if col.type.bit_width != 64:
        return False
    return col.buffers()[1].address + 8 * col.offset == sync.__array_interface__["data"][0]


def _sync_column(col: pa.Array, times: np.ndarray) -> pa.Array:
    return pa.Array.from_buffers(col.type, len(times), [None, pa.py_buffer(np.ascontiguousarray(times))])


class PayloadStore:
    """The other times and payload columns of buffered events, looked up by sorter row id."""

    def __init__(self, slack: int = _SLACK, fuse_from: int = _FUSE_FROM):
        self.slack = slack
        self.fuse_from = fuse_from
        self.write_other = False  # points: the releasing pass also writes their other times (every consumer reads them)
        self.streaming = False  # a large release is written past the caches (every consumer keeps it, reads it later)
        self.next_row = 0
        self._index = _NONE
        self._reset([])

    def _reset(self, pieces: list[_Piece], alive: np.ndarray | None = None) -> None:
        self.pieces = pieces
        lengths = np.fromiter((p.length for p in pieces), dtype=np.int64, count=len(pieces))
        self.offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        self.firsts = np.fromiter((p.first for p in pieces), dtype=np.int64, count=len(pieces))
        self.alive = np.ones(int(self.offsets[-1]), dtype=bool) if alive is None else alive
        self.held = int(np.count_nonzero(self.alive))

    @property
    def pinned(self) -> int:
        """Rows held by the pieces' arrays, live or not."""
        return len(self.alive)

    def add(
        self,
        other: np.ndarray | None,
        columns: dict[str, pa.Array],
        present: np.ndarray | None = None,
        sync: np.ndarray | None = None,
        absent: np.ndarray | None = None,
    ) -> int:
        """Keep the rows of a batch (those at ``present``, or all but those at ``absent``): the row at
        position ``i`` gets id ``first + i``; returns ``first``. Nothing is copied. ``other`` None: the
        rows are points (``sync + 1``; give the batch's ``sync``)."""
        length = len(other) if other is not None and other is not START_EDGES else len(sync)
        first = self.next_row
        k = length if present is None else len(present)
        if absent is not None:
            k -= len(absent)
        if k == 0:
            return first
        piece = _Piece(first, length, None, other, sync, columns)
        if present is None:
            live = np.ones(length, dtype=bool)
            if absent is not None:
                live[absent] = False
        else:
            live = np.zeros(length, dtype=bool)
            live[present] = True
        self.pieces.append(piece)
        self.offsets = np.append(self.offsets, self.offsets[-1] + length)
        self.firsts = np.append(self.firsts, first)
        self.alive = np.concatenate([self.alive, live]) if len(self.alive) else live
        self.next_row += length
        self.held += k
        return first

    def _space(self) -> tuple[np.ndarray, int, int]:
        """How row ids map to the pieces' index space: ids below ``split`` are in the compact piece at the
        front (``compact``: its sorted ids), the others at ``id - base`` (pieces leave from the front only)."""
        head = self.pieces[0]
        if head.rows is None:
            return _NONE, head.first, head.first
        split = self.pieces[1].first if len(self.pieces) > 1 else self.next_row
        return head.rows, split, split - head.length

    def gather(
        self, rows: np.ndarray, increasing: bool = False, times: np.ndarray | None = None
    ) -> tuple[np.ndarray | None, dict[str, pa.Array]]:
        """Other times and columns of ``rows`` (in that order, ``increasing`` if the caller knows they
        are); the rows are then forgotten. The other times are None when every row is a point (its
        other time is its sync time + 1), START_EDGES when every row is a start edge. ``times``: the
        rows' sync times; a column that is the sync times themselves (the same memory: the time column the
        events were read from) is not gathered."""
        n = len(rows)
        if not n:
            raise ValueError("gather needs at least one row")
        index = np.empty(n, dtype=np.int64)
        lo, hi = _index(rows, *self._space(), self.alive, index)
        other, cols = self._select(index, lo, hi, increasing, times)
        self._forget(n)
        return other, cols

    def release(
        self, t1: np.ndarray, r1: np.ndarray, t2: np.ndarray, r2: np.ndarray
    ) -> list[tuple[np.ndarray, np.ndarray | None, dict[str, pa.Array]]]:
        """The rows of two sorted (time, row id) sequences, merged by (time, row id) and mapped to their
        places in the pieces in one compiled pass, then one gather per column: parts ``(times, other times,
        columns)`` (as :meth:`gather`; rows in increasing order, as input in order gives, make a part per
        piece, so that a run of consecutive rows is handed on as zero-copy slices); the rows are then forgotten."""
        n = len(t1) + len(t2)
        if not n:
            raise ValueError("release needs at least one row")
        if len(t1) and n >= self.fuse_from:
            part = self._release_fused(t1, r1, t2, r2)
            if part is not None:
                self._forget(n)
                return [part]
        self._index = scratch(self._index, n)  # positions: reused; the times are handed on (Arrow's pool)
        times, index = _pool_empty((n,)), self._index[:n]
        lo, hi, increasing = _merge_map(t1, r1, t2, r2, *self._space(), self.alive, times, index)
        if increasing and hi >= self.offsets[1]:
            a = int(np.searchsorted(self.offsets, lo, side="right")) - 1
            b = int(np.searchsorted(self.offsets, hi, side="right")) - 1
            cuts = [0, *np.searchsorted(index, self.offsets[a + 1 : b + 1]).tolist(), n]
            parts = [
                (times[s:e], *self._select(index[s:e], int(index[s]), int(index[e - 1]), True, times[s:e]))
                for s, e in zip(cuts[:-1], cuts[1:], strict=True)
                if e > s
            ]
        else:
            parts = [(times, *self._select(index, lo, hi, increasing, times))]
        self._forget(n)
        return parts

    def _release_fused(self, t1, r1, t2, r2):
        """:meth:`release` as one compiled pass that also copies every fixed-width column (and the other
        times) of the rows, in one part; None when there is nothing to copy or the pieces' types differ.
        Some rows come from the sorter, so the positions are not one run in order: nothing could be sliced."""
        lo_id, hi_id = int(r1.min()), int(r1.max())
        if len(r2):
            lo_id, hi_id = min(lo_id, int(r2[0])), max(hi_id, int(r2[-1]))
        a = int(np.searchsorted(self.firsts, lo_id, side="right")) - 1
        b = int(np.searchsorted(self.firsts, hi_id, side="right")) - 1
        used = self.pieces[a : b + 1]
        n = len(t1) + len(t2)
        names = list(used[0].columns)
        layouts = [p.layout() for p in used]
        skip = set.intersection(*(p.syncs for p in used))
        columns = {k: [lay[k] for lay in layouts] for k in names if k not in skip}
        mixed = False
        plus1 = None
        if all(p.other is None for p in used):
            other = plus1 = np.empty(n, dtype=np.int64) if self.write_other else None
        elif all(p.starts for p in used):
            other = START_EDGES
        elif all(
            isinstance(p.other, np.ndarray) and p.other.dtype == np.int64 and p.other.flags.c_contiguous for p in used
        ):
            other, columns[_OTHER] = None, [numbers(p.other) for p in used]
        else:
            other, mixed = None, True
        if not columns:
            return None
        plan = Plan.make(columns)
        if plan is None:
            return None
        index = _NONE
        if plan.taken or mixed:
            self._index = scratch(self._index, n)
            index = self._index[:n]
        starts = self.offsets[a : b + 2]
        times = np.empty(n, dtype=np.int64)  # numpy memory, as the columns (reorder_gather._memory_of)
        _, _, copied = merge_gather(
            plan, t1, r1, t2, r2, self._space(), self.alive, starts, times, index, plus1, self.streaming
        )
        if len(index) and a:
            index -= starts[0]
        if mixed:
            other = _others(used, index)
        elif _OTHER in copied:
            other = np.frombuffer(copied.pop(_OTHER).buffers()[1], np.int64, count=n)
        cols = {}
        for k in names:
            if k in skip:
                cols[k] = _sync_column(used[0].columns[k], times)
            elif k in copied:
                cols[k] = copied[k]
            else:
                cols[k] = _take([p.columns[k] for p in used], index)
        return times, other, cols

    def _forget(self, n: int) -> None:
        """``n`` rows were handed back: drop the pieces they emptied, compact when few rows pin many."""
        self.held -= n
        self._trim()
        newest = self.pieces[-1].length if self.pieces and self.pieces[-1].rows is None else 0
        if self.pinned - newest > 2 * self.held + self.slack:
            self._compact()

    def _select(
        self, index: np.ndarray, lo: int, hi: int, increasing: bool, times: np.ndarray | None
    ) -> tuple[np.ndarray | None, dict[str, pa.Array]]:
        """Other times and columns at the positions ``index`` (``lo``..``hi``) of the index space."""
        n = len(index)
        pieces = self.pieces
        if hi < self.offsets[1]:  # one piece (the first)
            used, start = [pieces[0]], 0
        else:
            a = int(np.searchsorted(self.offsets, lo, side="right")) - 1
            b = int(np.searchsorted(self.offsets, hi, side="right")) - 1
            used, start = pieces[a : b + 1], int(self.offsets[a])
            if start:
                index -= start
        if len(used) == 1:
            piece = used[0]
            if index[0] + n - 1 == index[-1] and (increasing or n == 1 or bool((np.diff(index) > 0).all())):
                a = int(index[0])  # one run, in order: zero-copy slices
                other = None if piece.other is None else START_EDGES if piece.starts else piece.other[a : a + n]
                cols = {k: v.slice(a, n) for k, v in piece.columns.items()}
            else:
                other = None if piece.other is None else _others([piece], index)
                cols = {
                    k: _sync_column(v, times) if _is_sync(v, piece.sync, times) else _take([v], index)
                    for k, v in piece.columns.items()
                }
        else:
            other = None if all(p.other is None for p in used) else _others(used, index)
            cols = {}
            for k in used[0].columns:
                arrays = [p.columns[k] for p in used]
                if all(_is_sync(a, p.sync, times) for a, p in zip(arrays, used, strict=True)):
                    cols[k] = _sync_column(arrays[0], times)
                else:
                    cols[k] = _take(arrays, index)
        return other, cols

    def _trim(self) -> None:
        """Drop the pieces at the front that hold no live row."""
        drop = 0
        while drop < len(self.pieces) and not self.alive[self.offsets[drop] : self.offsets[drop + 1]].any():
            drop += 1
        if drop:
            cut = self.offsets[drop]
            self.pieces = self.pieces[drop:]
            self.offsets = self.offsets[drop:] - cut
            self.firsts = self.firsts[drop:]
            self.alive = self.alive[cut:]

    def _compact(self) -> None:
        """Copy the live rows of every piece into one piece (row ids stay increasing)."""
        if not self.pieces:
            return
        rows, other, cols = self._live(self.pieces)
        if all(p.other is None for p in self.pieces):  # points stay points: keep their sync times
            piece = _Piece(int(rows[0]), len(rows), rows, None, other - 1, cols)
        else:
            piece = _Piece(int(rows[0]), len(rows), rows, other, None, cols)
        self._reset([piece])

    def _live(self, pieces: list[_Piece]) -> tuple[np.ndarray, np.ndarray, dict[str, pa.Array]]:
        """Row ids, other times and columns of the live rows of ``pieces`` (in row id order), copied."""
        index = np.flatnonzero(self.alive)
        ids, others = [], []
        for i, p in enumerate(pieces):
            a, b = np.searchsorted(index, self.offsets[i : i + 2])
            pos = index[a:b] - self.offsets[i]
            ids.append(p.ids(pos))
            others.append(p.others(pos))
        cols = {k: _take([p.columns[k] for p in pieces], index) for k in pieces[0].columns}
        return np.concatenate(ids), np.concatenate(others), cols

    def live(self) -> list[tuple[np.ndarray, np.ndarray, dict[str, pa.Array]]]:
        """Row ids, other times and columns of the live rows, one part per piece (copied)."""
        out = []
        for i, p in enumerate(self.pieces):
            pos = np.flatnonzero(self.alive[self.offsets[i] : self.offsets[i + 1]])
            idx = pa.array(pos, pa.int64())
            out.append((p.ids(pos), p.others(pos), {k: v.take(idx) for k, v in p.columns.items()}))
        return out

    def snapshot(self) -> dict:
        return {
            "next_row": self.next_row,
            "segments": [
                {
                    "rows": rows,
                    "other": other,
                    "columns": pa.RecordBatch.from_arrays(list(cols.values()), names=list(cols)),
                }
                for rows, other, cols in self.live()
            ],
        }

    def restore(self, state: dict) -> None:
        self.next_row = int(state["next_row"])
        parts = [s for s in state["segments"] if len(s["rows"])]
        if not parts:
            self._reset([])
            return
        rows = np.concatenate([np.asarray(s["rows"], dtype=np.int64) for s in parts])
        other = np.concatenate([np.asarray(s["other"], dtype=np.int64) for s in parts])
        names = parts[0]["columns"].schema.names
        cols = {n: pa.concat_arrays([s["columns"].column(i) for s in parts]) for i, n in enumerate(names)}
        self._reset([_Piece(int(rows[0]), len(rows), rows, other, None, cols)])
