"""Window functions in a SELECT list (``f(...) OVER (PARTITION BY ... ORDER BY ... frame)``).

They are computed after WHERE, GROUP BY and HAVING, over the rows the SELECT list projects: each
call's inputs (arguments, partition and order keys) become columns of a projection, a
:class:`~.nodes.WindowFunctions` node adds one column per call, and the SELECT list reads those.
"""

from __future__ import annotations

import dataclasses
import decimal
from typing import TYPE_CHECKING

import pyarrow as pa
from sqlglot import exp

from ...core.errors import PlanError
from .decimal_aggs import window_sum, window_sum_result
from .exprs import _col, _const_int, _display, _transform
from .nodes import Node, Project, WindowFunctions

if TYPE_CHECKING:
    from ...ops.window_functions import WindowCall

_RANKING = {
    exp.RowNumber: "row_number",
    exp.Rank: "rank",
    exp.DenseRank: "dense_rank",
    exp.PercentRank: "percent_rank",
    exp.CumeDist: "cume_dist",
    exp.Ntile: "ntile",
}
_VALUE = {exp.FirstValue: "first_value", exp.LastValue: "last_value"}
_OFFSET = {exp.Lag: "lag", exp.Lead: "lead"}
_AGGREGATE = {exp.Sum: "sum", exp.Avg: "avg", exp.Min: "min", exp.Max: "max", exp.Count: "count"}
_BOOLEAN = {exp.LogicalOr: "max", exp.LogicalAnd: "min"}  # bool_or / bool_and: false < true


def has_window(e: exp.Expression) -> bool:
    """Whether ``e`` calls a window function (outside any subquery in it)."""
    if isinstance(e, exp.Window):
        return True
    if isinstance(e, exp.Subquery):
        return False
    return any(has_window(c) for c in e.iter_expressions())


def _short(e: exp.Expression) -> str:
    return e.sql(dialect="duckdb")


_CLAUSES = ("partition_by", "order", "spec")


def named_windows(sel: exp.Select) -> exp.Select:
    """``sel`` with each ``OVER w`` / ``OVER (w ...)`` replaced by the window ``w`` of its WINDOW
    clause (DuckDB's rules: a reference adds ORDER BY or a frame, never overrides them)."""
    defs: dict[str, exp.Window] = {}
    for w in sel.args.get("windows") or ():
        name = w.this.name.lower()
        if name in defs:
            raise PlanError(f'window "{name}" is already defined (WINDOW {_short(w)})')
        defs[name] = _merged(w, defs)

    def own(n: exp.Expression) -> bool:  # a nested query's windows are its own
        return n is not sel and isinstance(n, exp.Select | exp.Subquery | exp.SetOperation)

    refs = [n for n in sel.walk(prune=own) if isinstance(n, exp.Window) and n.args.get("alias") is not None]
    if not refs and not defs:
        return sel
    for w in refs:
        merged = _merged(w, defs)
        merged.set("this", w.this)
        w.replace(merged)
    sel.set("windows", None)
    return sel


def _merged(w: exp.Window, defs: dict) -> exp.Window:
    """The window ``w`` (a definition or an OVER clause) with the window it names filled in."""
    out = w.copy()
    out.set("alias", None)
    base_name = w.args.get("alias")
    if base_name is None:
        return out
    base = defs.get(base_name.name.lower())
    if base is None:
        raise PlanError(f'window "{base_name.name}" does not exist: {_short(w)}')
    own = {k for k in _CLAUSES if w.args.get(k)}
    if "partition_by" in own and base.args.get("partition_by"):
        raise PlanError(f'Cannot override PARTITION BY clause of window "{base_name.name}": {_short(w)}')
    if "order" in own and base.args.get("order"):
        raise PlanError(f'Cannot override ORDER BY clause of window "{base_name.name}": {_short(w)}')
    if base.args.get("spec"):
        if own:
            raise PlanError(f'cannot copy window "{base_name.name}" because it has a frame clause: {_short(w)}')
        # DuckDB takes OVER w here but refuses OVER (w); the parser does not tell them apart
        raise PlanError(f'a reference to window "{base_name.name}", which has a frame clause, is not supported')
    for k in ("partition_by", "order"):
        if base.args.get(k) and not out.args.get(k):
            out.set(k, base.args[k].copy() if isinstance(base.args[k], exp.Expression) else
                    [e.copy() for e in base.args[k]])  # fmt: skip
    return out


class WindowList:
    """Part of :class:`~.builder.Builder`: the window functions of a SELECT list."""

    def windows(self, node: Node, items: list, sel: exp.Select) -> tuple[Node, list]:
        """Plan the window calls in ``items`` over ``node``; the items then read the calls' columns.
        Items marked bound (after an aggregate) already name ``node``'s columns."""
        extra: list[tuple[str, exp.Expression]] = []  # computed inputs of the calls
        calls: list[WindowCall] = []

        def column(e: exp.Expression, bound: bool) -> str:
            e = e if bound else self.bind(e, node)
            if isinstance(e, exp.Column) and e.name in node.names:
                return e.name
            for name, done in extra:
                if done.sql() == e.sql():
                    return name
            name = self.fresh("wa")
            self.check(e, node)
            extra.append((name, e))
            return name

        def plan_call(w: exp.Window, bound: bool) -> exp.Expression:
            parts, scale = window_sum(w, lambda e: self.check(e if bound else self.bind(e, node), node))
            for part in parts:
                calls.append(_call(part, lambda e: column(e, bound), self.fresh("w")))
            if scale is not None:  # DuckDB's exact DECIMAL(38, s) sum, of its limbs' BIGINT sums
                return window_sum_result([c.output for c in calls[-len(parts) :]], scale)
            return _col(calls[-1].output)

        new_items = []
        for item in items:
            bound = getattr(item, "_bound", False)
            if not has_window(item):
                new_items.append(item)
                continue
            new = _transform(item.copy(), lambda x, b=bound: plan_call(x, b) if isinstance(x, exp.Window) else None)
            if not isinstance(item, exp.Alias):  # named as written (DuckDB's name), not by the call's column
                new = exp.Alias(this=new, alias=exp.to_identifier(_display(item)))
            if bound:
                new._bound = True
            new_items.append(new)
        inner = node
        if extra:
            exprs = tuple((n, _col(n)) for n in node.names) + tuple(extra)
            scope = tuple(node.scope) + tuple((None, n) for n, _ in extra)
            types = tuple(node.types) + tuple(self.check(e, node) for _, e in extra)
            inner = Project(node, exprs, scope=scope, types=types)
        from ...ops.window_functions import result_type  # imported by the queries that have windows

        in_types = dict(zip(inner.names, inner.types, strict=True))
        out_types = []
        for i, c in enumerate(calls):
            arg = in_types.get(c.args[0]) if c.args else None
            _check_argument(c, arg)
            calls[i] = c = _default_as(c, arg)
            out_types.append(result_type(c, arg))
        windowed = WindowFunctions(
            inner,
            tuple(calls),
            scope=tuple(inner.scope) + tuple((None, c.output) for c in calls),
            types=tuple(inner.types) + tuple(out_types),
        )
        return windowed, new_items


def _check_argument(call: WindowCall, arg: pa.DataType | None) -> None:
    if call.params == ("boolean",) and arg is not None and not (pa.types.is_boolean(arg) or pa.types.is_null(arg)):
        raise PlanError(f"bool_or/bool_and take a BOOLEAN, not {arg}")
    if call.function in ("sum", "avg") and arg is not None:
        if not (pa.types.is_integer(arg) or pa.types.is_floating(arg) or pa.types.is_null(arg)):
            raise PlanError(f"window {call.function.upper()} of a {arg} column is not supported")


def _default_as(call: WindowCall, arg: pa.DataType | None) -> WindowCall:
    """lag/lead's default value cast to the argument's type, as DuckDB casts it (an integer column's
    default 2.5 is 3, a text column's default 3 is '3'); a default that cannot be cast is an error."""
    if call.function not in ("lag", "lead") or arg is None or call.params[1] is None or pa.types.is_null(arg):
        return call
    value = call.params[1]
    try:
        if pa.types.is_string(arg) or pa.types.is_large_string(arg):
            value = str(value).lower() if isinstance(value, bool) else str(value)
        elif pa.types.is_integer(arg) and isinstance(value, float):
            value = int(decimal.Decimal(repr(value)).to_integral_value(decimal.ROUND_HALF_UP))
        elif pa.types.is_integer(arg) and not isinstance(value, int):
            raise ValueError(value)
        elif pa.types.is_floating(arg) and isinstance(value, int | float) and not isinstance(value, bool):
            value = float(value)
        if pa.types.is_string(arg) or pa.types.is_integer(arg) or pa.types.is_floating(arg):
            pa.scalar(value, arg)
    except (ValueError, TypeError, pa.ArrowException) as exc:
        raise PlanError(f"{call.function.upper()}'s default {call.params[1]!r} cannot be a {arg}") from exc
    return dataclasses.replace(call, params=(call.params[0], value))


def _call(w: exp.Window, column, output: str) -> WindowCall:
    from ...ops.window_functions import WindowCall

    fn = w.this
    if isinstance(fn, exp.IgnoreNulls | exp.RespectNulls):
        raise PlanError(f"IGNORE/RESPECT NULLS in a window function is not supported: {_short(w)}")
    if fn.find(exp.Order) is not None:  # DuckDB's rank(ORDER BY k) OVER (...): an order of its own, framed
        raise PlanError(f"ORDER BY inside a window function's arguments is not supported: {_short(w)}")
    if w.args.get("alias") is not None and not w.args.get("order") and not w.args.get("partition_by"):
        raise PlanError(f"named windows (OVER name) are not supported: {_short(w)}")
    partition = tuple(column(p) for p in (w.args.get("partition_by") or []))
    order = tuple(
        (column(o.this), bool(o.args.get("desc")), bool(o.args.get("nulls_first")))
        for o in (w.args["order"].expressions if w.args.get("order") else [])
    )
    frame = _frame(w, bool(order))
    kind = type(fn)
    args: tuple = ()
    params: tuple = ()
    if kind in _RANKING:
        name = _RANKING[kind]
        if name == "ntile":
            params = (_const_int(fn.this, "NTILE") if not isinstance(fn.this, exp.Null) else None,)
            if params[0] is not None and params[0] <= 0:
                raise PlanError(f"NTILE takes a positive number of buckets: {_short(w)}")
    elif kind in _OFFSET:
        name = _OFFSET[kind]
        args = (column(fn.this),)
        offset = fn.args.get("offset")
        default = fn.args.get("default")
        n = 1 if offset is None else (None if isinstance(offset, exp.Null) else _const_int(offset, name.upper()))
        if default is not None and not isinstance(default, exp.Literal | exp.Null | exp.Neg | exp.Boolean):
            raise PlanError(f"{name.upper()}'s default must be a constant: {_short(w)}")
        value = None if default is None or isinstance(default, exp.Null) else _literal(default)
        params = (n, value)
    elif kind in _VALUE:
        name = _VALUE[kind]
        args = (column(fn.this),)
    elif kind in _AGGREGATE:
        name = _AGGREGATE[kind]
        arg = fn.this
        if isinstance(arg, exp.Distinct):
            raise PlanError(f"DISTINCT in a window aggregate is not supported: {_short(w)}")
        if kind is exp.Count and (arg is None or isinstance(arg, exp.Star)):
            name = "count_star"
        else:
            args = (column(arg),)
    elif kind in _BOOLEAN:
        name = _BOOLEAN[kind]
        args = (column(fn.this),)
        params = ("boolean",)  # the argument must be BOOLEAN (checked with the types)
    else:
        raise PlanError(f"window function {_short(fn)} is not supported")
    return WindowCall(output, name, args, partition, order, frame, params)


def _literal(e: exp.Expression):
    if isinstance(e, exp.Boolean):
        return bool(e.this)
    if isinstance(e, exp.Neg):
        return -_literal(e.this)
    if e.is_string:
        return e.name
    text = e.name
    return int(text) if text.lstrip("-").isdigit() else float(text)


def _frame(w: exp.Window, ordered: bool) -> tuple | None:
    spec = w.args.get("spec")
    if spec is None:
        return None
    if spec.args.get("exclude"):
        raise PlanError(f"EXCLUDE in a window frame is not supported: {_short(w)}")
    kind = str(spec.args.get("kind") or "").lower()
    if kind not in ("rows", "range"):
        raise PlanError(f"{kind.upper()} window frames are not supported: {_short(w)}")
    for at, side, wrong in (("start", "start_side", "FOLLOWING"), ("end", "end_side", "PRECEDING")):
        if str(spec.args.get(at) or "").upper() == "UNBOUNDED" and str(spec.args.get(side) or "").upper() == wrong:
            raise PlanError(f"a frame cannot {at} at UNBOUNDED {wrong}: {_short(w)}")
    lo = _bound(spec.args.get("start"), spec.args.get("start_side"), w)
    end = spec.args.get("end")
    hi = 0 if end is None else _bound(end, spec.args.get("end_side"), w)  # ROWS n PRECEDING: up to the row
    if kind == "range":
        if (lo, hi) not in ((None, 0), (None, None), (0, None), (0, 0)):
            raise PlanError(f"RANGE frames with offsets are not supported (use ROWS): {_short(w)}")
        if not ordered and (lo, hi) != (None, None):
            lo, hi = None, None  # without ORDER BY every row of the partition is a peer
    return (kind, lo, hi)


def _bound(value, side, w: exp.Window) -> int | None:
    text = (value.name if isinstance(value, exp.Expression) else str(value or "")).upper()
    side = str(side or "").upper()
    if text == "UNBOUNDED":
        return None
    if text == "CURRENT ROW":
        return 0
    if not isinstance(value, exp.Literal) or value.is_string:
        raise PlanError(f"a window frame bound must be a constant number of rows: {_short(w)}")
    n = int(value.name)
    return -n if side == "PRECEDING" else n
