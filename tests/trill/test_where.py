"""Trill's Where test, re-expressed for tidal's ``where``.

Inputs and expected results from Trill's test Sources/Test/SimpleTesting/Streamables/WhereTest.cs,
MIT licence (Copyright (c) Microsoft Corporation).

Which Trill tests are ported here, and which are not and why: tests/trill/README.md.

The point of Trill's test: the second filter (``int.Parse``) must never see the row the first
filter dropped ("NA"), even when both are compiled into one columnar pass.
"""

from __future__ import annotations

import pytest

from trill.events import BATCH_SIZES, check, interval, punct, reference, stream

INPUT = [interval(0, 100, "1"), interval(1, 100, "2"), interval(2, 100, "NA"), interval(3, 100, "3")]
EXPECTED = [interval(1, 100, "2"), interval(3, 100, "3"), punct()]


@pytest.mark.parametrize("batch", BATCH_SIZES)
def test_where_does_not_evaluate_later_filters_on_dropped_rows(batch):
    got = stream(INPUT, batch_size=batch).where(lambda e: e.v != "NA").where(lambda e: int(e.v) > 1)
    ref = reference(INPUT).where(lambda e: e.v != "NA").where(lambda e: int(e.v) > 1)
    check(got, EXPECTED, ref)
