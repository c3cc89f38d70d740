"""Random streams at the edges against the reference evaluator: times near the ends of the range,
NULL keys and values, batch size 1, a punctuation after every event, start and end edges of
different keys at the same tick. (``HYPOTHESIS_PROFILE=explore`` draws new ones.)"""

from __future__ import annotations

import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st
from streams import physical_table, run_with_restart

import tidal
from tidal import INFINITY, agg
from tidal.core.canonical import freeze
from tidal.core.time import EARLIEST, LATEST
from tidal.testing import Reference, assert_same_snapshots
from tidal.testing.reference import check_physical

NAMES = ("k", "v")
BASES = [0, EARLIEST, LATEST - 200, -(2**40), -15]  # -15: times around -1 and 0 (no kernel may take them for markers)


@st.composite
def edge_events(draw, max_events=12, base=None, floats=None):
    base = draw(st.sampled_from(BASES)) if base is None else base
    n = draw(st.integers(0, max_events))
    out = []
    for _ in range(n):
        s = base + draw(st.integers(0, 30))
        kind = draw(st.integers(0, 5))
        if kind == 0:
            e = INFINITY
        else:
            e = s + draw(st.sampled_from([1, 1, 2, 3, 5, 30, 100]))
        edges = e == INFINITY or draw(st.booleans())
        k = draw(st.one_of(st.none(), st.integers(0, 2)))
        v = draw(st.one_of(st.none(), st.integers(-3, 3)))
        out.append((s, e, (k, v), edges))
    if (draw(st.integers(0, 3)) == 0) if floats is None else floats:  # a float payload, NaN included
        nan = float("nan")
        out = [(s, e, (k, None if v is None else nan if v == 3 else v / 2), ed) for s, e, (k, v), ed in out]
    return base, out


def table_of(events, floats: bool = False) -> pa.Table:
    return physical_table(events, value_type=pa.float64() if floats else pa.int64())


@st.composite
def cases(draw, base=None, floats=None):
    base, events = draw(edge_events(base=base, floats=floats))
    batch_size = draw(st.sampled_from([1, 2, 5, 80_000]))
    punct = draw(st.sampled_from([None, 1, 3]))
    stream = tidal.from_arrow(
        table_of(events, any(isinstance(p[1], float) for _, _, p, _ in events) or bool(floats)),
        time="sync_time",
        other="other_time",
        batch_size=batch_size,
        punctuate_every_events=punct,
    )
    return base, stream, Reference(NAMES, [(s, e, p) for s, e, p, _ in events]), (batch_size, punct, events)


def _engine(s, **opts):
    """Options only the engine takes (a physical variant)."""
    return opts if isinstance(s, tidal.Stream) else {}


def _doubled(e):
    return None if e.v is None else e.v * 2 - 1


UNARY = {
    "where_null": lambda s, b: s.where(lambda e: e.k == 1),
    "shift": lambda s, b: s.shift_lifetime(3),
    "alter_duration": lambda s, b: s.alter_duration(4),
    "tumbling": lambda s, b: s.tumbling_window(5),
    "tumbling_offset": lambda s, b: s.tumbling_window(7, offset=3),
    "hopping": lambda s, b: s.hopping_window(6, 2),
    "hopping_gap": lambda s, b: s.hopping_window(2, 5),
    "hopping_end": lambda s, b: s.hopping_window(6, 3, align="end"),
    "clip_duration": lambda s, b: s.clip_duration(2),
    "extend": lambda s, b: s.extend_lifetime(4),
    "quantize": lambda s, b: s.quantize_lifetime(4),
    "point_at_end": lambda s, b: s.point_at_end(),
    "chop": lambda s, b: s.chop(3),
    "session": lambda s, b: s.session_window(3),
    "session_max": lambda s, b: s.session_window(3, max_duration=7),
    "stitch": lambda s, b: s.stitch(),
    "distinct": lambda s, b: s.distinct(),
    "count_sum": lambda s, b: s.aggregate(n=agg.count(), s=agg.sum("v"), c=agg.count_not_null("v")),
    "minmax": lambda s, b: s.aggregate(lo=agg.min("v"), hi=agg.max("v")),
    "group_count": lambda s, b: s.group_aggregate("k", n=agg.count(), s=agg.sum("v")),
    "group_minmax": lambda s, b: s.group_aggregate("k", lo=agg.min("v"), hi=agg.max("v"), d=agg.count_distinct("v")),
    "group_avg": lambda s, b: s.group_aggregate("k", a=agg.average("v")),
    "first_last": lambda s, b: s.group_aggregate("k", f=agg.first("v"), la=agg.last("v")),
    "window_fused": lambda s, b: s.tumbling_window(4).group_aggregate(
        "k", n=agg.count(), a=agg.sum("v"), **_engine(s, variant="fused")
    ),
    "hopping_fused": lambda s, b: s.hopping_window(6, 2).aggregate(
        n=agg.count(), sd=agg.stddev("v"), **_engine(s, variant="fused")
    ),
    "gap_fused": lambda s, b: s.hopping_window(2, 5, 1).aggregate(su=agg.sum("v"), **_engine(s, variant="fused")),
    "fifo": lambda s, b: s.alter_duration(3).group_aggregate("k", n=agg.count(), hi=agg.max("v")),
    "percentiles": lambda s, b: s.group_aggregate(
        "k", p=agg.percentile_cont("v", 0.5), q=agg.percentile_disc("v", 0.9)
    ),
    "lists": lambda s, b: s.aggregate(t=agg.top_k("v", 2), d=agg.distinct("v")),
    "group_apply": lambda s, b: s.group_apply("k", lambda g: g.hopping_window(4, 2).aggregate(n=agg.count())),
    "group_apply_v": lambda s, b: s.group_apply("v", lambda g: g.session_window(2).distinct()),
    "select": lambda s, b: (
        s.select(k="k", w=_doubled) if isinstance(s, tidal.Stream) else s.select(lambda e: {"k": e.k, "w": _doubled(e)})
    ),
    "chained": lambda s, b: s.extend_lifetime(-1).clip_duration(3).stitch().point_at_end(),
}
BINARY = {
    "union": lambda a, b: a.union(b),
    "join": lambda a, b: a.join(b, "k", "k"),
    "join_v": lambda a, b: a.join(b, "v", "v"),
    "join_small": lambda a, b: a.join(b, "k", "k", left_is_small=True),
    "left_outer": lambda a, b: a.left_outer_join(b, "k", "k"),
    "full_outer": lambda a, b: a.full_outer_join(b, "k", "k"),
    "exists": lambda a, b: a.where_exists(b, "k", "k"),
    "not_exists": lambda a, b: a.where_not_exists(b, "k", "k"),
    "clip": lambda a, b: a.clip(b, "k", "k"),
}


def _leaves_range(ref: Reference) -> bool:
    return any(s < EARLIEST or s > LATEST or (e != INFINITY and e > LATEST + 1) for s, e, _ in ref.events)


def _run(query, expected: Reference) -> pa.Table | None:
    """The engine's answer, or None where it refused (as it must) an answer outside the range of times."""
    try:
        return query.to_arrow()
    except tidal.InputError as e:
        if "outside the range of event times" in str(e) and _leaves_range(expected):
            return None
        raise


@given(case=cases(), op=st.sampled_from(sorted(UNARY)))
def test_unary_at_the_edges(case, op):
    base, stream, ref, _ = case
    fn = UNARY[op]
    result = _run(fn(stream, base), fn(ref, base))
    if result is None:
        return
    check_physical(result)
    assert_same_snapshots(result, fn(ref, base), digits=6)


@st.composite
def pairs(draw):
    base, floats = draw(st.sampled_from(BASES)), draw(st.integers(0, 3)) == 0  # both sides: one type
    return draw(cases(base=base, floats=floats)), draw(cases(base=base, floats=floats))


@given(pair=pairs(), op=st.sampled_from(sorted(BINARY)))
def test_binary_at_the_edges(pair, op):
    (_, left, lref, _), (_, right, rref, _) = pair
    fn = BINARY[op]
    result = fn(left, right).to_arrow()
    check_physical(result)
    assert_same_snapshots(result, fn(lref, rref), digits=6)


SELF_BINARY = {
    "self_join": lambda s: s.join(s.shift_lifetime(2), "k", "k"),
    "self_join_small": lambda s: s.where(lambda e: e.v != 0).join(s, "k", "k", left_is_small=True),
    "self_outer": lambda s: s.full_outer_join(s.where(lambda e: e.v is not None and e.v > 0), "k", "k"),
    "self_not_exists": lambda s: s.where_not_exists(
        s.where(lambda e: e.v is not None and e.v > 0).extend_lifetime(2), "k", "k"
    ),
    "self_clip": lambda s: s.clip(s.shift_lifetime(1), "k", "k"),
    "self_union": lambda s: s.union(s.tumbling_window(4)),
}


def _rows(table: pa.Table) -> list[tuple]:
    return sorted((freeze(r) for r in zip(*(c.to_pylist() for c in table.columns), strict=True)), key=repr)


@given(
    case=cases(),
    op=st.sampled_from(sorted(UNARY) + sorted(SELF_BINARY)),
    cut=st.integers(0, 30),
)
def test_checkpoint_in_the_middle_at_the_edges(case, op, cut):

    base, stream, ref, _ = case
    fn = UNARY.get(op) or (lambda s, b: SELF_BINARY[op](s))
    q = fn(stream, base)
    whole = _run(q, fn(ref, base))
    if whole is None:
        return
    combined = run_with_restart(q, cut)
    assert _rows(combined) == _rows(whole)
    assert_same_snapshots(combined, fn(ref, base), digits=6)
