"""The payload store of the reorder operator: buffered events' other times and columns, by sorter row id.

No temporal semantics of its own: the Impatience sorter (:mod:`tidal.ops.impatience`) moves only
``(time, row id)`` pairs; this store keeps the rest of each buffered event and hands it back, in the
order the sorter releases the row ids, when a punctuation releases them. A row is handed back once
and then forgotten.

Nothing is copied when rows arrive: the store keeps a reference to each pushed batch's columns (a
*piece*: the batch's arrays, the positions of the pushed rows in them, and the row ids they got).
A release finds each row's piece and position and takes every column once (one Arrow take over the
pieces it touches); when the released rows are one contiguous run of one piece, in order (input
that arrived in order), the columns are handed on as zero-copy slices. A piece is dropped when its
last row is released. A piece pins its whole batch, so when the rows the pieces hold exceed twice
the live rows plus ``slack``, the live rows are copied into one compact piece (each compaction
frees at least as many rows as it copies: a row is copied a constant number of times on average).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

_SLACK = 65_536  # rows the pieces may hold on top of twice the live rows before compacting


class _Piece:
    """Rows ``first .. first + n - 1`` (or the sorted ids ``rows``) at ``pos`` (None: 0..n-1) of ``columns``."""

    __slots__ = ("first", "n", "rows", "pos", "other", "sync", "columns", "alive", "n_alive", "length")

    def __init__(self, first, n, rows, pos, other, columns, length, sync=None):
        self.first = first
        self.n = n
        self.rows = rows  # None: consecutive ids from first
        self.pos = pos  # None: row k of the piece is position k of the arrays
        self.other = other  # whole arrays, indexed like the columns (None: points, other = time + 1)
        self.sync = sync  # the sync times, when other is None
        self.columns = columns
        self.alive = None  # None: every row alive; else a bool mask over the piece's rows
        self.n_alive = n
        self.length = length  # rows pinned by the arrays

    def local(self, rows: np.ndarray) -> np.ndarray:
        return rows - self.first if self.rows is None else np.searchsorted(self.rows, rows)

    def positions(self, local: np.ndarray) -> np.ndarray:
        return local if self.pos is None else self.pos[local]

    def release(self, local: np.ndarray) -> None:
        if self.alive is None:
            self.alive = np.ones(self.n, dtype=bool)
        self.alive[local] = False
        self.n_alive -= len(local)

    def others(self, pos: np.ndarray) -> np.ndarray:
        return self.sync[pos] + 1 if self.other is None else self.other[pos]

    def row_ids(self) -> np.ndarray:
        return np.arange(self.first, self.first + self.n, dtype=np.int64) if self.rows is None else self.rows

    def live(self) -> tuple[np.ndarray, np.ndarray]:
        """Row ids and array positions of the live rows (increasing)."""
        keep = np.arange(self.n) if self.alive is None else np.flatnonzero(self.alive)
        return self.row_ids()[keep], self.positions(keep)


def _take(arrays: list[pa.Array], index: np.ndarray) -> pa.Array:
    if len(arrays) == 1:
        return arrays[0].take(pa.array(index, pa.int64()))
    taken = pa.chunked_array(arrays).take(pa.array(index, pa.int64()))
    return taken.combine_chunks() if taken.num_chunks != 1 else taken.chunk(0)


class PayloadStore:
    """The other times and payload columns of buffered events, looked up by sorter row id."""

    def __init__(self, slack: int = _SLACK):
        self.pieces: list[_Piece] = []
        self.next_row = 0
        self.slack = slack
        self.held = 0
        self.pinned = 0  # rows held by the pieces' arrays, live or not

    def add(
        self,
        other: np.ndarray | None,
        columns: dict[str, pa.Array],
        present: np.ndarray | None = None,
        sync: np.ndarray | None = None,
    ) -> None:
        """Keep the rows of a batch (those at ``present``, or all); they take the next row ids. Nothing is
        copied. ``other`` None: the rows are points, ``sync + 1`` (give the batch's ``sync``)."""
        length = len(other) if other is not None else len(sync)
        k = length if present is None else len(present)
        if k == 0:
            return
        piece = _Piece(self.next_row, k, None, present, other, columns, length, sync)
        self.pieces.append(piece)
        self.next_row += k
        self.held += k
        self.pinned += piece.length

    def gather(self, rows: np.ndarray) -> tuple[np.ndarray | None, dict[str, pa.Array]]:
        """Other times and columns of ``rows`` (in that order); the rows are then forgotten. The other
        times are None when every row is a point (its other time is its sync time + 1)."""
        n = len(rows)
        pieces = self.pieces
        if len(pieces) == 1:
            which = None
            lo = hi = 0
        else:
            firsts = np.fromiter((p.first for p in pieces), dtype=np.int64, count=len(pieces))
            which = np.searchsorted(firsts, rows, side="right") - 1
            lo, hi = int(which.min()), int(which.max())
            if lo == hi:
                which = None
        if which is None:
            piece = pieces[lo]
            local = piece.local(rows)
            pos = piece.positions(local)
            piece.release(local)
            if n and pos[0] + n - 1 == pos[-1] and (n == 1 or bool((np.diff(pos) > 0).all())):
                a = int(pos[0])  # one run, in order: zero-copy slices
                other = None if piece.other is None else piece.other[a : a + n]
                cols = {k: v.slice(a, n) for k, v in piece.columns.items()}
            else:
                other = None if piece.other is None else piece.other[pos]
                idx = pa.array(pos, pa.int64())
                cols = {k: v.take(idx) for k, v in piece.columns.items()}
        else:
            used = pieces[lo : hi + 1]
            points = all(p.other is None for p in used)
            index = np.empty(n, dtype=np.int64)
            other = None if points else np.empty(n, dtype=np.int64)
            offset = 0
            for j, piece in enumerate(used):
                mask = which == lo + j
                if mask.any():
                    local = piece.local(rows[mask])
                    pos = piece.positions(local)
                    piece.release(local)
                    index[mask] = pos + offset
                    if not points:
                        other[mask] = piece.others(pos)
                offset += piece.length
            cols = {k: _take([p.columns[k] for p in used], index) for k in used[0].columns}
        self.held -= n
        if any(p.n_alive == 0 for p in pieces):
            for p in pieces:
                if p.n_alive == 0:
                    self.pinned -= p.length
            self.pieces = [p for p in pieces if p.n_alive]
        if self.pinned > 2 * self.held + self.slack:
            self._compact()
        return other, cols

    def _compact(self) -> None:
        """Copy the live rows of every piece into one piece (row ids stay increasing)."""
        if not self.pieces:
            return
        rows, other, cols = self._live(self.pieces)
        if all(p.other is None for p in self.pieces):  # points stay points: keep their sync times
            piece = _Piece(int(rows[0]), len(rows), rows, None, None, cols, len(rows), other - 1)
        else:
            piece = _Piece(int(rows[0]), len(rows), rows, None, other, cols, len(rows))
        self.pieces = [piece]
        self.pinned = len(rows)

    @staticmethod
    def _live(pieces: list[_Piece]) -> tuple[np.ndarray, np.ndarray, dict[str, pa.Array]]:
        """Row ids, other times and columns of the live rows of ``pieces`` (in row id order), copied."""
        ids, index, others, offset = [], [], [], 0
        for p in pieces:
            r, pos = p.live()
            ids.append(r)
            index.append(pos + offset)
            others.append(p.others(pos))
            offset += p.length
        index = np.concatenate(index)
        cols = {k: _take([p.columns[k] for p in pieces], index) for k in pieces[0].columns}
        return np.concatenate(ids), np.concatenate(others), cols

    def live(self) -> list[tuple[np.ndarray, np.ndarray | None, dict[str, pa.Array]]]:
        out = []
        for p in self.pieces:
            rows, pos = p.live()
            idx = pa.array(pos, pa.int64())
            out.append((rows, p.others(pos), {k: v.take(idx) for k, v in p.columns.items()}))
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
        self.pieces, self.held, self.pinned = [], 0, 0
        for s in state["segments"]:
            rb = s["columns"]
            cols = {n: rb.column(i) for i, n in enumerate(rb.schema.names)}
            rows = np.asarray(s["rows"], dtype=np.int64)
            if len(rows):
                other = np.asarray(s["other"], dtype=np.int64)
                self.pieces.append(_Piece(int(rows[0]), len(rows), rows, None, other, cols, len(rows)))
                self.held += len(rows)
                self.pinned += len(rows)
