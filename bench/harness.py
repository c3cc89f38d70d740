"""Shared pieces of tidal's benchmarks: timing, a results table with ratios, JSON output.

Every ``bench/bench_*.py`` module (and ``bench/run.py``) follows one interface so that
``bench/suite.py`` can run it and read its results:

* ``main(argv=None)`` parses ``--quick`` (sizes that fit the suite's quick budget), ``--out PATH``
  (the JSON file to write) and ``--repeat N`` (runs per measurement, at least 3 by default);
  ``add_common_args`` adds the three.
* The JSON (``Results.report``) holds ``machine`` (versions), ``params`` (data sizes and
  settings), ``results`` (one row per workload and engine: ``workload, engine, seconds`` (median),
  ``spread_s`` (max - min), ``runs_s``, ``events``, ``events_per_s``, optional ``note``),
  ``series`` (curves for plots: ``name, x_label, y_label, x, lines {label: [y]}``) and ``notes``.
* The engine named exactly ``tidal`` is tidal's figure for a workload; engines starting with
  ``tidal`` are variants of it; every other engine is a peer.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path

import numpy as np
import pyarrow as pa

PACKAGES = ("tidal", "numpy", "pyarrow", "numba", "pandas", "duckdb", "polars", "fastavro", "pyspark", "matplotlib")


def add_common_args(ap: argparse.ArgumentParser, default_out: str) -> argparse.ArgumentParser:
    ap.add_argument("--quick", action="store_true", help="small data sizes for the suite's quick mode")
    ap.add_argument("--repeat", type=int, default=3, help="runs per measurement (median and spread)")
    ap.add_argument("--out", default=default_out, help="JSON results file")
    return ap


def timed_runs(fn, repeat: int) -> list[float]:
    """Wall-clock seconds of each of ``repeat`` runs of ``fn``."""
    runs = []
    for _ in range(max(1, repeat)):
        start = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - start)
    return runs


def timed(fn, repeat: int) -> tuple[float, float]:
    """Median and spread (max - min) of ``repeat`` runs, in seconds."""
    runs = timed_runs(fn, repeat)
    return statistics.median(runs), (max(runs) - min(runs))


def _status_kib(field: str) -> int | None:
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def peak_memory(fn) -> tuple[object, dict]:
    """``fn()``'s value and the memory it added at its peak, in bytes: ``traced`` is tracemalloc's peak
    (Python objects and numpy buffers, not Arrow's or numba's own allocators), ``rss`` the peak
    resident set minus the one before the call (Linux: VmHWM reset through ``/proc/self/clear_refs``;
    None elsewhere; page-grained, so blind to small growth inside already-mapped heaps). The call is
    slower under tracemalloc: time it separately."""
    import tracemalloc

    before = _status_kib("VmRSS")
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        can_reset = True
    except OSError:
        can_reset = False
    tracemalloc.start()
    try:
        value = fn()
        _, traced = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    peak = _status_kib("VmHWM") if can_reset else None
    rss = None if before is None or peak is None else max(peak - before, 0) * 1024
    return value, {"traced": traced, "rss": rss}


def _git_commit() -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=Path(__file__).resolve().parent,
            capture_output=True,
            text=True,
            timeout=5,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def machine() -> dict:
    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpus": os.cpu_count(),
        "numpy": np.__version__,
        "pyarrow": pa.__version__,
        "versions": versions,
        "commit": _git_commit(),
    }


class Results:
    """Rows of (workload, engine, throughput); ratios are tidal's throughput over each peer's."""

    def __init__(self):
        self.rows: list[dict] = []
        self.series: list[dict] = []
        self.notes: list[str] = []

    def record(
        self,
        workload: str,
        engine: str,
        seconds: float,
        spread: float,
        events: int,
        runs: list[float] | None = None,
        **extra,
    ) -> dict:
        row = {
            "workload": workload,
            "engine": engine,
            "seconds": seconds,
            "spread_s": spread,
            "events": events,
            "events_per_s": events / seconds if seconds > 0 else float("inf"),
        }
        if runs is not None:
            row["runs_s"] = runs
        row.update(extra)
        self.rows.append(row)
        return row

    def run(self, workload: str, engine: str, fn, events: int, repeat: int, **extra) -> dict:
        runs = timed_runs(fn, repeat)
        return self.record(workload, engine, statistics.median(runs), max(runs) - min(runs), events, runs, **extra)

    def run_interleaved(self, entries: list[tuple[str, str, object, int]], repeat: int) -> list[dict]:
        """Time ``(workload, engine, fn, events)`` entries in rounds: one warm-up round, then ``repeat``
        rounds each running every entry once. A JIT-compiling host (the JVM under Spark) keeps getting
        faster for a while; rounds give every engine the same warm-up instead of favouring the last."""
        for _, _, fn, _ in entries:
            fn()
        runs: list[list[float]] = [[] for _ in entries]
        for _ in range(max(1, repeat)):
            for i, (_, _, fn, _) in enumerate(entries):
                runs[i] += timed_runs(fn, 1)
        return [
            self.record(w, e, statistics.median(r), max(r) - min(r), n, r)
            for (w, e, _, n), r in zip(entries, runs, strict=True)
        ]

    def add_series(
        self, name: str, x_label: str, y_label: str, x: list, lines: dict, log_x: bool = False, log_y: bool = False
    ) -> None:
        self.series.append(
            {
                "name": name,
                "x_label": x_label,
                "y_label": y_label,
                "x": list(x),
                "lines": lines,
                "log_x": log_x,
                "log_y": log_y,
            }
        )

    def note(self, text: str) -> None:
        print(f"note: {text}")
        self.notes.append(text)

    def report(self, out: str, **params) -> None:
        by = {(r["workload"], r["engine"]): r["events_per_s"] for r in self.rows}
        print(f"{'workload':<34}{'engine':<18}{'events/s':>16}{'tidal/peer':>12}")
        for r in self.rows:
            mine = by.get((r["workload"], "tidal"))
            r["tidal_ratio"] = mine / r["events_per_s"] if mine and r["engine"] != "tidal" else 1.0
            print(f"{r['workload']:<34}{r['engine']:<18}{r['events_per_s']:>16,.0f}{r['tidal_ratio']:>12.2f}")
        doc = {
            "machine": machine(),
            **params,
            "params": params,
            "results": self.rows,
            "series": self.series,
            "notes": self.notes,
        }
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        Path(out).write_text(json.dumps(doc, indent=2))
        print(f"written {out}")
