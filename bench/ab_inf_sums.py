"""Before/after of float SUM/AVG where values leave the snapshot (infinity counts beside the finite sum):
checkouts of tidal, each in its own long-lived process, asked in turn (``--repeat`` rounds); CPU seconds per
case (``time.process_time``), medians. Each worker first answers a small query whose right answer is known
(an infinity that enters and leaves: inf, then 1 + 2 = 3, then 2), so a wrong checkout is reported, not timed
as fast.

    python bench/ab_inf_sums.py --root before=/path/to/lead --root after=. [--events 1000000] [--repeat 5]

More roots can be given (``--root plain=...``: a checkout whose running sums are not compensated, to price
the compensation). Values: normal floats, one in 1000 an infinity (``--inf 0``: none); ``--values tiers``: values
of three and more magnitudes (1e300, 1e16, 1.0, 0.375), where sums are rebuilt from the values alive. Cases: constant
durations (FIFO queue), general lifetimes (heap), hopping windows fused and unfused, and two paths where
nothing leaves (start edges, tumbling windows: unchanged, as controls).
"""

from __future__ import annotations

import argparse

from ab_workers import run

WORKER = r"""
import math, os, sys
bench, root, n, duration, inf_rate = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
tiers = sys.argv[6] == "tiers"
sys.path[:0] = [root, bench]
os.chdir(root)
import numpy as np, pyarrow as pa
import tidal
from tidal import agg
rng = np.random.default_rng(18)
t = np.sort(rng.integers(0, n // 10, n))
k = rng.integers(0, 1000, n)
x = rng.normal(0, 100, n)
if tiers:  # three magnitudes alive at once: the compensation rounds, sums are rebuilt from the values alive
    x = rng.choice([1e300, 1e16, 1.0, 0.375], n)
x[rng.random(n) < inf_rate] = np.inf
table = pa.table({"t": t, "e": t + rng.integers(1, duration, n), "k": k, "x": x})
def aggs():
    return dict(s=agg.sum("x"), a=agg.average("x"))
def start():
    return tidal.from_arrow(table, time="t", kind="start").group_aggregate("k", **aggs()).count()
def tumbling():
    return tidal.from_arrow(table, time="t").tumbling_window(1000).group_aggregate("k", **aggs()).count()
def durations():
    return tidal.from_arrow(table, time="t").alter_duration(duration).group_aggregate("k", **aggs()).count()
def general():
    return tidal.from_arrow(table, time="t", end="e").group_aggregate("k", **aggs()).count()
def hopping():
    return tidal.from_arrow(table, time="t").hopping_window(1000, 100).group_aggregate("k", **aggs()).count()
def hopping_unfused():
    return tidal.from_arrow(table, time="t").hopping_window(1000, 100).group_aggregate(
        "k", **aggs(), variant="fifo").count()
def correct():
    small = pa.table({"t": [0, 1, 2], "x": [math.inf, 1.0, 2.0]})
    got = tidal.from_arrow(small, time="t").alter_duration(3).aggregate(s=agg.sum("x")).to_intervals()
    return got.column("s").to_pylist() == [math.inf, 3.0, 2.0]
CASES = {"start edges": start, "tumbling": tumbling, "constant duration": durations, "general": general,
         "hopping fused": hopping, "hopping unfused": hopping_unfused}
from ab_workers import serve
serve(CASES, correct())
"""

CASES = ["start edges", "tumbling", "constant duration", "general", "hopping fused", "hopping unfused"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", action="append", required=True, help="label=path of a tidal checkout")
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--duration", type=int, default=500, help="the constant duration (about 1/100 alive per key)")
    ap.add_argument("--inf", type=float, default=0.001, help="the share of values that are +inf")
    ap.add_argument("--values", choices=["normal", "tiers"], default="normal", help="tiers: 1e300, 1e16, 1.0, 0.375")
    args = ap.parse_args()
    roots = dict(r.split("=", 1) for r in args.root)
    run(roots, WORKER, [str(args.events), str(args.duration), str(args.inf), args.values], CASES, args.repeat)


if __name__ == "__main__":
    main()
