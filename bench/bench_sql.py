"""Benchmark: the OctoSQL README query on a generated taxi file, tidal vs DuckDB in the same run.

Usage::

    python bench/bench_sql.py [--rows 2000000] [--repeat 3] [--out bench/results/sql.json] [--profile]

The query (OctoSQL's README): ``SELECT passenger_count, COUNT(*), AVG(total_amount) FROM 'taxi.csv'
GROUP BY passenger_count``, on an 18-column file shaped like the NYC yellow-taxi trip records
(timestamps, small integer codes, floats, a flag string), written once as CSV and as Parquet into
``bench/data/`` (reused when present). Each engine runs the query ``--repeat`` times from the file
(end to end: planning, reading, aggregating, the final answer); the median is reported, with the
ratio to DuckDB and the aim (2x on Parquet, 3x on CSV). The answers are checked to agree.
``--profile`` prints a cProfile of one tidal run per format.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import platform
import pstats
import statistics
import time
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.csv as pv
import pyarrow.parquet as pq

from tidal.sql import plan

QUERY = "SELECT passenger_count, COUNT(*), AVG(total_amount) FROM '{path}' GROUP BY passenger_count"
AIM = {"parquet": 2.0, "csv": 3.0}


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


def run_tidal(path: Path):
    return plan(QUERY.format(path=path)).result()


def run_duckdb(path: Path):
    con = duckdb.connect()
    try:
        return con.sql(QUERY.format(path=path)).to_arrow_table()
    finally:
        con.close()


def timed(fn, path: Path, repeat: int) -> tuple[float, list[float], pa.Table]:
    times, result = [], None
    for _ in range(repeat):
        started = time.perf_counter()
        result = fn(path)
        times.append(time.perf_counter() - started)
    return statistics.median(times), times, result


def answers_agree(a: pa.Table, b: pa.Table) -> bool:
    def rows(t):
        out = {}
        for r in t.to_pylist():
            vals = list(r.values())
            key = None if vals[0] is None or vals[0] != vals[0] else vals[0]
            out[key] = (vals[1], round(vals[2], 6))
        return out

    return rows(a) == rows(b)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--data", default=str(Path(__file__).parent / "data"))
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "sql.json"))
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    paths = ensure_files(args.rows, Path(args.data))
    results = []
    for fmt, path in paths.items():
        t_tidal, all_tidal, got = timed(run_tidal, path, args.repeat)
        t_duck, all_duck, expected = timed(run_duckdb, path, args.repeat)
        ratio = t_tidal / t_duck
        row = {
            "format": fmt,
            "rows": args.rows,
            "tidal_s": round(t_tidal, 4),
            "duckdb_s": round(t_duck, 4),
            "ratio": round(ratio, 2),
            "aim": AIM[fmt],
            "within_aim": ratio <= AIM[fmt],
            "tidal_runs_s": [round(x, 4) for x in all_tidal],
            "duckdb_runs_s": [round(x, 4) for x in all_duck],
            "answers_agree": answers_agree(got, expected),
            "file_mb": round(os.path.getsize(path) / 1e6, 1),
        }
        results.append(row)
        print(
            f"{fmt:8} tidal {t_tidal:7.3f} s  duckdb {t_duck:7.3f} s  ratio {ratio:5.2f}x (aim {AIM[fmt]}x)"
            f"  answers agree: {row['answers_agree']}"
        )
        if args.profile:
            prof = cProfile.Profile()
            prof.runcall(run_tidal, path)
            pstats.Stats(prof).sort_stats("cumulative").print_stats(25)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    meta = {"machine": platform.machine(), "python": platform.python_version(), "cpus": os.cpu_count()}
    Path(args.out).write_text(json.dumps({"query": QUERY, "meta": meta, "results": results}, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
