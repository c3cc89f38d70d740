"""Trill's ExtendLifetime tests, re-expressed for tidal's ``extend_lifetime``.

Inputs and expected results from Trill's test Sources/Test/SimpleTesting/Streamables/ExtendLifetimeTest.cs,
MIT licence (Copyright (c) Microsoft Corporation). Trill's ``StructTuple<string, int>`` payloads
(tests 3 and Negative5) are two fields here, ``("A", 3)``; Trill then selects ``Item1``.

Which Trill tests are ported here, and which are not and why: tests/trill/README.md.

``IsIntervalFree`` (a property hint) has no counterpart in tidal: it reads edges as they come.

A negative ``ExtendLifetime`` shortens each lifetime from its end and drops those it empties;
tidal did not support it (``extend_lifetime`` refused a negative amount) until this port:
``tidal.ops.shorten`` now does it, holding start edges until their fate is known.
"""

from __future__ import annotations

import pytest

from trill.events import BATCH_SIZES, check, end, interval, punct, reference, start, stream

EDGES_1 = [
    start(1, "A"), end(2, 1, "A"), start(2, "A"), end(3, 2, "A"), start(3, "A"), end(4, 3, "A"), start(4, "A"),
    end(5, 4, "A"),
]  # fmt: skip
STARTS_THEN_ENDS = [
    start(1, "A"), start(2, "A"), start(3, "A"), start(4, "A"), end(5, 1, "A"), end(6, 2, "A"), end(7, 3, "A"),
    end(8, 4, "A"),
]  # fmt: skip
INTERVALS = [interval(1, 5, "A"), interval(2, 10, "A"), interval(3, 8, "A"), interval(4, 6, "A"), interval(8, 9, "A")]
LONG = [interval(1, 15, "A"), interval(2, 20, "A"), interval(3, 18, "A"), interval(4, 16, "A"), interval(8, 19, "A")]
LONG_EDGES = [
    start(1, "A"), start(2, "A"), start(3, "A"), start(4, "A"), end(5, 1, "A"), end(6, 2, "A"), end(17, 3, "A"),
    end(18, 4, "A"),
]  # fmt: skip


def _pair(events):
    return [(k, a, b, (p, 3)) if k != "punct" else (k, a, b, p) for k, a, b, p in events]


CASES = {  # name: (input, delta, expected, payload fields)
    "1": (EDGES_1, 3, [*STARTS_THEN_ENDS, punct()], ("v",)),
    "2": (INTERVALS, 10, [
        interval(1, 15, "A"), interval(2, 20, "A"), interval(3, 18, "A"), interval(4, 16, "A"),
        interval(8, 19, "A"), punct(),
    ], ("v",)),
    "3": (_pair(INTERVALS), 10, _pair([
        interval(1, 15, "A"), interval(2, 20, "A"), interval(3, 18, "A"), interval(4, 16, "A"),
        interval(8, 19, "A"), punct(),
    ]), ("v", "n")),
    "negative1": (STARTS_THEN_ENDS, -3, [*EDGES_1, punct()], ("v",)),
    "negative2": (LONG, -10, [*INTERVALS, punct()], ("v",)),
    "negative3": (LONG_EDGES, -10, [start(3, "A"), start(4, "A"), end(7, 3, "A"), end(8, 4, "A"), punct()], ("v",)),
    "negative4": (LONG, -15, [interval(2, 5, "A"), punct()], ("v",)),
    "negative5": (_pair(LONG), -15, _pair([interval(2, 5, "A"), punct()]), ("v", "n")),
}  # fmt: skip


@pytest.mark.parametrize("batch", BATCH_SIZES)
@pytest.mark.parametrize("case", sorted(CASES))
def test_extend_lifetime(case, batch):
    events, delta, expected, names = CASES[case]
    got = stream(events, names, batch_size=batch).extend_lifetime(delta)
    check(got, expected, reference(events, names).extend_lifetime(delta))
