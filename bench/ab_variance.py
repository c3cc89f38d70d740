"""Before/after of variance/stddev on each physical path: two checkouts of tidal, each in its own
long-lived process, asked in turn (``--repeat`` rounds); CPU seconds per case (``time.process_time``),
medians. The values are 1e9 + small integers (the old sums of squares gave 0.0 on them; the answers
are checked against the exact ones on a few groups, so a wrong "before" is reported, not timed as fast).

    python bench/ab_variance.py --before /work/main --after . [--events 1000000] [--repeat 5] [--duration 500]

Cases: a grouped variance over start edges (SQL's plan of a table), the same with a where (the
filter-and-accumulate loop), tumbling and hopping windows (fused), constant durations (values leave:
the branch reads the alive multiset), and ``tidal query``'s relational path over a Parquet file.
"""

from __future__ import annotations

import argparse
import tempfile

from ab_workers import run

WORKER = r"""
import os, sys
bench, root, n, data, duration = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], int(sys.argv[5])
sys.path[:0] = [root, bench]
os.chdir(root)
import numpy as np, pyarrow as pa, pyarrow.parquet as pq
import tidal
from tidal import agg
from tidal.sql import plan
rng = np.random.default_rng(18)
t = np.sort(rng.integers(0, n // 10, n))
k = rng.integers(0, 1000, n)
x = 1e9 + rng.integers(-3, 4, n).astype(np.float64)
table = pa.table({"t": t, "k": k, "x": x})
path = os.path.join(data, "v.parquet")
if not os.path.exists(path):
    pq.write_table(table, path)
def start():
    return tidal.from_arrow(table, time="t", kind="start").group_aggregate("k", v=agg.variance("x")).count()
def filtered():
    return tidal.from_arrow(table, time="t", kind="start").where(lambda e: e.k != 7).group_aggregate(
        "k", v=agg.variance("x")).count()
def tumbling():
    return tidal.from_arrow(table, time="t").tumbling_window(1000).group_aggregate("k", v=agg.variance("x")).count()
def hopping():
    return tidal.from_arrow(table, time="t").hopping_window(1000, 100).group_aggregate("k", v=agg.variance("x")).count()
def sliding():
    return tidal.from_arrow(table, time="t").alter_duration(duration).group_aggregate("k", v=agg.variance("x")).count()
def relational():
    os.chdir(data)
    try:
        return plan("SELECT k, var_samp(x) AS v FROM 'v.parquet' GROUP BY k").result().num_rows
    finally:
        os.chdir(root)
def correct():
    got = plan("SELECT k, var_samp(x) AS v FROM 'v.parquet' GROUP BY k ORDER BY k LIMIT 3", ).result().to_pylist()
    want = [float(np.var(x[k == r["k"]] - 1e9, ddof=1)) for r in got]
    return all(abs(r["v"] - w) <= 1e-9 * w for r, w in zip(got, want))
CASES = {"start edges": start, "where+aggregate": filtered, "tumbling": tumbling, "hopping": hopping,
         "constant duration": sliding, "relational": relational}
os.chdir(data); ok = correct(); os.chdir(root)
from ab_workers import serve
serve(CASES, ok)
"""

CASES = ["start edges", "where+aggregate", "tumbling", "hopping", "constant duration", "relational"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--before", required=True)
    ap.add_argument("--after", required=True)
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--duration", type=int, default=500, help="the constant duration (about 1/100 of it alive per key)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as data:
        run({"before": args.before, "after": args.after}, WORKER, [str(args.events), data, str(args.duration)], CASES,
            args.repeat)  # fmt: skip


if __name__ == "__main__":
    main()
