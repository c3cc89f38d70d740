"""TPC-H lineitem generator: DuckDB's tpch extension (dbgen) writes lineitem as Parquet.

Runs inside ``bench/.envs/tpch`` (see envs.py: DuckDB 1.5.5 with the PyPI package
``duckdb-extension-tpch``, loaded from the package's file, so nothing is downloaded), never in
tidal's environment (DuckDB 2.0).

    python tpch_gen.py --sf 0.1 --out lineitem_sf0.1.parquet

The DECIMAL(15,2) columns (quantity, price, discount, tax) are written as DOUBLE: tidal's SQL
evaluates decimals as floating point, and the same file must be read by every engine. Prints the
row count, DuckDB's version and the generation time as JSON on its last line.
"""

import argparse
import json
import os
import time
from pathlib import Path

import duckdb
import duckdb_extension_tpch


def extension_file() -> Path:
    found = sorted(Path(duckdb_extension_tpch.__file__).parent.glob("extensions/*/tpch.duckdb_extension"))
    if not found:
        raise SystemExit(f"no tpch.duckdb_extension inside {Path(duckdb_extension_tpch.__file__).parent}")
    return found[-1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sf", type=float, required=True, help="TPC-H scale factor (1 = 6M lineitem rows)")
    ap.add_argument("--out", required=True, help="the Parquet file to write")
    args = ap.parse_args()
    started = time.perf_counter()
    con = duckdb.connect(config={"autoinstall_known_extensions": False, "autoload_known_extensions": False})
    con.execute(f"LOAD '{extension_file()}'")
    con.execute("SET threads=2")
    con.execute("SET enable_progress_bar=false")
    # lineitem alone: dbgen's children/step split would need every table's generator anyway
    con.execute(f"CALL dbgen(sf={args.sf})")
    columns = con.execute("DESCRIBE lineitem").fetchall()
    select = ", ".join(
        f"CAST({name} AS DOUBLE) AS {name}" if kind.startswith("DECIMAL") else name for name, kind, *_ in columns
    )
    out = Path(args.out)
    tmp = out.with_suffix(".tmp.parquet")
    con.execute(f"COPY (SELECT {select} FROM lineitem) TO '{tmp}' (FORMAT parquet)")
    os.replace(tmp, out)  # an interrupted run leaves no half-written file under the final name
    rows = con.execute("SELECT count(*) FROM lineitem").fetchone()[0]
    print(json.dumps({"rows": rows, "duckdb": duckdb.__version__, "seconds": time.perf_counter() - started}))


if __name__ == "__main__":
    main()
