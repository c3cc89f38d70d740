"""A sort of one pushed chunk of the Impatience sorter for times that are nearly in order: one stable scatter
by the times' high bits, then an insertion sort that moves each element within its bucket only.

No temporal semantics of its own (:mod:`tidal.ops.impatience` states the sorter's): the output is the
chunk's elements at or above the watermark sorted by (time, row id), exactly as
:func:`~tidal.ops.impatience_kernels._radix_chunk` sorts them. Events that arrive a few positions late
(a bounded jitter) fall into a bucket beside their place, so the scatter and a short insertion per element
replace the radix sort's histogram and three scatter passes. The insertion work is bounded from the
histogram before anything is written (the sum of the buckets' squared sizes, at most 8 per element):
times crowded into few buckets are left to the radix sort.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from .impatience_chunks import span_bits

_MAX_BITS = 16  # at most 65,536 buckets
_WORK = 8  # the insertion sort's bound: sum of squared bucket sizes per element
_MAX_SPAN_BITS = 33  # the radix sort's limit (three passes of 11 bits): wider times are placed, as there


@nb.njit(cache=True, nogil=True)
def _bucket_chunk(times, row0, ids, wm, out_t, out_r):
    """The elements of ``times`` at or above ``wm`` sorted by (time, row id) into ``out_t``/``out_r``
    (element ``i`` has row id ``ids[i]``, or ``row0 + i`` when ``ids`` is empty; ids increase with ``i``).
    Returns how many, or -1 (nothing written) when the times crowd into too few buckets or span more
    than the radix sort takes."""
    n = times.shape[0]
    given = ids.shape[0] > 0
    lo = np.int64(0x7FFFFFFFFFFFFFFF)
    hi = np.int64(-0x7FFFFFFFFFFFFFFF - 1)
    m = 0
    for i in range(n):
        x = times[i]
        if x >= wm:
            m += 1
            lo = min(lo, x)
            hi = max(hi, x)
    if m == 0:
        return 0
    bits = span_bits(lo, hi)
    if bits > _MAX_SPAN_BITS:
        return -1  # as the radix sort: such a batch is placed into runs
    k = 1
    while (1 << k) < m and k < _MAX_BITS:
        k += 1
    shift = np.uint64(max(bits - k, 0))
    size = 1 << k
    counts = np.zeros(size + 1, np.int64)  # counts[b + 1]: elements in bucket b; then the offsets
    ulo = np.uint64(lo)
    for i in range(n):
        x = times[i]
        if x >= wm:
            counts[((np.uint64(x) - ulo) >> shift) + np.uint64(1)] += 1
    work = 0
    for b in range(1, size + 1):
        work += counts[b] * counts[b]
    if work > _WORK * m:
        return -1
    for b in range(1, size + 1):
        counts[b] += counts[b - 1]
    for i in range(n):  # stable: arrival (row id) order within a bucket
        x = times[i]
        if x >= wm:
            b = (np.uint64(x) - ulo) >> shift
            d = counts[b]
            counts[b] = d + 1
            out_t[d] = x
            out_r[d] = ids[i] if given else row0 + i
    # a stable insertion sort by time: an element passes only larger times, which lie in its own bucket
    for i in range(1, m):
        x = out_t[i]
        if x >= out_t[i - 1]:
            continue
        r = out_r[i]
        j = i - 1
        while j >= 0 and out_t[j] > x:
            out_t[j + 1] = out_t[j]
            out_r[j + 1] = out_r[j]
            j -= 1
        out_t[j + 1] = x
        out_r[j + 1] = r
    return m
