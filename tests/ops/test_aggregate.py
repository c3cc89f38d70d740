"""Snapshot aggregates, grouping and their physical variants against the reference evaluator."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st
from streams import physical_table, reference_of, stream_cases

import tidal
from tidal import INFINITY, agg
from tidal.testing import Reference, assert_same_snapshots
from tidal.testing.reference import check_physical

COMPILED_SETS = {
    "count_sum": lambda: (agg.count(), agg.sum("v")),
    "linear": lambda: dict(n=agg.count(), nn=agg.count_not_null("v"), s=agg.sum("v"), a=agg.average("v")),
    "spread": lambda: dict(var=agg.variance("v"), sd=agg.stddev("v"), n=agg.count()),
    "ordered": lambda: dict(lo=agg.min("v"), hi=agg.max("v"), cd=agg.count_distinct("v")),
    "percentiles": lambda: dict(
        p50=agg.percentile_cont("v", 0.5), p90=agg.percentile_disc("v", 0.9), p25=agg.percentile_cont("v", 0.25)
    ),
    "lambda_arg": lambda: dict(s2=agg.sum(lambda e: e.v * 2 + e.k), m=agg.max(lambda e: e.v - e.k)),
}
PYTHON_SETS = {
    "lists": lambda: dict(top=agg.top_k("v", 2), d=agg.distinct("v"), n=agg.count()),
    "first_last": lambda: dict(f=agg.first("v"), la=agg.last("v")),
}


def _call(stream, maker, method="aggregate", key=None, **opts):
    made = maker()
    fns, named = (made, {}) if isinstance(made, tuple) else ((), made)
    if key is None:
        return getattr(stream, method)(*fns, **named, **opts)
    return getattr(stream, method)(key, *fns, **named, **opts)


@given(case=stream_cases(), which=st.sampled_from(sorted(COMPILED_SETS) + sorted(PYTHON_SETS)))
def test_aggregate_general_variant(case, which):
    stream, ref = case
    maker = {**COMPILED_SETS, **PYTHON_SETS}[which]
    result = _call(stream, maker).to_arrow()
    check_physical(result)
    assert_same_snapshots(result, _call(ref, maker), digits=6)


@given(case=stream_cases(), which=st.sampled_from(sorted(COMPILED_SETS)))
def test_python_engine_agrees_with_compiled_kernels(case, which):
    stream, ref = case
    maker = COMPILED_SETS[which]
    result = _call(stream, maker, method="group_aggregate", key="k", engine="python").to_arrow()
    assert_same_snapshots(result, _call(ref, maker, method="group_aggregate", key="k"), digits=6)


@given(
    case=stream_cases(),
    which=st.sampled_from(sorted(COMPILED_SETS) + sorted(PYTHON_SETS)),
    key=st.sampled_from(["k", ["k", "v"], "lambda"]),
)
def test_group_aggregate(case, which, key):
    stream, ref = case
    maker = {**COMPILED_SETS, **PYTHON_SETS}[which]
    key = (lambda e: e.k % 2) if key == "lambda" else key
    result = _call(stream, maker, method="group_aggregate", key=key).to_arrow()
    check_physical(result)
    assert_same_snapshots(result, _call(ref, maker, method="group_aggregate", key=key), digits=6)


@given(case=stream_cases(allow_edges=False), which=st.sampled_from(sorted(COMPILED_SETS) + sorted(PYTHON_SETS)))
def test_constant_duration_fifo_variant(case, which):
    stream, ref = case
    maker = {**COMPILED_SETS, **PYTHON_SETS}[which]
    q = _call(stream.alter_duration(7), maker, method="group_aggregate", key="k")
    assert "FIFO" in q.explain()
    assert_same_snapshots(
        q.to_arrow(), _call(ref.alter_duration(7), maker, method="group_aggregate", key="k"), digits=6
    )


LINEAR_SETS = ("count_sum", "linear", "spread")


@given(
    case=stream_cases(),
    which=st.sampled_from(sorted(COMPILED_SETS) + sorted(PYTHON_SETS)),
    window=st.sampled_from([(10, 10, 0), (5, 5, 2), (3, 8, 1), (10, 5, 0)]),
    variant=st.sampled_from([None, "window"]),
)
def test_window_variants(case, which, window, variant):
    stream, ref = case
    size, hop, offset = window
    maker = {**COMPILED_SETS, **PYTHON_SETS}[which]
    variant = variant if size <= hop else None  # "window" (unfused) presumes one window per event
    q = _call(stream.hopping_window(size, hop, offset), maker, method="group_aggregate", key="k", variant=variant)
    expected_variant = "Aggregate [tumbling window" if size <= hop else "FIFO"
    if variant is None and which in LINEAR_SETS:  # linear aggregates fuse with the window unless a variant is forced
        expected_variant = "fused tumbling" if size <= hop else "fused hopping"
    assert expected_variant in q.explain()
    result = q.to_arrow()
    check_physical(result)
    expected = _call(ref.hopping_window(size, hop, offset), maker, method="group_aggregate", key="k")
    assert_same_snapshots(result, expected, digits=6)


@given(
    case=stream_cases(),
    which=st.sampled_from(LINEAR_SETS + ("udf_count",)),
    window=st.sampled_from(
        [(10, 10, 0), (5, 5, 2), (3, 8, 1), (1, 1, 0), (4, 4, -3), (10, 5, 0), (9, 3, 1), (2, 1, 0)]
    ),
    key=st.sampled_from([None, "k", ["k", "v"], "group_apply"]),
)
def test_fused_window_variant(case, which, window, key):
    stream, ref = case
    size, hop, offset = window
    sets = {
        **COMPILED_SETS,
        "udf_count": lambda: dict(c=agg.user_defined(lambda: 0, lambda s, e: s + 1, lambda s, e: s - 1)),
    }
    maker = sets[which]
    if key == "group_apply":
        q = stream.group_apply("k", lambda g: _call(g.hopping_window(size, hop, offset), maker, variant="fused"))
        r = ref.group_apply("k", lambda g: _call(g.hopping_window(size, hop, offset), maker))
    else:
        method = "aggregate" if key is None else "group_aggregate"
        q = _call(stream.hopping_window(size, hop, offset), maker, method=method, key=key, variant="fused")
        r = _call(ref.hopping_window(size, hop, offset), maker, method=method, key=key)
    assert ("fused tumbling window" if size <= hop else "fused hopping window") in q.explain()
    result = q.to_arrow()
    check_physical(result)
    assert_same_snapshots(result, r, digits=6)


def test_fused_window_variant_is_refused_where_it_does_not_apply():
    s = tidal.from_arrow(pa.table({"t": [0, 1], "k": [1, 2], "v": [5, 7]}), time="t")
    with pytest.raises(tidal.PlanError, match="fused"):
        s.hopping_window(10, 4).aggregate(agg.count(), variant="fused")  # the hop does not divide the size
    with pytest.raises(tidal.PlanError, match="fused"):
        s.tumbling_window(10).aggregate(agg.max("v"), variant="fused")  # not a running sum
    with pytest.raises(tidal.PlanError, match="fused"):
        s.alter_duration(10).aggregate(agg.count(), variant="fused")  # no window
    # a user aggregate reading the timestamp needs the window's start: it runs unfused, and right
    stamp = agg.user_defined(lambda: 0, lambda c, t, e: c + t, lambda c, t, e: c - t)
    q = s.tumbling_window(10, offset=3).aggregate(total=stamp)
    assert "fused" not in q.explain()
    assert [r["total"] for r in q.to_arrow().to_pylist()] == [-7 + -7]


@st.composite
def start_edge_cases(draw):
    n = draw(st.integers(0, 20))
    events = [
        (draw(st.integers(-20, 40)), INFINITY, (draw(st.integers(0, 3)), draw(st.integers(-5, 5))), True)
        for _ in range(n)
    ]
    batch = draw(st.sampled_from([1, 2, 5, 80_000]))
    punct = draw(st.sampled_from([None, 1, 7]))
    stream = tidal.from_arrow(
        physical_table(events), time="sync_time", other="other_time", batch_size=batch, punctuate_every=punct
    )
    return stream, reference_of(events)


@given(case=start_edge_cases(), which=st.sampled_from(sorted(COMPILED_SETS) + sorted(PYTHON_SETS)))
def test_start_edge_only_variant(case, which):
    stream, ref = case
    maker = {**COMPILED_SETS, **PYTHON_SETS}[which]
    q = _call(stream, maker, method="group_aggregate", key="k", variant="start_edge")
    assert "start edges only" in q.explain()
    assert_same_snapshots(q.to_arrow(), _call(ref, maker, method="group_aggregate", key="k"), digits=6)


@given(case=stream_cases(), nested=st.booleans())
def test_group_apply_with_subquery(case, nested):
    stream, ref = case

    def sub(g):
        return g.where(lambda e: e.v != 0).tumbling_window(6).aggregate(agg.count(), total=agg.sum("v"))

    if nested:
        q = stream.group_apply("k", lambda g: g.group_apply("v", sub))
        r = ref.group_apply("k", lambda g: g.group_apply("v", sub))
    else:
        q = stream.group_apply("k", sub)
        r = ref.group_apply("k", sub)
    result = q.to_arrow()
    check_physical(result)
    assert_same_snapshots(result, r)


@given(case=stream_cases())
def test_user_defined_aggregates(case):
    stream, ref = case
    # invertible: Trill's Count exactly as its paper defines it
    count = dict(
        initial_state=lambda: 0,
        accumulate=lambda old, t, e: old + 1,
        deaccumulate=lambda old, t, e: old - 1,
        difference=lambda left, right: left - right,
        compute_result=lambda c: c,
    )
    r_count = ref.aggregate(cnt=agg.user_defined(**count))
    assert_same_snapshots(stream.aggregate(**count).select(lambda e: {"cnt": e.aggregate}).to_arrow(), r_count)
    # with only difference (no deaccumulate), and a non-invertible one (max of v+k)
    diff_only = agg.user_defined(lambda: 0, lambda s, e: s + e.v, difference=lambda a, b: a - b)
    best = agg.user_defined(lambda: None, lambda s, e: e.v + e.k if s is None else max(s, e.v + e.k))
    q = stream.group_aggregate("k", total=diff_only, best=best)
    assert_same_snapshots(q.to_arrow(), ref.group_aggregate("k", total=diff_only, best=best))


def test_empty_snapshots_produce_nothing_and_results_are_records():
    t = pa.table({"t": [0, 10], "k": [1, 1], "v": [5, 7]})
    s = tidal.from_arrow(t, time="t").alter_duration(3)
    got = s.aggregate(agg.count(), agg.sum("v"), mean=agg.average("v")).to_intervals().to_pylist()
    assert got == [
        {"start": 0, "end": 3, "count": 1, "sum": 5, "mean": 5.0},
        {"start": 10, "end": 13, "count": 1, "sum": 7, "mean": 7.0},
    ]


def test_nulls_follow_sql_rules():
    t = pa.table({"t": [0, 0, 1], "k": [1, 2, 2], "v": pa.array([None, 4, None], pa.int64())})
    s = tidal.from_arrow(t, time="t", kind="start")
    rows = s.group_aggregate("k", agg.count(), agg.count_not_null("v"), agg.sum("v"), agg.min("v")).to_arrow()
    final = {
        r["k"]: (r["count"], r["count_not_null"], r["sum"], r["min"])
        for r in rows.to_pylist()
        if r["other_time"] == INFINITY
    }
    assert final == {1: (1, 0, None, None), 2: (2, 1, 4, 4)}


def test_average_is_a_merged_multi_aggregate_sharing_sums():
    t = pa.table({"t": [0, 1, 2], "v": [1.5, 2.5, 5.0]})
    q = tidal.from_arrow(t, time="t", kind="start").aggregate(s=agg.sum("v"), c=agg.count(), a=agg.average("v"))
    op = q.node.make()
    last = q.to_arrow().to_pylist()[-1]
    assert last["a"] == pytest.approx(last["s"] / last["c"]) and last["a"] == pytest.approx(3.0)
    op.engine._layout([pa.float64(), None, pa.float64()])
    assert op.engine.flt_slots == [("value", 0)]  # one float sum shared by sum() and average()


def test_aggregate_errors_name_the_problem():
    s = tidal.from_arrow(pa.table({"t": [0], "v": [1]}), time="t")
    with pytest.raises(tidal.PlanError, match="both be named"):
        s.aggregate(agg.sum("v"), agg.sum("v"))
    with pytest.raises(tidal.PlanError, match="not a field"):
        s.aggregate(agg.sum("nope"))
    with pytest.raises(tidal.PlanError, match="not an aggregate"):
        s.aggregate(lambda e: e.v)


def test_seed_ad_click_windowed_count_per_ad():
    """Seed 001 section 2: sample 5% of users, keep AdId, count per ad over a 5-minute window."""
    rng = np.random.default_rng(11)
    n = 3000
    clicks = pa.table(
        {
            "click_time": np.sort(rng.integers(0, 3_600, n)),
            "user_id": rng.integers(0, 2_000, n),
            "ad_id": rng.integers(0, 20, n),
        }
    )
    minutes5 = 300
    stream = tidal.from_arrow(clicks, time="click_time", punctuate_every=60)
    query = (
        stream.where(lambda e: e.user_id % 100 < 5)
        .select(lambda e: {"ad_id": e.ad_id})
        .group_apply(lambda e: e.ad_id, lambda s: s.alter_duration(minutes5).aggregate(agg.count()))
    )
    assert "columnar" in query.explain()
    ref = Reference.points(
        ("click_time", "user_id", "ad_id"),
        [(r["click_time"], (r["click_time"], r["user_id"], r["ad_id"])) for r in clicks.to_pylist()],
    )
    expected = (
        ref.where(lambda e: e.user_id % 100 < 5)
        .select(lambda e: {"ad_id": e.ad_id})
        .group_apply(lambda e: e.ad_id, lambda s: s.alter_duration(minutes5).aggregate(agg.count()))
    )
    result = query.to_arrow()
    assert result.column_names == ["sync_time", "other_time", "key", "count"]
    assert_same_snapshots(result, expected)


def test_running_sum_user_aggregates_compile_to_kernels():
    count = dict(
        initial_state=lambda: 0,
        accumulate=lambda old, t, e: old + 1,
        deaccumulate=lambda old, t, e: old - 1,
        difference=lambda left, right: left - right,
        compute_result=lambda c: c,
    )
    s = tidal.from_arrow(pa.table({"t": [0, 1], "v": [3, 4]}), time="t")
    assert "user-defined, compiled as sum(1)" in s.aggregate(**count).explain()
    opaque = dict(initial_state=lambda: 0, accumulate=lambda old, e: _bump(old), deaccumulate=lambda old, e: old - 1)
    assert "python" in s.aggregate(**opaque).explain()


def _bump(x):
    return x + 1


@given(case=stream_cases())
def test_map_reduce_is_group_apply_after_the_map_stage(case):
    stream, ref = case
    mapper = lambda s: s.where(lambda e: e.v >= 0).select(lambda e: {"k": e.k, "v": e.v + 1})  # noqa: E731
    reducer = lambda g: g.tumbling_window(10).aggregate(agg.sum("v"))  # noqa: E731
    q = stream.map(mapper, key="k").reduce(reducer)
    assert_same_snapshots(q.to_arrow(), mapper(ref).group_apply("k", reducer))
    assert_same_snapshots(stream.map_reduce(mapper, "k", reducer).to_arrow(), mapper(ref).group_apply("k", reducer))


@pytest.mark.parametrize("window", [(10, 10), (20, 5)])
def test_fused_window_follows_null_rules_like_the_unfused_plan(window):
    t = pa.table(
        {
            "t": [0, 1, 2, 3, 12, 13, 25],
            "k": [1, 1, 2, 2, 1, 2, 1],
            "v": pa.array([None, 4, None, None, 2, 5, None], pa.int64()),
            "f": pa.array([1.5, float("nan"), None, 2.0, 3.0, None, 4.0], pa.float64()),
        }
    )
    s = tidal.from_arrow(t, time="t").hopping_window(*window)
    aggs = dict(n=agg.count(), nn=agg.count_not_null("v"), s=agg.sum("v"), a=agg.average("f"), sd=agg.stddev("f"))
    fused = s.group_aggregate("k", **aggs)
    assert "fused" in fused.explain()
    unfused = s.group_aggregate("k", **aggs, variant="window" if window[0] <= window[1] else "fifo")
    assert_same_snapshots(fused.to_arrow(), unfused.to_arrow(), digits=9)
    assert fused.to_arrow().column("s").null_count > 0  # a group whose values are all null sums to null


@given(case=stream_cases(), window=st.sampled_from([(10, 10, 0), (3, 8, 1), (10, 5, 0)]))
def test_filter_after_a_window_moves_below_it_and_the_aggregate_fuses(case, window):
    """A payload filter commutes with a window (one reads payloads, the other changes lifetimes):
    written after the window it runs before it, and the aggregate still fuses with the window."""
    stream, ref = case
    size, hop, offset = window
    q = stream.hopping_window(size, hop, offset).where(lambda e: e.v > 0).group_aggregate("k", n=agg.count())
    plan = q.explain()
    assert "fused" in plan and plan.index("Where") > plan.index("Window"), plan  # the filter is the window's input
    result = q.to_arrow()
    check_physical(result)
    expected = ref.hopping_window(size, hop, offset).where(lambda e: e.v is not None and e.v > 0)
    assert_same_snapshots(result, expected.group_aggregate("k", n=agg.count()))


EXTREME_INTS = [-(2**63), -(2**63) + 1, -(2**53) - 1, -1, 0, 2**53, 2**53 + 1, 2**63 - 2, 2**63 - 1]
EXTREME_FLOATS = [float("-inf"), -1e308, -2.5, -0.0, 0.0, 5e-324, 1.5, 2.0**53 + 2, float("inf")]


@given(
    events=st.lists(
        st.tuples(st.integers(-15, 30), st.integers(1, 12), st.integers(0, 2), st.integers(0, 8)), max_size=30
    ),
    floats=st.booleans(),
    window=st.sampled_from([None, 5]),
    batch=st.sampled_from([1, 3, 80_000]),
)
def test_order_aggregates_are_exact_at_the_ends_of_int64_and_float64(events, floats, window, batch):
    """MIN/MAX/COUNT DISTINCT/percentile_disc over int64 beyond 2**53 and over -0.0, subnormals and
    infinities, with lifetimes ending (removals from the multisets): exactly the reference's values."""
    values = EXTREME_FLOATS if floats else EXTREME_INTS
    rows = sorted((s, s + d, k, values[i]) for s, d, k, i in events)
    table = pa.table(
        {
            "t": pa.array([r[0] for r in rows], pa.int64()),
            "e": pa.array([r[1] for r in rows], pa.int64()),
            "k": pa.array([r[2] for r in rows], pa.int64()),
            "v": pa.array([r[3] for r in rows], pa.float64() if floats else pa.int64()),
        }
    )
    ref = Reference(("k", "v"), [(s, e, (k, v)) for s, e, k, v in rows])
    stream = tidal.from_arrow(table, time="t", end="e", batch_size=batch)
    if window:
        stream, ref = stream.tumbling_window(window), ref.tumbling_window(window)

    def aggs():
        return dict(lo=agg.min("v"), hi=agg.max("v"), cd=agg.count_distinct("v"), p=agg.percentile_disc("v", 0.5))

    result = stream.group_aggregate("k", **aggs()).to_arrow()
    check_physical(result)
    assert_same_snapshots(result, ref.group_aggregate("k", **aggs()))
