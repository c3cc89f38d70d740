"""The NEXMark queries written for DuckDB over the same tables: the tests' oracle and the benchmark's peer.

Windows are ``time_bucket`` arithmetic and sessions gaps between consecutive bids (window functions), so
tidal's windows, watermarks and joins are checked against plain relational SQL. The refused queries
(``NOT_SUPPORTED`` in ``__init__``) have no entry."""

from __future__ import annotations

import duckdb
import pyarrow as pa

TEN = "INTERVAL 10 SECONDS"
RANKS = """count(*) AS total_bids,
    count(*) FILTER (WHERE price < 10000) AS rank1_bids,
    count(*) FILTER (WHERE price >= 10000 AND price < 1000000) AS rank2_bids,
    count(*) FILTER (WHERE price >= 1000000) AS rank3_bids"""
DISTINCTS = """count(DISTINCT bidder) AS total_bidders,
    count(DISTINCT bidder) FILTER (WHERE price < 10000) AS rank1_bidders,
    count(DISTINCT bidder) FILTER (WHERE price >= 10000 AND price < 1000000) AS rank2_bidders,
    count(DISTINCT bidder) FILTER (WHERE price >= 1000000) AS rank3_bidders,
    count(DISTINCT auction) AS total_auctions,
    count(DISTINCT auction) FILTER (WHERE price < 10000) AS rank1_auctions,
    count(DISTINCT auction) FILTER (WHERE price >= 10000 AND price < 1000000) AS rank2_auctions,
    count(DISTINCT auction) FILTER (WHERE price >= 1000000) AS rank3_auctions"""
CHANNEL_ID = "regexp_extract(url, '(&|^)channel_id=([^&]*)', 2)"

ORACLE = {
    "q0": "SELECT auction, bidder, price, date_time, extra FROM bid",
    "q1": "SELECT auction, bidder, CAST(price AS DOUBLE) * 0.908, date_time, extra FROM bid",
    "q2": "SELECT auction, price FROM bid WHERE auction % 123 = 0",
    "q3": """SELECT p.name, p.city, p.state, a.id FROM auction a, person p
             WHERE a.seller = p.id AND a.category = 10 AND p.state IN ('OR', 'ID', 'CA')""",
    "q4": """SELECT category, avg(final) FROM (
                 SELECT a.id, a.category, max(b.price) AS final FROM auction a, bid b
                 WHERE a.id = b.auction AND b.date_time >= a.date_time AND b.date_time <= a.expires
                 GROUP BY a.id, a.category) GROUP BY category""",
    # hop 10 s every 2 s: a bid at t is in the five windows starting at bucket(t) - 2k s, k = 0..4
    "q5": """WITH w AS (
                 SELECT auction, time_bucket(INTERVAL 2 SECONDS, date_time) - k * INTERVAL 2 SECONDS AS ws
                 FROM bid, range(5) r(k)),
             c AS (SELECT auction, ws, count(*) AS num FROM w GROUP BY auction, ws),
             m AS (SELECT ws, max(num) AS maxn FROM c GROUP BY ws)
             SELECT c.auction, c.num FROM c JOIN m ON c.ws = m.ws AND c.num >= m.maxn""",
    # ties broken as tidal breaks them (by every column, ascending); winning bids' times differ per seller
    "q6": """SELECT seller, avg(price) OVER (PARTITION BY seller ORDER BY date_time
                                             ROWS BETWEEN 10 PRECEDING AND CURRENT ROW) FROM (
                 SELECT a.id, a.seller, b.price, b.date_time,
                        row_number() OVER (PARTITION BY a.id, a.seller ORDER BY b.price DESC, b.date_time) AS rownum
                 FROM auction a JOIN bid b ON a.id = b.auction
                 WHERE b.date_time >= a.date_time AND b.date_time <= a.expires) WHERE rownum = 1""",
    "q7": f"""WITH h AS (SELECT time_bucket({TEN}, date_time) + {TEN} AS we, max(price) AS maxprice
                          FROM bid GROUP BY 1)
             SELECT b.auction, b.price, b.bidder, b.date_time, b.extra FROM bid b JOIN h
             ON b.price = h.maxprice AND b.date_time >= h.we - {TEN} AND b.date_time <= h.we""",
    "q8": f"""SELECT DISTINCT p.id, p.name, time_bucket({TEN}, p.date_time) FROM person p JOIN auction a
              ON p.id = a.seller AND time_bucket({TEN}, p.date_time) = time_bucket({TEN}, a.date_time)""",
    # ROW_NUMBER's ties broken as tidal breaks them: by every column, ascending
    "q9": """SELECT id, item_name, description, initial_bid, reserve, date_time, expires, seller, category, extra,
                    auction, bidder, price, bid_date_time, bid_extra FROM (
                 SELECT a.*, b.auction, b.bidder, b.price, b.date_time AS bid_date_time, b.extra AS bid_extra,
                        row_number() OVER (PARTITION BY a.id ORDER BY b.price DESC, b.date_time, b.bidder,
                                           b.channel, b.url, b.extra) AS rownum
                 FROM auction a JOIN bid b ON a.id = b.auction
                 WHERE b.date_time >= a.date_time AND b.date_time <= a.expires) WHERE rownum = 1""",
    "q10": """SELECT auction, bidder, price, date_time, extra, strftime(date_time, '%Y-%m-%d'),
                     strftime(date_time, '%H:%M') FROM bid""",
    # a session per bidder: consecutive bids less than 10 s apart; it ends 10 s after its last bid
    "q11": f"""WITH g AS (
                   SELECT bidder, date_time,
                          CASE WHEN date_time - lag(date_time) OVER w < {TEN} THEN 0 ELSE 1 END AS fresh
                   FROM bid WINDOW w AS (PARTITION BY bidder ORDER BY date_time)),
               s AS (SELECT *, sum(fresh) OVER (PARTITION BY bidder ORDER BY date_time, fresh DESC
                                               ROWS UNBOUNDED PRECEDING) AS sid FROM g)
               SELECT bidder, count(*), min(date_time), max(date_time) + {TEN} FROM s GROUP BY bidder, sid""",
    "q13": """SELECT b.auction, b.bidder, b.price, b.date_time, s.value FROM bid b
              JOIN side_input s ON b.auction % 10000 = s.key""",
    "q14": """SELECT auction, bidder, CAST(price AS DOUBLE) * 0.908,
                     CASE WHEN hour(date_time) BETWEEN 8 AND 18 THEN 'dayTime'
                          WHEN hour(date_time) <= 6 OR hour(date_time) >= 20 THEN 'nightTime'
                          ELSE 'otherTime' END,
                     date_time, extra, length(extra) - length(replace(extra, 'c', ''))
              FROM bid WHERE CAST(price AS DOUBLE) * 0.908 > 1000000 AND CAST(price AS DOUBLE) * 0.908 < 50000000""",
    "q15": f"SELECT strftime(date_time, '%Y-%m-%d'), {RANKS}, {DISTINCTS} FROM bid GROUP BY 1",
    "q16": f"""SELECT channel, strftime(date_time, '%Y-%m-%d'), max(strftime(date_time, '%H:%M')), {RANKS},
                      {DISTINCTS} FROM bid GROUP BY 1, 2""",
    "q17": f"""SELECT auction, strftime(date_time, '%Y-%m-%d'), {RANKS}, min(price), max(price), avg(price),
                      sum(price) FROM bid GROUP BY 1, 2""",
    "q18": """SELECT auction, bidder, price, channel, url, date_time, extra FROM (
                  SELECT *, row_number() OVER (PARTITION BY bidder, auction ORDER BY date_time DESC, price, channel,
                                               url, extra) AS rn FROM bid) WHERE rn = 1""",
    "q19": """SELECT * FROM (
                  SELECT *, row_number() OVER (PARTITION BY auction ORDER BY price DESC, bidder, channel, url,
                                               date_time, extra) AS rank_number FROM bid) WHERE rank_number <= 10""",
    "q20": """SELECT b.auction, b.bidder, b.price, b.channel, b.url, b.date_time, b.extra, a.item_name,
                     a.description, a.initial_bid, a.reserve, a.date_time, a.expires, a.seller, a.category, a.extra
              FROM bid b JOIN auction a ON b.auction = a.id WHERE a.category = 10""",
    "q21": f"""SELECT auction, bidder, price, channel,
                      CASE lower(channel) WHEN 'apple' THEN '0' WHEN 'google' THEN '1' WHEN 'facebook' THEN '2'
                                          WHEN 'baidu' THEN '3' ELSE {CHANNEL_ID} END
               FROM bid WHERE {CHANNEL_ID} <> '' OR lower(channel) IN ('apple', 'google', 'facebook', 'baidu')""",
    "q22": """SELECT auction, bidder, price, channel, split_part(url, '/', 4), split_part(url, '/', 5),
                     split_part(url, '/', 6) FROM bid""",
}

# the API versions' answers, windows named by their start (epoch ms); q7 in the API keeps a window's
# bids in [start, end), where Flink's SQL also takes a bid at exactly the window's end
API_ORACLE = {
    "q4": ORACLE["q4"],
    "q5": """WITH w AS (
                 SELECT auction, time_bucket(INTERVAL 2 SECONDS, date_time) - k * INTERVAL 2 SECONDS AS ws
                 FROM bid, range(5) r(k)),
             c AS (SELECT auction, ws, count(*) AS num FROM w GROUP BY auction, ws),
             m AS (SELECT ws, max(num) AS maxn FROM c GROUP BY ws)
             SELECT epoch_ms(c.ws), c.auction, c.num FROM c JOIN m ON c.ws = m.ws AND c.num = m.maxn""",
    "q7": f"""WITH h AS (SELECT time_bucket({TEN}, date_time) AS ws, max(price) AS maxprice FROM bid GROUP BY 1)
             SELECT epoch_ms(h.ws), b.auction, b.price, b.bidder, epoch_ms(b.date_time), b.extra FROM bid b JOIN h
             ON b.price = h.maxprice AND time_bucket({TEN}, b.date_time) = h.ws""",
    "q8": f"""SELECT DISTINCT epoch_ms(time_bucket({TEN}, p.date_time)), p.id, p.name FROM person p JOIN auction a
              ON p.id = a.seller AND time_bucket({TEN}, p.date_time) = time_bucket({TEN}, a.date_time)""",
}


def connect(tables: dict[str, pa.Table | str]) -> duckdb.DuckDBPyConnection:
    """A one-thread DuckDB connection where each name is an Arrow table or a view of a Parquet file."""
    con = duckdb.connect()
    con.execute("SET threads = 1")
    con.execute("SET TimeZone = 'UTC'")
    for table_name, table in tables.items():
        if isinstance(table, pa.Table):
            con.register(table_name, table)
        else:
            con.execute(f"CREATE VIEW {table_name} AS SELECT * FROM read_parquet('{table}')")
    return con


def answer(name: str, tables: dict[str, pa.Table | str], queries: dict[str, str] = ORACLE) -> pa.Table:
    """DuckDB's answer to query ``name`` (of ``queries``) over ``tables`` (Arrow tables or Parquet paths)."""
    con = connect(tables)
    result = con.sql(queries[name]).arrow()
    return result.read_all() if isinstance(result, pa.RecordBatchReader) else result
