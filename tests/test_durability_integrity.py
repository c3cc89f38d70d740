"""Durable state that cannot silently lose or change rows: committed output files are checked on
restore (deleted or altered: an error naming the file), checkpoints carry checksums (one flipped
bit: an error naming the chunk), checkpoints are incremental, and a text output's uncommitted tail
is cut on restart."""

from __future__ import annotations

import os
import random
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from durable_child import make_stream
from hypothesis import given, settings
from hypothesis import strategies as st
from streams import stream_cases
from test_checkpoints import STATEFUL

from tidal.core.errors import TidalError
from tidal.io.segments import TextFileSink
from tidal.state.store import CheckpointStore


class Stop(Exception):
    pass


def _stopped_run(tmp_path, at: int = 4):
    out, cp = tmp_path / "out", tmp_path / "cp.sqlite"

    def on_checkpoint(seq):
        if seq == at:
            raise Stop

    with pytest.raises(Stop):
        make_stream().run_durable(out, cp, every_messages=7, on_checkpoint=on_checkpoint)
    return out, cp


def _rows(table) -> list[tuple]:
    return list(zip(*(c.to_pylist() for c in table.columns), strict=True))


def test_a_deleted_output_directory_or_part_file_is_an_error(tmp_path):
    out, cp = _stopped_run(tmp_path)
    parts = sorted(out.glob("part-*.arrow"))
    assert len(parts) >= 2
    parts[1].unlink()
    with pytest.raises(TidalError, match=r"committed output .*part-000001.arrow is missing"):
        make_stream().run_durable(out, cp, every_messages=7)
    shutil.rmtree(out)
    with pytest.raises(TidalError, match=r"part-000000.arrow is missing"):
        make_stream().run_durable(out, cp, every_messages=7)


def test_a_changed_output_file_is_an_error(tmp_path):
    out, cp = _stopped_run(tmp_path)
    part = sorted(out.glob("part-*.arrow"))[0]
    data = bytearray(part.read_bytes())
    data[len(data) // 2] ^= 0x10
    part.write_bytes(bytes(data))
    with pytest.raises(TidalError, match=r"part-000000.arrow was changed"):
        make_stream().run_durable(out, cp, every_messages=7)


def _chunks(cp) -> list[tuple[bytes, bytes]]:
    with sqlite3.connect(cp) as db:
        return db.execute("SELECT hash, data FROM chunks").fetchall()


@pytest.mark.parametrize("seed", range(4))
def test_one_flipped_bit_of_state_is_an_error(tmp_path, seed):
    out, cp = _stopped_run(tmp_path)
    expected = _rows(make_stream().to_arrow())
    raw = bytearray(cp.read_bytes())  # the store was closed: its WAL is folded into the file
    rng = random.Random(seed)
    with sqlite3.connect(cp) as db:
        manifest = db.execute("SELECT manifest FROM checkpoints ORDER BY seq DESC LIMIT 1").fetchone()[0]
    # a blob of the newest checkpoint that lies whole in one page: a chunk, or (seed 0) the manifest
    blobs = [manifest] if seed == 0 else [d for _, d in _chunks(cp) if 64 < len(d) < 2000 and raw.count(d) == 1]
    blob = rng.choice(blobs)
    at = raw.index(blob) + rng.randrange(len(blob))
    raw[at] ^= 1 << rng.randrange(8)
    cp.write_bytes(bytes(raw))
    try:
        got = make_stream().run_durable(out, cp, every_messages=7)
    except TidalError as exc:
        assert "corrupt" in str(exc) or "damaged" in str(exc) or "cannot be read" in str(exc), exc
    else:  # a chunk only the older kept checkpoint used: the newest is intact, and so is the answer
        assert seed != 0 and _rows(got) == expected


@pytest.mark.parametrize("seed", range(4))
def test_a_bit_flipped_anywhere_in_the_state_file_is_an_error_or_harmless(tmp_path, seed):
    out, cp = _stopped_run(tmp_path)
    expected = _rows(make_stream().to_arrow())
    raw = bytearray(cp.read_bytes())
    rng = random.Random(100 + seed)
    at = rng.randrange(len(raw))
    raw[at] ^= 1 << rng.randrange(8)
    cp.write_bytes(bytes(raw))
    try:
        got = make_stream().run_durable(out, cp, every_messages=7)
    except TidalError:
        return  # named as damaged or corrupt
    except sqlite3.DatabaseError as exc:  # pragma: no cover - must be wrapped into a TidalError
        pytest.fail(f"an unwrapped SQLite error: {exc}")
    assert _rows(got) == expected  # the bit was in free space or an old checkpoint's page


def test_checkpoints_are_incremental(tmp_path):
    q = make_stream().query()
    q.run(max_messages=30)
    state = q.checkpoint()
    with CheckpointStore(tmp_path / "cp.sqlite") as store:
        store.save("q", "f", state)
        first = store.written
        store.save("q", "f", state)  # nothing changed: only the manifest is written
        assert store.written < first / 5 and store.written < 2000
        q.run(max_messages=5)
        store.save("q", "f", q.checkpoint())
        assert store.written < first  # the operators that did not change are not written again
        loaded = store.load("q", "f")
    again = make_stream().query()
    again.restore(loaded)
    assert again.run()
    with CheckpointStore(tmp_path / "cp.sqlite") as store:  # old chunks are collected with their checkpoints
        names = {h for h, _ in _chunks(tmp_path / "cp.sqlite")}
        refs = {h for (h,) in store._db.execute("SELECT hash FROM refs")}
        assert names == refs


def test_a_text_output_is_cut_back_to_its_last_commit(tmp_path):
    path = tmp_path / "o.txt"
    sink = TextFileSink(path)
    sink.resume_at(None)
    sink.write("one\n")
    position = sink.commit()
    sink.write("two, not committed\n")
    sink.flush()
    sink.close()
    again = TextFileSink(path)
    again.resume_at(position)
    again.write("three\n")
    again.commit()
    again.close()
    assert path.read_text() == "one\nthree\n"
    path.write_text("ONE\nthree\n")
    with pytest.raises(TidalError, match="was changed"):
        TextFileSink(path).resume_at(position)
    os.remove(path)
    with pytest.raises(TidalError, match="is missing"):
        TextFileSink(path).resume_at(position)


SQL = (
    "SELECT k, count(*) AS c, sum(v) AS s FROM tumble(source => TABLE(max_diff_watermark(source => TABLE('e.csv'), "
    "time_field => DESCRIPTOR(t), offset => INTERVAL 1 SECOND)), time_field => DESCRIPTOR(t), "
    "window_length => INTERVAL 10 SECONDS) GROUP BY k, window_end"
)


def _events(path, n=300, late: int = 0):
    lines = ["t,k,v"] + [
        f"2024-01-{1 + i // 3600:02d} 00:{i // 60 % 60:02d}:{i % 60:02d},k{i % 4},{i}" for i in range(n)
    ]
    for j in range(late):  # rows far behind the watermark: late, written to the late-records file
        lines.insert(n // 2 + 7 * j, f"2024-01-01 00:00:0{j},k9,{-j}")
    path.write_text("\n".join(lines) + "\n")


def test_a_state_file_of_another_query_is_refused_showing_both(tmp_path, monkeypatch, capsys):
    from tidal.cli.main import main as cli

    monkeypatch.chdir(tmp_path)
    _events(tmp_path / "e.csv")
    assert cli(["query", SQL, "--format", "stream-json", "--output", "o.json", "--state", "s.db"]) == 0
    other = SQL.replace("sum(v)", "max(v)")
    assert cli(["query", other, "--format", "stream-json", "--output", "o.json", "--state", "s.db"]) == 2
    err = capsys.readouterr().err
    assert "different plan" in err and "sum(v)" in err and "max(v)" in err and err.count("stream plan:") == 2
    with (tmp_path / "e.csv").open("a") as fh:  # an input re-read from its start changed: the replay would be wrong
        fh.write("2024-01-01 00:09:00,k1,1\n")
    assert cli(["query", SQL, "--format", "stream-json", "--output", "o.json", "--state", "s.db"]) == 2
    err = capsys.readouterr().err
    assert "different plan" in err and err.count("inputs read from their start") == 2 and "e.csv: " in err


@pytest.mark.parametrize("fmt", ["batch-csv", "parquet", "live-csv"])
def test_a_killed_sql_run_in_a_batch_format_writes_the_uninterrupted_answer(tmp_path, monkeypatch, fmt):
    from tidal.cli.main import main as cli

    monkeypatch.chdir(tmp_path)
    _events(tmp_path / "e.csv", 3000, late=3)
    sql = SQL.replace("TABLE('e.csv')", "TABLE(tail(path => 'e.csv', stop => 'eof'))")
    common = ["--format", fmt, "--batch-rows", "100"]
    assert cli(["query", sql, *common, "--output", "ref.out", "--late-records", "ref-late.json"]) == 0
    assert (tmp_path / "ref-late.json").read_text().count("\n") == 3
    cmd = [sys.executable, "-m", "tidal.cli.main", "query", sql, *common, "--output", "o.out"]
    cmd += ["--late-records", "late.json", "--state", "s.db", "--checkpoint-interval", "0.001"]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    killed = subprocess.run(cmd, env={**env, "TIDAL_TEST_COMMIT_HOOK": "kill:17"}, capture_output=True)
    assert killed.returncode == -9, killed.stderr
    assert not (tmp_path / "o.out").exists() or fmt == "live-csv"  # a batch answer appears whole, at the end
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "o.out").read_bytes() == (tmp_path / "ref.out").read_bytes()
    assert (tmp_path / "late.json").read_bytes() == (tmp_path / "ref-late.json").read_bytes()


@settings(max_examples=40, deadline=None)
@given(case=stream_cases(), which=st.sampled_from(sorted(STATEFUL)), cut=st.integers(0, 40))
def test_every_operator_state_survives_the_store(tmp_path_factory, case, which, cut):
    """A checkpoint saved to the store and loaded back (skeletons, Arrow and numpy blocks) restores a
    query that continues exactly, for every stateful operator family."""
    stream, _ = case
    q = STATEFUL[which](stream)
    whole = q.to_arrow()
    first = q.query()
    first.run(max_messages=cut)
    path = tmp_path_factory.mktemp("store") / "cp.sqlite"
    with CheckpointStore(path) as store:
        store.save("q", "f", first.checkpoint())
    with CheckpointStore(path) as store:
        state = store.load("q", "f")
    second = q.query()
    second.restore(state)
    assert second.run()
    combined = pa.concat_tables([first.sink.table(), second.sink.table()], promote_options="permissive")
    assert sorted(_rows(combined), key=repr) == sorted(_rows(whole), key=repr)


def test_large_arrow_and_numpy_values_are_stored_in_blocks_and_slices_stay_small(tmp_path):
    big = pa.table({"a": np.arange(300_000), "b": np.arange(300_000) % 7})
    state = {"operators": [{"rows": big, "arr": np.arange(200_000), "slice": big.slice(5, 10).to_batches()[0]}]}
    with CheckpointStore(tmp_path / "cp.sqlite") as store:
        store.save("q", "f", state)
        first = store.written
        grown = pa.concat_tables([big, pa.table({"a": np.arange(10), "b": np.arange(10)})])
        store.save("q", "f", {"operators": [{**state["operators"][0], "rows": grown}]})
        assert store.written < first / 3  # the leading blocks of the grown table were stored already
        got = store.load("q", "f")["operators"][0]
    assert got["rows"].equals(grown) and np.array_equal(got["arr"], state["operators"][0]["arr"])
    assert got["slice"].equals(state["operators"][0]["slice"])
    got["arr"][0] = 5  # restored arrays are writable
    assert first < 300_000 * 16 + 200_000 * 8 + 100_000  # the 10-row slice did not bring its parent along
