"""Impatience sort: incremental sorting of an out-of-order stream of int64 timestamps.

Guarantees of :class:`ImpatienceSorter`:

* Every pushed element receives a global row id: the number of elements pushed before it
  (0, 1, 2, ... across all ``push`` calls, late elements included).  The sorter only moves
  ``(time, row_id)`` pairs; callers gather payload columns with ``np.take(col, row_ids)``.
* ``punctuate(t)`` releases every buffered element with ``time <= t`` in non-decreasing time order.
  The release is stable: equal times come out in arrival (row id) order.  Across successive
  punctuations the concatenated output is also non-decreasing and stable.
* The *watermark* is the largest punctuation seen so far (initially ``INT64_MIN``).  A pushed element
  with ``time < watermark`` is *late*: it can no longer be released in order, so it is never placed
  into a run and never released.  ``push`` reports late elements through its returned mask; the
  caller decides the policy (drop, adjust, side-output).  An element with ``time == watermark`` is
  not late: it is buffered and released by the next punctuation (or ``flush_all``), which keeps the
  output non-decreasing because everything already released has ``time <= watermark``.
* Punctuations that go backwards are harmless: the watermark never decreases and such a call
  releases nothing.
* ``flush_all()`` releases everything (end of stream) without moving the watermark.

Algorithm (Impatience sort, after Chandramouli et al., "Impatience is a Virtue", ICDE 2018):
buffered elements live in sorted runs.  A new element goes to the first run (lowest index) whose
last time ("tail") is ``<= time``; tails therefore stay strictly descending across runs, so the
choice is a binary search, short-circuited by speculative checks of the run used last and of run 0.
If no run fits a new run is opened at the end.  On a punctuation each run gives up its prefix with
``time <= t`` (found by galloping search since runs are sorted), emptied runs are dropped, and the
prefixes are merged two at a time, always the two shortest first (Huffman order).  The merge
compares ``(time, row_id)`` so that ties keep arrival order whatever the merge tree looks like.

Storage: all runs share one growable pool (a (2, capacity) array: times and row ids).  Each run owns a
contiguous region ``[start, stop)`` with an allocation limit; a full region is relocated to the end of
the pool with doubled capacity, and a full pool is compacted into a fresh one.  Per-element work (the
placement loop, cutting and merging) runs in numba-compiled functions; Python only runs per batch and
per punctuation.

Large batches (``chunk_min`` elements or more, 8192 by default) skip placement: the batch's elements at
or above every element before them (those held in the in-order queue included) extend one *in-order
queue* (already sorted by (time, row id): nothing to do), and a stable radix sort of the others (their
arrival order is their row id order, so ties stay stable) makes them one sorted *chunk* in a few linear
passes, where placing a badly disordered batch costs a search per element among many runs. When more
than 5% of the batch is out of order (or the queue is long after such a batch: punctuations far apart), its
in-order elements are merged with the sorted others into a chunk of their own instead; above 25%, the whole batch
is sorted by a scatter on the times' high bits and an insertion sort within each bucket
(:mod:`.impatience_bucket`: times a bounded jitter from their place, as event times that arrive a few
seconds late), or, when that declines (the times crowd into few buckets), radix sorted. A batch of more
than 65,536 elements is cut into chunks of that many (a radix sort's buckets then stay in cache), the last
one taking a rest too short for a chunk.
Chunks and the queue live beside the runs; a punctuation cuts each one's prefix ``<= t`` too, and the
pieces are merged shortest first (the queue's prefix, mostly the largest, last). After a nearly sorted batch
(at most 5% out of order) the next one inserts its out-of-order elements into the queue itself when their
place lies within 1,024 of the queue's tail (the larger times moved up, at most two moves per element of the
batch; only while the last such batch had none farther back, else a merge is due anyway), and a release of
only the queue's prefix hands over the queue's buffers as its output (the rest moves to fresh ones): input
with a few events slightly late is then sorted in one pass with no copy at the release. A batch whose other
times span more than 2**33 is placed as usual (after a nearly sorted one: argsorted into a chunk). (The radix
sort is compiled here: numpy's stable argsort of int64 is a comparison sort, timsort, about half as fast on
such batches.)

A release from many runs of similar length radix sorts the runs' prefixes (a few linear passes) instead
of merging them two at a time (``log2(runs)`` moves per element, each with a branch the processor cannot
predict); :func:`~tidal.ops.impatience_kernels._radix_heads` picks by the merge tree's cost.  A release
of at most 128 elements is insertion sorted in place (a merge tree would allocate for each merge).
"""

from __future__ import annotations

import heapq

import numpy as np
from numba.typed import List

from .impatience_bucket import _bucket_chunk
from .impatience_chunks import _merge_into, _merge_many, _radix_chunk, _split_insert, _split_ordered
from .impatience_kernels import (
    _LAST,
    _LIMIT,
    _MIN_CAP,
    _NEED,
    _NLATE,
    _NO_IDS,
    _NRUNS,
    _ROW0,
    _START,
    _STOP,
    _TAIL,
    _USED,
    _WM,
    _compact_pool,
    _fused_kernel,
    _merge2,
    _punctuate_kernel,
    _push_kernel,
)
from .join.store import _pool_empty as pool_empty
from .reorder_queue import InOrderQueue, scratch

INT64_MIN = np.iinfo(np.int64).min
INT64_MAX = np.iinfo(np.int64).max
_CHUNK_MIN = 8192  # a pushed batch of this many elements is radix sorted into a chunk, not placed
_QUEUE_MAX = 1 << 18  # elements the in-order queue holds before a batch in order becomes a chunk instead
_MERGED = 0.05  # a chunk push with more of its elements out of order is merged into a chunk of its own
_DISORDERED = 0.25  # a chunk push with more of its elements out of order is sorted whole
_MANY_MIN = 65_536  # released elements from which many comparable parts are merged in one pass
_CHUNK_MAX = 65_536  # a larger batch is cut into chunks of at most this many (a radix sort's buckets stay in cache)
_POOLED = 1 << 19  # arrays of this many int64s (4 MiB) or more come from Arrow's pool (numpy's fresh memory faulted in)
_REACH = 1024  # a nearly sorted push inserts an element into the queue at most this far from its tail
_BUDGET = 2  # ... moving at most this many queued elements per element pushed (others are sorted into a chunk)
_MERGE_IN = 1.25  # a chunk push's sorted others are merged into the queue if that moves at most this many per element
_HAND_OFF = 1 << 16  # a release of only the queue's prefix, this long or more, hands over the queue's buffers
_LONG_SEGMENTS = 4096  # push_punctuate: events per punctuation from which separate calls cost nothing extra

# --------------------------------------------------------------------------------------------------
# Python wrapper
# --------------------------------------------------------------------------------------------------


class ImpatienceSorter:
    """Incremental sorter of int64 times; see the module docstring for the guarantees."""

    __slots__ = (
        "_pool",
        "_spare",
        "_meta",
        "_st",
        "_watermark",
        "_next_row",
        "_buffered",
        "_chunks",
        "_chunk_min",
        "_scratch",
        "_queue",
        "_qhigh",
        "_nearly",
        "_insert",
    )

    def __init__(self, initial_capacity: int = 1024, chunk_min: int = _CHUNK_MIN):
        cap = max(int(initial_capacity), 64)
        self._pool = np.empty((2, cap), dtype=np.int64)  # row 0: times, row 1: row ids
        self._spare = np.empty((2, 0), dtype=np.int64)
        self._meta = np.empty((16, 4), dtype=np.int64)
        self._st = np.zeros(7, dtype=np.int64)  # used, nruns, last_run, next_row, watermark, need, late
        self._watermark = int(INT64_MIN)
        self._st[_WM] = self._watermark
        self._next_row = 0
        self._buffered = 0
        self._chunks: list[list] = []  # [times, row ids, consumed]: sorted by (time, row id)
        self._chunk_min = max(int(chunk_min), 1)
        self._scratch = _NO_IDS
        self._queue = InOrderQueue(0, _empty)  # chunk pushes' elements at or above everything before them
        self._qhigh = int(INT64_MIN)  # the queue's last time (INT64_MIN: empty)
        self._nearly = True  # the last chunk push was nearly sorted: the next one extends the queue
        self._insert = True  # ... and every element late in it lay near the queue's tail: the next one inserts them

    # -- ingest -----------------------------------------------------------------------------------
    def push(self, times: np.ndarray, ids: np.ndarray | None = None) -> np.ndarray:
        """Insert a batch of int64 times given in arrival order.

        Returns a bool mask over the batch, True where the element is late (``time < watermark``);
        late elements are not buffered.  Row ids are assigned to all elements, late ones included:
        consecutive from ``next_row_id``, or ``ids`` (increasing, from ``next_row_id`` on; ids skipped
        are never used) when given."""
        if times.dtype != np.int64 or not times.flags.c_contiguous:
            times = np.ascontiguousarray(times, dtype=np.int64)
        if times.ndim != 1:
            raise ValueError("times must be one-dimensional")
        n = times.shape[0]
        late = np.zeros(n, dtype=np.bool_)
        if n == 0:
            return late
        st = self._st
        if ids is None:
            ids = _NO_IDS
        elif len(ids) != n or (n and int(ids[0]) < self._next_row):
            raise ValueError("ids must give each element an increasing row id from next_row_id on")
        if n >= self._chunk_min:
            step = _CHUNK_MAX  # radix sort pieces that stay in cache; a release merges them (equal pieces of about
            if n >= step + self._chunk_min:  # 50,000 measured up to 1.5x slower, mostly disordered); the last piece
                given, a = len(ids) > 0, 0  # takes a rest too short for a chunk (placed, it would make runs to merge)
                while a < n:
                    b = n if n - a < step + self._chunk_min else a + step
                    late[a:b] = self.push(times[a:b], ids[a:b] if given else None)
                    a = b
                return late
            if self._push_chunk(times, ids):
                return times < self._watermark
        i = _push_kernel(times, 0, late, self._pool, self._meta, st, ids)
        while st[_NEED] != 0:
            if st[_NEED] < 0:
                nruns = int(st[_NRUNS])
                bigger = np.empty((2 * self._meta.shape[0], 4), dtype=np.int64)
                bigger[:nruns] = self._meta[:nruns]
                self._meta = bigger
            else:
                # compaction leaves room for `need` more and gives every run spare capacity; room for twice the
                # rest of the batch too, so that one large batch does not compact the pool again and again
                extra = max(int(st[_NEED]), 2 * (n - i))
                pool, used, self._spare = _compact_pool(self._pool, self._spare, self._meta, st[_NRUNS], extra)
                self._pool = pool
                st[_USED] = used
            i = _push_kernel(times, i, late, self._pool, self._meta, st, ids)
        self._next_row = int(st[_ROW0])
        self._buffered += n - int(st[_NLATE])
        return late

    def _push_chunk(self, times: np.ndarray, ids: np.ndarray) -> bool:
        """Sort the batch's elements that are not late: those at or above every element before them (in the
        queue and in the batch) extend the in-order queue, already sorted; the others are radix sorted into a
        new chunk (when they are more than a quarter of the batch, the whole batch is). False when their times
        span too widely for a radix sort (nothing done: the caller places them). Input that is nearly sorted
        costs one linear pass here and one merge at the release."""
        n = times.shape[0]
        self._scratch = scratch(self._scratch, 6 * n)
        oth_t, oth_r, s_t, s_r = (self._scratch[k * n : (k + 1) * n] for k in range(4))
        pairs = self._scratch[4 * n : 6 * n].reshape(n, 2)
        wm = self._watermark
        queue = self._queue
        at = queue.reserve(n)  # written in place; the tail moves only once the batch is taken
        if self._nearly:
            return self._push_nearly(times, ids, at, oth_t, oth_r)
        no, nu, high = _split_ordered(
            times, self._next_row, ids, wm, self._qhigh, queue.times[at:], queue.rows[at:], oth_t, oth_r
        )
        if nu > _DISORDERED * (no + nu):  # much disorder: the whole batch is one chunk (merging it with the queue
            # would take a branch the processor cannot predict per element; chunks merge like runs)
            m = _bucket_chunk(times, self._next_row, ids, wm, s_t, s_r)  # times a bounded jitter from their place
            if m < 0:  # declined: the times crowd into few buckets
                m = _radix_chunk(times, self._next_row, ids, wm, s_t, s_r, pairs)
            if m < 0:
                return False
            self._chunks.append([_copy(s_t[:m]), _copy(s_r[:m]), 0])
        else:
            if nu and _radix_chunk(oth_t[:nu], 0, oth_r[:nu], wm, s_t, s_r, pairs) < 0:
                return False
            if nu and self._merge_in(at + no, s_t, s_r, nu, n):
                self._qhigh = int(high)
            elif nu > _MERGED * (no + nu) or len(queue) + no > _QUEUE_MAX:  # the batch is a chunk of its own: its
                # others merged in now (merging many small chunks with the queue later costs more), or the queue
                # would grow long (punctuations far apart), copied each time it grows
                chunk = (_empty(no + nu), _empty(no + nu))
                _merge2(queue.times, queue.rows, at, no, s_t, s_r, 0, nu, chunk[0], chunk[1])
                self._chunks.append([chunk[0], chunk[1], 0])
            else:
                if nu:
                    self._chunks.append([_copy(s_t[:nu]), _copy(s_r[:nu]), 0])
                queue.tail = at + no
                self._qhigh = int(high)
            self._nearly = self._insert = nu <= _MERGED * (no + nu)
        self._next_row = int(ids[-1]) + 1 if len(ids) else self._next_row + n
        self._st[_ROW0] = self._next_row
        self._buffered += no + nu
        return True

    def _push_nearly(self, times, ids, at, oth_t, oth_r) -> bool:
        """A chunk push after a nearly sorted one: the batch's in-order elements extend the queue and those a
        little late are inserted into it (a bounded number of moves), so that a release of only the queue hands
        over its buffers; the rest are sorted into a chunk. A batch found more disordered is pushed the usual
        way next time."""
        n = times.shape[0]
        queue = self._queue
        q_t, q_r, wm, budget = queue.times, queue.rows, self._watermark, _BUDGET * n if self._insert else 0
        no, nu, high, ins, far = _split_insert(
            times, self._next_row, ids, wm, self._qhigh, q_t, q_r, queue.head, at, oth_t, oth_r, budget, _REACH
        )
        queue.tail = at + no
        self._qhigh = int(high)
        if nu:
            s_t, s_r = self._scratch[2 * n : 3 * n], self._scratch[3 * n : 4 * n]
            pairs = self._scratch[4 * n : 6 * n].reshape(n, 2)
            if _radix_chunk(oth_t[:nu], 0, oth_r[:nu], wm, s_t, s_r, pairs) < 0:  # times spread widely
                order = np.argsort(oth_t[:nu], kind="stable")  # row ids increase with the position: stable
                s_t[:nu], s_r[:nu] = oth_t[:nu][order], oth_r[:nu][order]
            if not self._merge_in(at + no, s_t, s_r, nu, n):
                self._chunks.append([_copy(s_t[:nu]), _copy(s_r[:nu]), 0])
        self._nearly = ins + nu <= _MERGED * (no + nu)
        self._insert = far == 0  # else a merge at the release is due anyway: inserting would save nothing
        self._next_row = int(ids[-1]) + 1 if len(ids) else self._next_row + n
        self._st[_ROW0] = self._next_row
        self._buffered += no + nu
        return True

    def _merge_in(self, tail: int, s_t, s_r, nu: int, n: int) -> bool:
        """The sorted others ``s_*[:nu]`` merged into the queue (its pairs up to ``tail``, with room after it)
        when that moves at most ``_MERGE_IN`` pairs per element of the batch (about one: others a little late):
        the queue stays one sorted array, which a release hands over, where a chunk of the others would be
        merged with it at the release (a copy of all). Only while there are no chunks."""
        queue = self._queue
        if self._chunks:  # the release merges anyway (and the queue's pairs would interleave with the chunks')
            return False
        place = queue.head + int(np.searchsorted(queue.times[queue.head : tail], s_t[0], side="right"))
        if tail - place + nu > _MERGE_IN * n:
            return False
        _merge_into(queue.times, queue.rows, queue.head, tail, s_t, s_r, nu)
        queue.tail = tail + nu
        return True

    def skip_to(self, row: int) -> None:
        """Row ids below ``row`` are never given (the next element pushed gets ``row`` or more)."""
        if row > self._next_row:
            self._next_row = int(row)
            self._st[_ROW0] = self._next_row

    # -- release ----------------------------------------------------------------------------------
    def punctuate(self, t: int) -> tuple[np.ndarray, np.ndarray]:
        """Release every buffered element with ``time <= t``, sorted by (time, arrival).

        Afterwards the watermark is ``max(watermark, t)`` and pushed times ``< watermark`` are late.
        Returns ``(times, row_ids)`` as int64 arrays."""
        t = int(t)
        if t > self._watermark:
            self._watermark = t
            self._st[_WM] = t
        return self._release(t)

    def push_punctuate(self, times: np.ndarray, ends: np.ndarray, puncts: np.ndarray):
        """``push(times[prev:ends[k]])`` then ``punctuate(puncts[k])`` for each k (``prev`` the previous end,
        from 0), in one compiled call: for many small punctuations. ``ends`` must increase to at most
        ``len(times)``; elements after the last end are pushed too. Returns ``(late, times, row_ids,
        counts)``: the late mask over ``times``, everything released in order, and how many elements
        each punctuation released (consecutive slices of the released arrays)."""
        times = np.ascontiguousarray(times, dtype=np.int64)
        ends = np.ascontiguousarray(ends, dtype=np.int64)
        puncts = np.ascontiguousarray(puncts, dtype=np.int64)
        n = times.shape[0]
        if ends.shape != puncts.shape or ends.ndim != 1 or (len(ends) and (ends[-1] > n or (np.diff(ends) < 0).any())):
            raise ValueError("ends and puncts must be one increasing end per punctuation, within the times")
        # few long segments: nothing to save per call; chunks: the compiled release knows only the runs
        if len(ends) and (n >= _LONG_SEGMENTS * len(ends) or self._chunks or len(self._queue)):
            return self._push_punctuate_calls(times, ends, puncts)
        late = np.zeros(n, dtype=np.bool_)
        out_t = np.empty(self._buffered + n, dtype=np.int64)
        out_r = np.empty(self._buffered + n, dtype=np.int64)
        counts = np.zeros(len(ends), dtype=np.int64)
        st = self._st
        row0 = int(st[_ROW0])
        seg, i, written = _fused_kernel(
            times, ends, puncts, 0, 0, late, self._pool, self._meta, st, out_t, out_r, counts, 0
        )
        while seg < len(ends):
            self._grow(int(ends[seg]) - i)
            seg, i, written = _fused_kernel(
                times, ends, puncts, seg, i, late, self._pool, self._meta, st, out_t, out_r, counts, written
            )
        if len(ends):
            self._watermark = max(self._watermark, int(puncts.max()))
            st[_WM] = self._watermark
        self._buffered += i - int(np.count_nonzero(late[:i])) - written
        self._next_row = row0 + i
        st[_ROW0] = self._next_row
        if i < n:  # the tail after the last punctuation
            late[i:] = self.push(times[i:])
        return late, out_t[:written], out_r[:written], counts

    def _push_punctuate_calls(self, times, ends, puncts):
        if len(ends) == 1 and ends[0] == len(times):  # one push, one punctuation: nothing to gather
            late = self.push(times)
            t, r = self.punctuate(int(puncts[0]))
            return late, t, r, np.array([len(t)], dtype=np.int64)
        lates, ts, rs, counts = [], [], [], []
        start = 0
        for end, p in zip(ends.tolist(), puncts.tolist(), strict=True):
            lates.append(self.push(times[start:end]))
            t, r = self.punctuate(p)
            ts.append(t)
            rs.append(r)
            counts.append(len(t))
            start = end
        if start < len(times):
            lates.append(self.push(times[start:]))
        one = len(ts) == 1
        return (
            np.concatenate(lates),
            ts[0] if one else np.concatenate(ts),
            rs[0] if one else np.concatenate(rs),
            np.array(counts, dtype=np.int64),
        )

    def _grow(self, rest: int) -> None:
        st = self._st
        if st[_NEED] < 0:
            nruns = int(st[_NRUNS])
            bigger = np.empty((2 * self._meta.shape[0], 4), dtype=np.int64)
            bigger[:nruns] = self._meta[:nruns]
            self._meta = bigger
        else:
            extra = max(int(st[_NEED]), 2 * rest)
            pool, used, self._spare = _compact_pool(self._pool, self._spare, self._meta, st[_NRUNS], extra)
            self._pool = pool
            st[_USED] = used
        st[_NEED] = 0

    def flush_all(self) -> tuple[np.ndarray, np.ndarray]:
        """Release everything that is buffered (end of stream).  The watermark is not changed."""
        return self._release(int(INT64_MAX))

    def _release(self, t: int) -> tuple[np.ndarray, np.ndarray]:
        if self._buffered == 0:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
        out_t, out_r = _punctuate_kernel(t, self._pool, self._meta, self._st)
        if self._chunks or len(self._queue):
            parts = [(out_t, out_r), *self._cut_chunks(t)]
            queue = self._queue
            c = queue.count_le(t)
            if c:
                one = not any(len(p[0]) for p in parts)
                if one and c >= _HAND_OFF and 4 * (len(queue) - c) <= c:  # the release is the queue's prefix
                    parts.append(queue.hand_off(c, room=t < INT64_MAX))  # flush_all: no room kept
                else:
                    qt, qr = queue.view(c)  # read before the queue is written again; copied when it is all
                    parts.append((qt.copy(), qr.copy()) if one else (qt, qr))
                    queue.pop(c)
                if not len(queue):
                    self._qhigh = int(INT64_MIN)
            out_t, out_r = _merge_parts(parts)
        self._buffered -= out_t.shape[0]
        return out_t, out_r

    def _cut_chunks(self, t: int) -> list[tuple[np.ndarray, np.ndarray]]:
        """Each chunk's prefix with time ``<= t``; emptied chunks are dropped, and a chunk mostly given up is
        copied smaller (so that a few late-released elements do not pin a large batch)."""
        parts, kept = [], []
        for ch in self._chunks:
            ct, cr, s = ch
            c = int(np.searchsorted(ct[s:], t, side="right"))
            if c:
                parts.append((ct[s : s + c], cr[s : s + c]))
                s += c
            if s < len(ct):
                kept.append([ct[s:].copy(), cr[s:].copy(), 0] if s > len(ct) // 2 else [ct, cr, s])
        self._chunks = kept
        return parts

    # -- introspection ----------------------------------------------------------------------------
    @property
    def buffered(self) -> int:
        """Number of elements currently held (pushed, not late, not yet released)."""
        return self._buffered

    @property
    def num_runs(self) -> int:
        """Sorted runs held: the placement runs and the chunks (the in-order queue apart)."""
        return int(self._st[_NRUNS]) + len(self._chunks)

    @property
    def watermark(self) -> int:
        """Largest punctuation seen so far (``INT64_MIN`` before the first one)."""
        return self._watermark

    @property
    def next_row_id(self) -> int:
        return self._next_row

    # -- checkpointing ----------------------------------------------------------------------------
    def snapshot(self) -> dict:
        """State as plain numpy arrays and ints: the runs in placement order, concatenated."""
        k = int(self._st[_NRUNS])  # the placement runs (chunks apart)
        meta = self._meta[:k]
        lengths = (meta[:, _STOP] - meta[:, _START]).astype(np.int64)
        if k:
            idx = np.concatenate([np.arange(s, e, dtype=np.int64) for s, e in meta[:, :2]])
        else:
            idx = np.empty(0, dtype=np.int64)
        return {
            "version": 1,
            "times": self._pool[0, idx].copy(),
            "row_ids": self._pool[1, idx].copy(),
            "run_lengths": lengths,
            "last_run": int(self._st[_LAST]),
            "watermark": int(self._watermark),
            "next_row_id": int(self._next_row),
            "chunk_times": _cat([ch[0][ch[2] :] for ch in self._chunks]),
            "chunk_rows": _cat([ch[1][ch[2] :] for ch in self._chunks]),
            "chunk_lengths": np.array([len(ch[0]) - ch[2] for ch in self._chunks], dtype=np.int64),
            "queue_times": self._queue.live()[0],
            "queue_rows": self._queue.live()[1],
        }

    @classmethod
    def restore(cls, state: dict) -> ImpatienceSorter:
        if int(state.get("version", 1)) != 1:
            raise ValueError(f"unsupported ImpatienceSorter snapshot version {state['version']!r}")
        times = np.asarray(state["times"], dtype=np.int64)
        rows = np.asarray(state["row_ids"], dtype=np.int64)
        lengths = np.asarray(state["run_lengths"], dtype=np.int64)
        k = lengths.shape[0]
        if int(lengths.sum()) != times.shape[0] or rows.shape != times.shape or (lengths <= 0).any():
            raise ValueError("inconsistent ImpatienceSorter snapshot")
        self = cls(initial_capacity=2 * times.shape[0] + _MIN_CAP * k)
        caps = np.maximum(2 * lengths, _MIN_CAP)
        starts = np.zeros(k, dtype=np.int64)
        if k:
            starts[1:] = np.cumsum(caps)[:-1]
            src = np.zeros(k, dtype=np.int64)
            src[1:] = np.cumsum(lengths)[:-1]
            for s, d, n in zip(src.tolist(), starts.tolist(), lengths.tolist(), strict=True):
                self._pool[0, d : d + n] = times[s : s + n]
                self._pool[1, d : d + n] = rows[s : s + n]
        self._meta = np.empty((max(16, k), 4), dtype=np.int64)
        self._meta[:k, _START] = starts
        self._meta[:k, _STOP] = starts + lengths
        self._meta[:k, _LIMIT] = starts + caps
        self._meta[:k, _TAIL] = self._pool[0, starts + lengths - 1] if k else 0
        self._watermark = int(state["watermark"])
        self._next_row = int(state["next_row_id"])
        last = int(state["last_run"]) if k else 0
        self._st[:] = (int(caps.sum()), k, last, self._next_row, self._watermark, 0, 0)
        self._buffered = int(times.shape[0])
        chunk_t = np.asarray(state.get("chunk_times", _NO_IDS), dtype=np.int64)
        chunk_r = np.asarray(state.get("chunk_rows", _NO_IDS), dtype=np.int64)
        ends = np.cumsum(np.asarray(state.get("chunk_lengths", _NO_IDS), dtype=np.int64))
        if chunk_t.shape != chunk_r.shape or (len(ends) and ends[-1] != len(chunk_t)):
            raise ValueError("inconsistent ImpatienceSorter snapshot")
        starts = [0, *ends[:-1].tolist()] if len(ends) else []
        self._chunks = [
            [chunk_t[a:b].copy(), chunk_r[a:b].copy(), 0] for a, b in zip(starts, ends.tolist(), strict=True)
        ]
        self._buffered += len(chunk_t)
        queue_t = np.asarray(state.get("queue_times", _NO_IDS), dtype=np.int64)
        self._queue.append(queue_t, np.asarray(state.get("queue_rows", _NO_IDS), dtype=np.int64))
        self._qhigh = int(queue_t[-1]) if len(queue_t) else int(INT64_MIN)
        self._buffered += len(queue_t)
        return self


def _cat(arrays: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(arrays) if arrays else _NO_IDS.copy()


def _apart(parts: list[tuple[np.ndarray, np.ndarray]]) -> bool:
    """Whether the parts hardly overlap in time: taken in order of their first times, few elements of each lie
    below the last time of the parts before it (chunks of successive batches of input with bounded lateness)."""
    ordered = sorted(parts, key=lambda p: int(p[0][0]))
    high, inside, total = int(ordered[0][0][-1]), 0, 0
    for t, _ in ordered[1:]:
        inside += int(np.searchsorted(t, high, side="right"))
        high = max(high, int(t[-1]))
        total += len(t)
    return 8 * inside < total


def _empty(n: int) -> np.ndarray:
    """Room for ``n`` int64s: a large array in Arrow's pool (freed pages are reused there, not faulted in again),
    a small one from numpy (an allocation from the pool costs more than a small copy)."""
    return pool_empty((n,)) if n >= _POOLED else np.empty(n, dtype=np.int64)


def _copy(a: np.ndarray) -> np.ndarray:
    out = _empty(len(a))
    out[...] = a
    return out


def _merge_parts(parts: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """Sorted (time, row id) parts merged into one: a large release from four parts or more, none of them
    most of it and hardly overlapping (chunks of successive batches), in one pass over a heap of the parts'
    heads, copying runs (no intermediate arrays, each a page fault per 4 KiB page); else the two shortest
    first (a dominant part, as the in-order queue's, is merged once, with the rest; parts that interleave
    would make the heap switch parts at every element, which costs more than a merge)."""
    parts = [p for p in parts if len(p[0])]
    total = sum(len(p[0]) for p in parts)
    if len(parts) >= 4 and total >= _MANY_MIN and 2 * max(len(p[0]) for p in parts) < total and _apart(parts):
        ts, rs = List(), List()
        for t, r in parts:
            ts.append(np.ascontiguousarray(t))
            rs.append(np.ascontiguousarray(r))
        stops = np.array([len(t) for t, _ in parts], dtype=np.int64)
        out_t, out_r = _empty(total), _empty(total)
        _merge_many(ts, rs, np.zeros(len(parts), dtype=np.int64), stops, out_t, out_r)
        return out_t, out_r
    heap = [(len(p[0]), i, p) for i, p in enumerate(parts)]
    if not heap:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
    heapq.heapify(heap)
    serial = len(parts)
    while len(heap) > 1:
        na, _, (at, ar) = heapq.heappop(heap)
        nb, _, (bt, br) = heapq.heappop(heap)
        ot, orr = _empty(na + nb), _empty(na + nb)
        _merge2(at, ar, 0, na, bt, br, 0, nb, ot, orr)
        heapq.heappush(heap, (na + nb, serial, (ot, orr)))
        serial += 1
    return heap[0][2]
