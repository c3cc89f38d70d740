"""Growing input: standard input and ``tail(path => ...)`` are read as they are written, and results
come out while the input is still arriving; ``tail`` stops at ``stop => 'eof'`` or runs until a
signal stops it cleanly (with ``--state``, after a final commit, and the next run continues)."""

from __future__ import annotations

import datetime as dt
import io
import json
import os
import select
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import duckdb
import pytest

from tidal.cli.main import main as cli

ROOT = Path(__file__).resolve().parents[2]
T0 = dt.datetime(2024, 1, 1)
WINDOWS = """SELECT k, window_end, count(*) AS c FROM tumble(source => TABLE(max_diff_watermark(
  source => TABLE({src}), time_field => DESCRIPTOR(t), offset => INTERVAL 1 SECOND)),
  time_field => DESCRIPTOR(t), window_length => INTERVAL 10 SECONDS) GROUP BY k, window_end TRIGGER ON WATERMARK"""
DUCK_WINDOWS = """SELECT k, CAST(time_bucket(INTERVAL 10 SECOND, t) + INTERVAL 10 SECOND AS VARCHAR) AS window_end,
  count(*) AS c FROM read_csv('{path}') GROUP BY ALL"""


def _lines(n: int, start: int = 0) -> list[str]:
    return [f"{T0 + dt.timedelta(seconds=3 * i)},k{i % 3},{i}" for i in range(start, start + n)]


def _env() -> dict:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def _readline(stream, timeout: float) -> bytes:
    ready, _, _ = select.select([stream], [], [], timeout)
    assert ready, f"no output within {timeout} s"
    return stream.readline()  # (the line is written whole: it follows at once)


def _rows(json_lines) -> list[tuple]:
    return sorted(tuple(json.loads(x).values()) for x in json_lines if x.strip())


def test_a_pipe_prints_the_first_window_before_the_producer_stops_writing(tmp_path):
    go = tmp_path / "go"
    producer_code = textwrap.dedent(
        f"""
        import os, sys, time
        lines = {["t,k,v", *_lines(30)]!r}
        for i, line in enumerate(lines):
            print(line, flush=True)
            if i == 6:  # the first 10 s window is complete and the watermark is past it: wait to be told
                while not os.path.exists({str(go)!r}):
                    time.sleep(0.01)
            time.sleep(0.01)
        """
    )
    read, write = os.pipe()
    producer = subprocess.Popen([sys.executable, "-c", producer_code], stdout=write)
    os.close(write)
    query = subprocess.Popen(
        [sys.executable, "-m", "tidal.cli.main", "query", WINDOWS.format(src="'stdin.csv'"), "--format", "stream-json"],
        stdin=read,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_env(),
    )
    os.close(read)
    try:
        first = _readline(query.stdout, 60)
        assert producer.poll() is None, "the producer had already finished"  # it is still waiting to write the rest
        assert json.loads(first) == {"k": "k0", "window_end": "2024-01-01 00:00:10", "c": 2}
    finally:
        go.touch()
    with query.stdout, query.stderr:
        rest = query.stdout.read()  # (communicate() would skip what readline() buffered)
        err = query.stderr.read()
    assert query.wait(60) == 0, err.decode()
    assert producer.wait(10) == 0
    (tmp_path / "all.csv").write_text("\n".join(["t,k,v", *_lines(30)]) + "\n")
    expected = duckdb.sql(DUCK_WINDOWS.format(path=tmp_path / "all.csv")).fetchall()
    assert _rows([first.decode(), *rest.decode().splitlines()]) == sorted(expected)


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT k, sum(v) AS s, count(*) AS n FROM {src} WHERE v % 4 <> 1 GROUP BY k",
        "SELECT t, k, v FROM {src} WHERE v > 10",
    ],
)
def test_tail_to_eof_equals_duckdb(tmp_path, monkeypatch, capsys, sql):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "f.csv").write_text("\n".join(["t,k,v", *_lines(200)]) + "\n")
    src = "tail(path => 'f.csv', stop => 'eof')"
    assert cli(["query", sql.format(src=src), "--format", "batch-json", "--batch-rows", "7"]) == 0
    got = sorted(tuple(str(v) for v in json.loads(x).values()) for x in capsys.readouterr().out.splitlines())
    duck = duckdb.sql(sql.format(src="read_csv('f.csv')")).fetchall()
    assert got == sorted(tuple(str(v) for v in row) for row in duck)


def test_stdin_json_lines_and_a_line_without_newline(monkeypatch, capsys):
    text = '{"a": 1, "b": "x"}\n{"a": 5, "b": "z"}\n{"a": 7, "b": "z"}'
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(text.encode())))
    assert cli(["query", "SELECT b, sum(a) AS s FROM 'stdin.json' GROUP BY b ORDER BY b", "--format", "batch-csv"]) == 0
    assert capsys.readouterr().out.splitlines() == ['"b","s"', '"x",1', '"z",12']


def test_a_malformed_line_is_named_or_skipped_and_counted(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "f.csv").write_text("a,b\n1,x\n2,y\n3,z,extra\n4,w\n")
    sql = "SELECT a, b FROM tail(path => 'f.csv', stop => 'eof')"
    assert cli(["query", sql, "--format", "batch-csv"]) == 2
    assert "f.csv: line 4, column 3: malformed row" in capsys.readouterr().err
    assert cli(["query", sql, "--format", "batch-csv", "--on-error", "skip"]) == 0
    out = capsys.readouterr()
    assert out.out.splitlines()[1:] == ['1,"x"', '2,"y"', '4,"w"'] and "skipped rows: 1" in out.err

    class Chunks(io.RawIOBase):  # standard input that brings a non-number after the types were inferred
        def __init__(self, chunks):
            self.chunks = list(chunks)

        def readable(self):
            return True

        def readinto(self, buffer):
            data = self.chunks.pop(0) if self.chunks else b""
            buffer[: len(data)] = data
            return len(data)

    stdin = io.TextIOWrapper(io.BufferedReader(Chunks([b"a,b\n1,x\n", b"2,y\nthree,z\n"])))
    monkeypatch.setattr(sys, "stdin", stdin)
    assert cli(["query", "SELECT a + 1 AS b FROM 'stdin.csv'", "--format", "batch-csv"]) == 2
    err = capsys.readouterr().err
    assert "stdin.csv: line 4" in err and "inferred from the first rows" in err, err


@pytest.mark.parametrize(
    ("sql", "extra", "message"),
    [
        (
            "SELECT a FROM 'stdin.csv'",
            ["--state", "s.db", "--output", "o.json"],
            "over standard input is not supported",
        ),
        ("SELECT a FROM tail(path => 'f.csv')", ["--state", "s.db"], "--state needs --output"),
        ("SELECT a FROM 'stdin.csv'", ["--progressive", "10"], "not supported on standard input"),
        (
            "SELECT a FROM percentile_watermark(TABLE(tail(path => 'f.csv')), DESCRIPTOR(a), 5, 20, 5)",
            [],
            "percentile_watermark reads its whole input first: not supported on tail",
        ),
        ("SELECT a FROM tail(path => 'f.csv', stop => 'later')", [], "stop is 'never'"),
        ("SELECT x.a FROM 'stdin.csv' x JOIN 'stdin.csv' y ON x.a = y.a", [], "standard input is read twice"),
        ("SELECT a FROM 'stdin.csv' WHERE a IN (SELECT a FROM 'stdin.csv')", [], "standard input is read twice"),
    ],
)
def test_what_live_input_cannot_do_is_refused(tmp_path, monkeypatch, capsys, sql, extra, message):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "f.csv").write_text("a\n1\n2\n")
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"a\n1\n")))
    assert cli(["query", sql, "--format", "stream-json", *extra]) == 2
    assert message in capsys.readouterr().err


def _wait_for_lines(path: Path, n: int, proc, timeout: float = 60) -> None:
    start = time.time()
    while not (path.exists() and path.read_text().count("\n") >= n):
        assert proc.poll() is None, proc.stderr.read().decode()
        assert time.time() - start < timeout, f"{path} has not reached {n} lines"
        time.sleep(0.02)


def test_tail_follows_a_growing_file_and_a_signal_stops_it_with_a_final_commit(tmp_path):
    """Run 1 follows the first rows, is stopped by SIGTERM (a commit); rows are appended while nothing
    runs; run 2 continues from the commit, is stopped by SIGINT. The windows it printed are exactly
    those of one run over the whole file that the watermark has passed."""
    data = tmp_path / "g.csv"
    data.write_text("\n".join(["t,k,v", *_lines(40)]) + "\n")
    sql = WINDOWS.format(src="tail(path => 'g.csv')")
    cmd = [sys.executable, "-m", "tidal.cli.main", "query", sql, "--format", "stream-json", "--output", "o.json"]
    cmd += ["--state", "s.db", "--batch-latency", "20"]
    full = ["t,k,v", *_lines(100)]
    (tmp_path / "all.csv").write_text("\n".join(full) + "\n")
    # windows the watermark (last time - 1 s) has passed, in the order a run prints them
    expected = sorted(duckdb.sql(DUCK_WINDOWS.format(path=tmp_path / "all.csv")).fetchall())
    last = T0 + dt.timedelta(seconds=3 * 99 - 1)
    closed = [r for r in expected if dt.datetime.fromisoformat(r[1]) <= last]

    first = subprocess.Popen(cmd, cwd=tmp_path, env=_env(), stderr=subprocess.PIPE)  # noqa: SIM115
    _wait_for_lines(tmp_path / "o.json", 3 * 11, first)  # 11 windows of 3 keys closed by row 39 (t = 117 s)
    first.send_signal(signal.SIGTERM)
    err = first.communicate(timeout=60)[1].decode()
    assert first.returncode == 128 + signal.SIGTERM and "state saved" in err and "Traceback" not in err, err
    with data.open("a") as fh:
        fh.write("\n".join(_lines(60, start=40)) + "\n")
    second = subprocess.Popen(cmd, cwd=tmp_path, env=_env(), stderr=subprocess.PIPE)
    _wait_for_lines(tmp_path / "o.json", len(closed), second)
    time.sleep(0.3)  # nothing more may come: the rest waits for the watermark
    second.send_signal(signal.SIGINT)
    err = second.communicate(timeout=60)[1].decode()
    assert second.returncode == 128 + signal.SIGINT and "Traceback" not in err, err
    assert _rows((tmp_path / "o.json").read_text().splitlines()) == closed
