"""A Parquet file read in pieces, each decoded ahead on a thread while the caller works on the last.

:func:`parquet_pieces` yields the file's rows as record batches, in file order, of the columns asked
for: a piece is a run of whole row groups (at least :data:`PIECE_ROWS` rows where the file's row groups
are smaller), read as ``read_row_groups`` reads them: the CPU of one whole read (smaller batches from
``iter_batches`` cost up to a third more). A thread decodes them (pyarrow lets go of the GIL while
it decodes) and hands them over through a short queue: a caller whose work on a piece also runs
without the GIL (a numba ``nogil`` pass) then overlaps it with the decoding of the next pieces.
Errors raised while reading reach the caller at the piece where they happened; a caller that stops
early stops the thread.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator

import pyarrow as pa

from .parquet_read import column_indices, open_reader

PIECE_ROWS = 1 << 16  # the fewest rows of a piece (unless the file has fewer): fewer pieces, less overhead
AHEAD = 4  # pieces decoded ahead of the caller at most
_DONE = object()


def _runs(sizes: list[int], rows: int) -> list[list[int]]:
    """Consecutive row groups (by their sizes), each run of at least ``rows`` rows but the last."""
    runs: list[list[int]] = [[]]
    held = 0
    for i, n in enumerate(sizes):
        if held >= rows:
            runs.append([])
            held = 0
        runs[-1].append(i)
        held += n
    return [r for r in runs if r]


def parquet_pieces(path: str, columns: list[str], rows: int | None = None) -> Iterator[pa.RecordBatch]:
    """The columns ``columns`` of the Parquet file ``path`` in pieces of whole row groups (at least
    ``rows`` rows, default :data:`PIECE_ROWS`), decoded ahead, as record batches."""
    reader = open_reader(path)  # pyarrow's reader class, as ParquetFile opens it (no pyarrow.parquet import)
    if reader is None:
        import pyarrow.parquet as pq

        reader = pq.ParquetFile(path)
        indices = None
    else:
        indices = column_indices(reader, columns)
    meta = reader.metadata
    runs = _runs([meta.row_group(i).num_rows for i in range(meta.num_row_groups)], rows or PIECE_ROWS)

    def read() -> Iterator[pa.RecordBatch]:
        for run in runs:
            if indices is None:
                got = reader.read_row_groups(run, columns=columns)
            else:
                got = reader.read_row_groups(run, column_indices=indices, use_threads=True)
            yield from got.select(columns).to_batches()  # in this order

    pieces = read()
    handoff: queue.Queue = queue.Queue(AHEAD)
    stop = threading.Event()

    def hand(item) -> bool:
        """Put ``item`` in the queue, unless the caller stopped (then False)."""
        while not stop.is_set():
            try:
                handoff.put(item, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def decode() -> None:
        try:
            for piece in pieces:
                if not hand(piece):
                    return
            hand(_DONE)
        except BaseException as exc:  # handed to the caller, raised there
            hand(exc)

    thread = threading.Thread(target=decode, name="tidal-parquet-pieces", daemon=True)
    thread.start()
    try:
        while True:
            item = handoff.get()
            if item is _DONE:
                return
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()
        thread.join()
        reader.close()
