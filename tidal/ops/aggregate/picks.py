"""Aggregates that pick or fold the alive values in an order: ``mode``, ``arg_min``, ``arg_max`` and
``product`` (DuckDB's functions of those names), evaluated on Python state per group.

Semantics over the events alive in a snapshot (NULLs skipped, as in SQL):

* ``mode(x)``: the most frequent non-null value. A NaN is a value (all NaNs one value), ``-0.0`` and
  ``0.0`` are one value shown as the one that came first. Ties: the value whose first event started
  earliest; at one start time, the smallest value. (DuckDB's own pick among tied values follows its
  hash table's order and is not specified; over rows with distinct times, as SQL's relational rows
  are given, this is "the first value in input order".)
* ``arg_min(x, by)`` / ``arg_max(x, by)``: ``x`` of the event with the smallest / largest ``by``, over
  the events where neither is NULL; NaN is larger than every number (DuckDB's order). Ties: the event
  that started earliest (DuckDB keeps the first row it meets), then the smallest ``x``.
* ``product(x)``: the product of the non-null values as DOUBLE, multiplied in start-time order (then
  by value): floating-point products depend on their order where they overflow, as DuckDB's running
  product does in input order. NULL when there is no value.

State: the multiset of alive ``(start, value)`` items and a cached result; an add that comes after
every alive item (start-edge input, relational rows) updates the cache in O(1), a removal of the
cached winner recomputes from the multiset.
"""

from __future__ import annotations

import math
from collections import Counter

PICKS = ("mode", "arg_min", "arg_max", "product")


def _order_key(v) -> tuple:
    """Values ordered as DuckDB orders them: NaN after every number."""
    if isinstance(v, float) and math.isnan(v):
        return (1, 0.0)
    return (0, v)


def _norm(v):
    """NaN as one object (dict keys compare by identity first), other values as they are."""
    return math.nan if isinstance(v, float) and math.isnan(v) else v


class PickState:
    """Per-group state of one of :data:`PICKS` (the interface of :class:`.functions.PyState`)."""

    __slots__ = ("best", "items", "kind", "last")
    invertible = True

    def __init__(self, kind: str):
        self.kind = kind
        self.items: Counter = Counter()  # (start, value) -> count; arg_min/arg_max: value = (by, x)
        self.best = None  # the cached result's state (None: recompute)
        self.last = None  # the order key of the latest item folded into the cache

    def _item(self, t, v):
        if self.kind in ("arg_min", "arg_max"):
            if v is None:
                return None
            by, x = (v.get("f0"), v.get("f1")) if isinstance(v, dict) else v
            return None if by is None or x is None else (t, (_norm(by), _norm(x)))
        return None if v is None else (t, _norm(v))

    def add(self, t, v) -> None:
        item = self._item(t, v)
        if item is None:
            return
        self.items[item] += 1
        key = self._key(item)
        if len(self.items) == 1 and self.items[item] == 1:
            self.best, self.last = self._fold(None, item), key
        elif self.best is not None and (self.kind != "product" or key >= self.last):
            # mode and arg_min/arg_max pick by a total order: an add in any order updates them; a
            # product only takes a factor that comes after the ones it holds
            self.best = self._fold(self.best, item)
            self.last = max(key, self.last)
        else:
            self.best = None

    def remove(self, t, v) -> None:
        item = self._item(t, v)
        if item is None:
            return
        self.items[item] -= 1
        if self.items[item] == 0:
            del self.items[item]
        self.best = None

    def _key(self, item) -> tuple:
        t, v = item
        if self.kind in ("arg_min", "arg_max"):
            return (t, _order_key(v[1]))
        return (t, _order_key(v))

    def _fold(self, state, item):
        """The cache after one more ``item`` (a product's: ordered after every factor folded before)."""
        t, v = item
        if self.kind == "product":
            return (1.0 if state is None else state) * float(v)
        if self.kind == "mode":  # (value -> [count, first start, order key, the value as first seen], the best)
            entries, best = ({}, None) if state is None else state
            entry = entries.get(v)
            if entry is None:
                entry = entries[v] = [1, t, _order_key(v), v]
            else:
                entry[0] += 1
                if t < entry[1]:  # an earlier first event (its value shown: -0.0 or 0.0)
                    entry[1], entry[3] = t, v
            if best is None or (-entry[0], entry[1], entry[2]) < (-best[0], best[1], best[2]):
                best = entry  # counts only grow while folding: the best changes only to the entry just counted
            return entries, best
        by, x = v
        cand = (_order_key(by), t, _order_key(x), x)
        if state is None:
            return cand
        if cand[0] == state[0]:  # tied on by: the earlier event, then the smaller x
            return cand if cand[1:3] < state[1:3] else state
        better = cand[0] < state[0] if self.kind == "arg_min" else cand[0] > state[0]
        return cand if better else state

    def _rebuild(self):
        state = None
        for item in sorted(self.items, key=self._key):
            for _ in range(self.items[item]):
                state = self._fold(state, item)
        self.best = state
        self.last = self._key(max(self.items, key=self._key)) if self.items else None

    def result(self):
        if not self.items:
            return None
        if self.best is None:
            self._rebuild()
        if self.kind == "product":
            return self.best
        return self.best[1][3] if self.kind == "mode" else self.best[3]

    def dump(self):
        return list(self.items.items())

    def load(self, data) -> None:
        self.items = Counter()
        for (t, v), c in data:
            self.items[(t, tuple(_norm(x) for x in v) if isinstance(v, list | tuple) else _norm(v))] = c
        self.best = None


# -- arg_min/arg_max over two fields (the API's ``agg.arg_min(x, by)``): the pair as one struct column
def pair_type(names: tuple, schema):
    """The struct type of the argument ``(by, x)`` over ``schema`` (fields ``f0``, ``f1``)."""
    import pyarrow as pa

    return pa.struct([pa.field(f"f{i}", schema.field(n).type) for i, n in enumerate(names)])


def pair_column(names: tuple, columns: dict):
    """The argument ``(by, x)`` as one struct column of a batch's ``columns``."""
    import pyarrow as pa

    return pa.StructArray.from_arrays([columns[n] for n in names], names=[f"f{i}" for i in range(len(names))])
