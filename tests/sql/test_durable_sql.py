"""``tidal query ... --state``: killed with SIGKILL at random instants (some inside a commit) and run
again, the output is byte for byte the uninterrupted run's, for a windowed GROUP BY with TRIGGER ON
WATERMARK, a stream join and a TRIGGER COUNTING query with retractions.

``TIDAL_DURABLE_KILLS`` sets the kills per query (default 7: 21 in all).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
KILLS = int(os.environ.get("TIDAL_DURABLE_KILLS", "7"))

WINDOWED = """SELECT k, window_end, count(*) AS c, sum(v) AS s FROM tumble(source => TABLE(max_diff_watermark(
  source => TABLE(tail(path => 'a.csv', stop => 'eof')), time_field => DESCRIPTOR(t), offset => INTERVAL 5 SECONDS)),
  time_field => DESCRIPTOR(t), window_length => INTERVAL 1 MINUTE) GROUP BY k, window_end TRIGGER ON WATERMARK"""
JOIN = """SELECT a.k, a.window_end, count(*) AS n, sum(a.v * b.w) AS p
FROM tumble(source => TABLE(max_diff_watermark(source => TABLE(tail(path => 'a.csv', stop => 'eof')),
  time_field => DESCRIPTOR(t), offset => INTERVAL 5 SECONDS)), time_field => DESCRIPTOR(t),
  window_length => INTERVAL 1 MINUTE) a
JOIN tumble(source => TABLE(max_diff_watermark(source => TABLE(tail(path => 'b.csv', stop => 'eof')),
  time_field => DESCRIPTOR(t), offset => INTERVAL 5 SECONDS)), time_field => DESCRIPTOR(t),
  window_length => INTERVAL 1 MINUTE) b
ON a.k = b.k AND a.window_end = b.window_end GROUP BY a.k, a.window_end"""
COUNTING = (
    "SELECT k, count(*) AS c, sum(v) AS s FROM tail(path => 'a.csv', stop => 'eof') GROUP BY k TRIGGER COUNTING 20"
)
QUERIES = {"windowed": (WINDOWED, "stream-json"), "join": (JOIN, "live-csv"), "counting": (COUNTING, "stream-json")}


def write_inputs(directory: Path, rows: int = 4000) -> None:
    rng = random.Random(11)
    t0 = dt.datetime(2024, 1, 1)
    for name, col, n, step in [("a.csv", "v", rows, 3), ("b.csv", "w", rows // 4, 12)]:
        t, lines = 0, [f"t,k,{col}"]
        for _ in range(n):
            t += rng.randint(0, step)
            lines.append(f"{t0 + dt.timedelta(seconds=t)},k{rng.randint(0, 15)},{rng.randint(-50, 50)}")
        if name == "a.csv":  # a row late beyond the watermark: the late count and policy are part of the state
            lines.insert(len(lines) // 2, f"{t0},k1,7")
        (directory / name).write_text("\n".join(lines) + "\n")


def tidal(sql: str, fmt: str, output: str, *extra: str) -> list[str]:
    return [sys.executable, "-m", "tidal.cli.main", "query", sql, "--format", fmt, "--output", output, *extra]


def env(hook: str | None = None) -> dict:
    out = {**os.environ, "PYTHONPATH": str(ROOT)}
    out.pop("TIDAL_TEST_COMMIT_HOOK", None)
    if hook:
        out["TIDAL_TEST_COMMIT_HOOK"] = hook
    return out


def _stamp(state: Path) -> tuple:
    """Changes with every commit of the state (SQLite writes its WAL file, or the file itself)."""
    return tuple(p.stat().st_mtime_ns if p.exists() else 0 for p in (state, Path(f"{state}-wal")))


def _wait_for_commits(proc, state: Path, n: int, timeout: float = 60) -> None:
    """Until the running query has committed about ``n`` times (or has ended)."""
    seen, last, start = 0, _stamp(state), time.time()
    while proc.poll() is None and seen < n:
        if time.time() - start > timeout:
            if timeout < 60:
                return
            proc.kill()
            pytest.fail("the durable run did not commit within 60 s")
        now = _stamp(state)
        if now != last:
            seen, last = seen + 1, now
        time.sleep(0.002)


@pytest.mark.parametrize("name", sorted(QUERIES))
def test_killed_at_random_instants_the_output_is_the_uninterrupted_runs(tmp_path, monkeypatch, name):
    from tidal.cli.main import main as cli

    sql, fmt = QUERIES[name]
    write_inputs(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert cli(tidal(sql, fmt, "ref.out", "--batch-rows", "40")[3:]) == 0  # the uninterrupted run, in this process
    expected = (tmp_path / "ref.out").read_bytes()
    assert expected.count(b"\n") > 50
    cmd = tidal(sql, fmt, "out.out", "--batch-rows", "40", "--state", "state.db", "--checkpoint-interval", "0.001")
    rng = random.Random(name)
    kills = in_commit = 0
    for i in range(KILLS):
        if i % 3 == 0:  # die inside a commit: after the output's commit, before the state's transaction commits
            proc = subprocess.run(cmd, cwd=tmp_path, env=env(f"kill:{rng.randint(1, 3)}"), capture_output=True)
            assert proc.returncode in (-signal.SIGKILL, 0), proc.stderr
            in_commit += proc.returncode == -signal.SIGKILL
            kills += proc.returncode == -signal.SIGKILL
            continue
        # elsewhere: at a random instant a few commits into the run (commits sleep, so some kills land in one;
        # a commit follows about every message, so the killed runs together do a small part of the work)
        proc = subprocess.Popen(cmd, cwd=tmp_path, env=env("sleep:0.005"), stderr=subprocess.PIPE)
        _wait_for_commits(proc, tmp_path / "state.db", rng.randint(1, 4))
        time.sleep(rng.uniform(0, 0.01))
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode in (-signal.SIGKILL, 0), err.decode()
        kills += proc.returncode == -signal.SIGKILL
    done = subprocess.run(cmd, cwd=tmp_path, env=env(), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "out.out").read_bytes() == expected
    assert kills == KILLS and in_commit >= 2, (kills, in_commit)  # every run was really killed, some in commits
    if name == "windowed":
        again = subprocess.run(cmd, cwd=tmp_path, env=env(), capture_output=True, text=True, timeout=120)
        assert again.returncode == 0 and (tmp_path / "out.out").read_bytes() == expected  # a finished run stays done


def test_killed_while_a_producer_appends_to_the_file(tmp_path, monkeypatch):
    """``tail`` follows a file a producer is still writing; the query is killed with SIGKILL a few commits
    into each run, restarted, and finally stopped by SIGTERM once the producer is done: the windows it
    printed, exactly once each, are those of one run over the whole file that the watermark closed."""
    import threading

    from tidal.cli.main import main as cli

    write_inputs(tmp_path)
    monkeypatch.chdir(tmp_path)
    whole = (tmp_path / "a.csv").read_text().splitlines(keepends=True)
    (tmp_path / "full.csv").write_text("".join(whole))
    eof = WINDOWED.replace("'a.csv'", "'full.csv'")
    assert cli(["query", eof, "--format", "stream-json", "--output", "ref.json"]) == 0
    last = max(dt.datetime.fromisoformat(line.split(",")[0]) for line in whole[1:])
    watermark = last - dt.timedelta(seconds=5)
    closed = sorted(
        line
        for line in (tmp_path / "ref.json").read_text().splitlines()
        if dt.datetime.fromisoformat(json.loads(line)["window_end"]) <= watermark
    )
    (tmp_path / "a.csv").write_text(whole[0])
    done = threading.Event()

    def produce():
        with (tmp_path / "a.csv").open("a") as fh:
            for start in range(1, len(whole), 100):
                fh.write("".join(whole[start : start + 100]))
                fh.flush()
                time.sleep(0.25)
        done.set()

    following = WINDOWED.replace("stop => 'eof'", "stop => 'never'")
    cmd = tidal(following, "stream-json", "out.json", "--state", "state.db", "--checkpoint-interval", "0.001")
    cmd += ["--batch-latency", "5"]
    producer = threading.Thread(target=produce)
    producer.start()
    rng, kills = random.Random(5), 0
    while not done.is_set():  # (an idle run commits nothing: after the producer is done, waiting would not end)
        proc = subprocess.Popen(cmd, cwd=tmp_path, env=env("sleep:0.002"), stderr=subprocess.PIPE)
        _wait_for_commits(proc, tmp_path / "state.db", rng.randint(1, 6), timeout=5)
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=60)
        kills += proc.returncode == -signal.SIGKILL
    producer.join()
    final = subprocess.Popen(cmd, cwd=tmp_path, env=env(), stderr=subprocess.PIPE)
    _wait_for_commits(final, tmp_path / "state.db", 1, timeout=30)  # running (its first commit comes at once)
    start = time.time()
    out = tmp_path / "out.json"  # (written once the first change comes: maybe after the run's first commit)
    while (out.read_text().count("\n") if out.exists() else 0) < len(closed) and time.time() - start < 60:
        time.sleep(0.05)
    time.sleep(0.3)  # the rest waits for a watermark that does not come
    final.send_signal(signal.SIGTERM)
    err = final.communicate(timeout=60)[1].decode()
    assert final.returncode == 128 + signal.SIGTERM, err
    assert sorted((tmp_path / "out.json").read_text().splitlines()) == closed
    assert kills >= 3
