"""The stateful NEXMark queries (q4, q5, q7, q8) in tidal's Python API.

Each function takes the generator's Arrow tables (in arrival order) and returns a :class:`tidal.Stream`.
Sources are sorted by event time with Impatience sort, ``WATERMARK_MS`` behind the largest time seen
(the SQL files' ``max_diff_watermark`` offset); rows later than that are dropped.

* q5, q7, q8 are windowed, in Trill's temporal model: a window gives each event the window's lifetime,
  an aggregate gives one row per window and group, and a join pairs rows alive at the same instants, so
  joining two aggregates of the same windows pairs rows of the same window. Their results are intervals:
  ``windows(stream, size, hop)`` turns them into rows with a ``window_start`` column.
* q4 is a continuous query over the whole history, as Flink runs it: events are start edges (alive from
  their time on), the join pairs every auction with its bids, the aggregates revise their values as
  bids arrive, and ``final(stream)`` reads the answer at the end of the input.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

import tidal
from tidal import agg
from tidal.core.time import INFINITY

SECOND = 1_000  # the generator's times are milliseconds
WATERMARK_MS = 4 * SECOND


def _int_times(table: pa.Table) -> pa.Table:
    """Timestamps as int64 milliseconds (zero-copy), so lambdas compare them as numbers."""
    for i, field in enumerate(table.schema):
        if pa.types.is_timestamp(field.type):
            table = table.set_column(i, field.name, table.column(i).cast(pa.int64()))
    return table


def source(table: pa.Table, kind: str = "point", watermark_ms: int = WATERMARK_MS) -> tidal.Stream:
    """A NEXMark table as a stream on its ``date_time``, sorted with a watermark ``watermark_ms`` behind."""
    return tidal.from_arrow(
        _int_times(table), time="date_time", kind=kind, disorder="drop", reorder_latency=watermark_ms
    )


def q4(auction: pa.Table, bid: pa.Table) -> tidal.Stream:
    """Average winning price per category: the highest bid of each auction made while it was open."""
    auctions = source(auction.select(["id", "category", "date_time", "expires"]), kind="start")
    bids = source(bid.select(["auction", "price", "date_time"]), kind="start")
    pairs = auctions.join(
        bids,
        "id",
        "auction",
        result=lambda a, b: {
            "id": a.id,
            "category": a.category,
            "price": b.price,
            "t": b.date_time,
            "opened": a.date_time,
            "expires": a.expires,
        },
    ).where(lambda e: e.t >= e.opened and e.t <= e.expires)
    finals = pairs.group_aggregate(["id", "category"], final=agg.max("price"))
    return finals.group_aggregate("category", avg_final=agg.average("final"))


def q5(bid: pa.Table) -> tidal.Stream:
    """Hot items: per 10 s window every 2 s, the auctions with the most bids."""
    counts = source(bid.select(["auction", "date_time"])).hopping_window(10 * SECOND, 2 * SECOND)
    counts = counts.group_aggregate("auction", num=agg.count())
    most = counts.aggregate(maxn=agg.max("num"))
    return counts.join(most, "num", "maxn", result=lambda c, m: {"auction": c.auction, "num": c.num})


def q7(bid: pa.Table) -> tidal.Stream:
    """Highest bid: per 10 s tumbling window, the bids at the window's highest price."""
    bids = source(bid.select(["auction", "price", "bidder", "date_time", "extra"])).tumbling_window(10 * SECOND)
    highest = bids.aggregate(maxprice=agg.max("price"))
    return bids.join(
        highest,
        "price",
        "maxprice",
        result=lambda b, h: {
            "auction": b.auction,
            "price": b.price,
            "bidder": b.bidder,
            "date_time": b.date_time,
            "extra": b.extra,
        },
    )


def q8(person: pa.Table, auction: pa.Table) -> tidal.Stream:
    """New users: people who opened an auction in the 10 s window they registered in."""
    people = source(person.select(["id", "name", "date_time"])).tumbling_window(10 * SECOND)
    sellers = source(auction.select(["seller", "date_time"])).tumbling_window(10 * SECOND)
    people = people.select("id", "name").distinct()
    sellers = sellers.select("seller").distinct()
    return people.join(sellers, "id", "seller", result=lambda p, a: {"id": p.id, "name": p.name})


def windows(stream: tidal.Stream, size: int, hop: int) -> pa.Table:
    """A windowed result as rows: each output interval split at the hop grid, one row per window, with
    ``window_start`` (ms) first. A window aggregate's value over ``[k*hop, (k+1)*hop)`` is that of the window
    ending at ``(k+1)*hop``."""
    events = stream.to_intervals()
    sync = events.column("start").to_numpy()
    other = events.column("end").to_numpy()
    if np.any(other == INFINITY):
        raise ValueError("windows() reads windowed results; this stream has rows that never end")
    count = (other - sync) // hop
    rows = np.repeat(np.arange(len(sync)), count)
    step = np.arange(len(rows)) - np.repeat(np.cumsum(count) - count, count)
    start = np.repeat(sync, count) + step * hop + hop - size
    payload = events.drop_columns(["start", "end"]).take(pa.array(rows))
    return payload.add_column(0, "window_start", pa.array(start, pa.int64()))


def final(stream: tidal.Stream) -> pa.Table:
    """The snapshot at the end of the input of a continuous query (rows alive forever)."""
    lifetimes = stream.to_intervals()
    alive = lifetimes.filter(pa.compute.equal(lifetimes.column("end"), INFINITY))
    return alive.drop_columns(["start", "end"])
