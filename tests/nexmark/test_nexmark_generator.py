"""The NEXMark generator follows the benchmark's model: proportions, ids, hot items, event-time rate,
determinism, and a bounded out-of-order arrival."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pyarrow.compute as pc

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from nexmark.generator import Config, generate  # noqa: E402

CONFIG = Config(events=20_000, first_event_rate=1_000, seed=3)


def _ms(table, column="date_time"):
    return table.column(column).cast("int64").to_numpy()


def test_proportions_ids_and_rate():
    t = generate(CONFIG)
    n = CONFIG.events
    assert (t["person"].num_rows, t["auction"].num_rows, t["bid"].num_rows) == (n // 50, 3 * n // 50, 46 * n // 50)
    # consecutive ids from 1000, in creation order
    assert t["person"].column("id").to_pylist() == list(range(1000, 1000 + n // 50))
    assert t["auction"].column("id").to_pylist() == list(range(1000, 1000 + 3 * n // 50))
    # 1,000 events per second of event time: the last event is about 20 s after the first
    times = np.concatenate([_ms(t[k]) for k in ("person", "auction", "bid")])
    assert times.max() - times.min() == (n - 1) * 1_000 // CONFIG.first_event_rate
    assert np.all(_ms(t["auction"], "expires") > _ms(t["auction"]))
    assert set(t["auction"].column("category").to_pylist()) == set(range(10, 15))


def test_hot_auctions_and_bidders():
    bid = generate(CONFIG)["bid"]
    auction = bid.column("auction").to_numpy() - 1000
    bidder = bid.column("bidder").to_numpy() - 1000
    # hot auctions (ratio 2) are multiples of 100 and take about half the bids, hot bidders (ratio 4) 3/4
    assert 0.45 < np.mean(auction % 100 == 0) < 0.6
    assert 0.7 < np.mean(bidder % 100 == 1) < 0.8
    prices = bid.column("price").to_numpy()
    assert prices.min() >= 100 and prices.max() <= 100_000_000
    # channel ids: hot channels' urls carry none; most cold ones do
    cold = pc.starts_with(bid.column("channel"), "channel-")
    with_id = pc.match_substring(bid.column("url"), "channel_id=")
    assert not pc.any(pc.and_(pc.invert(cold), with_id)).as_py()
    assert 0.85 < pc.mean(pc.cast(pc.filter(with_id, cold), "int8")).as_py() < 0.95


def test_deterministic_per_seed():
    a, b = generate(CONFIG), generate(CONFIG)
    assert all(a[k].equals(b[k]) for k in a)
    assert not generate(Config(**{**CONFIG.__dict__, "seed": 4}))["bid"].equals(a["bid"])


def test_out_of_order_is_bounded_and_keeps_the_events():
    ordered = generate(CONFIG)
    late = generate(Config(**{**CONFIG.__dict__, "max_delay_ms": 500}))
    for name in ("person", "auction", "bid"):
        t = _ms(late[name])
        assert np.any(np.diff(t) < 0), name  # some rows arrive after later ones
        behind = np.maximum.accumulate(t) - t
        assert behind.max() <= 500, name
        assert (
            late[name]
            .sort_by([("date_time", "ascending"), ("extra", "ascending")])
            .equals(ordered[name].sort_by([("date_time", "ascending"), ("extra", "ascending")]))
        )
