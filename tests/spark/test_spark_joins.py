"""The join family on Spark with 1, 2 and 3 partitions: the embedded engine's and the reference's answers.

Both inputs are co-partitioned by their key fields (Trill's two-input reduce); a cross join
puts each whole input in one partition; ``left_is_small=True`` broadcasts the left to every
partition of the right, which stays where it is (Trill's asymmetric two-input reduce).
"""

from __future__ import annotations

import random

import pytest
from streams import physical_table

import tidal
import tidal.spark
from tidal import INFINITY
from tidal.testing import Reference, assert_same_snapshots
from tidal.testing.reference import check_physical

PARTITIONS = (1, 2, 3)
LEFT_NAMES, RIGHT_NAMES = ("k", "v"), ("j", "w")


def _events(n: int, seed: int, null_keys: bool = True):
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        s = rng.randint(0, 80)
        e = INFINITY if rng.random() < 0.1 else s + rng.randint(1, 20)
        k = None if null_keys and rng.random() < 0.08 else rng.randint(0, 4)
        out.append((s, e, (k, rng.randint(-3, 3)), e == INFINITY or rng.random() < 0.4))
    return out


LEFT, RIGHT = _events(60, seed=1), _events(70, seed=2)


def _stream(events, names, batch_size):
    table = physical_table(events, names)
    return tidal.from_arrow(table, time="sync_time", other="other_time", batch_size=batch_size)


def _ref(events, names) -> Reference:
    return Reference(names, [(s, e, p) for s, e, p, _ in events])


JOINS = {
    "inner": lambda a, b: a.join(b, "k", "j"),
    "inner_two_fields": lambda a, b: a.join(b, ["k", "v"], ["j", "w"]),
    "inner_result": lambda a, b: a.join(b, "k", "j", lambda left, right: {"k": left.k, "d": left.v - right.w}),
    "left_outer": lambda a, b: a.left_outer_join(b, "k", "j"),
    "full_outer": lambda a, b: a.full_outer_join(b, "k", "j"),
    "where_exists": lambda a, b: a.where_exists(b, "k", "j"),
    "where_not_exists": lambda a, b: a.where_not_exists(b, "k", "j"),
    "clip": lambda a, b: a.clip(b, "k", "j"),
    "cross": lambda a, b: a.where(lambda e: e.k == 1).cross_join(b.where(lambda e: e.j == 2)),
}


@pytest.mark.parametrize("name", sorted(JOINS))
def test_joins_on_spark_match_embedded_and_reference(spark, name):
    make = JOINS[name]
    q = make(_stream(LEFT, LEFT_NAMES, 7), _stream(RIGHT, RIGHT_NAMES, 5))
    embedded = q.to_arrow()
    expected = make(_ref(LEFT, LEFT_NAMES), _ref(RIGHT, RIGHT_NAMES))
    assert_same_snapshots(embedded, expected)
    assert embedded.num_rows > 0
    for p in PARTITIONS:
        out = tidal.spark.to_arrow(q, partitions=p, spark=spark)
        check_physical(out)
        assert out.schema.equals(embedded.schema)
        assert_same_snapshots(out, expected)


def test_join_after_keyed_stages_and_before_an_aggregate(spark):
    """Shuffles before and after the join: each stage sees its own keys together."""
    from tidal import agg

    def make(a, b):
        pair = lambda left, right: {"k": left.k, "w": right.w}  # noqa: E731
        joined = a.extend_lifetime(2).join(b.clip_duration(6), "k", "j", pair)
        return joined.group_aggregate("w", n=agg.count())

    q = make(_stream(LEFT, LEFT_NAMES, 4), _stream(RIGHT, RIGHT_NAMES, 9))
    expected = make(_ref(LEFT, LEFT_NAMES), _ref(RIGHT, RIGHT_NAMES))
    for p in (2, 3):
        out = tidal.spark.to_arrow(q, partitions=p, spark=spark)
        check_physical(out)
        assert_same_snapshots(out, expected)


def test_small_left_is_broadcast(spark):
    """``left_is_small=True``: the left goes whole to every partition of the right; the right is not shuffled."""
    small_events = [e for e in _events(25, seed=9) if e[1] != INFINITY]  # a finite lookup side
    make = lambda a, b: a.join(b, "k", "j", left_is_small=True)  # noqa: E731
    q = make(_stream(small_events, LEFT_NAMES, 4), _stream(RIGHT, RIGHT_NAMES, 6))
    expected = make(_ref(small_events, LEFT_NAMES), _ref(RIGHT, RIGHT_NAMES))
    assert_same_snapshots(q.to_arrow(), expected)
    for p in PARTITIONS:
        explained = tidal.spark.explain(q, partitions=p, spark=spark)
        assert "broadcast left of Join" in explained and "co-partition" not in explained
        out = tidal.spark.to_arrow(q, partitions=p, spark=spark)
        check_physical(out)
        assert_same_snapshots(out, expected)
    # the same join without the hint shuffles both sides by key
    plain = _stream(small_events, LEFT_NAMES, 4).join(_stream(RIGHT, RIGHT_NAMES, 6), "k", "j")
    explained = tidal.spark.explain(plain, partitions=2, spark=spark)
    assert "co-partition both inputs of Join" in explained and "broadcast" not in explained


@pytest.mark.parametrize("keys", [("k", "k"), ("v", "k")])
def test_inputs_sharing_field_names(spark, keys):
    """A join of inputs with the same fields (a self-join's shape) carries each field in one column
    shared by both sides; a field of another type on one side keeps its own column."""
    from tidal.spark.batch import SparkPlanner

    make = lambda a, b: a.join(b, *keys)  # noqa: E731
    expected = make(_ref(LEFT, LEFT_NAMES), _ref(RIGHT, LEFT_NAMES))
    q = make(_stream(LEFT, LEFT_NAMES, 4), _stream(RIGHT, LEFT_NAMES, 6))
    for p in PARTITIONS:
        out = tidal.spark.to_arrow(q, partitions=p, spark=spark)
        check_physical(out)
        assert_same_snapshots(out, expected)
    shared = SparkPlanner(spark, 2).rel(q.node).df.columns
    # sync, other, side, k, v (+ a key column when the keys are different fields)
    assert len(shared) == (5 if keys[0] == keys[1] else 6), shared
    as_float = lambda s: s.select(lambda e: {"k": e.k, "v": e.v * 0.5})  # noqa: E731
    q = make(_stream(LEFT, LEFT_NAMES, 4), as_float(_stream(RIGHT, LEFT_NAMES, 6)))
    expected = make(_ref(LEFT, LEFT_NAMES), as_float(_ref(RIGHT, LEFT_NAMES)))
    assert_same_snapshots(tidal.spark.to_arrow(q, partitions=2, spark=spark), expected)
    assert len(SparkPlanner(spark, 2).rel(q.node).df.columns) == len(shared) + 1
