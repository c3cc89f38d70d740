"""The NEXMark queries in Spark SQL (batch, over the same Parquet tables): the benchmark's Spark peer.

Windows are Spark's ``window(date_time, '10 seconds'[, '2 seconds'])`` grouping; the rest is the
relational text of Flink's suite. Only q0-q5, q7 and q8 are written here (the queries the aim of
issue 17 names, q6 aside: Flink does not run it either)."""

from __future__ import annotations

TEN = "INTERVAL 10 SECONDS"

SPARK = {
    "q0": "SELECT auction, bidder, price, date_time, extra FROM bid",
    "q1": "SELECT auction, bidder, 0.908 * price AS price, date_time, extra FROM bid",
    "q2": "SELECT auction, price FROM bid WHERE auction % 123 = 0",
    "q3": """SELECT p.name, p.city, p.state, a.id FROM auction a JOIN person p ON a.seller = p.id
             WHERE a.category = 10 AND p.state IN ('OR', 'ID', 'CA')""",
    "q4": """SELECT category, avg(final) AS avg_final FROM (
                 SELECT a.id, a.category, max(b.price) AS final FROM auction a JOIN bid b ON a.id = b.auction
                 WHERE b.date_time BETWEEN a.date_time AND a.expires GROUP BY a.id, a.category) q
             GROUP BY category""",
    "q5": """WITH c AS (SELECT auction, window(date_time, '10 seconds', '2 seconds') AS w, count(*) AS num
                        FROM bid GROUP BY auction, window(date_time, '10 seconds', '2 seconds')),
                  m AS (SELECT w, max(num) AS maxn FROM c GROUP BY w)
             SELECT c.auction, c.num FROM c JOIN m ON c.w = m.w AND c.num >= m.maxn""",
    "q7": f"""WITH h AS (SELECT window(date_time, '10 seconds').end AS we, max(price) AS maxprice
                          FROM bid GROUP BY window(date_time, '10 seconds'))
              SELECT b.auction, b.price, b.bidder, b.date_time, b.extra FROM bid b JOIN h
              ON b.price = h.maxprice AND b.date_time BETWEEN h.we - {TEN} AND h.we""",
    "q8": """WITH p AS (SELECT id, name, window(date_time, '10 seconds') AS w FROM person
                        GROUP BY id, name, window(date_time, '10 seconds')),
                  a AS (SELECT seller, window(date_time, '10 seconds') AS w FROM auction
                        GROUP BY seller, window(date_time, '10 seconds'))
             SELECT p.id, p.name, p.w.start AS starttime FROM p JOIN a ON p.id = a.seller AND p.w = a.w""",
}
