"""Columnar event batches: the unit of data that flows between operators.

An :class:`EventBatch` holds, for ``n`` events, the control columns ``sync`` and ``other``
(int64 numpy arrays), an absence vector (``absent``: a numpy bool array, True where the
event has been filtered out, or ``None`` when every event is present), the grouping
``key`` (an Arrow array, ``None`` for the empty key of an ungrouped stream) with its
materialised ``hash`` (int64 numpy array), and one Arrow array per payload field.

Event kinds are encoded by the two timestamps, as in Trill:

* interval ``[vs, ve)``: ``sync = vs``, ``other = ve`` (``vs < ve``); a point at ``t`` is ``[t, t+1)``
* start edge at ``vs``: ``sync = vs``, ``other = INFINITY``
* end edge of ``[vs, ve)``: ``sync = ve``, ``other = vs`` (``other < sync``)

A batch of point events may leave ``other`` unset (``EventBatch(sync, None, ...)``): it is
``sync + 1`` and is computed only when something reads it, so a source of points that is
filtered, counted or aggregated never allocates it. A batch of start edges may likewise give
``other`` as :data:`START_EDGES`: INFINITY for every event, made when first read.

Batches are immutable once built: operators make new batches that share unchanged
columns (a projection "swings the pointer"), so one batch can feed several consumers.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import pyarrow as pa

from .time import INFINITY


class _StartEdges:
    """The other times of a batch of start edges, not made yet: INFINITY for every event."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "START_EDGES"

    def __reduce__(self):  # one marker: a pickled or copied batch still has it
        return "START_EDGES"


START_EDGES = _StartEdges()

SYNC_FIELD = "sync_time"
OTHER_FIELD = "other_time"
KEY_FIELD = "__key"
HASH_FIELD = "__hash"
CONTROL_FIELDS = (SYNC_FIELD, OTHER_FIELD)

DEFAULT_BATCH_SIZE = 80_000
START_BATCH_SIZE = 250


def as_numpy(col: pa.Array) -> np.ndarray:
    """A numpy view of an Arrow array without copying when possible (numeric, no nulls)."""
    if isinstance(col, np.ndarray):
        return col
    try:
        return col.to_numpy(zero_copy_only=True)
    except (pa.ArrowInvalid, NotImplementedError):
        return col.to_numpy(zero_copy_only=False)


def as_arrow(values) -> pa.Array:
    """An Arrow array over ``values``; numeric numpy arrays are wrapped without copying."""
    if isinstance(values, pa.ChunkedArray):
        return values.combine_chunks()
    if isinstance(values, pa.Array):
        return values
    return pa.array(values)


def _numeric(t: pa.DataType) -> bool:
    return pa.types.is_integer(t) or pa.types.is_floating(t)


def gather(col: pa.Array, indices: np.ndarray) -> pa.Array:
    """``col`` at ``indices`` (int64 numpy): numpy's gather for numeric columns without nulls, else Arrow's take."""
    if not col.null_count and _numeric(col.type):
        return pa.array(col.to_numpy(zero_copy_only=True)[indices], type=col.type)
    return col.take(pa.array(indices, type=pa.int64()))


class EventBatch:
    __slots__ = ("sync", "_other", "absent", "key", "hash", "columns")

    def __init__(
        self,
        sync: np.ndarray,
        other: np.ndarray | None,
        columns: dict[str, pa.Array],
        absent: np.ndarray | None = None,
        key: pa.Array | None = None,
        hash: np.ndarray | None = None,
    ):
        self.sync = sync
        self._other = other  # None: point events, other = sync + 1; START_EDGES: INFINITY (made when first read)
        self.columns = columns
        self.absent = absent
        self.key = key
        self.hash = hash

    @property
    def other(self) -> np.ndarray:
        other = self._other
        if other is None:
            other = self._other = self.sync + 1
        elif other is START_EDGES:
            other = self._other = np.full(len(self.sync), INFINITY, dtype=np.int64)
        return other

    @property
    def points(self) -> bool:
        """True when every event is known to be a point without looking (``other`` was never given)."""
        return self._other is None

    @property
    def starts(self) -> bool:
        """True when every event is known to be a start edge without looking (``other`` given as
        :data:`START_EDGES` and not read yet)."""
        return self._other is START_EDGES

    def _other_at(self, index):
        """``other`` at ``index`` (positions or a slice), left unmade for points and start edges."""
        other = self._other
        return other if other is None or other is START_EDGES else other[index]

    # -- size -------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.sync)

    @property
    def present_count(self) -> int:
        if self.absent is None:
            return len(self.sync)
        return len(self.sync) - int(np.count_nonzero(self.absent))

    @property
    def names(self) -> list[str]:
        return list(self.columns)

    def present_mask(self) -> np.ndarray:
        if self.absent is None:
            return np.ones(len(self.sync), dtype=bool)
        return ~self.absent

    # -- derivation -------------------------------------------------------------------
    def replace(self, **changes) -> EventBatch:
        other = self._other
        if other is None and "sync" in changes and "other" not in changes:
            other = self.other  # points of the old sync times: keep their lifetimes
        fields = {
            "sync": self.sync,
            "other": other,
            "columns": self.columns,
            "absent": self.absent,
            "key": self.key,
            "hash": self.hash,
        }
        fields.update(changes)
        return EventBatch(**fields)

    def with_absent(self, absent: np.ndarray | None) -> EventBatch:
        if absent is not None and not absent.any():
            absent = None
        return self.replace(absent=absent)

    def take(self, indices: np.ndarray) -> EventBatch:
        np_idx = np.asarray(indices).astype(np.int64, copy=False)
        absent = None if self.absent is None else self.absent[np_idx]
        return EventBatch(
            sync=self.sync[np_idx],
            other=self._other_at(np_idx),
            columns={k: gather(v, np_idx) for k, v in self.columns.items()},
            absent=absent if absent is not None and absent.any() else None,
            key=None if self.key is None else gather(self.key, np_idx),
            hash=None if self.hash is None else self.hash[np_idx],
        )

    def slice(self, start: int, stop: int) -> EventBatch:
        n = stop - start
        return EventBatch(
            sync=self.sync[start:stop],
            other=self._other_at(slice(start, stop)),
            columns={k: v.slice(start, n) for k, v in self.columns.items()},
            absent=None if self.absent is None else self.absent[start:stop],
            key=None if self.key is None else self.key.slice(start, n),
            hash=None if self.hash is None else self.hash[start:stop],
        )

    def compact(self) -> EventBatch:
        """Drop absent events (copies only when some are absent)."""
        if self.absent is None:
            return self
        return self.take(np.flatnonzero(~self.absent))

    # -- Arrow ------------------------------------------------------------------------
    def to_record_batch(self, with_key: bool = False) -> pa.RecordBatch:
        """Present events as ``sync_time, other_time, [key, hash,] payload...``.

        Numeric columns are shared with the batch when no event is absent.
        """
        b = self.compact()
        arrays = [pa.array(b.sync, type=pa.int64()), pa.array(b.other, type=pa.int64())]
        names = [SYNC_FIELD, OTHER_FIELD]
        if with_key and b.key is not None:
            arrays += [b.key, pa.array(b.hash, type=pa.int64())]
            names += [KEY_FIELD, HASH_FIELD]
        arrays += list(b.columns.values())
        names += list(b.columns)
        return pa.RecordBatch.from_arrays(arrays, names=names)

    @classmethod
    def from_record_batch(cls, rb: pa.RecordBatch) -> EventBatch:
        """Inverse of :meth:`to_record_batch` (columns named ``sync_time``/``other_time``)."""
        names = rb.schema.names
        sync = as_numpy(rb.column(names.index(SYNC_FIELD)))
        other = as_numpy(rb.column(names.index(OTHER_FIELD)))
        key = hsh = None
        if KEY_FIELD in names:
            key = rb.column(names.index(KEY_FIELD))
            hsh = as_numpy(rb.column(names.index(HASH_FIELD)))
        skip = {SYNC_FIELD, OTHER_FIELD, KEY_FIELD, HASH_FIELD}
        cols = {n: rb.column(i) for i, n in enumerate(names) if n not in skip}
        return cls(sync=sync, other=other, columns=cols, key=key, hash=hsh)

    @classmethod
    def empty(cls, schema: pa.Schema) -> EventBatch:
        return cls(
            sync=np.empty(0, np.int64),
            other=np.empty(0, np.int64),
            columns={f.name: pa.array([], type=f.type) for f in schema},
        )

    def __repr__(self) -> str:
        return f"EventBatch(n={len(self)}, present={self.present_count}, fields={self.names})"


def concat_batches(batches: Sequence[EventBatch]) -> EventBatch:
    """Concatenate batches with the same payload fields (absent events kept, as flagged)."""
    if len(batches) == 1:
        return batches[0]
    first = batches[0]
    any_absent = any(b.absent is not None for b in batches)
    keyed = first.key is not None
    return EventBatch(
        sync=np.concatenate([b.sync for b in batches]),
        other=_concat_others(batches),
        columns={k: pa.concat_arrays([b.columns[k] for b in batches]) for k in first.columns},
        absent=np.concatenate([b.present_mask() for b in batches]) ^ True if any_absent else None,
        key=pa.concat_arrays([b.key for b in batches]) if keyed else None,
        hash=np.concatenate([b.hash for b in batches]) if keyed else None,
    )


def _concat_others(batches: Sequence[EventBatch]):
    if all(b.points for b in batches):
        return None
    if all(b.starts for b in batches):
        return START_EDGES
    return np.concatenate([b.other for b in batches])


def event_kinds(sync: np.ndarray, other: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Masks (interval, start_edge, end_edge) for the given control columns."""
    start = other == INFINITY
    end = other < sync
    interval = ~(start | end)
    return interval, start, end


class BatchSizer:
    """Adaptive maximum batch size (Trill whitepaper section 7.4).

    Starts small so that sparse punctuations see low latency, watches how many events
    actually arrive between flushes, and settles on 1.25x the largest fill observed
    (capped at the default size); afterwards a running average keeps adjusting it.
    With ``adaptive=False`` the size is fixed at ``default``.
    """

    __slots__ = ("default", "start", "adaptive", "observe", "max_size", "_fills", "_seen", "_avg", "_settled")

    def __init__(
        self,
        default: int = DEFAULT_BATCH_SIZE,
        start: int = START_BATCH_SIZE,
        adaptive: bool = True,
        observe: int = 8,
    ):
        if default < 1:
            raise ValueError(f"batch size must be positive, got {default}")
        self.default = default
        self.start = min(start, default)
        self.adaptive = adaptive
        self.observe = observe
        self.max_size = self.start if adaptive else default
        self._fills: list[int] = []
        self._seen = 0
        self._avg = 0.0
        self._settled = not adaptive

    def on_events(self, n: int) -> None:
        """Events accumulated since start; with no flush in the first ``default`` events, go big."""
        if self._settled:
            return
        self._seen += n
        if self._seen >= self.default and not self._fills:
            self.max_size = self.default
            self._settled = True

    def on_flush(self, fill: int) -> None:
        """A punctuation flushed a batch holding ``fill`` events accumulated since the last flush."""
        if not self.adaptive:
            return
        if not self._settled:
            self._fills.append(fill)
            if len(self._fills) >= self.observe:
                self.max_size = self._bounded(max(self._fills) * 1.25)
                self._avg = float(np.mean(self._fills))
                self._settled = True
            return
        self._avg = 0.9 * self._avg + 0.1 * fill
        self.max_size = self._bounded(max(self._avg * 1.25, 1))

    def _bounded(self, size: float) -> int:
        return int(min(max(size, 1), self.default))


def iter_slices(n: int, size: int) -> Iterable[tuple[int, int]]:
    for start in range(0, n, size):
        yield start, min(start + size, n)
