"""Structured Streaming with two inputs, and keys that stop receiving events.

Two streaming file sources arrive in waves (one file per source per micro-batch). A join of the
two by key, and a union of the two counted per key and window, must give what the embedded
engine gives on all the data, up to the frontier that Spark's watermark reaches. In the waves
after the first only key 0 receives events: keys 1 to 3 finish their windows and join pairs
because the watermark passes them (event-time timers), with no event of their own after it.
"""

from __future__ import annotations

import os
import random

import pyarrow as pa
import pyarrow.parquet as pq

import tidal
import tidal.spark
from tidal import agg
from tidal.testing import canonical

FAR = 100_000  # the last wave (key 0 only) is here: the watermark reaches it, so all before it is final


def _wave(i: int, rng: random.Random) -> pa.Table:
    if i == 3:
        rows = [(FAR + j, FAR + j + 5, 0, 1) for j in range(3)]
    else:
        keys = range(4) if i == 0 else (0,)  # after the first wave only key 0 has events
        rows = []
        for _ in range(40):
            t = rng.randint(3000 * i, 3000 * i + 2999)
            rows.append((t, t + rng.randint(1, 400), rng.choice(keys), rng.randint(-5, 5)))
        rng.shuffle(rows)  # a file need not be in time order
    return pa.table({name: [r[j] for r in rows] for j, name in enumerate(("t", "e", "k", "v"))})


def _inputs(tmp_path):
    rng = random.Random(17)
    waves = {name: [_wave(i, rng) for i in range(4)] for name in ("a", "b")}
    for name, tables in waves.items():
        (tmp_path / name).mkdir()
        for i, table in enumerate(tables):
            path = tmp_path / name / f"wave{i}.parquet"
            pq.write_table(table, path)
            os.utime(path, (1_700_000_000 + i, 1_700_000_000 + i))  # Spark reads a directory's files by age
    return {name: pa.concat_tables(tables).sort_by("t") for name, tables in waves.items()}


def _run(spark, tmp_path, build) -> pa.Table:
    def read(name):
        df = spark.readStream.schema("t long, e long, k long, v long").option("maxFilesPerTrigger", 1)
        return tidal.spark.from_spark(df.parquet(str(tmp_path / name)), time="t", end="e")

    query = tidal.spark.start_streaming(
        build(read("a"), read("b")),
        output=str(tmp_path / "out"),
        checkpoint=str(tmp_path / "ckpt"),
        trigger={"availableNow": True},
    )
    query.awaitTermination()
    return tidal.spark.read_output(str(tmp_path / "out"))


def _below(table_or_ref, horizon=FAR):
    return [(s, min(e, horizon), p) for s, e, p in canonical(table_or_ref) if s < horizon]


def _join(a, b):
    return a.join(b, "k", "k", result=lambda x, y: {"k": x.k, "v": x.v, "w": y.v})


def _counts(a, b):
    return a.union(b).tumbling_window(1000).group_aggregate("k", agg.count(), total=agg.sum("v"))


def test_a_join_of_two_streams_equals_the_embedded_join(spark, tmp_path):
    data = _inputs(tmp_path)
    out = _run(spark, tmp_path, _join)
    a, b = (tidal.from_arrow(data[n], time="t", end="e") for n in ("a", "b"))
    expected = _below(_join(a, b).to_arrow())
    assert _below(out) == expected
    assert {p[0] for _, _, p in expected} == {0, 1, 2, 3}  # keys 1-3 finished without events of their own


def test_keys_without_new_events_finish_their_windows_when_the_watermark_passes(spark, tmp_path):
    data = _inputs(tmp_path)
    out = _run(spark, tmp_path, _counts)
    a, b = (tidal.from_arrow(data[n], time="t", end="e") for n in ("a", "b"))
    expected = _below(_counts(a, b).to_arrow())
    got = _below(out)
    assert got == expected
    quiet = [(s, p) for s, _, p in got if p[0] != 0]
    assert len(quiet) >= 6 and max(s for s, _ in quiet) < 3000  # keys 1-3: only the first wave's windows
