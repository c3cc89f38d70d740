"""ORDER BY ... LIMIT/OFFSET over a changing result: the rows of each snapshot's window.

Temporal semantics: at every instant ``T`` the output snapshot holds the rows at positions
``offset .. offset + limit - 1`` of the input snapshot at ``T``, ordered by the ORDER BY keys
(each ascending or descending, nulls last unless ``NULLS FIRST``); rows equal on the keys are
ordered by all their columns (ascending, nulls last), so which of several tied rows make the
cut depends only on the snapshot. Without ORDER BY the order is that tie-break alone, except over
start edges only (nothing is ever retracted): there the window is the rows at arrival positions
``offset .. offset + limit - 1`` (in time order, then arrival order within a tick), so LIMIT over one
file's rows takes the file's first rows, as DuckDB does.

The input is start edges (inserts), end edges (retractions) and intervals (an insert now, a
retraction at the end). A tick ``t`` is complete once a later tick or a punctuation beyond it
arrives; then its changes are applied to the snapshot (a multiset of rows) and, if they can
have moved the window, the window is recomputed and the difference is emitted at ``t``: an end
edge for each row that left (a retraction of the row as emitted), a start edge for each row
that entered. A change entirely after the window's last row (the window full) moves nothing
and costs no recomputation, so a long stream whose new rows sort late is cheap; other ticks
cost a pass over the snapshot. When the input is start edges only (nothing is ever retracted),
a row outside the window can never enter it later: each tick's new rows are first cut to the
window's size by Arrow (a selection of the first rows when there are no nulls, else a sort: a
large relational result costs one columnar pass, not a Python pass over every row), and the
snapshot keeps only the window's rows.
"""

from __future__ import annotations

import functools
import heapq
from collections import Counter

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..core.batch import EventBatch
from ..core.errors import PlanError
from .recomputed import RecomputedSnapshot


def _compare_values(a, b) -> int:
    if a == b:
        return 0
    a_nan, b_nan = a != a, b != b  # NaN: equal to itself and larger than every number (DuckDB's order)
    if a_nan or b_nan:
        return 0 if a_nan and b_nan else 1 if a_nan else -1
    return -1 if a < b else 1 if a > b else 0  # -0.0 (recomputed.NEGATIVE_ZERO) and 0.0 are tied


def row_order(positions: list[tuple[int, bool, bool]], width: int):
    """A sort key for row tuples: ``positions`` are (column index, descending, nulls first) for
    the ORDER BY keys; then every column ascending, nulls last."""

    keys = list(positions) + [(i, False, False) for i in range(width)]

    def compare(x: tuple, y: tuple) -> int:
        for i, desc, nulls_first in keys:
            a, b = x[i], y[i]
            if a is None or b is None:
                if a is None and b is None:
                    continue
                null_before = -1 if nulls_first else 1  # where a null goes relative to a value
                return null_before if a is None else -null_before
            c = _compare_values(a, b)
            if c:
                return -c if desc else c
        return 0

    return functools.cmp_to_key(compare)


PER_KEY_NULL_PLACEMENT = int(pa.__version__.split(".")[0]) >= 25


def _sort_keys(table: pa.Table, order) -> list[tuple[str, str, str]]:
    for name, _, _ in order:
        t = table.schema.field(name).type
        if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):  # Arrow sorts none
            raise PlanError(f"ORDER BY a LIST value ({name}) is not supported")
    keys = [(name, "descending" if desc else "ascending", "at_start" if nf else "at_end") for name, desc, nf in order]
    keys += [
        (f.name, "ascending", "at_end")
        for f in table.schema
        if not pa.types.is_nested(f.type) and f.name not in {k[0] for k in keys}
    ]
    return keys


def first_rows(table: pa.Table, order, k: int) -> np.ndarray:
    """The positions of the first ``k`` rows in ORDER BY's order (see :func:`order_indices`), in any order.
    One selection pass (Arrow's ``select_k``) instead of sorting every row when rows tied on every column
    are equal values (no nulls, no NaN, no zeros that may be -0.0): then which of them are picked cannot
    change the rows; otherwise the stable sort decides, as for the whole result."""
    if k < table.num_rows and all(_ties_are_equal(col) for col in table.columns):
        keys = [(name, direction) for name, direction, _ in _sort_keys(table, order)]
        return pc.select_k_unstable(table, k, sort_keys=keys).to_numpy()
    return order_indices(table, order).to_numpy()[:k]


def _ties_are_equal(col) -> bool:
    if col.null_count:
        return False
    if pa.types.is_floating(col.type):
        return not pc.any(pc.or_(pc.is_nan(col), pc.equal(col, 0))).as_py()
    return not pa.types.is_nested(col.type)


def order_indices(table: pa.Table, order) -> pa.Array:
    """ORDER BY's row order: each key ascending or descending, nulls last unless NULLS FIRST; rows
    tied on the keys by every (flat) column ascending, as the changelog's TopK orders them."""
    keys = _sort_keys(table, order)
    table, keys = _nan_largest(table, keys)
    if PER_KEY_NULL_PLACEMENT:
        return pc.sort_indices(table, sort_keys=keys)
    # older pyarrow: one null placement for all keys (the first key's)
    return pc.sort_indices(table, sort_keys=[k[:2] for k in keys], null_placement=keys[0][2])


def _nan_largest(table: pa.Table, keys: list[tuple[str, str, str]]):
    """Arrow puts NaN after every number in both directions; DuckDB orders NaN as the largest number
    (last ascending, first descending). A floating key holding NaN is sorted by whether it is NaN
    first (NULL stays NULL, placed as the key's nulls), then by its value."""
    out = []
    for name, direction, nulls in keys:
        col = table.column(name)
        if pa.types.is_floating(col.type) and pc.any(pc.is_nan(col)).as_py():
            flag = f"\0nan {name}"
            if flag not in table.column_names:  # (a key named twice: PARTITION BY f ORDER BY f)
                table = table.append_column(flag, pc.cast(pc.is_nan(col), pa.int8()))
            out.append((flag, direction, nulls))
        out.append((name, direction, nulls))
    return table, out


def _candidates(rows: list[tuple], order, names: list[str], stop: int) -> list[tuple]:
    """The rows that can be among the first ``stop`` in window order: those whose first ORDER BY key is
    no worse than the ``stop``-th best value of that key (ties at it kept: the full order decides
    among them). One numpy selection instead of a Python comparison per row; all rows when the first
    key is not plain numbers (NULL, NaN: their placement is left to the full order) or when few."""
    if not order or stop <= 0 or len(rows) <= 8 * stop + 256:
        return rows
    name, desc, _ = order[0]
    i = names.index(name)
    vals = np.array([r[i] for r in rows])
    if vals.dtype.kind not in "iuf" or (vals.dtype.kind == "f" and np.isnan(vals).any()):
        return rows
    if desc:
        keep = vals >= np.partition(vals, len(vals) - stop)[len(vals) - stop]
    else:
        keep = vals <= np.partition(vals, stop - 1)[stop - 1]
    return [r for r, k in zip(rows, keep.tolist(), strict=True) if k]


class TopKOp(RecomputedSnapshot):
    """The rows ``offset .. offset + limit - 1`` of every snapshot (see the module docstring)."""

    name = "TopK"

    def __init__(
        self,
        schema: pa.Schema,
        order: list[tuple[str, bool, bool]],
        limit: int | None,
        offset: int,
        start_edges_only: bool = False,
    ):
        super().__init__(schema, schema)
        self.order = order
        self.prune = start_edges_only and limit is not None
        self.first_rows = start_edges_only and not order  # the window by arrival position
        self.seen = 0  # rows that arrived (first_rows)
        positions = [(self.names.index(n), desc, bool(nulls_first)) for n, desc, nulls_first in order]
        self.key = row_order(positions, len(self.names))
        self.limit, self.offset = limit, offset
        keys = ", ".join(f"{n} {'desc' if d else 'asc'}" for n, d, _ in order) or "(all columns)"
        keys = "arrival (no ORDER BY, nothing retracted)" if self.first_rows else keys
        self.variant = (
            f"order by {keys}; offset {offset}, limit {limit}; window recomputed only when a change reaches it"
        )

    def admit(self, batch: EventBatch) -> EventBatch:
        """Start edges only: each tick's rows beyond the first ``offset + limit`` (in window order)
        can never be in the window."""
        if self.first_rows:
            stop = None if self.limit is None else self.offset + self.limit
            at = self.seen + np.arange(len(batch))
            self.seen += len(batch)
            keep = at >= self.offset if stop is None else (at >= self.offset) & (at < stop)
            return batch if keep.all() else batch.take(np.flatnonzero(keep))
        if not self.prune:
            return batch
        stop = self.offset + self.limit
        bounds = np.flatnonzero(np.diff(batch.sync)) + 1
        starts, ends = np.concatenate([[0], bounds]), np.concatenate([bounds, [len(batch)]])
        if all(e - s <= stop for s, e in zip(starts, ends, strict=True)):
            return batch
        table = pa.table({n: batch.columns[n] for n in self.names})
        keep = []
        for s, e in zip(starts.tolist(), ends.tolist(), strict=True):
            if e - s <= stop:
                keep.append(np.arange(s, e))
            else:
                part = first_rows(table.slice(s, e - s), self.order, stop)
                keep.append(np.sort(part) + s)
        return batch.take(np.concatenate(keep))

    def matters(self, row: tuple) -> bool:
        """Not when the window is full and the row sorts after its last row."""
        if self.limit == 0:  # the window is always empty
            return False
        if self.first_rows:  # admit() let in only rows of the window
            return True
        if self.limit is None or len(self.output) < self.limit:
            return True
        return self.key(row) <= self.key(self.output[-1])

    def recompute(self) -> list[tuple]:
        rows = list(self.snapshot_rows.elements())
        if self.first_rows:  # admit() kept exactly the window's rows, in arrival order
            return rows
        stop = None if self.limit is None else self.offset + self.limit
        if stop is None:
            ranked = sorted(rows, key=self.key)
        else:
            ranked = heapq.nsmallest(stop, _candidates(rows, self.order, self.names, stop), key=self.key)
        if self.prune:  # nothing is retracted: rows after the window are never needed again
            self.snapshot_rows = Counter(ranked)
        return ranked[self.offset : stop]

    def snapshot(self) -> dict:
        return {**super().snapshot(), "seen": self.seen}

    def restore(self, state: dict) -> None:
        super().restore(state)
        self.seen = state.get("seen", 0)
