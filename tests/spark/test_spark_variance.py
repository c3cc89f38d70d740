"""variance/stddev over values far from their mean on Spark: the same answer as embedded (Spark runs the
engine's aggregate per key partition; where embedded fuses a hopping window with its aggregate and Spark
does not, within 1e-9), and the exact one (tests/ops/test_variance_stable.py)."""

from __future__ import annotations

import random

import pyarrow as pa
import pytest
from ops.test_variance_stable import assert_close_snapshots

import tidal
import tidal.spark
from tidal import agg
from tidal.testing import Reference, assert_same_snapshots
from tidal.testing.reference import check_physical

QUERIES = {
    "hopping": lambda s: s.hopping_window(10, 5).group_aggregate("k", var=agg.variance("v"), sd=agg.stddev("v")),
    "durations": lambda s: s.alter_duration(6).group_aggregate("k", var=agg.variance("v"), n=agg.count()),
    "global tumbling": lambda s: s.tumbling_window(8).aggregate(var=agg.variance("v"), sd=agg.stddev("v")),
}


def _stream():
    rng = random.Random(18)
    n = 120
    times = sorted(rng.randint(0, 60) for _ in range(n))
    values = [1e9 + rng.randint(-3, 3) if rng.random() > 0.05 else 1e15 + 3 for _ in range(n)]
    table = pa.table({"t": times, "k": [rng.randint(0, 3) for _ in range(n)], "v": values})
    return tidal.from_arrow(table, time="t", batch_size=16), reference_of(table)


def reference_of(table: pa.Table) -> Reference:
    return Reference.points(("t", "k", "v"), [(r["t"], tuple(r.values())) for r in table.to_pylist()])


def check_on_spark(spark, queries, name, stream, reference, **same):
    """Query ``name`` close to the oracle embedded, and on Spark (1 and 3 partitions) the embedded answer: the
    same bits (``same``: assert_same_snapshots' options), within 1e-9 for a hopping window (embedded fuses
    it with its aggregate; Spark cuts at the aggregate)."""
    q = queries[name](stream)
    embedded = q.to_arrow()
    assert embedded.num_rows > 0
    assert_close_snapshots(embedded, queries[name](reference))
    for partitions in (1, 3):
        out = tidal.spark.to_arrow(q, partitions=partitions, spark=spark)
        check_physical(out)
        if name == "hopping":
            assert_close_snapshots(out, embedded)
        else:
            assert_same_snapshots(out, embedded, **same)


@pytest.mark.parametrize("name", sorted(QUERIES))
def test_variance_on_spark_is_the_embedded_answer(spark, name):
    check_on_spark(spark, QUERIES, name, *_stream())
