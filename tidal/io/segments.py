"""A durable sink: output written as numbered Arrow IPC files that checkpoints can roll back.

Exactly-once output after a crash needs the output and the operator state to move together.
:class:`SegmentSink` buffers output batches and, on ``commit()``, writes them as the next
file ``part-000000.arrow``, ``part-000001.arrow``, ... (written to a temporary name, synced,
then renamed, so a file either exists whole or not at all). ``commit()`` returns the number of
committed files, which the query stores in its checkpoint *after* the commit. When a query is
restored, ``resume_at(n)`` deletes any file numbered ``n`` or above: output written after the
checkpoint is produced again by the replay, so nothing is missing and nothing appears twice.

The files hold the physical events, ``sync_time, other_time`` then the payload, as
``to_arrow()`` does; :meth:`SegmentSink.table` reads them back in order.

The checkpoint keeps each committed file's size and CRC-32 (:meth:`DurableSink.progress`), and a
restore checks them: a committed file that is missing (the output directory deleted, one part
removed) or whose bytes changed is an error naming it, never output silently lost or altered.

:class:`TextFileSink` is the same contract for one text file that grows (the CLI's stream-json
and live-csv output, the late-records file): ``commit()`` syncs it and records its length and
checksum; ``resume_at`` checks the committed prefix and cuts off what was written after it.
"""

from __future__ import annotations

import os
import re
import zlib
from pathlib import Path

import pyarrow as pa

from ..core.batch import EventBatch
from ..core.errors import TidalError
from ..ops.base import Consumer

_PART = re.compile(r"^part-(\d{6})\.arrow$")


class DurableSink(Consumer):
    """A sink whose output survives a crash: ``commit()`` makes it durable, ``resume_at()`` rolls back."""

    def commit(self) -> int:
        raise NotImplementedError

    def progress(self):
        """What the checkpoint stores for this sink (plain data; given back to ``resume_at``)."""
        return self.committed

    def resume_at(self, position) -> None:
        raise NotImplementedError


def _crc(path: Path, limit: int | None = None) -> int:
    crc = 0
    with open(path, "rb") as fh:
        left = limit
        while left is None or left > 0:
            block = fh.read(1 << 20 if left is None else min(1 << 20, left))
            if not block:
                break
            crc = zlib.crc32(block, crc)
            if left is not None:
                left -= len(block)
    return crc


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_part(batches: list[pa.RecordBatch], path: Path) -> list[int]:
    """One part file, written whole under a temporary name, synced, then renamed; ``[size, crc32]``."""
    schema = batches[0].schema
    # one contiguous table: writing hundreds of small batches costs ten times more than the copy
    table = pa.Table.from_batches([rb if rb.schema == schema else rb.cast(schema) for rb in batches])
    sink = pa.BufferOutputStream()
    with pa.ipc.new_file(sink, schema) as writer:  # uncompressed: read back by memory map, no copy
        writer.write_table(table.combine_chunks())
    data = sink.getvalue()
    tmp = path.with_suffix(".arrow.tmp")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    return [data.size, zlib.crc32(data)]


SPILL_ROWS = 1 << 19  # output rows that wait in memory before a writer thread writes them as a part


class SegmentSink(DurableSink):
    """Physical output events as Arrow IPC files in ``directory`` (see the module docstring).

    Output is handed to a writer thread as a part file every ``spill_rows`` rows, so writing and
    syncing overlap the query's work; ``commit()`` writes the rest, waits for the writer and syncs
    the directory. Parts written after the last commit are numbered past it, so a restore that rolls
    back to that commit deletes them like any other uncommitted output.
    """

    def __init__(self, directory: str | Path, spill_rows: int = SPILL_ROWS):
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.pending: list[pa.RecordBatch] = []
        self.committed = len(self._parts())
        self.digests: list[list[int]] = []  # [size, crc32] of each file committed by this sink
        self.completed = False
        self.spill_rows = spill_rows
        self._rows = 0
        self._next = self.committed  # the number of the next part file
        self._writing: list = []  # futures of parts being written, in order
        self._pool = None

    def _parts(self) -> list[Path]:
        return sorted(p for p in self.directory.iterdir() if _PART.match(p.name))

    def on_batch(self, batch: EventBatch) -> None:
        rb = batch.to_record_batch()
        if rb.num_rows:
            self.pending.append(rb)
            self._rows += rb.num_rows
            if self._rows >= self.spill_rows:
                self._spill()

    def on_completed(self) -> None:
        self.completed = True

    def _spill(self) -> None:
        if not self.pending:
            return
        batches, self.pending, self._rows = self.pending, [], 0
        path = self.directory / f"part-{self._next:06d}.arrow"
        self._next += 1
        if self._pool is None:
            from concurrent.futures import ThreadPoolExecutor

            self._pool = ThreadPoolExecutor(1, thread_name_prefix="tidal-segments")
        self._writing.append(self._pool.submit(_write_part, batches, path))

    def _wait(self) -> list[list[int]]:
        writing, self._writing = self._writing, []
        return [f.result() for f in writing]  # a writer's error is raised here

    def commit(self) -> int:
        self._spill()
        written = self._wait()
        if written:
            _fsync_dir(self.directory)
            self.digests += written
        self.committed = self._next
        return self.committed

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None

    def progress(self) -> dict:
        return {"files": self.committed, "digests": [list(d) for d in self.digests]}

    def resume_at(self, position) -> None:
        """Roll back to ``position`` (a number of files, or :meth:`progress` of a checkpoint, whose
        files are then checked: each must be there with the size and checksum it was committed with)."""
        digests = None
        if isinstance(position, dict):
            digests, position = position["digests"], position["files"]
        for f in self._writing:  # parts still being written belong to the output being rolled back
            f.exception()
        self._writing = []
        if digests is not None and len(digests) == position:
            self._check(digests)
        self.digests = [list(d) for d in digests] if digests is not None else []
        for p in self._parts():
            if int(_PART.match(p.name).group(1)) >= position:
                p.unlink()
        for tmp in self.directory.glob("part-*.arrow.tmp"):
            tmp.unlink()
        self.committed = self._next = position
        self.pending = []
        self._rows = 0

    def _check(self, digests: list) -> None:
        for i, (size, crc) in enumerate(digests):
            path = self.directory / f"part-{i:06d}.arrow"
            if not path.exists():
                raise TidalError(
                    f"committed output {path} is missing: the output no longer matches the saved state "
                    "(restore the file, or delete the state and the output to start afresh)"
                )
            if os.path.getsize(path) != size or _crc(path) != crc:
                raise TidalError(
                    f"committed output {path} was changed since it was written (size or checksum differs): "
                    "restore the file, or delete the state and the output to start afresh"
                )

    def table(self) -> pa.Table | None:
        """Everything committed so far, in order (None when nothing has been written)."""
        tables = [pa.ipc.open_file(pa.memory_map(str(p))).read_all() for p in self._parts()]
        return pa.concat_tables(tables, promote_options="permissive") if tables else None


class TextFileSink(DurableSink):
    """A text file appended to by ``write(text)``; ``commit()`` makes what was written durable.

    The committed position is ``{"bytes": n, "crc": c}``: ``resume_at`` checks that the file's first
    ``n`` bytes are there with checksum ``c`` and cuts the file there (output written after the last
    commit is written again by the replay). ``resume_at(0)`` starts the file afresh.
    """

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.handle = None
        self.committed = {"bytes": 0, "crc": 0}

    def write(self, text: str) -> None:
        if self.handle is None:
            raise TidalError(f"{self.path}: written to before resume_at()")
        self.handle.write(text.encode("utf-8"))

    def flush(self) -> None:
        """Hand what was written to the operating system (readers see it; durable only once committed)."""
        if self.handle is not None:
            self.handle.flush()

    def on_batch(self, batch: EventBatch) -> None:  # the writers call write(); batches are theirs
        pass

    def commit(self) -> dict:
        self.handle.flush()
        os.fsync(self.handle.fileno())
        size = self.handle.tell()
        done = self.committed["bytes"]
        with open(self.path, "rb") as fh:
            fh.seek(done)
            crc = zlib.crc32(fh.read(size - done), self.committed["crc"])
        self.committed = {"bytes": size, "crc": crc}
        return self.committed

    def progress(self) -> dict:
        return dict(self.committed)

    def resume_at(self, position) -> None:
        if not position:
            position = {"bytes": 0, "crc": 0}
        size = position["bytes"]
        if size:
            if not self.path.exists():
                raise TidalError(
                    f"committed output {self.path} is missing: the output no longer matches the saved state "
                    "(restore the file, or delete the state to start afresh)"
                )
            if os.path.getsize(self.path) < size or _crc(self.path, size) != position["crc"]:
                raise TidalError(
                    f"committed output {self.path} was changed since it was written (its first {size} bytes "
                    "differ): restore the file, or delete the state and the output to start afresh"
                )
        if self.handle is not None:
            self.handle.close()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        mode = "r+b" if size and self.path.exists() else "wb"
        self.handle = open(self.path, mode)  # noqa: SIM115 (closed by close())
        self.handle.seek(size)
        self.handle.truncate()
        self.committed = {"bytes": size, "crc": position["crc"]}

    def close(self) -> None:
        if self.handle is not None:
            self.handle.close()
            self.handle = None
