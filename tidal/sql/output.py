"""Output of SQL queries as they run: the changelog view of the result stream, written as it happens.

A query's result is a stream of start edges (inserts), end edges (retractions) and, rarely,
intervals (an insert now, a retraction at its end). :class:`ChangelogSink` turns each output
batch into changelog records at once (retractions before inserts at equal times) and hands
them to a writer; the interval retractions wait in a heap until the stream's time passes them.
:class:`LiveTable` keeps the current result (a multiset of rows) and redraws it.
"""

from __future__ import annotations

import csv
import datetime as dt
import heapq
import json
from collections import Counter
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

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


def _fraction(micros: int, nanos: int = 0) -> str:
    """Sub-second digits as DuckDB prints them: none when zero, else trailing zeros trimmed (``.5``)."""
    if not micros and not nanos:
        return ""
    digits = f"{micros:06d}{nanos:03d}" if nanos else f"{micros:06d}"
    return "." + digits.rstrip("0")


def _offset(delta) -> str:
    """A UTC offset as DuckDB prints it: ``+00``, ``-05``, ``+05:30``."""
    total = int(delta.total_seconds())
    sign = "-" if total < 0 else "+"
    hours, rest = divmod(abs(total), 3600)
    minutes = rest // 60
    return f"{sign}{hours:02d}" + (f":{minutes:02d}" if minutes else "")


def temporal_text(v):
    """A date, time or timestamp as DuckDB prints it (``2024-06-01 18:00:30``, ``2024-06-01 18:00:30.5``,
    ``2024-06-01``, ``18:00:30.5``, a zone's offset as ``+00``); any other value as it is."""
    if isinstance(v, dt.datetime):
        text = f"{v.year:04d}-{v.month:02d}-{v.day:02d} {v.hour:02d}:{v.minute:02d}:{v.second:02d}"
        text += _fraction(v.microsecond, getattr(v, "nanosecond", 0))
        offset = v.utcoffset()
        return text if offset is None else text + _offset(offset)
    if isinstance(v, dt.date):
        return f"{v.year:04d}-{v.month:02d}-{v.day:02d}"
    if isinstance(v, dt.time):
        text = f"{v.hour:02d}:{v.minute:02d}:{v.second:02d}" + _fraction(v.microsecond)
        offset = v.utcoffset()
        return text if offset is None else text + _offset(offset)
    if isinstance(v, dt.timedelta):
        return interval_text(v)
    return v


def interval_text(v: dt.timedelta) -> str:
    """An interval as DuckDB prints one: ``1 day``, ``2 days 01:30:00``, ``00:00:01.5``, ``-01:00:00``
    (tidal's intervals are microseconds: 25 hours print as ``1 day 01:00:00``)."""
    micros = v // dt.timedelta(microseconds=1)
    sign = "-" if micros < 0 else ""
    days, rest = divmod(abs(micros), 86_400_000_000)
    seconds, fraction = divmod(rest, 1_000_000)
    parts = [f"{sign}{days} day{'s' if days != 1 else ''}"] if days else []
    if rest or not days:
        clock = f"{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}" + _fraction(fraction)
        parts.append(sign + clock)
    return " ".join(parts)


json_value = temporal_text  # JSON has no dates: they are written as DuckDB's text


def json_text(record: dict) -> str:
    """``record`` as one JSON object, a DECIMAL as a JSON number with its exact digits (as DuckDB writes
    it; the json module knows no Decimal, and a float would round one of more than 15 digits)."""
    exact: dict[str, str] = {}

    def swap(v):
        if isinstance(v, Decimal):
            key = json.dumps(f"\x00{len(exact)}\x00")
            exact[key] = format(v, "f")
            return f"\x00{len(exact) - 1}\x00"
        if isinstance(v, list | tuple):
            return [swap(x) for x in v]
        if isinstance(v, dict):
            return {k: swap(x) for k, x in v.items()}
        return v

    text = json.dumps({k: swap(v) for k, v in record.items()})
    for key, digits in exact.items():
        text = text.replace(key, digits, 1)
    return text


def _is_temporal(t: pa.DataType) -> bool:
    return pa.types.is_timestamp(t) or pa.types.is_date(t) or pa.types.is_time(t)


def _column_text(col: pa.ChunkedArray) -> pa.Array:
    t = col.type
    if pa.types.is_date(t):
        return pc.strftime(col, "%Y-%m-%d")
    text = pc.strftime(col, "%H:%M:%S" if pa.types.is_time(t) else "%Y-%m-%d %H:%M:%S")
    # %S carries the unit's sub-second digits: trim trailing zeros, and the point when none remain
    text = pc.replace_substring_regex(text, r"(\.[0-9]*[1-9])0+$", r"\1")
    text = pc.replace_substring_regex(text, r"\.0+$", "")
    if pa.types.is_timestamp(t) and t.tz is not None:
        zone = pc.strftime(col, "%z")  # +0000, +0530
        zone = pc.replace_substring_regex(zone, r"^([+-][0-9][0-9])00$", r"\1")
        zone = pc.replace_substring_regex(zone, r"^([+-][0-9][0-9])([0-9][0-9])$", r"\1:\2")
        text = pc.binary_join_element_wise(text, zone, "")
    return text


def temporal_as_text(table: pa.Table) -> pa.Table:
    """``table`` with its date, time and timestamp columns as DuckDB's text for them (see :func:`temporal_text`)."""
    for i, field in enumerate(table.schema):
        if _is_temporal(field.type):
            table = table.set_column(i, pa.field(field.name, pa.string()), _column_text(table.column(i)))
    return table


def json_ready(table: pa.Table) -> pa.Table:
    """``table`` for the JSON writer as DuckDB's: a DECIMAL of at most 15 digits is written as its DOUBLE
    (``1.50`` as ``1.5``, ``5`` as ``5.0``), a wider one with every digit of its scale (:func:`json_text`)."""
    for i, field in enumerate(table.schema):
        if pa.types.is_decimal(field.type) and field.type.precision <= 15:
            table = table.set_column(i, field.name, table.column(i).cast(pa.float64()))
    return table


_CSV_ROWS = 4096  # the most rows csv_text writes itself (more go to pyarrow's writer)


def csv_text(table: pa.Table) -> str:
    """``table`` as ``pyarrow.csv.write_csv`` writes it with its default options, as text.

    A small table of plain columns (integers, floats, booleans, strings, nulls) is written here:
    importing ``pyarrow.csv`` and its first write cost a command-line query ~1.5 ms of CPU, more
    than writing a few rows. The writer's rules, followed here: a header of the column names, each
    quoted (a quote doubled); a number or boolean as Arrow's cast to string writes it, unquoted; a
    string quoted (a quote doubled); a null empty; ``\\n`` after each line. Any other table goes to
    pyarrow's writer (tests/sql/test_csv_text.py compares the two)."""
    if 0 < table.num_columns and table.num_rows <= _CSV_ROWS and all(_plain_csv(f.type) for f in table.schema):
        lines = [",".join(_csv_quoted(name) for name in table.column_names)]
        lines.extend(",".join(row) for row in zip(*(_csv_cells(c) for c in table.columns), strict=True))
        return "\n".join(lines) + "\n"
    import io

    import pyarrow.csv as pv

    buf = io.BytesIO()
    pv.write_csv(table, buf)
    return buf.getvalue().decode()


def _plain_csv(t: pa.DataType) -> bool:
    return (
        pa.types.is_integer(t)
        or pa.types.is_float32(t)
        or pa.types.is_float64(t)
        or pa.types.is_boolean(t)
        or pa.types.is_string(t)
        or pa.types.is_large_string(t)
        or pa.types.is_null(t)
    )


def _csv_quoted(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


def _csv_cells(column) -> list[str]:
    t = column.type
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return ["" if v is None else _csv_quoted(v) for v in column.to_pylist()]
    if pa.types.is_null(t):
        return [""] * len(column)
    return ["" if v is None else v for v in pc.cast(column, pa.string()).to_pylist()]


def csv_ready(table: pa.Table) -> pa.Table:
    """``table`` for pyarrow's CSV writer, its dates and timestamps written as DuckDB's text.

    The writer quotes every string, so a column whose own rendering already is DuckDB's text stays
    as it is (dates; timestamps and times without sub-second digits or zone, cast to whole seconds);
    the others become strings."""
    for i, field in enumerate(table.schema):
        t = field.type
        if not _is_temporal(t) or pa.types.is_date(t):
            continue
        col = table.column(i)
        plain = None
        if not (pa.types.is_timestamp(t) and t.tz is not None):
            whole = pa.timestamp("s") if pa.types.is_timestamp(t) else pa.time32("s")
            try:
                plain = col.cast(whole)  # a safe cast: fails where sub-second digits would be lost
            except pa.ArrowInvalid:
                plain = None
        if plain is not None:
            table = table.set_column(i, pa.field(field.name, plain.type), plain)
        else:
            table = table.set_column(i, pa.field(field.name, pa.string()), _column_text(col))
    return table


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
        if hasattr(self.write, "column_types"):  # stream-json writes a DECIMAL by its type, as batch-json
            self.write.column_types([batch.columns[n].type for n in self.names])
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
        self.short: set[int] = set()  # DECIMAL columns of at most 15 digits: written as DOUBLEs (json_ready)

    def column_types(self, types: list[pa.DataType]) -> None:
        self.short = {i for i, t in enumerate(types) if pa.types.is_decimal(t) and t.precision <= 15}

    def __call__(self, time: int, undo: bool, row: tuple) -> None:
        if self.short:
            row = tuple(float(v) if i in self.short and v is not None else v for i, v in enumerate(row))
        record = {k: json_value(v) for k, v in zip(self.labels, row, strict=True)}
        if undo:
            record["sys.undo"] = True
        self.out.write(json_text(record) + "\n")
        self.out.flush()


class LiveCsv:
    """Writes live-csv: a header, then ``sys.undo`` and the columns for every change.

    Fields are quoted as RFC 4180 (and batch-csv) do: a value holding a comma, a quote or a
    line break is enclosed in quotes, its quotes doubled; lines end with ``\\n`` as batch-csv's.
    """

    def __init__(self, out, labels: list[str], header: bool = True):
        self.out = out
        self.csv = csv.writer(out, lineterminator="\n")
        if header:  # (a durable run resumed after its header was written writes none)
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
