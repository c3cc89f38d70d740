"""Shared pieces of tidal's benchmarks: timing, a results table with ratios, JSON output."""

from __future__ import annotations

import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa


def timed(fn, repeat: int) -> tuple[float, float]:
    """Median and spread (max - min) of ``repeat`` runs, in seconds."""
    runs = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - start)
    return statistics.median(runs), (max(runs) - min(runs))


def machine() -> dict:
    return {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "numpy": np.__version__,
        "pyarrow": pa.__version__,
    }


class Results:
    """Rows of (workload, engine, throughput); ratios are tidal's throughput over each peer's."""

    def __init__(self):
        self.rows: list[dict] = []

    def record(self, workload: str, engine: str, seconds: float, spread: float, events: int) -> None:
        self.rows.append(
            {
                "workload": workload,
                "engine": engine,
                "seconds": seconds,
                "spread_s": spread,
                "events": events,
                "events_per_s": events / seconds,
            }
        )

    def run(self, workload: str, engine: str, fn, events: int, repeat: int) -> None:
        self.record(workload, engine, *timed(fn, repeat), events)

    def report(self, out: str, **extra) -> None:
        by = {(r["workload"], r["engine"]): r["events_per_s"] for r in self.rows}
        print(f"{'workload':<34}{'engine':<18}{'events/s':>16}{'tidal/peer':>12}")
        for r in self.rows:
            mine = by.get((r["workload"], "tidal"))
            r["tidal_ratio"] = mine / r["events_per_s"] if mine and r["engine"] != "tidal" else 1.0
            print(f"{r['workload']:<34}{r['engine']:<18}{r['events_per_s']:>16,.0f}{r['tidal_ratio']:>12.2f}")
        doc = {"machine": machine(), **extra, "results": self.rows}
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        Path(out).write_text(json.dumps(doc, indent=2))
        print(f"written {out}")
