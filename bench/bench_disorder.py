"""Benchmark: sort-as-needed plans and the Impatience framework (Impatience paper, Fig. 9 and Fig. 10).

Usage::

    python bench/bench_disorder.py [--quick] [--out bench/results/disorder.json]

Part 1, sort-as-needed (Fig. 9): the same query with the sort at ingress (``from_arrow(disorder=...)``
then operators) and with the order-insensitive operators before it (``sorted=False`` ... ``to_stream``):
a selection at several selectivities, a projection of one field out of four, a tumbling window of
several sizes.  Data: timestamps 0..N-1, 30% of events moved back by |N(0, 64)| (the paper's
synthetic setting), four int32 payload fields; reorder latency = the largest lateness plus the
largest window (nothing is late in either plan).

Part 2, the framework (Fig. 10): a tumbling-window count over log-like disorder with three reorder
latencies (a punctuation every 10,000 events), four ways: MaxLatency (one sort at the largest
latency), MinLatency (the smallest; loses late events), basic framework (each output = union of
delay bands, counted separately), advanced framework (count each band once, merge partial counts
across bands).  Memory = peak events held by the
sorters plus peak events held by union operators, and the same in bytes (16 bytes of times per event
plus payload widths).  The windowed count is a small in-order operator defined here (one output row per
window when a punctuation passes it), since the engine's aggregate operator has not landed yet; it is
the same operator in every variant, so the comparison is like for like.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time

import numpy as np
import pyarrow as pa

import tidal
from tidal.core.batch import EventBatch
from tidal.ops.base import Operator
from tidal.ops.union import UnionOp
from tidal.plan import PlanNode, Properties

# --------------------------------------------------------------------------------------------------
# data
# --------------------------------------------------------------------------------------------------


def synthetic(n: int, p: float = 0.3, d: float = 64.0, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    t = np.arange(n, dtype=np.int64)
    m = rng.random(n) < p
    t[m] -= np.abs(rng.normal(0.0, d, int(m.sum()))).astype(np.int64)
    cols = {"t": t}
    for name in "abcd":
        cols[name] = rng.integers(0, 1_000_000, n, dtype=np.int32)
    return pa.table(cols)


def loglike(n: int, seed: int = 0) -> pa.Table:
    """Mostly small jitter, a tail of late events, a few very late bursts (timestamps ~ arrival index)."""
    rng = np.random.default_rng(seed)
    t = np.arange(n, dtype=np.int64)
    u = rng.random(n)
    t -= np.abs(rng.normal(0, 10, n)).astype(np.int64)
    mid = u < 0.08
    t[mid] -= np.abs(rng.normal(0, 2_000, int(mid.sum()))).astype(np.int64)
    far = u > 0.995
    t[far] -= rng.integers(5_000, 150_000, int(far.sum()))
    return pa.table({"t": t, "k": rng.integers(0, 100, n, dtype=np.int32)})


def max_lateness(t: np.ndarray) -> int:
    return int((np.maximum.accumulate(t) - t).max())


# --------------------------------------------------------------------------------------------------
# a windowed count as an in-order user operator
# --------------------------------------------------------------------------------------------------


class WindowSumOp(Operator):
    """Sums field ``count`` (or counts events) per sync time; emits [w, w+size) with the total when
    a punctuation passes w.  On windowed input (every event lives [w, w+size)) this is the snapshot
    count of each window."""

    name = "WindowSum"

    def __init__(self, size: int, field: str | None):
        super().__init__()
        self.size, self.field = size, field
        self.keys = np.empty(0, np.int64)
        self.sums = np.empty(0, np.int64)

    def on_batch(self, batch: EventBatch) -> None:
        b = batch.compact()
        if not len(b):
            return
        w = np.concatenate([self.keys, b.sync])
        v = b.columns[self.field].to_numpy() if self.field else np.ones(len(b), np.int64)
        keys, inv = np.unique(w, return_inverse=True)
        self.sums = np.bincount(inv, np.concatenate([self.sums, v]).astype(np.float64), len(keys)).astype(np.int64)
        self.keys = keys

    def on_punctuation(self, t: int) -> None:
        cut = int(np.searchsorted(self.keys, t, side="left"))  # windows starting before t are final
        if cut:
            ks, vs = self.keys[:cut], self.sums[:cut]
            self.keys, self.sums = self.keys[cut:], self.sums[cut:]
            self.emit(EventBatch(ks, ks + self.size, {"count": pa.array(vs)}))
        self.emit_punctuation(t)

    def on_completed(self) -> None:
        self.on_punctuation(tidal.INFINITY)
        self.emit_completed()


class WindowSum(PlanNode):
    label = "WindowSum"

    def __init__(self, input: PlanNode, size: int, field: str | None):
        schema = pa.schema([("count", pa.int64())])
        super().__init__((input,), schema, Properties(constant_duration=size), size=size, field=field)

    def make(self):
        return WindowSumOp(self.size, self.field)


def window_sum(stream: tidal.Stream, size: int, field: str | None = None) -> tidal.Stream:
    return tidal.Stream(WindowSum(stream.node, size, field))


class UnionMeter:
    """Tracks the peak number of events held by all union operators of a run."""

    def __init__(self):
        self.ops: list[UnionOp] = []
        self.peak = 0

    def __enter__(self):
        meter, orig_init, orig_batch = self, UnionOp.__init__, UnionOp.on_side_batch
        self._orig = (orig_init, orig_batch)

        def init(op):
            orig_init(op)
            meter.ops.append(op)

        def on_side_batch(op, side, batch):
            orig_batch(op, side, batch)
            held = sum(len(b) for o in meter.ops for s in o.pending for b in s)
            meter.peak = max(meter.peak, held)

        UnionOp.__init__, UnionOp.on_side_batch = init, on_side_batch
        return self

    def __exit__(self, *exc):
        UnionOp.__init__, UnionOp.on_side_batch = self._orig


# --------------------------------------------------------------------------------------------------
# part 1: sort-as-needed
# --------------------------------------------------------------------------------------------------


def timed(fn, repeat: int):
    """(median seconds, last result, every run's seconds)."""
    runs, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        runs.append(time.perf_counter() - t0)
    return sorted(runs)[len(runs) // 2], out, runs


def sort_as_needed(n: int, repeat: int) -> list[dict]:
    data = synthetic(n)
    # windows can add up to (size - 1) ticks of lateness to what reaches the sort: leave room so that
    # nothing is late in either plan and both count the same events
    lat = max_lateness(data.column("t").to_numpy()) + 1000
    cases = []
    cases.append(("selection 1%", lambda s: s.where(lambda e: e.a % 100 < 1)))
    cases.append(("selection 10%", lambda s: s.where(lambda e: e.a % 100 < 10)))
    cases.append(("selection 50%", lambda s: s.where(lambda e: e.a % 100 < 50)))
    cases.append(("projection 1 of 4 fields", lambda s: s.select("a")))
    for w in (10, 100, 1000):
        cases.append((f"tumbling window {w}", lambda s, w=w: s.tumbling_window(w)))
    cases.append(
        (
            "selection 10% + projection + window 100",
            lambda s: s.where(lambda e: e.a % 100 < 10).select("a").tumbling_window(100),
        )
    )
    rows = []
    for name, query in cases:
        first = lambda q=query: q(tidal.from_arrow(data, time="t", disorder="drop", reorder_latency=lat)).count()
        later = lambda q=query: q(tidal.from_arrow(data, time="t", sorted=False)).to_stream(lat, "drop").count()
        t_first, c_first, runs_first = timed(first, repeat)
        t_later, c_later, runs_later = timed(later, repeat)
        assert c_first == c_later, (name, c_first, c_later)
        row = {
            "query": name,
            "n": n,
            "reorder_latency": lat,
            "events_out": c_first,
            "sort_first_s": round(t_first, 4),
            "sort_as_needed_s": round(t_later, 4),
            "sort_first_runs_s": runs_first,
            "sort_as_needed_runs_s": runs_later,
            "sort_first_meps": n / t_first / 1e6,
            "sort_as_needed_meps": n / t_later / 1e6,
            "speedup": t_first / t_later,
        }
        rows.append(row)
        print(
            f"  {name:<42}{row['sort_first_meps']:>9.2f}{row['sort_as_needed_meps']:>12.2f}{row['speedup']:>9.2f}x",
            flush=True,
        )
    return rows


# --------------------------------------------------------------------------------------------------
# part 2: the framework
# --------------------------------------------------------------------------------------------------


def framework(n: int, window: int, latencies: list[int], repeat: int) -> list[dict]:
    data = loglike(n)
    t = data.column("t").to_numpy()
    bytes_per_event = 16 + 4  # sync + other + the int32 payload field
    truth = np.unique(t - t % window, return_counts=True)

    def source():
        # a punctuation every 10,000 events (the paper's setting), read in batches of that size
        return tidal.from_arrow(
            data, time="t", sorted=False, batch_size=10_000, punctuate_every_events=10_000
        ).tumbling_window(window)

    def one(lat):
        s = source().to_stream(lat, "drop")
        return [window_sum(s, window)], s

    def basic():
        ss = source().to_streams(latencies, disorder="drop")
        return [window_sum(o, window) for o in ss], ss

    def advanced():
        ss = source().to_streams(
            latencies,
            piq=lambda b: window_sum(b, window),
            merge=lambda prev, part: window_sum(prev.union(part), window, "count"),
            disorder="drop",
        )
        return list(ss), ss

    variants = {
        "MaxLatency": lambda: one(latencies[-1]),
        "MinLatency": lambda: one(latencies[0]),
        "basic": basic,
        "advanced": advanced,
    }
    rows = []
    for name, build in variants.items():
        best, tables, meter, stats, runs = float("inf"), None, None, None, []
        for _ in range(repeat):
            outs, handle = build()
            with UnionMeter() as m:
                t0 = time.perf_counter()
                sinks = tidal.Streams(outs, [], latencies).to_arrow()
                sec = time.perf_counter() - t0
            runs.append(sec)
            if sec < best:
                best, tables, meter = sec, sinks, m
                stats = handle.disorder_stats()[0]
        best = sorted(runs)[len(runs) // 2]  # report the median run (memory figures from the fastest)
        last = tables[-1]
        got = dict(zip(last.column("sync_time").to_pylist(), last.column("count").to_pylist(), strict=True))
        counted = sum(got.values())
        exact = sum(1 for w, c in zip(*truth, strict=True) if got.get(int(w)) == int(c))
        held = stats.peak_buffered + meter.peak
        row = {
            "variant": name,
            "n": n,
            "latencies": latencies if name in ("basic", "advanced") else [latencies[-1 if name == "MaxLatency" else 0]],
            "seconds": round(best, 4),
            "runs_s": runs,
            "meps": n / best / 1e6,
            "peak_sorter_events": stats.peak_buffered,
            "peak_union_events": meter.peak,
            "peak_held_events": held,
            "peak_held_bytes": held * bytes_per_event,
            "completeness": counted / n,
            "windows_exact": exact / len(truth[0]),
            "outputs": len(tables),
        }
        rows.append(row)
        print(
            f"  {name:<12}{row['meps']:>8.2f}{row['peak_sorter_events']:>12,}{row['peak_union_events']:>12,}"
            f"{held * bytes_per_event / 1e6:>10.2f}{row['completeness']:>10.2%}{row['windows_exact']:>9.2%}",
            flush=True,
        )
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="200k events (default 4M)")
    ap.add_argument("--n", type=int, default=None)
    ap.add_argument("--repeat", type=int, default=3, help="runs per measurement (the median is reported)")
    ap.add_argument("--out", default="bench/results/disorder.json")
    args = ap.parse_args(argv)
    n = args.n or (200_000 if args.quick else 4_000_000)
    repeat = max(1, args.repeat)
    tidal.from_arrow(synthetic(2000), time="t", disorder="drop", reorder_latency=500).count()  # warm numba

    print(f"sort-as-needed, N={n:,} (M events/s; median of {repeat})")
    print(f"  {'query':<42}{'sort first':>9}{'sort later':>12}{'speedup':>9}")
    part1 = sort_as_needed(n, repeat)

    latencies = [100, 10_000, 200_000]
    window = 1000
    print(f"\nImpatience framework, tumbling-window ({window}) count, latencies {latencies}, N={n:,}")
    head = f"  {'variant':<12}{'M ev/s':>8}{'sorter peak':>12}{'union peak':>12}{'MB held':>10}"
    print(head + f"{'complete':>10}{'exact':>9}")
    part2 = framework(n, window, latencies, repeat)

    out = {
        "benchmark": "disorder",
        "quick": bool(args.quick),
        "n": n,
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "platform": platform.platform()},
        "sort_as_needed": part1,
        "framework": {"window": window, "latencies": latencies, "results": part2},
    }
    if args.out:
        os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
        with open(args.out, "w") as fh:
            json.dump(out, fh, indent=1)
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
