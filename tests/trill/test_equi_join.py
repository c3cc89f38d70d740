"""Trill's equi-join tests, re-expressed for tidal's ``join``.

Inputs and expected results from Trill's test
Sources/Test/SimpleTesting/Streamables/EquiJoinStreamableTest.cs, MIT licence (Copyright (c)
Microsoft Corporation). Keys: Trill's ``l => l[0].ToString()``, the payload's first character; the
result ``(l, r) => $"{l},{r}"`` is the two payloads joined by a comma.

Which Trill tests are ported here, and which are not and why: tests/trill/README.md.
"""

from __future__ import annotations

import pytest

from trill.events import BATCH_SIZES, check, end, interval, point, punct, reference, start, stream


def first(e):
    return e.v[0]


def pair(left, right):
    return {"v": f"{left.v},{right.v}"}


D = 10
LEFT_INTERVALS = [
    interval(100, 100 + D, "A1"), interval(101, 101 + D, "B1"), interval(102, 102 + D, "C1"),
    interval(120, 120 + D, "A3"), interval(121, 121 + D, "B3"), interval(122, 122 + D, "C3"), punct(),
]  # fmt: skip
RIGHT_INTERVALS = [
    interval(105, 105 + D, "A2"), interval(106, 106 + D, "B2"), interval(107, 107 + D, "D2"),
    interval(125, 125 + D, "A4"), interval(126, 126 + D, "B4"), interval(127, 127 + D, "C4"), punct(),
]  # fmt: skip
EXPECTED_INTERVALS = [
    interval(105, 110, "A1,A2"), interval(106, 111, "B1,B2"), interval(125, 130, "A3,A4"),
    interval(126, 131, "B3,B4"), interval(127, 132, "C3,C4"), punct(),
]  # fmt: skip


@pytest.mark.parametrize("batch", BATCH_SIZES)
@pytest.mark.parametrize("fixed", [False, True], ids=["variable", "fixed"])
def test_join_intervals(fixed, batch):
    left, right = stream(LEFT_INTERVALS, batch_size=batch), stream(RIGHT_INTERVALS, batch_size=batch)
    ref_left, ref_right = reference(LEFT_INTERVALS), reference(RIGHT_INTERVALS)
    if fixed:  # a constant duration: tidal picks its FIFO join variant
        left, right = left.alter_duration(D), right.alter_duration(D)
        ref_left, ref_right = ref_left.alter_duration(D), ref_right.alter_duration(D)
    got = left.join(right, first, first, pair)
    check(got, EXPECTED_INTERVALS, ref_left.join(ref_right, first, first, pair))


@pytest.mark.parametrize("fixed", [False, True], ids=["variable", "fixed"])
def test_join_points(fixed):
    left, right = stream([point(100, "A1")]), stream([point(100, "A2")])
    if fixed:
        left, right = left.alter_duration(1), right.alter_duration(1)
    check(left.join(right, first, first, pair), [point(100, "A1,A2")])


LEFT_EDGE_INTERVAL = [
    interval(100, 110, "A1"), start(101, "B1"), end(111, 101, "B1"), start(102, "C1"), end(112, 102, "C1"), punct(),
]  # fmt: skip
RIGHT_EDGE_INTERVAL = [
    start(105, "A2"), end(115, 105, "A2"), interval(106, 116, "B2"), interval(107, 117, "D2"), punct(),
]  # fmt: skip
LEFT_EDGES = [
    start(100, "A1"), end(110, 100, "A1"), start(101, "B1"), end(111, 101, "B1"), start(102, "C1"),
    end(112, 102, "C1"), punct(),
]  # fmt: skip
RIGHT_EDGES = [
    start(105, "A2"), end(115, 105, "A2"), start(106, "B2"), end(116, 106, "B2"), start(107, "D2"),
    end(117, 107, "D2"), punct(),
]  # fmt: skip
EXPECTED_EDGES = [
    start(105, "A1,A2"), end(110, 105, "A1,A2"), start(106, "B1,B2"), end(111, 106, "B1,B2"), punct(),
]  # fmt: skip


@pytest.mark.parametrize("batch", BATCH_SIZES)
def test_join_edges_and_intervals(batch):
    got = stream(LEFT_EDGE_INTERVAL, batch_size=batch).join(
        stream(RIGHT_EDGE_INTERVAL, batch_size=batch), first, first, pair
    )
    ref = reference(LEFT_EDGE_INTERVAL).join(reference(RIGHT_EDGE_INTERVAL), first, first, pair)
    check(got, EXPECTED_EDGES, ref)


@pytest.mark.parametrize("batch", BATCH_SIZES)
def test_join_edges(batch):
    got = stream(LEFT_EDGES, batch_size=batch).join(stream(RIGHT_EDGES, batch_size=batch), first, first, pair)
    check(got, EXPECTED_EDGES, reference(LEFT_EDGES).join(reference(RIGHT_EDGES), first, first, pair))


NAMES = ("part", "v")
LEFT_PARTITIONED = [
    start(100, ("Partition1", "A1")), start(101, ("Partition1", "B1")), start(102, ("Partition1", "C1")),
    start(100, ("Partition2", "A1")), start(101, ("Partition2", "B1")), start(102, ("Partition2", "C1")),
]  # fmt: skip
RIGHT_PARTITIONED = [
    start(105, ("Partition1", "A2")), start(106, ("Partition1", "B2")), start(107, ("Partition1", "D2")),
    start(108, ("Partition2", "A2")), start(109, ("Partition2", "D2")), start(110, ("Partition2", "C2")),
]  # fmt: skip
EXPECTED_PARTITIONED = [
    start(105, ("Partition1", "A1,A2")), start(106, ("Partition1", "B1,B2")),
    start(108, ("Partition2", "A1,A2")), start(110, ("Partition2", "C1,C2")),
]  # fmt: skip


@pytest.mark.parametrize("batch", BATCH_SIZES)
def test_partitioned_start_edge_join(batch):
    def key(e):  # tidal's key lambdas return one value (a tuple is "not a key"): one string per pair
        return e.part + "/" + e.v[0]

    def result(left, right):
        return {"part": left.part, "v": f"{left.v},{right.v}"}

    left = stream(LEFT_PARTITIONED, NAMES, batch_size=batch)
    right = stream(RIGHT_PARTITIONED, NAMES, batch_size=batch)
    ref = reference(LEFT_PARTITIONED, NAMES).join(reference(RIGHT_PARTITIONED, NAMES), key, key, result)
    check(left.join(right, key, key, result), EXPECTED_PARTITIONED, ref)
