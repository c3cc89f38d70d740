"""Aggregate functions for ``Stream.aggregate`` and ``Stream.group_aggregate``.

``from tidal import agg`` then ``stream.aggregate(agg.count(), total=agg.sum("v"))``. An
argument ``x`` is a field name or a row lambda. Results are named after the aggregate
(``count``, ``sum``, ...) unless given a name as a keyword. See
:mod:`tidal.ops.aggregate.functions` for null handling and how each is evaluated.
"""

from __future__ import annotations

from .core.errors import PlanError
from .ops.aggregate.functions import AggregateFunction, UserAggregate, user_defined

__all__ = [
    "AggregateFunction",
    "UserAggregate",
    "arg_max",
    "arg_min",
    "average",
    "average_distinct",
    "count",
    "count_distinct",
    "count_not_null",
    "distinct",
    "first",
    "last",
    "list_agg",
    "max",
    "median",
    "min",
    "mode",
    "percentile_cont",
    "percentile_disc",
    "product",
    "stddev",
    "string_agg",
    "sum",
    "sum_distinct",
    "top_k",
    "user_defined",
    "variance",
]


def _check_fraction(p) -> float:
    p = float(p)
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"a percentile must lie in [0, 1], got {p}")
    return p


def count() -> AggregateFunction:
    """Number of events alive in the snapshot."""
    return AggregateFunction("count")


def count_not_null(x) -> AggregateFunction:
    return AggregateFunction("count_not_null", x)


def sum(x) -> AggregateFunction:  # noqa: A001 - the aggregate's name
    return AggregateFunction("sum", x)


def average(x) -> AggregateFunction:
    return AggregateFunction("average", x)


def min(x) -> AggregateFunction:  # noqa: A001
    return AggregateFunction("min", x)


def max(x) -> AggregateFunction:  # noqa: A001
    return AggregateFunction("max", x)


def count_distinct(x) -> AggregateFunction:
    return AggregateFunction("count_distinct", x)


def list_agg(x, order=None) -> AggregateFunction:
    """The non-null values in input order (by start time; events that start at the same time are a
    multiset: equal values among them come out together, in the order each value first arrived);
    SQL's ``list(x ORDER BY k)`` passes a struct of the keys and the value (so its NULLs are kept),
    and ``order`` as each key's (descending, nulls first)."""
    return AggregateFunction("list_agg", x, param=_order_pairs(order) if order is not None else None)


def _order_pairs(order) -> tuple | None:
    """``list_agg``'s ``order``: a sequence of (descending, nulls first) pairs of booleans, one per key."""
    pairs = None if isinstance(order, str | bytes) else tuple(order) if hasattr(order, "__iter__") else None
    if pairs is None or not all(
        isinstance(p, tuple | list) and len(p) == 2 and all(_is_flag(b) for b in p) for p in pairs
    ):
        raise PlanError(
            f"list_agg's order takes (descending, nulls_first) pairs of booleans, one per ORDER BY key packed "
            f"before the value in x (or None), got {order!r}"
        )
    return tuple((bool(desc), bool(nulls_first)) for desc, nulls_first in pairs) or None


def _is_flag(value) -> bool:
    return type(value).__name__ in ("bool", "bool_")  # (numpy's booleans too)


def sum_distinct(x) -> AggregateFunction:
    """The sum of the distinct non-null values (SQL's ``SUM(DISTINCT x)``)."""
    return AggregateFunction("sum_distinct", x)


def average_distinct(x) -> AggregateFunction:
    """The mean of the distinct non-null values (SQL's ``AVG(DISTINCT x)``)."""
    return AggregateFunction("average_distinct", x)


def distinct(x) -> AggregateFunction:
    """The sorted list of distinct non-null values."""
    return AggregateFunction("distinct", x)


def top_k(x, k: int) -> AggregateFunction:
    """The ``k`` largest values, largest first (duplicates kept)."""
    if int(k) < 1:
        raise ValueError(f"top_k needs k >= 1, got {k}")
    return AggregateFunction("top_k", x, int(k))


def percentile_cont(x, p: float) -> AggregateFunction:
    """Linear interpolation between the closest ranks (SQL ``percentile_cont``)."""
    return AggregateFunction("percentile_cont", x, _check_fraction(p))


def percentile_disc(x, p: float) -> AggregateFunction:
    """The first value whose cumulative fraction reaches ``p`` (SQL ``percentile_disc``)."""
    return AggregateFunction("percentile_disc", x, _check_fraction(p))


def median(x) -> AggregateFunction:
    return AggregateFunction("percentile_cont", x, 0.5)


def variance(x) -> AggregateFunction:
    """Sample variance (``n - 1`` in the denominator; null below two values)."""
    return AggregateFunction("variance", x)


def stddev(x) -> AggregateFunction:
    """Sample standard deviation."""
    return AggregateFunction("stddev", x)


def first(x) -> AggregateFunction:
    """The value of the alive event that started earliest (ties: the smallest value); a NULL value
    counts (as in DuckDB), after every value at its start time."""
    return AggregateFunction("first", x)


def string_agg(x, separator: str | None = ",") -> AggregateFunction:
    """The alive events' values (as text) joined by ``separator``, earliest start first (ties: by
    value); None when there are none, or when ``separator`` is None (as in DuckDB)."""
    return AggregateFunction("string_agg", x, param=separator)


def last(x) -> AggregateFunction:
    """The value of the alive event that started latest (ties: the largest value); a NULL value
    counts (as in DuckDB), after every value at its start time."""
    return AggregateFunction("last", x)


def mode(x) -> AggregateFunction:
    """The most frequent non-null value (ties: the value seen first, by start time; then the smallest).
    See :mod:`tidal.ops.aggregate.picks`."""
    return AggregateFunction("mode", x)


def _pair(name: str, x, by) -> tuple | str:
    if by is None and isinstance(x, str):  # a struct field {f0: by, f1: x} (SQL packs the two this way)
        return x
    if not (isinstance(x, str) and isinstance(by, str)):
        raise TypeError(f"{name}(x, by) takes two field names (select computed values first), got {x!r}, {by!r}")
    return (by, x)


def arg_min(x, by=None) -> AggregateFunction:
    """``x`` of the event with the smallest ``by`` (fields; events where either is null are skipped;
    ties: the earliest start, then the smallest ``x``). SQL's ``arg_min``/``min_by``."""
    return AggregateFunction("arg_min", _pair("arg_min", x, by))


def arg_max(x, by=None) -> AggregateFunction:
    """``x`` of the event with the largest ``by`` (as :func:`arg_min`). SQL's ``arg_max``/``max_by``."""
    return AggregateFunction("arg_max", _pair("arg_max", x, by))


def product(x) -> AggregateFunction:
    """The product of the non-null values as a float, multiplied in start-time order (null for none)."""
    return AggregateFunction("product", x)
