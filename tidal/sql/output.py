"""Output of SQL queries as they run: the changelog view of the result stream, written as it happens.

A query's result is a stream of start edges (inserts), end edges (retractions) and, rarely,
intervals (an insert now, a retraction at its end). :class:`ChangelogSink` turns each output
batch into changelog records at once (retractions before inserts at equal times) and hands
them to a writer; the interval retractions wait in a heap until the stream's time passes them.
:class:`LiveTable` keeps the current result (a multiset of rows) and redraws it.
"""

from __future__ import annotations

import csv
import heapq
import json
from collections import Counter

import numpy as np
import pyarrow as pa

from ..core.batch import EventBatch
from ..core.time import INFINITY
from ..ops.base import Consumer


def unique_names(names: list[str]) -> list[str]:
    """Column names made unique as DuckDB does where they become keys (JSON objects, Parquet files):
    a repeated name (compared without case) gets ``_1``, ``_2``, ... (``a, a, A`` → ``a, a_1, A_2``)."""
    seen: dict[str, int] = {}
    out = []
    for name in names:
        low = name.lower()
        if low not in seen:
            seen[low] = 1
            out.append(name)
            continue
        new = f"{name}_{seen[low]}"
        while new.lower() in seen:
            seen[low] += 1
            new = f"{name}_{seen[low]}"
        seen[new.lower()] = 1
        out.append(new)
    return out


def json_value(v):
    if hasattr(v, "isoformat"):
        return v.isoformat()
    return v


class ChangelogSink(Consumer):
    """Calls ``write(time, undo, row)`` for every insert and retraction, in order, as batches arrive.

    ``names`` are the physical result columns to show (SELECT order); ``labels`` their display names.
    """

    def __init__(self, names: list[str], labels: list[str], write):
        self.names = names
        self.labels = labels
        self.write = write
        self.pending: list[tuple[int, int, tuple]] = []  # interval ends: (time, seq, row)
        self._seq = 0

    def _release(self, upto: int) -> None:
        while self.pending and self.pending[0][0] <= upto:
            t, _, row = heapq.heappop(self.pending)
            self.write(t, True, row)

    def on_batch(self, batch: EventBatch) -> None:
        batch = batch.compact()
        if len(batch) == 0:
            return
        sync, other = batch.sync, batch.other
        self._release(int(sync[0]))
        starts = other == INFINITY
        ends = (other < sync) & ~starts
        rows = list(zip(*[batch.columns[n].to_pylist() for n in self.names], strict=True))
        # retractions first at equal times (an aggregate's new value follows the end of its old one)
        order = np.lexsort((~ends, sync))
        for i in order.tolist():
            self.write(int(sync[i]), bool(ends[i]), rows[i])
            if not starts[i] and not ends[i]:
                self._seq += 1
                heapq.heappush(self.pending, (int(other[i]), self._seq, rows[i]))

    def on_punctuation(self, time: int) -> None:
        self._release(time - 1)

    def on_completed(self) -> None:
        self._release(INFINITY)


class StreamJson:
    """Writes stream-json: one object per change, columns in SELECT order, retractions with ``sys.undo``."""

    def __init__(self, out, labels: list[str]):
        self.out = out
        self.labels = unique_names(labels)  # keys of one object: never two the same

    def __call__(self, time: int, undo: bool, row: tuple) -> None:
        record = {k: json_value(v) for k, v in zip(self.labels, row, strict=True)}
        if undo:
            record["sys.undo"] = True
        self.out.write(json.dumps(record) + "\n")
        self.out.flush()


class LiveCsv:
    """Writes live-csv: a header, then ``sys.undo`` and the columns for every change.

    Fields are quoted as RFC 4180 (and batch-csv) do: a value holding a comma, a quote or a
    line break is enclosed in quotes, its quotes doubled; lines end with ``\\n`` as batch-csv's.
    """

    def __init__(self, out, labels: list[str]):
        self.out = out
        self.csv = csv.writer(out, lineterminator="\n")
        self.csv.writerow(["sys.undo", *labels])

    def __call__(self, time: int, undo: bool, row: tuple) -> None:
        values = ["" if v is None else str(json_value(v)) for v in row]
        self.csv.writerow(["true" if undo else "false", *values])
        self.out.flush()


class CurrentResult:
    """The result as it stands: a multiset of rows, kept up to date by the changelog."""

    def __init__(self):
        self.rows: Counter = Counter()
        self.changes = 0

    def __call__(self, time: int, undo: bool, row: tuple) -> None:
        self.changes += 1
        if undo:
            self.rows[row] -= 1
            if self.rows[row] <= 0:
                del self.rows[row]
        else:
            self.rows[row] += 1

    def table(self, names: list[str], schema: pa.Schema | None) -> pa.Table:
        rows = [r for r, n in self.rows.items() for _ in range(n)]
        cols = list(zip(*rows, strict=True)) if rows else [[] for _ in names]
        arrays = []
        for i, name in enumerate(names):
            t = schema.field(name).type if schema is not None and name in schema.names else None
            arrays.append(pa.array(list(cols[i]), type=t))
        return pa.Table.from_arrays(arrays, names=names)
