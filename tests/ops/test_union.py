"""Union and Multicast (tidal.ops.union) against the reference evaluator on random streams."""

from __future__ import annotations

from hypothesis import given
from streams import stream_cases

from tidal.testing import assert_same_snapshots
from tidal.testing.reference import check_physical


@given(left=stream_cases(), right=stream_cases())
def test_union_matches_reference(left, right):
    result = left[0].union(right[0]).to_arrow()
    check_physical(result)
    assert_same_snapshots(result, left[1].union(right[1]))


@given(case=stream_cases())
def test_multicast_self_union(case):
    stream, ref = case
    shared = stream.multicast()
    q = shared.where(lambda e: e.k == 0).union(shared.where(lambda e: e.k != 0))
    assert_same_snapshots(q.to_arrow(), ref)
    assert_same_snapshots(stream.multicast(lambda s: s.union(s)), ref.union(ref))
