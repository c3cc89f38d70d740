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
