"""Two of Trill's AdHocTests that use window lifetimes: Trill's window convention (``align="end"``).

Inputs and expected results from Trill's test Sources/Test/SimpleTesting/AdHocTests.cs, MIT licence
(Copyright (c) Microsoft Corporation).

Which Trill tests are ported here, and which are not and why: tests/trill/README.md.
"""

from __future__ import annotations

import pytest

from tidal import agg
from trill.events import BATCH_SIZES, check, interval, point, reference, start, stream

NAMES = ("GroupId", "Name", "Reading")
READINGS = [point(1, ("GA", "A", 1.0)), point(2, ("GA", "B", 2.0)), point(3, ("GA", "C", 3.0))]


def _nested(s):
    return s.group_apply(
        "GroupId",
        lambda by_group: by_group.group_apply(
            "Name", lambda by_name: by_name.tumbling_window(5, align="end").aggregate(Reading=agg.average("Reading"))
        ),
    )


@pytest.mark.parametrize("batch", BATCH_SIZES)
def test_columnar_ungroup_null_ref_repro(batch):
    """Nested GroupApply over TumblingWindowLifetime(5) and Average: each name's average in [5, 10)."""
    expected = [interval(5, 10, ("GA", "A", 1.0)), interval(5, 10, ("GA", "B", 2.0)), interval(5, 10, ("GA", "C", 3.0))]
    check(_nested(stream(READINGS, NAMES, batch_size=batch)), expected, _nested(reference(READINGS, NAMES)))


HTTP = [
    (3, "msn.com", "157.59.185.162"), (7, "msn.com", "157.59.0.162"), (10, "msn.com", "157.59.185.162"),
    (13, "msn.com", "157.59.185.162"), (16, "msn.com", "157.59.185.162"), (20, "msn.com", "157.59.185.162"),
    (22, "test.cloudapp.net", "157.59.185.162"), (25, "bing.com", "157.59.185.162"),
    (27, "bing.com", "157.59.185.162"), (41, "bing.com", "157.59.185.162"), (45, "msn.com", "157.59.185.162"),
    (49, "msn.com", "157.59.185.162"), (53, "msn.com", "157.59.185.162"),
]  # fmt: skip


@pytest.mark.parametrize("batch", BATCH_SIZES)
def test_point_event_regression(batch):
    """Start edges counted per (host, address) in HoppingWindowLifetime(10, 10), each count made a
    point. Trill asserts 9 output elements: ``ToStreamEventObservable`` without a data filter, so
    8 counts and the final punctuation. With ``align="end"`` the 8 counts and their times are
    written out here from the windows ``(w-10, w]``."""
    names = ("TrimmedHost", "IpSource")
    events = [start(t, (host, ip)) for t, host, ip in HTTP]

    def query(s):
        counts = s.group_apply(
            ["TrimmedHost", "IpSource"], lambda g: g.hopping_window(10, 10, align="end").aggregate(Count=agg.count())
        )
        return counts.alter_duration(1)

    got = query(stream(events, names, batch_size=batch))
    m, m0 = ("msn.com", "157.59.185.162"), ("msn.com", "157.59.0.162")
    t, b = ("test.cloudapp.net", "157.59.185.162"), ("bing.com", "157.59.185.162")
    expected = [
        point(10, (*m, 2)), point(10, (*m0, 1)), point(20, (*m, 3)), point(30, (*t, 1)), point(30, (*b, 2)),
        point(50, (*b, 1)), point(50, (*m, 2)), point(60, (*m, 1)),
    ]  # fmt: skip
    check(got, expected, query(reference(events, names)))
    assert got.count() + 1 == 9  # Trill: output2.Count() == 9, its final punctuation included
