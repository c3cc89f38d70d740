"""Benchmark: Impatience sort against heap-based and buffer-plus-sort incremental sorters.

Usage::

    python bench/bench_impatience.py [--quick] [--repeat 3] [--out bench/results/impatience.json]

Workloads
  * synthetic (paper section VI-A style): timestamps 0..N-1 in arrival order, p% of the events moved back
    by |N(0, d)|.
  * loglike: many interleaved sorted sources with different fixed lags, plus outages after which a source
    uploads its backlog in one burst (severely late, but each source stays sorted).

Punctuation every F events, at (high watermark so far) - L where L is the largest lateness in the data
(so nothing is dropped).  Events are pushed in batches of min(F, 65536), one punctuation after each F.

Sorters (all release (time, row_id) with ties in arrival order, and all flag late events):
  * impatience   tidal.ops.impatience.ImpatienceSorter, through ``push_punctuate``: one compiled call per
                 block of punctuation intervals (at most 65536 events, whole intervals), which is how the
                 reorder operator feeds it many small punctuations
  * imp-per-call the same sorter driven like the competitors (a push and a punctuate call each); shown
                 beside, not a competitor
  * heap-numba   binary heap keyed (time, row) in numba-compiled code
  * heapq        heapq of (time, row) tuples, pure Python
  * buffer-sort  append to a buffer; per punctuation argsort(kind='stable') the buffer (sorted remainder +
                 new arrivals, so timsort is adaptive), release the prefix <= t, keep the rest

Every (sorter, config) run has a wall-clock budget; a sorter that exceeds it is stopped at the next
punctuation and its rate is measured on the prefix it processed (column "events" in the table).
Each (sorter, config) is run --repeat times; the table shows the median rate (the JSON also has every run).
--quick: 500k events, 0.3 s budget, two datasets (one synthetic, the log-like one), F in {10, 1000, 100000}.
--datasets / --freqs / --skip: only the datasets whose name contains one of the words given, only those F, and
without the competitors named (``--skip heapq``: the pure-Python heap, never the best, runs its full budget at 10M).
--clock cpu: rates from this process's CPU time (``time.process_time``) instead of wall-clock time: steadier on a
shared machine, where other processes take the cores in turn.
"""

from __future__ import annotations

import argparse
import heapq
import json
import os
import platform
import time

import numba as nb
import numpy as np

from tidal.ops.impatience import INT64_MIN, ImpatienceSorter

# --------------------------------------------------------------------------------------------------
# data
# --------------------------------------------------------------------------------------------------


def gen_synthetic(n: int, p: float, d: float, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    t = np.arange(n, dtype=np.int64)
    m = rng.random(n) < p
    t[m] -= np.abs(rng.normal(0.0, d, int(m.sum()))).astype(np.int64)
    return t


def gen_loglike(n: int, sources: int = 200, outages: int = 30, seed: int = 0) -> np.ndarray:
    """Arrival-ordered event times from `sources` sorted sources with per-source lag and outage bursts."""
    rng = np.random.default_rng(seed)
    tau = np.arange(n, dtype=np.int64)  # event i is generated at time i by source src[i]
    src = rng.integers(0, sources, n)
    lag = rng.exponential(50.0, sources).astype(np.int64)
    slow = rng.choice(sources, max(1, sources // 20), replace=False)
    lag[slow] += rng.integers(1_000, 20_000, slow.size)  # a few far-away sources
    arrival = tau + lag[src]
    for _ in range(outages):  # source offline for a while, then uploads its backlog at once
        s = rng.integers(0, sources)
        a = int(rng.integers(0, n))
        b = a + int(rng.integers(1_000, 50_000))
        hit = (src == s) & (tau >= a) & (tau < b)
        arrival[hit] = b + lag[s]
    order = np.argsort(arrival, kind="stable")
    return tau[order]


def max_lateness(t: np.ndarray) -> int:
    return int((np.maximum.accumulate(t) - t).max())


# --------------------------------------------------------------------------------------------------
# competitor sorters
# --------------------------------------------------------------------------------------------------


class _Releasing:
    """A competitor's punctuation: the watermark moves up and what is at or below it leaves (``_release``)."""

    def punctuate(self, t):
        self.wm = max(self.wm, t)
        return self._release(t)

    def flush_all(self):
        return self._release(np.iinfo(np.int64).max)


class HeapqSorter(_Releasing):
    name = "heapq"

    def __init__(self):
        self.heap: list[tuple[int, int]] = []
        self.wm = int(INT64_MIN)
        self.row = 0

    def push(self, times):
        late = times < self.wm
        heap, push, wm = self.heap, heapq.heappush, self.wm
        row = self.row
        for x in times.tolist():
            if x >= wm:
                push(heap, (x, row))
            row += 1
        self.row = row
        return late

    def _release(self, t):
        heap, pop = self.heap, heapq.heappop
        out = []
        while heap and heap[0][0] <= t:
            out.append(pop(heap))
        if not out:
            return np.empty(0, np.int64), np.empty(0, np.int64)
        a = np.array(out, dtype=np.int64)
        return a[:, 0].copy(), a[:, 1].copy()


@nb.njit(cache=True)
def _heap_push(times, row0, wm, ht, hr, size):
    for i in range(times.shape[0]):
        x = times[i]
        if x < wm:
            continue
        r = row0 + i
        j = size
        size += 1
        while j > 0:
            parent = (j - 1) >> 1
            pt = ht[parent]
            if pt < x or (pt == x and hr[parent] < r):
                break
            ht[j] = pt
            hr[j] = hr[parent]
            j = parent
        ht[j] = x
        hr[j] = r
    return size


@nb.njit(cache=True)
def _heap_pop_le(t, ht, hr, size, out_t, out_r):
    k = 0
    while size > 0 and ht[0] <= t:
        out_t[k] = ht[0]
        out_r[k] = hr[0]
        k += 1
        size -= 1
        x = ht[size]
        r = hr[size]
        j = 0
        while True:
            c = 2 * j + 1
            if c >= size:
                break
            if c + 1 < size and (ht[c + 1] < ht[c] or (ht[c + 1] == ht[c] and hr[c + 1] < hr[c])):
                c += 1
            if x < ht[c] or (x == ht[c] and r < hr[c]):
                break
            ht[j] = ht[c]
            hr[j] = hr[c]
            j = c
        ht[j] = x
        hr[j] = r
    return k, size


class NumbaHeapSorter(_Releasing):
    name = "heap-numba"

    def __init__(self, cap=1024):
        self.ht = np.empty(cap, np.int64)
        self.hr = np.empty(cap, np.int64)
        self.ot = np.empty(cap, np.int64)
        self.orr = np.empty(cap, np.int64)
        self.size = 0
        self.wm = int(INT64_MIN)
        self.row = 0

    def push(self, times):
        need = self.size + times.shape[0]
        if need > self.ht.shape[0]:
            cap = max(need, 2 * self.ht.shape[0])
            for name in ("ht", "hr"):
                a = np.empty(cap, np.int64)
                a[: self.size] = getattr(self, name)[: self.size]
                setattr(self, name, a)
            self.ot = np.empty(cap, np.int64)
            self.orr = np.empty(cap, np.int64)
        self.size = _heap_push(times, self.row, self.wm, self.ht, self.hr, self.size)
        self.row += times.shape[0]
        return times < self.wm

    def _release(self, t):
        k, self.size = _heap_pop_le(t, self.ht, self.hr, self.size, self.ot, self.orr)
        return self.ot[:k].copy(), self.orr[:k].copy()


class BufferSortSorter(_Releasing):
    name = "buffer-sort"

    def __init__(self, cap=1024):
        self.bt = np.empty(cap, np.int64)
        self.br = np.empty(cap, np.int64)
        self.n = 0
        self.n_sorted = 0  # prefix of the buffer known to be sorted
        self.wm = int(INT64_MIN)
        self.row = 0

    def push(self, times):
        late = times < self.wm
        keep = times[~late]
        rows = self.row + np.flatnonzero(~late)
        self.row += times.shape[0]
        m = keep.shape[0]
        if self.n + m > self.bt.shape[0]:
            cap = max(self.n + m, 2 * self.bt.shape[0])
            bt, br = np.empty(cap, np.int64), np.empty(cap, np.int64)
            bt[: self.n], br[: self.n] = self.bt[: self.n], self.br[: self.n]
            self.bt, self.br = bt, br
        self.bt[self.n : self.n + m] = keep
        self.br[self.n : self.n + m] = rows
        self.n += m
        return late

    def _release(self, t):
        n = self.n
        if n > self.n_sorted:
            bt = self.bt[:n]
            order = np.argsort(bt, kind="stable")
            self.bt[:n] = bt[order]
            self.br[:n] = self.br[:n][order]
        k = int(np.searchsorted(self.bt[:n], t, side="right"))
        out_t, out_r = self.bt[:k].copy(), self.br[:k].copy()
        rest = n - k
        self.bt[:rest] = self.bt[k:n]
        self.br[:rest] = self.br[k:n]
        self.n = self.n_sorted = rest
        return out_t, out_r


class ImpatienceBench(ImpatienceSorter):
    """Driven through ``push_punctuate``: one compiled call per block of punctuation intervals."""

    __slots__ = ()
    name = "impatience"


class ImpatiencePerCall(ImpatienceSorter):
    """The same sorter driven like the competitors: one ``push`` and one ``punctuate`` call each."""

    __slots__ = ()
    name = "imp-per-call"
    per_call = True


OURS = ("impatience", "imp-per-call")  # not competitors
SORTERS = {
    "impatience": ImpatienceBench,
    "imp-per-call": ImpatiencePerCall,
    "heap-numba": NumbaHeapSorter,
    "buffer-sort": BufferSortSorter,
    "heapq": HeapqSorter,
}


# --------------------------------------------------------------------------------------------------
# driver
# --------------------------------------------------------------------------------------------------


_clock = time.perf_counter  # --clock cpu: time.process_time


def run_one(make, t: np.ndarray, freq: int, lat: int, budget: float, batch_cap: int = 65536):
    """Feed t with a punctuation every `freq` events.  Returns (events processed, seconds, released)."""
    n = t.shape[0]
    batch = min(freq, batch_cap)
    hw = np.maximum.accumulate(t)
    s = make()
    released = 0
    pos = 0
    t0 = _clock()
    if _fused(s):
        block = max(freq, batch_cap // freq * freq)  # whole punctuation intervals per call
        while pos < n:
            end = min(pos + block, n)
            ends = _ends(pos, end, freq)
            released += len(s.push_punctuate(t[pos:end], ends - pos, hw[ends - 1] - lat)[1])
            pos = end
            if _clock() - t0 > budget:
                break
        released += s.flush_all()[0].shape[0]
        return pos, _clock() - t0, released
    while pos < n:
        end = min(pos + freq, n)
        for b in range(pos, end, batch):
            s.push(t[b : min(b + batch, end)])
        released += s.punctuate(int(hw[end - 1]) - lat)[0].shape[0]
        pos = end
        if _clock() - t0 > budget:
            break
    released += s.flush_all()[0].shape[0]
    return pos, _clock() - t0, released


def _fused(sorter) -> bool:
    return hasattr(sorter, "push_punctuate") and not getattr(sorter, "per_call", False)


def _ends(pos: int, end: int, freq: int) -> np.ndarray:
    """Positions (absolute) after which the events [pos, end) are punctuated: every freq-th, and the end."""
    ends = np.arange(pos + freq, end + 1, freq, dtype=np.int64)
    if not len(ends) or ends[-1] != end:
        ends = np.append(ends, end)
    return ends


def check_sorters(t: np.ndarray, freq: int, lat: int) -> None:
    """Correctness cross-check of all sorters on a small stream (not timed)."""
    ref = None
    for name, make in SORTERS.items():
        s = make()
        outs_t, outs_r = [], []
        hw = np.maximum.accumulate(t)
        if _fused(s):
            ends = _ends(0, t.shape[0], freq)
            _, a, b, _ = s.push_punctuate(t, ends, hw[ends - 1] - lat)
            outs_t.append(a)
            outs_r.append(b)
        for pos in range(0, t.shape[0] if not _fused(s) else 0, freq):
            end = min(pos + freq, t.shape[0])
            s.push(t[pos:end])
            a, b = s.punctuate(int(hw[end - 1]) - lat)
            outs_t.append(a)
            outs_r.append(b)
        a, b = s.flush_all()
        got = (np.concatenate(outs_t + [a]), np.concatenate(outs_r + [b]))
        if ref is None:
            ref = got
            assert (np.diff(got[0]) >= 0).all()
        else:
            assert np.array_equal(ref[0], got[0]) and np.array_equal(ref[1], got[1]), name


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="N=500k, 0.3 s budgets, two datasets (default N=10M)")
    ap.add_argument("--n", type=int, default=None, help="override the number of events")
    ap.add_argument("--budget", type=float, default=None, help="seconds per (sorter, config) run")
    ap.add_argument("--repeat", type=int, default=3, help="runs per (sorter, config); the median rate is reported")
    ap.add_argument("--out", default="bench/results/impatience.json")
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall", help="wall-clock or this process's CPU time")
    ap.add_argument("--datasets", nargs="*", default=None, help="only datasets whose name contains one of these")
    ap.add_argument("--freqs", type=int, nargs="*", default=None, help="run only these punctuation frequencies F")
    ap.add_argument("--skip", nargs="*", default=(), choices=sorted(SORTERS), help="sorters left out (not ours)")
    args = ap.parse_args(argv)
    global _clock
    _clock = time.process_time if args.clock == "cpu" else time.perf_counter
    n = args.n or (500_000 if args.quick else 10_000_000)
    budget = args.budget or (0.3 if args.quick else 10.0)
    freqs = [10, 1_000, 100_000] if args.quick else [10, 1_000, 100_000, 1_000_000]

    datasets = []
    for p in (0.01, 0.10, 0.50):
        for d in (100, 10_000):
            gen = lambda n, p=p, d=d: gen_synthetic(n, p, d)
            datasets.append((f"synthetic p={int(p * 100)}% d={d}", gen))
    datasets.append(("loglike 200 src", lambda n: gen_loglike(n)))
    if args.quick:
        datasets = [d for d in datasets if d[0] in ("synthetic p=10% d=10000", "loglike 200 src")]
    if args.datasets:
        datasets = [d for d in datasets if any(part in d[0] for part in args.datasets)]
    if args.freqs:
        freqs = args.freqs
    sorters = {k: v for k, v in SORTERS.items() if k in OURS or k not in args.skip}

    # warm up numba (compile or load cache) and cross-check the sorters on small data
    for _, gen in datasets:
        small = gen(20_000)
        check_sorters(small, 97, max_lateness(small))

    print(f"N={n:,} events per config, budget {budget:.0f}s per run ({args.clock} clock), batch=min(F, 65536)")
    print("rates in M events/s; '*' = stopped by the budget, rate measured on the processed prefix")
    hdr = f"{'dataset':<26}{'F':>9}{'L':>8}  " + "".join(f"{k:>13}" for k in sorters) + f"{'imp/best':>10}"
    print(hdr)
    print("-" * len(hdr))
    results = []
    for dname, gen in datasets:
        t = gen(n)
        lat = max_lateness(t)
        for f in freqs:
            row = {"dataset": dname, "n": n, "punct_every": f, "reorder_latency": lat, "sorters": {}}
            cells = []
            for name, make in sorters.items():
                runs = [run_one(make, t, f, lat, budget) for _ in range(max(1, args.repeat))]
                rates = sorted(ev / sec for ev, sec, _ in runs)
                ev, sec, rel = runs[len(runs) // 2]
                rate = rates[len(rates) // 2]
                row["sorters"][name] = {
                    "events": ev,
                    "seconds": round(sec, 4),
                    "events_per_s": rate,
                    "runs_events_per_s": rates,
                    "complete": ev == n,
                    "released": rel,
                }
                cells.append(f"{rate / 1e6:12.2f}{'*' if ev < n else ' '}")
            rates = {k: v["events_per_s"] for k, v in row["sorters"].items()}
            best = max(v for k, v in rates.items() if k not in OURS)
            row["ratio_impatience_vs_best"] = rates["impatience"] / best
            row["ratio_per_call_vs_best"] = rates["imp-per-call"] / best
            row["best_competitor"] = max((v, k) for k, v in rates.items() if k not in OURS)[1]
            results.append(row)
            ratio = row["ratio_impatience_vs_best"]
            print(f"{dname:<26}{f:>9,}{lat:>8}  " + "".join(cells) + f"{ratio:>9.2f}x", flush=True)

    ratios = np.array([r["ratio_impatience_vs_best"] for r in results])
    geo = np.exp(np.log(ratios).mean())
    print(f"\nimpatience / best competitor: min {ratios.min():.2f}x, geo-mean {geo:.2f}x, max {ratios.max():.2f}x")
    calls = np.array([r["ratio_per_call_vs_best"] for r in results])
    print(
        f"imp-per-call (push and punctuate calls, as the competitors are driven) / best competitor: "
        f"min {calls.min():.2f}x, geo-mean {np.exp(np.log(calls).mean()):.2f}x, max {calls.max():.2f}x"
    )
    out = {
        "benchmark": "impatience",
        "quick": bool(args.quick),
        "n": n,
        "budget_s": budget,
        "repeat": args.repeat,
        "clock": args.clock,
        "machine": {
            "python": platform.python_version(),
            "numpy": np.__version__,
            "numba": nb.__version__,
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
        },
        "results": results,
    }
    if args.out:
        os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
        with open(args.out, "w") as fh:
            json.dump(out, fh, indent=1)
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
