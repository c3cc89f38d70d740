"""tidal's command line.

``tidal demo`` runs the main job on the embedded engine: the ad-click stream of the Trill
paper (a 5% sample of users, projected to the ad) over generated data, prints the plan
and a summary of the result. ``tidal demo --events N`` sets the size.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
import pyarrow as pa


def _demo(args) -> int:
    import tidal

    rng = np.random.default_rng(args.seed)
    n = args.events
    table = pa.table(
        {
            "click_time": np.sort(rng.integers(0, 3_600_000_000, n)),  # microseconds in one hour
            "user_id": rng.integers(0, 1_000_000, n),
            "ad_id": rng.integers(0, 1_000, n),
        }
    )
    clicks = tidal.from_arrow(table, time="click_time")
    query = (
        clicks.where(lambda e: e.user_id % 100 < 5)
        .select(lambda e: {"ad_id": e.ad_id})
        .tumbling_window(5 * 60 * 1_000_000)
    )
    print("Query: 5% sample of users, their clicks per ad, in 5-minute tumbling windows\n")
    print(query.explain(), "\n")
    started = time.perf_counter()
    result = query.to_arrow()
    elapsed = time.perf_counter() - started
    windows = result.group_by(["sync_time", "ad_id"]).aggregate([([], "count_all")])
    top = windows.sort_by([("count_all", "descending")]).slice(0, 5)
    print(
        f"{n:,} clicks in, {result.num_rows:,} sampled clicks out, {elapsed:.3f} s ({n / elapsed / 1e6:.1f} M events/s)"
    )
    print("busiest (window start, ad) pairs:")
    for row in top.to_pylist():
        print(f"  window at {row['sync_time'] / 1e6:>7.0f} s  ad {row['ad_id']:>4}  {row['count_all']} clicks")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tidal", description="Temporal stream analytics for Python.")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="run the ad-click sample query on the embedded engine")
    demo.add_argument("--events", type=int, default=2_000_000, help="number of generated clicks")
    demo.add_argument("--seed", type=int, default=7)
    demo.set_defaults(run=_demo)
    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except Exception as exc:  # a person reads this, not a traceback
        from tidal.core.errors import TidalError

        if isinstance(exc, TidalError):
            print(f"tidal: {exc}", file=sys.stderr)
            return 2
        raise


if __name__ == "__main__":
    sys.exit(main())
