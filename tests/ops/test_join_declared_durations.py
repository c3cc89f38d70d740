"""An input declared of constant duration whose interval ends go back in time is an error in every join
kernel that keeps a FIFO endpoint queue (hash join and clip, semi/anti-join, merge join), on either side;
the same intervals without the declaration join as the reference says."""

from __future__ import annotations

import pyarrow as pa
import pytest

import tidal
from tidal.core.errors import PlanError
from tidal.testing import Reference, assert_same_snapshots

# (start, end) per key 1: the second interval ends before the first (not one constant duration)
BROKEN = [(0, 10), (1, 5), (2, 12)]
OTHER = [(0, 20), (3, 9)]
OPS = {
    "hash join": lambda a, b: a.join(b, "k", "k", variant="hash"),
    "merge join": lambda a, b: a.join(b, "k", "k", variant="merge"),
    "where_exists": lambda a, b: a.where_exists(b, "k", "k"),
    "where_not_exists": lambda a, b: a.where_not_exists(b, "k", "k"),
    "clip": lambda a, b: a.clip(b, "k", "k"),
}


def _stream(intervals, name, declared=None):
    table = pa.table(
        {
            "sync_time": pa.array([s for s, _ in intervals], pa.int64()),
            "other_time": pa.array([e for _, e in intervals], pa.int64()),
            "k": pa.array([1] * len(intervals), pa.int64()),
            name: pa.array(range(len(intervals)), pa.int64()),
        }
    )
    s = tidal.from_arrow(table, time="sync_time", other="other_time", sorted_by="k")
    if declared is not None:
        s = tidal.Stream(s.node.but(props=s.node.props.but(constant_duration=declared)))
    return s


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("side", [0, 1])
def test_a_wrong_constant_duration_is_refused(op, side):
    if side == 1 and op == "clip":
        pytest.skip("clip keeps no endpoint queue for its right side (right ends play no part)")
    left = _stream(BROKEN if side == 0 else OTHER, "a", 10 if side == 0 else None)
    right = _stream(OTHER if side == 0 else BROKEN, "b", 10 if side == 1 else None)
    with pytest.raises(PlanError, match="declared constant duration"):
        OPS[op](left, right).to_arrow()


@pytest.mark.parametrize("op", ["hash join", "merge join"])
def test_the_same_intervals_undeclared_join_as_the_reference(op):
    out = OPS[op](_stream(BROKEN, "a"), _stream(OTHER, "b")).to_arrow()
    want = Reference(("k", "a"), [(s, e, (1, i)) for i, (s, e) in enumerate(BROKEN)]).join(
        Reference(("k", "b"), [(s, e, (1, i)) for i, (s, e) in enumerate(OTHER)]), "k", "k"
    )
    assert_same_snapshots(out, want)
