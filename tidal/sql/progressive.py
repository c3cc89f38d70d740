"""Progressive answers (Trill's progressive queries): refined results as a finite input is read.

Each row of a file is a start edge at its position in the file, in millionths
(``PROGRESS_TICKS``), so every file shares one progress axis and the query's output at tick
``T`` is the exact answer over the first ``T / 1,000,000`` of every input. After every ``N``%
the result at that point is reported (ordered and limited like the final answer); the last
report, at 100%, is the exact answer. Snapshots are taken at exactly the progress point: the
changes the engine has already emitted beyond it wait until their point is reached.
"""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa

from ..core.errors import PlanError
from ..core.time import INFINITY
from .output import ChangelogSink, CurrentResult
from .planner import PROGRESS_TICKS, has_event_time
from .query import SqlQuery


class _ProgressSink(ChangelogSink):
    def __init__(self, q: SqlQuery, points: list[int], report: Callable[[float, pa.Table], None]):
        self.q = q
        self.names = list(q.optimized.names)
        self.schema = q.optimized.schema()
        self.current = CurrentResult()
        self.waiting: list[tuple[int, bool, tuple]] = []  # changes beyond the next progress point
        self.points = points
        self.report = report
        super().__init__(self.names, self.names, lambda t, u, r: self.waiting.append((t, u, r)))

    def _report_upto(self, complete_below: int) -> None:
        while self.points and self.points[0] < complete_below:
            point = self.points.pop(0)
            keep = []
            for change in self.waiting:
                if change[0] <= point:
                    self.current(*change)
                else:
                    keep.append(change)
            self.waiting = keep
            table = self.q.finish(self.current.table(self.names, self.schema))
            self.report(point / PROGRESS_TICKS, table)

    def on_punctuation(self, time: int) -> None:
        super().on_punctuation(time)
        self._report_upto(time)

    def on_completed(self) -> None:
        super().on_completed()
        self._report_upto(INFINITY)


def run_progressive(q: SqlQuery, percent: float, report: Callable[[float, pa.Table], None]) -> None:
    """Run ``q`` reporting ``report(fraction, result)`` after every ``percent``% of the input."""
    if not 0 < percent <= 100:
        raise PlanError(f"--progressive takes a percentage in (0, 100], got {percent}")
    if has_event_time(q.optimized):
        raise PlanError("--progressive needs input without an event time (progress is the position in the file)")
    step = percent / 100 * PROGRESS_TICKS
    points = sorted({min(PROGRESS_TICKS, round(step * k)) for k in range(1, int(100 // percent) + 2)})
    q.progressive = True
    q.run(_ProgressSink(q, points, report))
