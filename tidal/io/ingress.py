"""Ingress: turn Arrow tables, pandas frames, numpy arrays and Python rows into event batches.

Each input row becomes one event: a point ``[t, t+1)`` (default), an interval
``[t, end)`` (with ``end=``), a start edge (``kind="start"``), or, with ``other=``, the
physical event ``(sync_time, other_time)`` exactly as ``to_arrow()`` writes it.

Policies: ``punctuate_every`` (ticks) inserts a punctuation each time sync time crosses a
multiple of that many ticks; ``punctuate_every_events`` after every N events;
``flush="punctuation"`` (default) pushes partial batches through at each punctuation,
``flush="none"`` only when batches fill; ``on_completed="end_of_stream"`` (default)
punctuates at infinity at the end, ``"flush"`` flushes, ``"none"`` does neither.

Input must be in sync-time order; a row going back in time raises :class:`InputError`
naming the row and both times. Numeric columns of Arrow input are passed on without copying.
"""

from __future__ import annotations

import dataclasses
import itertools
import operator
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import numba
import numpy as np
import pyarrow as pa

from ..core.batch import START_EDGES, BatchSizer, EventBatch, concat_batches
from ..core.errors import InputError, describe_row
from ..core.messages import Completed, Flush, Punctuation
from ..core.time import EARLIEST, INFINITY, LATEST, MIN_TIME, TIME_RANGE_TEXT, align_down, first_out_of_range
from ..expr.compile import CompiledLambda

KINDS = ("point", "interval", "start")


@dataclass(frozen=True)
class IngressPolicy:
    punctuate_every: int | None = None
    punctuate_every_events: int | None = None
    flush: str = "punctuation"
    on_completed: str = "end_of_stream"
    batch_size: int | None = None
    adaptive: bool = True

    def __post_init__(self):
        if self.flush not in ("punctuation", "none"):
            raise ValueError(f"flush must be 'punctuation' or 'none', got {self.flush!r}")
        if self.on_completed not in ("end_of_stream", "flush", "none"):
            raise ValueError(f"on_completed must be 'end_of_stream', 'flush' or 'none', got {self.on_completed!r}")
        for name in ("punctuate_every", "punctuate_every_events", "batch_size"):
            v = getattr(self, name)
            if v is not None and v <= 0:
                raise ValueError(f"{name} must be positive, got {v}")

    def sizer(self) -> BatchSizer:
        from ..core.batch import DEFAULT_BATCH_SIZE

        default = self.batch_size or DEFAULT_BATCH_SIZE
        periodic = self.punctuate_every is not None or self.punctuate_every_events is not None
        return BatchSizer(default=default, adaptive=self.adaptive and periodic)


def _time_column(
    rb: pa.RecordBatch, spec, role: str, row_offset: int, ordered: bool = False, latest: int | None = None
) -> np.ndarray:
    """The int64 values of a time field or lambda for this record batch. ``ordered``: the caller proves
    the values non-decreasing (or calls again without it before reporting that they are not), so the
    range check reads only the first and last value."""
    if callable(spec):
        lam = CompiledLambda(spec, rb.schema, truth=False, allow_record=False)
        batch = EventBatch(
            np.zeros(rb.num_rows, np.int64),
            np.zeros(rb.num_rows, np.int64),
            {n: rb.column(i) for i, n in enumerate(rb.schema.names)},
        )
        cols = lam.project(batch) or lam.project_rows(batch)
        arr = next(iter(cols.values()))
        name = "the time lambda"
    else:
        if spec not in rb.schema.names:
            raise InputError(f"{role} field {spec!r} not found; the input has fields {rb.schema.names}")
        arr = rb.column(rb.schema.names.index(spec))
        name = f"field {spec!r}"
    if arr.null_count:
        i = int(np.flatnonzero(arr.is_null().to_numpy(zero_copy_only=False))[0])
        row = {n: rb.column(j)[i].as_py() for j, n in enumerate(rb.schema.names)}
        raise InputError(f"row {row_offset + i}: {role} ({name}) is null: {{{describe_row(row)}}}")
    t = arr.type
    if pa.types.is_timestamp(t) or pa.types.is_date64(t) or pa.types.is_duration(t):
        arr = arr.view(pa.int64())
    elif pa.types.is_integer(t):
        if t != pa.int64():
            arr = arr.cast(pa.int64())
    else:
        raise InputError(f"{role} ({name}) must be an integer or timestamp, got {t}")
    values = arr.to_numpy(zero_copy_only=True)
    if latest is None:
        latest = LATEST if role == "time" else LATEST + 1
    if ordered and EARLIEST <= values[0] and values[-1] <= latest:
        return values
    bad = first_out_of_range(values, allow_infinity=role != "time", latest=latest)
    if bad >= 0:
        row = {n: rb.column(j)[bad].as_py() for j, n in enumerate(rb.schema.names)}
        raise InputError(
            f"row {row_offset + bad}: {role} {int(values[bad])} ({name}) is outside the range of event times "
            f"{TIME_RANGE_TEXT}, which leaves room for durations: {{{describe_row(row)}}}"
        )
    return values


@numba.njit(cache=True, nogil=True)
def _first_step_back(sync, previous):
    """Index of the first time earlier than the one before it (``previous`` before the first), or -1.

    Reads only: one branch-free pass per block of 4096 (which the compiler vectorises: over two
    slices indexed from 0, as ``sync[i - 1]`` would need a test for a negative index and the loop
    would not vectorise, 3x slower), the exact position is looked for only in a block that has a
    step back.
    """
    n = len(sync)
    if n == 0:
        return -1
    if sync[0] < previous:
        return 0
    for start in range(1, n, 4096):
        stop = min(start + 4096, n)
        before = sync[start - 1 : stop - 1]
        after = sync[start:stop]
        back = False
        for j in range(stop - start):
            back |= after[j] < before[j]
        if back:
            for i in range(start, stop):
                if sync[i] < sync[i - 1]:
                    return i
    return -1


class OrderProof:
    """Remembers that an immutable input's time column was read through in order.

    A source over an Arrow table checks sync order on its first complete run; later runs of
    the same stream skip the check (the table cannot have changed).
    """

    __slots__ = ("proven",)

    def __init__(self):
        self.proven = False


def _check_order(sync: np.ndarray, previous: int, offset: int, rb: pa.RecordBatch, spec) -> None:
    bad = _first_step_back(sync, previous)
    if bad < 0:
        return
    if bad > 0:
        previous = int(sync[bad - 1])
    row = {n: rb.column(j)[bad].as_py() for j, n in enumerate(rb.schema.names)}
    field = f"field {spec!r}" if isinstance(spec, str) else "time lambda"
    raise InputError(
        f"row {offset + bad}: sync time {int(sync[bad])} ({field}) is earlier than the previous row's {previous}; "
        f"input must be in time order (or pass disorder='drop'|'adjust'|'throw' and reorder_latency=N "
        f"to sort it): {{{describe_row(row)}}}"
    )


def other_times(rb: pa.RecordBatch, sync: np.ndarray, offset: int, *, end=None, kind="point", other=None):
    """The other time of each row: a physical ``other`` field, an interval ``end``, a start edge, or
    ``None`` for points (the batch makes ``sync + 1`` if something reads it)."""
    if other is not None:
        oth = _time_column(rb, other, "other", offset)
        bad = np.flatnonzero(oth == sync)
        if len(bad):  # neither an interval (other > sync), a start edge (INFINITY) nor an end edge (other < sync)
            i = int(bad[0])
            raise InputError(
                f"row {offset + i}: other time {int(oth[i])} equals the sync time: an empty lifetime is not an event"
            )
        bad = np.flatnonzero((sync > LATEST) & (oth > sync))
        if len(bad):
            i = int(bad[0])
            raise InputError(
                f"row {offset + i}: sync time {int(sync[i])} is outside the range of event times {TIME_RANGE_TEXT}: "
                "only an end edge (other time < sync time) may end at the time after the last"
            )
        return oth
    if end is not None:
        oth = _time_column(rb, end, "end", offset)
        bad = np.flatnonzero(oth <= sync)
        if len(bad):
            i = int(bad[0])
            raise InputError(f"row {offset + i}: end {int(oth[i])} is not after start {int(sync[i])}")
        return oth
    if kind == "start":
        return START_EDGES  # INFINITY for every row, made when something reads it
    return None


def arrow_messages(
    batches: Callable[[], Iterable[pa.RecordBatch]],
    time,
    end=None,
    other=None,
    kind: str = "point",
    policy: IngressPolicy = IngressPolicy(),
    order: OrderProof | None = None,
) -> Iterator:
    """Messages (batches, punctuations, flushes) for a sequence of record batches.

    ``order`` (for immutable inputs) skips the sync-order check once a run has read them all.
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    sizer = policy.sizer()
    pending: list[EventBatch] = []
    count = 0
    since_flush = 0
    previous = MIN_TIME
    offset = 0
    last_punct = MIN_TIME
    events_since_punct = 0

    def take_pending():
        nonlocal pending, count
        out = concat_batches(pending) if pending else None
        pending, count = [], 0
        return out

    check = order is None or not order.proven
    for rb in batches():
        if rb.num_rows == 0:
            continue
        # physical events: an end edge's sync time is an end time (up to LATEST + 1; other_times checks)
        top = LATEST + 1 if other is not None else None
        sync = _time_column(rb, time, "time", offset, ordered=True, latest=top)
        if check:
            try:
                _check_order(sync, previous, offset, rb, time)
            except InputError:
                _time_column(rb, time, "time", offset, latest=top)  # a time out of range is reported before disorder
                raise
        oth = other_times(rb, sync, offset, end=end, kind=kind, other=other)
        batch = EventBatch(sync, oth, dict(zip(rb.schema.names, rb.columns, strict=True)))
        previous = int(sync[-1])
        offset += len(sync)

        # punctuation cut points inside this batch: (position, time)
        cuts: list[tuple[int, int]] = []
        if policy.punctuate_every:
            grid = align_down(sync, policy.punctuate_every)
            ups = np.flatnonzero(grid > np.concatenate([[last_punct], grid[:-1]]))
            cuts += [(int(p), int(grid[p])) for p in ups if int(grid[p]) > last_punct]
        if policy.punctuate_every_events:
            n = policy.punctuate_every_events
            first = n - events_since_punct
            cuts += [(int(p), int(sync[p - 1])) for p in range(first, len(sync) + 1, n)]
            events_since_punct = (events_since_punct + len(sync)) % n
        cuts.sort()

        start = 0
        for pos, ptime in [*cuts, (len(sync), None)]:
            if ptime is not None and ptime <= last_punct:
                continue
            while start < pos:
                # a record batch is here whole: cut it only at the largest batch size; the adaptive
                # size is how many events to gather before sending when they trickle in
                room = max(sizer.max_size, sizer.default) - count
                stop = min(pos, start + room)
                piece = batch if start == 0 and stop == len(sync) else batch.slice(start, stop)
                pending.append(piece)
                count += len(piece)
                since_flush += len(piece)
                sizer.on_events(len(piece))
                start = stop
                if count >= sizer.max_size:
                    yield take_pending()
            if ptime is not None:
                last_punct = ptime
                sizer.on_flush(since_flush)  # adapt to the events seen between punctuations
                since_flush = 0
                if policy.flush == "punctuation":
                    if pending:
                        yield take_pending()
                yield Punctuation(ptime)
    if pending:
        yield take_pending()
    if order is not None:
        order.proven = True  # every row was read in order
    if policy.on_completed == "end_of_stream":
        yield Punctuation(INFINITY)
    elif policy.on_completed == "flush":
        yield Flush()
    yield Completed()


def table_batches(table: pa.Table | pa.RecordBatch, max_rows: int) -> Callable[[], Iterable[pa.RecordBatch]]:
    if isinstance(table, pa.RecordBatch):
        table = pa.Table.from_batches([table])
    return lambda: table.to_batches(max_chunksize=max_rows)


def _record_fields(first) -> list[str] | None:
    if isinstance(first, dict):
        return None
    if dataclasses.is_dataclass(first) and not isinstance(first, type):
        return [f.name for f in dataclasses.fields(first)]
    if hasattr(first, "_fields"):
        return list(first._fields)
    return None


def records_to_batches(rows: Iterable, names: list[str] | None, schema: pa.Schema | None, chunk: int):
    """Chunks of Python rows (dicts, tuples, named tuples, dataclasses) as record batches."""

    def gen():
        it = iter(rows)
        offset = 0
        fields = names
        while True:
            part = list(itertools.islice(it, chunk))
            if not part:
                return
            first = part[0]
            try:
                if isinstance(first, dict) and schema:
                    if set(map(type, part)) != {dict}:  # rows of other kinds: the check names the first
                        _check_missing(part, list(schema.names), offset)
                    # the types are given: Arrow converts the dicts in one pass (no column lists in between);
                    # the same conversion as pa.array(column, type), keys beyond the schema's ignored
                    rb = pa.RecordBatch.from_struct_array(pa.array(part, pa.struct(schema)))
                    _check_null_rows(rb, part, offset)
                elif isinstance(first, dict):
                    if _all_keys(part, set(first), operator.eq):
                        keys = list(first)  # the common case: every row has the first's keys and no others
                    else:
                        keys = list(dict.fromkeys(k for r in part for k in r))
                        _check_missing(part, keys, offset)
                    columns = [list(map(operator.itemgetter(k), part)) for k in keys]
                    rb = pa.RecordBatch.from_arrays([pa.array(c) for c in columns], names=keys)
                else:
                    fields = fields or _record_fields(first)
                    if fields is None:
                        raise InputError("rows are plain tuples: pass names=[...] to from_records")
                    if dataclasses.is_dataclass(first):
                        columns = [[getattr(r, f) for r in part] for f in fields]
                    else:
                        if set(map(len, part)) != {len(fields)}:  # C-speed check; the loop finds the row
                            i, r = next((i, r) for i, r in enumerate(part) if len(r) != len(fields))
                            raise InputError(
                                f"row {offset + i}: has {len(r)} values, expected {len(fields)} ({fields}): {r!r}"
                            )
                        # one column at a time (several times faster than transposing with zip(*part))
                        columns = [list(map(operator.itemgetter(j), part)) for j in range(len(fields))]
                    arrays = [
                        pa.array(c, type=schema.field(f).type if schema else None)
                        for f, c in zip(fields, columns, strict=True)
                    ]
                    rb = pa.RecordBatch.from_arrays(arrays, names=fields)
            except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
                raise InputError(f"rows {offset}..{offset + len(part) - 1}: cannot convert to columns: {exc}") from exc
            offset += len(part)
            yield rb

    return gen


def _all_keys(part: list, wanted: set, compare) -> bool:
    """Whether every row is a dict whose keys ``compare`` (``operator.ge``: hold ``wanted``; ``operator.eq``:
    are exactly ``wanted``) at C speed: a dict's key view compared with a set looks each key up, where
    ``wanted.issubset(row)`` first builds a set of the row's keys (as long as the conversion itself)."""
    try:
        return all(map(compare, map(dict.keys, part), itertools.repeat(wanted)))
    except TypeError:  # a row that is not a dict
        return False


def _check_null_rows(rb: pa.RecordBatch, part: list[dict], offset: int) -> None:
    """A missing key converts to NULL: the rows holding a NULL are checked for missing keys (only those)."""
    nulls = None
    for col in rb.columns:
        if col.null_count:
            bad = ~np.asarray(col.is_valid().to_numpy(zero_copy_only=False))
            nulls = bad if nulls is None else nulls | bad
    if nulls is not None:
        rows = np.flatnonzero(nulls).tolist()
        _check_missing([part[i] for i in rows], rb.schema.names, offset, rows)


def _check_missing(part: list[dict], names: list[str], offset: int, numbers: list[int] | None = None) -> None:
    if _all_keys(part, set(names), operator.ge):  # the loop below finds the row
        return
    for i, r in enumerate(part):
        if len(r) < len(names) or any(n not in r for n in names):
            missing = [n for n in names if n not in r]
            at = offset + (i if numbers is None else numbers[i])
            raise InputError(f"row {at}: missing field(s) {missing}: {{{describe_row(r)}}}")
