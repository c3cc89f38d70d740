"""Online Bidding: bids buy a quantity of one item when the bid reaches its asking price and enough is
left (else rejected); alter requests set the prices of 20 items; top requests add to 20 quantities.
Bid, alter and top requests come 6:1:1."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from ..table import Table
from .keys import txn_keys

LENGTH = 20


def generate(n: int, size: int = 10_000, skew: float = 0.6, multi: float = 0.25, partitions: int = 4, seed: int = 0):
    rng = np.random.default_rng(seed)
    keys = txn_keys(rng, n, LENGTH, size, skew, multi, partitions)
    kind = rng.choice(3, n, p=[6 / 8, 1 / 8, 1 / 8])
    cols = {"t": np.arange(n, dtype=np.int64), "kind": kind, "price": rng.integers(50, 150, n)}
    cols["qty"] = rng.integers(1, 20, n)
    cols.update({f"k{i}": keys[:, i] for i in range(LENGTH)})
    return pa.table(cols)


def tables(size: int = 10_000) -> dict:
    rng = np.random.default_rng(1)
    cols = {"price": rng.integers(50, 150, size).astype(np.int64), "qty": np.full(size, 100, dtype=np.int64)}
    return {"items": Table("items", size, cols)}


def access_for(tabs):
    items = tabs["items"]

    def access(e, t):
        t.read_modify(
            items, e.k0, "qty", lambda v, s: v - e.qty,
            condition=lambda v, s: s <= e.price and v >= e.qty, source=(items, e.k0, "price"), when=e.kind == 0,
        )  # fmt: skip
        for i in range(LENGTH):
            t.write(items, e[f"k{i}"], "price", e.price + i, when=e.kind == 1)
            t.read_modify(items, e[f"k{i}"], "qty", lambda v: v + e.qty, when=e.kind == 2)

    return access


def stream(source, tabs: dict, **options):
    """Each request with ``committed`` (a rejected bid is not)."""
    return source.transact(access_for(tabs), **options).select("t", "committed")


def python(data: pa.Table, tabs: dict) -> list[dict]:
    return python_rows(data.to_pylist(), tabs)


def python_rows(rows: list[dict], tabs: dict) -> list[dict]:
    """``python`` over rows already in Python (dicts): the benchmark's Python peer."""
    price, qty = tabs["items"]["price"].tolist(), tabs["items"]["qty"].tolist()
    names = [f"k{i}" for i in range(LENGTH)]
    out = []
    for row in rows:
        ok = True
        kind, p, q = row["kind"], row["price"], row["qty"]
        if kind == 0:
            k = row["k0"]
            if price[k] <= p and qty[k] >= q:
                qty[k] -= q
            else:
                ok = False
        elif kind == 1:
            for i, name in enumerate(names):
                price[row[name]] = p + i
        else:
            for name in names:
                qty[row[name]] += q
        out.append({"t": row["t"], "committed": ok})
    tabs["items"]["price"][:] = price
    tabs["items"]["qty"][:] = qty
    return out
