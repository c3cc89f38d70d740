"""Cutting a checkpoint's values into content-addressed chunks, and putting them back together.

An operator's state is a tree of dicts, lists and tuples whose leaves are plain values, numpy
arrays and Arrow tables, batches and arrays. :func:`encode` replaces each Arrow leaf, and each
large numpy leaf, by a :class:`Blocks` marker naming the chunks that hold it, one per block of
:data:`BLOCK_ROWS` rows; the rest of the tree (the *skeleton*, small) is pickled by the caller.
A block's bytes name it (the store hashes them), so the leading blocks of a table that only grew
since the last checkpoint (a join's stored rows between compactions) are the same chunks as
before and are not written again.

Arrow leaves are written in Arrow's IPC stream format, which keeps only the rows of a slice
(pickle keeps a slice's whole parent buffers: a 10-row slice of an 8 MB batch pickles to 8 MB).
:func:`decode` rebuilds every leaf as a fresh, writable value of the same kind.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

BLOCK_ROWS = 1 << 16
MIN_NUMPY_BYTES = 1 << 16  # smaller numpy arrays stay in the skeleton
MAX_WALK = 10_000  # longer lists are leaves (pickled whole): walking them costs more than it saves


class Blocks:
    """In a skeleton: a leaf stored as chunks (``kind``: table, batch, array, chunked or numpy)."""

    __slots__ = ("kind", "meta", "names")

    def __init__(self, kind: str, names: list, meta=None):
        self.kind, self.names, self.meta = kind, names, meta

    def __reduce__(self):
        return (Blocks, (self.kind, self.names, self.meta))


def _arrow_blocks(table: pa.Table, put) -> list:
    names = []
    for start in range(0, max(table.num_rows, 1), BLOCK_ROWS):
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, table.schema) as writer:
            writer.write_table(table.slice(start, BLOCK_ROWS))
        names.append(put(sink.getvalue().to_pybytes()))
    return names


def encode(value, put):
    """``value`` with its Arrow leaves and large numpy leaves replaced by :class:`Blocks`;
    ``put(bytes) -> name`` stores one chunk."""
    if type(value) is dict:
        return {k: encode(v, put) for k, v in value.items()}
    if type(value) in (list, tuple) and len(value) <= MAX_WALK:
        return type(value)(encode(v, put) for v in value)
    if isinstance(value, pa.Table):
        return Blocks("table", _arrow_blocks(value, put))
    if isinstance(value, pa.RecordBatch):
        return Blocks("batch", _arrow_blocks(pa.Table.from_batches([value]), put))
    if isinstance(value, pa.Array | pa.ChunkedArray):
        kind = "array" if isinstance(value, pa.Array) else "chunked"
        return Blocks(kind, _arrow_blocks(pa.table({"v": value}), put))
    if isinstance(value, np.ndarray) and value.dtype != object and value.ndim >= 1 and value.nbytes >= MIN_NUMPY_BYTES:
        names = [
            put(np.ascontiguousarray(value[i : i + BLOCK_ROWS]).tobytes()) for i in range(0, len(value), BLOCK_ROWS)
        ]
        return Blocks("numpy", names, (value.dtype, value.shape[1:]))
    return value


def names_in(value) -> list:
    """The chunk names the :class:`Blocks` of a skeleton refer to."""
    if isinstance(value, Blocks):
        return list(value.names)
    if type(value) is dict:
        return [n for v in value.values() for n in names_in(v)]
    if type(value) in (list, tuple):
        return [n for v in value for n in names_in(v)]
    return []


def decode(value, get):
    """The value :func:`encode` was given; ``get(name) -> bytes`` reads one chunk."""
    if isinstance(value, Blocks):
        return _leaf(value, get)
    if type(value) is dict:
        return {k: decode(v, get) for k, v in value.items()}
    if type(value) in (list, tuple):
        return type(value)(decode(v, get) for v in value)
    return value


def _leaf(blocks: Blocks, get):
    if blocks.kind == "numpy":
        dtype, rest = blocks.meta
        parts = [np.frombuffer(get(n), dtype).reshape(-1, *rest) for n in blocks.names]
        return np.concatenate(parts) if len(parts) > 1 else parts[0].copy()
    tables = [pa.ipc.open_stream(pa.py_buffer(get(n))).read_all() for n in blocks.names]
    table = pa.concat_tables(tables) if len(tables) > 1 else tables[0]
    if blocks.kind == "table":
        return table
    if blocks.kind == "chunked":
        return table.column("v")
    if blocks.kind == "array":
        return table.column("v").combine_chunks()
    batches = table.combine_chunks().to_batches()
    return batches[0] if batches else pa.RecordBatch.from_pylist([], schema=table.schema)
