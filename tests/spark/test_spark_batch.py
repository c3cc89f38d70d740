"""The shared operator suite rerun on Spark: same snapshots as embedded and as the reference.

Each plan runs as a temporal map-reduce with 1, 2 and 3 partitions. Stateful placement is
exercised with plans whose nodes declare a partitioning (so Spark shuffles by key, sorts
each partition and runs the node per partition), including a two-input node fed by one
co-partitioned, side-tagged partition.
"""

from __future__ import annotations

import random

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ops.test_lifetime import OPS as LIFETIME_OPS
from ops.test_selection import OPS as SELECTION_OPS
from streams import physical_table, reference_of, stream_cases

import tidal
import tidal.spark
from tidal import INFINITY, agg
from tidal.spark.batch import SAMPLE_ROWS
from tidal.testing import assert_same_snapshots
from tidal.testing.reference import check_physical

OPS = SELECTION_OPS | LIFETIME_OPS  # the shared suite's stateless and lifetime operators
PARTITIONS = (1, 2, 3)


def _events(n: int, seed: int):
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        s = rng.randint(-20, 60)
        e = INFINITY if rng.random() < 0.1 else s + rng.randint(1, 25)
        out.append((s, e, (rng.randint(0, 3), rng.randint(-5, 5)), e == INFINITY or rng.random() < 0.5))
    return out


EVENTS = _events(80, seed=11)


def _source(events, batch_size=7):
    return tidal.from_arrow(physical_table(events), time="sync_time", other="other_time", batch_size=batch_size)


def _partitioned(stream, *keys):
    """The same plan with its last node declaring a partitioning (as a stateful node would)."""
    return tidal.Stream(stream.node.but(partitioning=tuple(tuple(k) for k in keys)))


def _check(spark, query, expected, partitions):
    out = tidal.spark.to_arrow(query, partitions=partitions, spark=spark)
    check_physical(out)
    assert_same_snapshots(out, expected)
    return out


@pytest.mark.parametrize("op", sorted(OPS))
def test_shared_suite_on_spark(spark, op):
    engine_op, ref_op = OPS[op]
    src = _source(EVENTS)
    embedded = engine_op(src).to_arrow()
    for p in PARTITIONS:
        out = _check(spark, engine_op(src), ref_op(reference_of(EVENTS)), p)
        assert_same_snapshots(out, embedded)


@settings(max_examples=4, deadline=None)
@given(case=stream_cases(), op=st.sampled_from(sorted(OPS)), partitions=st.sampled_from(PARTITIONS))
def test_random_streams_on_spark(spark, case, op, partitions):
    stream, ref = case
    engine_op, ref_op = OPS[op]
    _check(spark, engine_op(stream), ref_op(ref), partitions)


def test_fields_known_only_at_run_time_of_an_empty_result(spark):
    """An operator whose fields show only in its output, over an input that yields none: the empty
    result has no payload fields, as embedded; over a Spark source too large to sample whole, it is
    an error asking for a schema."""
    q = _source([]).select_many(lambda e: [{"x": e.v}] * (e.k % 3))
    out = tidal.spark.to_arrow(q, partitions=2, spark=spark)
    assert out.num_rows == 0 and out.schema.names == q.to_arrow().schema.names == ["sync_time", "other_time"]
    df = spark.range(SAMPLE_ROWS + 1).selectExpr("id AS t", "id * 0 AS k")
    none = tidal.spark.from_spark(df, time="t").select_many(lambda e: [{"x": e.k}] * (e.k % 3))
    with pytest.raises(tidal.PlanError, match="give the operator a schema"):
        tidal.spark.to_spark(none, partitions=2, spark=spark)


@pytest.mark.parametrize("keys", [("k",), ("k", "v"), ()])
def test_keyed_reduce_stage(spark, keys):
    """A node that must see its keys together: shuffle by key, sort, run per partition, then more map."""
    src = _source(EVENTS)
    q = _partitioned(src.where(lambda e: e.v != 0).extend_lifetime(3), keys).clip_duration(4).chop(5, 1)
    ref = reference_of(EVENTS).where(lambda e: e.v != 0).extend_lifetime(3).clip_duration(4).chop(5, 1)
    for p in PARTITIONS:
        _check(spark, q, ref, p)


def test_two_keyed_stages(spark):
    src = _source(EVENTS)
    first = _partitioned(src.extend_lifetime(3), ("k",)).select(lambda e: {"k": e.k, "w": e.v * 2})
    q = _partitioned(first.point_at_end(), ("w",)).tumbling_window(10)
    ref = reference_of(EVENTS).extend_lifetime(3).select(lambda e: {"k": e.k, "w": e.v * 2}).point_at_end()
    _check(spark, q, ref.tumbling_window(10), 3)


@pytest.mark.parametrize("keys", [(("k",), ("k",)), ((), ())])
def test_two_input_reduce_co_partitions_both_sides(spark, keys):
    left_events, right_events = EVENTS[:50], _events(40, seed=5)
    left, right = _source(left_events), _source(right_events, batch_size=3)
    q = _partitioned(left.shift_lifetime(1).union(right.clip_duration(5)), *keys).where(lambda e: e.v > -3)
    ref = reference_of(left_events).shift_lifetime(1).union(reference_of(right_events).clip_duration(5))
    for p in PARTITIONS:
        _check(spark, q, ref.where(lambda e: e.v > -3), p)


def test_simple_predicates_run_in_spark(spark):
    """Comparisons joined by ``and`` become Spark filters; ``or`` (three-valued in SQL) stays in tidal."""
    src = _source(EVENTS)
    pushed = src.where(lambda e: e.k >= 1 and e.v * 2 < 5)
    kept = src.where(lambda e: e.k == 1 or e.v > 2)
    assert "Where in Spark SQL" in tidal.spark.explain(pushed, partitions=2, spark=spark)
    assert "Where in Spark SQL" not in tidal.spark.explain(kept, partitions=2, spark=spark)
    for q in (pushed, kept):
        assert_same_snapshots(tidal.spark.to_arrow(q, partitions=2, spark=spark), q.to_arrow())


def test_odd_names_and_quoted_strings_reach_spark_sql_intact(spark):
    """Names and literals are quoted by sqlglot's Spark generator: a backtick and a space in a
    name; a quote, a backslash and a line break in strings; doubles spelled as the same double."""
    from pyspark.sql.types import DoubleType, LongType, StringType, StructField, StructType

    from tidal.spark.pushdown import spark_sql
    from tidal.spark.sqltext import ident, literal, string

    assert ident("a`b c") == "`a``b c`"
    assert string('it\'s \\ "x"') == "'it\\'s \\\\ \"x\"'"
    assert [literal(v) for v in (True, 7, 2**40, 0.1, "o'k")] == [
        "TRUE",
        "7",
        "CAST(1099511627776 AS BIGINT)",
        "CAST('0.1' AS DOUBLE)",
        "'o\\'k'",
    ]
    rng = random.Random(5)
    words = ["it's", "a\\b", 'q"\n', "plain"]
    rows = [(rng.random(), rng.choice(words)) for _ in range(60)]
    # the Spark SQL text run as is: a name with a backtick is one a stream on Spark cannot carry (Spark's
    # mapInArrow rejects it in its output schema), so its quoting is checked on a DataFrame directly
    name = "a`b c"
    table = pa.table({"sync_time": range(len(rows)), name: [r[0] for r in rows], "s": [r[1] for r in rows]})
    src = tidal.from_arrow(table, time="sync_time")
    df = spark.createDataFrame(rows, StructType([StructField(name, DoubleType()), StructField("s", StringType())]))
    for where, expected in (
        (lambda e: e["a`b c"] * 2 > 0.1 + 0.2 and e.s == "it's", lambda r: r[0] * 2 > 0.1 + 0.2 and r[1] == "it's"),
        (
            lambda e: e.s != "a\\b" and e.s != 'q"\n' and e["a`b c"] < 0.9,
            lambda r: r[1] not in ("a\\b", 'q"\n') and r[0] < 0.9,
        ),
    ):
        condition = spark_sql(src.where(where).node.make().predicate.node, table.schema)
        got = df.where(condition).selectExpr(ident(name), "s", literal("it's") + " AS q").collect()
        assert sorted(tuple(r) for r in got) == sorted((*r, "it's") for r in rows if expected(r))
    # and end to end, with a where and an alter_duration pushed into Spark
    # (a DataFrame of point events: intervals, whose lifetimes Spark may change row by row)
    times = sorted(rng.randint(0, 50) for _ in rows)
    fields = [StructField("t", LongType()), StructField("a b", DoubleType()), StructField("s", StringType())]
    src = tidal.spark.from_spark(
        spark.createDataFrame([(t, *r) for t, r in zip(times, rows, strict=True)], StructType(fields)), time="t"
    )
    for q in (
        src.where(lambda e: e["a b"] * 2 > 0.1 + 0.2 and e.s == "it's"),
        src.where(lambda e: e.s == 'q"\n' and e["a b"] < 0.9).alter_duration(3),
    ):
        explained = tidal.spark.explain(q, partitions=2, spark=spark)
        assert "Where in Spark SQL" in explained
        assert ("AlterLifetime in Spark SQL" in explained) == (q.node.label == "AlterLifetime")
        expected = q.to_arrow()
        assert expected.num_rows > 0
        assert_same_snapshots(tidal.spark.to_arrow(q, partitions=2, spark=spark), expected)


def test_union_and_multicast(spark):
    src = _source(EVENTS)
    shared = src.multicast()
    q = shared.where(lambda e: e.k == 0).union(shared.where(lambda e: e.k != 0).shift_lifetime(4))
    ref = reference_of(EVENTS)
    expected = ref.where(lambda e: e.k == 0).union(ref.where(lambda e: e.k != 0).shift_lifetime(4))
    _check(spark, q, expected, 2)


def test_spark_dataframe_source_matches_embedded(spark):
    rng = random.Random(3)
    rows = [(t, rng.randint(0, 4), rng.randint(-10, 10)) for t in sorted(rng.randint(0, 500) for _ in range(300))]
    table = pa.table({"t": [r[0] for r in rows], "k": [r[1] for r in rows], "v": [r[2] for r in rows]})
    df = spark.createDataFrame(table).repartition(3)
    for kind, end in (("point", None), ("start", None), ("interval", "e")):
        frame = df.withColumn("e", df.t + 7) if end else df
        stream = tidal.spark.from_spark(frame, time="t", end=end, kind="start" if kind == "start" else "point")
        q = stream.where(lambda e: e.v > 0).hopping_window(20, 10)
        embedded = q.to_arrow()  # the same stream run embedded (the DataFrame collected and sorted)
        assert embedded.num_rows > 0
        for p in (1, 3):
            assert_same_snapshots(tidal.spark.to_arrow(q, partitions=p), embedded)
        assert_same_snapshots(tidal.spark.to_arrow(_partitioned(q, ("k",)).chop(7), partitions=2), q.chop(7))
    # fields known only at run time: learned from a sample of the DataFrame run embedded
    many = tidal.spark.from_spark(df, time="t").select_many(lambda e: [{"x": e.v}] * (e.k % 2))
    assert_same_snapshots(tidal.spark.to_arrow(many, partitions=2), many.to_arrow())


def test_timestamps_are_microseconds(spark):
    from datetime import datetime, timedelta

    base = datetime(2024, 1, 1)
    df = spark.createDataFrame([(base + timedelta(seconds=i), i % 2) for i in range(10)], "ts timestamp, k long")
    out = tidal.spark.to_arrow(tidal.spark.from_spark(df, time="ts").select("k"), partitions=2)
    start = int(base.replace(tzinfo=__import__("datetime").timezone.utc).timestamp() * 1_000_000)
    assert out.column("sync_time").to_pylist() == [start + i * 1_000_000 for i in range(10)]
    assert out.column("other_time").to_pylist() == [start + i * 1_000_000 + 1 for i in range(10)]


def test_bad_input_fails_naming_the_row(spark):
    df = spark.createDataFrame([(1, 5, 0), (2, 2, 1), (3, 9, 2)], "t long, e long, k long")
    with pytest.raises(Exception, match=r"end field 'e' is not after time field 't' in row.*\"t\":2"):
        tidal.spark.to_arrow(tidal.spark.from_spark(df, time="t", end="e"))
    nulls = spark.createDataFrame([(1, 0), (None, 1)], "t long, k long")
    with pytest.raises(Exception, match=r"time field 't' is null in row.*\"k\":1"):
        tidal.spark.to_arrow(tidal.spark.from_spark(nulls, time="t"))
    with pytest.raises(tidal.InputError, match="time must name a field"):
        tidal.spark.from_spark(df, time="nope")


def test_changelog_matches_embedded(spark):
    src = _source(EVENTS)
    q = src.clip_duration(6).select("k")
    order = [("time", "ascending"), ("undo", "ascending"), ("k", "ascending")]
    on_spark = tidal.spark.to_changelog(q, partitions=3).sort_by(order)
    assert on_spark.num_rows > 0
    assert on_spark.equals(q.to_changelog().sort_by(order))


AGG_QUERIES = {
    "group_count_sum": lambda s: s.tumbling_window(10).group_aggregate("k", n=agg.count(), total=agg.sum("v")),
    "global_aggregate": lambda s: s.hopping_window(10, 5).aggregate(agg.count(), agg.max("v")),
    "group_apply": lambda s: s.group_apply("k", lambda g: g.tumbling_window(8).aggregate(n=agg.count())),
    "aggregate_then_map": lambda s: s.group_aggregate(["k"], total=agg.sum("v")).where(lambda e: e.total != 0),
    "two_levels": lambda s: s.group_aggregate("v", n=agg.count()).group_aggregate("n", m=agg.count()),
    "global_general": lambda s: s.aggregate(
        n=agg.count(), nv=agg.count_not_null("v"), lo=agg.min("v"), hi=agg.max("v")
    ),
    "global_then_keyed": lambda s: (
        s.where(lambda e: e.k != 2).aggregate(total=agg.sum("v")).group_aggregate("total", n=agg.count())
    ),
}


@pytest.mark.parametrize("name", sorted(AGG_QUERIES))
def test_aggregates_on_spark_match_embedded(spark, name):
    """Grouped and global aggregates: keys spread over partitions, globals in one."""
    q = AGG_QUERIES[name](_source(EVENTS))
    embedded = q.to_arrow()
    assert embedded.num_rows > 0
    for p in PARTITIONS:
        out = tidal.spark.to_arrow(q, partitions=p, spark=spark)
        check_physical(out)
        assert_same_snapshots(out, embedded)


def test_global_aggregate_is_partials_then_merge(spark):
    """A global aggregate that merges exactly runs in every partition, then merges in one; others run in one."""
    q = _source(EVENTS).aggregate(n=agg.count(), total=agg.sum("v"), hi=agg.max("v"))
    explained = tidal.spark.explain(q, partitions=3, spark=spark)
    assert "Aggregate (partial Aggregate)" in explained and "gather into one partition" in explained
    whole = _source(EVENTS).aggregate(a=agg.average("v"))
    assert "partial" not in tidal.spark.explain(whole, partitions=3, spark=spark)
    for query, p in ((q, 3), (whole, 2)):
        out = tidal.spark.to_arrow(query, partitions=p, spark=spark)
        check_physical(out)
        assert_same_snapshots(out, query.to_arrow())


COMBINED_QUERIES = {
    "tumbling": lambda s: s.tumbling_window(40).group_aggregate(
        "k", n=agg.count(), nn=agg.count_not_null("v"), total=agg.sum("v"), lo=agg.min("v"), hi=agg.max("v")
    ),
    "hopping_where": lambda s: (
        s.where(lambda e: e.k != 1).hopping_window(60, 20).group_aggregate("k", n=agg.count(), total=agg.sum("v"))
    ),
    "window_gaps": lambda s: s.hopping_window(15, 40, offset=3).group_aggregate(["k"], hi=agg.max("v")),
    "renamed_key": lambda s: s.select(g="k", v="v").tumbling_window(40).group_aggregate("g", total=agg.sum("v")),
}


@pytest.mark.parametrize("name", sorted(COMBINED_QUERIES))
def test_map_side_combine_matches_embedded(spark, name):
    """Windowed integer aggregates are combined per partition before the shuffle: same answers, nulls included."""
    from tidal.spark.partial import combinable

    rng = random.Random(8)
    times = sorted(rng.randint(0, 600) for _ in range(400))
    values = [None if rng.random() < 0.2 else rng.randint(-9, 9) for _ in times]
    table = pa.table({"t": times, "k": [rng.randint(0, 4) for _ in times], "v": pa.array(values, pa.int32())})
    df = spark.createDataFrame(table).repartition(3)
    q = COMBINED_QUERIES[name](tidal.spark.from_spark(df, time="t"))
    node = q.node
    assert combinable((node.inputs[0],), node) is not None
    # windows that never overlap are whole after Spark's group-by: no second shuffle
    step = {"renamed_key": "map-side combine in each partition", "hopping_where": "map-side combine in Spark SQL"}
    explained = tidal.spark.explain(q, partitions=2, spark=spark)
    assert step.get(name, "aggregate in Spark SQL") in explained
    assert ("shuffle" in explained) == (name in step), explained
    embedded = COMBINED_QUERIES[name](tidal.from_arrow(table, time="t")).to_arrow()
    assert embedded.num_rows > 0
    for p in (1, 3):
        out = tidal.spark.to_arrow(q, partitions=p, spark=spark)
        assert out.schema.equals(embedded.schema)
        assert_same_snapshots(out, embedded)


def test_to_arrow_rows_come_in_the_canonical_order_on_any_partitioning(spark):
    # many events share a sync time: their order must not depend on the partitioning
    rng = random.Random(5)
    n = 400
    table = pa.table({"t": sorted(rng.randint(0, 20) for _ in range(n)), "k": [rng.randint(0, 9) for _ in range(n)],
                      "v": [rng.randint(0, 3) for _ in range(n)]})  # fmt: skip
    q = tidal.from_arrow(table, time="t").tumbling_window(5).group_aggregate("k", n=tidal.agg.count())
    from tidal.spark.batch import canonical_order

    runs = [tidal.spark.to_arrow(q, partitions=p, spark=spark) for p in (1, 3)]
    assert runs[0].equals(runs[1])  # the same rows in the same order
    embedded = q.to_arrow()
    assert runs[0].equals(embedded.take(pa.compute.sort_indices(embedded, canonical_order(embedded))))
    keys = list(zip(*(runs[0].column(name).to_pylist() for name, _ in canonical_order(runs[0])), strict=True))
    assert keys == sorted(keys) and len({r[0] for r in keys}) < len(keys)  # ties in sync time were ordered
