"""``GROUP BY window_start, window_end`` over ``tumble``/``hop`` on the engine's windows.

Grouping the rows of ``tumble(...)`` by their window (and other columns) is, read literally, a
running aggregate over rows at their event time: every row changes its group's value, and the
trigger after it sees every change. A window's rows all arrive before the stream's time passes the
window's end, so its value is final there. This translation runs the engine's
``tumbling_window``/``hopping_window`` and aggregate instead (one result per window and group,
fused with the window for linear aggregates), turns each result into a row at its window's end
with ``window_start``/``window_end`` (:class:`~tidal.ops.tumble.WindowRowsOp`), and hands those
rows to the same trigger, which sees one change per window and group instead of one per row.

It applies when the aggregate's input is the window's rows through projections (the keys columns;
an argument may be computed from the rows' columns, such as the NaN count SQL's SUM keeps beside
the sum, over a tumbling window: it is then computed before the window), the keys name the window,
no aggregate depends on input order (FIRST, LAST, STRING_AGG), the trigger is the default or
``ON WATERMARK`` (both fire a window's group once its value is final), and the engine gives one
result per window: any aggregate after a tumbling window; after a hopping window whose hop divides
its length, the fused linear aggregates over integers (floating sums would be
added in another order). Otherwise :func:`windowed_aggregate` returns None and the literal
translation runs. The answer is the same either way; a trigger without rules still fires every
group at end of input (then at the last window's end rather than the last row's time).
"""

from __future__ import annotations

import pyarrow as pa
from sqlglot import exp

from ..ops.aggregate.functions import ORDER_SENSITIVE
from ..plan.nodes import relational as rel
from ..plan.nodes.aggregate import Aggregate as AggregateNode
from ..plan.nodes.aggregate import fusable
from ..plan.nodes.lifetime import HoppingWindow
from ..stream.streamable import Stream
from .logical import Aggregate, Project, Tumble, event_time_field

WINDOW_COLUMNS = ("window_start", "window_end")
ORDERED = ORDER_SENSITIVE  # ties/order by row times


def _source_names(node: Aggregate, wanted: set[str]) -> tuple[Tumble, dict[str, exp.Expression]] | None:
    """The window under ``node`` and, for each wanted input column, its expression over the window's
    rows (a column, or a value computed from them by the projections between)."""
    names: dict[str, exp.Expression] = {n: exp.column(n) for n in wanted}
    cur = node.input
    while isinstance(cur, Project):
        defs = dict(cur.exprs)
        if any(c.name not in defs for e in names.values() for c in e.find_all(exp.Column)):
            return None
        names = {
            top: e.transform(lambda x, defs=defs: defs[x.name].copy() if isinstance(x, exp.Column) else x)
            for top, e in names.items()
        }
        cur = cur.input
    if not isinstance(cur, Tumble):
        return None
    return cur, names


def _computed_arguments(names: dict, arguments: set[str], types: dict, project):
    """Computed arguments (not windows' columns: e.g. SQL's NaN count beside a SUM) as columns
    ``__w0, __w1, ...`` of the rows before the window, computed there by ``project``; None when
    one reads the window's bounds or cannot be computed there."""
    computed = {a: names[a] for a in sorted(arguments) if not isinstance(names[a], exp.Column)}
    if not computed:
        return {}, None
    if project is None or any(c.name in WINDOW_COLUMNS for e in computed.values() for c in e.find_all(exp.Column)):
        return None
    return {a: (f"__w{i}", e, types[a]) for i, (a, e) in enumerate(computed.items())}, project


def windowed_aggregate(rows_of, node: Aggregate, spec, distinct: str | None, time, project=None) -> Stream | None:
    """The aggregate ``node`` over window rows on the engine's windows, or None when it does not apply.

    ``rows_of(tumble)`` translates the window's input (its rows in event-time order); ``distinct`` is the
    name of the hidden count a ``GROUP BY`` without aggregates groups with (None when it has some);
    ``project(rows, below, exprs, schema)`` adds computed columns to the rows of the logical node
    ``below`` (None: arguments must be columns)."""
    from .. import agg

    if time.column is not None or any(t != ("watermark",) for t in node.trigger):
        return None
    if any(c.function in ORDERED for c in node.aggs):
        return None
    arguments = {c.argument for c in node.aggs if c.argument is not None}
    found = _source_names(node, set(node.keys) | arguments)
    if found is None:
        return None
    tumble, found_names = found
    types = dict(zip(node.input.names, node.input.types, strict=True))
    extra = _computed_arguments(found_names, arguments, types, project)
    if extra is None:
        return None
    extra, project = extra
    names = {n: e.name for n, e in found_names.items() if isinstance(e, exp.Column)}
    names.update({a: name for a, (name, _, _) in extra.items()})
    if any(k not in names or k in extra for k in node.keys):
        return None  # a computed key: the literal translation
    window_keys = [k for k in node.keys if names[k] in WINDOW_COLUMNS]
    other_keys = [k for k in node.keys if names[k] not in WINDOW_COLUMNS]
    if not window_keys or any(names[k] != k for k in node.keys):
        return None  # a renamed key would need a projection: the literal translation handles it
    outputs = [c.output for c in node.aggs] + ([distinct] if distinct else [])
    if any(names[a] in WINDOW_COLUMNS for a in arguments) or set(outputs) & set(WINDOW_COLUMNS):
        return None
    length = tumble.length
    hop = length if tumble.hop is None else tumble.hop
    if length % hop or (extra and hop != length):
        return None
    makers = {}
    for call in node.aggs:
        args = [] if call.argument is None else [names[call.argument]]
        if call.parameter is not None:
            args.append(call.parameter)
        makers[call.output] = getattr(agg, call.function)(*args)
    if distinct:
        makers[distinct] = agg.count()
    rows = rows_of(tumble)
    if extra:
        exprs = tuple((f.name, exp.column(f.name)) for f in rows.schema)
        exprs += tuple((name, e) for name, e, _ in extra.values())
        schema = pa.schema([*rows.schema, *(pa.field(name, t) for name, _, t in extra.values())])
        rows = project(rows, tumble.input, exprs, schema)
    windowed = rows.hopping_window(length, hop, tumble.offset, tumble.align)
    out = windowed.group_aggregate(other_keys, **makers) if other_keys else windowed.aggregate(**makers)
    if hop == length:
        if out.properties.constant_duration != length:
            return None
    else:
        types = {f.name: f.type for f in rows.schema}
        agg_node = out.node
        if not (isinstance(agg_node, AggregateNode) and isinstance(agg_node.inputs[0], HoppingWindow)):
            return None
        if not fusable(agg_node.inputs[0], agg_node):
            return None
        if any(not pa.types.is_integer(types[names[a]]) for a in arguments):
            return None  # fused hops add partial sums: floating sums would round differently
    added = tuple(k for k in WINDOW_COLUMNS if k in window_keys)
    schema = pa.schema([*out.schema, *(pa.field(c, pa.timestamp("us")) for c in added)])
    out = Stream(rel.WindowRows(out.node, length, hop, added, schema, tumble.align))
    fields = [out.schema.field(k) for k in node.keys] + [out.schema.field(m) for m in makers]
    out = Stream(rel.Shape(out.node, pa.schema(fields)))
    evt = event_time_field(node.input)
    keys = tuple(node.keys)
    out = Stream(rel.Trigger(out.node, spec, keys, evt if evt in keys else None, None, has_clock=True))
    return out.select(*node.keys) if distinct else out
