"""Before/after of ``tidal query`` on the 2M-row taxi Parquet file (issue 19), in one interleaved run.

``SELECT passenger_count, COUNT(*), AVG(total_amount) FROM 'taxi_2000000.parquet' GROUP BY passenger_count``
(bench_sql's taxi query):

* **in process**: two checkouts of tidal, each in its own long-lived Python process (``tidal.sql.plan(sql)
  .result()``, planning included), asked in turn with DuckDB from Python (a third process) at its default threads
  (as a user runs it) and at ``threads=1``; wall and CPU seconds (``time.process_time``: every thread of
  the process). ``--numba`` loads numba in the workers first, as a Python program that used the stream
  API has it (bench_sql imports ``tidal.agg``): then the relational path's compiled passes apply. The
  query repeated reuses its plan (``tidal.sql.plan_cache``); ``--no-plan-cache`` plans each one afresh.
* **as a process**: ``python -m tidal.cli.main query SQL --format batch-csv`` of each checkout and
  ``python -c "import duckdb; ..."`` (DuckDB's default threads), in turn, start-up included; wall and
  CPU seconds of the child (user + system).

Arrow keeps its default threads (every core) unless ``--arrow-threads N``. Medians of ``--repeat`` rounds.

    python bench/ab_taxi.py --before /work/main --after . [--repeat 9] [--numba] [--processes 9]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

QUERY = "SELECT passenger_count, COUNT(*), AVG(total_amount) FROM '{path}' GROUP BY passenger_count"

WORKER = r"""
import os, sys, time
root, data, threads, numba, sql = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] == "1", sys.argv[5]
fresh = sys.argv[6] == "1"
sys.path[:0] = [root]
import duckdb, pyarrow as pa
if threads:
    pa.set_cpu_count(threads)
if numba:
    import numba  # noqa: F401
from tidal.sql import plan
os.chdir(data)
cons = {"duckdb": duckdb.connect(), "duckdb1": duckdb.connect()}
cons["duckdb1"].execute("SET threads=1")
run = {"tidal": lambda: plan(sql).result()}
if fresh:  # every query planned afresh, as the first query of a process is (a checkout without the cache: as it is)
    try:
        from tidal.sql import plan_cache
        run["tidal"] = lambda: (plan_cache.clear(), plan(sql).result())[1]
    except ImportError:
        pass
run.update({k: (lambda c=c: c.sql(sql).to_arrow_table()) for k, c in cons.items()})
answer = sorted(map(str, plan(sql).result().column(1).to_pylist()))
assert answer == sorted(map(str, cons["duckdb"].sql(sql).to_arrow_table().column(1).to_pylist())), answer
print("ready", flush=True)
for line in sys.stdin:
    fn = run[line.strip()]
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    print(time.perf_counter() - wall, time.process_time() - cpu, flush=True)
"""


def _child_seconds(cmd: list[str], cwd: Path, env: dict) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, env=env, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def _line(label: str, runs: dict, peer: str) -> str:
    med = {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v)) for k, v in runs.items()}
    parts = [f"{k} wall {w * 1000:.1f} ms, CPU {c * 1000:.1f} ms" for k, (w, c) in med.items()]
    ratios = [
        f"{peer}/{k}: wall {med[peer][0] / med[k][0]:.2f}, CPU {med[peer][1] / med[k][1]:.2f}"
        for k in ("before", "after")
    ]
    return f"{label}: " + "; ".join(parts) + "\n    " + "; ".join(ratios)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", required=True, help="root of the checkout measured as 'before'")
    ap.add_argument("--after", default=".", help="root of the checkout measured as 'after'")
    ap.add_argument("--repeat", type=int, default=9, help="in-process rounds")
    ap.add_argument("--processes", type=int, default=9, help="process rounds (0: none)")
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--numba", action="store_true", help="numba loaded in the in-process workers")
    ap.add_argument("--arrow-threads", type=int, default=0, help="0: Arrow's default (every core)")
    ap.add_argument("--no-plan-cache", action="store_true", help="in process: each query planned afresh")
    ap.add_argument("--data", default=str(Path(__file__).parent / ".data"))
    args = ap.parse_args(argv)
    sys.path.insert(0, str(Path(__file__).parent))
    import bench_sql

    data = Path(args.data).resolve()
    path = bench_sql.ensure_files(args.rows, data)["parquet"]
    sql = QUERY.format(path=path.name)
    roots = {"before": Path(args.before).resolve(), "after": Path(args.after).resolve()}
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # a user's interpreter caches bytecode
    procs = {}
    # DuckDB runs in a third worker (of the 'after' checkout): in the 'after' worker its queries slowed
    # that worker's own tidal runs (swapping --before and --after moved ~3 ms CPU to whichever was 'after')
    for name, root in {**roots, "peer": roots["after"]}.items():
        cmd = [sys.executable, "-c", WORKER, str(root), str(data), str(args.arrow_threads), str(int(args.numba)), sql,
               str(int(args.no_plan_cache))]  # fmt: skip
        procs[name] = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
        assert procs[name].stdout.readline().strip() == "ready"

    def ask(name: str, kind: str) -> tuple[float, float]:
        p = procs[name]
        p.stdin.write(kind + "\n")
        p.stdin.flush()
        wall, cpu = p.stdout.readline().split()
        return float(wall), float(cpu)

    for name in procs:  # warm-up: kernels loaded, the file in the page cache
        ask(name, "tidal")
    runs: dict[str, list] = {"before": [], "after": [], "duckdb": [], "duckdb1": []}
    for _ in range(args.repeat):
        runs["before"].append(ask("before", "tidal"))
        runs["after"].append(ask("after", "tidal"))
        runs["duckdb"].append(ask("peer", "duckdb"))
        runs["duckdb1"].append(ask("peer", "duckdb1"))
    for p in procs.values():
        p.stdin.close()
        p.wait()
    cache = "; plans not reused" if args.no_plan_cache else ""
    label = f"in process ({'numba loaded' if args.numba else 'no numba'}{cache}; duckdb: default threads, duckdb1: one)"
    print(_line(label, runs, "duckdb"))
    print(_line("    ... against DuckDB at one thread", runs, "duckdb1"))
    if args.processes:
        tidal_cmd = [sys.executable, "-m", "tidal.cli.main", "query", sql, "--format", "batch-csv"]
        duck_cmd = [sys.executable, "-c", f"import duckdb; print(duckdb.sql({sql!r}).fetchall())"]
        for root in roots.values():  # bytecode written once, as after an install
            _child_seconds(tidal_cmd, data, dict(env, PYTHONPATH=str(root)))
        prun: dict[str, list] = {"before": [], "after": [], "duckdb": []}
        for _ in range(args.processes):
            for name, root in roots.items():
                prun[name].append(_child_seconds(tidal_cmd, data, dict(env, PYTHONPATH=str(root))))
            prun["duckdb"].append(_child_seconds(duck_cmd, data, env))
        print(_line("as a process (start-up included; DuckDB at its default threads)", prun, "duckdb"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
