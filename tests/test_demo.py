"""``tidal demo`` (the README's first command): its output agrees with a plain numpy computation."""

from __future__ import annotations

import re
from collections import Counter, defaultdict

import numpy as np

from tidal.cli import demo
from tidal.cli.main import main


def _reference(clicks, prices):
    """Per (minute, ad): clicks and spend over the clicks that are not late, computed plainly."""
    t = np.asarray(clicks["click_time"])
    ads = np.asarray(clicks["ad_id"])
    newest = -(2**62)
    price = {(p["ad"], p["start"]): p["cents"] for p in prices.to_pylist()}
    count, spend, late = Counter(), defaultdict(int), 0
    for time, ad in zip(t.tolist(), ads.tolist(), strict=True):
        if time < newest - demo.REORDER_LATENCY:
            late += 1
            continue
        newest = max(newest, time)
        key = (time // demo.MINUTE, ad)
        count[key] += 1
        spend[key] += price[(ad, time - time % demo.PRICE_PERIOD)]
    return late, count, spend


def test_demo_query_matches_a_plain_computation():
    clicks, prices = demo.generate(20_000, late_fraction=0.01, seed=3)
    late, count, spend = _reference(clicks, prices)
    assert late > 50  # the generator does make late clicks
    assert demo.late_reference(np.asarray(clicks["click_time"])) == late
    ordered, query = demo.build(clicks, prices)
    result = query.to_arrow().to_pylist()
    assert ordered.late_count() == late
    assert {(r["sync_time"] // demo.MINUTE, r["ad_id"]): r["clicks"] for r in result} == dict(count)
    assert {(r["sync_time"] // demo.MINUTE, r["ad_id"]): r["spend"] for r in result} == dict(spend)
    assert all(r["other_time"] - r["sync_time"] == demo.MINUTE for r in result)


def test_demo_command_prints_plan_late_count_and_next_steps(capsys):
    assert main(["demo", "--events", "20000", "--seed", "5"]) == 0
    out = capsys.readouterr().out
    clicks, prices = demo.generate(20_000, seed=5)
    late = demo.late_reference(np.asarray(clicks["click_time"]))
    assert "ImpatienceSort" in out and "Join" in out and "Aggregate" in out  # explain()
    assert re.search(r"M events/s", out)
    assert f"late: {late:,} clicks" in out
    assert f"clicks in windows: {20_000 - late:,} = 20,000 - {late:,} late" in out
    assert "What to try next" in out and "--engine spark" in out


def _plain(text: str) -> str:
    return re.sub(r"\x1b\[[0-9;?]*[a-zA-Z]", "", text)


def test_the_live_table_redraws_as_windows_close_and_ends_with_the_answer():
    import io

    from rich.console import Console

    clicks, prices = demo.generate(300_000, seed=11)
    screen = io.StringIO()
    got = demo.live(clicks, prices, Console(file=screen, force_terminal=True, width=120), pause=0)
    ordered, query = demo.build(clicks, prices)
    expected = query.to_arrow()
    assert sorted(map(str, got.to_pylist())) == sorted(map(str, expected.to_pylist()))
    frames = _plain(screen.getvalue()).split("busiest (minute, ad) windows so far")
    closed = [int(m.replace(",", "")) for m in re.findall(r"running: ([\d,]+) windows closed", "".join(frames))]
    assert len(frames) > 5 and closed == sorted(closed) and any(0 < c < expected.num_rows for c in closed)  # moving
    late = ordered.late_count()
    assert f"done: {expected.num_rows:,} windows closed" in frames[-1]
    assert f"late clicks dropped: {late:,}" in frames[-1]
    best = demo._top(expected, 1).to_pylist()[0]
    assert f"{best['spend'] / 100:,.2f}" in frames[-1]


def test_demo_live_flag_and_help_texts(capsys):
    assert main(["demo", "--events", "20000", "--seed", "5", "--live"]) == 0
    out = _plain(capsys.readouterr().out)
    assert "Live: the query's output as it arrives" in out and "done: " in out and "At full speed:" in out
    assert main(["demo", "--events", "20000", "--seed", "5"]) == 0  # not a terminal: no live table
    assert "busiest" not in capsys.readouterr().out
    helps = {}
    for command in ("demo", "explain", "run"):
        try:
            main([command, "--help"])
        except SystemExit:
            pass
        helps[command] = " ".join(capsys.readouterr().out.split())
    assert "--seed SEED seed of the generated clicks, delays and prices" in helps["demo"]
    assert "the stream plan of operators with their variants" in helps["explain"]
    assert "sql the query, as for tidal query" in helps["explain"]
    assert "WATERMARK FOR ts AS ts - INTERVAL '5' SECOND" in helps["run"]


def test_the_demo_read_through_head_ends_quietly():
    # `tidal demo | head -3`, as a shell runs it: no traceback, the status of a process ended by SIGPIPE
    import os
    import subprocess
    import sys
    from pathlib import Path

    # unbuffered: the first line reaches the pipe at once, and the rest is written after the reader left
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1]), "PYTHONUNBUFFERED": "1"}
    cmd = [sys.executable, "-m", "tidal.cli.main", "demo", "--events", "20000"]
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env) as child:
        first = child.stdout.readline().decode()
        child.stdout.close()
        err = child.stderr.read().decode()
        assert child.wait(timeout=300) == 141
    assert first.startswith("tidal demo: 20,000 ad clicks arriving out of order")
    assert err == ""
