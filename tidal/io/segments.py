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
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pyarrow as pa

from ..core.batch import EventBatch
from ..ops.base import Consumer

_PART = re.compile(r"^part-(\d{6})\.arrow$")


class DurableSink(Consumer):
    """A sink whose output survives a crash: ``commit()`` makes it durable, ``resume_at()`` rolls back."""

    def commit(self) -> int:
        raise NotImplementedError

    def resume_at(self, position: int) -> None:
        raise NotImplementedError


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class SegmentSink(DurableSink):
    """Physical output events as Arrow IPC files in ``directory`` (see the module docstring)."""

    def __init__(self, directory: str | Path):
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.pending: list[pa.RecordBatch] = []
        self.committed = len(self._parts())
        self.completed = False

    def _parts(self) -> list[Path]:
        return sorted(p for p in self.directory.iterdir() if _PART.match(p.name))

    def on_batch(self, batch: EventBatch) -> None:
        rb = batch.to_record_batch()
        if rb.num_rows:
            self.pending.append(rb)

    def on_completed(self) -> None:
        self.completed = True

    def commit(self) -> int:
        if self.pending:
            schema = self.pending[0].schema
            path = self.directory / f"part-{self.committed:06d}.arrow"
            tmp = path.with_suffix(".arrow.tmp")
            with pa.OSFile(str(tmp), "wb") as f, pa.ipc.new_file(f, schema) as writer:
                for rb in self.pending:
                    writer.write_batch(rb if rb.schema == schema else rb.cast(schema))
            with open(tmp, "rb+") as f:
                os.fsync(f.fileno())
            os.replace(tmp, path)
            _fsync_dir(self.directory)
            self.committed += 1
            self.pending = []
        return self.committed

    def resume_at(self, position: int) -> None:
        for p in self._parts():
            if int(_PART.match(p.name).group(1)) >= position:
                p.unlink()
        for tmp in self.directory.glob("part-*.arrow.tmp"):
            tmp.unlink()
        self.committed = position
        self.pending = []

    def table(self) -> pa.Table | None:
        """Everything committed so far, in order (None when nothing has been written)."""
        tables = [pa.ipc.open_file(pa.memory_map(str(p))).read_all() for p in self._parts()]
        return pa.concat_tables(tables, promote_options="permissive") if tables else None
