"""Before/after of the join's numba kernels (hash inner join, clip, semi/anti-join, merge join), in one interleaved run.

Each checkout of tidal runs in its own long-lived worker (:mod:`ab_workers`); one round asks every worker for
each case in turn, and the table gives each case's median CPU seconds and the ratios to ``--before``. Every
case runs a whole query (``to_arrow``) over in-memory inputs of ``--events`` rows a side, keys in [0, 1000):

* ``hash_heap``: inner join of intervals of random lengths (endpoint heap on both sides);
* ``hash_fifo``: inner join of intervals of one constant duration (FIFO endpoint queues);
* ``hash_edges``: inner join of start and end edges (end edges find their start edge);
* ``semi`` / ``anti``: ``where_exists`` / ``where_not_exists`` of random intervals and edges;
* ``clip``: ``clip`` of random intervals by random intervals;
* ``merge``: the merge join (inputs sorted by key within each sync time, many events per sync time).

Each worker first writes a digest of every case's output (its columns, row for row, in order); after the
table the script says, case by case, whether the two checkouts' outputs are the same, and exits non-zero if not.

    python bench/ab_join_kernels.py --before /work/main --after . [--events 300000] [--repeat 9]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import ab_workers  # noqa: E402

WORKER = r"""
import sys
import hashlib, json, os
bench, root, n, digests = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
sys.path[:0] = [root, bench]
import numpy as np, pyarrow as pa
import tidal
from tidal import INFINITY
import ab_workers

def table(seed, shape, sorted_keys=False):
    rng = np.random.default_rng(seed)
    span = n // 10 if sorted_keys else n
    s = np.sort(rng.integers(0, span, n))
    k = rng.integers(0, 1000, n)
    if shape == "fifo":
        e = s + 40
    else:
        e = s + rng.integers(1, 200, n)
    edges = rng.random(n) < (0.0 if shape in ("fifo", "heap") else 0.5 if shape == "mixed" else 1.0)
    ends = edges & (rng.random(n) < 0.998)
    sync = np.concatenate([s, e[ends]])
    other = np.concatenate([np.where(edges, INFINITY, e), s[ends]])
    key = np.concatenate([k, k[ends]])
    val = np.concatenate([np.arange(n), np.arange(n)[ends]])
    order = np.lexsort((key, sync)) if sorted_keys else np.argsort(sync, kind="stable")
    return pa.table({"sync_time": sync[order], "other_time": other[order], "k": key[order], "v": val[order]})

def stream(t, sorted_keys=False):
    return tidal.from_arrow(t, time="sync_time", other="other_time", sorted_by="k" if sorted_keys else None)

def fifo(t):
    s = stream(t)
    return tidal.Stream(s.node.but(props=s.node.props.but(constant_duration=40)))

T = {name: (table(1, name), table(2, name)) for name in ("heap", "fifo", "edges", "mixed")}
M = (table(3, "mixed", True), table(4, "mixed", True))
Q = {
    "hash_heap": lambda: stream(T["heap"][0]).join(stream(T["heap"][1]), "k", "k", variant="hash"),
    "hash_fifo": lambda: fifo(T["fifo"][0]).join(fifo(T["fifo"][1]), "k", "k", variant="hash"),
    "hash_edges": lambda: stream(T["edges"][0]).join(stream(T["edges"][1]), "k", "k", variant="hash"),
    "semi": lambda: stream(T["mixed"][0]).where_exists(stream(T["mixed"][1]), "k", "k"),
    "anti": lambda: stream(T["mixed"][0]).where_not_exists(stream(T["mixed"][1]), "k", "k"),
    "clip": lambda: stream(T["heap"][0]).clip(stream(T["heap"][1]), "k", "k"),
    "merge": lambda: stream(M[0], True).join(stream(M[1], True), "k", "k", variant="merge"),
}
def digest(t):
    h = hashlib.sha256(str(t.schema).encode())
    for c in t.columns:
        h.update(repr(c.to_pylist()).encode())
    return f"{t.num_rows} rows {h.hexdigest()[:16]}"
with open(os.path.join(digests, f"{os.getpid()}.json"), "w") as fh:
    json.dump({"root": root, "digests": {name: digest(q().to_arrow()) for name, q in Q.items()}}, fh)
ab_workers.serve({name: (lambda q=q: q().to_arrow()) for name, q in Q.items()}, True)
"""

CASES = ["hash_heap", "hash_fifo", "hash_edges", "semi", "anti", "clip", "merge"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--before", required=True)
    ap.add_argument("--after", required=True)
    ap.add_argument("--events", type=int, default=300_000)
    ap.add_argument("--repeat", type=int, default=9)
    ap.add_argument("--cases", default=",".join(CASES))
    a = ap.parse_args()
    roots = {"before": str(Path(a.before).resolve()), "after": str(Path(a.after).resolve())}
    with tempfile.TemporaryDirectory() as tmp:
        ab_workers.run(roots, WORKER, [str(a.events), tmp], a.cases.split(","), a.repeat)
        found = [json.loads(p.read_text()) for p in Path(tmp).glob("*.json")]
    for name in a.cases.split(","):
        seen = {f["root"]: f["digests"][name] for f in found}
        same = len(set(seen.values())) == 1
        print(f"{name:20}{'same output' if same else 'DIFFERENT OUTPUT'}: {seen[roots['before']]}")
        if not same:
            sys.exit(f"{name}: the checkouts' outputs differ: {seen}")


if __name__ == "__main__":
    main()
