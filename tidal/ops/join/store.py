"""The per-side payload store of a join: the rows its state refers to, by row number."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from ...core.batch import EventBatch, gather
from .stage_kernels import _gather_into

_KEY_COL = "__key"  # a grouped input's group key and hash are stored beside its payload
_HASH_COL = "__hash"


def _fixed_width(t: pa.DataType) -> bool:
    """Numbers and times of 1, 2, 4 or 8 bytes: the columns a store can keep as numpy buffers."""
    if not (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_temporal(t)):
        return False
    try:
        return t.bit_width in (8, 16, 32, 64)
    except ValueError:
        return False


def _values(col: pa.Array, dtype: np.dtype) -> np.ndarray:
    """The value buffer of a fixed-width column without nulls, as signed integers of its width (no copy)."""
    return np.frombuffer(col.buffers()[1], dtype, count=len(col), offset=col.offset * dtype.itemsize)


def _pool_empty(shape: tuple[int, ...], dtype=np.int64) -> np.ndarray:
    """An uninitialised array in memory from Arrow's pool, which keeps freed pages for reuse (fresh numpy
    memory of output size goes back to the system when freed and is faulted in again for the next chunk)."""
    dtype = np.dtype(dtype)
    n = int(np.prod(shape))
    return np.frombuffer(pa.allocate_buffer(max(n, 1) * dtype.itemsize), dtype, count=n).reshape(shape)


def _take_values(values: np.ndarray, rows: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """``values[rows]`` (rows valid int64 positions) by one compiled loop per value width, into ``out`` or pool
    memory."""
    if out is None:
        out = _pool_empty((len(rows),), values.dtype)
    width = f"i{values.dtype.itemsize}"
    _gather_into(values.view(width), rows.astype(np.int64, copy=False), out.view(width))
    return out


class _Store:
    """The payload rows of one input that state refers to, by row number.

    While every stored column is fixed-width with no nulls (numbers, times), the present rows
    are copied into growing numpy buffers and an output's rows are gathered by a compiled loop
    (Arrow wraps the result without a copy). A column of any other kind (strings,
    nulls, a struct key) makes the store a list of Arrow batches, gathered by Arrow.
    """

    def __init__(self):
        self.batches: list[pa.RecordBatch] = []  # the Arrow form (used when ``dense`` is None)
        self.dense: list[np.ndarray] | None = None  # the numpy form: one buffer per column
        self.matrix: np.ndarray | None = None  # all columns 8 bytes wide: ``dense`` are the rows of this matrix
        self.rows = 0
        self.schema: pa.Schema | None = None

    def append(self, batch: EventBatch) -> int:
        """Store every row of ``batch``: its row ``i`` becomes row ``base + i``; returns ``base``."""
        return self.append_present(batch, None)[0]

    def append_present(self, batch: EventBatch, present: np.ndarray | None) -> tuple[int, bool]:
        """Store the rows of ``batch`` at ``present`` (None: all). Returns ``(base, dense)``: with ``dense``, the
        ``r``-th present row became row ``base + r``; otherwise row ``i`` of the batch became ``base + i``."""
        cols = dict(batch.columns)
        if batch.key is not None:
            cols[_KEY_COL] = batch.key
            cols[_HASH_COL] = pa.array(batch.hash, pa.int64())
        return self._append(cols, len(batch), present)

    def _append(self, cols: dict[str, pa.Array], n: int, present: np.ndarray | None) -> tuple[int, bool]:
        base = self.rows
        if not cols:
            # no payload columns (a side whose fields are all pruned): the rows are only numbered. An Arrow
            # batch without columns has no rows, so storing one would leave the count behind the row numbers
            # the kernels use (their per-row arrays are sized by it)
            if self.schema is None:
                self.schema = pa.schema([])
            self.rows += n if present is None else len(present)
            return base, present is not None
        if self.schema is None:
            self.schema = pa.schema([pa.field(k, v.type) for k, v in cols.items()])
            if cols and all(_fixed_width(v.type) for v in cols.values()):
                self.dense = [np.empty(0, f"i{v.type.bit_width // 8}") for v in cols.values()]
                if all(b.dtype.itemsize == 8 for b in self.dense):
                    self.matrix = np.empty((len(self.dense), 0), np.int64)
        if self.dense is not None and self._fits(cols):
            k = n if present is None else len(present)
            if self.rows + k > len(self.dense[0]):
                size = max(self.rows + k, 2 * len(self.dense[0]), 1024)
                if self.matrix is not None:
                    grown = np.empty((len(self.dense), size), np.int64)
                    grown[:, : self.rows] = self.matrix[:, : self.rows]
                    self.matrix, self.dense = grown, list(grown)
                for j, buf in enumerate(self.dense):
                    if self.matrix is None:
                        grown = np.empty(size, buf.dtype)
                        grown[: self.rows] = buf[: self.rows]
                        self.dense[j] = grown
            for buf, col in zip(self.dense, cols.values(), strict=True):
                if k == 0:
                    break  # (an empty column may have no value buffer at all)
                values = _values(col, buf.dtype)
                if present is None:
                    buf[self.rows : self.rows + k] = values
                else:
                    _take_values(values, present, out=buf[self.rows : self.rows + k])
            self.rows += k
            return base, True
        self._to_arrow()
        dense = present is None
        if present is not None and 2 * len(present) < n:
            # mostly filtered out: store a copy of the present rows rather than all of them
            cols = {name: gather(col, present) for name, col in cols.items()}
            dense = True
        rb = pa.RecordBatch.from_arrays(list(cols.values()), names=list(cols))
        if not rb.schema.equals(self.schema):
            rb = rb.cast(self.schema) if rb.schema.names == self.schema.names else rb
        self.batches.append(rb)
        self.rows += rb.num_rows
        if len(self.batches) > 32:
            self.batches = pa.Table.from_batches(self.batches).combine_chunks().to_batches()
        return base, dense

    def _fits(self, cols: dict[str, pa.Array]) -> bool:
        """Whether these columns can join the numpy form (a differing type is cast when that is safe)."""
        if list(cols) != self.schema.names:
            return False
        for field in self.schema:
            col = cols[field.name]
            if col.null_count:
                return False
            if col.type != field.type:
                try:
                    cols[field.name] = col.cast(field.type)
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                    return False
        return True

    def _arrays(self, rows: np.ndarray | None, names=None) -> dict[str, pa.Array]:
        """The numpy form's columns at ``rows`` (None: all stored rows), as Arrow arrays."""
        out = {}
        for buf, f in zip(self.dense, self.schema, strict=True):
            if names is not None and f.name not in names and f.name not in (_KEY_COL, _HASH_COL):
                continue
            if rows is None:
                values = buf[: self.rows].copy()
            else:
                values = _take_values(buf[: self.rows], rows)
            out[f.name] = pa.Array.from_buffers(f.type, len(values), [None, pa.py_buffer(values)])
        return out

    def selection(self, names=None) -> np.ndarray:
        """Positions of the matrix rows an output needs (the ``names`` fields, or all, plus any group key)."""
        keep = [
            i for i, f in enumerate(self.schema) if names is None or f.name in names or f.name in (_KEY_COL, _HASH_COL)
        ]
        return np.array(keep, np.int64)

    def wrap(self, values: np.ndarray, sel: np.ndarray) -> dict[str, pa.Array]:
        """Output rows gathered from the matrix rows ``sel`` (``values[c]`` for field ``sel[c]``) as Arrow columns."""
        fields = [self.schema.field(int(i)) for i in sel]
        return {
            f.name: pa.Array.from_buffers(f.type, values.shape[1], [None, pa.py_buffer(v)])
            for f, v in zip(fields, values, strict=True)
        }

    def _to_arrow(self) -> None:
        """Leave the numpy form for good (a batch came that it cannot hold)."""
        if self.dense is None:
            return
        if self.rows:
            self.batches = [pa.RecordBatch.from_pydict(self._arrays(None), schema=self.schema)]
        self.dense = self.matrix = None

    def take(self, rows: np.ndarray, names: list[str] | None = None) -> dict[str, pa.Array]:
        """The payload of these rows (only the ``names`` fields, plus any group key, when given)."""
        if self.dense is not None:
            return self._arrays(rows, names)
        if not self.batches:
            return {}
        if len(self.batches) > 1:
            # one contiguous batch: compaction keeps the store near the alive rows, so this is cheap
            self.batches = [pa.concat_batches(self.batches)]
        batch = self.batches[0]
        if names is not None:
            batch = batch.select([n for n in batch.schema.names if n in names or n in (_KEY_COL, _HASH_COL)])
        # Arrow's take, not numpy's: its memory pool reuses pages where fresh numpy arrays fault them in
        taken = batch.take(pa.array(rows, pa.int64()))
        return dict(zip(taken.schema.names, taken.columns, strict=True))

    def compact(self, keep: np.ndarray) -> None:
        if self.dense is not None:
            for buf in self.dense:
                buf[: len(keep)] = buf[keep]
        elif self.batches:
            table = pa.Table.from_batches(self.batches).take(pa.array(keep, pa.int64()))
            self.batches = table.combine_chunks().to_batches() or []
        self.rows = len(keep)

    def snapshot(self) -> dict:
        if self.dense is not None:
            table = pa.Table.from_pydict(self._arrays(None), schema=self.schema)
        else:
            table = pa.Table.from_batches(self.batches) if self.batches else None
        return {"rows": table, "count": self.rows}

    def restore(self, state: dict) -> None:
        self.batches, self.dense, self.matrix, self.rows, self.schema = [], None, None, 0, None
        table = state["rows"]
        if table is not None:
            cols = {name: table.column(name).combine_chunks() for name in table.schema.names}
            self._append(cols, table.num_rows, None)
        self.rows = state["count"]
