"""Watermark generation and late-row routing for event-time input (seed 002 section 2.5).

Temporal semantics: a record is *late* when its event time is behind the watermark in effect
when it arrived (the watermark after the records before it). ``max_diff_watermarks`` is the
largest time seen so far minus an offset; ``percentile_watermarks`` keeps the last ``events``
times and, once ``frequency`` records have arrived, lets at most ``percentile``% of them exceed
the watermark; neither ever moves back. Late rows are counted, then dropped, written to the
late-records file (one JSON object a line), or moved up to the watermark they were behind
(Trill's Adjust: :class:`TimeColumnFromSyncOp` shows the moved time in the event-time column).
:func:`percentile_messages` releases the other rows as start edges in event-time order (an
Impatience sorter holds them until the watermark passes), each release followed by a
punctuation at the watermark. :class:`WatermarkTap` records a sort's punctuations (its watermark)
and :class:`LateSink` writes the rows a sort found late."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..core.batch import EventBatch
from ..core.errors import InputError
from ..core.messages import Completed, Punctuation
from ..core.time import INFINITY, TIME_RANGE_TEXT, first_out_of_range
from .base import Consumer, Operator
from .impatience import ImpatienceSorter


def max_diff_watermarks(times: np.ndarray, offset: int) -> np.ndarray:
    """The watermark after each record: the largest event time seen so far minus ``offset``."""
    return np.maximum.accumulate(times) - offset if len(times) else times.copy()


def percentile_watermarks(times: np.ndarray, events: int, percentile: float, frequency: int) -> np.ndarray:
    """The watermark after each record, from the last ``events`` event times (by arrival).

    Once ``frequency`` records have arrived, the watermark is the largest stored time such that
    at most ``percentile``% of the stored times exceed it; it never moves back. Before that it is
    the minimum time (nothing is late).
    """
    n = len(times)
    out = np.full(n, np.iinfo(np.int64).min, dtype=np.int64)
    current = np.iinfo(np.int64).min
    for i in range(n):  # windows are small (``events``), the loop is per record by design of the generator
        if i + 1 >= frequency:
            window = np.sort(times[max(0, i + 1 - events) : i + 1])
            exceed = int(len(window) * percentile / 100)
            current = max(current, int(window[len(window) - exceed - 1]))
        out[i] = current
    return out


def late_mask(times: np.ndarray, watermarks: np.ndarray) -> np.ndarray:
    """A record is late when its time is behind the watermark before it arrived."""
    before = np.concatenate([[np.iinfo(np.int64).min], watermarks[:-1]]) if len(times) else watermarks
    return times < before


class TimeColumnFromSyncOp(Operator):
    """After a sort that adjusts late rows: the event-time column is set to the row's (moved) time."""

    name = "AdjustedTime"

    def __init__(self, column: str):
        super().__init__()
        self.column = column
        self.variant = f"{column} := event time (late rows moved up to the watermark)"

    def on_batch(self, batch: EventBatch) -> None:
        dense = batch.compact()
        cols = dict(dense.columns)
        cols[self.column] = pa.array(dense.sync, pa.int64()).cast(cols[self.column].type)
        self.emit(dense.replace(columns=cols))


def _as_ticks(col: pa.ChunkedArray | pa.Array, name: str, path: str) -> np.ndarray:
    if col.null_count:
        row = int(pc.index(pc.is_null(col), True).as_py())
        raise InputError(f"{path}: row {row + 1}: event time field {name} is null")
    t = col.type
    if pa.types.is_timestamp(t):
        col = col.cast(pa.timestamp("us", t.tz)).cast(pa.int64())
    elif not pa.types.is_integer(t):
        raise InputError(f"{path}: event time field {name} is {t}; it must be a timestamp, date or integer")
    ticks = np.asarray(col.to_numpy(), dtype=np.int64)
    bad = first_out_of_range(ticks)
    if bad >= 0:
        raise InputError(
            f"{path}: row {bad + 1}: event time {int(ticks[bad])} ({name}) is outside the range of event times "
            f"{TIME_RANGE_TEXT}, which leaves room for durations"
        )
    return ticks


def percentile_messages(
    batches,
    column: str,
    params: dict,
    stats,
    late_path: str | None,
    path: str,
    adjust: bool = False,
    batch_rows: int = 65_536,
):
    """The percentile watermark (seed 002 section 2.5) over the record batches of ``path`` whose
    event time is ``column``: late rows counted and routed (or, with ``adjust``, moved up to the
    watermark they were behind), the rest released in event-time order as the watermark passes
    them (an Impatience sorter holds the rest). ``stats`` gets ``late`` and ``watermark``."""
    got = list(batches)
    if not got:
        yield Completed()
        return
    table = pa.Table.from_batches(got)
    n = table.num_rows
    ticks = _as_ticks(table.column(column), column, path) if n else np.empty(0, np.int64)
    marks = percentile_watermarks(ticks, int(params["events"]), float(params["percentile"]), int(params["frequency"]))
    if n:
        late = late_mask(ticks, marks)
        stats.watermark = int(marks[-1])
        if late.any():
            stats.late += int(late.sum())
            if adjust:
                ticks = np.where(late, np.concatenate([[ticks[0]], marks[:-1]]), ticks)
                i = table.column_names.index(column)
                table = table.set_column(i, column, pa.array(ticks, pa.int64()).cast(table.column(i).type))
            else:
                if late_path:
                    write_late(table.filter(pa.array(late)), late_path)
                table, ticks, marks = table.filter(pa.array(~late)), ticks[~late], marks[~late]
    sorter = ImpatienceSorter()
    released = np.iinfo(np.int64).min
    for start in range(0, table.num_rows, batch_rows):
        stop = min(start + batch_rows, table.num_rows)
        sorter.push(ticks[start:stop])
        mark = int(marks[stop - 1])
        if mark > released:
            yield from _released(table, start, *sorter.punctuate(mark))
            yield Punctuation(mark)
            released = mark
    yield from _released(table, 0, *sorter.flush_all())
    stats.watermark = INFINITY
    yield Completed()


def _released(table: pa.Table, _offset: int, times: np.ndarray, rows: np.ndarray):
    if len(times):
        part = table.take(pa.array(rows)).combine_chunks()
        cols = {name: part.column(name).combine_chunks() for name in part.column_names}
        yield EventBatch(times, np.full(len(times), INFINITY, np.int64), cols)


def write_late(rows: pa.Table, path: str) -> None:
    with open(path, "a") as fh:
        for row in rows.to_pylist():
            fh.write(json.dumps(row, default=str) + "\n")


class LateSink(Consumer):
    """Late rows of a sort: appended to the late-records file (payload columns, one JSON object a line)."""

    def __init__(self, path: str | None):
        self.path = path

    def on_batch(self, batch: EventBatch) -> None:
        if self.path:
            write_late(
                pa.Table.from_batches([batch.to_record_batch()]).drop_columns(["sync_time", "other_time"]), self.path
            )


class WatermarkTap(Operator):
    """Records the sort's punctuations (the watermark) in the run's statistics (``stats.watermark``,
    then ``stats.progress()``)."""

    name = "WatermarkTap"

    def __init__(self, stats):
        super().__init__()
        self.stats = stats

    def on_batch(self, batch: EventBatch) -> None:
        pass

    def on_punctuation(self, time: int) -> None:
        self.stats.watermark = time
        self.stats.progress()


class Discard(Consumer):
    """Drops what it is given (the tap's output: only its punctuations matter)."""

    def on_batch(self, batch: EventBatch) -> None:
        pass
