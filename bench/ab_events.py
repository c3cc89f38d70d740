"""Before/after of the CSV event queries (``bench_sql.event_queries``) in one run: two checkouts of tidal,
each in its own long-lived process, asked in turn (main, branch, DuckDB; ``--repeat`` rounds), CPU seconds
of each query (``time.process_time``: every thread of the process, so Arrow's reader threads count; steadier
than wall time on a shared machine). DuckDB runs with ``threads=1``, Arrow with ``--arrow-threads``.

    python bench/ab_events.py --before /work/main --after . [--queries 0,1,2,3,4] [--repeat 7]

``--before-env NAME=VALUE`` (repeatable) sets environment variables of the "before" process only: e.g.
``--before . --before-env MALLOC_MMAP_THRESHOLD_=33554432`` measures one checkout with glibc's mmap
threshold fixed against its dynamic one (two processes of the same checkout also differ by up to 20%
on a shared machine: compare such runs several times). The queries run one after another in each process,
so each query runs after the others, as in a user's session. ``--engine`` runs tidal's queries on the
stream engine even where the relational path (tidal/sql/relational.py) would answer them.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

WORKER = r"""
import os, sys, time
root, data, threads, engine = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] == "1"
sys.path[:0] = [root, os.path.join(root, "bench")]
import duckdb, pyarrow as pa
if threads:
    pa.set_cpu_count(threads)
from pathlib import Path
import bench_sql
from tidal.sql import plan
from tidal.sql.query import final_snapshot
events, users = bench_sql.ensure_events(1_000_000, Path(data))
os.chdir(data)
con = duckdb.connect()
con.execute("SET threads=1")
queries = bench_sql.event_queries(events, users)
print("ready", flush=True)
for line in sys.stdin:
    kind, i = line.split()
    _, sql, duck_sql, _, _ = queries[int(i)]
    if kind == "duckdb":
        fn = lambda: con.sql(duck_sql or sql).to_arrow_table()
    elif engine:  # the stream engine's answer, also where the relational path would take the query
        fn = lambda: (lambda q: q.finish(final_snapshot(q.events())))(plan(sql))
    else:
        fn = lambda: plan(sql).result()
    start = time.process_time()
    fn()
    print(time.process_time() - start, flush=True)
"""


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", required=True, help="root of the checkout measured as 'before'")
    ap.add_argument("--after", default=".", help="root of the checkout measured as 'after'")
    ap.add_argument("--queries", default="0,1,2,3,4")
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--arrow-threads", type=int, default=1)
    ap.add_argument("--data", default=str(Path(__file__).parent / ".data"))
    ap.add_argument("--before-env", action="append", default=[], help="NAME=VALUE for the 'before' process")
    ap.add_argument(
        "--engine", action="store_true", help="tidal's queries on the stream engine only (no relational path)"
    )
    args = ap.parse_args(argv)
    before_env = dict(item.split("=", 1) for item in args.before_env)
    Path(args.data).mkdir(parents=True, exist_ok=True)
    procs = {}
    for name, root in (("before", args.before), ("after", args.after)):
        cmd = [
            sys.executable,
            "-c",
            WORKER,
            str(Path(root).resolve()),
            str(Path(args.data).resolve()),
            str(args.arrow_threads),
            "1" if args.engine else "0",
        ]
        procs[name] = subprocess.Popen(
            cmd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=dict(os.environ, **(before_env if name == "before" else {})),
        )
        assert procs[name].stdout.readline().strip() == "ready"

    def ask(name: str, kind: str, q: int) -> float:
        p = procs[name]
        p.stdin.write(f"{kind} {q}\n")
        p.stdin.flush()
        return float(p.stdout.readline())

    names = [q[0] for q in __import__("bench_sql").event_queries(Path("e"), Path("u"))]
    for q in map(int, args.queries.split(",")):
        for name in procs:  # warm-up: kernels loaded, files in the page cache
            ask(name, "tidal", q)
        runs: dict[str, list[float]] = {"before": [], "after": [], "duckdb": []}
        for _ in range(args.repeat):
            runs["before"].append(ask("before", "tidal", q))
            runs["after"].append(ask("after", "tidal", q))
            runs["duckdb"].append(ask("after", "duckdb", q))
        m = {k: statistics.median(v) for k, v in runs.items()}
        print(
            f"{names[q]}: CPU s before {m['before']:.3f}, after {m['after']:.3f}, DuckDB {m['duckdb']:.3f}; "
            f"DuckDB/tidal before {m['duckdb'] / m['before']:.2f}, after {m['duckdb'] / m['after']:.2f}",
            flush=True,
        )
    for p in procs.values():
        p.stdin.close()
        p.wait()
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).parent))
    sys.exit(main())
