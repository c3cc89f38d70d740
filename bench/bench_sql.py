"""Benchmark: tidal's SQL path against DuckDB (one thread) and against the same query in tidal's Python API.

Usage::

    python bench/bench_sql.py [--quick] [--rows 2000000] [--events 1000000] [--repeat 3] [--out PATH] [--profile]

Always at full size (issue 19: the quick sizes hid the Parquet gap); ``--quick`` only skips the
process runs' extra repeats. Files are written once into ``bench/.data/`` and reused.

* **SQL WHERE vs lambda** (issue 19): ``COUNT(*)`` under ``WHERE tip_amount * 5 > fare_amount - extra``
  on the taxi Parquet file, as SQL, as ``where(lambda e: ...)`` in the Python API, and in DuckDB.
* **Taxi** (OctoSQL's README query, ``SELECT passenger_count, COUNT(*), AVG(total_amount) ... GROUP
  BY passenger_count``) on an 18-column file shaped like the NYC yellow-taxi records, 2M rows, as
  Parquet and CSV, in process (``tidal.sql.plan(...).result()`` vs ``duckdb.sql(...)``), and as a
  process (``python -m tidal.cli.main query ... --format batch-csv`` vs ``python -c "import duckdb;
  ..."``: start-up included). In process DuckDB runs at one thread (``duckdb``) and at its default
  threads (``duckdb default threads``, as a user runs it); the process runs keep DuckDB's default.
* **Events** (the queries a new user tries, issue 19): a 1M-row CSV of ``ts, user_id, category,
  amount`` (0.1 s apart on average, up to 5 s out of order) and a 50k-row ``users.csv`` of
  ``user_id, country, age``: ``COUNT(DISTINCT user_id)`` per category; a 1-hour ``tumble`` over
  ``max_diff_watermark`` (10 s) per window and category; the join with users per country;
  ``ORDER BY amount DESC LIMIT 10``; ``GROUP BY user_id ORDER BY SUM(amount) DESC LIMIT 10``. Each
  runs as SQL (engine ``tidal``), as the same query in the Python API (``tidal python api``: the CSV
  read with pyarrow, then the fluent API), and in DuckDB with ``threads=1``. Start-up is excluded.
  ``the CSV read alone``: the tumble query's three columns read by tidal's reader and by DuckDB (how much
  of each engine's time is the read).

Every engine's answer is checked against DuckDB's before timing. ``--profile`` prints a cProfile of
one SQL run of each workload. ``--arrow-threads N`` (default 1, as DuckDB's ``threads=1``; 0: every
core) sets the threads of Arrow's readers, tidal's CSV and Parquet parsing; the process runs keep
their own defaults.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pv
import pyarrow.parquet as pq
from harness import Results, add_common_args

import tidal
from tidal import agg
from tidal.sql import plan

ROOT = Path(__file__).resolve().parent.parent
QUERY = "SELECT passenger_count, COUNT(*), AVG(total_amount) FROM '{path}' GROUP BY passenger_count"
HOUR, LATENESS = 3_600_000_000, 10_000_000


def taxi_table(rows: int, seed: int = 3) -> pa.Table:
    rng = np.random.default_rng(seed)
    start = np.datetime64("2021-01-01T00:00:00", "us") + rng.integers(0, 31 * 86_400, rows).astype("timedelta64[s]")
    duration = rng.integers(60, 3_600, rows).astype("timedelta64[s]")
    fare = np.round(rng.gamma(2.0, 6.0, rows), 2)
    extra = rng.choice([0.0, 0.5, 1.0, 2.5], rows)
    mta = np.full(rows, 0.5)
    tip = np.round(fare * rng.choice([0.0, 0.1, 0.15, 0.2], rows), 2)
    tolls = rng.choice([0.0, 0.0, 0.0, 6.12], rows)
    surcharge = np.full(rows, 0.3)
    congestion = rng.choice([0.0, 2.5], rows)
    passengers = rng.choice([0, 1, 1, 1, 1, 2, 2, 3, 4, 5, 6], rows).astype(np.float64)
    passengers[rng.random(rows) < 0.01] = np.nan  # the real data has missing passenger counts
    return pa.table(
        {
            "VendorID": rng.integers(1, 3, rows),
            "tpep_pickup_datetime": start,
            "tpep_dropoff_datetime": start + duration,
            "passenger_count": pa.array(passengers, from_pandas=True),
            "trip_distance": np.round(rng.gamma(1.5, 2.0, rows), 2),
            "RatecodeID": rng.choice([1, 1, 1, 2, 5], rows),
            "store_and_fwd_flag": rng.choice(["N", "N", "N", "Y"], rows),
            "PULocationID": rng.integers(1, 266, rows),
            "DOLocationID": rng.integers(1, 266, rows),
            "payment_type": rng.integers(1, 5, rows),
            "fare_amount": fare,
            "extra": extra,
            "mta_tax": mta,
            "tip_amount": tip,
            "tolls_amount": tolls,
            "improvement_surcharge": surcharge,
            "total_amount": np.round(fare + extra + mta + tip + tolls + surcharge + congestion, 2),
            "congestion_surcharge": congestion,
        }
    )


def ensure_files(rows: int, folder: Path) -> dict[str, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = {"csv": folder / f"taxi_{rows}.csv", "parquet": folder / f"taxi_{rows}.parquet"}
    if not all(p.exists() for p in paths.values()):
        table = taxi_table(rows)
        pv.write_csv(table, paths["csv"])
        pq.write_table(table, paths["parquet"])
    return paths


def ensure_events(rows: int, folder: Path, users: int = 50_000, seed: int = 5) -> tuple[Path, Path]:
    """``events_<rows>.csv`` (ts, user_id, category, amount; slightly out of order) and ``users_<users>.csv``."""
    events, people = folder / f"events_{rows}.csv", folder / f"users_{users}.csv"
    if events.exists() and people.exists():
        return events, people
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    step = rng.integers(0, 200_000, rows).cumsum()  # 0.1 s apart on average
    jitter = rng.integers(0, 5_000_000, rows)  # up to 5 s late: under the 10 s watermark offset
    ts = np.datetime64("2024-03-01T00:00:00", "us") + (step + jitter).astype("timedelta64[us]")
    categories = np.array([f"cat{i:02d}" for i in range(20)])
    table = pa.table(
        {
            "ts": ts,
            "user_id": rng.integers(0, users, rows),
            "category": categories[rng.integers(0, 20, rows)],
            "amount": np.round(rng.gamma(2.0, 20.0, rows), 2),
        }
    )
    countries = np.array(["US", "DE", "FR", "GB", "JP", "BR", "IN", "CN", "CA", "AU", "ES", "IT", "NL", "SE", "PL"])
    user_table = pa.table(
        {
            "user_id": np.arange(users),
            "country": countries[rng.integers(0, len(countries), users)],
            "age": rng.integers(18, 80, users),
        }
    )
    pv.write_csv(table, events)
    pv.write_csv(user_table, people)
    return events, people


def _read(path: Path) -> pa.Table:
    """A CSV as a user of the Python API reads it: pyarrow, timestamps in microseconds (tidal's SQL tick)."""
    table = pv.read_csv(path)
    if "ts" in table.column_names:
        table = table.set_column(0, "ts", table.column("ts").cast(pa.timestamp("us")))
    return table


def _relational(table: pa.Table) -> tidal.Stream:
    """Rows as start edges at time 0: the final snapshot is the relational answer (as SQL does)."""
    return tidal.from_arrow(
        table.append_column("t0", pa.array(np.zeros(len(table), np.int64))), time="t0", kind="start"
    )


def event_queries(events: Path, users: Path) -> list[tuple]:
    """(workload, SQL, DuckDB SQL, Python API function, answer key) for the events file."""
    e, u = events.name, users.name
    tumble = (
        f"tumble(source => TABLE(max_diff_watermark(source => TABLE('{e}'), time_field => DESCRIPTOR(ts), "
        f"offset => INTERVAL 10 SECONDS)), time_field => DESCRIPTOR(ts), window_length => INTERVAL 1 HOUR)"
    )

    def api_distinct():
        s = _relational(_read(events).select(["category", "user_id"]))
        return s.group_aggregate("category", users=agg.count_distinct("user_id")).to_arrow()

    def api_tumble():
        t = _read(events).select(["ts", "category", "amount"])
        s = tidal.from_arrow(t, time="ts", disorder="drop", reorder_latency=LATENESS)
        out = s.tumbling_window(HOUR).group_aggregate("category", n=agg.count(), total=agg.sum("amount")).to_arrow()
        start = pc.cast(out.column("sync_time"), pa.timestamp("us"))
        return out.append_column("window_start", start)

    def api_join():
        left = _relational(_read(events).select(["user_id", "amount"]))
        right = _relational(_read(users).select(["user_id", "country"]))
        joined = left.join(right, "user_id", "user_id")
        return joined.group_aggregate("country", n=agg.count(), total=agg.sum("amount")).to_arrow()

    def api_top_amounts():
        top = _relational(_read(events).select(["amount"])).aggregate(top=agg.top_k("amount", 10)).to_arrow()
        return pa.table({"amount": top.column("top")[0].values})

    def api_top_users():
        s = _relational(_read(events).select(["user_id", "amount"]))
        sums = s.group_aggregate("user_id", total=agg.sum("amount")).to_arrow()
        return sums.take(pc.select_k_unstable(sums, 10, [("total", "descending")]))

    return [
        (
            "SQL events: COUNT(DISTINCT user) by category",
            f"SELECT category, COUNT(DISTINCT user_id) AS users FROM '{e}' GROUP BY category",
            None,
            api_distinct,
            ("category", "users"),
        ),
        (
            "SQL events: 1h tumble over max_diff_watermark",
            f"SELECT window_start, category, COUNT(*) AS n, SUM(amount) AS total FROM {tumble} e "
            "GROUP BY window_start, category",
            f"SELECT time_bucket(INTERVAL 1 HOUR, ts) AS window_start, category, COUNT(*) AS n, SUM(amount) AS total "
            f"FROM '{e}' GROUP BY ALL",
            api_tumble,
            ("window_start", "category", "n", "total"),
        ),
        (
            "SQL events: join users, by country",
            f"SELECT u.country, COUNT(*) AS n, SUM(e.amount) AS total FROM '{e}' e JOIN '{u}' u "
            "ON e.user_id = u.user_id GROUP BY u.country",
            None,
            api_join,
            ("country", "n", "total"),
        ),
        (
            "SQL events: ORDER BY amount DESC LIMIT 10",
            f"SELECT * FROM '{e}' ORDER BY amount DESC LIMIT 10",
            None,
            api_top_amounts,
            ("amount",),
        ),
        (
            "SQL events: GROUP BY user ORDER BY SUM LIMIT 10",
            f"SELECT user_id, SUM(amount) AS total FROM '{e}' GROUP BY user_id ORDER BY total DESC LIMIT 10",
            None,
            api_top_users,
            ("user_id", "total"),
        ),
    ]


WHERE_SQL = "SELECT COUNT(*) AS n FROM '{path}' WHERE tip_amount * 5 > fare_amount - extra"


def where_vs_lambda(path: str, con, results: Results, args) -> None:
    """Issue 19: a SQL predicate runs as fast as the same lambda. The same filter and count over the
    taxi Parquet file as SQL (its WHERE is not one the reader can take: it runs on tidal's expression
    kernels), in the Python API (the file read with pyarrow, then ``where(lambda ...).count()``) and in
    DuckDB."""
    sql = WHERE_SQL.format(path=path)

    def api():
        table = pq.read_table(path, columns=["fare_amount", "extra", "tip_amount"])
        return _relational(table).where(lambda e: e.tip_amount * 5 > e.fare_amount - e.extra).count()

    want = con.sql(sql).fetchall()[0][0]
    got = {"sql": plan(sql).result().column("n")[0].as_py(), "api": api()}
    if any(v != want for v in got.values()):
        raise SystemExit(f"SQL WHERE vs lambda: tidal answered {got} but DuckDB {want}")
    workload = "SQL WHERE vs API where() (taxi parquet, count)"
    results.run_interleaved(
        [
            (workload, "tidal", lambda: plan(sql).result(), args.rows),
            (workload, "tidal python api", api, args.rows),
            (workload, "duckdb", lambda: con.sql(sql).to_arrow_table(), args.rows),
        ],
        args.repeat,
    )


READ_COLUMNS = ("ts", "category", "amount")  # what the tumble query reads


def csv_read_alone(name: str, con, results: Results, args) -> None:
    """How much of the CSV queries is the read: the tumble query's columns of the events file read alone,
    by tidal's reader (``read_file`` with the types its planner samples: the checks and pyarrow's parse)
    and by DuckDB (each column counted, so that every value is parsed)."""
    from tidal.io.files import file_schema, read_file

    def tidal_read():
        schema = file_schema(name)
        types = pa.schema([schema.field(c) for c in READ_COLUMNS])
        return read_file(name, columns=list(READ_COLUMNS), schema=types).table.num_rows

    duck_sql = f"SELECT COUNT(ts), COUNT(category), COUNT(amount) FROM '{name}'"
    if tidal_read() != con.sql(duck_sql).fetchall()[0][0]:
        raise SystemExit("the CSV read alone: tidal and DuckDB read different numbers of rows")
    workload = "SQL events: the CSV read alone (ts, category, amount)"
    results.run_interleaved(
        [
            (workload, "tidal", tidal_read, args.events),
            (workload, "duckdb", lambda: con.sql(duck_sql).fetchall(), args.events),
        ],
        args.repeat,
    )


def _answer(table: pa.Table, columns: tuple[str, ...]) -> list[tuple]:
    """Rows of ``columns`` as sorted tuples, floats rounded (summation order differs between engines)."""
    rows = zip(*(table.column(c).to_pylist() for c in columns), strict=True)
    rounded = [tuple(round(v, 6) if isinstance(v, float) else v for v in r) for r in rows]
    return sorted(rounded, key=lambda r: tuple((v is None, v) for v in r))


def _process_seconds(cmd: list[str], cwd: Path, repeat: int) -> list[float]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # a user's interpreter caches bytecode
    runs = []
    for _ in range(repeat):
        started = time.perf_counter()
        subprocess.run(cmd, cwd=cwd, env=env, check=True, stdout=subprocess.DEVNULL)
        runs.append(time.perf_counter() - started)
    return runs


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=2_000_000, help="rows of the taxi file")
    ap.add_argument("--events", type=int, default=1_000_000, help="rows of the events file")
    ap.add_argument("--data", default=str(Path(__file__).parent / ".data"))
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--taxi-only", action="store_true", help="only the taxi workloads (skip the events file)")
    ap.add_argument(
        "--arrow-threads",
        type=int,
        default=1,
        help="threads of Arrow's CSV reader (DuckDB runs with one: 1 is like for like)",
    )
    add_common_args(ap, "bench/results/sql.json")
    args = ap.parse_args(argv)
    if args.arrow_threads:
        pa.set_cpu_count(args.arrow_threads)
    data = Path(args.data).resolve()
    data.mkdir(parents=True, exist_ok=True)
    results = Results()
    con = duckdb.connect()
    con.execute("SET threads=1")
    con_all = duckdb.connect()  # DuckDB's default threads: the taxi workloads report both
    cwd = os.getcwd()
    os.chdir(data)  # the queries name files relative to the current directory, as a user's do
    try:
        taxi = ensure_files(args.rows, data)
        for fmt, path in taxi.items():
            sql = QUERY.format(path=path.name)
            want = _answer(con.sql(sql).to_arrow_table(), ("passenger_count", "count_star()"))
            got = _answer(plan(sql).result(), ("passenger_count", "count_star()"))  # also loads the kernels
            if got != want:
                raise SystemExit(f"taxi ({fmt}): tidal answered {got} but DuckDB {want}")
            workload = f"SQL taxi query ({fmt})"
            results.run_interleaved(
                [
                    (workload, "tidal", lambda sql=sql: plan(sql).result(), args.rows),
                    (workload, "duckdb", lambda sql=sql: con.sql(sql).to_arrow_table(), args.rows),
                    # as a user runs it from Python: DuckDB's own default (every core)
                    (workload, "duckdb default threads", lambda sql=sql: con_all.sql(sql).to_arrow_table(), args.rows),
                ],
                args.repeat,
            )
            if args.profile:
                prof = cProfile.Profile()
                prof.runcall(lambda sql=sql: plan(sql).result())
                pstats.Stats(prof).sort_stats("tottime").print_stats(15)
        where_vs_lambda(taxi["parquet"].name, con, results, args)
        sql = QUERY.format(path=taxi["parquet"].name)
        tidal_cmd = [sys.executable, "-m", "tidal.cli.main", "query", sql, "--format", "batch-csv"]
        duck_cmd = [sys.executable, "-c", f"import duckdb; print(duckdb.sql({sql!r}).fetchall())"]
        repeat = 3 if args.quick else max(args.repeat, 3)
        _process_seconds(tidal_cmd, data, 1)  # bytecode and kernel caches written once, as after an install
        tidal_runs = _process_seconds(tidal_cmd, data, repeat)
        duck_runs = _process_seconds(duck_cmd, data, repeat)
        for engine, runs in (("tidal", tidal_runs), ("duckdb", duck_runs)):
            results.record("SQL taxi query (parquet), as a process", engine, float(np.median(runs)),
                           max(runs) - min(runs), args.rows, runs)  # fmt: skip

        events, users = ensure_events(args.events, data) if not args.taxi_only else (None, None)
        for workload, sql, duck_sql, api, columns in event_queries(events, users) if events else ():
            want = _answer(con.sql(duck_sql or sql).to_arrow_table(), columns)
            for engine, fn in (("tidal", lambda sql=sql: plan(sql).result()), ("tidal python api", api)):
                got = _answer(fn(), columns)
                if got != want:
                    raise SystemExit(f"{workload}: {engine} answered {str(got)[:300]} but DuckDB {str(want)[:300]}")
            results.run_interleaved(
                [
                    (workload, "tidal", lambda sql=sql: plan(sql).result(), args.events),
                    (workload, "tidal python api", api, args.events),
                    (workload, "duckdb", lambda q=duck_sql or sql: con.sql(q).to_arrow_table(), args.events),
                ],
                args.repeat,
            )
            if args.profile:
                prof = cProfile.Profile()
                prof.runcall(lambda sql=sql: plan(sql).result())
                print(f"== {workload}")
                pstats.Stats(prof).sort_stats("tottime").print_stats(15)
        if events:
            csv_read_alone(events.name, con, results, args)
    finally:
        os.chdir(cwd)
    threads = args.arrow_threads or pa.cpu_count()
    results.note(f"DuckDB runs with threads=1; tidal's readers (pyarrow) with {threads} thread(s) (--arrow-threads)")
    results.report(
        args.out, rows=args.rows, events=args.events, duckdb_threads=1, arrow_threads=threads, quick=args.quick
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
