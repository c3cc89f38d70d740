"""The payload store of the reorder operator: buffered events' other times and columns, by sorter row id.

No temporal semantics of its own: the Impatience sorter (:mod:`tidal.ops.impatience`) moves only
``(time, row id)`` pairs; this store keeps the rest of each buffered event and hands it back, in the
order the sorter releases the row ids, when a punctuation releases them. A row is handed back once
and then forgotten.

Two forms. While every column is fixed-width without nulls (numbers, times), the store is a set of
numpy buffers, one per column, addressed by position: rows are copied in once when they arrive and
taken out once, by one gather per column, when they are released (``DenseStore``). Released rows
leave holes; when the holes outnumber the live rows the live rows are packed to the front (each
packing frees at least as many rows as it copies, so a row is copied a constant number of times
on average). Any other column (strings, nulls, nested types) turns the store into a list of Arrow
segments merged in a binary-counter pattern (``SegmentStore``).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from .join.store import _fixed_width, _take_values, _values

_SLACK = 65_536  # holes tolerated on top of the live rows before packing


class DenseStore:
    """Buffered rows in numpy buffers. Positions ``[0, m)`` hold rows ``sparse`` (sorted row ids, left by
    the last packing); positions ``[m, size)`` hold rows ``dense_first, dense_first + 1, ...``."""

    def __init__(self, schema: pa.Schema, next_row: int = 0, slack: int = _SLACK):
        self.schema = schema
        self.slack = slack
        self.dtypes = [np.dtype(f"i{f.type.bit_width // 8}") for f in schema]
        self.bufs = [np.empty(0, d) for d in self.dtypes]
        self.other = np.empty(0, np.int64)
        self.alive = np.empty(0, bool)
        self.sparse = np.empty(0, np.int64)
        self.dense_first = next_row
        self.next_row = next_row
        self.size = 0
        self.held = 0

    @staticmethod
    def fits(schema: pa.Schema, columns: dict[str, pa.Array]) -> bool:
        return list(columns) == schema.names and all(
            c.type == f.type and not c.null_count for c, f in zip(columns.values(), schema, strict=True)
        )

    def _room(self, k: int) -> None:
        if self.size + k <= len(self.other):
            return
        if self.size - self.held > self.held:
            self._pack()
            if self.size + k <= len(self.other):
                return
        cap = max(self.size + k, 2 * len(self.other), 1024)
        for j, buf in enumerate(self.bufs):
            grown = np.empty(cap, buf.dtype)
            grown[: self.size] = buf[: self.size]
            self.bufs[j] = grown
        for name in ("other", "alive"):
            buf = getattr(self, name)
            grown = np.empty(cap, buf.dtype)
            grown[: self.size] = buf[: self.size]
            setattr(self, name, grown)

    def add(self, other: np.ndarray, columns: dict[str, pa.Array], present: np.ndarray | None) -> None:
        """Append the rows of a batch (those at ``present``, or all): they get the next row ids."""
        k = len(other) if present is None else len(present)
        if k == 0:
            return
        self._room(k)
        lo, hi = self.size, self.size + k
        runs = None
        if present is not None and len(other) - k <= max(8, len(other) >> 10):
            # a few rows left out (late ones): copy the runs between them rather than gather every row
            cut = np.flatnonzero(np.diff(present) != 1) + 1
            firsts = np.r_[0, cut]
            runs = list(zip(firsts.tolist(), np.r_[cut, k].tolist(), present[firsts].tolist(), strict=True))
        for buf, col in zip(self.bufs, columns.values(), strict=True):
            values = _values(col, buf.dtype)
            if present is None:
                buf[lo:hi] = values
            elif runs is not None:
                for a, b, src in runs:
                    buf[lo + a : lo + b] = values[src : src + b - a]
            else:
                _take_values(values, present, out=buf[lo:hi])
        self.other[lo:hi] = other if present is None else other[present]
        self.alive[lo:hi] = True
        self.size, self.held, self.next_row = hi, self.held + k, self.next_row + k

    def _positions(self, rows: np.ndarray) -> np.ndarray:
        m = len(self.sparse)
        pos = rows - (self.dense_first - m)
        if m:
            old = rows < self.dense_first
            if old.any():
                pos[old] = np.searchsorted(self.sparse, rows[old])
        return pos

    def gather(self, rows: np.ndarray) -> tuple[np.ndarray, dict[str, pa.Array]]:
        pos = self._positions(rows)
        self.alive[pos] = False
        self.held -= len(pos)
        other = _take_values(self.other[: self.size], pos)
        cols = {
            f.name: pa.Array.from_buffers(f.type, len(pos), [None, pa.py_buffer(_take_values(buf[: self.size], pos))])
            for f, buf in zip(self.schema, self.bufs, strict=True)
        }
        if self.held == 0:
            self.size, self.sparse, self.dense_first = 0, self.sparse[:0], self.next_row
        elif self.size - self.held > self.held + self.slack:
            self._pack()
        return other, cols

    def _row_ids(self, pos: np.ndarray) -> np.ndarray:
        m = len(self.sparse)
        ids = pos + (self.dense_first - m)
        if m:
            old = pos < m
            ids[old] = self.sparse[pos[old]]
        return ids

    def _pack(self) -> None:
        """Move the live rows to the front (they become the sparse part)."""
        keep = np.flatnonzero(self.alive[: self.size])
        self.sparse = self._row_ids(keep)
        n = len(keep)
        for buf in self.bufs:
            buf[:n] = _take_values(buf[: self.size], keep)
        self.other[:n] = self.other[keep]
        self.alive[:n] = True
        self.size = n
        self.dense_first = self.next_row

    def live(self) -> tuple[np.ndarray, np.ndarray, dict[str, pa.Array]]:
        """Row ids, other times and columns of the live rows (increasing row ids)."""
        keep = np.flatnonzero(self.alive[: self.size])
        cols = {
            f.name: pa.Array.from_buffers(f.type, len(keep), [None, pa.py_buffer(_take_values(buf[: self.size], keep))])
            for f, buf in zip(self.schema, self.bufs, strict=True)
        }
        return self._row_ids(keep), self.other[keep], cols


class _Segment:
    """Payload of buffered events with consecutive-or-sorted row ids."""

    __slots__ = ("first", "rows", "other", "columns", "alive", "n_alive")

    def __init__(self, first, rows, other, columns, alive, n_alive):
        self.first = first
        self.rows = rows  # None: rows first, first+1, ... (a fresh batch)
        self.other = other
        self.columns = columns
        self.alive = alive
        self.n_alive = n_alive

    def positions(self, rows: np.ndarray) -> np.ndarray:
        return rows - self.first if self.rows is None else np.searchsorted(self.rows, rows)

    def row_ids(self) -> np.ndarray:
        n = len(self.other)
        return np.arange(self.first, self.first + n, dtype=np.int64) if self.rows is None else self.rows


def _merge(a: _Segment, b: _Segment) -> _Segment:
    """One segment holding the live rows of a then b (row ids stay increasing)."""
    ia, ib = np.flatnonzero(a.alive), np.flatnonzero(b.alive)
    rows = np.concatenate([a.row_ids()[ia], b.row_ids()[ib]])
    other = np.concatenate([a.other[ia], b.other[ib]])
    ta, tb = pa.array(ia, pa.int64()), pa.array(ib, pa.int64())
    cols = {k: pa.concat_arrays([a.columns[k].take(ta), b.columns[k].take(tb)]) for k in a.columns}
    return _Segment(int(rows[0]), rows, other, cols, np.ones(len(rows), dtype=bool), len(rows))


class SegmentStore:
    """Each pushed batch becomes a segment; neighbouring segments are merged (keeping only live rows)
    when the older one is not more than twice the newer, so a row is copied O(log n) times and
    released rows do not pile up."""

    def __init__(self, next_row: int = 0):
        self.segments: list[_Segment] = []
        self.next_row = next_row

    def add_segment(self, rows: np.ndarray, other: np.ndarray, columns: dict[str, pa.Array]) -> None:
        if len(rows):
            self.segments.append(_Segment(int(rows[0]), rows, other, columns, np.ones(len(rows), bool), len(rows)))

    def add(self, other: np.ndarray, columns: dict[str, pa.Array], present: np.ndarray | None) -> None:
        if present is not None:
            idx = pa.array(present, pa.int64())
            other, columns = other[present], {c: v.take(idx) for c, v in columns.items()}
        n = len(other)
        if n == 0:
            return
        self.segments.append(_Segment(self.next_row, None, other, columns, np.ones(n, dtype=bool), n))
        self.next_row += n
        segs = self.segments
        while len(segs) >= 2 and segs[-2].n_alive <= 2 * segs[-1].n_alive:
            b = segs.pop()
            segs[-1] = _merge(segs[-1], b)

    def gather(self, rows: np.ndarray) -> tuple[np.ndarray, dict[str, pa.Array]]:
        segs = self.segments
        if len(segs) == 1:
            seg_idx = None
        else:
            firsts = np.fromiter((s.first for s in segs), dtype=np.int64, count=len(segs))
            seg_idx = np.searchsorted(firsts, rows, side="right") - 1
            if seg_idx[0] == seg_idx[-1] and (seg_idx == seg_idx[0]).all():
                segs = [segs[int(seg_idx[0])]]
                seg_idx = None
        if seg_idx is None:
            seg = segs[0]
            pos = seg.positions(rows)
            seg.alive[pos] = False
            seg.n_alive -= len(pos)
            idx = pa.array(pos, pa.int64())
            result = seg.other[pos], {k: v.take(idx) for k, v in seg.columns.items()}
        else:
            order = np.argsort(seg_idx, kind="stable")
            grouped = seg_idx[order]
            cuts = np.flatnonzero(np.diff(grouped)) + 1
            others, pieces = [], []
            for lo, hi in zip(np.r_[0, cuts].tolist(), np.r_[cuts, len(order)].tolist(), strict=True):
                seg = segs[int(grouped[lo])]
                pos = seg.positions(rows[order[lo:hi]])
                seg.alive[pos] = False
                seg.n_alive -= len(pos)
                idx = pa.array(pos, pa.int64())
                others.append(seg.other[pos])
                pieces.append({k: v.take(idx) for k, v in seg.columns.items()})
            inverse = np.empty(len(order), dtype=np.int64)
            inverse[order] = np.arange(len(order), dtype=np.int64)
            inv = pa.array(inverse, pa.int64())
            result = (
                np.concatenate(others)[inverse],
                {k: pa.concat_arrays([p[k] for p in pieces]).take(inv) for k in pieces[0]},
            )
        self.segments = [s for s in self.segments if s.n_alive]
        return result

    @property
    def held(self) -> int:
        return sum(s.n_alive for s in self.segments)

    def live(self) -> list[tuple[np.ndarray, np.ndarray, dict[str, pa.Array]]]:
        out = []
        for s in self.segments:
            keep = pa.array(s.alive)
            out.append((s.row_ids()[s.alive], s.other[s.alive], {k: v.filter(keep) for k, v in s.columns.items()}))
        return out


class PayloadStore:
    """The other times and payload columns of buffered events, looked up by sorter row id: a
    ``DenseStore`` while the columns allow it, a ``SegmentStore`` from the first batch that does not."""

    def __init__(self, slack: int = _SLACK):
        self.impl: DenseStore | SegmentStore | None = None
        self.next_row = 0
        self.slack = slack  # holes a dense store tolerates on top of its live rows

    def add(self, other: np.ndarray, columns: dict[str, pa.Array], present: np.ndarray | None = None) -> None:
        """Store the rows of a batch (those at ``present``, or all); they take the next row ids."""
        if self.impl is None:
            schema = pa.schema([pa.field(k, v.type) for k, v in columns.items()])
            dense = all(_fixed_width(f.type) for f in schema) and DenseStore.fits(schema, columns)
            self.impl = DenseStore(schema, self.next_row, self.slack) if dense else SegmentStore(self.next_row)
        elif isinstance(self.impl, DenseStore) and not DenseStore.fits(self.impl.schema, columns):
            self._to_segments()
        self.impl.add(other, columns, present)
        self.next_row = self.impl.next_row

    def _to_segments(self) -> None:
        dense = self.impl
        seg = SegmentStore(dense.next_row)
        rows, other, cols = dense.live()
        seg.add_segment(rows, other, cols)
        self.impl = seg

    def gather(self, rows: np.ndarray) -> tuple[np.ndarray, dict[str, pa.Array]]:
        """Other times and columns of ``rows`` (in that order); the rows are then forgotten."""
        return self.impl.gather(rows)

    @property
    def held(self) -> int:
        return 0 if self.impl is None else self.impl.held

    def snapshot(self) -> dict:
        if self.impl is None:
            parts = []
        elif isinstance(self.impl, DenseStore):
            parts = [self.impl.live()] if self.impl.held else []
        else:
            parts = self.impl.live()
        return {
            "next_row": self.next_row,
            "segments": [
                {
                    "rows": rows,
                    "other": other,
                    "columns": pa.RecordBatch.from_arrays(list(cols.values()), names=list(cols)),
                }
                for rows, other, cols in parts
            ],
        }

    def restore(self, state: dict) -> None:
        self.next_row = int(state["next_row"])
        parts = []
        for s in state["segments"]:
            rb = s["columns"]
            cols = {n: rb.column(i) for i, n in enumerate(rb.schema.names)}
            parts.append((np.asarray(s["rows"], dtype=np.int64), np.asarray(s["other"], dtype=np.int64), cols))
        schema = pa.schema([pa.field(k, v.type) for k, v in parts[0][2].items()]) if parts else None
        if not parts:
            self.impl = None
        elif all(_fixed_width(f.type) for f in schema) and all(DenseStore.fits(schema, c) for _, _, c in parts):
            self.impl = DenseStore(schema, self.next_row, self.slack)
            for _, other, cols in parts:
                self.impl.add(other, cols, None)
            self.impl.sparse = np.concatenate([rows for rows, _, _ in parts])
            self.impl.dense_first = self.impl.next_row = self.next_row
        else:
            self.impl = SegmentStore(self.next_row)
            for rows, other, cols in parts:
                self.impl.add_segment(rows, other, cols)
