"""Streaming Ledger: deposits top up an (account, asset) pair; transfers move money and assets from one
pair to another, and abort when the source account or asset holds less than the amount."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from ..table import Table
from .keys import txn_keys


def generate(n: int, size: int = 10_000, skew: float = 0.6, multi: float = 0.25, partitions: int = 4, seed: int = 0):
    rng = np.random.default_rng(seed)
    keys = txn_keys(rng, n, 4, size, skew, multi, partitions)
    cols = {"t": np.arange(n, dtype=np.int64), "kind": rng.integers(0, 2, n), "amount": rng.integers(1, 300, n)}
    cols.update({f"k{i}": keys[:, i] for i in range(4)})
    return pa.table(cols)


def tables(size: int = 10_000, balance: int = 1_000) -> dict:
    start = np.full(size, balance, dtype=np.int64)
    return {"accounts": Table("accounts", size, {"balance": start}), "assets": Table("assets", size, {"value": start})}


def access_for(tabs):
    acc, ast = tabs["accounts"], tabs["assets"]

    def access(e, t):
        deposit, transfer = e.kind == 0, e.kind == 1
        t.read_modify(acc, e.k0, "balance", lambda v: v + e.amount, when=deposit)
        t.read_modify(ast, e.k1, "value", lambda v: v + e.amount, when=deposit)
        enough = lambda v: v >= e.amount  # noqa: E731
        t.read_modify(acc, e.k0, "balance", lambda v: v - e.amount, condition=enough, when=transfer)
        t.read_modify(ast, e.k1, "value", lambda v: v - e.amount, condition=enough, when=transfer)
        t.read_modify(acc, e.k2, "balance", lambda v: v + e.amount, when=transfer)
        t.read_modify(ast, e.k3, "value", lambda v: v + e.amount, when=transfer)

    return access


def stream(source, tabs: dict, **options):
    """Each request with ``committed`` (a transfer that found too little is not)."""
    return source.transact(access_for(tabs), **options).select("t", "committed")


def python(data: pa.Table, tabs: dict) -> list[dict]:
    return python_rows(data.to_pylist(), tabs)


def python_rows(rows: list[dict], tabs: dict) -> list[dict]:
    """``python`` over rows already in Python (dicts): the benchmark's Python peer."""
    bal, val = tabs["accounts"]["balance"].tolist(), tabs["assets"]["value"].tolist()
    out = []
    for row in rows:
        a, k0, k1, k2, k3 = row["amount"], row["k0"], row["k1"], row["k2"], row["k3"]
        ok = True
        if row["kind"] == 0:
            bal[k0] += a
            val[k1] += a
        elif bal[k0] >= a and val[k1] >= a:
            bal[k0] -= a
            val[k1] -= a
            bal[k2] += a
            val[k3] += a
        else:
            ok = False
        out.append({"t": row["t"], "committed": ok})
    tabs["accounts"]["balance"][:] = bal
    tabs["assets"]["value"][:] = val
    return out
