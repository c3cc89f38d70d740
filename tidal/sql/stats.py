"""What a query's sources saw while it ran (shared by the stream plan and the relational path)."""

from __future__ import annotations

from ..core.frozen import Fields, mutable


@mutable
class RunStats(Fields):
    """What the sources saw: rows read, malformed rows skipped, late rows, the last watermark."""

    rows_read: int = 0
    rows_total: int = 0  # rows the sources hold (known once a file is read)
    skipped: int = 0
    late: int = 0
    watermark: int | None = None
    on_progress: object = None  # called with the stats after each batch a source sends

    def __init__(self, rows_read=0, rows_total=0, skipped=0, late=0, watermark=None, on_progress=None):
        self.rows_read = rows_read
        self.rows_total = rows_total
        self.skipped = skipped
        self.late = late
        self.watermark = watermark
        self.on_progress = on_progress

    def progress(self) -> None:
        if self.on_progress is not None:
            self.on_progress(self)
