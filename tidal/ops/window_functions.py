"""SQL window functions (``f(...) OVER (PARTITION BY ... ORDER BY ... frame)``) over a changing relation.

Temporal semantics: at every instant ``T`` the output snapshot is the input snapshot at ``T`` with
one more column per call, each computed over the row's partition of that snapshot as SQL defines
it (see :mod:`.recomputed` for how ticks are applied and differences emitted; with ``at_end``, for a
consumer that reads only the final snapshot, the calls are computed once, at end of input). Rows tied on the
ORDER BY keys are peers; a frame without an explicit clause is the partition up to the row's last
peer when there is an ORDER BY, else the whole partition. For the numbering functions rows tied
on the keys are ordered by all their columns, so a snapshot always gets the same answer.

The computation is columnar: one sort per (partition, order) specification, partition and peer
boundaries from comparisons of neighbours, prefix sums for frame sums and counts, order-preserving
ranks for frame minima and maxima.
"""

from __future__ import annotations

import heapq
from collections import Counter
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..core.batch import EventBatch
from ..core.errors import TidalError
from ..core.time import INFINITY
from .recomputed import BULK, RecomputedSnapshot, partition_key, row_values
from .topk import _nan_largest

RANKING = ("row_number", "rank", "dense_rank", "percent_rank", "cume_dist", "ntile")
OFFSET = ("lag", "lead")
VALUE = ("first_value", "last_value")
AGGREGATE = ("sum", "count", "count_star", "avg", "min", "max")
FUNCTIONS = RANKING + OFFSET + VALUE + AGGREGATE


@dataclass(frozen=True)
class WindowCall:
    """One window function: ``function(args) OVER (PARTITION BY partition ORDER BY order frame)``.

    ``order`` holds (column, descending, nulls first); ``frame`` is None (SQL's default) or
    (kind, start, end) with kind "rows" or "range", and each bound None (unbounded) or a row
    offset (negative: preceding; 0: the current row, for "range" its peers). ``params``: ntile's
    bucket count; lag/lead's (offset, default value).
    """

    output: str
    function: str
    args: tuple = ()
    partition: tuple = ()
    order: tuple = ()
    frame: tuple | None = None
    params: tuple = ()

    def describe(self) -> str:
        over = []
        if self.partition:
            over.append(f"partition by {', '.join(self.partition)}")
        if self.order:
            over.append("order by " + ", ".join(f"{c}{' desc' if d else ''}" for c, d, _ in self.order))
        if self.frame:
            over.append(f"{self.frame[0]} {self.frame[1]}..{self.frame[2]}")
        return f"{self.function}({', '.join(self.args)}) over ({'; '.join(over)}) AS {self.output}"


def result_type(call: WindowCall, arg: pa.DataType | None) -> pa.DataType:
    fn = call.function
    if fn in ("row_number", "rank", "dense_rank", "ntile", "count", "count_star"):
        return pa.int64()
    if fn in ("percent_rank", "cume_dist", "avg"):
        return pa.float64()
    if fn == "sum":
        return pa.int64() if pa.types.is_integer(arg) else pa.float64()
    return arg


class _Layout:
    """One (partition, order) specification over a table: the sort and its boundaries."""

    def __init__(self, table: pa.Table, partition: tuple, order: tuple):
        keys = [(c, "ascending", "at_end") for c in partition]
        keys += [(c, "descending" if d else "ascending", "at_start" if nf else "at_end") for c, d, nf in order]
        named = {k[0] for k in keys}
        keys += [(f.name, "ascending", "at_end") for f in table.schema if not pa.types.is_nested(f.type)
                 and f.name not in named]  # fmt: skip
        if keys:  # NaN sorts as the largest number (DuckDB's order), not beside the nulls as in Arrow
            flagged, keys = _nan_largest(table, keys)
            self.index = pc.sort_indices(flagged, sort_keys=keys).to_numpy()
        else:
            self.index = np.arange(table.num_rows)
        self.sorted = table.take(self.index)
        n = table.num_rows
        self.n = n
        new_part = _changes(self.sorted, partition, n)
        new_peer = new_part | _changes(self.sorted, tuple(c for c, _, _ in order), n)
        pos = np.arange(n)
        self.pstart = np.maximum.accumulate(np.where(new_part, pos, 0)) if n else pos
        self.pend = _ends(new_part, n)
        self.peer_start = np.maximum.accumulate(np.where(new_peer, pos, 0)) if n else pos
        self.peer_end = _ends(new_peer, n)
        self.new_peer = new_peer
        self.has_order = bool(order)

    def frame(self, frame) -> tuple[np.ndarray, np.ndarray]:
        """Each row's frame as [start, end) positions in sorted order."""
        pos = np.arange(self.n)
        if frame is None:
            return self.pstart, (self.peer_end if self.has_order else self.pend)
        kind, lo, hi = frame
        if kind == "range":
            fs = self.pstart if lo is None else self.peer_start
            fe = self.pend if hi is None else self.peer_end
            return fs, fe
        fs = self.pstart if lo is None else np.clip(pos + lo, self.pstart, self.pend)
        fe = self.pend if hi is None else np.clip(pos + hi + 1, self.pstart, self.pend)
        return fs, np.maximum(fe, fs)


def _changes(table: pa.Table, columns: tuple, n: int) -> np.ndarray:
    """True where a row starts a new run of equal values of ``columns`` (nulls equal to nulls, NaN to NaN)."""
    out = np.zeros(n, bool)
    if n:
        out[0] = True
    if n < 2:
        return out
    for c in columns:
        col = table.column(c).combine_chunks()
        if pa.types.is_null(col.type):  # NULLs only: one run
            continue
        a, b = col.slice(1), col.slice(0, n - 1)
        null_a, null_b = a.is_null().to_numpy(zero_copy_only=False), b.is_null().to_numpy(zero_copy_only=False)
        differ = pc.fill_null(pc.not_equal(a, b), False).to_numpy(zero_copy_only=False)
        if pa.types.is_floating(col.type):
            both_nan = pc.fill_null(pc.and_(pc.is_nan(a), pc.is_nan(b)), False).to_numpy(zero_copy_only=False)
            differ = differ & ~both_nan
        out[1:] |= np.where(null_a | null_b, null_a != null_b, differ)
    return out


def _ends(starts: np.ndarray, n: int) -> np.ndarray:
    """For each row, the end (exclusive) of the run it belongs to."""
    if not n:
        return np.zeros(0, np.int64)
    bounds = np.append(np.flatnonzero(starts), n)
    run = np.cumsum(starts) - 1
    return bounds[run + 1]


def compute(table: pa.Table, calls: list[WindowCall], types: dict[str, pa.DataType]) -> dict[str, pa.Array]:
    """Each call's column, in ``table``'s row order."""
    layouts: dict[tuple, _Layout] = {}
    out = {}
    for call in calls:
        key = (call.partition, call.order)
        if key not in layouts:
            layouts[key] = _Layout(table, call.partition, call.order)
        lay = layouts[key]
        values = _sorted_result(lay, call, types[call.output])
        inverse = np.empty(lay.n, np.int64)
        inverse[lay.index] = np.arange(lay.n)
        out[call.output] = values.take(pa.array(inverse)) if lay.n else values
    return out


def _sorted_result(lay: _Layout, call: WindowCall, out_type: pa.DataType) -> pa.Array:
    fn, n = call.function, lay.n
    pos = np.arange(n)
    size = lay.pend - lay.pstart
    if fn == "row_number":
        return pa.array(pos - lay.pstart + 1)
    if fn == "rank":
        return pa.array(lay.peer_start - lay.pstart + 1)
    if fn == "dense_rank":
        runs = np.cumsum(lay.new_peer)
        return pa.array(runs - runs[lay.pstart] + 1 if n else runs)
    if fn == "percent_rank":
        rank = lay.peer_start - lay.pstart
        with np.errstate(invalid="ignore", divide="ignore"):
            return pa.array(np.where(size > 1, rank / np.maximum(size - 1, 1), 0.0))
    if fn == "cume_dist":
        return pa.array((lay.peer_end - lay.pstart) / np.maximum(size, 1))
    if fn == "ntile":
        (buckets,) = call.params
        if buckets is None:
            return pa.nulls(n, pa.int64())
        r = pos - lay.pstart
        q, rem = size // buckets, size % buckets
        big = (q + 1) * rem
        tile = np.where(r < big, r // (q + 1), rem + (r - big) // np.maximum(q, 1)) + 1
        return pa.array(tile)
    arg = lay.sorted.column(call.args[0]).combine_chunks() if call.args else None
    if fn in OFFSET:
        offset, default = call.params
        if offset is None:
            return pa.nulls(n, out_type)
        src = pos - offset if fn == "lag" else pos + offset
        ok = (src >= lay.pstart) & (src < lay.pend)
        taken = arg.take(pa.array(np.where(ok, src, 0))) if n else arg
        if isinstance(default, float) and pa.types.is_decimal(out_type):  # 0.5 into a DECIMAL: DuckDB's cast
            from ..expr.sqldecimal import cast_decimal

            default = cast_decimal(pa.scalar(repr(default)), out_type, "lag/lead default").as_py()
        fill = pa.scalar(default, out_type) if default is not None else pa.scalar(None, out_type)
        return pc.if_else(pa.array(ok), taken, fill)
    fs, fe = lay.frame(call.frame)
    empty = fe <= fs
    if fn == "count_star":
        return pa.array(fe - fs)
    if fn in VALUE:
        at = fs if fn == "first_value" else fe - 1
        taken = arg.take(pa.array(np.where(empty, 0, at))) if n else arg
        return pc.if_else(pa.array(empty), pa.scalar(None, out_type), taken) if n else taken
    valid = arg.is_valid().to_numpy(zero_copy_only=False) if n else np.zeros(0, bool)
    counts = np.concatenate([[0], np.cumsum(valid)])
    count = counts[fe] - counts[fs]
    if fn == "count":
        return pa.array(count)
    if fn in ("sum", "avg"):
        return _frame_sum(arg, valid, fs, fe, count, fn, out_type)
    return _frame_extreme(arg, valid, fs, fe, lay.pstart, count, fn == "min", out_type)


def _range_sums(vals: np.ndarray, fs: np.ndarray, fe: np.ndarray) -> np.ndarray:
    """``vals[fs[i]:fe[i]].sum()`` for every i, from a segment tree of pairwise sums (O(n log n)): a
    difference of float prefix sums loses a frame's small values to a large one before it (after
    1e17, prefix[k + 2] - prefix[k] of 1.0 and 1.0 is 0.0)."""
    out = np.zeros(len(fs))
    lo, hi = np.asarray(fs, np.int64).copy(), np.asarray(fe, np.int64).copy()
    level = vals.astype(np.float64)
    while (active := lo < hi).any():
        left = active & (lo & 1 == 1)
        out[left] += level[lo[left]]
        lo[left] += 1
        right = active & (hi & 1 == 1)
        hi[right] -= 1
        out[right] += level[hi[right]]
        lo >>= 1
        hi >>= 1
        level = np.append(level, 0.0) if len(level) % 2 else level
        level = level[0::2] + level[1::2]
    return out


def _frame_sum(arg, valid, fs, fe, count, fn, out_type) -> pa.Array:
    if pa.types.is_null(arg.type):  # a column of NULLs only: every frame's sum is NULL
        return pa.nulls(len(arg), out_type if not pa.types.is_null(out_type) else pa.float64())
    integer = pa.types.is_integer(arg.type)
    vals = np.where(valid, arg.fill_null(0).to_numpy(zero_copy_only=False), 0)
    vals = vals.astype(np.int64 if integer else np.float64)
    special = None
    if not integer and not np.isfinite(vals).all():
        # NaN and infinities would spoil every later prefix sum: count them per frame instead
        def in_frame(mask):
            c = np.concatenate([[0], np.cumsum(mask)])
            return (c[fe] - c[fs]) > 0

        nan, pos, neg = in_frame(np.isnan(vals)), in_frame(vals == np.inf), in_frame(vals == -np.inf)
        special = np.where(nan | (pos & neg), np.nan, np.where(pos, np.inf, -np.inf))
        has_special = nan | pos | neg
        vals = np.where(np.isfinite(vals), vals, 0.0)
    if integer:  # exact: prefix sums of integers
        prefix = np.concatenate([np.zeros(1, vals.dtype), np.cumsum(vals)])
        sums = prefix[fe] - prefix[fs]
    else:
        sums = _range_sums(vals, fs, fe)
    if special is not None:
        sums = np.where(has_special, special, sums)
    if integer:  # an int64 prefix sum that wrapped is far from the same sum in floats
        approx = np.concatenate([[0.0], np.cumsum(vals.astype(np.float64))])
        if np.any(np.abs((approx[fe] - approx[fs]) - sums.astype(np.float64)) > 2.0**62):
            raise TidalError("a window SUM of an integer column is out of BIGINT's range")
    none = count == 0
    if fn == "avg":
        with np.errstate(invalid="ignore", divide="ignore"):
            return pa.array(sums / np.maximum(count, 1), mask=none)
    return pa.array(sums, out_type, mask=none)


def _frame_extreme(arg, valid, fs, fe, pstart, count, smallest: bool, out_type) -> pa.Array:
    """MIN/MAX over each frame, on dense ranks of the values (any orderable type)."""
    n = len(arg)
    if n == 0 or pa.types.is_null(arg.type):  # nothing, or a column of NULLs only (no order to rank by)
        return pa.nulls(n, out_type)
    ranks = pc.rank(arg, sort_keys="ascending", tiebreaker="dense").to_numpy()
    ranks = ranks.astype(np.int64)
    sentinel = np.iinfo(np.int64).max if smallest else np.iinfo(np.int64).min
    ranks = np.where(valid, ranks, sentinel)
    best = np.empty(n, np.int64)
    if np.array_equal(fs, pstart):
        # frames that start at their partition's start: a running extreme per partition
        op = np.minimum if smallest else np.maximum
        starts = np.flatnonzero(np.diff(np.concatenate([[-1], pstart])) != 0)
        running = np.empty(n, np.int64)
        for s, e in zip(starts, np.append(starts[1:], n), strict=True):
            running[s:e] = op.accumulate(ranks[s:e])
        best = np.where(fe > fs, running[np.maximum(fe - 1, 0)], sentinel)
    else:
        reduce = np.min if smallest else np.max
        for i in range(n):
            best[i] = reduce(ranks[fs[i] : fe[i]]) if fe[i] > fs[i] else sentinel
    none = count == 0
    # the value of a rank: the first row holding it
    first_of = np.full(int(ranks[valid].max(initial=0)) + 1, 0, np.int64)
    rows_valid = np.flatnonzero(valid)
    first_of[ranks[rows_valid][::-1]] = rows_valid[::-1]
    taken = arg.take(pa.array(np.where(none, 0, first_of[np.where(none, 0, best)])))
    return pc.if_else(pa.array(none), pa.scalar(None, out_type), taken)


class WindowFunctionsOp(RecomputedSnapshot):
    """The input rows with each call's column, recomputed per changed tick (module docstring)."""

    name = "WindowFunctions"

    def __init__(self, schema: pa.Schema, calls: list[WindowCall], out_schema: pa.Schema, at_end: bool = False):
        super().__init__(schema, out_schema, at_end)
        self.calls = list(calls)
        self.types = {f.name: f.type for f in out_schema}
        when = "computed once at end of input" if at_end else "recomputed per changed tick"
        self.variant = "; ".join(c.describe() for c in calls) + f"; {when}"

        # at end of input, over start edges only: the batches kept in Arrow and computed in one pass
        self.columnar = at_end
        self.kept: list[pa.Table] = []

        # Columns every call partitions by: a change can alter only its own partition of them, so a
        # tick recomputes the partitions it touched, not the whole snapshot (which made a live view's
        # cost grow with the square of its input). Then the snapshot and the output are kept per
        # partition (``parts``, ``part_output``) instead of in ``snapshot_rows`` and ``output``.
        common = set.intersection(*(set(c.partition) for c in calls)) if calls else set()
        self.partition_index = tuple(i for i, n in enumerate(self.names) if n in common)
        self.parts: dict[tuple, Counter] = {}
        self.part_output: dict[tuple, list[tuple]] = {}
        if self.partition_index:
            self.variant += "; only the partitions a tick changes"

    def on_batch(self, batch: EventBatch) -> None:
        if self._keep_in_arrow(batch) is None:
            return super().on_batch(batch)

    def _leave_columnar(self) -> None:
        """Input that is not start edges: the kept rows become row changes (one tick at the end)."""
        self.columnar = False
        for table in self.kept:
            rows = list(zip(*[table.column(n).to_pylist() for n in self.names], strict=True))
            self._seq += 1
            heapq.heappush(self.changes, (self.last or 0, self._seq, BULK, rows))
        self.kept = []

    def on_completed(self) -> None:
        if not self.columnar:
            return super().on_completed()
        kept, self.kept = self.kept, []
        if kept:
            table = pa.concat_tables(kept).combine_chunks()
            extra = compute(table, self.calls, self.types)
            cols = {n: table.column(n).combine_chunks() for n in self.names}
            cols.update({c.output: extra[c.output].cast(self.types[c.output]) for c in self.calls})
            n = table.num_rows
            self.emit(EventBatch(np.full(n, self.last, np.int64), np.full(n, INFINITY, np.int64), cols))
        self.emit_completed()

    def _partition_of(self, row: tuple) -> tuple:
        return partition_key(row, self.partition_index)  # NaN: one key; -0.0 and 0.0: one key

    def _close(self, bound: int) -> None:
        """Apply every tick before ``bound``; recompute and diff only the partitions each one touched."""
        if not self.partition_index:
            return super()._close(bound)
        out_sync, out_other, out_rows = [], [], []
        while self.changes and self.changes[0][0] < bound:
            tick = self.changes[0][0]
            touched = set()
            while self.changes and self.changes[0][0] == tick:
                _, _, delta, change = heapq.heappop(self.changes)
                for row in change if delta == BULK else (change,):
                    key = self._partition_of(row)
                    part = self.parts.setdefault(key, Counter())
                    part[row] += 1 if delta == BULK else delta
                    if part[row] == 0:
                        del part[row]
                        if not part:
                            del self.parts[key]
                    touched.add(key)
            old = [r for key in touched for r in self.part_output.pop(key, ())]
            new = self._computed([r for key in touched if key in self.parts for r in self.parts[key].elements()])
            self._emit_changes(tick, old, new, out_sync, out_other, out_rows)
            for row in new:
                self.part_output.setdefault(self._partition_of(row), []).append(row)
        self._emit_rows(out_sync, out_other, out_rows)

    def snapshot(self) -> dict:
        state = super().snapshot()
        if self.partition_index:  # the checkpoint's format does not depend on how the rows are kept
            state["rows"] = [item for part in self.parts.values() for item in part.items()]
            state["output"] = [row for rows in self.part_output.values() for row in rows]
        state["columnar"] = self.columnar
        state["kept"] = [list(zip(*[t.column(n).to_pylist() for n in self.names], strict=True)) for t in self.kept]
        return state

    def restore(self, state: dict) -> None:
        super().restore(state)
        if self.partition_index:
            self.parts, self.part_output = {}, {}
            for row, count in self.snapshot_rows.items():
                self.parts.setdefault(self._partition_of(row), Counter())[row] = count
            for row in self.output:
                self.part_output.setdefault(self._partition_of(row), []).append(row)
            self.snapshot_rows, self.output = Counter(), []
        self.columnar = state.get("columnar", False)
        kept = [r for rows in state.get("kept", []) for r in rows]
        self.kept = [pa.table({n: pa.array([r[i] for r in kept], self.schema.field(n).type)
                               for i, n in enumerate(self.names)})] if kept else []  # fmt: skip

    def recompute(self) -> list[tuple]:
        return self._computed(list(self.snapshot_rows.elements()))

    def _computed(self, rows: list[tuple]) -> list[tuple]:
        """``rows`` with each call's value appended (rows that are whole partitions of every call)."""
        table = pa.table(
            {n: pa.array([r[i] for r in rows], self.schema.field(n).type) for i, n in enumerate(self.names)}
        )
        extra = compute(table, self.calls, self.types)
        # values as the rows hold them (recomputed.row_values: one NaN, -0.0 apart from 0.0), so an output row
        # and its recomputed self are one key of the difference, and -0.0 and 0.0 two
        columns = [row_values(table.column(n), True) for n in self.names]
        columns += [row_values(extra[c.output], True) for c in self.calls]
        return list(zip(*columns, strict=True)) if rows else []
