"""PyFlink driver: tumbling 1h count+sum per key over a CSV file on the local mini-cluster; JSON timings.

Runs inside ``bench/.envs/pyflink`` (see envs.py): PyFlink pins its own numpy and pyarrow.

    python pyflink_driver.py --data events.csv --repeat 3 [--parallelism 1]

Table API in streaming mode: a filesystem/CSV source with an event-time attribute (watermark = the
row's time: the input is in order), the windowing TVF ``TUMBLE(..., INTERVAL '1' HOUR)`` grouped by
window and key. Timed runs write into a blackhole sink (``INSERT ... .wait()``); one more run
collects the result to check it against tidal's. The JVM and mini-cluster start before the timed
runs (a warm-up job), so the figures are warm-job times.
"""

import argparse
import json
import sys
import time
from importlib import metadata

from pyflink.table import EnvironmentSettings, TableEnvironment

WINDOWED = (
    "SELECT window_start, `key`, COUNT(*) AS c, SUM(`value`) AS s "
    "FROM TABLE(TUMBLE(TABLE events, DESCRIPTOR(rt), INTERVAL '1' HOUR)) "
    "GROUP BY window_start, window_end, `key`"
)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--parallelism", type=int, default=1)
    args = ap.parse_args()
    env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    conf = env.get_config()
    conf.set("parallelism.default", str(args.parallelism))
    conf.set("table.local-time-zone", "UTC")
    env.execute_sql(
        "CREATE TABLE events (ts BIGINT, `key` BIGINT, `value` BIGINT, "
        "rt AS TO_TIMESTAMP_LTZ(ts, 0), WATERMARK FOR rt AS rt) "
        f"WITH ('connector' = 'filesystem', 'path' = '{args.data}', 'format' = 'csv')"
    )
    env.execute_sql(
        "CREATE TABLE sink (window_start TIMESTAMP(3), `key` BIGINT, c BIGINT, s BIGINT) "
        "WITH ('connector' = 'blackhole')"
    )
    env.execute_sql(f"INSERT INTO sink {WINDOWED}").wait()  # warm-up: JVM, mini-cluster, code generation
    runs = []
    for _ in range(max(1, args.repeat)):
        start = time.perf_counter()
        env.execute_sql(f"INSERT INTO sink {WINDOWED}").wait()
        runs.append(time.perf_counter() - start)
    groups = count_total = sum_total = 0
    with env.execute_sql(WINDOWED).collect() as rows:
        for row in rows:
            groups += 1
            count_total += row[2]
            sum_total += row[3]
    doc = {
        "engine": "pyflink",
        "version": metadata.version("apache-flink"),
        "python": sys.version.split()[0],
        "parallelism": args.parallelism,
        "runs_s": runs,
        "groups": groups,
        "count_total": count_total,
        "sum_total": sum_total,
    }
    print(json.dumps(doc))


if __name__ == "__main__":
    main()
