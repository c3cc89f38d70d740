"""Detect (row pattern matching) on Spark: shuffled by the partition key, the matches are the embedded run's."""

from __future__ import annotations

import tidal
import tidal.spark


def _query(stream):
    return stream.detect(
        "A B+",
        {"A": lambda e: e.v < 3, "B": lambda e, A: e.v > A.v},
        {"s": "first(A.t)", "n": "count(B)", "top": "max(B.v)"},
        within=20,
        partition_by="k",
    )


def test_detect_on_spark_matches_embedded(spark):
    rows = [{"t": i, "k": i % 3, "v": (i * 7) % 10} for i in range(300)]
    want = _query(tidal.from_records(rows, time="t")).to_arrow()
    df = spark.createDataFrame(rows)
    for partitions in (1, 2):
        got = tidal.spark.to_arrow(_query(tidal.spark.from_spark(df, time="t")), partitions=partitions)
        names = ["sync_time", "other_time", "k", "s", "n", "top"]
        assert sorted(map(tuple, (r.values() for r in got.select(names).to_pylist()))) == sorted(
            map(tuple, (r.values() for r in want.select(names).to_pylist()))
        )
    assert want.num_rows > 10
