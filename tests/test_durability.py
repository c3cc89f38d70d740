"""Durable state: checkpoints in SQLite, output that rolls back with them, and a process killed mid-run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from durable_child import make_stream

from tidal.core.batch import EventBatch
from tidal.core.errors import TidalError
from tidal.io.segments import SegmentSink
from tidal.state.store import CheckpointStore

CHILD = Path(__file__).with_name("durable_child.py")


def _rows(table) -> list[tuple]:
    return list(zip(*(c.to_pylist() for c in table.columns), strict=True))


def test_store_keeps_newest_checkpoints_and_refuses_another_plan(tmp_path):
    with CheckpointStore(tmp_path / "cp.sqlite", keep=2) as store:
        assert store.load("q") is None
        for i in range(1, 5):
            assert store.save("q", "plan-a", {"i": i}) == i
        store.save("other", "plan-b", {"i": -1})
        assert store.load("q", "plan-a") == {"i": 4}
        rows = store._db.execute("SELECT seq FROM checkpoints WHERE query = 'q' ORDER BY seq").fetchall()
        assert rows == [(3,), (4,)]
        with pytest.raises(TidalError, match="different plan"):
            store.load("q", "plan-c")
    with CheckpointStore(tmp_path / "cp.sqlite") as reopened:  # survives closing
        assert reopened.load("other") == {"i": -1}
        assert reopened.sequence("q") == 4


def test_stopped_run_resumes_with_exactly_the_uninterrupted_output(tmp_path):
    expected = _rows(make_stream().to_arrow())
    assert len(expected) > 500

    class Stop(Exception):
        pass

    def stop_at(n):
        def on_checkpoint(seq):
            if seq == n:
                raise Stop

        return on_checkpoint

    out, cp = tmp_path / "out", tmp_path / "cp.sqlite"
    with pytest.raises(Stop):
        make_stream().run_durable(out, cp, every_messages=7, on_checkpoint=stop_at(3))
    with pytest.raises(Stop):
        make_stream().run_durable(out, cp, every_messages=7, on_checkpoint=stop_at(9))
    partial = make_stream().run_durable  # a third run finishes
    assert _rows(partial(out, cp, every_messages=7)) == expected
    # running a finished query again changes nothing
    assert _rows(make_stream().run_durable(out, cp, every_messages=7)) == expected


@pytest.mark.parametrize("how", ["--kill-at-checkpoint", "--kill-in-save"])
def test_killed_process_restarts_from_its_checkpoint(tmp_path, how):
    expected = _rows(make_stream().to_arrow())
    out, cp = tmp_path / "out", tmp_path / "cp.sqlite"
    cmd = [sys.executable, str(CHILD), str(out), str(cp)]
    killed = subprocess.run([*cmd, how, "5"], capture_output=True, text=True, timeout=120)
    assert killed.returncode == -9, killed.stderr
    with CheckpointStore(cp) as store:
        # killed after the 5th save, or inside it (so only 4 reached the database)
        assert store.sequence("query") == (5 if how == "--kill-at-checkpoint" else 4)
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert not list(out.glob("*.tmp"))
    assert _rows(SegmentSink(out).table()) == expected


def test_segment_sink_rolls_back_to_a_committed_position(tmp_path):
    events = make_stream().to_arrow()
    sink = SegmentSink(tmp_path / "out")
    for lo, hi in [(0, 10), (10, 25), (25, 40)]:
        sink.on_batch(EventBatch.from_record_batch(events.slice(lo, hi - lo).to_batches()[0]))
        sink.commit()
    assert sink.commit() == 3  # nothing pending: no empty file
    sink.resume_at(1)
    assert _rows(sink.table()) == _rows(events.slice(0, 10))
    assert _rows(SegmentSink(tmp_path / "out").table()) == _rows(events.slice(0, 10))
