"""Trill's PointAtEnd tests, re-expressed for tidal's ``point_at_end``.

Inputs and expected results from Trill's test Sources/Test/SimpleTesting/Streamables/PointAtEndTest.cs,
MIT licence (Copyright (c) Microsoft Corporation). Trill's ``StructTuple<string, int>`` payloads
(tests 4 to 6) are two fields here, ``("A", 3)``.

Which Trill tests are ported here, and which are not and why: tests/trill/README.md.
"""

from __future__ import annotations

import pytest

from trill.events import BATCH_SIZES, check, end, interval, point, punct, reference, start, stream

EDGES = [
    start(1, "A"), end(2, 1, "A"), start(2, "A"), end(3, 2, "A"), start(3, "A"), end(4, 3, "A"), start(4, "A"),
    end(5, 4, "A"),
]  # fmt: skip
INTERVALS = [interval(1, 5, "A"), interval(2, 10, "A"), interval(3, 8, "A"), interval(4, 6, "A"), interval(8, 9, "A")]


def _pair(events):
    return [(k, a, b, (p, 3)) if k != "punct" else (k, a, b, p) for k, a, b, p in events]


def _points(times):
    return [*(point(t, "A") for t in times), punct()]


CASES = {  # name: (input, duration set first or None, expected, payload fields)
    "1": (EDGES, None, _points([2, 3, 4, 5]), ("v",)),
    "2": (INTERVALS, None, _points([5, 6, 8, 9, 10]), ("v",)),
    "3": (EDGES, 100, _points([101, 102, 103, 104]), ("v",)),
    "4": (_pair(EDGES), None, _pair(_points([2, 3, 4, 5])), ("v", "n")),
    "5": (_pair(INTERVALS), None, _pair(_points([5, 6, 8, 9, 10])), ("v", "n")),
    "6": (_pair(EDGES), 100, _pair(_points([101, 102, 103, 104])), ("v", "n")),
}


@pytest.mark.parametrize("batch", BATCH_SIZES)
@pytest.mark.parametrize("case", sorted(CASES))
def test_point_at_end(case, batch):
    events, duration, expected, names = CASES[case]
    got, ref = stream(events, names, batch_size=batch), reference(events, names)
    if duration is not None:
        got, ref = got.alter_duration(duration), ref.alter_duration(duration)
    check(got.point_at_end(), expected, ref.point_at_end())
