"""Differential fuzzer: the same query gives the same answer embedded and on Spark.

Hypothesis draws random streams (keys with nulls, times on both sides of 1970 with duplicates and
gaps, integer payloads with nulls, float payloads with NaN, -0.0 and infinities, random batch sizes)
and random query shapes from what the Spark backend runs (stateless chains, some pushed into Spark
SQL; tumbling, hopping and session windows; grouped and global aggregates, map-side combined or not;
joins, co-partitioned or broadcast; SQL through ``run_query_on_spark``), runs each embedded and on
Spark with 1 to 4 partitions, and compares the snapshots (``assert_same_snapshots``: the order of
rows does not matter, NaN equals NaN, -0.0 equals 0.0 as in SQL).

Floats are compared exactly, except float sums, averages and variances: embedded and Spark add a
group's values in the order they arrive, and within one sync time that order is the input's on one
and the shuffle's on the other, so those agree within 1e-9 relative (docs/operators/aggregates.md:
float sums keep the rows' order). Each Spark job costs about a second here: examples are few.
"""

from __future__ import annotations

import math

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tidal
import tidal.spark
from tidal import agg
from tidal.testing import assert_same_snapshots
from tidal.testing.reference import check_physical

FUZZ = settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
FLOATS = [0.0, -0.0, 1.5, -2.25, 1e16, math.nan, math.inf, -math.inf, 3.0, None]
# aggregates whose answer depends on the order values are added in (floats): compared within 1e-9
ORDER_SENSITIVE = {"sum", "average", "variance", "stddev"}


@st.composite
def tables(draw, max_rows: int = 30, key_type: str = "int"):
    """Rows in time order: ``t`` (ticks, some before 1970, duplicates and gaps), ``k`` (nullable key),
    ``i`` (nullable integer), ``v`` (float with NaN, -0.0, infinities, nulls)."""
    n = draw(st.integers(0, max_rows))
    base = draw(st.sampled_from([-1_000, -37, 0, 5]))
    times = sorted(base + draw(st.integers(0, 60)) for _ in range(n))
    keys = [draw(st.one_of(st.none(), st.integers(0, 3))) for _ in range(n)]
    if key_type == "str":
        keys = [None if k is None else "abcd"[k] for k in keys]
    # payload nulls in some examples only: a lambda over a None raises (embedded and on Spark alike)
    nulls = draw(st.booleans())
    ints = [draw(st.one_of(st.none(), st.integers(-5, 5)) if nulls else st.integers(-5, 5)) for _ in range(n)]
    floats = [draw(st.sampled_from(FLOATS if nulls else FLOATS[:-1])) for _ in range(n)]
    return pa.table(
        {
            "t": pa.array(times, pa.int64()),
            "k": pa.array(keys, pa.string() if key_type == "str" else pa.int64()),
            "i": pa.array(ints, pa.int64()),
            "v": pa.array(floats, pa.float64()),
        }
    )


def _compare(spark, q, partitions: int, tolerant: bool) -> pa.Table | None:
    """Spark's answer is the embedded one; where embedded refuses (a lambda raising on a None, a
    construct not supported), Spark refuses too rather than answering."""
    try:
        embedded = q.to_arrow()
    except tidal.TidalError as refused:
        with pytest.raises(Exception, match="tidal|not supported|raised") as on_spark:
            tidal.spark.to_arrow(q, partitions=partitions, spark=spark)
        assert not isinstance(on_spark.value, AssertionError), refused
        return None
    out = tidal.spark.to_arrow(q, partitions=partitions, spark=spark)
    check_physical(out)
    assert out.schema.equals(embedded.schema), (out.schema, embedded.schema)
    assert_same_snapshots(out, embedded, rel_tol=1e-9 if tolerant else None)
    return embedded


# -- single-input plans: stateless prefix, a window, an aggregate ------------------------------------
PREFIXES = {
    "none": lambda s: s,
    "where_pushed": lambda s: s.where(lambda e: e.i > -2),  # a comparison: runs in Spark SQL
    "where_and_pushed": lambda s: s.where(lambda e: e.i >= -3 and e.v < 2.0),
    "where_or": lambda s: s.where(lambda e: e.i > 1 or e.v < 0.0),  # three-valued: stays in tidal
    "select": lambda s: s.select("k", "i", "v"),
    "renamed": lambda s: s.select(k="k", i="i", v="v"),
    "computed": lambda s: s.select(lambda e: {"k": e.k, "i": e.i, "v": e.v * 2.0}),
    "where_float_pushed": lambda s: s.where(lambda e: e.k != 1 and e.v >= 1.0),  # NaN, None: Python's meaning
    "where_null_safe": lambda s: s.where(lambda e: e.k == e.k and e.i != 0),
}
WINDOWS = {
    "none": lambda s: s,
    "tumbling": lambda s: s.tumbling_window(10),
    "tumbling_offset": lambda s: s.tumbling_window(7, offset=3),
    "hopping": lambda s: s.hopping_window(12, 4),
    "hopping_gaps": lambda s: s.hopping_window(3, 8, offset=1),
    "durations": lambda s: s.alter_duration(5),
    "end_aligned": lambda s: s.tumbling_window(6, align="end"),
    "session": lambda s: s.session_window(4),
    "session_capped": lambda s: s.session_window(5, max_duration=9),
    "lifetimes": lambda s: s.shift_lifetime(-3).extend_lifetime(4).clip_duration(6),
    "chop": lambda s: s.alter_duration(7).chop(3, 1),
    "point_at_end": lambda s: s.alter_duration(3).point_at_end(),
    "quantize": lambda s: s.quantize_lifetime(5),
    "distinct": lambda s: s.alter_duration(6).distinct(),
    "stitch": lambda s: s.alter_duration(2).stitch(),
}
AGGREGATES = {
    "count": lambda: agg.count(),
    "count_not_null": lambda: agg.count_not_null("v"),
    "sum_i": lambda: agg.sum("i"),
    "sum_v": lambda: agg.sum("v"),
    "avg_i": lambda: agg.average("i"),
    "avg_v": lambda: agg.average("v"),
    "min_i": lambda: agg.min("i"),
    "max_i": lambda: agg.max("i"),
    "min_v": lambda: agg.min("v"),
    "max_v": lambda: agg.max("v"),
    "count_distinct_i": lambda: agg.count_distinct("i"),
    "median_i": lambda: agg.median("i"),
    "variance_i": lambda: agg.variance("i"),
    "first_i": lambda: agg.first("i"),
    "last_i": lambda: agg.last("i"),
    "arg_max_i": lambda: agg.arg_max("i", "v"),
    "mode_i": lambda: agg.mode("i"),
    "top_k_i": lambda: agg.top_k("i", 2),
    "list_agg_i": lambda: agg.list_agg("i"),
    "sum_distinct_i": lambda: agg.sum_distinct("i"),
    "percentile_v": lambda: agg.percentile_disc("v", 0.5),
}


def _tolerant(names) -> bool:
    return any(n.split("_")[0] in ORDER_SENSITIVE | {"avg"} or n.startswith("variance") for n in names)


@settings(FUZZ)
@given(
    table=tables(),
    batch=st.sampled_from([1, 3, 8, 1000]),
    shape=st.sampled_from(["point", "interval", "start", "drop", "adjust"]),
    prefix=st.sampled_from(sorted(PREFIXES)),
    window=st.sampled_from(sorted(WINDOWS)),
    grouping=st.sampled_from(["k", "global", "stateless", "group_apply", "self_union"]),
    fns=st.lists(st.sampled_from(sorted(AGGREGATES)), min_size=1, max_size=3, unique=True),
    partitions=st.integers(1, 4),
    swaps=st.lists(st.integers(0, 29), max_size=6),
)
def test_windows_and_aggregates(spark, table, batch, shape, prefix, window, grouping, fns, partitions, swaps):
    if shape == "interval":
        table = table.append_column("e", pa.compute.add(table.column("t"), pa.scalar(4, pa.int64())))
        src = tidal.from_arrow(table, time="t", end="e", batch_size=batch).select("k", "i", "v")
    elif shape in ("drop", "adjust"):  # out of order: late events dropped or moved up, as they arrived
        order = list(range(table.num_rows))
        for j in swaps:
            if j + 3 < len(order):
                order[j], order[j + 3] = order[j + 3], order[j]
        ordered = table.take(pa.array(order, pa.int64()))
        src = tidal.from_arrow(ordered, time="t", disorder=shape, reorder_latency=2, batch_size=batch)
    else:
        src = tidal.from_arrow(table, time="t", kind=shape, batch_size=batch)
    q = WINDOWS[window](PREFIXES[prefix](src))
    named = {n: AGGREGATES[n]() for n in fns}
    if grouping == "k":
        q = q.group_aggregate("k", **named)
    elif grouping == "global":
        q = q.aggregate(**named)
    elif grouping == "group_apply":
        q = q.group_apply("k", lambda g: g.aggregate(**named))
    elif grouping == "self_union":
        shared = q.multicast()
        q = shared.where(lambda e: e.k == 1).union(shared.shift_lifetime(2)).group_aggregate("k", **named)
    _compare(spark, q, partitions, tolerant=grouping != "stateless" and _tolerant(fns))


# -- two inputs: joins co-partitioned by key, broadcast, cross; then an aggregate or not -------------
JOINS = {
    "inner": lambda a, b: a.join(b, "k", "k"),
    "inner_two_fields": lambda a, b: a.join(b, ["k", "i"], ["k", "i"]),
    "inner_result": lambda a, b: a.join(b, "k", "k", lambda left, right: {"k": left.k, "i": left.i, "w": right.i}),
    "small_left": lambda a, b: a.join(b, "k", "k", left_is_small=True),
    "left_outer": lambda a, b: a.left_outer_join(b, "k", "k"),
    "full_outer": lambda a, b: a.full_outer_join(b, "k", "k"),
    "exists": lambda a, b: a.where_exists(b, "k", "k"),
    "not_exists": lambda a, b: a.where_not_exists(b, "k", "k"),
    "clip": lambda a, b: a.clip(b, "k", "k"),
    "cross": lambda a, b: a.where(lambda e: e.i == 1).cross_join(b.where(lambda e: e.i != 1)),
    "union": lambda a, b: a.union(b),
}
AFTER_JOIN = {
    "none": lambda s: s,
    "count_by_k": lambda s: s.group_aggregate("k", n=agg.count()),
    "global": lambda s: s.aggregate(n=agg.count(), hi=agg.max("i")),
}


@settings(FUZZ)
@given(
    left=tables(max_rows=15),
    right=tables(max_rows=15),
    key_type=st.sampled_from(["int", "str"]),
    durations=st.tuples(st.integers(1, 12), st.integers(1, 12)),
    batch=st.sampled_from([1, 4, 1000]),
    join=st.sampled_from(sorted(JOINS)),
    after=st.sampled_from(sorted(AFTER_JOIN)),
    partitions=st.integers(1, 4),
    key_sorted=st.booleans(),
)
def test_joins(spark, left, right, key_type, durations, batch, join, after, partitions, key_sorted):
    if key_type == "str":
        to_text = lambda t: t.set_column(1, "k", pa.compute.cast(t.column("k"), pa.string()))  # noqa: E731
        left, right = to_text(left), to_text(right)
    sorted_by = None
    if key_sorted:  # sorted by key within each sync time (nulls last): an integer key's join merges
        order = [("t", "ascending"), ("k", "ascending")]
        left, right = (x.sort_by(order) if x.num_rows else x for x in (left, right))
        sorted_by = "k"
    a, b = (
        tidal.from_arrow(x.select(["t", "k", "i"]), time="t", batch_size=batch, sorted_by=sorted_by).alter_duration(d)
        for x, d in zip((left, right), durations, strict=True)
    )
    _compare(spark, AFTER_JOIN[after](JOINS[join](a, b)), partitions, tolerant=False)


# -- SQL through run_query_on_spark: the final answer of the embedded engine ----------------------
SQL_QUERIES = {
    "group": "SELECT k, count(*) AS n, sum(i) AS s, min(v) AS lo, max(v) AS hi, count(v) AS c FROM 't.parquet' "
    "WHERE i > -3 GROUP BY k",
    "group_text": "SELECT s, count(i) AS n, min(i) AS lo, max(i) AS hi, avg(i) AS a FROM 't.parquet' GROUP BY s",
    "float_where": "SELECT k, i, v FROM 't.parquet' WHERE v > 0.5 AND i <= 4",
    "float_sums": "SELECT k, sum(v) AS s, avg(v) AS a FROM 't.parquet' GROUP BY k",
    "distinct": "SELECT DISTINCT k, s FROM 't.parquet'",
    "order_limit": "SELECT k, i, ts FROM 't.parquet' ORDER BY ts, k NULLS FIRST, i NULLS FIRST LIMIT 7",
    "global": "SELECT count(*) AS n, sum(i) AS s, min(ts) AS first, max(v) AS hi FROM 't.parquet' WHERE k <> 2",
    "tumble": "SELECT k, window_start, window_end, count(*) AS n, sum(i) AS s, max(v) AS hi FROM tumble("
    "source => TABLE('t.parquet'), time_field => DESCRIPTOR(ts), window_length => INTERVAL 10 SECONDS) "
    "GROUP BY k, window_start, window_end",
    "hop": "SELECT window_start, window_end, count(*) AS n, min(i) AS lo FROM hop(source => TABLE('t.parquet'), "
    "time_field => DESCRIPTOR(ts), window_length => INTERVAL 12 SECONDS, hop => INTERVAL 4 SECONDS) "
    "GROUP BY window_start, window_end",
    "session": "SELECT k, window_start, window_end, count(*) AS n FROM session(source => TABLE('t.parquet'), "
    "time_field => DESCRIPTOR(ts), gap => INTERVAL 5 SECONDS, key => DESCRIPTOR(k)) GROUP BY k, window_start, "
    "window_end",
    "join": "SELECT a.k, a.i, b.i AS j FROM 't.parquet' a JOIN 'u.parquet' b ON a.k = b.k WHERE a.i < b.i",
    "left_join_count": "SELECT a.s, count(b.i) AS n FROM 't.parquet' a LEFT JOIN 'u.parquet' b ON a.s = b.s "
    "GROUP BY a.s",
}
FLOAT_SUMS = {"float_sums"}  # float sums in another order of rows: within 1e-9 (see the module docstring)


def _sql_rows(table: pa.Table, tolerant: bool) -> list[tuple]:
    def norm(v):
        if isinstance(v, float):
            if v != v:
                return "NaN"
            return float(f"{v:.9g}") if tolerant and math.isfinite(v) else v + 0.0
        return v

    rows = [tuple(norm(v) for v in r.values()) for r in table.to_pylist()]
    return sorted(rows, key=lambda r: tuple((v is None, str(type(v)), v if v is not None else 0) for v in r))


def _timestamp_table(table: pa.Table) -> pa.Table:
    """``t`` as seconds (before and after 1970) in a timestamp ``ts``; ``s`` the key as text."""
    seconds = pa.compute.multiply(table.column("t"), pa.scalar(1_000_000, pa.int64()))
    text = pa.compute.cast(table.column("k"), pa.string())
    return table.drop_columns(["t"]).append_column("ts", seconds.cast(pa.timestamp("us"))).append_column("s", text)


@settings(FUZZ)
@given(left=tables(max_rows=25), right=tables(max_rows=10), name=st.sampled_from(sorted(SQL_QUERIES)),
       partitions=st.integers(1, 4))  # fmt: skip
def test_sql(spark, tmp_path_factory, left, right, name, partitions):
    import pyarrow.parquet as pq

    from tidal.sql import plan

    folder = tmp_path_factory.mktemp("sql")
    pq.write_table(_timestamp_table(left), folder / "t.parquet")
    pq.write_table(_timestamp_table(right), folder / "u.parquet")
    sql = SQL_QUERIES[name]
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(folder)
        try:
            expected = plan(sql).result()
        except tidal.TidalError as refused:
            assert "not supported" in str(refused)
            with pytest.raises(Exception, match="not supported"):
                tidal.spark.run_query_on_spark(sql, spark=spark, partitions=partitions)
            return
        got = tidal.spark.run_query_on_spark(sql, spark=spark, partitions=partitions)
    assert got.schema.equals(expected.schema), (got.schema, expected.schema)
    tolerant = name in FLOAT_SUMS
    if "ORDER BY" in sql:
        assert got.to_pylist() == expected.to_pylist()
    else:
        assert _sql_rows(got, tolerant) == _sql_rows(expected, tolerant)


# -- pinned: what the fuzzer found ---------------------------------------------------------------
def test_a_pushed_down_lambda_where_keeps_pythons_meaning(spark):
    """A lambda ``where`` that Spark SQL runs means what Python makes of it, as embedded: NaN compares
    false (Spark's NaN is the largest double), None != 1 is true and None == None too (Spark's null
    comparisons are null, dropping the row), and an ordering of None raises (Spark dropped the row)."""
    nan = math.nan
    table = pa.table(
        {
            "t": pa.array([-3, -3, 0, 4, 4], pa.int64()),
            "k": pa.array([None, 1, 2, None, 1], pa.int64()),
            "i": pa.array([5, 0, 7, 1, None], pa.int64()),
            "v": pa.array([nan, 2.0, -0.0, 1.0, nan], pa.float64()),
        }
    )
    src = tidal.from_arrow(table, time="t", batch_size=2)
    answered = {
        "nan": (src.where(lambda e: e.v >= 1.0), [(2.0,), (1.0,)]),
        "none_unequal": (src.where(lambda e: e.k != 1), [(None,), (2,), (None,)]),
        "none_equal": (src.where(lambda e: e.k == e.k and e.v != e.v), [(None,), (1,)]),
        "and_stops": (src.where(lambda e: e.i != e.i and e.i > 0), []),
    }
    for name, (q, kept) in answered.items():
        assert "Where in Spark SQL" in tidal.spark.explain(q, partitions=2, spark=spark), name
        field = "v" if name == "nan" else "k"
        assert sorted(map(repr, zip(q.to_arrow().column(field).to_pylist()))) == sorted(map(repr, kept)), name
        for partitions in (1, 3):
            assert_same_snapshots(tidal.spark.to_arrow(q, partitions=partitions, spark=spark), q.to_arrow())
    refused = src.where(lambda e: e.i > 0)  # None > 0 is a TypeError
    with pytest.raises(tidal.LambdaError, match="TypeError"):
        refused.to_arrow()
    with pytest.raises(Exception, match=r"tidal: where lambda \(i > 0\) raised TypeError"):
        tidal.spark.to_arrow(refused, partitions=2, spark=spark)
    wide = tidal.from_arrow(pa.table({"t": [0], "i": pa.array([2**62], pa.int64())}), time="t")
    with pytest.raises(Exception, match="not supported on Spark: .* overflows 64-bit integers"):
        tidal.spark.to_arrow(wide.where(lambda e: e.i * 4 > 0), partitions=1, spark=spark)


# -- Spark DataFrame sources: timestamps before and after 1970, spread over partitions --------------
SOURCE_QUERIES = {
    "tumbling": lambda s: s.tumbling_window(10_000_000).group_aggregate("k", n=agg.count(), s=agg.sum("i")),
    "hopping_global": lambda s: s.hopping_window(9_000_000, 3_000_000).aggregate(n=agg.count(), lo=agg.min("i")),
    "where": lambda s: s.where(lambda e: e.k == 1 and e.i != 3).alter_duration(2_000_000),
    "session": lambda s: s.session_window(4_000_000).group_aggregate("k", n=agg.count()),
}


@settings(FUZZ)
@given(
    table=tables(),
    micros=st.integers(-999_999, 999_999),
    shape=st.sampled_from(["point", "interval", "start"]),
    name=st.sampled_from(sorted(SOURCE_QUERIES)),
    spread=st.integers(1, 4),
    partitions=st.integers(1, 4),
)
def test_spark_dataframe_sources(spark, table, micros, shape, name, spread, partitions):
    """``t`` seconds plus ``micros`` as a timestamp (so times before 1970 have fractions of a second)."""
    ticks = pa.compute.add(pa.compute.multiply(table.column("t"), pa.scalar(1_000_000, pa.int64())), micros)
    frame = table.drop_columns(["t", "v"]).append_column("ts", ticks.cast(pa.timestamp("us", tz="UTC")))
    if shape == "interval":
        ends = pa.compute.add(ticks, pa.scalar(3_500_000, pa.int64())).cast(pa.timestamp("us", tz="UTC"))
        frame = frame.append_column("te", ends)
    df = spark.createDataFrame(frame).repartition(spread)
    end = "te" if shape == "interval" else None
    src = tidal.spark.from_spark(df, time="ts", end=end, kind="start" if shape == "start" else "point")
    if end is not None:
        src = src.select("k", "i")
    _compare(spark, SOURCE_QUERIES[name](src), partitions, tolerant=False)


def test_a_merge_join_of_key_sorted_inputs_runs_on_spark(spark):
    """Inputs sorted by their join key within each sync time (``sorted_by``) join by merging; on Spark each
    partition was sorted by sync time alone, losing the key order, and the join failed ("not sorted by its
    join key") where embedded answers: the co-partitioned inputs are sorted by sync time, then key."""
    import random

    rng = random.Random(4)

    def side(n: int, duration: int):
        rows = [(rng.randint(0, 10), rng.choice([None, 1, 2, 3, 4]), rng.randint(0, 9)) for _ in range(n)]
        rows.sort(key=lambda r: (r[0], r[1] is None, r[1] or 0))
        table = pa.table({name: pa.array([r[j] for r in rows], pa.int64()) for j, name in enumerate("tki")})
        return tidal.from_arrow(table, time="t", sorted_by="k").alter_duration(duration)

    left, right = side(60, 3), side(50, 2)
    for q in (left.join(right, "k", "k"), left.join(right, "k", "k", lambda a, b: {"k": a.k, "d": a.i - b.i})):
        assert "merge join" in q.explain()
        expected = q.to_arrow()
        assert expected.num_rows > 0
        for partitions in (1, 3):
            out = tidal.spark.to_arrow(q, partitions=partitions, spark=spark)
            check_physical(out)
            assert_same_snapshots(out, expected)
