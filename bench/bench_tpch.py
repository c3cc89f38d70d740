"""TPC-H Q1 (Trill paper section 7.3) on lineitem: tidal's SQL against DuckDB and Polars, one thread each.

    python bench/bench_tpch.py [--quick] [--sf 1] [--repeat 3] [--out bench/results/tpch.json]

Data: TPC-H ``lineitem`` made by DuckDB's tpch extension (dbgen) at scale factor ``--sf`` (1, about
6M rows; 0.1 with ``--quick``), written once as Parquet into ``bench/data/tpch/`` and reused. The
extension ships on PyPI for DuckDB 1.5.5 (``duckdb-extension-tpch``) while tidal's environment has
DuckDB 2.0, so the generator (``bench/peers/tpch_gen.py``) runs in its own virtualenv
``bench/.envs/tpch`` made by ``bench/peers/envs.py`` (a small install, so quick mode makes it too).
The DECIMAL columns are stored as DOUBLE (tidal's SQL computes decimals in floating point).

Query: Q1 as the TPC-H specification writes it (``l_shipdate <= DATE '1998-12-01' - INTERVAL '90'
DAY``), run end to end from the file by each engine: tidal through ``tidal.sql.plan(...).result()``,
DuckDB (``threads=1``) through ``con.sql``, Polars (``POLARS_MAX_THREADS=1``) as a lazy
``scan_parquet`` query. The three answers must agree (group keys and counts exactly, the float sums
and averages to a relative 1e-9, since each engine adds in its own order): the module fails loudly
otherwise. Throughput is lineitem rows per second of the median of ``--repeat`` runs.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
from datetime import date, timedelta
from pathlib import Path

# Polars sizes its thread pool when imported: one thread, as for DuckDB and tidal.
os.environ.setdefault("POLARS_MAX_THREADS", "1")

import duckdb  # noqa: E402
import polars as pl  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402
from harness import Results, add_common_args  # noqa: E402
from peers import envs  # noqa: E402

from tidal.sql import plan  # noqa: E402

BENCH = Path(__file__).resolve().parent
DATA = BENCH / "data" / "tpch"
WORKLOAD = "TPC-H Q1 (lineitem, Parquet)"

Q1 = """
SELECT
    l_returnflag,
    l_linestatus,
    sum(l_quantity) AS sum_qty,
    sum(l_extendedprice) AS sum_base_price,
    sum(l_extendedprice * (1 - l_discount)) AS sum_disc_price,
    sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)) AS sum_charge,
    avg(l_quantity) AS avg_qty,
    avg(l_extendedprice) AS avg_price,
    avg(l_discount) AS avg_disc,
    count(*) AS count_order
FROM '{path}'
WHERE l_shipdate <= DATE '1998-12-01' - INTERVAL '90' DAY
GROUP BY l_returnflag, l_linestatus
ORDER BY l_returnflag, l_linestatus
"""
KEYS = ("l_returnflag", "l_linestatus")
EXACT = KEYS + ("count_order",)


def ensure_lineitem(sf: float, setup: bool, timeout: float = 1800.0) -> tuple[Path, dict]:
    """The cached Parquet file for scale factor ``sf``, generated in the tpch environment when missing."""
    path = DATA / f"lineitem_sf{sf:g}.parquet"
    info: dict = {"file": str(path.relative_to(BENCH.parent)), "cached": path.exists()}
    if path.exists():
        return path, info
    env = envs.ensure("tpch") if setup else {"ready": envs.ready("tpch"), "error": "no --setup"}
    info["environment"] = env
    if not env["ready"]:
        raise SystemExit(f"TPC-H data generator environment not ready: {env['error']}")
    DATA.mkdir(parents=True, exist_ok=True)
    cmd = [str(envs.python("tpch")), str(BENCH / "peers" / "tpch_gen.py"), "--sf", f"{sf:g}", "--out", str(path)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        tail = " ".join((done.stderr or done.stdout).strip().splitlines()[-3:])
        raise SystemExit(f"dbgen failed: {tail}")
    info["generated"] = json.loads(done.stdout.strip().splitlines()[-1])
    return path, info


def tidal_q1(path: Path) -> pa.Table:
    return plan(Q1.format(path=path)).result()


def duckdb_q1(con, path: Path) -> pa.Table:
    return con.sql(Q1.format(path=path)).to_arrow_table()


def polars_q1(path: Path) -> pa.Table:
    cutoff = date(1998, 12, 1) - timedelta(days=90)
    price = pl.col("l_extendedprice")
    disc_price = price * (1 - pl.col("l_discount"))
    return (
        pl.scan_parquet(path)
        .filter(pl.col("l_shipdate") <= cutoff)
        .group_by(*KEYS)
        .agg(
            pl.col("l_quantity").sum().alias("sum_qty"),
            price.sum().alias("sum_base_price"),
            disc_price.sum().alias("sum_disc_price"),
            (disc_price * (1 + pl.col("l_tax"))).sum().alias("sum_charge"),
            pl.col("l_quantity").mean().alias("avg_qty"),
            price.mean().alias("avg_price"),
            pl.col("l_discount").mean().alias("avg_disc"),
            pl.len().alias("count_order"),
        )
        .sort(*KEYS)
        .collect()
        .to_arrow()
    )


def answer_rows(table: pa.Table) -> list[dict]:
    rows = table.to_pylist()
    return sorted(rows, key=lambda r: tuple(r[k] for k in KEYS))


def differences(got: pa.Table, want: pa.Table, rel: float = 1e-9) -> list[str]:
    """Where two Q1 answers disagree (empty when they agree): keys and counts exactly, floats to ``rel``."""
    if got.column_names != want.column_names:
        return [f"columns {got.column_names} != {want.column_names}"]
    a, b = answer_rows(got), answer_rows(want)
    if len(a) != len(b):
        return [f"{len(a)} groups != {len(b)}"]
    out = []
    for x, y in zip(a, b, strict=True):
        for name in got.column_names:
            u, v = x[name], y[name]
            same = u == v if name in EXACT else math.isclose(float(u), float(v), rel_tol=rel, abs_tol=0.0)
            if not same:
                out.append(f"group {tuple(x[k] for k in KEYS)} {name}: {u!r} != {v!r}")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sf", type=float, default=None, help="scale factor (default 1, 0.1 with --quick)")
    ap.add_argument("--no-setup", dest="setup", action="store_false", help="do not create the generator's env")
    add_common_args(ap, "bench/results/tpch.json")
    args = ap.parse_args(argv)
    sf = args.sf or (0.1 if args.quick else 1.0)
    path, info = ensure_lineitem(sf, args.setup)
    rows = pq.ParquetFile(path).metadata.num_rows
    results = Results()

    con = duckdb.connect()
    con.execute("SET threads=1")
    engines = {
        "tidal": lambda: tidal_q1(path),
        "duckdb": lambda: duckdb_q1(con, path),
        "polars": lambda: polars_q1(path),
    }
    want = engines["duckdb"]()
    for engine in ("tidal", "polars"):
        wrong = differences(engines[engine](), want)  # also warms tidal's compiled kernels
        if wrong:
            raise SystemExit(f"TPC-H Q1: {engine} disagrees with DuckDB: " + "; ".join(wrong[:5]))
    for engine, fn in engines.items():
        results.run(WORKLOAD, engine, fn, rows, args.repeat)
    results.note(
        f"lineitem at scale factor {sf:g} ({rows:,} rows, {path.stat().st_size / 1e6:.0f} MB Parquet); "
        f"the three answers agree ({want.num_rows} groups)"
    )
    env = info.get("environment")
    if env and not env["reused"]:
        results.note(
            f"the tpch environment (DuckDB 1.5.5 + duckdb-extension-tpch) was created in {env['seconds']:.0f} s"
        )
    if "generated" in info:
        results.note(
            f"lineitem generated by DuckDB {info['generated']['duckdb']} dbgen "
            f"in {info['generated']['seconds']:.0f} s (cached for later runs)"
        )
    results.report(args.out, sf=sf, lineitem_rows=rows, threads=1, data=info["file"], quick=args.quick)
    return 0


if __name__ == "__main__":
    sys.exit(main())
