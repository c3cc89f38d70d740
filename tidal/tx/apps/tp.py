"""Toll Processing (after Linear Road): each position report updates its road segment's average speed
and, when the vehicle enters the segment, its vehicle count, then reads both to compute the toll."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from ..table import Table
from .keys import zipf_keys

SEGMENTS = 100


def generate(n: int, size: int = SEGMENTS, skew: float = 0.2, multi: float = 0.25, partitions: int = 4, seed: int = 0):
    rng = np.random.default_rng(seed)
    return pa.table(
        {
            "t": np.arange(n, dtype=np.int64),
            "segment": zipf_keys(rng, n, size, skew),
            "speed": rng.integers(10, 120, n).astype(np.float64),
            "entered": (rng.random(n) < 0.3).astype(np.int64),
        }
    )


def tables(size: int = SEGMENTS) -> dict:
    return {
        "speed": Table("speed", size, {"avg": np.full(size, 60.0)}),
        "count": Table("count", size, {"vehicles": np.zeros(size, dtype=np.int64)}),
    }


def access_for(tabs):
    speed, count = tabs["speed"], tabs["count"]

    def access(e, t):
        t.read_modify(speed, e.segment, "avg", lambda v: (v * 15 + e.speed) / 16)
        t.read_modify(count, e.segment, "vehicles", lambda v: v + 1, when=e.entered == 1)
        t.read(speed, e.segment, "avg", name="avg")
        t.read(count, e.segment, "vehicles", name="vehicles")

    return access


# the post-process: the toll from the segment's state as the report found it (compiled: a lambda)
toll = lambda e, r: {"t": e.t, "toll": (r.vehicles - 50) * 2 if r.avg < 40 and r.vehicles > 50 else 0}  # noqa: E731


def stream(source, tabs: dict, **options):
    """Each report with its toll."""
    return source.transact(access_for(tabs), post=toll, **options)


def python(data: pa.Table, tabs: dict) -> list[dict]:
    return python_rows(data.to_pylist(), tabs)


def python_rows(rows: list[dict], tabs: dict) -> list[dict]:
    """``python`` over rows already in Python (dicts): the benchmark's Python peer."""
    avg, veh = tabs["speed"]["avg"].tolist(), tabs["count"]["vehicles"].tolist()
    out = []
    for row in rows:
        k = row["segment"]
        avg[k] = (avg[k] * 15 + row["speed"]) / 16
        if row["entered"] == 1:
            veh[k] += 1
        a, c = avg[k], veh[k]
        out.append({"t": row["t"], "toll": (c - 50) * 2 if a < 40 and c > 50 else 0})
    tabs["speed"]["avg"][:] = avg
    tabs["count"]["vehicles"][:] = veh
    return out
