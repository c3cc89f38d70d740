"""Sums and variances by their definitions, for the reference evaluator: exact rationals, rounded once."""

from __future__ import annotations

import math
from fractions import Fraction


def exact_sum(values):
    """The sum of ``values`` (no NaN) by its definition: integers (and decimals) exactly, in their own type;
    with floats, NaN if both infinities are among them, else the infinity among them, else the exact sum
    rounded once (beyond DOUBLE's range: that infinity), in any order of the values."""
    if not any(isinstance(v, float) for v in values):
        return sum(values)
    pos = any(v == math.inf for v in values)
    neg = any(v == -math.inf for v in values)
    if pos or neg:
        return math.nan if pos and neg else math.inf if pos else -math.inf
    exact = sum(Fraction(v) for v in values)
    try:
        return float(exact)
    except OverflowError:
        return math.inf if exact > 0 else -math.inf


def exact_variance(values) -> float | None:
    """The sample variance of ``values`` (no NaN) in exact rationals, two passes, rounded once; None below
    two values, NaN with an infinity (as DuckDB)."""
    if len(values) < 2:
        return None
    if any(isinstance(v, float) and math.isinf(v) for v in values):
        return math.nan
    exact = [Fraction(v) for v in values]
    mean = sum(exact) / len(exact)
    return float(sum((v - mean) ** 2 for v in exact) / (len(exact) - 1))
