"""PyFlink driver for NEXMark: Flink's own NEXMark SQL (q0-q5, q7, q8) over tidal's generated tables; JSON timings.

Runs inside ``bench/.envs/pyflink`` (see envs.py; PyFlink pins its own numpy and pyarrow).

    python pyflink_nexmark_driver.py --data DIR --queries q0,q5,q7 [--repeat 1] [--parallelism 1]

``DIR`` holds ``person.csv``, ``auction.csv`` and ``bid.csv`` (no header, times as epoch milliseconds),
written by ``bench/bench_nexmark.py`` from the same Parquet tables tidal reads: the ``apache-flink`` wheel
ships the filesystem connector with the CSV format but not Flink's Parquet format or its NEXMark
generator. Each table declares ``dateTime`` as its event time with Flink's NEXMark watermark (4 s behind),
and the queries are the Flink NEXMark suite's text with the tables' column names. q6 is left out (Flink's
suite does not run it), and so are the queries past q8. Timed runs write into a blackhole sink; a last run
collects the answer and reports its row count (the final rows, after any retractions), which the benchmark
checks against tidal's. A warm-up job starts the JVM and the mini-cluster first.
"""

import argparse
import json
import sys
import time
from collections import Counter
from importlib import metadata

from pyflink.table import EnvironmentSettings, TableEnvironment

COLUMNS = {
    "person": "id BIGINT, name STRING, email_address STRING, credit_card STRING, city STRING, state STRING, "
    "date_time BIGINT, extra STRING",
    "auction": "id BIGINT, item_name STRING, description STRING, initial_bid BIGINT, reserve BIGINT, "
    "date_time BIGINT, expires_ms BIGINT, seller BIGINT, category BIGINT, extra STRING",
    "bid": "auction BIGINT, bidder BIGINT, price BIGINT, channel STRING, url STRING, date_time BIGINT, extra STRING",
}
# `dateTime` (Flink's NEXMark name for the event time) is a reserved word in Flink 2's parser: quoted below
EXTRA = {"auction": ", expires AS TO_TIMESTAMP_LTZ(expires_ms, 3)"}

QUERIES = {
    "q0": "SELECT auction, bidder, price, dateTime, extra FROM bid",
    "q1": "SELECT auction, bidder, 0.908 * price AS price, dateTime, extra FROM bid",
    "q2": "SELECT auction, price FROM bid WHERE MOD(auction, 123) = 0",
    "q3": "SELECT P.name, P.city, P.state, A.id FROM auction AS A INNER JOIN person AS P ON A.seller = P.id "
    "WHERE A.category = 10 AND (P.state = 'OR' OR P.state = 'ID' OR P.state = 'CA')",
    "q4": "SELECT Q.category, AVG(Q.final) AS avg_final FROM (SELECT MAX(B.price) AS final, A.category "
    "FROM auction A, bid B WHERE A.id = B.auction AND B.dateTime BETWEEN A.dateTime AND A.expires "
    "GROUP BY A.id, A.category) Q GROUP BY Q.category",
    "q5": "SELECT AuctionBids.auction, AuctionBids.num FROM ("
    " SELECT auction, count(*) AS num, window_start AS starttime, window_end AS endtime"
    " FROM TABLE(HOP(TABLE bid, DESCRIPTOR(dateTime), INTERVAL '2' SECOND, INTERVAL '10' SECOND))"
    " GROUP BY auction, window_start, window_end) AS AuctionBids "
    "JOIN (SELECT max(CountBids.num) AS maxn, CountBids.starttime, CountBids.endtime FROM ("
    " SELECT count(*) AS num, window_start AS starttime, window_end AS endtime"
    " FROM TABLE(HOP(TABLE bid, DESCRIPTOR(dateTime), INTERVAL '2' SECOND, INTERVAL '10' SECOND))"
    " GROUP BY auction, window_start, window_end) AS CountBids"
    " GROUP BY CountBids.starttime, CountBids.endtime) AS MaxBids "
    "ON AuctionBids.starttime = MaxBids.starttime AND AuctionBids.endtime = MaxBids.endtime"
    " AND AuctionBids.num >= MaxBids.maxn",
    "q7": "SELECT B.auction, B.price, B.bidder, B.dateTime, B.extra FROM bid B JOIN ("
    " SELECT MAX(price) AS maxprice, window_end AS dateTime"
    " FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(dateTime), INTERVAL '10' SECOND))"
    " GROUP BY window_start, window_end) B1 ON B.price = B1.maxprice "
    "WHERE B.dateTime BETWEEN B1.dateTime - INTERVAL '10' SECOND AND B1.dateTime",
    "q8": "SELECT P.id, P.name, P.starttime FROM ("
    " SELECT id, name, window_start AS starttime, window_end AS endtime"
    " FROM TABLE(TUMBLE(TABLE person, DESCRIPTOR(dateTime), INTERVAL '10' SECOND))"
    " GROUP BY id, name, window_start, window_end) P "
    "JOIN (SELECT seller, window_start AS starttime, window_end AS endtime"
    " FROM TABLE(TUMBLE(TABLE auction, DESCRIPTOR(dateTime), INTERVAL '10' SECOND))"
    " GROUP BY seller, window_start, window_end) A "
    "ON P.id = A.seller AND P.starttime = A.starttime AND P.endtime = A.endtime",
}
QUERIES = {name: sql.replace("dateTime", "`dateTime`") for name, sql in QUERIES.items()}


def final_rows(env, sql: str) -> int:
    """The number of rows in the query's final answer (inserts minus retractions)."""
    rows: Counter = Counter()
    with env.execute_sql(sql).collect() as results:
        for row in results:
            kind = str(row.get_row_kind())
            key = tuple(row)
            rows[key] += -1 if kind in ("RowKind.UPDATE_BEFORE", "RowKind.DELETE", "-U", "-D") else 1
    return sum(n for n in rows.values() if n > 0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--queries", default=",".join(QUERIES))
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--parallelism", type=int, default=1)
    args = ap.parse_args()
    env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    conf = env.get_config()
    conf.set("parallelism.default", str(args.parallelism))
    conf.set("table.local-time-zone", "UTC")
    for name, columns in COLUMNS.items():
        env.execute_sql(
            f"CREATE TABLE {name} ({columns}, `dateTime` AS TO_TIMESTAMP_LTZ(date_time, 3){EXTRA.get(name, '')}, "
            "WATERMARK FOR `dateTime` AS `dateTime` - INTERVAL '4' SECOND) "
            f"WITH ('connector' = 'filesystem', 'path' = '{args.data}/{name}.csv', 'format' = 'csv')"
        )
    doc = {
        "engine": "pyflink",
        "version": metadata.version("apache-flink"),
        "python": sys.version.split()[0],
        "parallelism": args.parallelism,
        "queries": {},
    }
    warm = True
    for name in args.queries.split(","):
        if name not in QUERIES:
            doc["queries"][name] = {"error": "not in this driver (Flink's suite text not adapted)"}
            continue
        sql = QUERIES[name]
        table = env.sql_query(sql)
        columns = table._j_table.getResolvedSchema().getColumns()  # SQL type names from Java
        fields = ", ".join(
            f"`{c.getName()}` {c.getDataType().getLogicalType().copy(True).asSerializableString()}" for c in columns
        )
        env.execute_sql(f"CREATE TEMPORARY TABLE sink_{name} ({fields}) WITH ('connector' = 'blackhole')")
        try:
            if warm:  # the JVM, the mini-cluster and code generation, once
                env.execute_sql(f"INSERT INTO sink_{name} {sql}").wait()
                warm = False
            runs = []
            for _ in range(max(1, args.repeat)):
                start = time.perf_counter()
                env.execute_sql(f"INSERT INTO sink_{name} {sql}").wait()
                runs.append(time.perf_counter() - start)
            doc["queries"][name] = {"runs_s": runs}
            # collected rows: timestamps as text (PyFlink cannot hand TIMESTAMP_LTZ rows to Python)
            listed = ", ".join(
                f"CAST(`{c.getName()}` AS STRING)" if "TIMESTAMP" in str(c.getDataType()) else f"`{c.getName()}`"
                for c in columns
            )
            doc["queries"][name]["rows"] = final_rows(env, f"SELECT {listed} FROM ({sql})")
        except Exception as exc:  # a query Flink refuses: say so, go on with the others
            doc["queries"][name] = {"error": f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}"}
        print(json.dumps({name: doc["queries"][name]}), file=sys.stderr, flush=True)
    print(json.dumps(doc))


if __name__ == "__main__":
    main()
