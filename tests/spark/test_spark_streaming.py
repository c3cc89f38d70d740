"""Structured Streaming: files arriving in waves, operator state in Spark's state store, restarts.

The plan keeps per-key operator state (a reduce keyed by ``k`` whose open edges and reorder
buffer carry across micro-batches). Three waves of files; the query is stopped after each
wave and restarted from its checkpoint. The output must equal an uninterrupted run and the
embedded engine's result on all the data, up to the frontier the final wave's far-future
events establish.
"""

from __future__ import annotations

import copy
import random

import pyarrow as pa
import pyarrow.parquet as pq

import tidal
import tidal.spark
from tidal.testing import canonical

HORIZON = 1_000
FAR = 10_000


def _keyed(stream, keys):
    node = copy.copy(stream._node)
    node.partitioning = (tuple(keys),)
    return tidal.Stream(node)


def _query(source):
    return _keyed(source.where(lambda e: e.v != 0).chop(7), ("k",)).shift_lifetime(2)


def _wave(i: int, rng: random.Random) -> pa.Table:
    if i == 2:  # far-future events for every key: everything before them is final
        rows = [(FAR, FAR + 3, k, 1) for k in range(4)]
    else:
        rows = []
        for _ in range(60):
            t = rng.randint(300 * i, 300 * i + 299)
            rows.append((t, t + rng.randint(1, 30), rng.randint(0, 3), rng.randint(-3, 3)))
        rng.shuffle(rows)  # files need not be in time order: tidal sorts inside the stateful step
    return pa.table({name: [r[j] for r in rows] for j, name in enumerate(("t", "e", "k", "v"))})


def _below(table_or_ref, horizon):
    return [(s, min(e, horizon), p) for s, e, p in canonical(table_or_ref) if s < horizon]


def _run(spark, input_dir, out_dir, ckpt_dir):
    stream_df = spark.readStream.schema("t long, e long, k long, v long").option("maxFilesPerTrigger", 1)
    source = tidal.spark.from_spark(stream_df.parquet(str(input_dir)), time="t", end="e")
    query = tidal.spark.start_streaming(
        _query(source), output=str(out_dir), checkpoint=str(ckpt_dir), trigger={"availableNow": True}
    )
    query.awaitTermination()


def test_waves_with_restarts_match_uninterrupted_and_embedded(spark, tmp_path):
    rng = random.Random(21)
    waves = [_wave(i, rng) for i in range(3)]
    restarted, uninterrupted = tmp_path / "in_a", tmp_path / "in_b"
    restarted.mkdir()
    uninterrupted.mkdir()
    for i, wave in enumerate(waves):
        pq.write_table(wave, restarted / f"wave{i}.parquet")
        pq.write_table(wave, uninterrupted / f"wave{i}.parquet")
        _run(spark, restarted, tmp_path / "out_a", tmp_path / "ckpt_a")  # stop, then restart per wave
        partial = tidal.spark.read_output(str(tmp_path / "out_a"))
        assert partial.num_rows > 0
    _run(spark, uninterrupted, tmp_path / "out_b", tmp_path / "ckpt_b")

    a = tidal.spark.read_output(str(tmp_path / "out_a"))
    b = tidal.spark.read_output(str(tmp_path / "out_b"))
    key = [(c, "ascending") for c in a.column_names]
    assert a.sort_by(key).equals(b.sort_by(key))  # nothing missing, nothing twice

    everything = pa.concat_tables(waves).sort_by("t")
    embedded = _query(tidal.from_arrow(everything, time="t", end="e")).to_arrow()
    assert _below(a, HORIZON) == _below(embedded, HORIZON)
    assert len(_below(a, HORIZON)) > 50


def test_replayed_batch_is_written_once(spark, tmp_path):
    """Running again on the same checkpoint with no new files writes nothing new."""
    rng = random.Random(4)
    (tmp_path / "in").mkdir()
    pq.write_table(_wave(0, rng), tmp_path / "in" / "wave0.parquet")
    _run(spark, tmp_path / "in", tmp_path / "out", tmp_path / "ckpt")
    first = tidal.spark.read_output(str(tmp_path / "out"))
    _run(spark, tmp_path / "in", tmp_path / "out", tmp_path / "ckpt")
    again = tidal.spark.read_output(str(tmp_path / "out"))
    assert first.num_rows > 0 and again.equals(first)
