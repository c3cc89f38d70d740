"""Trill's WhereNotExists (left anti-semi-join) tests, re-expressed for tidal's ``where_not_exists``.

Inputs and expected results from Trill's test
Sources/Test/SimpleTesting/Streamables/LeftAntiSemiJoinStreamableTest.cs, MIT licence (Copyright (c)
Microsoft Corporation). Keys: Trill's ``l => l[0].ToString()``, the payload's first character.

Which Trill tests are ported here, and which are not and why: tests/trill/README.md.

The same inputs also check ``where_exists`` (its complement) against the reference evaluator:
at every instant the two together give back the left snapshot.
"""

from __future__ import annotations

import pytest

from tidal.testing import assert_same_snapshots
from trill.events import BATCH_SIZES, check, end, interval, punct, reference, start, stream


def first(e):
    return e.v[0]


LEFT_INTERVALS = [
    interval(100, 101, "A3"), interval(100, 110, "A1"), interval(101, 105, "A2"), interval(109, 112, "A4"),
    interval(102, 112, "B1"), punct(),
]  # fmt: skip
RIGHT_INTERVALS = [
    interval(101, 103, "A"), interval(106, 108, "A"), interval(106, 109, "A"), interval(100, 110, "C"), punct(),
]  # fmt: skip
EXPECTED_INTERVALS = [
    start(100, "A1"), end(101, 100, "A1"), start(103, "A1"), end(106, 103, "A1"), interval(109, 110, "A1"),
    interval(103, 105, "A2"), interval(100, 101, "A3"), interval(109, 112, "A4"), start(102, "B1"),
    end(112, 102, "B1"), punct(),
]  # fmt: skip

LEFT_EDGES = [
    start(100, "A1"), end(110, 100, "A1"), start(101, "A2"), end(105, 101, "A2"), start(102, "B1"),
    end(112, 102, "B1"), punct(),
]  # fmt: skip
RIGHT_EDGES = [
    start(101, "A"), end(103, 101, "A"), start(106, "A"), end(108, 106, "A"), start(106, "A"), end(109, 106, "A"),
    start(100, "C"), end(110, 100, "C"), punct(),
]  # fmt: skip
EXPECTED_EDGES = [
    start(100, "A1"), end(101, 100, "A1"), start(103, "A2"), end(105, 103, "A2"), start(103, "A1"),
    end(106, 103, "A1"), start(109, "A1"), end(110, 109, "A1"), start(102, "B1"), end(112, 102, "B1"), punct(),
]  # fmt: skip

CASES = {
    "intervals": (LEFT_INTERVALS, RIGHT_INTERVALS, EXPECTED_INTERVALS),
    "edges": (LEFT_EDGES, RIGHT_EDGES, EXPECTED_EDGES),
}


@pytest.mark.parametrize("batch", BATCH_SIZES)
@pytest.mark.parametrize("case", sorted(CASES))
def test_anti_semi_join(case, batch):
    left, right, expected = CASES[case]
    got = stream(left, batch_size=batch).where_not_exists(stream(right, batch_size=batch), first, first)
    check(got, expected, reference(left).where_not_exists(reference(right), first, first))


@pytest.mark.parametrize("case", sorted(CASES))
def test_semi_join_is_the_complement(case):
    left, right, _ = CASES[case]
    exists = stream(left).where_exists(stream(right), first, first)
    assert_same_snapshots(exists, reference(left).where_exists(reference(right), first, first))
    # what exists and what does not exist together are the left input, at every instant
    check(exists.union(stream(left).where_not_exists(stream(right), first, first)), left)
