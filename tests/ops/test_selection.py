"""Where, Select, SelectMany (tidal.ops.selection) against the reference evaluator on random streams."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from streams import check_against_reference, stream_cases

OPS = {
    "where": (
        lambda s: s.where(lambda e: e.v % 2 == 0 and e.k != 1),
        lambda r: r.where(lambda e: e.v % 2 == 0 and e.k != 1),
    ),
    "where_row_mode": (
        lambda s: s.where(lambda e: _opaque(e.v)),
        lambda r: r.where(lambda e: _opaque(e.v)),
    ),
    "select": (
        lambda s: s.select(lambda e: {"k": e.k, "w": e.v * 3 - e.k}),
        lambda r: r.select(lambda e: {"k": e.k, "w": e.v * 3 - e.k}),
    ),
    "select_many": (
        lambda s: s.select_many(lambda e: [{"x": e.v}] * (e.k % 3)),
        lambda r: r.select_many(lambda e: [{"x": e.v}] * (e.k % 3)),
    ),
}


def _opaque(v):
    return v > 0


@given(case=stream_cases(), op=st.sampled_from(sorted(OPS)))
def test_operator_matches_reference(case, op):
    check_against_reference(case, *OPS[op])
