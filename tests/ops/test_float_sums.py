"""Running float sums of snapshot aggregates against the reference evaluator when a large value enters
and leaves the snapshot: events leave by subtraction (Trill's deaccumulate), so without compensation
1e17 + 1.0 + 1.0 - 1e17 is 0.0 and the small values vanish from every later snapshot (even turning
negative). Each engine variant that subtracts is checked: the FIFO and heap queues, the fused
hopping windows, and grouped ones."""

from __future__ import annotations

import pyarrow as pa
import pytest

import tidal
from tidal import agg
from tidal.testing import Reference, assert_same_snapshots


def _both(times, values, keys, shape):
    table = pa.table({"t": pa.array(times, pa.int64()), "k": pa.array(keys, pa.int64()), "v": pa.array(values)})
    stream = tidal.from_arrow(table, time="t")
    ref = Reference.points(("t", "k", "v"), [(t, (t, k, v)) for t, k, v in zip(times, keys, values, strict=True)])
    return shape(stream), shape(ref)


SHAPES = {
    "fifo": lambda s: s.alter_duration(10).aggregate(total=agg.sum("v"), mean=agg.average("v")),
    "heap": lambda s: s.alter_lifetime(lambda t: t, lambda t: 3 + t % 7).aggregate(total=agg.sum("v")),
    "hopping (fused)": lambda s: s.hopping_window(10, 5).aggregate(total=agg.sum("v")),
    "grouped": lambda s: s.alter_duration(6).group_aggregate("k", total=agg.sum("v")),
}


# (the small values beside a large one stay under half its spacing, so any order of summing rounds alike)
CASES = {
    "one large": ([1, 6, 7, 12], [1e17, 1.0, 1.0, 1.0], [0, 0, 0, 0]),
    "two large, two keys": ([0, 2, 3, 4, 11, 13], [1e17, 2.0, 1e17, 1.0, 0.5, 3.0], [0, 1, 0, 1, 0, 1]),
    "larger": ([0, 1, 5, 9, 16], [1e25, 1e17, 2.0, 1.5, -1.0], [0, 0, 0, 0, 0]),
}


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("shape", SHAPES)
def test_a_large_value_leaving_keeps_the_small_ones(shape, case):
    actual, expected = _both(*CASES[case], SHAPES[shape])
    assert_same_snapshots(actual.to_arrow(), expected, digits=6)  # was 0.0 and -1.0 where 2.0 and 1.0
