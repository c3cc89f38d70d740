"""The late-row policy of SQL queries: rows behind the watermark are always counted, and dropped
(``drop``), dropped and written to the late-records file (``file``; each run starts it afresh), or
moved up to the watermark they were behind (``adjust``, Trill's Adjust). Answers are checked against
DuckDB on the rows each policy keeps, computed independently here."""

from __future__ import annotations

import datetime as dt
import json

import pyarrow as pa
import pyarrow.csv as pv
import pytest

from tidal.cli.main import main as cli
from tidal.core.errors import PlanError
from tidal.sql import plan

from .test_triggers import DUCKDB_PER_MINUTE, THESIS_4_2, duck, stream_and_batch, write_events

OFFSET_US = 5_000_000  # THESIS_4_2's max_diff_watermark offset


def _us(t: dt.datetime) -> int:
    return (t - dt.datetime(1970, 1, 1)) // dt.timedelta(microseconds=1)


def adjusted_rows(path, offset_us: int) -> tuple[list[dict], int]:
    """Rows in arrival order with a late row's time moved up to the watermark before it arrived
    (the largest time so far minus the offset); also the number of late rows."""
    rows = pv.read_csv(path).to_pylist()
    high = None
    late = 0
    for r in rows:
        t = _us(r["time"])
        mark = None if high is None else high - offset_us
        if mark is not None and t < mark:
            late += 1
            r["time"] = dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=mark)
        high = t if high is None else max(high, t)
    return rows, late


def test_adjust_moves_late_rows_up_to_the_watermark(in_dir, capsys):
    write_events(in_dir / "events.csv", 1500, seed=8, disorder_s=3, late_every=53)
    rows, late = adjusted_rows(in_dir / "events.csv", OFFSET_US)
    assert late > 5
    pv.write_csv(pa.Table.from_pylist(rows), in_dir / "adjusted.csv")
    q = plan(THESIS_4_2, late="adjust")
    got = sorted(tuple(r.values()) for r in q.result().to_pylist())
    assert q.stats.late == late
    assert got == sorted(duck(DUCKDB_PER_MINUTE.replace("events.csv", "adjusted.csv")))
    # nothing is lost: the counts add up to every row of the file
    assert sum(g for _, _, g in got) == len(rows)
    changes, batch = stream_and_batch(THESIS_4_2, "--late", "adjust")
    assert len(batch) == len(got)
    assert f"late rows: {late:,}" in capsys.readouterr().err  # reported on stderr


def test_adjust_shows_the_moved_time_in_the_event_time_column(in_dir):
    base = dt.datetime(2024, 1, 1)
    secs = [0, 10, 4, 20, 12, 30]  # offset 5 s: 4 is behind watermark 5, 12 behind 15
    lines = ["time"] + [str(base + dt.timedelta(seconds=s)) for s in secs]
    (in_dir / "e.csv").write_text("\n".join(lines) + "\n")
    for generator in (
        "max_diff_watermark(source => TABLE('e.csv'), time_field => DESCRIPTOR(time), offset => INTERVAL 5 SECONDS)",
        "percentile_watermark(source => TABLE('e.csv'), time_field => DESCRIPTOR(time), events => 2,"
        " percentile => 0, frequency => 1)",
    ):
        q = plan(f"SELECT time FROM {generator} e", late="adjust")
        got = sorted(r["time"].second for r in q.result().to_pylist())
        if generator.startswith("max_diff"):
            assert got == [0, 5, 10, 15, 20, 30] and q.stats.late == 2
        else:  # watermark = the latest of the last 2 times: 4 is behind 10 and 12 behind 20
            assert got == [0, 10, 10, 20, 20, 30] and q.stats.late == 2


def test_late_records_file_is_fresh_on_each_run(in_dir):
    write_events(in_dir / "events.csv", 800, seed=6, disorder_s=3, late_every=41)
    for _ in range(2):
        assert (
            cli(["query", THESIS_4_2, "--format", "batch-json", "--output", "out.json", "--late-records", "l.json"])
            == 0
        )
        late = (in_dir / "l.json").read_text().splitlines()
        _, expected = adjusted_rows(in_dir / "events.csv", OFFSET_US)
        assert len(late) == expected > 0  # not appended to the previous run's file
        assert all(set(json.loads(x)) == {"team", "time"} for x in late)


def test_late_policy_options_are_checked(in_dir, capsys):
    (in_dir / "e.csv").write_text("time\n2024-01-01 00:00:00\n")
    with pytest.raises(PlanError, match="give the file"):
        plan("SELECT * FROM 'e.csv'", late="file")
    with pytest.raises(PlanError, match="only applies to the 'file' policy"):
        plan("SELECT * FROM 'e.csv'", late="adjust", late_path="l.json")
    assert cli(["query", "SELECT * FROM 'e.csv'", "--late", "adjust", "--late-records", "l.json"]) == 2
    assert "only applies" in capsys.readouterr().err
