"""The compiled kernels of the Impatience sorter's chunks (:mod:`tidal.ops.impatience` holds the sorter and its
guarantees): a large pushed batch split into the elements in arrival order and the others, a stable radix sort
into a chunk, and the merge of many sorted parts in one pass. No temporal semantics here beyond the sorter's:
everything is ordered by (time, row id).
"""

from __future__ import annotations

import numba as nb
import numpy as np

_DIGIT = 11  # bits per radix pass at most: 2048 buckets
_MAX_PASSES = 3  # a batch whose times span more than 2**33 is placed into runs instead


@nb.njit(cache=True, nogil=True, inline="always")
def span_bits(lo, hi):
    """How many bits the span ``hi - lo`` of int64 times takes (0 when they are all equal)."""
    bits = 0
    span = np.uint64(hi) - np.uint64(lo)
    while span > 0:
        bits += 1
        span >>= np.uint64(1)
    return bits


@nb.njit(cache=True, nogil=True, inline="always")
def exclusive_offsets(hist):
    """Each row of a radix sort's histogram turned into its buckets' first output positions (exclusive
    prefix sums, in place)."""
    for p in range(hist.shape[0]):
        s = 0
        for b in range(hist.shape[1]):
            c = hist[p, b]
            hist[p, b] = s
            s += c


@nb.njit(cache=True, nogil=True)
def _radix_chunk(times, row0, ids, wm, out_t, out_r, pairs):
    """The elements of ``times`` at or above ``wm`` sorted by (time, row id) into ``out_t``/``out_r``
    (room for all of them; ``pairs``, an (n, 2) scratch, as large): a stable LSD radix sort of the times
    above their minimum, so equal times keep arrival order, which is row id order. Element ``i`` has row id
    ``ids[i]``, or ``row0 + i`` when ``ids`` is empty. Returns how many, or -1 (nothing written) when the
    times span more than ``_MAX_PASSES`` digits. Passes before the last scatter (time, row id) pairs side by
    side: one line of memory written per element, not two."""
    n = times.shape[0]
    given = ids.shape[0] > 0
    lo = np.int64(0x7FFFFFFFFFFFFFFF)
    hi = np.int64(-0x7FFFFFFFFFFFFFFF - 1)
    m = 0
    ordered = True
    prev = hi
    for i in range(n):
        x = times[i]
        if x >= wm:
            m += 1
            lo = min(lo, x)
            hi = max(hi, x)
            if x < prev:
                ordered = False
            prev = x
    if m == 0:
        return 0
    bits = span_bits(lo, hi)
    passes = (bits + _DIGIT - 1) // _DIGIT
    digit = (bits + passes - 1) // passes if passes else 1  # as few buckets as the passes allow
    if ordered or passes == 0:
        j = 0
        for i in range(n):
            if times[i] >= wm:
                out_t[j] = times[i]
                out_r[j] = ids[i] if given else row0 + i
                j += 1
        return m
    if passes > _MAX_PASSES:
        return -1
    size = 1 << digit
    mask = np.uint64(size - 1)
    ulo = np.uint64(lo)
    hist = np.zeros((passes, size), dtype=np.int64)
    for i in range(n):
        x = times[i]
        if x >= wm:
            k = np.uint64(x) - ulo
            for p in range(passes):
                hist[p, (k >> np.uint64(p * digit)) & mask] += 1
    exclusive_offsets(hist)
    h = hist[0]
    if passes == 1:
        for i in range(n):
            x = times[i]
            if x >= wm:
                b = (np.uint64(x) - ulo) & mask
                d = h[b]
                h[b] = d + 1
                out_t[d] = x
                out_r[d] = ids[i] if given else row0 + i
        return m
    for i in range(n):  # pass 0: into the pairs
        x = times[i]
        if x >= wm:
            b = (np.uint64(x) - ulo) & mask
            d = h[b]
            h[b] = d + 1
            pairs[d, 0] = x
            pairs[d, 1] = ids[i] if given else row0 + i
    h = hist[1]
    shift = np.uint64(digit)
    for i in range(m):  # pass 1: from the pairs into out_*
        x = pairs[i, 0]
        b = ((np.uint64(x) - ulo) >> shift) & mask
        d = h[b]
        h[b] = d + 1
        out_t[d] = x
        out_r[d] = pairs[i, 1]
    if passes == 3:
        h = hist[2]
        shift = np.uint64(2 * digit)
        for i in range(m):  # pass 2: back into the pairs, then copied out
            x = out_t[i]
            b = ((np.uint64(x) - ulo) >> shift) & mask
            d = h[b]
            h[b] = d + 1
            pairs[d, 0] = x
            pairs[d, 1] = out_r[i]
        for i in range(m):
            out_t[i] = pairs[i, 0]
            out_r[i] = pairs[i, 1]
    return m


@nb.njit(cache=True, nogil=True)
def _split_ordered(times, row0, ids, wm, high, ord_t, ord_r, oth_t, oth_r):
    """The elements of ``times`` at or above ``wm``, split: those at or above ``high`` and every earlier one
    (in order: already sorted by (time, row id), after anything held at or below ``high``) into ``ord_*``,
    the others into ``oth_*``. Row ids as in ``_radix_chunk``. Returns both counts and the high after."""
    given = ids.shape[0] > 0
    no = 0
    nu = 0
    for i in range(times.shape[0]):
        x = times[i]
        if x < wm:
            continue
        r = ids[i] if given else row0 + i
        if x >= high:
            high = x
            ord_t[no] = x
            ord_r[no] = r
            no += 1
        else:
            oth_t[nu] = x
            oth_r[nu] = r
            nu += 1
    return no, nu, high


@nb.njit(cache=True, nogil=True)
def _merge_many(ts, rs, starts, stops, out_t, out_r):
    """Merge the sorted (time, row id) parts ``ts[p][starts[p]:stops[p]]`` (and their ``rs``) by (time, row id)
    into ``out_*`` in one pass: a heap of the parts' heads, and the part on top copied on while it stays
    below every other head (parts that hardly overlap, as chunks of successive batches, are copied)."""
    k = len(ts)
    heap = np.empty(k, dtype=np.int64)  # part indices, ordered by their head
    ht = np.empty(k, dtype=np.int64)  # each part's head (time, row id)
    hr = np.empty(k, dtype=np.int64)
    pos = starts.copy()
    h = 0
    for p in range(k):
        if pos[p] < stops[p]:
            heap[h] = p
            ht[p] = ts[p][pos[p]]
            hr[p] = rs[p][pos[p]]
            h += 1
    for root in range(h // 2 - 1, -1, -1):
        _sift(heap, h, root, ht, hr)
    w = 0
    while h > 0:
        p = heap[0]
        a_t = ts[p]
        a_r = rs[p]
        i = pos[p]
        e = stops[p]
        if h == 1:
            while i < e:
                out_t[w] = a_t[i]
                out_r[w] = a_r[i]
                i += 1
                w += 1
            break
        c = heap[1]  # the least head among the others: a child of the root
        if h > 2:
            d = heap[2]
            if ht[d] < ht[c] or (ht[d] == ht[c] and hr[d] < hr[c]):
                c = d
        bt = ht[c]
        br = hr[c]
        while i < e and (a_t[i] < bt or (a_t[i] == bt and a_r[i] < br)):
            out_t[w] = a_t[i]
            out_r[w] = a_r[i]
            i += 1
            w += 1
        pos[p] = i
        if i == e:
            h -= 1
            heap[0] = heap[h]
        else:
            ht[p] = a_t[i]
            hr[p] = a_r[i]
        _sift(heap, h, 0, ht, hr)
    return w


@nb.njit(cache=True, nogil=True)
def _sift(heap, h, root, ht, hr):
    """Restore the heap order below ``root`` (parts keyed by their head (time, row id): ``ht``, ``hr``)."""
    while True:
        c = 2 * root + 1
        if c >= h:
            return
        if c + 1 < h:
            a = heap[c]
            b = heap[c + 1]
            if ht[b] < ht[a] or (ht[b] == ht[a] and hr[b] < hr[a]):
                c += 1
        x = heap[root]
        y = heap[c]
        if ht[x] < ht[y] or (ht[x] == ht[y] and hr[x] < hr[y]):
            return
        heap[root] = y
        heap[c] = x
        root = c


@nb.njit(cache=True, nogil=True)
def _split_insert(times, row0, ids, wm, high, q_t, q_r, lo, at, oth_t, oth_r, budget, reach):
    """As ``_split_ordered``, the in-order elements written from ``q_*[at]`` on, but an element below ``high``
    whose place lies at most ``reach`` positions before the queue's tail is inserted there (the larger times
    after it moved up by one: nearly sorted input, as events a few positions late, then needs no merge at the
    release), while the moves so far stay within ``budget``; the others go to ``oth_*``. The queue's live pairs
    start at ``q_*[lo]``, all at or above ``wm`` (an element may go before all of them). The new element's row id
    is above every queued one, so it goes after the equal times: the queue stays sorted by (time, row id).
    Returns the elements queued (inserted ones included), the others, the high after, how many were inserted
    and how many others lay beyond the reach (0: the budget allowing, every one could have been inserted)."""
    given = ids.shape[0] > 0
    tail = at
    nu = 0
    ins = 0
    far = 0
    for i in range(times.shape[0]):
        x = times[i]
        if x < wm:
            continue
        r = ids[i] if given else row0 + i
        if x >= high:
            high = x
            q_t[tail] = x
            q_r[tail] = r
            tail += 1
            continue
        back = tail - reach
        if back >= lo and q_t[back] > x:  # its place is farther back
            far += 1
        elif budget > 0:
            j = tail - 1
            while j >= lo and q_t[j] > x:  # move the larger times up (one pass: fewer loads than a search first)
                q_t[j + 1] = q_t[j]
                q_r[j + 1] = q_r[j]
                j -= 1
            q_t[j + 1] = x
            q_r[j + 1] = r
            budget -= tail - 1 - j
            tail += 1
            ins += 1
            continue
        oth_t[nu] = x
        oth_r[nu] = r
        nu += 1
    return tail - at, nu, high, ins, far


@nb.njit(cache=True, nogil=True)
def _merge_into(q_t, q_r, lo, tail, s_t, s_r, m):
    """Merge the sorted (time, row id) pairs ``s_*[:m]`` into the sorted queue ``q_*[lo:tail]`` in place, from
    the back (the queue has room for ``m`` more after ``tail``): each queued pair after the first one's place
    moves up once, the pairs before it stay where they are."""
    i = tail - 1
    j = m - 1
    w = tail + m - 1
    while j >= 0:
        x = s_t[j]
        if i >= lo and (q_t[i] > x or (q_t[i] == x and q_r[i] > s_r[j])):
            q_t[w] = q_t[i]
            q_r[w] = q_r[i]
            i -= 1
        else:
            q_t[w] = x
            q_r[w] = s_r[j]
            j -= 1
        w -= 1
