"""The logical plan's nodes: immutable relational operators with their output columns and scope."""

from __future__ import annotations

from dataclasses import field, replace

import pyarrow as pa
from sqlglot import exp

from ...core.frozen import FACTORY, Fields, Frozen, immutable, mutable, set_field


class Node:
    names: tuple[str, ...]
    scope: tuple[tuple[str | None, str], ...]
    types: tuple[pa.DataType | None, ...]

    @property
    def inputs(self) -> tuple[Node, ...]:
        return ()

    def with_inputs(self, inputs) -> Node:
        return self

    def schema(self) -> pa.Schema | None:
        if any(t is None for t in self.types):
            return None
        return pa.schema([pa.field(n, t) for n, t in zip(self.names, self.types, strict=True)])

    def describe(self) -> str:
        return type(self).__name__


class Unary(Node):
    """A node with one input, held in its ``input`` field."""

    @property
    def inputs(self):
        return (self.input,)

    def with_inputs(self, inputs):
        return replace(self, input=inputs[0])


class SameColumns(Unary):
    """A one-input node whose rows keep the input's columns."""

    names = property(lambda self: self.input.names)
    scope = property(lambda self: self.input.scope)
    types = property(lambda self: self.input.types)


@immutable
class Scan(Node, Frozen):
    path: str
    format: str
    options: tuple = ()
    live: tuple = ()  # a growing input read as it is written: (("kind", "stdin" | "tail"), ("stop", ...), ...)
    names: tuple = ()
    scope: tuple = ()
    types: tuple = ()
    file_columns: tuple = ()  # the column each output name reads (projection pushdown shrinks the list)
    predicate: exp.Expression | None = None  # pushed-down filter over file columns
    # rows given in the query (VALUES, range): ``path`` then names them and ``format`` is "inline"
    rows: pa.Table | None = field(default=None, compare=False, repr=False)

    def __init__(
        self,
        path,
        format,
        options=(),
        live=(),
        names=(),
        scope=(),
        types=(),
        file_columns=(),
        predicate=None,
        rows=None,
    ):
        set_field(self, "path", path)
        set_field(self, "format", format)
        set_field(self, "options", options)
        set_field(self, "live", live)
        set_field(self, "names", names)
        set_field(self, "scope", scope)
        set_field(self, "types", types)
        set_field(self, "file_columns", file_columns)
        set_field(self, "predicate", predicate)
        set_field(self, "rows", rows)

    def describe(self) -> str:
        hidden = ("dsn", "url", "columns_sql")  # connectors' addresses (and passwords) stay out of plans
        opts = ", ".join(f"{k}={v!r}" for k, v in self.options if k not in hidden)
        parts = [f"Scan {self.path!r} ({self.format}{', ' + opts if opts else ''})", f"columns {list(self.names)}"]
        if self.live:
            parts.append("live " + ", ".join(f"{k}={v}" for k, v in self.live if v is not None))
        if self.predicate is not None:
            parts.append(f"pushed filter {self.predicate.sql()}")
        return ", ".join(parts)


@immutable
class WindowFunctions(Unary, Frozen):
    """The input's rows, each with one more column per window function call (``... OVER (...)``)."""

    input: Node
    calls: tuple  # tidal.ops.window_functions.WindowCall
    scope: tuple = ()
    types: tuple = ()

    def __init__(self, input, calls, scope=(), types=()):
        set_field(self, "input", input)
        set_field(self, "calls", calls)
        set_field(self, "scope", scope)
        set_field(self, "types", types)

    @property
    def names(self):
        return tuple(self.input.names) + tuple(c.output for c in self.calls)

    def describe(self) -> str:
        return "Window " + "; ".join(c.describe() for c in self.calls)


@immutable
class Filter(SameColumns, Frozen):
    input: Node
    condition: exp.Expression

    def __init__(self, input, condition):
        set_field(self, "input", input)
        set_field(self, "condition", condition)

    def describe(self) -> str:
        return f"Filter {self.condition.sql()}"


@immutable
class Limit(SameColumns, Frozen):
    """ORDER BY ... LIMIT/OFFSET of a subquery: the rows at positions ``offset .. offset + limit - 1``
    of the input ordered by ``order`` (``((column, descending, nulls first), ...)``); ``limit`` None: all."""

    input: Node
    order: tuple = ()
    limit: int | None = None
    offset: int = 0

    def __init__(self, input, order=(), limit=None, offset=0):
        set_field(self, "input", input)
        set_field(self, "order", order)
        set_field(self, "limit", limit)
        set_field(self, "offset", offset)

    def describe(self) -> str:
        keys = ", ".join(f"{n}{' DESC' if d else ''}" for n, d, _ in self.order)
        return f"Limit {self.limit} offset {self.offset}" + (f" order by {keys}" if keys else "")


@immutable
class Project(Unary, Frozen):
    input: Node
    exprs: tuple  # ((physical name, bound expression), ...)
    scope: tuple = ()
    types: tuple = ()

    def __init__(self, input, exprs, scope=(), types=()):
        set_field(self, "input", input)
        set_field(self, "exprs", exprs)
        set_field(self, "scope", scope)
        set_field(self, "types", types)

    @property
    def names(self):
        return tuple(n for n, _ in self.exprs)

    def describe(self) -> str:
        texts = ((n, e.sql()) for n, e in self.exprs)
        return "Project " + ", ".join(t if t == n else f"{t} AS {n}" for n, t in texts)


@immutable
class AggCall(Frozen):
    output: str
    function: str  # tidal.agg function name
    argument: str | None  # input column (None for count(*))
    parameter: float | None = None

    def __init__(self, output, function, argument, parameter=None):
        set_field(self, "output", output)
        set_field(self, "function", function)
        set_field(self, "argument", argument)
        set_field(self, "parameter", parameter)

    def describe(self) -> str:
        inner = self.argument or "*"
        if self.parameter is not None:
            inner += f", {self.parameter}"
        return f"{self.function}({inner}) AS {self.output}"


@immutable
class Aggregate(Unary, Frozen):
    input: Node
    keys: tuple  # input columns
    aggs: tuple  # AggCall
    scope: tuple = ()
    types: tuple = ()
    trigger: tuple = ()  # ("counting", n) | ("delay", micros) | ("watermark",)

    def __init__(self, input, keys, aggs, scope=(), types=(), trigger=()):
        set_field(self, "input", input)
        set_field(self, "keys", keys)
        set_field(self, "aggs", aggs)
        set_field(self, "scope", scope)
        set_field(self, "types", types)
        set_field(self, "trigger", trigger)

    @property
    def names(self):
        return tuple(self.keys) + tuple(a.output for a in self.aggs)

    def describe(self) -> str:
        keys = f" by {', '.join(self.keys)}" if self.keys else ""
        trig = f" trigger {', '.join(' '.join(map(str, t)) for t in self.trigger)}" if self.trigger else ""
        aggs = ", ".join(a.describe() for a in self.aggs) or "(distinct)"
        return f"Aggregate{keys}: {aggs}{trig}"


class Binary(Node):
    """A node with two inputs, held in its ``left`` and ``right`` fields."""

    @property
    def inputs(self):
        return (self.left, self.right)

    def with_inputs(self, inputs):
        return replace(self, left=inputs[0], right=inputs[1])


@immutable
class UnionAll(Binary, Frozen):
    left: Node
    right: Node

    def __init__(self, left, right):
        set_field(self, "left", left)
        set_field(self, "right", right)

    names = property(lambda self: self.left.names)
    scope = property(lambda self: tuple((None, n) for _, n in self.left.scope))
    types = property(lambda self: self.left.types)

    def describe(self) -> str:
        return "UnionAll"


@immutable
class Join(Binary, Frozen):
    """A relational join of two inputs whose physical column names are disjoint.

    ``kind`` is ``inner``, ``left`` (left outer; a RIGHT JOIN is built with its sides swapped),
    ``full``, ``cross``, ``semi`` or ``anti``. Keys are equality pairs of input columns
    (``left_keys[i] = right_keys[i]``); a null key equals nothing. Output: the left's columns,
    then the right's (only the left's for ``semi``/``anti``).

    ``condition`` (outer, semi and anti joins only) is the rest of the ON condition: a pair
    matches when its keys are equal *and* the condition is true; a row with no such partner is
    padded with nulls (outer), kept (anti) or dropped (semi). An inner join's other conditions
    are a filter over it instead.
    """

    left: Node
    right: Node
    kind: str  # inner | left | full | cross | semi | anti
    left_keys: tuple = ()
    right_keys: tuple = ()
    build_left: bool = False  # lookup join: the (finite, relational) left is indexed once, the right probes it
    condition: exp.Expression | None = None  # the ON condition beyond the keys (outer/semi/anti joins)

    def __init__(self, left, right, kind, left_keys=(), right_keys=(), build_left=False, condition=None):
        set_field(self, "left", left)
        set_field(self, "right", right)
        set_field(self, "kind", kind)
        set_field(self, "left_keys", left_keys)
        set_field(self, "right_keys", right_keys)
        set_field(self, "build_left", build_left)
        set_field(self, "condition", condition)

    @property
    def names(self):
        return self.left.names if self.kind in ("semi", "anti") else (*self.left.names, *self.right.names)

    @property
    def scope(self):
        return self.left.scope if self.kind in ("semi", "anti") else (*self.left.scope, *self.right.scope)

    @property
    def types(self):
        return self.left.types if self.kind in ("semi", "anti") else (*self.left.types, *self.right.types)

    def describe(self) -> str:
        label = {
            "inner": "Join",
            "left": "LeftOuterJoin",
            "full": "FullOuterJoin",
            "cross": "CrossJoin",
            "semi": "SemiJoin",
            "anti": "AntiJoin",
        }[self.kind]
        if self.build_left:
            label = f"Lookup{label} (left built once)"
        parts = [f"{lk} = {rk}" for lk, rk in zip(self.left_keys, self.right_keys, strict=True)]
        if self.condition is not None:
            parts.append(f"({self.condition.sql()})")
        return f"{label} on {' AND '.join(parts)}" if parts else label


@immutable
class EventTime(SameColumns, Frozen):
    """Declares ``time_field`` the event time; the watermark generator decides which rows are late."""

    input: Node
    time_field: str
    generator: str  # "max_diff" | "percentile"
    params: tuple  # (("offset", micros),) or (("events", n), ("percentile", p), ("frequency", f))

    def __init__(self, input, time_field, generator, params):
        set_field(self, "input", input)
        set_field(self, "time_field", time_field)
        set_field(self, "generator", generator)
        set_field(self, "params", params)

    def describe(self) -> str:
        return (
            f"EventTime {self.time_field}, {self.generator}_watermark({', '.join(f'{k}={v}' for k, v in self.params)})"
        )


class WindowColumns(Unary):
    """A window table function: the input's columns, then ``window_start`` and ``window_end``."""

    @property
    def names(self):
        return (*self.input.names, "window_start", "window_end")

    @property
    def types(self):
        return (*self.input.types, pa.timestamp("us"), pa.timestamp("us"))


@immutable
class Tumble(WindowColumns, Frozen):
    input: Node
    time_field: str
    length: int
    offset: int
    scope: tuple = ()
    hop: int | None = None  # hop(...): windows start every ``hop``; None: tumbling (hop = length)
    align: str = "start"  # "start": windows [start, end); "end" (Trill's): (start, end], times snap up

    def __init__(self, input, time_field, length, offset, scope=(), hop=None, align="start"):
        set_field(self, "input", input)
        set_field(self, "time_field", time_field)
        set_field(self, "length", length)
        set_field(self, "offset", offset)
        set_field(self, "scope", scope)
        set_field(self, "hop", hop)
        set_field(self, "align", align)

    def describe(self) -> str:
        kind = "Tumble" if self.hop is None else f"Hop every {self.hop} us,"
        tail = "" if self.align == "start" else " align end"
        return (
            f"{kind} {self.time_field} length {self.length} us offset {self.offset} us{tail} (event time := window_end)"
        )


@immutable
class Session(WindowColumns, Frozen):
    """Session windows (``session(...)``): per ``keys`` (all rows when empty), a session is cut by a
    gap of ``gap`` between consecutive event times, or by a multiple of ``max_duration``; adds
    ``window_start``/``window_end`` and makes the window end the event time."""

    input: Node
    time_field: str
    gap: int
    max_duration: int | None = None
    keys: tuple = ()
    scope: tuple = ()

    def __init__(self, input, time_field, gap, max_duration=None, keys=(), scope=()):
        set_field(self, "input", input)
        set_field(self, "time_field", time_field)
        set_field(self, "gap", gap)
        set_field(self, "max_duration", max_duration)
        set_field(self, "keys", keys)
        set_field(self, "scope", scope)

    def describe(self) -> str:
        per = f" per {', '.join(self.keys)}" if self.keys else ""
        cap = f" max duration {self.max_duration} us" if self.max_duration else ""
        return f"Session {self.time_field}{per} gap {self.gap} us{cap} (event time := window_end)"


@mutable
class Query(Fields):
    """A whole statement: the plan, then ordering and limits applied to its final result."""

    root: Node
    output_names: tuple[str, ...]  # SELECT order, display names (visible columns first)
    order: tuple = ()  # ((physical column, descending), ...)
    limit: int | None = None
    offset: int = 0
    hidden: int = 0  # trailing columns used only for ORDER BY
    subplans: dict = field(default_factory=dict)  # id -> Query for IN (subquery)
    labels: dict = field(default_factory=dict)  # internal column -> the user's SQL text it computes

    def __init__(self, root, output_names, order=(), limit=None, offset=0, hidden=0, subplans=FACTORY, labels=FACTORY):
        self.root = root
        self.output_names = output_names
        self.order = order
        self.limit = limit
        self.offset = offset
        self.hidden = hidden
        self.subplans = dict() if subplans is FACTORY else subplans
        self.labels = dict() if labels is FACTORY else labels


def event_time_field(node: Node) -> str | None:
    """The column of ``node``'s output that is the event time (a window end after ``tumble``)."""
    if isinstance(node, EventTime):
        return node.time_field
    if isinstance(node, Tumble | Session):
        return "window_end"
    if isinstance(node, Filter):
        return event_time_field(node.input)
    if isinstance(node, Project):
        inner = event_time_field(node.input)
        hits = [n for n, e in node.exprs if isinstance(e, exp.Column) and e.name == inner]
        return hits[0] if inner is not None and hits else None
    if isinstance(node, Aggregate):
        inner = event_time_field(node.input)
        return inner if inner in node.keys else None
    if isinstance(node, Join):  # a side's event time (the left's when both have one) passes through
        return event_time_field(node.left) or event_time_field(node.right)
    if isinstance(node, UnionAll):
        left = event_time_field(node.left)
        return left if left is not None and left == event_time_field(node.right) else None
    return None
