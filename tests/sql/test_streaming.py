"""Event-time SQL: the thesis's worked examples (seed 002, sections 2.5 and 2.9.8), late records,
errors a person can act on, and the rewrite rules."""

from __future__ import annotations

import csv
import datetime as dt
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tidal.cli.main import main as cli
from tidal.core.errors import InputError, PlanError
from tidal.ops.watermark import late_mask
from tidal.sql import SqlSyntaxError, SqlTypeError, max_diff_watermarks, percentile_watermarks, plan


def test_max_diff_watermark_worked_example():
    # offset 2, times 3, 4, 1, 5, 2 -> 3; then 7 -> 5
    marks = max_diff_watermarks(np.array([3, 4, 1, 5, 2, 7]), 2)
    assert marks[4] == 3 and marks[5] == 5


def test_percentile_watermark_worked_example():
    # events 5, frequency 5, percentile 20: times 4, 7, 2, 3, 8 -> 7; then 10, 9 -> 9
    marks = percentile_watermarks(np.array([4, 7, 2, 3, 8, 10, 9]), events=5, percentile=20, frequency=5)
    assert marks[4] == 7 and marks[6] == 9
    assert (marks[:4] == np.iinfo(np.int64).min).all()  # nothing is computed before `frequency` records


def test_late_records_are_behind_the_watermark_before_they_arrive():
    times = np.array([10, 20, 15, 30, 17])
    assert late_mask(times, max_diff_watermarks(times, 4)).tolist() == [False, False, True, False, True]


def _write_times(path, times, extra=None):
    lines = ["team,time"] + [f"{extra or 't'},{t}" for t in times]
    path.write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize(
    ("offset", "expected"),
    [
        (3, [("10:53", "11:03"), ("11:13", "11:23"), ("11:23", "11:33"), ("11:33", "11:43")]),
        (1, [("11:01", "11:11"), ("11:11", "11:21"), ("11:21", "11:31"), ("11:41", "11:51")]),
    ],
)
def test_tumble_worked_example(in_dir, offset, expected):
    # window length 10 minutes; event times 11:02, 11:13, 11:27, 11:41
    _write_times(in_dir / "e.csv", [f"2024-01-01 {t}:00" for t in ("11:02", "11:13", "11:27", "11:41")])
    q = plan(
        "SELECT time, window_start, window_end FROM tumble(source => TABLE('e.csv'), time_field => DESCRIPTOR(time),"
        f" window_length => INTERVAL 10 MINUTES, offset => INTERVAL {offset} MINUTES) e ORDER BY time"
    )
    rows = q.result().to_pylist()
    got = [(r["window_start"].strftime("%H:%M"), r["window_end"].strftime("%H:%M")) for r in rows]
    assert got == expected


def test_max_diff_watermark_drops_and_counts_late_rows(in_dir):
    base = dt.datetime(2024, 1, 1)
    secs = [0, 10, 4, 20, 12, 30, 29]  # offset 5 s: 4 is late (wm 5), 12 is late (wm 15); 29 is not (wm 25)
    _write_times(in_dir / "e.csv", [(base + dt.timedelta(seconds=s)).isoformat(sep=" ") for s in secs])
    q = plan(
        "SELECT time FROM max_diff_watermark(source => TABLE('e.csv'), time_field => DESCRIPTOR(time),"
        " offset => INTERVAL 5 SECONDS) e",
        late_path=str(in_dir / "late.json"),
    )
    got = sorted(r["time"].second for r in q.result().to_pylist())
    assert got == [0, 10, 20, 29, 30]
    assert q.stats.late == 2
    late = [json.loads(x)["time"] for x in (in_dir / "late.json").read_text().splitlines()]
    assert [t[-2:] for t in late] == ["04", "12"]


def test_errors_name_the_place(in_dir):
    (in_dir / "a.csv").write_text("x,y\n1,a\n2,b,c\n3,d\n")
    with pytest.raises(SqlSyntaxError) as err:
        plan("SELECT x FROM 'a.csv' WHERE x = = 1")
    assert "^" in str(err.value) and "SELECT x FROM 'a.csv' WHERE x = = 1" in str(err.value)
    with pytest.raises(InputError, match="missing.csv"):
        plan("SELECT * FROM 'missing.csv'")
    with pytest.raises(InputError, match=r"a.csv: line 3, column 3"):
        plan("SELECT * FROM 'a.csv'").result()
    q = plan("SELECT * FROM 'a.csv'", on_error="skip")
    assert q.result().num_rows == 2 and q.stats.skipped == 1
    with pytest.raises(SqlTypeError, match=r"x \+ y"):
        plan("SELECT x + y FROM 'a.csv'", on_error="skip")
    with pytest.raises(PlanError, match="unknown column z"):
        plan("SELECT z FROM 'a.csv'")


def test_rewrites_push_filters_and_columns_into_the_scan(in_dir):
    (in_dir / "a.csv").write_text("x,y,z\n1,a,5\n2,b,6\n3,c,7\n")
    q = plan("SELECT s.y FROM (SELECT x, y, z FROM 'a.csv') s WHERE s.x > 1 + 0 AND upper(s.y) <> 'Q'")
    assert q.rules_applied == ["fold_constants", "push_filters", "prune_columns", "drop_identity_projections"]
    text = q.explain()
    assert 'pushed filter "x" > 1' in text and "columns ['x', 'y']" in text
    assert sorted(q.result().column(0).to_pylist()) == ["b", "c"]


def test_stream_json_net_effect_equals_batch_json(in_dir, capsys):
    (in_dir / "a.csv").write_text("x,y\n1,a\n2,b\n3,c\n")
    sql = "SELECT y, x * 2 AS d FROM 'a.csv' WHERE x <> 2"
    for fmt in ("stream-json", "batch-json"):
        assert cli(["query", sql, "--format", fmt, "--output", fmt]) == 0
    net: dict = {}
    for line in (in_dir / "stream-json").read_text().splitlines():
        rec = json.loads(line)
        undo = rec.pop("sys.undo", False)
        key = json.dumps(rec, sort_keys=True)
        net[key] = net.get(key, 0) + (-1 if undo else 1)
    batch = sorted(json.dumps(json.loads(x), sort_keys=True) for x in (in_dir / "batch-json").read_text().splitlines())
    assert sorted(k for k, n in net.items() for _ in range(n)) == batch
    assert list(json.loads((in_dir / "stream-json").read_text().splitlines()[0])) == ["y", "d"]  # SELECT order


def test_live_csv_quotes_values_as_csv_does(in_dir):
    odd = 'a,b "quoted"\nnext line'
    rows = [{"y": odd, "x": 1}, {"y": "plain", "x": 2}, {"y": None, "x": 3}]
    (in_dir / "a.json").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert cli(["query", "SELECT y, x FROM 'a.json'", "--format", "live-csv", "--output", "out.csv"]) == 0
    text = (in_dir / "out.csv").read_text()
    with open(in_dir / "out.csv", newline="") as fh:
        got = list(csv.reader(fh))
    assert got == [["sys.undo", "y", "x"], ["false", odd, "1"], ["false", "plain", "2"], ["false", "", "3"]]
    assert text.endswith("false,plain,2\nfalse,,3\n")  # values needing no quotes are written as before


def test_stream_json_into_a_reader_that_stops_early_ends_quietly(in_dir):
    # `tidal query ... | head -1`: once the reader has gone, the CLI stops without a traceback, with the
    # conventional status of a process that wrote into a closed pipe
    (in_dir / "a.csv").write_text("x\n" + "".join(f"{i}\n" for i in range(200_000)))
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    cmd = [sys.executable, "-m", "tidal.cli.main", "query", "SELECT x FROM 'a.csv'", "--format", "stream-json"]
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env) as child:
        assert json.loads(child.stdout.readline()) == {"x": 0}
        child.stdout.close()
        err = child.stderr.read().decode()
        assert child.wait(timeout=120) == 141  # 128 + SIGPIPE, as cat and seq end
    assert "Traceback" not in err and "BrokenPipe" not in err and err == ""


def test_parquet_and_ipc_are_scanned_by_pyarrow_dataset_and_csv_by_its_reader(in_dir, monkeypatch):
    import io

    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.feather as feather
    import pyarrow.parquet as pq

    from tidal.io import files

    ns = pa.array([dt.datetime(2024, 1, 1, 0, 0, s) for s in range(4)], pa.timestamp("ns"))
    table = pa.table({"a": [1, 2, 3, None], "b": ["w", "x,y", 'q"', None], "t": ns})
    pq.write_table(table, "t.parquet")
    feather.write_feather(table, "t.feather")
    with pa.OSFile("t.arrow", "wb") as fh, pa.ipc.new_stream(fh, table.schema) as stream:  # a stream, not a file
        stream.write_table(table)
    (in_dir / "t.csv").write_text('a,b,t\n1,w,2024-01-01 00:00:00\n2,"x,y",2024-01-01 00:00:01\n3,"q""",\n,,\n')
    expected = pa.table({"a": [2, 3], "b": ["x,y", 'q"'], "t": ns.cast(pa.timestamp("us"))[1:3]})
    calls = []
    read_csv = files._read_csv
    monkeypatch.setattr(files, "_read_csv", lambda *a: calls.append(a[0]) or read_csv(*a))
    for path in ("t.parquet", "t.feather", "t.arrow", "t.csv"):
        got = files.read_file(
            path, columns=["a", "b", "t"], predicate=pc.field("a") > 1, schema=files.file_schema(path)
        )
        want = expected if path != "t.csv" else expected.set_column(2, "t", pa.array([expected["t"][0], None]))
        assert got.table.equals(want), path
        with open(path, "rb") as fh:  # the same bytes on standard input
            monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(fh.read())))
        stdin = "stdin" + os.path.splitext(path)[1]
        assert files.read_file(stdin, columns=["a", "b", "t"], predicate=pc.field("a") > 1).table.equals(want), stdin
    assert calls == ["t.csv", "stdin.csv"]  # CSV: pyarrow's CSV reader (projected columns only, all cores)
    (in_dir / "bad.csv").write_text("x,y\n1,a\n2,b,c\n3,d\n")
    with pytest.raises(InputError, match=r"bad.csv: line 3, column 3: malformed row"):
        files.read_file("bad.csv")
    got = files.read_file("bad.csv", on_error="skip", predicate=pc.field("x") > 1)
    assert got.table.to_pylist() == [{"x": 3, "y": "d"}] and (got.skipped, got.skipped_lines) == (1, [3])
    assert calls == ["t.csv", "stdin.csv", "bad.csv", "bad.csv"]
