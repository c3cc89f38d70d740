"""What a query's sources saw while it ran (shared by the stream plan and the relational path)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class RunStats:
    """What the sources saw: rows read, malformed rows skipped, late rows, the last watermark."""

    rows_read: int = 0
    rows_total: int = 0  # rows the sources hold (known once a file is read)
    skipped: int = 0
    late: int = 0
    watermark: int | None = None
    on_progress: object = None  # called with the stats after each batch a source sends

    def progress(self) -> None:
        if self.on_progress is not None:
            self.on_progress(self)
