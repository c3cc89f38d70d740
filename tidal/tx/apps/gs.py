"""Grep and Sum: a transaction reads 10 records (then their sum is taken) or writes 10 records."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from ..table import Table
from .keys import txn_keys

LENGTH = 10


def generate(n: int, size: int = 10_000, skew: float = 0.6, multi: float = 0.25, partitions: int = 4, seed: int = 0):
    rng = np.random.default_rng(seed)
    keys = txn_keys(rng, n, LENGTH, size, skew, multi, partitions)
    cols = {"t": np.arange(n, dtype=np.int64), "kind": rng.integers(0, 2, n), "w": rng.integers(0, 1000, n)}
    cols.update({f"k{i}": keys[:, i] for i in range(LENGTH)})
    return pa.table(cols)


def tables(size: int = 10_000) -> dict:
    return {"records": Table("records", size, {"v": np.arange(size, dtype=np.int64)})}


def access_for(tabs):
    rec = tabs["records"]

    def access(e, t):
        for i in range(LENGTH):
            t.read(rec, e[f"k{i}"], "v", name=f"v{i}", when=e.kind == 0)
            t.write(rec, e[f"k{i}"], "v", e.w + i, when=e.kind == 1)

    return access


def stream(source, tabs: dict, **options):
    """Per read transaction, the sum of the 10 values it read."""
    out = source.transact(access_for(tabs), **options)
    return out.where(lambda e: e.kind == 0).select(
        lambda e: {"t": e.t, "sum": e.v0 + e.v1 + e.v2 + e.v3 + e.v4 + e.v5 + e.v6 + e.v7 + e.v8 + e.v9}
    )


def python(data: pa.Table, tabs: dict) -> list[dict]:
    """The same transactions as a plain Python loop over rows and lists."""
    return python_rows(data.to_pylist(), tabs)


def python_rows(rows: list[dict], tabs: dict) -> list[dict]:
    """``python`` over rows already in Python (dicts): the benchmark's Python peer."""
    v = tabs["records"]["v"].tolist()
    names = [f"k{i}" for i in range(LENGTH)]
    out = []
    for row in rows:
        if row["kind"] == 0:
            out.append({"t": row["t"], "sum": sum([v[row[k]] for k in names])})
        else:
            w = row["w"]
            for i, k in enumerate(names):
                v[row[k]] = w + i
    tabs["records"]["v"][:] = v
    return out
