"""The compiled per-batch pass of the reorder operator's simplest policy (:mod:`tidal.ops.reorder` states the
semantics: one latency, a punctuation after every event, late events dropped). No temporal semantics of its
own beyond that rule: it splits a batch into late events, events in arrival order and the others.
"""

from __future__ import annotations

import numba as nb

from ..core.time import MIN_TIME


@nb.njit(cache=True, nogil=True)
def _ingest(times, high, prev, lat, first, ord_t, ord_r, oth_t, oth_r, late):
    """One latency ``lat``, a punctuation after every event (never below ``prev``): event ``i`` is late
    below ``max(prev, high before it - lat)``; an event at or above the high watermark before it is in
    arrival order (``ord_*``: times, row ids ``first + i``), any other goes to the sorter (``oth_*``);
    ``late`` gets the late events' positions. Returns the counts and the high watermark after."""
    floor = MIN_TIME + lat
    no = 0
    nu = 0
    nl = 0
    for i in range(times.shape[0]):
        t = times[i]
        bound = max(high, floor) - lat
        if bound < prev:
            bound = prev
        if t < bound:
            late[nl] = i
            nl += 1
        elif t >= high:
            ord_t[no] = t
            ord_r[no] = first + i
            no += 1
            high = t
        else:
            oth_t[nu] = t
            oth_r[nu] = first + i
            nu += 1
    return no, nu, nl, high
