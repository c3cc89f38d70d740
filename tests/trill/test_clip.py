"""Trill's ClipEventDuration tests, re-expressed for tidal's ``clip``.

Inputs and expected results from Trill's test Sources/Test/SimpleTesting/Streamables/ClipStreamableTest.cs,
MIT licence (Copyright (c) Microsoft Corporation). Keys: Trill's ``l => l[0].ToString()`` is the
first character of the payload, ``l => l % 10`` the payload modulo 10.

Which Trill tests are ported here, and which are not and why: tests/trill/README.md.
"""

from __future__ import annotations

import pytest

from trill.events import BATCH_SIZES, check, end, interval, punct, reference, start, stream

LEFT_01 = [
    interval(100, 105, "A1"), interval(101, 104, "A2"), interval(105, 110, "A3"), start(105, "A4"),
    end(110, 105, "A4"), interval(115, 120, "A5"), start(115, "A6"), end(120, 115, "A6"),
    interval(100, 112, "B1"), punct(),
]  # fmt: skip
RIGHT_01 = [
    interval(105, 110, "A"), start(105, "A"), end(106, 105, "A"), interval(106, 108, "A"), start(107, "A"),
    end(110, 107, "A"), interval(114, 120, "A"), start(116, "A"), end(120, 116, "A"), interval(117, 118, "A"),
    interval(99, 112, "C"), punct(),
]  # fmt: skip
EXPECTED_01 = [
    interval(100, 105, "A1"), interval(101, 104, "A2"), start(105, "A3"), end(106, 105, "A3"), start(105, "A4"),
    end(106, 105, "A4"), start(115, "A5"), end(116, 115, "A5"), start(115, "A6"), end(116, 115, "A6"),
    start(100, "B1"), end(112, 100, "B1"), punct(),
]  # fmt: skip


@pytest.mark.parametrize("batch", BATCH_SIZES)
def test_clip_streamable_01(batch):
    def first(e):
        return e.v[0]

    got = stream(LEFT_01, batch_size=batch).clip(stream(RIGHT_01, batch_size=batch), first, first)
    check(got, EXPECTED_01, reference(LEFT_01).clip(reference(RIGHT_01), first, first))


LEFT_02 = [interval(100, 105, 1), interval(105, 110, 3), start(105, 4), end(110, 105, 4), punct()]
RIGHT_02 = [interval(105, 110, 0), punct()]
EXPECTED_02 = [
    interval(100, 105, 1), start(105, 3), start(105, 4), end(110, 105, 3), end(110, 105, 4), punct(),
]  # fmt: skip


@pytest.mark.parametrize("batch", BATCH_SIZES)
def test_clip_streamable_02(batch):
    left_key, right_key = (lambda e: e.v % 10), (lambda e: e.v)
    got = stream(LEFT_02, batch_size=batch).clip(stream(RIGHT_02, batch_size=batch), left_key, right_key)
    check(got, EXPECTED_02, reference(LEFT_02).clip(reference(RIGHT_02), left_key, right_key))


LEFT_03 = [
    interval(100, 105, 1), interval(101, 104, 2), interval(105, 110, 3), start(105, 4), end(110, 105, 4),
    interval(115, 120, 5), start(115, 6), end(120, 115, 6), interval(100, 112, 10), punct(),
]  # fmt: skip
RIGHT_03 = [
    interval(105, 110, 0), start(105, 0), end(106, 105, 0), interval(106, 108, 0), start(107, 0), end(110, 107, 0),
    interval(114, 120, 0), start(116, 0), end(120, 116, 0), interval(117, 118, 0), interval(99, 112, 2), punct(),
]  # fmt: skip
EXPECTED_03 = [
    interval(100, 105, 1), start(100, 10), interval(101, 104, 2), end(105, 100, 10), start(105, 3), start(105, 4),
    end(110, 105, 3), end(110, 105, 4), start(115, 5), start(115, 6), end(120, 115, 5), end(120, 115, 6), punct(),
]  # fmt: skip


@pytest.mark.parametrize("batch", BATCH_SIZES)
def test_clip_streamable_03(batch):
    left_key, right_key = (lambda e: e.v % 10), (lambda e: e.v)
    got = stream(LEFT_03, batch_size=batch).clip(stream(RIGHT_03, batch_size=batch), left_key, right_key)
    check(got, EXPECTED_03, reference(LEFT_03).clip(reference(RIGHT_03), left_key, right_key))
