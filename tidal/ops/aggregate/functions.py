"""Aggregate functions: what a snapshot aggregate computes over the events alive at an instant.

Each :class:`AggregateFunction` is a description, not code: the snapshot aggregate operator
(this package) decides how to evaluate it. Numeric built-ins run in compiled kernels:

* *linear* aggregates (``count``, ``count_not_null``, ``sum``, ``average``, ``variance``,
  ``stddev``) keep per-group running sums that events add to and remove from; several
  aggregates share sums (Average is Sum and Count, merged per snapshot); variance sums
  ``x - K`` and its square about a per-group pivot ``K`` (never plain squares, which cancel),
  and where events leave (endpoint queues) reads the multiset of alive values instead;
* *order* aggregates (``min``, ``max``, ``count_distinct``, ``percentile_cont``,
  ``percentile_disc``) are not invertible from sums, so each group keeps the sorted multiset
  of its alive values.

Everything else (``top_k``, ``distinct``, ``sum_distinct``, ``average_distinct`` (SQL's
``SUM``/``AVG(DISTINCT x)``: over the set of alive values), ``first``, ``last``, ``mode``, ``arg_min``,
``arg_max``, ``product`` (:mod:`.picks`), non-numeric arguments, and
user-defined aggregates with ``initial_state``/``accumulate``/``deaccumulate``/
``difference``/``compute_result``) runs through Python state objects, one per group.

Null arguments are skipped, as in SQL: ``sum``/``average``/``min``/``max`` over no non-null
value is null; ``count()`` counts events, ``count_not_null(x)`` non-null values.
"""

from __future__ import annotations

import heapq
import inspect
import math
from collections import Counter
from dataclasses import dataclass, field
from fractions import Fraction

from ...core.errors import PlanError, TidalError, TidalTypeError


class SumOverflowError(TidalError, ArithmeticError):
    """An integer sum outside BIGINT's range (DuckDB's HUGEINT result): an error, never a wrapped value."""


_DISTINCT_NUMBERS = ("sum_distinct", "average_distinct")
# aggregates whose result depends on the order of the rows (their times; ties by arrival): a plan may
# not put such rows at one tick (relational rows then keep their ordinals)
ORDER_SENSITIVE = ("first", "last", "string_agg", "list_agg", "mode", "arg_min", "arg_max", "product")
LINEAR = {"count", "count_not_null", "sum", "average", "variance", "stddev"}
ORDERED = {"min": 0, "max": 1, "count_distinct": 2, "percentile_cont": 3, "percentile_disc": 4}


@dataclass(frozen=True)
class UserAggregate:
    """Trill's user-defined snapshot aggregate.

    ``accumulate``/``deaccumulate`` take ``(state, timestamp, row)`` or ``(state, row)``;
    ``difference(a, b)`` removes state ``b`` from ``a``. Without ``deaccumulate`` and
    ``difference`` the aggregate is treated as non-invertible: each snapshot's state is
    rebuilt from the events alive in it.
    """

    initial_state: object
    accumulate: object
    deaccumulate: object = None
    difference: object = None
    compute_result: object = None

    @property
    def invertible(self) -> bool:
        return self.deaccumulate is not None or self.difference is not None

    def linear_form(self):
        """``(initial, contribution, result)`` when this aggregate is a running sum, else None.

        An aggregate whose accumulate is ``state + x(t, row)``, whose deaccumulate (if any) is
        ``state - x(t, row)`` with the same ``x``, and whose initial state is a number, is
        ``result(initial + sum of x)``: the compiled kernels evaluate it like ``sum``, with
        ``x`` and ``result`` as columnar expressions. Trill's Count is ``x = 1``.
        """
        from ...expr.lambdas import Opaque, translate_params
        from ...expr.nodes import BinOp, Col, Unary

        try:
            initial = self.initial_state()
            if isinstance(initial, bool) or not isinstance(initial, int | float):
                return None
            three = _arity(self.accumulate) == 3
            roles = ["__state", "__time", None] if three else ["__state", None]
            acc = translate_params(self.accumulate, roles)
            x = _added_to_state(acc, BinOp, Unary, Col)
            if x is None:
                return None
            if self.deaccumulate is not None:
                dec = translate_params(self.deaccumulate, roles)
                if not (isinstance(dec, BinOp) and dec.op == "-" and dec.left == Col("__state") and dec.right == x):
                    return None
            elif self.difference is not None:
                diff = translate_params(self.difference, ["__state", "__other"])
                if not (isinstance(diff, BinOp) and diff.op == "-" and diff.left == Col("__state")):
                    return None
                if diff.right != Col("__other"):
                    return None
            else:
                return None
            result = None
            if self.compute_result is not None:
                result = translate_params(self.compute_result, ["__state"])
            return initial, x, result
        except Opaque:
            return None


def _added_to_state(tree, BinOp, Unary, Col):
    """x when ``tree`` is ``state + x`` or ``x + state`` with no other use of the state."""
    state = Col("__state")
    if isinstance(tree, BinOp) and tree.op == "+":
        for mine, other in ((tree.left, tree.right), (tree.right, tree.left)):
            if mine == state and "__state" not in other.columns():
                return other
    return None


@dataclass(frozen=True)
class AggregateFunction:
    kind: str
    arg: object = None  # a field name, a row lambda, or None (count)
    param: object = None  # k of top_k, p of the percentiles
    udf: UserAggregate | None = field(default=None, compare=False)

    @property
    def default_name(self) -> str:
        return "aggregate" if self.kind == "udf" else self.kind

    def describe(self) -> str:
        if self.kind == "udf":
            return "user-defined (Python state per group)"
        arg = self.arg if isinstance(self.arg, str) or self.arg is None else "λ"
        if hasattr(self.arg, "columns"):  # a compiled user aggregate's contribution
            arg = str(self.arg)
        if isinstance(self.arg, tuple):  # arg_min/arg_max's (by, x)
            arg = ", ".join(reversed(self.arg))
        inner = ", ".join(str(x) for x in (arg, self.param) if x is not None)
        return f"{self.kind}({inner})"


def user_defined(initial_state, accumulate, deaccumulate=None, difference=None, compute_result=None):
    """A user-defined snapshot aggregate (see :class:`UserAggregate`); its row argument is the whole event."""
    return AggregateFunction(
        "udf", udf=UserAggregate(initial_state, accumulate, deaccumulate, difference, compute_result)
    )


_FIXED_TYPES = {
    "count": "int64",
    "count_not_null": "int64",
    "count_distinct": "int64",
    "average": "float64",
    "average_distinct": "float64",
    "variance": "float64",
    "stddev": "float64",
    "percentile_cont": "float64",
    "string_agg": "string",
    "product": "float64",
}


# aggregates that do arithmetic on their argument: numbers only (exact decimal sums are not supported)
_NUMERIC_ONLY = {"sum", "average", "variance", "stddev", "percentile_cont", "median", "product", *_DISTINCT_NUMBERS}


def _numeric(t, kind: str) -> bool:
    import pyarrow as pa

    if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_null(t):
        return True
    if pa.types.is_boolean(t):
        return kind in ("sum", "sum_distinct")
    return pa.types.is_decimal(t) and kind == "average"  # averaged as DOUBLE, as DuckDB does


def result_type(fn: AggregateFunction, arg_type):
    """The Arrow type of an aggregate's result for an argument of ``arg_type`` (None: not known)."""
    import pyarrow as pa

    if arg_type is not None and fn.kind in _NUMERIC_ONLY and not _numeric(arg_type, fn.kind):
        hint = "; cast it to DOUBLE first" if pa.types.is_decimal(arg_type) else ""
        raise TidalTypeError(f"{fn.describe()}: not defined for {arg_type} (it takes numbers){hint}")
    fixed = _FIXED_TYPES.get(fn.kind)
    if fixed is not None:
        return getattr(pa, fixed)()
    if arg_type is None or fn.kind == "udf":
        return None
    if fn.kind in ("sum", "sum_distinct"):
        return pa.int64() if pa.types.is_integer(arg_type) or pa.types.is_boolean(arg_type) else pa.float64()
    if fn.kind in ("top_k", "distinct"):
        return pa.list_(arg_type)
    if fn.kind in ("arg_min", "arg_max"):  # the argument packs (by, x): the result is x
        return arg_type.field(1).type if pa.types.is_struct(arg_type) else None
    if fn.kind == "list_agg":  # the argument packs the ORDER BY keys and the value (last), or is the value
        packed = arg_type.num_fields if pa.types.is_struct(arg_type) else 1
        if len(fn.param or ()) > packed:
            raise PlanError(f"{fn.describe()}: order has {len(fn.param)} keys, x packs {packed} column(s): {arg_type}")
        return pa.list_(arg_type.field(arg_type.num_fields - 1).type if pa.types.is_struct(arg_type) else arg_type)
    return arg_type


# -- Python evaluation: per-group state objects -------------------------------------------------
def _arity(fn) -> int:
    try:
        return len(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return 3


class PyState:
    """Per-group state of one aggregate in the Python engine."""

    invertible = True

    def add(self, t: int, v) -> None:
        raise NotImplementedError

    def remove(self, t: int, v) -> None:
        raise NotImplementedError

    def result(self):
        raise NotImplementedError

    def dump(self):
        """The state as plain data (checkpoints); ``load`` puts it back into a fresh object."""
        raise NotImplementedError

    def load(self, data) -> None:
        raise NotImplementedError


class MultisetState(PyState):
    """Built-ins as functions of the multiset of alive non-null values (items carry start times for first/last)."""

    __slots__ = ("fn", "items", "kind", "param")

    def __init__(self, kind: str, param):
        self.kind, self.param = kind, param
        self.items: Counter = Counter()

    def _item(self, t, v):
        if self.kind in ("list_agg", "string_agg") and isinstance(v, dict):  # ORDER BY keys, then the value
            return (t, tuple(v.values()))
        if self.kind == "list_agg":  # a plain value: a packed row of no keys, so every row ends in its value
            return (t, (v,))
        if self.kind in ("first", "last"):
            # FIRST/LAST return the first/last value, NULL or not (as DuckDB): a NULL is kept, after every
            # value at its tick (plain data, ordered as tuples)
            return (t, v is None, v)
        return (t, v) if self.kind in ("string_agg", "list_agg") else v

    def _value(self, v):
        """The value as counted (None: skipped); over distinct values a NaN is one value, as in DuckDB."""
        if isinstance(v, float) and math.isnan(v) and self.kind != "count":
            return math.nan if self.kind in _DISTINCT_NUMBERS or self.kind in ("first", "last") else None
        return v

    def add(self, t, v) -> None:
        v = self._value(v)
        if v is not None or self.kind in ("first", "last"):
            self.items[self._item(t, v)] += 1

    def remove(self, t, v) -> None:
        v = self._value(v)
        if v is not None or self.kind in ("first", "last"):
            key = self._item(t, v)
            self.items[key] -= 1
            if self.items[key] == 0:
                del self.items[key]

    def result(self):
        return multiset_result(self.kind, self.param, self.items)

    def dump(self):
        return list(self.items.items())

    def load(self, data) -> None:
        items = ((tuple(k) if isinstance(k, list) else k, c) for k, c in data)
        if self.kind in ("first", "last"):  # (state saved before NULLs were kept: (t, v) items)
            items = (((k[0], k[1] is None, k[1]) if len(k) == 2 else k, c) for k, c in items)
        self.items = Counter(dict(items))


def _fsum(pairs) -> float:
    """The sum of ``value * count`` over ``pairs`` by ``math.fsum``, or as DuckDB answers where fsum
    refuses: inf + -inf is NaN, and finite values whose running sum overflows are summed exactly."""
    pairs = list(pairs)
    try:
        total = math.fsum(v * c for v, c in pairs)
        if not math.isinf(total) or any(math.isinf(v) for v, _ in pairs):
            return total
    except ValueError:  # inf + -inf
        return math.nan
    except OverflowError:
        pass
    exact = sum(Fraction(v) * c for v, c in pairs)
    try:
        return float(exact)
    except OverflowError:
        return math.inf if exact > 0 else -math.inf


def multiset_result(kind: str, param, items: Counter):
    n = sum(items.values())
    if kind == "count_not_null":
        return n
    if kind == "count_distinct":
        return len(items)
    if n == 0:
        return [] if kind in ("distinct", "top_k") else None
    if kind in ("sum", "average", "sum_distinct", "average_distinct"):
        counted = items.items() if kind in ("sum", "average") else ((v, 1) for v in items)
        if not all(isinstance(v, int) for v in items):  # floats and decimals (averaged as DOUBLE)
            total = _fsum((float(v), c) for v, c in counted)
        else:  # integers: the exact sum (an average divides it once, rounding once)
            total = sum(int(v) * c for v, c in counted)
            if kind.startswith("sum") and not -(2**63) <= total < 2**63:
                raise SumOverflowError(
                    f"SUM: the sum ({total}) is out of BIGINT's range; integer sums beyond 64 bits "
                    "(DuckDB's HUGEINT) are not supported"
                )
        return total / (n if kind == "average" else len(items)) if kind.startswith("average") else total
    if kind in ("variance", "stddev"):
        if n < 2:
            return None
        if any(math.isinf(v) for v in items):  # NaN with an infinity, as DuckDB
            return math.nan
        # exact rationals, rounded once (a mean rounded to a float would bias values far from 0)
        mean = sum(Fraction(v) * c for v, c in items.items()) / n
        var = float(sum((Fraction(v) - mean) ** 2 * c for v, c in items.items()) / (n - 1))
        return var if kind == "variance" else math.sqrt(var)
    if kind == "min":
        return min(items)
    if kind == "max":
        return max(items)
    if kind == "first":
        return min(items)[-1]
    if kind == "last":
        return max(items)[-1]
    if kind == "string_agg" and isinstance(param, tuple):  # (separator, ORDER BY spec)
        sep, order = param
        values = [row[-1] for row in _ordered(items, order) if row[-1] is not None]
        return None if sep is None or not values else sep.join(str(v) for v in values)
    if kind == "string_agg":
        return None if param is None else param.join(str(v) for _, v in sorted(items.elements()))
    if kind == "list_agg":
        return [row[-1] for row in _ordered(items, param or ())]
    if kind == "distinct":
        return sorted(items)
    if kind == "top_k":
        return heapq.nlargest(param, items.elements())
    ordered = sorted(items.elements())
    if kind == "percentile_disc":
        return ordered[max(0, math.ceil(param * n) - 1)]
    pos = param * (n - 1)
    lo = math.floor(pos)
    hi = math.ceil(pos)
    a, b, d = ordered[lo], ordered[hi], pos - lo
    if a == b:  # DuckDB's quantile_cont: infinities too (a + (b - a) * d would be NaN)
        return a
    return a + (b - a) * d if math.isfinite(a) and math.isfinite(b) else a * (1.0 - d) + b * d


def _ordered(items: Counter, order) -> list[tuple]:
    """The packed rows ``(key, ..., value)`` of ``(time, row)`` items sorted by their keys, each
    ``(descending, nulls first)``; rows tied on every key stay in time (input) order."""
    rows = [row for _, row in sorted(items.elements(), key=lambda item: item[0])]
    for i in reversed(range(len(order))):  # stable sorts, last key first
        desc, nulls_first = order[i]
        present = sorted((r for r in rows if r[i] is not None), key=lambda r: r[i], reverse=desc)
        absent = [r for r in rows if r[i] is None]
        rows = absent + present if nulls_first else present + absent
    return rows


class CountState(PyState):
    __slots__ = ("n",)

    def __init__(self):
        self.n = 0

    def add(self, t, v) -> None:
        self.n += 1

    def remove(self, t, v) -> None:
        self.n -= 1

    def result(self):
        return self.n

    def dump(self):
        return self.n

    def load(self, data) -> None:
        self.n = data


class UserState(PyState):
    """A user-defined aggregate's state; rebuilt from alive inputs when it cannot be inverted."""

    __slots__ = ("alive", "spec", "state", "three")

    def __init__(self, spec: UserAggregate):
        self.spec = spec
        self.three = _arity(spec.accumulate) == 3
        self.state = spec.initial_state()
        self.alive: Counter | None = None if spec.invertible else Counter()

    @property
    def invertible(self) -> bool:  # type: ignore[override]
        return self.spec.invertible

    def _acc(self, fn, state, t, v):
        return fn(state, t, v) if self.three else fn(state, v)

    def add(self, t, v) -> None:
        if self.alive is not None:
            self.alive[(t, v)] += 1
        self.state = self._acc(self.spec.accumulate, self.state, t, v)

    def remove(self, t, v) -> None:
        spec = self.spec
        if self.alive is not None:
            key = (t, v)
            self.alive[key] -= 1
            if self.alive[key] == 0:
                del self.alive[key]
            state = spec.initial_state()
            for (ts, row), c in sorted(self.alive.items(), key=lambda kv: kv[0][0]):
                for _ in range(c):
                    state = self._acc(spec.accumulate, state, ts, row)
            self.state = state
        elif spec.deaccumulate is not None:
            self.state = self._acc(spec.deaccumulate, self.state, t, v)
        else:
            single = self._acc(spec.accumulate, spec.initial_state(), t, v)
            self.state = spec.difference(self.state, single)

    def result(self):
        return self.state if self.spec.compute_result is None else self.spec.compute_result(self.state)

    def dump(self):
        return (self.state, None if self.alive is None else list(self.alive.items()))

    def load(self, data) -> None:
        self.state, alive = data
        self.alive = None if alive is None else Counter(dict(alive))


def new_state(fn: AggregateFunction) -> PyState:
    if fn.kind == "count":
        return CountState()
    if fn.kind == "udf":
        return UserState(fn.udf)
    if fn.kind in ("mode", "arg_min", "arg_max", "product"):
        from .picks import PickState

        return PickState(fn.kind)
    return MultisetState(fn.kind, fn.param)
