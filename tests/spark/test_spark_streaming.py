"""Structured Streaming: files arriving in waves, operator state in Spark's state store, restarts.

The plan keeps per-key operator state (a reduce keyed by ``k`` whose open edges and reorder
buffer carry across micro-batches). Three waves of files; the query is stopped after each
wave and restarted from its checkpoint, or run in another process that is killed (SIGKILL)
once the second wave is committed and restarted here. The output must equal an
uninterrupted run and the embedded engine's result on all the data, up to the frontier the
final wave's far-future events establish.

Run as a script (``python test_spark_streaming.py INPUT OUTPUT CHECKPOINT``) this module is
the process that gets killed: its own local Spark session runs the query until it dies.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import tidal
import tidal.spark
from tidal.testing import canonical

HORIZON = 1_000
FAR = 10_000


def _keyed(stream, keys):
    return tidal.Stream(stream.node.but(partitioning=(tuple(keys),)))


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


def _start(spark, input_dir, out_dir, ckpt_dir, trigger):
    stream_df = spark.readStream.schema("t long, e long, k long, v long").option("maxFilesPerTrigger", 1)
    source = tidal.spark.from_spark(stream_df.parquet(str(input_dir)), time="t", end="e")
    return tidal.spark.start_streaming(_query(source), output=str(out_dir), checkpoint=str(ckpt_dir), trigger=trigger)


def _run(spark, input_dir, out_dir, ckpt_dir):
    _start(spark, input_dir, out_dir, ckpt_dir, {"availableNow": True}).awaitTermination()


@pytest.fixture(scope="module")
def waves():
    rng = random.Random(21)
    return [_wave(i, rng) for i in range(3)]


@pytest.fixture(scope="module")
def uninterrupted(spark, waves, tmp_path_factory):
    """The output of one run over all three waves."""
    root = tmp_path_factory.mktemp("uninterrupted")
    (root / "in").mkdir()
    for i, wave in enumerate(waves):
        pq.write_table(wave, root / "in" / f"wave{i}.parquet")
    _run(spark, root / "in", root / "out", root / "ckpt")
    out = tidal.spark.read_output(str(root / "out"))
    everything = pa.concat_tables(waves).sort_by("t")
    embedded = _query(tidal.from_arrow(everything, time="t", end="e")).to_arrow()
    assert _below(out, HORIZON) == _below(embedded, HORIZON)
    assert len(_below(out, HORIZON)) > 50
    return out


def _same_rows(a: pa.Table, b: pa.Table) -> None:
    """Equal as multisets of rows: nothing missing, nothing twice."""
    key = [(c, "ascending") for c in a.column_names]
    assert a.num_rows == b.num_rows
    assert a.sort_by(key).equals(b.sort_by(key))


def test_waves_with_restarts_match_uninterrupted_and_embedded(spark, tmp_path, waves, uninterrupted):
    (tmp_path / "in").mkdir()
    for i, wave in enumerate(waves):
        pq.write_table(wave, tmp_path / "in" / f"wave{i}.parquet")
        _run(spark, tmp_path / "in", tmp_path / "out", tmp_path / "ckpt")  # stop, then restart per wave
        partial = tidal.spark.read_output(str(tmp_path / "out"))
        assert partial.num_rows > 0
    _same_rows(tidal.spark.read_output(str(tmp_path / "out")), uninterrupted)


def _wait_for(path: Path, worker: subprocess.Popen, log: Path, timeout: float = 150.0) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if worker.poll() is not None:
            raise AssertionError(f"the streaming process ended early:\n{log.read_text()[-3000:]}")
        if time.monotonic() > deadline:
            os.killpg(worker.pid, signal.SIGKILL)
            raise AssertionError(f"{path} did not appear in {timeout} s")
        time.sleep(0.2)


def test_killed_process_restarts_from_its_checkpoint(spark, tmp_path, waves, uninterrupted):
    """Another process runs the query; it is killed after the second wave's micro-batch is
    committed; the query restarts here from the checkpoint and reads the third wave."""
    input_dir, out_dir, ckpt = tmp_path / "in", tmp_path / "out", tmp_path / "ckpt"
    input_dir.mkdir()
    pq.write_table(waves[0], input_dir / "wave0.parquet")
    root = Path(tidal.__file__).resolve().parent.parent
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(root), str(Path(__file__).resolve().parent.parent)]))
    log = tmp_path / "worker.log"
    with open(log, "wb") as err:
        worker = subprocess.Popen(
            [sys.executable, __file__, str(input_dir), str(out_dir), str(ckpt)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=err,
            start_new_session=True,  # its own process group: the kill reaches its JVM and Python workers too
        )
        try:
            _wait_for(ckpt / "commits" / "0", worker, log)
            pq.write_table(waves[1], input_dir / "wave1.parquet")
            _wait_for(ckpt / "commits" / "1", worker, log)
        finally:
            if worker.poll() is None:
                os.killpg(worker.pid, signal.SIGKILL)
            worker.wait()
    assert worker.returncode == -signal.SIGKILL
    assert tidal.spark.read_output(str(out_dir)).num_rows > 0
    pq.write_table(waves[2], input_dir / "wave2.parquet")
    _run(spark, input_dir, out_dir, ckpt)  # a new process (this one) resumes from the checkpoint
    _same_rows(tidal.spark.read_output(str(out_dir)), uninterrupted)


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


def _serve(input_dir: str, out_dir: str, ckpt_dir: str) -> None:
    """Run the query in this process, polling the directory for new files, until killed."""
    spark = tidal.spark.spark_session(
        "local[1]",
        shuffle_partitions=2,
        config={"spark.default.parallelism": "1", "spark.sql.adaptive.enabled": "false"},
    )
    _start(spark, input_dir, out_dir, ckpt_dir, {"processingTime": "200 milliseconds"}).awaitTermination()


if __name__ == "__main__":
    _serve(*sys.argv[1:4])
