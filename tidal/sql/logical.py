"""The logical plan: immutable relational nodes built from a sqlglot tree.

Each node lists its output columns as physical names (unique within the node, what the
batches carry) and a scope of ``(qualifier, name)`` pairs that SQL names resolve against.
Expressions in nodes are *bound*: their columns name physical columns of the node's input.

Time: a :class:`Scan` reads rows; :class:`EventTime` (from a watermark generator) says which
column is the event time and how the watermark is computed; :class:`Tumble` and
:class:`Session` add ``window_start``/``window_end`` and make the window end the event time. Rows whose event
time is not declared are relational: they all exist from time 0.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field, replace

import pyarrow as pa
from sqlglot import exp

from ..core.errors import PlanError
from ..io.files import FORMATS as FILE_FORMATS
from ..io.files import file_format, file_schema
from .dialect import CountingTrigger, DelayTrigger, Trigger, WatermarkTrigger
from .expressions import Evaluator, SqlTypeError, has_subquery, in_subquery, interval_micros, output_type


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


@dataclass(frozen=True)
class Scan(Node):
    path: str
    format: str
    options: tuple = ()
    names: tuple = ()
    scope: tuple = ()
    types: tuple = ()
    file_columns: tuple = ()  # the column each output name reads (projection pushdown shrinks the list)
    predicate: exp.Expression | None = None  # pushed-down filter over file columns

    def describe(self) -> str:
        opts = ", ".join(f"{k}={v!r}" for k, v in self.options)
        parts = [f"Scan {self.path!r} ({self.format}{', ' + opts if opts else ''})", f"columns {list(self.names)}"]
        if self.predicate is not None:
            parts.append(f"pushed filter {self.predicate.sql()}")
        return ", ".join(parts)


@dataclass(frozen=True)
class Filter(SameColumns):
    input: Node
    condition: exp.Expression

    def describe(self) -> str:
        return f"Filter {self.condition.sql()}"


@dataclass(frozen=True)
class Project(Unary):
    input: Node
    exprs: tuple  # ((physical name, bound expression), ...)
    scope: tuple = ()
    types: tuple = ()

    @property
    def names(self):
        return tuple(n for n, _ in self.exprs)

    def describe(self) -> str:
        texts = ((n, e.sql()) for n, e in self.exprs)
        return "Project " + ", ".join(t if t == n else f"{t} AS {n}" for n, t in texts)


@dataclass(frozen=True)
class AggCall:
    output: str
    function: str  # tidal.agg function name
    argument: str | None  # input column (None for count(*))
    parameter: float | None = None

    def describe(self) -> str:
        inner = self.argument or "*"
        if self.parameter is not None:
            inner += f", {self.parameter}"
        return f"{self.function}({inner}) AS {self.output}"


@dataclass(frozen=True)
class Aggregate(Unary):
    input: Node
    keys: tuple  # input columns
    aggs: tuple  # AggCall
    scope: tuple = ()
    types: tuple = ()
    trigger: tuple = ()  # ("counting", n) | ("delay", micros) | ("watermark",)

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


@dataclass(frozen=True)
class UnionAll(Binary):
    left: Node
    right: Node

    names = property(lambda self: self.left.names)
    scope = property(lambda self: tuple((None, n) for _, n in self.left.scope))
    types = property(lambda self: self.left.types)

    def describe(self) -> str:
        return "UnionAll"


@dataclass(frozen=True)
class Join(Binary):
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


@dataclass(frozen=True)
class EventTime(SameColumns):
    """Declares ``time_field`` the event time; the watermark generator decides which rows are late."""

    input: Node
    time_field: str
    generator: str  # "max_diff" | "percentile"
    params: tuple  # (("offset", micros),) or (("events", n), ("percentile", p), ("frequency", f))

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


@dataclass(frozen=True)
class Tumble(WindowColumns):
    input: Node
    time_field: str
    length: int
    offset: int
    scope: tuple = ()
    hop: int | None = None  # hop(...): windows start every ``hop``; None: tumbling (hop = length)

    def describe(self) -> str:
        kind = "Tumble" if self.hop is None else f"Hop every {self.hop} us,"
        return f"{kind} {self.time_field} length {self.length} us offset {self.offset} us (event time := window_end)"


@dataclass(frozen=True)
class Session(WindowColumns):
    """Session windows (``session(...)``): per ``keys`` (all rows when empty), a session is cut by a
    gap of ``gap`` between consecutive event times, or by a multiple of ``max_duration``; adds
    ``window_start``/``window_end`` and makes the window end the event time."""

    input: Node
    time_field: str
    gap: int
    max_duration: int | None = None
    keys: tuple = ()
    scope: tuple = ()

    def describe(self) -> str:
        per = f" per {', '.join(self.keys)}" if self.keys else ""
        cap = f" max duration {self.max_duration} us" if self.max_duration else ""
        return f"Session {self.time_field}{per} gap {self.gap} us{cap} (event time := window_end)"


@dataclass
class Query:
    """A whole statement: the plan, then ordering and limits applied to its final result."""

    root: Node
    output_names: tuple[str, ...]  # SELECT order, display names (visible columns first)
    order: tuple = ()  # ((physical column, descending), ...)
    limit: int | None = None
    offset: int = 0
    hidden: int = 0  # trailing columns used only for ORDER BY
    subplans: dict = field(default_factory=dict)  # id -> Query for IN (subquery)
    labels: dict = field(default_factory=dict)  # internal column -> the user's SQL text it computes


# ---------------------------------------------------------------------------------------------
# building a plan from sqlglot's tree


_AGGS = {
    exp.Sum: "sum",
    exp.Avg: "average",
    exp.Min: "min",
    exp.Max: "max",
    exp.First: "first",
    exp.Last: "last",
    exp.Stddev: "stddev",
    exp.StddevSamp: "stddev",
    exp.Variance: "variance",
    exp.Median: "median",
    exp.AnyValue: "first",
}


_SQL_TYPE_NAMES = {
    "int8": "TINYINT",
    "int16": "SMALLINT",
    "int32": "INTEGER",
    "int64": "BIGINT",
    "uint8": "UTINYINT",
    "uint16": "USMALLINT",
    "uint32": "UINTEGER",
    "uint64": "UBIGINT",
    "float": "FLOAT",
    "double": "DOUBLE",
    "string": "VARCHAR",
    "large_string": "VARCHAR",
    "bool": "BOOLEAN",
    "date32[day]": "DATE",
    "null": "NULL",
    "binary": "BLOB",
}


def sql_type_name(t: pa.DataType | str) -> str:
    """The SQL name of an Arrow type (what a user of the dialect knows), e.g. ``int64`` -> BIGINT."""
    name = str(t)
    if name.startswith("timestamp"):
        return "TIMESTAMP WITH TIME ZONE" if "tz=" in name else "TIMESTAMP"
    if name.startswith("duration"):
        return "INTERVAL"
    if name.startswith("decimal"):
        return name.upper()
    return _SQL_TYPE_NAMES.get(name, name.upper())


def user_message(message: str, labels: dict[str, str]) -> str:
    """An error message in the user's terms: internal (physical) column names, which bound
    expressions print quoted, become the SQL they stand for; Arrow's kernel wording and type
    names become SQL's."""
    text = re.sub(r'"((?:[^"]|"")+)"', lambda m: labels.get(m.group(1).replace('""', '"'), m.group(0)), message)
    kernel = re.search(r"Function '[^']*' has no kernel matching input types \(([^)]*)\)", text)
    if kernel:
        types = ", ".join(sql_type_name(t.strip()) for t in kernel.group(1).split(","))
        text = f"{text[: kernel.start()]}not defined for {types}{text[kernel.end() :]}"
    text = re.sub(r"as a scalar of type (\S+)", lambda m: f"as {sql_type_name(m.group(1))}", text)
    return re.sub(r" is (\S+), not boolean", lambda m: f" is {sql_type_name(m.group(1))}, not boolean", text)


# the parameters of the table functions in order, for positional arguments
TVF_PARAMETERS = {
    "tumble": ("source", "time_field", "window_length", "offset"),
    "hop": ("source", "time_field", "window_length", "hop", "offset"),
    "session": ("source", "time_field", "gap", "max_duration", "key"),
    "max_diff_watermark": ("source", "time_field", "offset"),
    "percentile_watermark": ("source", "time_field", "events", "percentile", "frequency"),
    **{f: ("path",) for f in ("read_csv", "read_csv_auto", "read_json", "read_json_auto", "read_parquet")},
}


def _interval_arg(args: dict, key: str, fn: str) -> int:
    """A table function's duration argument (an INTERVAL literal), in microseconds."""
    value = args[key]
    if not isinstance(value, exp.Expression):
        raise PlanError(f"{fn}(...): {key} must be an INTERVAL such as INTERVAL 5 SECONDS, got {value!r}")
    return interval_micros(value)


def column_labels(node: Node, labels: dict[str, str]) -> dict[str, str]:
    """How the user names each of ``node``'s columns: ``alias.column``, or the SQL an internal
    column computes (``labels``: an aggregate call, a GROUP BY expression, a join key)."""
    out = {}
    for phys, (qual, name) in zip(node.names, node.scope, strict=True):
        if phys in labels:
            out[phys] = labels[phys]
        elif name and not name.startswith("__"):
            out[phys] = exp.column(name, table=qual).sql(dialect="duckdb")
    return out


def _fraction(node: exp.Expression, where: str) -> float:
    try:
        value = Evaluator({}, 0).eval(node).as_py()
    except Exception:
        value = None
    if not isinstance(value, int | float) or isinstance(value, bool) or not 0 <= value <= 1:
        raise PlanError(f"{where}: the fraction must be a constant between 0 and 1, got {node.sql()}")
    return float(value)


def _is_agg(node: exp.Expression) -> bool:
    return isinstance(node, exp.Count | exp.AggFunc) or type(node) in _AGGS


def _display(node: exp.Expression) -> str:
    if isinstance(node, exp.Alias):
        return node.alias
    if isinstance(node, exp.Column):
        return node.name
    if isinstance(node, exp.Count) and isinstance(node.this, exp.Star):
        return "count_star()"
    return node.sql(dialect="duckdb")


def _col(name: str) -> exp.Column:
    return exp.Column(this=exp.Identifier(this=name, quoted=True))


def _const_int(node: exp.Expression, what: str) -> int:
    try:
        value = Evaluator({}, 0).eval(node).as_py()
    except Exception:
        value = None
    if not isinstance(value, int):
        raise PlanError(f"{what} must be an integer constant, got {node.sql()}")
    return value


class Builder:
    """Turns a parsed query into a :class:`Query`, resolving files against the current directory."""

    def __init__(self):
        self.ctes: list[dict[str, Node]] = [{}]
        self.subplans: dict[int, Query] = {}
        self._n = 0
        self.trigger: tuple = ()
        self.labels: dict[str, str] = {}  # internal column -> the user's SQL (for error messages)

    def fresh(self, prefix: str) -> str:
        self._n += 1
        return f"__{prefix}{self._n}"

    # -- statements --------------------------------------------------------------------
    def build(self, tree: exp.Expression) -> Query:
        query = self.query(tree, top=True)
        query.subplans = self.subplans
        query.labels = self.labels
        for sub in self.subplans.values():
            sub.labels = self.labels
        return query

    def labels_for(self, node: Node) -> dict[str, str]:
        return column_labels(node, self.labels)

    def _label(self, phys: str, user: exp.Expression, node: Node | None = None) -> None:
        """Remember that the internal column ``phys`` computes ``user`` (bound over ``node`` if given)."""
        text = user.sql(dialect="duckdb")
        self.labels[phys] = user_message(text, self.labels_for(node)) if node is not None else text

    def query(self, tree: exp.Expression, top: bool = False) -> Query:
        with_ = tree.args.get("with_") or tree.args.get("with")
        self.ctes.append({})
        try:
            if with_ is not None:
                for cte in with_.expressions:
                    sub = self.query(cte.this)
                    if sub.order or sub.limit is not None:
                        raise PlanError(f"ORDER BY/LIMIT inside the CTE {cte.alias} is not supported")
                    self.ctes[-1][cte.alias.lower()] = self._rename_visible(sub)
            if isinstance(tree, exp.Union):
                return self.union(tree)
            if isinstance(tree, exp.Subquery):
                return self.query(tree.this)
            if isinstance(tree, exp.Select):
                return self.select(tree)
            raise PlanError(f"unsupported query: {tree.sql()[:80]}")
        finally:
            self.ctes.pop()

    def _rename_visible(self, q: Query) -> Node:
        """A subquery's result as a FROM item: visible columns under their display names."""
        root = q.root
        names = root.names[: len(root.names) - q.hidden]
        exprs = []
        seen: set[str] = set()
        for phys, disp in zip(names, q.output_names, strict=True):
            out = disp
            i = 1
            while out in seen:
                out = f"{disp}_{i}"
                i += 1
            seen.add(out)
            exprs.append((out, _col(phys)))
        types = root.types[: len(names)]
        return Project(root, tuple(exprs), scope=tuple((None, n) for n, _ in exprs), types=tuple(types))

    def union(self, tree: exp.Union) -> Query:
        left = self._rename_visible(self.query(tree.this))
        right = self._rename_visible(self.query(tree.expression))
        if len(left.names) != len(right.names):
            raise PlanError(f"UNION sides have {len(left.names)} and {len(right.names)} columns")
        types = []
        for lt, rt in zip(left.types, right.types, strict=True):
            if lt == rt or rt is None or pa.types.is_null(rt):
                types.append(lt)
            elif lt is None or pa.types.is_null(lt):
                types.append(rt)
            elif (pa.types.is_integer(lt) or pa.types.is_floating(lt)) and (
                pa.types.is_integer(rt) or pa.types.is_floating(rt)
            ):
                types.append(pa.float64() if pa.types.is_floating(lt) or pa.types.is_floating(rt) else pa.int64())
            else:
                raise PlanError(f"UNION column types differ: {lt} vs {rt}")

        def cast(side: Node) -> Node:
            exprs = tuple(
                (ln, _col(n) if t == st else exp.Cast(this=_col(n), to=exp.DataType.build(_sql_type(t))))
                for ln, n, t, st in zip(left.names, side.names, types, side.types, strict=True)
            )
            return Project(side, exprs, scope=tuple((None, n) for n in left.names), types=tuple(types))

        root: Node = UnionAll(cast(left), cast(right))
        if tree.args.get("distinct"):
            root = Aggregate(root, root.names, (), scope=root.scope, types=root.types)
        q = Query(root, root.names)
        self._order_limit(q, tree, None, None)
        return q

    # -- FROM items ----------------------------------------------------------------------
    def from_item(self, item: exp.Expression) -> Node:
        alias = item.alias_or_name if isinstance(item, exp.Subquery | exp.Table) and item.alias else None
        if isinstance(item, exp.Subquery):
            node = self._rename_visible(self.query(item.this))
        elif isinstance(item, exp.Table):
            node = self.table(item)
            if alias is None and isinstance(item.this, exp.Identifier) and not item.this.quoted:
                alias = item.name
        else:
            raise PlanError(f"unsupported FROM item: {item.sql()}")
        if alias:
            node = self._requalify(node, alias)
        return node

    def _requalify(self, node: Node, alias: str) -> Node:
        scope = tuple((alias, n) for _, n in node.scope)
        if isinstance(node, Scan | Project | Tumble | Session):
            return replace(node, scope=scope)
        exprs = tuple((n, _col(n)) for n in node.names)
        return Project(node, exprs, scope=scope, types=node.types)

    # -- joins ----------------------------------------------------------------------------------
    def join(self, left: Node, join: exp.Join) -> Node:
        """``left JOIN item``: equality conjuncts of ON (or USING) become keys, the rest a filter."""
        right = self.from_item(join.this)
        side = (join.args.get("side") or "").upper()
        kind_word = (join.args.get("kind") or "").upper()
        on, using = join.args.get("on"), join.args.get("using")
        method = (join.args.get("method") or "").upper()
        if method == "NATURAL":  # USING every column name the two sides share
            rnames = {n.lower() for _, n in right.scope if n and not n.startswith("__")}
            common = [n for _, n in left.scope if n.lower() in rnames]
            using = [exp.to_identifier(n) for n in dict.fromkeys(common)] or None
        elif method:
            raise PlanError(f"{method} JOIN is not supported: {join.sql()}")
        if kind_word in ("SEMI", "ANTI"):
            if side not in ("", "LEFT") or (on is None and not using):
                raise PlanError(f"{join.sql()}: {kind_word} JOIN keeps left rows and needs ON or USING")
            kind = kind_word.lower()
        elif kind_word == "CROSS" or (on is None and not using):
            if side or kind_word not in ("", "CROSS"):
                raise PlanError(f"{join.sql()}: an outer join needs ON or USING")
            kind = "cross"
        elif kind_word in ("", "INNER", "OUTER"):
            kind = {"": "inner", "LEFT": "left", "RIGHT": "right", "FULL": "full"}[side]
        else:
            raise PlanError(f"unsupported join: {kind_word} JOIN")
        right = self._disjoint(left, right, [u.name for u in using or ()])
        if kind == "right":  # b RIGHT JOIN a: a LEFT JOIN b, columns back in the SQL order afterwards
            node = self._join_on(right, left, "left", on, using, swapped=True)
            order = (*left.names, *right.names)
            by_name = dict(zip(node.names, zip(node.scope, node.types, strict=True), strict=True))
            node = Project(
                node,
                tuple((n, _col(n)) for n in order),
                scope=tuple(by_name[n][0] for n in order),
                types=tuple(by_name[n][1] for n in order),
            )
        else:
            node = self._join_on(left, right, kind, on, using)
        if using and kind in ("right", "full"):
            # the USING column is the value of whichever side has the row
            exprs = []
            for n in node.names:
                partner = self._using_partner(n, node)
                e = _col(n) if partner is None else exp.Coalesce(this=_col(n), expressions=[_col(partner)])
                exprs.append((n, e))
            node = Project(node, tuple(exprs), scope=node.scope, types=node.types)
        return node

    def _using_partner(self, name: str, node: Node) -> str | None:
        for phys in node.names:
            if phys.startswith("__using_") and phys.rsplit("__", 1)[-1] == name:
                return phys
        return None

    def _disjoint(self, left: Node, right: Node, using: list[str]) -> Node:
        """Rename the right's columns that clash with the left's (and hide USING columns from ``*``)."""
        taken = set(left.names) | set(right.names)
        using_lower = {u.lower() for u in using}
        exprs, changed = [], False
        for phys, (_, name) in zip(right.names, right.scope, strict=True):
            out = phys
            if name.lower() in using_lower:
                matches = [p for p, (_, n) in zip(left.names, left.scope, strict=True) if n.lower() == name.lower()]
                if len(matches) != 1:
                    raise PlanError(f"USING ({name}): the left side has {len(matches)} columns named {name}")
                out = f"__using_{self.fresh('u')}__{matches[0]}"
            elif phys in left.names:
                i = 1
                while f"{phys}_{i}" in taken:
                    i += 1
                out = f"{phys}_{i}"
            taken.add(out)
            changed |= out != phys
            exprs.append((out, _col(phys)))
        if not changed:
            return right
        return Project(right, tuple(exprs), scope=right.scope, types=right.types)

    def _join_on(self, left: Node, right: Node, kind: str, on, using, swapped: bool = False) -> Node:
        lnames, rnames = set(left.names), set(right.names)
        lkeys: list[str] = []
        rkeys: list[str] = []
        rest: list[exp.Expression] = []
        if using:
            for u in using:
                lcol = self.resolve(exp.column(u.name), left if not swapped else right)
                rcol = self._using_partner(lcol, right if not swapped else left)
                if rcol is None:
                    raise PlanError(f"USING ({u.name}): the right side has no column {u.name}")
                lkeys.append(lcol if not swapped else rcol)
                rkeys.append(rcol if not swapped else lcol)
        elif on is not None:
            both = Join(left, right, "cross")
            bound = self.bind(on, both)
            t = self.check(bound, both)
            if t is not None and not pa.types.is_boolean(t) and not pa.types.is_null(t):
                raise SqlTypeError(f"ON {on.sql(dialect='duckdb')} is {sql_type_name(t)}, not boolean")
            computed: list[tuple] = []  # (left name, left expr, right name, right expr, type)
            for part in _conjuncts(bound):
                sides = _key_sides(part, lnames, rnames)
                if sides is None:
                    rest.append(part)
                    continue
                lexpr, rexpr = sides
                lt, rt = self.check(lexpr, left), self.check(rexpr, right)
                common = _key_type(lt, rt)
                if common is None:  # keys of incomparable types: the equality stays a condition
                    rest.append(part)
                elif isinstance(lexpr, exp.Column) and isinstance(rexpr, exp.Column) and lt == rt:
                    lkeys.append(lexpr.name)
                    rkeys.append(rexpr.name)
                else:  # an expression or a type to widen: compute the key as a hidden column on each side
                    ln, rn = self.fresh("jk"), self.fresh("jk")
                    self._label(ln, lexpr, left)
                    self._label(rn, rexpr, right)
                    computed.append((ln, _cast_to(lexpr, lt, common), rn, _cast_to(rexpr, rt, common), common))
                    lkeys.append(ln)
                    rkeys.append(rn)
            if computed:
                left = _with_columns(left, [(ln, le, t) for ln, le, _, _, t in computed])
                right = _with_columns(right, [(rn, re_, t) for _, _, rn, re_, t in computed])
        if kind in ("left", "semi", "anti"):
            # ON conjuncts over the right side only restrict which right rows can match: filter the right first
            right_only = [p for p in rest if _columns(p) <= rnames and not has_subquery(p)]
            if right_only:
                right = Filter(right, _and(right_only))
                rest = [p for p in rest if p not in right_only]
        if kind == "semi" and lkeys and all(_columns(p) <= lnames for p in rest):
            pass  # a condition on the kept left rows alone: a filter after the semi-join
        elif rest and kind in ("left", "full", "semi", "anti"):
            # the rest of ON decides which pairs match: the join evaluates it (see Join)
            return Join(left, right, kind, tuple(lkeys), tuple(rkeys), condition=_and(rest))
        if kind in ("semi", "anti", "left", "full") and not lkeys:
            # ON over one side only (or constant): every pair of the remaining rows matches
            return Join(left, right, kind, condition=exp.true())
        if kind == "cross" and lkeys:
            kind = "inner"
        if kind == "inner" and not lkeys:
            kind = "cross"
        node: Node = Join(left, right, kind, tuple(lkeys), tuple(rkeys))
        if rest:
            node = Filter(node, _and(rest))
        return node

    def table(self, item: exp.Table) -> Node:
        target = item.this
        if isinstance(target, exp.Identifier):
            name = target.name
            for frame in reversed(self.ctes):
                if name.lower() in frame:
                    return frame[name.lower()]
            if target.quoted or "." in name or "/" in name:
                return self.scan(name, None, {})
            # a bare name (the thesis's ``TABLE(events)``) is a file of that name in the current directory
            found = sorted(p for p in (f"{name}{ext}" for ext in FILE_FORMATS) if os.path.isfile(p))
            if len(found) == 1:
                return self.scan(found[0], None, {})
            if found:
                raise PlanError(f"table {name!r} is ambiguous: {', '.join(found)} all exist; quote the path you mean")
            raise PlanError(
                f"unknown table {name!r}: name a CTE, a quoted file path such as '{name}.csv', "
                f"or a file {name}.csv/.json/.parquet/... in the current directory"
            )
        if isinstance(target, exp.ReadCSV):
            return self.scan(target.this.name, "csv", self._kwargs(target.expressions))
        if isinstance(target, exp.Anonymous | exp.Func):
            return self.tvf(target)
        raise PlanError(f"unsupported FROM item: {item.sql()}")

    def _kwargs(self, args) -> dict:
        out = {}
        for a in args:
            if not isinstance(a, exp.Kwarg | exp.PropertyEQ | exp.EQ):
                raise PlanError(f"expected a named argument (name => value), got {a.sql()}")
            key = a.this.name.lower()
            value = a.expression
            if isinstance(value, exp.Literal):
                out[key] = value.name if value.is_string else Evaluator({}, 0).eval(value).as_py()
            elif isinstance(value, exp.Boolean):
                out[key] = bool(value.this)
            else:
                out[key] = value
        return out

    def scan(self, path: str, fmt: str | None, options: dict) -> Scan:
        fmt = file_format(path, fmt)
        if fmt == "tsv" and "sep" not in options:
            options = {**options, "sep": "\t"}
        schema = file_schema(path, format="csv" if fmt == "tsv" else fmt, options=options)
        return Scan(
            path=path,
            format="csv" if fmt == "tsv" else fmt,
            options=tuple(sorted(options.items())),
            names=tuple(schema.names),
            scope=tuple((None, n) for n in schema.names),
            types=tuple(schema.types),
            file_columns=tuple(schema.names),
        )

    def tvf(self, call: exp.Expression) -> Node:
        name = (call.name if isinstance(call, exp.Anonymous) else call.sql_name()).lower()
        items = list(call.expressions if isinstance(call, exp.Anonymous) else call.args.get("expressions", []))
        args = self._kwargs(self._named(name, items))
        if name in ("read_csv", "read_csv_auto", "read_json", "read_json_auto", "read_parquet"):
            path = args.pop("path", None)
            fmt = {"read_json": "json", "read_json_auto": "json", "read_parquet": "parquet"}.get(name, "csv")
            return self.scan(path, fmt, {k: v for k, v in args.items() if k != "path"})
        source = args.get("source")
        if source is None:
            raise PlanError(f"{name}(...) needs source => TABLE(...)")
        node = self.table_arg(source)
        time_field = self.descriptor(node, args.get("time_field"), name)
        if name == "max_diff_watermark":
            offset = _interval_arg(args, "offset", name) if "offset" in args else 0
            return EventTime(node, time_field, "max_diff", (("offset", offset),))
        if name == "percentile_watermark":
            params = tuple((k, args[k]) for k in ("events", "percentile", "frequency") if k in args)
            if len(params) != 3:
                raise PlanError("percentile_watermark needs events, percentile and frequency")
            return EventTime(node, time_field, "percentile", params)
        if name in ("tumble", "hop"):
            if "window_length" not in args:
                raise PlanError(f"{name}(...) needs window_length => INTERVAL ...")
            length = _interval_arg(args, "window_length", name)
            offset = _interval_arg(args, "offset", name) if "offset" in args else 0
            scope = (*node.scope, (None, "window_start"), (None, "window_end"))
            hop = None
            if name == "hop":
                given = [k for k in ("hop", "slide", "hop_length") if k in args]
                if not given:
                    raise PlanError("hop(...) needs hop => INTERVAL ... (how often a window starts)")
                hop = _interval_arg(args, given[0], name)
                if hop <= 0 or length <= 0:
                    raise PlanError("hop(...): window_length and hop must be positive intervals")
            elif length <= 0:
                raise PlanError("tumble(...): window_length must be a positive interval")
            return Tumble(node, time_field, length, offset, scope=scope, hop=hop)
        if name == "session":
            return self.session(node, time_field, args)
        raise PlanError(f"unknown table function {name}")

    def session(self, node: Node, time_field: str, args: dict) -> Session:
        """``session(source, time_field, gap [, max_duration] [, key])``: sessions per ``key``."""
        unknown = set(args) - {"source", "time_field", "gap", "timeout", "max_duration", "key"}
        if unknown:
            raise PlanError(f"session(...) has no argument {', '.join(sorted(unknown))}")
        given = [k for k in ("gap", "timeout") if k in args]
        if not given:
            raise PlanError("session(...) needs gap => INTERVAL ... (the silence that ends a session)")
        gap = _interval_arg(args, given[0], "session")
        max_duration = _interval_arg(args, "max_duration", "session") if "max_duration" in args else None
        if gap <= 0 or (max_duration is not None and max_duration <= 0):
            raise PlanError("session(...): gap and max_duration must be positive intervals")
        keys = tuple(self.resolve(exp.column(c), node) for c in self.descriptor_names(args.get("key"), "session"))
        taken = {"window_start", "window_end"} & set(node.names)
        if taken:
            raise PlanError(f"session(...): its source already has a column {sorted(taken)[0]}")
        scope = (*node.scope, (None, "window_start"), (None, "window_end"))
        return Session(node, time_field, gap, max_duration, keys, scope=scope)

    def descriptor_names(self, value, fn: str) -> list[str]:
        """The column names of ``DESCRIPTOR(a, b, ...)`` (a bare column name too); none for None."""
        if value is None:
            return []
        if isinstance(value, exp.Anonymous) and value.name.upper() == "DESCRIPTOR":
            items = value.expressions
        elif isinstance(value, exp.Column | exp.Identifier) or isinstance(value, str):
            items = [value]
        else:
            raise PlanError(f"{fn}(...): expected DESCRIPTOR(column, ...), got {value.sql()}")
        return [i if isinstance(i, str) else i.name for i in items]

    def _named(self, fn: str, items: list) -> list:
        """Positional arguments of a table function (before any named one) named by their position."""
        params = TVF_PARAMETERS.get(fn, ())
        out, named_seen = [], False
        for i, item in enumerate(items):
            if isinstance(item, exp.Kwarg | exp.PropertyEQ):
                named_seen = True
                out.append(item)
            elif named_seen or i >= len(params):
                raise PlanError(f"{fn}(...): argument {i + 1} ({item.sql()}) needs a name (name => value)")
            else:
                out.append(exp.Kwarg(this=exp.var(params[i]), expression=item))
        return out

    def table_arg(self, value) -> Node:
        if isinstance(value, exp.Anonymous) and value.name.upper() == "TABLE" or isinstance(value, exp.Table):
            inner = value.expressions[0] if isinstance(value, exp.Anonymous) else value.this
            if isinstance(inner, exp.Column | exp.Identifier):
                return self.table(exp.Table(this=exp.Identifier(this=inner.name, quoted=False)))
            if isinstance(inner, exp.Literal):
                return self.scan(inner.name, None, {})
            if isinstance(inner, exp.Anonymous | exp.Func):
                return self.tvf(inner)
        if isinstance(value, str):
            return self.scan(value, None, {})
        raise PlanError(f"source must be TABLE(name), TABLE('file') or a table function, got {value}")

    def descriptor(self, node: Node, value, fn: str) -> str:
        if value is None:
            raise PlanError(f"{fn}(...) needs time_field => DESCRIPTOR(column)")
        if isinstance(value, exp.Anonymous) and value.name.upper() == "DESCRIPTOR":
            value = value.expressions[0]
        if isinstance(value, str):
            value = exp.column(value)
        # the qualifier in DESCRIPTOR(e.time) names the table function's own alias: match the column name
        return self.resolve(exp.column(value.name), node)

    # -- expressions -----------------------------------------------------------------------
    def resolve(self, column: exp.Column, node: Node) -> str:
        name, qual = column.name, column.table or None
        hits = [
            phys
            for phys, (q, n) in zip(node.names, node.scope, strict=True)
            if n.lower() == name.lower()
            and (
                (qual is None and not phys.startswith("__using_"))
                or (qual is not None and (q or "").lower() == qual.lower())
            )
        ]
        if not hits and qual is None:
            hits = [phys for phys in node.names if phys == name]
        if not hits:
            known = ", ".join(f"{q}.{n}" if q else n for q, n in node.scope)
            raise PlanError(f"unknown column {column.sql()}; available: {known}")
        if len(hits) > 1:
            raise PlanError(f"column {column.sql()} is ambiguous; qualify it with its table alias")
        return hits[0]

    def bind(self, expr: exp.Expression, node: Node) -> exp.Expression:
        """Replace SQL names by the physical columns of ``node``; plan IN (subquery)."""

        def visit(e: exp.Expression):
            if isinstance(e, exp.Column) and not isinstance(e.this, exp.Star):
                return _col(self.resolve(e, node))
            if isinstance(e, exp.In) and e.args.get("query") is not None:
                sub = self.query(e.args["query"].this if isinstance(e.args["query"], exp.Subquery) else e.args["query"])
                if len(sub.output_names) - 0 != 1 + 0 and len(sub.root.names) - sub.hidden != 1:
                    raise PlanError(f"IN (subquery) must return one column: {e.sql()}")
                key = len(self.subplans)
                self.subplans[key] = sub
                return in_subquery(visit(e.this), key)
            return None

        return _transform(expr.copy(), visit)

    def check(self, expr: exp.Expression, node: Node) -> pa.DataType | None:
        schema = node.schema()
        if schema is None or has_subquery(expr):
            return None
        try:
            return output_type(expr, schema)
        except SqlTypeError as err:
            raise SqlTypeError(user_message(str(err), self.labels_for(node))) from None

    # -- SELECT ---------------------------------------------------------------------------------
    def select(self, sel: exp.Select) -> Query:
        from_ = sel.args.get("from_") or sel.args.get("from")
        if from_ is None:
            raise PlanError("a query needs FROM (tidal reads files and streams)")
        node = self.from_item(from_.this)
        for join in sel.args.get("joins") or ():
            node = self.join(node, join)
        trigger = sel.args.get("trigger")
        triggers = self._triggers(trigger) if trigger is not None else ()
        where = sel.args.get("where")
        if where is not None:
            cond = self.bind(where.this, node)
            t = self.check(cond, node)
            if t is not None and not pa.types.is_boolean(t) and not pa.types.is_null(t):
                raise SqlTypeError(f"WHERE {where.this.sql(dialect='duckdb')} is {sql_type_name(t)}, not boolean")
            node = Filter(node, cond)
        items = self._expand_star(sel.expressions, node)
        group = sel.args.get("group")
        having = sel.args.get("having")
        aggs_present = any(e.find(exp.AggFunc) or any(_is_agg(x) for x in e.walk()) for e in items) or (
            having is not None
        )
        order_exprs = [o for o in (sel.args.get("order").expressions if sel.args.get("order") else [])]
        if group is not None or aggs_present:
            node, items, having_expr, order_exprs = self.aggregate(node, items, group, having, order_exprs, triggers)
        else:
            having_expr = None
            if triggers:
                raise PlanError("TRIGGER applies to a query with GROUP BY or aggregates")
        if having_expr is not None:
            t = self.check(having_expr, node)
            if t is not None and not pa.types.is_boolean(t) and not pa.types.is_null(t):
                raise SqlTypeError(f"HAVING {having.this.sql(dialect='duckdb')} is {sql_type_name(t)}, not boolean")
            node = Filter(node, having_expr)
        # projection, with ORDER BY expressions that are not outputs as hidden trailing columns
        exprs, names, types = [], [], []
        used: set[str] = set()
        for item in items:
            disp = _display(item)
            bound = item.this if isinstance(item, exp.Alias) else item
            bound = self.bind(bound, node) if not getattr(item, "_bound", False) else bound
            phys = disp
            i = 1
            while phys in used:
                phys = f"{disp}_{i}"
                i += 1
            used.add(phys)
            exprs.append((phys, bound))
            names.append(disp)
            types.append(self.check(bound, node))
        order = []
        hidden = 0
        out_scope = tuple((None, n) for n in names)
        visible = list(exprs)
        for o in order_exprs:
            key = o.this
            desc = bool(o.args.get("desc"))
            target = None
            if isinstance(key, exp.Literal) and not key.is_string:
                pos = int(key.name)
                if not 1 <= pos <= len(exprs):
                    raise PlanError(f"ORDER BY position {pos} is out of range")
                target = exprs[pos - 1][0]
            elif isinstance(key, exp.Column) and not key.table:
                hits = [p for (p, _), n in zip(visible, names, strict=True) if n.lower() == key.name.lower()]
                target = hits[0] if hits else None
            if target is None:
                text = key.sql()
                hits = [p for (p, e), item in zip(visible, items, strict=True) if item.sql() == text]
                target = hits[0] if hits else None
            if target is None and not getattr(o, "_bound", False):
                # a qualified column (ORDER BY t.x) that is also selected: order by the output
                try:
                    text = self.bind(key, node).sql()
                except PlanError:
                    text = None
                hits = [p for p, e in visible if e.sql() == text]
                target = hits[0] if hits else None
            if target is None:
                bound = key if getattr(o, "_bound", False) else self.bind(key, node)
                phys = f"__order{len(order)}"
                self._label(phys, key, node)
                exprs.append((phys, bound))
                types.append(self.check(bound, node))
                hidden += 1
                target = phys
            order.append((target, desc, o.args.get("nulls_first")))
        project = Project(
            node, tuple(exprs), scope=out_scope + tuple((None, "") for _ in range(hidden)), types=tuple(types)
        )
        root: Node = project
        if sel.args.get("distinct"):
            if hidden:
                raise PlanError("ORDER BY of SELECT DISTINCT must use selected columns")
            root = Aggregate(root, root.names, (), scope=project.scope, types=project.types)
        q = Query(root, tuple(names), tuple(order), hidden=hidden)
        self._order_limit(q, sel, None, None)
        return q

    def _order_limit(self, q: Query, tree, _a, _b) -> None:
        limit = tree.args.get("limit")
        offset = tree.args.get("offset")
        if limit is not None:
            q.limit = _const_int(limit.expression, "LIMIT")
        if offset is not None:
            q.offset = _const_int(offset.expression, "OFFSET")
        if isinstance(tree, exp.Union) and tree.args.get("order"):
            for o in tree.args["order"].expressions:
                key = o.this
                hits = [p for p in q.root.names if p.lower() == key.name.lower()] if isinstance(key, exp.Column) else []
                if isinstance(key, exp.Literal):
                    hits = [q.root.names[int(key.name) - 1]]
                if not hits:
                    raise PlanError(f"ORDER BY of a UNION must name an output column: {key.sql()}")
                q.order = (*q.order, (hits[0], bool(o.args.get("desc")), o.args.get("nulls_first")))

    def _expand_star(self, items, node: Node) -> list[exp.Expression]:
        out = []
        for item in items:
            star = item if isinstance(item, exp.Star) else None
            if isinstance(item, exp.Column) and isinstance(item.this, exp.Star):
                star = item
            if star is None:
                out.append(item)
                continue
            qual = star.table if isinstance(star, exp.Column) else None
            for phys, (q, n) in zip(node.names, node.scope, strict=True):
                if n.startswith("__") or not n or phys.startswith("__using_"):
                    continue
                if qual and (q or "").lower() != qual.lower():
                    continue
                col = exp.Alias(this=_col(phys), alias=exp.to_identifier(n))
                col._bound = True
                out.append(col)
        return out

    def _triggers(self, trigger: Trigger) -> tuple:
        out = []
        for t in trigger.expressions:
            if isinstance(t, CountingTrigger):
                out.append(("counting", _const_int(t.this, "TRIGGER COUNTING")))
            elif isinstance(t, DelayTrigger):
                out.append(("delay", interval_micros(t.this)))
            elif isinstance(t, WatermarkTrigger):
                out.append(("watermark",))
        return tuple(out)

    def aggregate(self, node, items, group, having, order_exprs, triggers):
        key_exprs = []
        if group is not None:
            for g in group.expressions:
                if isinstance(g, exp.Literal) and not g.is_string:
                    item = items[int(g.name) - 1]
                    g = item.this if isinstance(item, exp.Alias) else item
                elif isinstance(g, exp.Column) and not g.table:
                    # GROUP BY may name a SELECT alias
                    aliased = [i.this for i in items if isinstance(i, exp.Alias) and i.alias.lower() == g.name.lower()]
                    if aliased and not any(n.lower() == g.name.lower() for _, n in node.scope):
                        g = aliased[0]
                key_exprs.append(g)
        pre: list[tuple[str, exp.Expression]] = []
        key_names = []
        key_map: dict[str, str] = {}
        for g in key_exprs:
            bound = self.bind(g, node)
            text = bound.sql()
            if text in key_map:
                continue
            phys = bound.name if isinstance(bound, exp.Column) else self.fresh("k")
            if phys in key_names:
                continue
            if not isinstance(bound, exp.Column):
                self._label(phys, g)
            pre.append((phys, bound))
            key_names.append(phys)
            key_map[text] = phys
        calls: list[AggCall] = []
        agg_map: dict[str, str] = {}

        def add_agg(e: exp.Expression) -> str:
            bound = self.bind(e, node)
            text = bound.sql()
            if text in agg_map:
                return agg_map[text]
            distinct = isinstance(e.this, exp.Distinct)
            arg = e.this.expressions[0] if distinct else e.this
            out = self.fresh("g")
            param = None
            if isinstance(e, exp.Count):
                if isinstance(arg, exp.Star) or arg is None:
                    fn, arg_phys = "count", None
                else:
                    fn = "count_distinct" if distinct else "count_not_null"
                    arg_phys = self._agg_arg(arg, node, pre)
            elif type(e) in _AGGS:
                fn = _AGGS[type(e)]
                if distinct:
                    raise PlanError(f"DISTINCT is supported in COUNT only: {e.sql()}")
                arg_phys = self._agg_arg(arg, node, pre)
                if fn == "median":
                    fn, param = "percentile_cont", 0.5
            elif isinstance(e, exp.PercentileCont | exp.PercentileDisc):
                # quantile_cont(x, p) / quantile_disc(x, p) (DuckDB's names); WITHIN GROUP comes here rewritten
                fn = "percentile_cont" if isinstance(e, exp.PercentileCont) else "percentile_disc"
                if e.expression is None:
                    raise PlanError(
                        f"{e.sql()} needs a column: write quantile_cont(x, p) or ... WITHIN GROUP (ORDER BY x)"
                    )
                param = _fraction(e.expression, e.sql())
                arg_phys = self._agg_arg(arg, node, pre)
            else:
                raise PlanError(f"unsupported aggregate {e.sql()}")
            calls.append(AggCall(out, fn, arg_phys, param))
            self._label(out, e)
            agg_map[text] = out
            return out

        def visit_population(x: exp.Expression) -> exp.Expression:
            # population variance from the sample variance: var_samp * (n - 1) / n (0 for one value, null for none)
            n = _col(add_agg(exp.Count(this=x.this.copy())))
            samp = _col(add_agg(exp.Variance(this=x.this.copy())))
            pop = exp.Case(
                ifs=[
                    exp.If(this=exp.EQ(this=n.copy(), expression=exp.Literal.number(0)), true=exp.Null()),
                    exp.If(this=exp.EQ(this=n.copy(), expression=exp.Literal.number(1)), true=exp.Literal.number(0.0)),
                ],
                default=exp.Div(
                    this=exp.Mul(
                        this=samp, expression=exp.Paren(this=exp.Sub(this=n.copy(), expression=exp.Literal.number(1)))
                    ),
                    expression=n.copy(),
                ),
            )
            out = exp.Sqrt(this=pop) if isinstance(x, exp.StddevPop) else pop
            return exp.Cast(this=out, to=exp.DataType.build("DOUBLE"))

        def rewrite(e: exp.Expression) -> exp.Expression:
            def visit(x):
                if isinstance(x, exp.WithinGroup) and isinstance(x.this, exp.PercentileCont | exp.PercentileDisc):
                    # percentile_cont(p) WITHIN GROUP (ORDER BY x): the same aggregate as quantile_cont(x, p)
                    order = x.expression.expressions
                    if len(order) != 1 or order[0].args.get("desc"):
                        raise PlanError(f"{x.sql()}: WITHIN GROUP takes one ascending ORDER BY column")
                    return _col(add_agg(type(x.this)(this=order[0].this, expression=x.this.this)))
                if isinstance(x, exp.VariancePop | exp.StddevPop):
                    return visit_population(x)
                if _is_agg(x):
                    return _col(add_agg(x))
                if isinstance(x, exp.Column) and getattr(x, "_bound", False):
                    return x
                try:
                    text = self.bind(x, node).sql()
                except PlanError:
                    return None
                if text in key_map:
                    return _col(key_map[text])
                if isinstance(x, exp.Column):
                    raise PlanError(f"column {x.sql()} must appear in GROUP BY or be used in an aggregate")
                return None

            return _transform(e.copy(), visit)

        new_items = []
        for item in items:
            inner = item.this if isinstance(item, exp.Alias) else item
            if getattr(item, "_bound", False):
                phys = inner.name
                if phys not in key_names:
                    raise PlanError(f"column {item.alias} must appear in GROUP BY or be used in an aggregate")
                new = exp.Alias(this=_col(phys), alias=exp.to_identifier(item.alias))
            else:
                new_inner = rewrite(inner)
                new = exp.Alias(this=new_inner, alias=exp.to_identifier(_display(item)))
            new._bound = True
            new_items.append(new)
        having_expr = rewrite(having.this) if having is not None else None
        new_order = []
        for o in order_exprs:
            key = o.this
            if (
                isinstance(key, exp.Column)
                and not key.table
                and any(_display(i).lower() == key.name.lower() for i in items)
            ):
                new_order.append(o)
                continue
            if isinstance(key, exp.Literal):
                new_order.append(o)
                continue
            o2 = o.copy()
            o2.set("this", rewrite(key))
            o2._bound = True
            new_order.append(o2)
        pre_node = Project(
            node,
            tuple(pre) + tuple((n, _col(n)) for n in ()),
            scope=tuple((None, n) for n, _ in pre),
            types=tuple(self.check(e, node) for _, e in pre),
        )
        in_types = dict(zip(pre_node.names, pre_node.types, strict=True))
        agg_types = tuple(_agg_type(c, in_types.get(c.argument)) for c in calls)
        agg = Aggregate(
            pre_node,
            tuple(key_names),
            tuple(calls),
            scope=tuple((None, n) for n in key_names) + tuple((None, c.output) for c in calls),
            types=tuple(in_types[k] for k in key_names) + agg_types,
            trigger=triggers,
        )
        return agg, new_items, having_expr, new_order

    def _agg_arg(self, arg: exp.Expression, node: Node, pre: list) -> str:
        bound = self.bind(arg, node)
        for phys, e in pre:
            if e.sql() == bound.sql():
                return phys
        phys = self.fresh("a")
        self.check(bound, node)
        self._label(phys, arg)
        pre.append((phys, bound))
        return phys


def _conjuncts(e: exp.Expression) -> list[exp.Expression]:
    if isinstance(e, exp.And):
        return _conjuncts(e.this) + _conjuncts(e.expression)
    if isinstance(e, exp.Paren) and isinstance(e.this, exp.And):
        return _conjuncts(e.this)
    return [e]


def _and(parts: list[exp.Expression]) -> exp.Expression:
    out = parts[0]
    for p in parts[1:]:
        out = exp.And(this=out, expression=p)
    return out


def _columns(e: exp.Expression) -> set[str]:
    return {c.name for c in e.find_all(exp.Column)}


def _key_sides(part: exp.Expression, lnames: set, rnames: set) -> tuple | None:
    """``left expr = right expr`` (either way round) as (left, right); None for any other condition."""
    if not isinstance(part, exp.EQ) or has_subquery(part):
        return None
    a, b = _columns(part.this), _columns(part.expression)
    if a and b and a <= lnames and b <= rnames:
        return part.this, part.expression
    if a and b and a <= rnames and b <= lnames:
        return part.expression, part.this
    return None


def _key_type(a: pa.DataType | None, b: pa.DataType | None) -> pa.DataType | None:
    """The type both keys are compared in (numbers widen), or None when they are not comparable."""
    if a is None or b is None:
        return None
    if a == b:
        return a
    numeric = (pa.types.is_integer, pa.types.is_floating)
    if any(f(a) for f in numeric) and any(f(b) for f in numeric):
        return pa.float64() if pa.types.is_floating(a) or pa.types.is_floating(b) else pa.int64()
    return None


def _cast_to(e: exp.Expression, t: pa.DataType, target: pa.DataType) -> exp.Expression:
    return e if t == target else exp.Cast(this=e, to=exp.DataType.build(_sql_type(target)))


def _with_columns(node: Node, extra: list) -> Node:
    """``node``'s columns plus computed ones (hidden from ``*``: their names start with ``__``)."""
    exprs = tuple((n, _col(n)) for n in node.names) + tuple((n, e) for n, e, _ in extra)
    scope = (*node.scope, *((None, n) for n, _, _ in extra))
    return Project(node, exprs, scope=scope, types=(*node.types, *(t for _, _, t in extra)))


def _agg_type(call: AggCall, arg_type: pa.DataType | None) -> pa.DataType | None:
    if call.function in ("count", "count_not_null", "count_distinct"):
        return pa.int64()
    if call.function in ("average", "stddev", "variance", "percentile_cont", "variance_pop", "stddev_pop"):
        return pa.float64()
    if call.function == "sum" and arg_type is not None and pa.types.is_integer(arg_type):
        return pa.int64()
    return arg_type


def _sql_type(t: pa.DataType) -> str:
    if pa.types.is_integer(t):
        return "BIGINT"
    if pa.types.is_floating(t):
        return "DOUBLE"
    if pa.types.is_string(t):
        return "VARCHAR"
    if pa.types.is_boolean(t):
        return "BOOLEAN"
    if pa.types.is_timestamp(t):
        return "TIMESTAMP"
    if pa.types.is_date(t):
        return "DATE"
    raise PlanError(f"no SQL type for {t}")


def _transform(expr: exp.Expression, visit) -> exp.Expression:
    """Pre-order rewrite: ``visit`` returns a replacement (not descended into) or None."""
    got = visit(expr)
    if got is not None:
        return got
    for key, value in list(expr.args.items()):
        if isinstance(value, exp.Expression):
            expr.set(key, _transform(value, visit))
        elif isinstance(value, list):
            expr.set(key, [_transform(v, visit) if isinstance(v, exp.Expression) else v for v in value])
    return expr
