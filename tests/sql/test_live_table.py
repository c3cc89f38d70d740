"""The live table (``tidal query`` on a terminal) shows the current snapshot while the query runs, also
for a grouped query over event time without a TRIGGER (whose batch formats wait for the end), and ends
with the batch answer."""

from __future__ import annotations

import datetime as dt
import io
import random
import re

import duckdb

from tidal.cli import main as cli_main
from tidal.sql import plan


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _frames(text: str) -> list[dict]:
    text = re.sub(r"\x1b\[[0-9;?]*[a-zA-Z]", "", text)
    out = []
    for frame in text.split("┏")[1:]:
        rows = [[c.strip() for c in line.split("│")[1:-1]] for line in frame.splitlines() if line.startswith("│")]
        out.append({k: int(n) for k, n in rows})
    return out


def test_a_windowed_group_by_without_window_columns_shows_running_snapshots(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rng, base = random.Random(2), dt.datetime(2024, 1, 1)
    rows = [(rng.choice("abcd"), base + dt.timedelta(seconds=7 * i)) for i in range(120)]  # in order
    (tmp_path / "e.csv").write_text("k,t\n" + "".join(f"{k},{t}\n" for k, t in rows))
    sql = (
        "SELECT k, COUNT(*) AS n FROM tumble(source => TABLE(max_diff_watermark(source => TABLE('e.csv'),"
        " time_field => DESCRIPTOR(t), offset => INTERVAL 5 SECONDS)), window_length => INTERVAL 1 MINUTE) GROUP BY k"
    )
    monkeypatch.setattr(cli_main, "REDRAW_SECONDS", 0.0)  # draw every change
    out = _Terminal()
    cli_main._live_table(plan(sql), out)
    frames = [f for f in _frames(out.getvalue()) if f]
    con = duckdb.connect()
    con.execute("CREATE TABLE e (k VARCHAR, t TIMESTAMP)")
    con.executemany("INSERT INTO e VALUES (?, ?)", rows)
    final = dict(con.sql("SELECT k, COUNT(*) FROM e GROUP BY k").fetchall())
    assert frames[-1] == final == {r["k"]: r["n"] for r in plan(sql).result().to_pylist()}
    # every frame drawn before the end is the answer over the rows up to some time
    times = sorted({t for _, t in rows})
    snapshots = [dict(con.execute("SELECT k, COUNT(*) FROM e WHERE t <= ? GROUP BY k", [t]).fetchall()) for t in times]
    assert all(f in snapshots for f in frames)
    assert len({tuple(sorted(f.items())) for f in frames}) >= len(times) // 2  # it moved while running


def test_the_live_view_does_not_change_the_batch_formats(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "e.csv").write_text("k,t\na,2024-01-01 00:00:00\nb,2024-01-01 00:01:30\na,2024-01-01 00:02:10\n")
    sql = (
        "SELECT k, COUNT(*) AS n FROM tumble(source => TABLE(max_diff_watermark(source => TABLE('e.csv'),"
        " time_field => DESCRIPTOR(t), offset => INTERVAL 5 SECONDS)), window_length => INTERVAL 1 MINUTE) GROUP BY k"
    )
    changes = plan(sql).changelog().to_pylist()
    assert all(not c["undo"] for c in changes) and len(changes) == 2  # materialised once, at end of input
