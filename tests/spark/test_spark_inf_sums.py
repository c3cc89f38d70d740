"""Float SUM/AVG with infinities entering and leaving, on Spark: the embedded answer (Spark runs the engine's
aggregate per key partition; where embedded fuses a hopping window with its aggregate and Spark does not,
within 1e-9), and the snapshot oracle's (tests/ops/test_inf_sums.py)."""

from __future__ import annotations

import math
import random

import pyarrow as pa
import pytest
from spark.test_spark_variance import check_on_spark, reference_of

import tidal
from tidal import agg

QUERIES = {
    "hopping": lambda s: s.hopping_window(10, 5).group_aggregate("k", s=agg.sum("v"), a=agg.average("v")),
    "durations": lambda s: s.alter_duration(6).group_aggregate("k", s=agg.sum("v"), a=agg.average("v")),
    "global durations": lambda s: s.alter_duration(4).aggregate(s=agg.sum("v"), n=agg.count()),
}


def _stream():
    rng = random.Random(18)
    n = 120
    times = sorted(rng.randint(0, 60) for _ in range(n))
    pool = [math.inf, -math.inf, math.nan, None, 1e16, 0.25, -1.5, 3.0]
    table = pa.table(
        {"t": times, "k": [rng.randint(0, 3) for _ in range(n)], "v": pa.array([rng.choice(pool) for _ in range(n)])}
    )
    return tidal.from_arrow(table, time="t", batch_size=16), reference_of(table)


@pytest.mark.parametrize("name", sorted(QUERIES))
def test_infinite_sums_on_spark_are_the_embedded_answer(spark, name):
    check_on_spark(spark, QUERIES, name, *_stream(), digits=12)


def _three_magnitudes():
    """Values of three and more magnitudes alive at once (1e300, 1e200, 1e16, 1.0, 0.375), leaving in every order:
    the engine rebuilds a sum that could keep a residue of values that left (docs/operators/aggregates.md)."""
    rng = random.Random(1818)
    n = 120
    times = sorted(rng.randint(0, 60) for _ in range(n))
    pool = [1e300, 1e200, 2e200, 1e16, 1.0, 0.375, None]
    table = pa.table(
        {"t": times, "k": [rng.randint(0, 1) for _ in range(n)], "v": pa.array([rng.choice(pool) for _ in range(n)])}
    )
    return tidal.from_arrow(table, time="t", batch_size=16), reference_of(table)


@pytest.mark.parametrize("name", sorted(QUERIES))
def test_sums_of_three_magnitudes_on_spark_are_the_embedded_answer(spark, name):
    check_on_spark(spark, QUERIES, name, *_three_magnitudes(), digits=12)
