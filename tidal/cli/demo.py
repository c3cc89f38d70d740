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

import sys
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


def build(clicks: pa.Table, prices: pa.Table, batch_size: int | None = None, live: bool = False):
    """(the sorted click stream, the query: spend per ad per minute); ``live``: for :func:`live`."""
    import tidal

    sizing = {} if batch_size is None else {"batch_size": batch_size}
    ordered = tidal.from_arrow(clicks, time="click_time", disorder="drop", reorder_latency=REORDER_LATENCY, **sizing)
    return ordered, spend_per_minute(ordered, prices, live)


def spend_per_minute(clicks, prices: pa.Table, live: bool = False):
    """The query over a click stream: each click joined with its ad's price at the click's time, then
    clicks and spend per ad per one-minute window. ``live``: the prices punctuate every minute, so the
    join's output (each closed window's row) advances with the clicks instead of waiting for the end of
    the prices; the answer is the same, the punctuations cost a little."""
    import tidal
    from tidal import agg

    punctuate = {"punctuate_every": MINUTE} if live else {}
    price = tidal.from_arrow(prices, time="start", end="end", **punctuate)
    return (
        clicks.join(price, "ad_id", "ad", lambda c, p: {"ad_id": c.ad_id, "cents": p.cents})
        .tumbling_window(MINUTE)
        .group_aggregate("ad_id", clicks=agg.count(), spend=agg.sum("cents"))
    )


def late_reference(times: np.ndarray, latency: int = REORDER_LATENCY) -> int:
    """Clicks behind the watermark when they arrive: earlier than (newest time so far - latency)."""
    newest_before = np.maximum.accumulate(np.concatenate([[np.iinfo(np.int64).min + latency], times[:-1]]))
    return int((times < newest_before - latency).sum())


def _top(result: pa.Table, n: int = 5) -> pa.Table:
    keys = [("spend", "descending"), ("sync_time", "ascending"), ("ad_id", "ascending")]
    return result.sort_by(keys).slice(0, n)


def _window_text(row) -> str:
    return f"[{row['sync_time'] // MINUTE:>3}, {row['other_time'] // MINUTE:>3}) min"


def live(clicks: pa.Table, prices: pa.Table, console, pause: float = 0.03) -> pa.Table:
    """Run the query step by step (one message at a time), redrawing the busiest closed windows so far
    and the late count as the output arrives; ``pause`` seconds between steps make it watchable.
    Returns the whole answer (the same as ``query.to_arrow()``)."""
    from rich.console import Group
    from rich.live import Live
    from rich.table import Table
    from rich.text import Text

    from tidal.io.egress import CallbackSink
    from tidal.plan.nodes import sorts_in

    ordered, spend = build(clicks, prices, batch_size=25_000, live=True)
    sorts = sorts_in(spend.node)  # their counters move as the run goes (late_count() waits for its end)
    parts: list[pa.RecordBatch] = []
    query = spend.query(sink=CallbackSink(parts.append))

    def view(done: bool) -> Group:
        result = pa.Table.from_batches(parts) if parts else None
        table = Table(title="busiest (minute, ad) windows so far" + ("" if done else " (closed windows only)"))
        for name in ("window", "ad", "clicks", "spend $"):
            table.add_column(name, justify="right")
        rows = _top(result, 8).to_pylist() if result is not None else []
        for row in rows:
            table.add_row(_window_text(row), str(row["ad_id"]), f"{row['clicks']:,}", f"{row['spend'] / 100:,.2f}")
        closed = result.num_rows if result is not None else 0
        minute = int(np.asarray(result["other_time"]).max()) // MINUTE if closed else 0
        status = (
            f"{'done' if done else 'running'}: {closed:,} windows closed, up to minute {minute}; "
            f"late clicks dropped: {sum(s.stats.late for s in sorts):,}"
        )
        return Group(table, Text(status, style="bold" if done else "dim"))

    with Live(view(False), console=console, auto_refresh=False) as screen:
        while not query.run(max_messages=1):
            screen.update(view(False), refresh=True)
            time.sleep(pause)
        screen.update(view(True), refresh=True)
    return pa.Table.from_batches(parts)


def on_spark(clicks: pa.Table, prices: pa.Table, embedded: pa.Table, master: str | None) -> bool:
    """The same query inside Spark tasks (tidal.spark.to_arrow); prints Spark's steps, the timing and whether
    the answer equals the embedded one (returned)."""
    import tidal.spark

    ordered, spark_query = build(clicks, prices)
    print(
        "\nThe same query inside Spark tasks (tidal.spark.to_arrow). Which clicks are late depends on the order\n"
        "they arrived in, which a Spark shuffle does not keep: tidal sorts the clicks before handing them to\n"
        "Spark; the temporal join, the windows and the aggregates run in Spark tasks, partitioned by ad:"
    )
    spark = tidal.spark.spark_session(master)
    print(tidal.spark.explain(spark_query))
    started = time.perf_counter()
    got = tidal.spark.to_arrow(spark_query, spark=spark)
    elapsed = time.perf_counter() - started

    def rows(table: pa.Table) -> list:
        return sorted(tuple(r.values()) for r in table.select(embedded.column_names).to_pylist())

    same = rows(got) == rows(embedded)
    print(
        f"Spark: {got.num_rows:,} (minute, ad) rows in {elapsed:.1f} s (Spark's start and task overheads dominate "
        f"at this size), {ordered.late_count():,} late clicks dropped; "
        f"{'the same answer as the embedded engine' if same else 'DIFFERENT from the embedded answer'}"
    )
    return same


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
    show_live = sys.stdout.isatty() if args.live is None else args.live
    if show_live:
        from rich.console import Console

        print("Live: the query's output as it arrives (replayed at a watchable pace):")
        live(clicks, prices, Console(force_terminal=True))
        print("\nAt full speed:")
    from tidal.stream.progress import paused

    with paused():  # a timed run: no progress line to draw
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
    print("top (minute, ad) by spend:")
    for row in _top(result).to_pylist():
        print(f"  {_window_text(row)}  ad {row['ad_id']:>3}  {row['clicks']:>4} clicks  {row['spend'] / 100:>8.2f} $")
    same = True
    if args.engine == "spark":
        same = on_spark(clicks, prices, result, args.spark_master)
    print(
        "\nWhat to try next:\n"
        "  tidal demo --events 5000000                  a bigger stream\n"
        "  tidal demo --engine spark                    the same query inside Spark tasks (needs pyspark and Java 17)\n"
        "  cd examples && tidal run goals.sql           Flink-style SQL: CREATE TABLE ... WATERMARK FOR, INSERT INTO\n"
        "  tidal                                        the SQL shell (tables, views, queries; .help)\n"
        "  cd examples && tidal query \"SELECT team, COUNT(*) FROM 'goals.csv' GROUP BY team\"   SQL over files\n"
        "  mkdocs serve                                 the docs (pages per operator family, SQL, Spark, durability)\n"
        "  tidal/cli/demo.py                            this demo's source: change the window, latency or policy"
    )
    return 0 if same else 1
