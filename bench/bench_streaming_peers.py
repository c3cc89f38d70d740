"""Streaming engines in their own environments (Bytewax, PyFlink) on tidal's tumbling-window query.

    python bench/bench_streaming_peers.py [--quick] [--events N] [--repeat 3] [--peers bytewax,pyflink]
                                          [--setup | --no-setup]

Query (issue 3's headline): tumbling 1-hour count and sum of ``value`` per ``key`` over time-ordered
events (``ts`` in seconds, about four a second, 1,000 keys), the data of ``bench_stateful.py``.
Each peer runs in its own virtualenv under ``bench/.envs/`` (PyFlink pins old numpy/pyarrow), made
by ``bench/peers/envs.py``, through a driver script (``bench/peers/*_driver.py``) that reads the same
generated file (Parquet for Bytewax, CSV for PyFlink's filesystem source), runs the query
``--repeat`` times and prints its timings and a checksum as JSON. tidal runs in this process on
the same file's table; the checksums (groups, total count, total sum) must agree.

Sizes: tidal 10M events; Bytewax (a Python event-at-a-time dataflow) 1M; PyFlink 2M (2M / 100k /
skipped with ``--quick``). A missing environment is created (``--setup``, the default, in quick mode
too: Bytewax installs in about 30 s, once; the setup time is reported); ``--no-setup`` only reuses
existing ones and skips a missing one with a note.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq
from bench_stateful import HOUR, make_data
from harness import Results, add_common_args
from peers import envs

import tidal
from tidal import agg

BENCH = Path(__file__).resolve().parent
DATA = BENCH / ".data"
WORKLOAD = "tumbling 1h count+sum by key (streaming engines)"


def tidal_query(table: pa.Table):
    return (
        tidal.from_arrow(table, time="ts").tumbling_window(HOUR).group_aggregate("key", agg.count(), agg.sum("value"))
    )


def checksum(result: pa.Table) -> dict:
    return {
        "groups": result.num_rows,
        "count_total": int(pa.compute.sum(result.column("count")).as_py()),
        "sum_total": int(pa.compute.sum(result.column("sum")).as_py()),
    }


def write_inputs(table: pa.Table) -> dict[str, Path]:
    DATA.mkdir(parents=True, exist_ok=True)
    stem = DATA / f"stateful_{table.num_rows}"
    paths = {"parquet": stem.with_suffix(".parquet"), "csv": stem.with_suffix(".csv")}
    if not paths["parquet"].exists():
        pq.write_table(table, paths["parquet"])
    if not paths["csv"].exists():
        pcsv.write_csv(table, paths["csv"], pcsv.WriteOptions(include_header=False))
    return paths


DRIVERS = {
    "bytewax": ("bytewax_driver.py", "parquet", ["--repeat"]),
    "pyflink": ("pyflink_driver.py", "csv", ["--repeat"]),
}


def run_driver(peer: str, path: Path, repeat: int, timeout: float) -> dict:
    script, _, _ = DRIVERS[peer]
    cmd = [str(envs.python(peer)), str(BENCH / "peers" / script), "--data", str(path), "--repeat", str(repeat)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        tail = " ".join((done.stderr or done.stdout).strip().splitlines()[-3:])
        raise RuntimeError(f"{peer} driver failed: {tail}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=None, help="events for tidal (default 10M, 2M with --quick)")
    ap.add_argument("--bytewax-events", type=int, default=None, help="default 1M, 100k with --quick")
    ap.add_argument("--pyflink-events", type=int, default=None, help="default 2M, 1M with --quick if asked for")
    ap.add_argument("--peers", default=None, help="comma-separated peers (default bytewax,pyflink; quick: bytewax)")
    ap.add_argument("--setup", dest="setup", action="store_true", default=None, help="create missing environments")
    ap.add_argument("--no-setup", dest="setup", action="store_false", help="only reuse existing environments")
    ap.add_argument("--driver-timeout", type=float, default=1200.0)
    add_common_args(ap, "bench/results/streaming_peers.json")
    args = ap.parse_args(argv)
    n = args.events or (2_000_000 if args.quick else 10_000_000)
    sizes = {
        "bytewax": args.bytewax_events or (100_000 if args.quick else 1_000_000),
        "pyflink": args.pyflink_events or (1_000_000 if args.quick else 2_000_000),
    }
    peers = args.peers.split(",") if args.peers else (["bytewax"] if args.quick else ["bytewax", "pyflink"])
    setup = True if args.setup is None else args.setup
    results = Results()
    if args.quick and not args.peers:
        results.note("quick mode: PyFlink skipped (a warm local mini-cluster job alone takes minutes here)")

    table = make_data(n)
    query = tidal_query(table)
    query.to_arrow()  # compile the kernels
    results.run(WORKLOAD, "tidal", lambda: query.to_arrow(), n, args.repeat)
    params = {"events": n, "peers": peers, "quick": args.quick, "environments": {}}

    for peer in peers:
        if peer not in DRIVERS:
            raise SystemExit(f"unknown peer {peer!r}; choose from {sorted(DRIVERS)}")
        if setup:
            env = envs.ensure(peer)
        else:
            env = {"ready": envs.ready(peer), "seconds": 0.0, "reused": True, "error": None}
        params["environments"][peer] = env
        if not env["ready"]:
            why = env["error"] or "environment not set up (run the full suite, or bench/peers/envs.py)"
            results.note(f"{peer} skipped: {why}")
            continue
        if not env["reused"]:
            results.note(f"{peer} environment created in {env['seconds']:.0f} s")
        prefix = table.slice(0, min(sizes[peer], n))
        paths = write_inputs(prefix)
        started = time.perf_counter()
        try:
            doc = run_driver(peer, paths[DRIVERS[peer][1]], args.repeat, args.driver_timeout)
        except (RuntimeError, subprocess.TimeoutExpired) as exc:
            results.note(f"{peer} failed: {exc}")
            continue
        wall = time.perf_counter() - started
        want = checksum(tidal_query(prefix).to_arrow())
        got = {k: doc[k] for k in want}
        if got != want:
            raise SystemExit(f"{peer} answered {got} but tidal {want}")
        runs = doc["runs_s"]
        results.record(
            WORKLOAD,
            peer,
            statistics.median(runs),
            max(runs) - min(runs),
            prefix.num_rows,
            runs,
            version=doc.get("version"),
            driver_wall_s=wall,
        )
    results.report(args.out, **params)
    return 0


if __name__ == "__main__":
    sys.exit(main())
