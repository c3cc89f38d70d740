"""Keys for the benchmark applications: Zipf-skewed, with a share of multi-partition transactions."""

from __future__ import annotations

import numpy as np


def zipf_keys(rng: np.random.Generator, count: int, size: int, skew: float) -> np.ndarray:
    """``count`` keys in ``0..size-1``, key ``k`` drawn with probability proportional to ``1/(k+1)**skew``
    (skew 0: uniform), then scattered over the key space so hot keys fall in every partition."""
    if skew <= 0:
        return rng.integers(0, size, count)
    weights = 1.0 / np.arange(1, size + 1) ** skew
    ranks = rng.choice(size, count, p=weights / weights.sum())
    return (ranks * 7919) % size


def txn_keys(rng, n: int, length: int, size: int, skew: float, multi: float, partitions: int) -> np.ndarray:
    """``n`` transactions of ``length`` keys (a record's partition is ``key % partitions``): a share
    ``multi`` of them spread over ``min(4, partitions)`` partitions, the rest within one partition."""
    keys = zipf_keys(rng, n * length, size, skew).reshape(n, length)
    if partitions <= 1:
        return keys
    spread = min(4, partitions)
    is_multi = rng.random(n) < multi
    home = rng.integers(0, partitions, n)
    offset = np.where(is_multi[:, None], np.arange(length)[None, :] % spread, 0)
    target = (home[:, None] + offset) % partitions
    keys = keys - keys % partitions + target
    return np.where(keys >= size, keys - partitions, keys)
