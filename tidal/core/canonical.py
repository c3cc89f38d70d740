"""Canonical forms of a stream's meaning, independent of batching and physical encoding.

A physical stream (intervals, start edges, end edges) denotes, for every payload, a
multiplicity that changes over time. Each interval or start edge adds one at its start;
each interval or end edge removes one at its end. The canonical form lists, per payload,
the *layers* of that step function: layer k holds the maximal intervals where the
multiplicity is at least k. Two streams have the same snapshots at every instant exactly
when their canonical forms are equal.
"""

from __future__ import annotations

import math
from collections import defaultdict

from .time import INFINITY


def freeze(payload: tuple) -> tuple:
    """Payload values made hashable: list results (top_k, distinct) become tuples; every float NaN
    becomes the one ``math.nan`` object, so that payloads holding NaN compare equal (by identity)."""
    if any(isinstance(v, float) and v != v for v in payload):
        payload = tuple(math.nan if isinstance(v, float) and v != v else v for v in payload)
    if any(isinstance(v, list | dict) for v in payload):
        return tuple(
            tuple(v) if isinstance(v, list) else tuple(sorted(v.items())) if isinstance(v, dict) else v for v in payload
        )
    return payload


def deltas_from_physical(sync, other, payloads) -> dict[tuple, dict[int, int]]:
    """payload -> {time: change in multiplicity} for physical events."""
    out: dict[tuple, dict[int, int]] = defaultdict(lambda: defaultdict(int))
    for s, o, p in zip(sync, other, payloads, strict=True):
        s, o = int(s), int(o)
        d = out[freeze(p)]
        if o == INFINITY:  # start edge
            d[s] += 1
        elif o < s:  # end edge of [o, s)
            d[s] -= 1
        else:
            d[s] += 1
            d[o] -= 1
    return out


def deltas_from_intervals(intervals) -> dict[tuple, dict[int, int]]:
    """payload -> {time: change} for logical intervals ``(start, end, payload)``."""
    out: dict[tuple, dict[int, int]] = defaultdict(lambda: defaultdict(int))
    for s, e, p in intervals:
        if e <= s:
            continue
        d = out[freeze(p)]
        d[int(s)] += 1
        if e != INFINITY:
            d[int(e)] -= 1
    return out


def layers(deltas: dict[tuple, dict[int, int]]) -> list[tuple[int, int, tuple]]:
    """Sorted ``(start, end, payload)`` layers of the multiplicity step functions.

    Raises ValueError if a multiplicity goes negative (an end without a start).
    """
    result = []
    for payload, changes in deltas.items():
        level = 0
        open_at: list[int] = []  # open_at[k] = start of the open layer k+1
        for t in sorted(changes):
            new = level + changes[t]
            if new < 0:
                raise ValueError(f"payload {payload!r} ends more often than it starts at time {t}")
            while level < new:
                open_at.append(t)
                level += 1
            while level > new:
                result.append((open_at.pop(), t, payload))
                level -= 1
        for start in open_at:
            result.append((start, INFINITY, payload))
    result.sort(key=lambda r: (r[0], r[1], _sort_key(r[2])))
    return result


def _sort_key(payload: tuple):
    # NaN sorts after every number of its type (it compares neither less nor greater)
    return tuple((v is None, type(v).__name__, v != v, v if v is not None and v == v else 0) for v in payload)
