"""A NEXMark event generator: people, auctions and bids of an online auction, as Arrow tables.

It follows the benchmark's published model (the Beam/Flink NEXMark generator), written here with
numpy over whole columns instead of one event at a time:

* Event number ``n`` (0, 1, 2, ...) is event id ``n``; ``n % 50`` picks its kind in the proportion
  person : auction : bid = 1 : 3 : 46 (configurable).
* Event time advances at ``first_event_rate`` events per second of event time:
  ``date_time = base_time + floor(n * 1e6 / rate) / 1000`` milliseconds.
* People and auctions get consecutive ids from 1000 in the order they are created. A bid names an
  auction: with probability ``1 - 1/hot_auction_ratio`` a *hot* one (the newest auction id rounded
  down to a multiple of 100), otherwise one of the ``num_in_flight_auctions`` latest (or up to 10
  ids ahead: bids may name auctions not yet seen). Bidders and sellers are chosen the same way
  among people (hot bidders: newest person id rounded down to 100, plus 1; hot sellers: rounded
  down to 100), otherwise among the ``num_active_people`` latest.
* Prices are ``round(10 ** (6u) * 100)`` for uniform ``u``; auctions expire at a random time up to
  twice the event-time horizon in which ``num_in_flight_auctions`` new auctions appear; categories
  are 10..14; states, cities and names come from the model's short lists; each row's ``extra``
  string pads it to the model's average size (person 200, auction 500, bid 100 bytes).
* Bids carry a ``channel`` (half of them one of four hot channels, the rest one of 10,000) and a
  ``url``; 90% of the cold channels' urls carry a ``channel_id=`` parameter.

Random strings are drawn from pools generated per seed (the model draws them character by character;
the distribution of lengths and letters is the model's). The same :class:`Config` (seed included)
always gives the same tables.

**Out of order**: ``max_delay_ms > 0`` gives each event an arrival delay drawn uniformly from
``[0, max_delay_ms]`` and orders every table by arrival (``date_time + delay``, ties by event id);
event times and contents are those of the in-order tables. An event then trails the largest event
time seen before it by at most ``max_delay_ms``, so a watermark that lags the largest time by that
much (``max_diff_watermark`` with ``offset => max_delay_ms``) finds no late event.

Tables are written as Parquet (``write(directory, config)``): ``person``, ``auction``, ``bid`` and
``side_input`` (``key, value``: the lookup table of query 13).
"""

from __future__ import annotations

import argparse
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

FIRST_PERSON_ID = 1000
FIRST_AUCTION_ID = 1000
FIRST_CATEGORY_ID = 10
NUM_CATEGORIES = 5
HOT_RATIO = 100  # hot ids are multiples of this
ID_LEAD = 10  # ids may run this far ahead of the newest one created
US_STATES = ["AZ", "CA", "ID", "OR", "WA", "WY"]
US_CITIES = [
    "Phoenix",
    "Los Angeles",
    "San Francisco",
    "Boise",
    "Portland",
    "Bend",
    "Redmond",
    "Seattle",
    "Kent",
    "Cheyenne",
]
FIRST_NAMES = ["Peter", "Paul", "Luke", "John", "Saul", "Vicky", "Kate", "Julie", "Sarah", "Deiter", "Walter"]
LAST_NAMES = ["Shultz", "Abrams", "Spencer", "White", "Bartels", "Walton", "Smith", "Jones", "Noris"]
HOT_CHANNELS = ["Google", "Facebook", "Baidu", "Apple"]
NUM_CHANNELS = 10_000
POOL = 4096  # random strings per pool

TIMESTAMP = pa.timestamp("ms")
PERSON_SCHEMA = pa.schema(
    [
        ("id", pa.int64()),
        ("name", pa.string()),
        ("email_address", pa.string()),
        ("credit_card", pa.string()),
        ("city", pa.string()),
        ("state", pa.string()),
        ("date_time", TIMESTAMP),
        ("extra", pa.string()),
    ]
)
AUCTION_SCHEMA = pa.schema(
    [
        ("id", pa.int64()),
        ("item_name", pa.string()),
        ("description", pa.string()),
        ("initial_bid", pa.int64()),
        ("reserve", pa.int64()),
        ("date_time", TIMESTAMP),
        ("expires", TIMESTAMP),
        ("seller", pa.int64()),
        ("category", pa.int64()),
        ("extra", pa.string()),
    ]
)
BID_SCHEMA = pa.schema(
    [
        ("auction", pa.int64()),
        ("bidder", pa.int64()),
        ("price", pa.int64()),
        ("channel", pa.string()),
        ("url", pa.string()),
        ("date_time", TIMESTAMP),
        ("extra", pa.string()),
    ]
)


@dataclass(frozen=True)
class Config:
    """The generator's parameters (defaults: the benchmark's)."""

    events: int = 100_000
    seed: int = 0
    first_event_rate: int = 10_000  # events per second of event time
    base_time_ms: int = 1_700_000_000_000  # 2023-11-14 22:13:20 UTC
    person_proportion: int = 1
    auction_proportion: int = 3
    bid_proportion: int = 46
    hot_auction_ratio: int = 2
    hot_sellers_ratio: int = 4
    hot_bidders_ratio: int = 4
    num_in_flight_auctions: int = 100
    num_active_people: int = 1000
    avg_person_bytes: int = 200
    avg_auction_bytes: int = 500
    avg_bid_bytes: int = 100
    max_delay_ms: int = 0  # out-of-order bound (0: in event-time order)
    side_input_rows: int = 10_000

    @property
    def total_proportion(self) -> int:
        return self.person_proportion + self.auction_proportion + self.bid_proportion

    def timestamp(self, n: np.ndarray) -> np.ndarray:
        """Event time (ms) of event numbers ``n``."""
        inter_event_us = 1_000_000.0 / self.first_event_rate
        return self.base_time_ms + (n * inter_event_us).astype(np.int64) // 1000


def last_person(config: Config, event_id: np.ndarray) -> np.ndarray:
    """Base-0 id of the newest person created at or before each event."""
    epoch, offset = np.divmod(event_id, config.total_proportion)
    return epoch * config.person_proportion + np.minimum(offset, config.person_proportion - 1)


def last_auction(config: Config, event_id: np.ndarray) -> np.ndarray:
    """Base-0 id of the newest auction created at or before each event."""
    p, a = config.person_proportion, config.auction_proportion
    epoch, offset = np.divmod(event_id, config.total_proportion)
    before = offset < p
    epoch = epoch - before
    offset = np.where(before | (offset >= p + a), a - 1, offset - p)
    return epoch * a + offset


def _below(rng: np.random.Generator, bound: np.ndarray) -> np.ndarray:
    """Uniform integers in ``[0, bound)`` per element."""
    return (rng.random(len(bound)) * bound).astype(np.int64)


def _some_person(config: Config, rng, event_id: np.ndarray) -> np.ndarray:
    people = last_person(config, event_id) + 1
    active = np.minimum(people, config.num_active_people)
    return people - active + _below(rng, active + ID_LEAD)


def _some_auction(config: Config, rng, event_id: np.ndarray) -> np.ndarray:
    newest = last_auction(config, event_id)
    low = np.maximum(newest - config.num_in_flight_auctions, 0)
    return low + _below(rng, newest - low + 1 + ID_LEAD)


def _price(rng, n: int) -> np.ndarray:
    return np.round(10.0 ** (rng.random(n) * 6.0) * 100.0).astype(np.int64)


def _words(rng, count: int, max_length: int, special: str = " ") -> list[str]:
    """``count`` random words: 3 to ``max_length - 1`` characters, each a letter or (1 in 13) ``special``,
    then stripped (the model's ``nextString``)."""
    lengths = 3 + rng.integers(0, max_length - 3, count)
    letters = 97 + rng.integers(0, 26, int(lengths.sum()))
    letters[rng.integers(0, 13, len(letters)) == 0] = ord(special)
    text = letters.astype(np.uint8).tobytes().decode("ascii")
    ends = np.cumsum(lengths).tolist()
    return [text[e - n : e].strip() for e, n in zip(ends, lengths.tolist(), strict=True)]


def _pool(rng, max_length: int, special: str = " ") -> pa.Array:
    return pa.array(_words(rng, POOL, max_length, special), pa.string())


def _extra_pool(rng, current_size: int, average: int) -> pa.Array:
    """Padding strings whose lengths follow the model: the average minus the row's size, +-20%."""
    want = average - current_size
    if want <= 0:
        return pa.array([""], pa.string())
    delta = round(want * 0.2)
    text = (97 + rng.integers(0, 26, 1 << 16)).astype(np.uint8).tobytes().decode("ascii")
    out = []
    for _ in range(POOL):
        size = want - delta + (int(rng.integers(2 * delta)) if delta else 0)
        start = int(rng.integers(len(text) - size))
        out.append(text[start : start + size])
    return pa.array(out, pa.string())


def _pick(rng, pool: pa.Array, n: int) -> pa.Array:
    return pool.take(pa.array(rng.integers(0, len(pool), n)))


def _reverse_bits(i: int) -> int:
    return int(f"{i & 0xFFFFFFFF:032b}"[::-1], 2)


def _channels(rng) -> tuple[list[str], list[str], list[str]]:
    """The four hot channels' urls, and the cold channels' names and urls (90% with a ``channel_id``)."""

    def base_urls(count: int) -> list[str]:
        parts = _words(rng, 3 * count, 5, "_")
        return [f"https://www.nexmark.com/{'/'.join(parts[3 * i : 3 * i + 3])}/item.htm?query=1" for i in range(count)]

    hot_urls = base_urls(len(HOT_CHANNELS))
    urls = base_urls(NUM_CHANNELS)
    with_id = rng.integers(0, 10, NUM_CHANNELS) > 0
    for i in np.flatnonzero(with_id).tolist():
        reversed_i = _reverse_bits(i)  # the model's abs(Integer.reverse(i)) on a signed 32-bit int
        urls[i] += f"&channel_id={(1 << 32) - reversed_i if reversed_i >= 1 << 31 else reversed_i}"
    return hot_urls, [f"channel-{i}" for i in range(NUM_CHANNELS)], urls


def _ms(values: np.ndarray) -> pa.Array:
    return pa.array(values.astype("datetime64[ms]"), TIMESTAMP)


def _people(config: Config, rng, ids: np.ndarray, times: np.ndarray) -> pa.Table:
    n = len(ids)
    first = np.array(FIRST_NAMES, dtype=object)[rng.integers(0, len(FIRST_NAMES), n)]
    last = np.array(LAST_NAMES, dtype=object)[rng.integers(0, len(LAST_NAMES), n)]
    cards = rng.integers(0, 10_000, (n, 4))
    local, domain = _pool(rng, 7), _pool(rng, 5)
    emails = pc.binary_join_element_wise(_pick(rng, local, n), _pick(rng, domain, n), "@")
    extra = _extra_pool(rng, 8 + 12 + 14 + 19 + 8 + 2, config.avg_person_bytes)
    return pa.table(
        [
            pa.array(last_person(config, ids) + FIRST_PERSON_ID),
            pa.array(first + " " + last, pa.string()),
            pc.binary_join_element_wise(emails, pa.scalar(".com"), ""),
            pa.array([" ".join(f"{c:04d}" for c in row) for row in cards.tolist()], pa.string()),
            pa.array(np.array(US_CITIES, dtype=object)[rng.integers(0, len(US_CITIES), n)], pa.string()),
            pa.array(np.array(US_STATES, dtype=object)[rng.integers(0, len(US_STATES), n)], pa.string()),
            _ms(times),
            _pick(rng, extra, n),
        ],
        schema=PERSON_SCHEMA,
    )


def _auctions(config: Config, rng, ids: np.ndarray, numbers: np.ndarray, times: np.ndarray) -> pa.Table:
    n = len(ids)
    hot = rng.integers(0, config.hot_sellers_ratio, n) > 0
    hot_seller = (last_person(config, ids) // HOT_RATIO) * HOT_RATIO
    seller = np.where(hot, hot_seller, _some_person(config, rng, ids)) + FIRST_PERSON_ID
    category = FIRST_CATEGORY_ID + rng.integers(0, NUM_CATEGORIES, n)
    initial = _price(rng, n)
    ahead = (config.num_in_flight_auctions * config.total_proportion) // config.auction_proportion
    horizon = config.timestamp(numbers + ahead) - times
    expires = times + 1 + _below(rng, np.maximum(horizon * 2, 1))
    reserve = initial + _price(rng, n)
    names, descriptions = _pool(rng, 20), _pool(rng, 100)
    extra = _extra_pool(rng, 8 + 10 + 50 + 40, config.avg_auction_bytes)
    return pa.table(
        [
            pa.array(last_auction(config, ids) + FIRST_AUCTION_ID),
            _pick(rng, names, n),
            _pick(rng, descriptions, n),
            pa.array(initial),
            pa.array(reserve),
            _ms(times),
            _ms(expires),
            pa.array(seller),
            pa.array(category),
            _pick(rng, extra, n),
        ],
        schema=AUCTION_SCHEMA,
    )


def _bids(config: Config, rng, ids: np.ndarray, times: np.ndarray) -> pa.Table:
    n = len(ids)
    hot_auction = rng.integers(0, config.hot_auction_ratio, n) > 0
    auction = np.where(
        hot_auction, (last_auction(config, ids) // HOT_RATIO) * HOT_RATIO, _some_auction(config, rng, ids)
    )
    hot_bidder = rng.integers(0, config.hot_bidders_ratio, n) > 0
    bidder = np.where(
        hot_bidder, (last_person(config, ids) // HOT_RATIO) * HOT_RATIO + 1, _some_person(config, rng, ids)
    )
    price = _price(rng, n)
    hot_urls, names, urls = _channels(rng)
    channel_names = pa.array(HOT_CHANNELS + names, pa.string())
    channel_urls = pa.array(hot_urls + urls, pa.string())
    hot_channel = rng.integers(0, 2, n) > 0
    which = np.where(
        hot_channel, rng.integers(0, len(HOT_CHANNELS), n), len(HOT_CHANNELS) + rng.integers(0, NUM_CHANNELS, n)
    )
    extra = _extra_pool(rng, 32, config.avg_bid_bytes)
    return pa.table(
        [
            pa.array(auction + FIRST_AUCTION_ID),
            pa.array(bidder + FIRST_PERSON_ID),
            pa.array(price),
            channel_names.take(pa.array(which)),
            channel_urls.take(pa.array(which)),
            _ms(times),
            _pick(rng, extra, n),
        ],
        schema=BID_SCHEMA,
    )


def generate(config: Config = Config()) -> dict[str, pa.Table]:
    """The ``person``, ``auction`` and ``bid`` tables (and ``side_input``), each in arrival order."""
    rng = np.random.default_rng(config.seed)
    numbers = np.arange(config.events, dtype=np.int64)
    ids = numbers  # the first event id is 0
    times = config.timestamp(numbers)
    # delays from a stream of their own: the same seed gives the same events in any arrival order
    delays = np.random.default_rng([config.seed, 1])
    delay = delays.integers(0, config.max_delay_ms + 1, config.events) if config.max_delay_ms > 0 else None
    kind = ids % config.total_proportion
    is_person = kind < config.person_proportion
    is_auction = ~is_person & (kind < config.person_proportion + config.auction_proportion)
    is_bid = ~(is_person | is_auction)
    tables = {
        "person": _people(config, rng, ids[is_person], times[is_person]),
        "auction": _auctions(config, rng, ids[is_auction], numbers[is_auction], times[is_auction]),
        "bid": _bids(config, rng, ids[is_bid], times[is_bid]),
    }
    if delay is not None:
        for name, mask in (("person", is_person), ("auction", is_auction), ("bid", is_bid)):
            order = np.lexsort((ids[mask], times[mask] + delay[mask]))
            tables[name] = tables[name].take(pa.array(order))
    keys = np.arange(config.side_input_rows, dtype=np.int64)
    tables["side_input"] = pa.table({"key": keys, "value": pa.array(keys.astype(str), pa.string())})
    return tables


def write(directory: str | Path, config: Config = Config()) -> dict[str, Path]:
    """Generate and write each table as ``<directory>/<name>.parquet``; returns the paths."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    paths = {}
    for name, table in generate(config).items():
        paths[name] = directory / f"{name}.parquet"
        pq.write_table(table, paths[name])
    return paths


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description="Write NEXMark person/auction/bid tables as Parquet.")
    ap.add_argument("directory")
    for field, value in asdict(Config()).items():
        ap.add_argument("--" + field.replace("_", "-"), type=int, default=value)
    args = vars(ap.parse_args(argv))
    directory = args.pop("directory")
    for name, path in write(directory, Config(**args)).items():
        print(name, path)


if __name__ == "__main__":
    main()
