"""A plain, obviously-correct evaluator of tidal's operators on logical intervals.

A stream here is a list of ``(start, end, payload)`` with ``payload`` a tuple in field
order (``end`` is ``INFINITY`` for lifetimes that never end). Each operator is written
straight from its definition, one event at a time, with no batching, edges or buffering,
so the engine's results can be checked against it: two streams mean the same thing when
their :func:`canonical` forms are equal.
"""

from __future__ import annotations

import inspect
import math
from dataclasses import dataclass

import pyarrow as pa

from ..core.canonical import deltas_from_intervals, deltas_from_physical, freeze, layers
from ..core.time import INFINITY
from ..expr.compile import row_class
from .exact import exact_sum, exact_variance


def _floor(t: int, period: int, offset: int = 0) -> int:
    return t - ((t - offset) % period)


def _ceil(t: int, period: int, offset: int = 0) -> int:
    return t + ((offset - t) % period)


def _window_at_end(s: int, size: int, hop: int, offset: int) -> list[tuple[int, int]]:
    """Trill's window lifetime, written from its definition: the start moves up to the first grid
    point ``w >= s``; with gaps (``hop > size``) only events in some ``(w-size, w]`` are kept; the
    event then lives ``[w, up(s+size))``: every window ``(v-size, v]`` holding ``s`` shows it at ``v``."""
    w = _ceil(s, hop, offset)
    if hop > size:
        return [(w, w + size)] if w - size < s else []
    return [(w, _ceil(s + size, hop, offset))]


@dataclass
class Reference:
    """Logical intervals with field names; methods mirror :class:`tidal.Stream`."""

    names: tuple[str, ...]
    events: list[tuple[int, int, tuple]]

    @classmethod
    def points(cls, names, rows: list[tuple[int, tuple]]) -> Reference:
        return cls(tuple(names), [(t, t + 1, p) for t, p in rows])

    def _rows(self):
        cls = row_class(self.names)
        return [(s, e, cls._make(p)) for s, e, p in self.events]

    def where(self, predicate) -> Reference:
        return Reference(self.names, [(s, e, tuple(r)) for s, e, r in self._rows() if predicate(r)])

    def select(self, fn) -> Reference:
        out, names = [], None
        for s, e, r in self._rows():
            value = fn(r)
            if not isinstance(value, dict):
                value = {"value": value}
            names = tuple(value)
            out.append((s, e, tuple(value.values())))
        return Reference(names or self.names, out)

    def select_many(self, fn) -> Reference:
        out, names = [], None
        for s, e, r in self._rows():
            for value in fn(r):
                if not isinstance(value, dict):
                    value = {"value": value}
                names = tuple(value)
                out.append((s, e, tuple(value.values())))
        return Reference(names or self.names, out)

    def _map(self, f) -> Reference:
        out = []
        for s, e, p in self.events:
            for ns, ne in f(s, e):
                if ne > ns:
                    out.append((ns, ne, p))
        return Reference(self.names, out)

    def shift_lifetime(self, d: int) -> Reference:
        return self._map(lambda s, e: [(s + d, e if e == INFINITY else e + d)])

    def alter_lifetime(self, start=None, duration=None) -> Reference:
        def f(s, e):
            ns = s if start is None else int(start(s))
            if duration is None:
                return [(ns, INFINITY if e == INFINITY else ns + (e - s))]
            d = duration if isinstance(duration, int) else int(duration(s))
            return [(ns, ns + d)]

        return self._map(f)

    def alter_duration(self, d) -> Reference:
        return self.alter_lifetime(duration=d)

    def hopping_window(self, size: int, hop: int, offset: int = 0, align: str = "start") -> Reference:
        if align == "end":  # Trill's HoppingWindowLifetime: windows (w-size, w], shown from w
            return self._map(lambda s, e: _window_at_end(s, size, hop, offset))

        def f(s, e):
            if hop > size and (s - offset) % hop >= size:
                return []
            ws = _floor(s, hop, offset)
            if hop > size or size % hop == 0:
                return [(ws, ws + size)]
            return [(ws, _floor(s + size, hop, offset))]

        return self._map(f)

    def tumbling_window(self, size: int, offset: int = 0, align: str = "start") -> Reference:
        return self.hopping_window(size, size, offset, align)

    def clip_duration(self, limit: int) -> Reference:
        return self._map(lambda s, e: [(s, min(e, s + limit))])

    def extend_lifetime(self, d: int) -> Reference:
        return self._map(lambda s, e: [(s, e if e == INFINITY else e + d)])

    def quantize_lifetime(self, size: int, hop: int | None = None, offset: int = 0, align: str = "start") -> Reference:
        hop = size if hop is None else hop
        snap = (lambda t: _floor(t, hop, offset)) if align == "start" else (lambda t: _ceil(t, hop, offset))
        return self._map(lambda s, e: [(snap(s), INFINITY if e == INFINITY else snap(e - 1) + size)])

    def point_at_end(self) -> Reference:
        return self._map(lambda s, e: [] if e == INFINITY else [(e, e + 1)])

    def chop(self, period: int, offset: int = 0, horizon: int | None = None) -> Reference:
        """Every lifetime split at every grid point inside it, open ones included (Trill's Chop).

        An open lifetime has infinitely many pieces, which the engine produces as time passes;
        here it is split at the grid points before ``horizon`` and its last piece stays open, as
        the engine's output is when its input completes at that time. ``horizon`` defaults to
        the latest time in the stream (a start or a finite end). Compare results after a chop
        of open lifetimes only at instants before the horizon (``assert_same_snapshots(...,
        until=horizon)``): past it the engine has simply not seen time pass.
        """
        if horizon is None:
            times = [s for s, _, _ in self.events] + [e for _, e, _ in self.events if e != INFINITY]
            horizon = max(times, default=0)

        def f(s, e):
            pieces, cur = [], s
            while cur < e:
                grid = _floor(cur, period, offset) + period
                if e == INFINITY and grid >= horizon:
                    pieces.append((cur, INFINITY))  # time has not passed the next grid point yet
                    break
                nxt = min(grid, e)
                pieces.append((cur, nxt))
                cur = nxt
            return pieces

        return self._map(f)

    # -- stateful lifetimes, straight from their definitions (tidal.ops.session) -----------------
    def session_window(self, timeout: int, max_duration: int | None = None, lifetime: str = "session") -> Reference:
        """Sessions over start times: a start joins while ``< last + timeout`` and ``< cap``."""
        out, session = [], []  # session: the (start, payload) of the open session's events

        def close():
            first = session[0][0]
            cap = INFINITY if max_duration is None else _floor(first, max_duration) + max_duration
            end = min(session[-1][0] + timeout, cap)
            out.extend((first if lifetime == "session" else s, end, p) for s, p in session)

        for s, _, p in sorted(self.events, key=lambda ev: ev[0]):
            if session:
                first = session[0][0]
                cap = INFINITY if max_duration is None else _floor(first, max_duration) + max_duration
                if s >= session[-1][0] + timeout or s >= cap:
                    close()
                    session = []
            session.append((s, p))
        if session:
            close()
        return Reference(self.names, out)

    def stitch(self) -> Reference:
        """The layers of each payload's multiplicity: the coalesced lifetimes, snapshots unchanged."""
        return Reference(self.names, layers(deltas_from_intervals(self.events)))

    def distinct(self) -> Reference:
        """Between consecutive event boundaries, each payload alive there once."""
        cuts = sorted({s for s, _, _ in self.events} | {e for _, e, _ in self.events if e != INFINITY})
        out = []
        for i, t in enumerate(cuts):
            nxt = cuts[i + 1] if i + 1 < len(cuts) else INFINITY
            alive = {p for s, e, p in self.events if s <= t < e}
            out.extend((t, nxt, p) for p in alive)
        return Reference(self.names, out)

    def union(self, other: Reference) -> Reference:
        return Reference(self.names, self.events + other.events)

    # -- aggregation, straight from the snapshot definition ------------------------------------
    def aggregate(self, *fns, **named) -> Reference:
        specs = [(fn.default_name, fn) for fn in fns] + list(named.items())
        return self._aggregate(specs, ())

    def group_aggregate(self, key, *fns, **named) -> Reference:
        specs = [(fn.default_name, fn) for fn in fns] + list(named.items())
        return self._aggregate(specs, self._key_fn(key))

    def _key_fn(self, key):
        # freeze: NaN keys are one group (as in the engine and DuckDB)
        if callable(key):
            return (("key",), lambda r: freeze((key(r),)))
        fields = (key,) if isinstance(key, str) else tuple(key)
        return (fields, lambda r: freeze(tuple(getattr(r, f) for f in fields)))

    def _aggregate(self, specs, keyed) -> Reference:
        key_names, key_of = keyed if keyed else ((), lambda r: ())
        rows = self._rows()
        cuts = sorted({s for s, _, _ in rows} | {e for _, e, _ in rows if e != INFINITY})
        out = []
        for i, t in enumerate(cuts):
            end = cuts[i + 1] if i + 1 < len(cuts) else INFINITY
            groups: dict[tuple, list] = {}
            for s, e, r in rows:
                if s <= t < e:
                    groups.setdefault(key_of(r), []).append((s, r))
            for k, alive in groups.items():
                values = tuple(_reference_result(fn, alive) for _, fn in specs)
                out.append((t, end, tuple(k) + values))
        return Reference(tuple(key_names) + tuple(n for n, _ in specs), out)

    def group_apply(self, key, subquery, result=None) -> Reference:
        key_names, key_of = self._key_fn(key)
        parts: dict[tuple, list] = {}
        for s, e, r in self._rows():
            parts.setdefault(key_of(r), []).append((s, e, tuple(r)))
        out, names = [], None
        for k, events in parts.items():
            sub = subquery(Reference(self.names, events))
            # like the engine's ungroup: a subquery field named like a key field is the key itself
            kept = [i for i, n in enumerate(sub.names) if n not in key_names]
            for s, e, p in sub.events:
                if result is None:
                    out.append((s, e, tuple(k) + tuple(p[i] for i in kept)))
                else:
                    value = result(k[0] if len(k) == 1 else k, row_class(sub.names)._make(p))
                    value = value if isinstance(value, dict) else {"value": value}
                    names = tuple(value)
                    out.append((s, e, tuple(value.values())))
            if result is None and (names is None or sub.events):
                # a group whose subquery gave nothing may not know its fields (a join's result lambda
                # is never called): the names come from a group with events, where there is one
                names = tuple(key_names) + tuple(n for n in sub.names if n not in key_names)
        return Reference(names or tuple(key_names) + self.names, out)

    # -- joins: written from the per-instant definitions in tidal/ops/join/ -------------
    def _key_of(self, key):
        """A function from a row to its key tuple, or None when a key field is null. A NaN key equals
        a NaN key (as the engine's key codes, and DuckDB, have it)."""
        if key is None:
            return lambda r: ()
        if isinstance(key, str):
            key = [key]
        if isinstance(key, list | tuple):
            names = list(key)
            fn = lambda r: tuple(r[n] for n in names)  # noqa: E731
        else:
            fn = lambda r: _as_tuple(key(r))  # noqa: E731

        def of(r):
            k = fn(r)
            return None if any(v is None for v in k) else freeze(k)

        return of

    def _joined_names(self, other: Reference, result) -> tuple[str, ...] | None:
        if result is not None:
            return None
        names = list(self.names)
        taken = set(names)
        for n in other.names:
            while n in taken:
                n = n + "_right"
            taken.add(n)
            names.append(n)
        return tuple(names)

    def _pair(self, other: Reference, result, lp, rp):
        """Payload of a joined pair; ``lp``/``rp`` None stands for a missing side (all fields null)."""
        lrow = row_class(self.names)._make(lp if lp is not None else [None] * len(self.names))
        rrow = row_class(other.names)._make(rp if rp is not None else [None] * len(other.names))
        if result is None:
            return tuple(lrow) + tuple(rrow), None
        value = result(_NullRow() if lp is None else lrow, _NullRow() if rp is None else rrow)
        if not isinstance(value, dict):
            value = {"value": value}
        return tuple(value.values()), tuple(value)

    def join(self, other: Reference, left_key, right_key, result=None, left_is_small: bool = False) -> Reference:
        """``left_is_small`` picks a physical variant in the engine; the meaning is the same."""
        lk, rk = self._key_of(left_key), other._key_of(right_key)
        out, names = [], self._joined_names(other, result)
        for s1, e1, r1 in self._rows():
            k1 = lk(r1)
            for s2, e2, r2 in other._rows():
                if k1 is None or k1 != rk(r2):
                    continue
                s, e = max(s1, s2), min(e1, e2)
                if s < e:
                    payload, got = self._pair(other, result, tuple(r1), tuple(r2))
                    names = names or got
                    out.append((s, e, payload))
        return Reference(names or (), out)

    def cross_join(self, other: Reference, result=None) -> Reference:
        return self.join(other, None, None, result)

    def _instants(self, *others: Reference):
        """Elementary segments [a, b) between consecutive lifetime boundaries of all inputs."""
        times = sorted({t for ref in (self, *others) for s, e, _ in ref.events for t in (s, e) if t != INFINITY})
        return list(zip(times, [*times[1:], INFINITY], strict=True)) if times else []

    @staticmethod
    def _alive(ref: Reference, t: int):
        return [(i, r) for i, (s, e, r) in enumerate(ref._rows()) if s <= t < e]

    def _outer(self, other: Reference, left_key, right_key, result, full: bool) -> Reference:
        inner = self.join(other, left_key, right_key, result)
        lk, rk = self._key_of(left_key), other._key_of(right_key)
        out, names = list(inner.events), inner.names or None
        for a, b in self._instants(other):
            lalive, ralive = self._alive(self, a), self._alive(other, a)
            rkeys = {rk(r) for _, r in ralive} - {None}
            lkeys = {lk(r) for _, r in lalive} - {None}
            for _, r in lalive:
                if lk(r) is None or lk(r) not in rkeys:
                    payload, got = self._pair(other, result, tuple(r), None)
                    names = names or got
                    out.append((a, b, payload))
            if full:
                for _, r in ralive:
                    if rk(r) is None or rk(r) not in lkeys:
                        payload, got = self._pair(other, result, None, tuple(r))
                        names = names or got
                        out.append((a, b, payload))
        return Reference(names or self._joined_names(other, None), out)

    def left_outer_join(self, other: Reference, left_key, right_key, result=None) -> Reference:
        return self._outer(other, left_key, right_key, result, full=False)

    def full_outer_join(self, other: Reference, left_key, right_key, result=None) -> Reference:
        return self._outer(other, left_key, right_key, result, full=True)

    def _semi(self, other: Reference, left_key, right_key, exists: bool) -> Reference:
        lk, rk = self._key_of(left_key), other._key_of(right_key)
        out = []
        for a, b in self._instants(other):
            rkeys = {rk(r) for _, r in self._alive(other, a)} - {None}
            for _, r in self._alive(self, a):
                k = lk(r)
                if (k is not None and k in rkeys) == exists:
                    out.append((a, b, tuple(r)))
        return Reference(self.names, out)

    def where_exists(self, other: Reference, left_key, right_key) -> Reference:
        return self._semi(other, left_key, right_key, exists=True)

    def where_not_exists(self, other: Reference, left_key, right_key) -> Reference:
        return self._semi(other, left_key, right_key, exists=False)

    def clip(self, other: Reference, left_key, right_key) -> Reference:
        lk, rk = self._key_of(left_key), other._key_of(right_key)
        out = []
        for s1, e1, r1 in self._rows():
            k = lk(r1)
            later = [s2 for s2, _, r2 in other._rows() if k is not None and rk(r2) == k and s2 > s1]
            out.append((s1, min([e1, *later]), tuple(r1)))
        return Reference(self.names, out)

    def canonical(self) -> list[tuple[int, int, tuple]]:
        return layers(deltas_from_intervals(self.events))


def _reference_result(fn, alive: list[tuple[int, object]]):
    """One aggregate over the alive ``(start, row)`` pairs of a snapshot, by its definition."""
    kind = fn.kind
    if kind == "count":
        return len(alive)
    if kind == "udf":
        u = fn.udf
        three = len(inspect.signature(u.accumulate).parameters) == 3
        state = u.initial_state()
        for s, r in sorted(alive, key=lambda a: a[0]):
            state = u.accumulate(state, s, r) if three else u.accumulate(state, r)
        return state if u.compute_result is None else u.compute_result(state)
    if kind in ("mode", "arg_min", "arg_max", "product"):
        return _reference_pick(fn, alive)
    arg = fn.arg
    pairs = [(s, getattr(r, arg) if isinstance(arg, str) else arg(r)) for s, r in alive]
    if kind in ("first", "last"):
        # FIRST/LAST take the value of the earliest/latest start, NULL or not (as DuckDB's first/last);
        # at one start time a NULL comes after every value
        if not pairs:
            return None
        ordered = [(s, v is None, v) for s, v in pairs]
        return (min(ordered) if kind == "first" else max(ordered))[2]
    pairs = [(s, v) for s, v in pairs if v is not None and not (isinstance(v, float) and math.isnan(v))]
    values = [v for _, v in pairs]
    if kind == "count_not_null":
        return len(values)
    if kind == "count_distinct":
        return len(set(values))
    if kind == "distinct":
        return sorted(set(values))
    if kind == "top_k":
        return sorted(values, reverse=True)[: fn.param]
    if not values:
        return None
    if kind == "sum":
        return exact_sum(values)
    if kind == "average":
        total = exact_sum(values)
        return total if isinstance(total, float) and not math.isfinite(total) else float(total) / len(values)
    if kind == "min":
        return min(values)
    if kind == "max":
        return max(values)
    if kind in ("variance", "stddev"):
        var = exact_variance(values)
        return var if var is None or kind == "variance" else math.sqrt(var)
    if kind == "first":
        return min(pairs)[1]
    if kind == "last":
        return max(pairs)[1]
    ordered = sorted(values)
    if kind == "percentile_disc":
        return ordered[max(0, math.ceil(fn.param * len(ordered)) - 1)]
    if kind == "percentile_cont":
        pos = fn.param * (len(ordered) - 1)
        lo, hi = math.floor(pos), math.ceil(pos)
        return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)
    raise ValueError(f"the reference evaluator has no aggregate {kind!r}")


def _nan_last(v) -> tuple:
    return (1, 0.0) if isinstance(v, float) and math.isnan(v) else (0, v)


def _reference_pick(fn, alive: list[tuple[int, object]]):
    """mode / arg_min / arg_max / product by their definitions (tidal.ops.aggregate.picks' docstring)."""
    if fn.kind in ("arg_min", "arg_max"):
        by, x = fn.arg
        rows = [(s, getattr(r, by), getattr(r, x)) for s, r in alive]
        rows = [row for row in rows if row[1] is not None and row[2] is not None]
        if not rows:
            return None
        pick = min if fn.kind == "arg_min" else max
        best = pick(_nan_last(b) for _, b, _ in rows)
        return min(((s, _nan_last(v), v) for s, b, v in rows if _nan_last(b) == best), key=lambda r: r[:2])[2]
    values = sorted(
        ((s, getattr(r, fn.arg)) for s, r in alive if getattr(r, fn.arg) is not None),
        key=lambda sv: (sv[0], _nan_last(sv[1])),
    )
    if not values:
        return None
    if fn.kind == "product":
        p = 1.0
        for _, v in values:
            p *= float(v)
        return p
    groups: list[list] = []  # [value as first seen, count, first start, order key]
    for s, v in values:
        same = next((g for g in groups if g[3] == _nan_last(v)), None)
        if same is None:
            groups.append([v, 1, s, _nan_last(v)])
        else:
            same[1] += 1
    return min(groups, key=lambda g: (-g[1], g[2], g[3]))[0]


class _NullRow:
    """The missing side of an outer join, as a ``result`` lambda sees it: every field is None."""

    def __getattr__(self, name):
        return None

    def __getitem__(self, name):
        return None


def _as_tuple(value) -> tuple:
    if isinstance(value, tuple):
        return value
    if isinstance(value, dict):
        return tuple(value.values())
    return (value,)


def intervals_of(result) -> list[tuple[int, int, tuple]]:
    """Canonical layers of a Stream, a physical-events Arrow table, or a Reference."""
    return canonical(result)


def canonical(result, digits: int | None = None) -> list[tuple[int, int, tuple]]:
    """Canonical layers; ``digits`` rounds float fields first (results computed in another order)."""
    if digits is not None:
        return _rounded(canonical(_events_of(result)), digits)
    if isinstance(result, Reference):
        return result.canonical()
    if hasattr(result, "to_arrow") and not isinstance(result, pa.Table):
        result = result.to_arrow()
    if isinstance(result, pa.Table):
        names = [n for n in result.column_names if n not in ("sync_time", "other_time")]
        cols = [result.column(n).to_pylist() for n in names]
        payloads = list(zip(*cols, strict=True)) if cols else [()] * result.num_rows
        return layers(
            deltas_from_physical(
                result.column("sync_time").to_pylist(), result.column("other_time").to_pylist(), payloads
            )
        )
    return layers(deltas_from_intervals(result))


def _events_of(result):
    """Logical intervals of a result, so that rounding can apply before layers are formed."""
    if isinstance(result, Reference):
        return result.events
    return [(s, e, p) for s, e, p in canonical(result)]


def _round(v, digits):
    if isinstance(v, float):
        return math.nan if v != v else round(v, digits) + 0.0
    if isinstance(v, list):
        return tuple(_round(x, digits) for x in v)
    return v


def _rounded(layers_, digits):
    events = [(s, e, tuple(_round(v, digits) for v in p)) for s, e, p in layers_]
    return layers(deltas_from_intervals(events))


def assert_same_snapshots(
    actual, expected, digits: int | None = None, until: int | None = None, rel_tol: float | None = None
) -> None:
    """Fail unless both have the same snapshot at every instant (shows the first difference).

    ``digits`` rounds float fields on both sides (for aggregates summed in another order);
    ``until`` compares only the instants before it; ``rel_tol`` also takes the same layers whose floats
    differ by that much relative (a value near a rounding boundary of ``digits``: 233607.699321428|48, ...42857).
    """
    a, b = canonical(actual, digits), canonical(expected, digits)
    if until is not None:
        a, b = _before(a, until), _before(b, until)
    if a == b:
        return
    if rel_tol is not None:
        x, y = canonical(actual), canonical(expected)
        x, y = (x, y) if until is None else (_before(x, until), _before(y, until))
        if len(x) == len(y) and all(_close(p, q, rel_tol) for p, q in zip(x, y, strict=True)):
            return
    only_a = [x for x in a if x not in b][:5]
    only_b = [x for x in b if x not in a][:5]
    raise AssertionError(
        f"snapshots differ: {len(a)} vs {len(b)} layers; only in actual: {only_a}; only in expected: {only_b}"
    )


def _close(x, y, rel_tol: float) -> bool:
    if isinstance(x, float) and isinstance(y, float):
        return (x != x and y != y) or math.isclose(x, y, rel_tol=rel_tol, abs_tol=rel_tol)
    if isinstance(x, tuple | list) and isinstance(y, tuple | list):
        return len(x) == len(y) and all(_close(a, b, rel_tol) for a, b in zip(x, y, strict=True))
    return x == y


def _before(layers_, until: int) -> list[tuple[int, int, tuple]]:
    return layers(deltas_from_intervals([(s, min(e, until), p) for s, e, p in layers_ if s < until]))


def check_physical(table: pa.Table) -> None:
    """Fail unless a physical result is well formed: sync times non-decreasing, every end edge matched."""
    sync = table.column("sync_time").to_pylist()
    if any(b < a for a, b in zip(sync, sync[1:], strict=False)):
        raise AssertionError("sync times go backwards in the output")
    canonical(table)  # raises if an end edge has no start
