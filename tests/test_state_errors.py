"""The durable store's failures in the user's terms (issue 16): a full disk says so (not SQLite's
"cannot rollback"), a damaged or foreign state file is a StateError saying what to do."""

from __future__ import annotations

import sqlite3

import pytest

import tidal
from tidal.state.store import CheckpointStore, _hash


def test_a_full_disk_is_reported_and_the_previous_checkpoint_kept(tmp_path):
    with CheckpointStore(tmp_path / "cp.sqlite") as store:
        store.save("q", "plan", {"i": 1})
        # SQLite's own "database or disk is full", reached for real by capping the file's size
        pages = store._db.execute("PRAGMA page_count").fetchone()[0]
        store._db.execute(f"PRAGMA max_page_count={pages + 2}")
        with pytest.raises(tidal.errors.ResourceError) as err:
            store.save("q", "plan", {"i": 2, "big": b"x" * 1_000_000})
        assert "no space left" in str(err.value) and "disk is full" in str(err.value)
        assert "rollback" not in str(err.value)
        assert store.load("q", "plan") == {"i": 1}
        store._db.execute("PRAGMA max_page_count=1073741823")
        assert store.save("q", "plan", {"i": 3}) == 2  # space again: saving goes on


def test_a_file_that_is_not_a_database(tmp_path):
    path = tmp_path / "state.sqlite"
    path.write_bytes(b"not sqlite at all " * 500)
    with pytest.raises(tidal.errors.StateError, match="not a tidal checkpoint file, or a damaged one"):
        CheckpointStore(path)


def test_a_database_of_something_else(tmp_path):
    path = tmp_path / "state.sqlite"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE checkpoints (x INTEGER)")
    with pytest.raises(tidal.errors.StateError, match="not tidal's"):
        CheckpointStore(path)


def test_a_damaged_checkpoint_file_in_a_durable_run(tmp_path):
    rows = [{"t": i, "v": i % 7} for i in range(2000)]
    stream = tidal.from_records(rows, time="t", batch_size=100).alter_duration(50).aggregate(tidal.agg.sum("v"))
    state = tmp_path / "state.sqlite"
    first = stream.run_durable(tmp_path / "out", state, every_messages=5)
    data = bytearray(state.read_bytes())
    assert len(data) > 8192
    data[4096:8192] = b"\xa5" * 4096  # a damaged page (the header stays valid)
    state.write_bytes(bytes(data))
    for suffix in ("-wal", "-shm"):
        (tmp_path / f"state.sqlite{suffix}").unlink(missing_ok=True)
    with pytest.raises(tidal.errors.StateError) as err:
        stream.run_durable(tmp_path / "out", state, every_messages=5)
    assert "state.sqlite" in str(err.value) and "delete it" in str(err.value)
    state.unlink()
    again = stream.run_durable(tmp_path / "out2", state, every_messages=5)  # deleted, the run starts over
    assert again.equals(first)


def test_a_damaged_pickle_is_a_state_error(tmp_path):
    with CheckpointStore(tmp_path / "cp.sqlite") as store:
        store.save("q", "plan", {"i": 1})
        garbage = b"\x80\x05garbage"  # with a matching checksum: bytes that are not tidal's, not a flipped bit
        store._db.execute("UPDATE checkpoints SET manifest = ?, digest = ?", (garbage, _hash(garbage)))
        with pytest.raises(tidal.errors.StateError, match="checkpoint 1 of query 'q'.*cannot be read"):
            store.load("q", "plan")
