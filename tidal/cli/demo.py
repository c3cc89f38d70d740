"""``tidal demo``: what tidal is for, on the embedded engine, in a few seconds.

A generated ad-click stream arrives out of order (most clicks a few seconds late, a few of them
much later). tidal sorts it with Impatience sort under a reorder latency, counts (and drops) the
clicks that arrive behind the watermark, joins each click with the price its ad had *at the
click's time* (a temporal join against a stream of price intervals), and aggregates spend per ad
in one-minute tumbling windows. The demo prints the plan, throughput, the late count, the
busiest windows, and what to try next.

Time is in milliseconds. :func:`generate` and :func:`build` are what the test checks against a
plain numpy computation (``tests/test_demo.py``).
"""

from __future__ import annotations

import time

import numpy as np
import pyarrow as pa

MINUTE = 60_000  # ticks are milliseconds
REORDER_LATENCY = 5_000  # clicks up to 5 s behind the newest one are put back in order
PRICE_PERIOD = 10 * MINUTE  # every ad's price changes every 10 minutes


def generate(events: int, ads: int = 50, late_fraction: float = 0.002, seed: int = 7):
    """(clicks in arrival order, price intervals). A click's delay is 0-4 s, or 10-60 s for a
    ``late_fraction`` of them; clicks are ordered by arrival (event time + delay)."""
    rng = np.random.default_rng(seed)
    span = max(events // 200, 1) * 1_000  # about 200 clicks a second
    t = np.sort(rng.integers(0, span, events))
    delay = rng.integers(0, 4_000, events)
    slow = rng.random(events) < late_fraction
    delay[slow] = rng.integers(10_000, 60_000, int(slow.sum()))
    arrival = np.argsort(t + delay, kind="stable")
    clicks = pa.table(
        {
            "click_time": t[arrival],
            "user_id": rng.integers(0, 100_000, events)[arrival],
            "ad_id": rng.integers(0, ads, events)[arrival],
        }
    )
    starts = np.arange(0, span + PRICE_PERIOD, PRICE_PERIOD)
    ad_ids = np.repeat(np.arange(ads), len(starts))
    start = np.tile(starts, ads)
    prices = pa.table(
        {
            "start": start,
            "end": start + PRICE_PERIOD,
            "ad": ad_ids,
            "cents": rng.integers(5, 100, len(start)),
        }
    ).sort_by([("start", "ascending"), ("ad", "ascending")])
    return clicks, prices


def build(clicks: pa.Table, prices: pa.Table):
    """(the sorted click stream, the query: spend per ad per minute)."""
    import tidal
    from tidal import agg

    ordered = tidal.from_arrow(clicks, time="click_time", disorder="drop", reorder_latency=REORDER_LATENCY)
    price = tidal.from_arrow(prices, time="start", end="end")
    spend = (
        ordered.join(price, "ad_id", "ad", lambda c, p: {"ad_id": c.ad_id, "cents": p.cents})
        .tumbling_window(MINUTE)
        .group_aggregate("ad_id", clicks=agg.count(), spend=agg.sum("cents"))
    )
    return ordered, spend


def late_reference(times: np.ndarray, latency: int = REORDER_LATENCY) -> int:
    """Clicks behind the watermark when they arrive: earlier than (newest time so far - latency)."""
    newest_before = np.maximum.accumulate(np.concatenate([[np.iinfo(np.int64).min + latency], times[:-1]]))
    return int((times < newest_before - latency).sum())


def run(args) -> int:
    n = args.events
    clicks, prices = generate(n, seed=args.seed)
    print(
        f"tidal demo: {n:,} ad clicks arriving out of order (most up to 4 s late, ~0.2% 10-60 s late),\n"
        f"joined with each ad's price at the time of the click, spend per ad per 1-minute window.\n"
    )
    ordered, spend = build(clicks, prices)
    warm_clicks, warm_prices = generate(2_000, seed=args.seed)
    build(warm_clicks, warm_prices)[1].to_arrow()  # compiles the kernels (about 10 s once; cached on disk)
    print("The plan (stream.explain()):")
    print(spend.explain(), "\n")
    started = time.perf_counter()
    result = spend.to_arrow()
    elapsed = time.perf_counter() - started
    late = ordered.late_count()
    print(
        f"{n:,} clicks in {elapsed:.2f} s ({n / elapsed / 1e6:.2f} M events/s, including the sort and the join); "
        f"{result.num_rows:,} (minute, ad) rows out"
    )
    print(
        f"late: {late:,} clicks arrived more than {REORDER_LATENCY // 1000} s behind the newest click "
        f"and were dropped (counted by ordered.late_count(); disorder='adjust' keeps them)"
    )
    counted = int(np.asarray(result["clicks"]).sum())
    print(f"clicks in windows: {counted:,} = {n:,} - {late:,} late\n")
    top = result.sort_by([("spend", "descending"), ("sync_time", "ascending"), ("ad_id", "ascending")]).slice(0, 5)
    print("top (minute, ad) by spend:")
    for row in top.to_pylist():
        minute = f"[{row['sync_time'] // MINUTE:>3}, {row['other_time'] // MINUTE:>3}) min"
        print(f"  {minute}  ad {row['ad_id']:>3}  {row['clicks']:>4} clicks  {row['spend'] / 100:>8.2f} $")
    print(
        "\nWhat to try next:\n"
        "  tidal demo --events 5000000                  a bigger stream\n"
        "  cd examples && tidal query \"SELECT team, COUNT(*) FROM 'goals.csv' GROUP BY team\"   SQL over files\n"
        '  tidal query "..." --engine spark             the same SQL inside Spark tasks (needs pyspark and Java 17)\n'
        "  mkdocs serve                                 the docs (pages per operator family, SQL, Spark, durability)\n"
        "  tidal/cli/demo.py                            this demo's source: change the window, latency or policy"
    )
    return 0
