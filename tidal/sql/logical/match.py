"""``MATCH_RECOGNIZE``: row pattern matching over a FROM item (the subset Flink supports).

``PARTITION BY`` columns, ``ORDER BY`` the event time (one column, ascending), ``MEASURES`` built from
``FIRST(X.c)``, ``LAST(X.c)``, ``X.c`` (the last ``X`` row), ``COUNT(*)``, ``COUNT(X.*)``,
``COUNT(X.c)``, ``SUM``/``AVG``/``MIN``/``MAX(X.c)`` (a bare column: every row of the match) and any
scalar expression over them, ``ONE ROW PER MATCH``, ``AFTER MATCH SKIP`` (``PAST LAST ROW``,
``TO NEXT ROW``, ``TO FIRST X``, ``TO LAST X``), ``PATTERN`` (see :mod:`tidal.ops.pattern.syntax`),
``WITHIN INTERVAL ...`` and ``DEFINE`` with references to the current row (``c``, ``X.c`` for its
own variable), to earlier rows of the match (``Y.c`` and ``LAST(Y.c)``: the last ``Y`` row,
``FIRST(Y.c)``) and to physical rows before (``PREV(c [, n])``, ``PREV(Y.c [, n])``). Anything else
is refused naming the construct. The temporal semantics are :mod:`tidal.ops.pattern.detect`'s; each
match is a row (a start edge) at the time of its last row.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlglot import exp

from ...core.errors import PlanError
from ...core.frozen import Frozen, immutable, set_field
from ..expressions import SqlTypeError, interval_micros
from .exprs import _col, _const_int, _transform
from .nodes import Node, Project, Unary
from .types import is_condition_type, sql_type_name

if TYPE_CHECKING:
    from ...ops.pattern.conditions import Measure, Ref

_AGGS = {exp.Sum: "sum", exp.Avg: "avg", exp.Min: "min", exp.Max: "max", exp.Count: "count"}
_REFUSED = {"NEXT": "NEXT(...)", "CLASSIFIER": "CLASSIFIER()", "MATCH_NUMBER": "MATCH_NUMBER()"}


@immutable
class MatchRecognize(Unary, Frozen):
    """One row per match: the partition columns (``keys``), then one column per primitive measure."""

    input: Node
    time_field: str
    keys: tuple
    pattern: str
    define: tuple  # ((variable, bound condition over input columns and __ref{k}, refs), ...)
    measures: tuple  # ((column, Measure), ...)
    skip: object
    within: int | None
    scope: tuple = ()
    types: tuple = ()

    def __init__(self, input, time_field, keys, pattern, define, measures, skip, within, scope=(), types=()):
        set_field(self, "input", input)
        set_field(self, "time_field", time_field)
        set_field(self, "keys", keys)
        set_field(self, "pattern", pattern)
        set_field(self, "define", define)
        set_field(self, "measures", measures)
        set_field(self, "skip", skip)
        set_field(self, "within", within)
        set_field(self, "scope", scope)
        set_field(self, "types", types)

    @property
    def names(self):
        return (*self.keys, *(n for n, _ in self.measures))

    def describe(self) -> str:
        parts = [f"MatchRecognize PATTERN ({self.pattern}) ORDER BY {self.time_field}"]
        if self.keys:
            parts.append(f"PARTITION BY {', '.join(self.keys)}")
        if self.within is not None:
            parts.append(f"WITHIN {self.within} us")
        parts.append(f"skip {self.skip}")
        parts += [f"{v} AS {c.sql()}" for v, c, _ in self.define]
        parts += [f"{m.text()} AS {n}" for n, m in self.measures]
        return ", ".join(parts)


def _skip(after) -> object:
    text = "AFTER MATCH SKIP PAST LAST ROW" if after is None else after.name
    words = text.split()[3:]
    if words == ["PAST", "LAST", "ROW"]:
        return "past_last_row"
    if words == ["TO", "NEXT", "ROW"]:
        return "to_next_row"
    return ("to_first" if words[1] == "FIRST" else "to_last", words[2])


class MatchItems:
    """Part of :class:`~.builder.Builder`: ``FROM item MATCH_RECOGNIZE (...)``."""

    def match_recognize(self, node: Node, m: exp.MatchRecognize) -> Node:
        from ...ops.pattern.syntax import parse_pattern, variables  # imported by the queries that use it

        rows = m.args.get("rows")
        if rows is not None and rows.name != "ONE ROW PER MATCH":
            raise PlanError(f"MATCH_RECOGNIZE {rows.name} is not supported (only ONE ROW PER MATCH)")
        tree = parse_pattern(m.args["pattern"].name)
        names = variables(tree)
        upper = {v.upper(): v for v in names}
        skip = _skip(m.args.get("after"))
        if isinstance(skip, tuple):
            if skip[1].upper() not in upper:
                raise PlanError(f"AFTER MATCH SKIP {skip[0][3:].upper()} {skip[1]}: not a pattern variable")
            skip = (skip[0], upper[skip[1].upper()])
        order = m.args.get("order")
        items = order.expressions if order is not None else []
        if len(items) != 1 or not isinstance(items[0].this, exp.Column) or items[0].args.get("desc"):
            raise PlanError("MATCH_RECOGNIZE needs ORDER BY the event time column (one column, ascending); "
                            "other orders are not supported")  # fmt: skip
        time_field = self.resolve(items[0].this, node)
        keys = []
        for p in m.args.get("partition_by") or ():
            if not isinstance(p, exp.Column):
                raise PlanError(f"MATCH_RECOGNIZE PARTITION BY {p.sql()}: only columns are supported")
            keys.append(self.resolve(p, node))
        within = None
        if m.args.get("within") is not None:
            within = interval_micros(m.args["within"])
            if within <= 0:
                raise PlanError("MATCH_RECOGNIZE WITHIN needs a positive interval")
        define = []
        for d in m.args.get("define") or ():
            var = upper.get(d.alias.upper())
            if var is None:
                raise PlanError(f"DEFINE {d.alias}: not a variable of PATTERN ({m.args['pattern'].name})")
            if any(v == var for v, _, _ in define):
                raise PlanError(f"DEFINE {d.alias}: the variable is defined twice")
            define.append(self._define(node, var, upper, d.this))
        measures: list = []
        outputs = []
        for item in m.args.get("measures") or ():
            e = item.this
            if not isinstance(e, exp.Alias):
                raise PlanError(f"MEASURES {e.sql()}: a measure needs a name (... AS name)")
            outputs.append((e.alias, self._measure(node, upper, e.this, measures)))
        if not outputs:
            raise PlanError("MATCH_RECOGNIZE needs MEASURES (... AS name)")
        by_name = dict(zip(node.names, node.types, strict=True))
        alias = m.args.get("alias")
        qual = alias.name if alias is not None and alias.name else None
        matched = MatchRecognize(
            node, time_field, tuple(keys), m.args["pattern"].name, tuple(define), tuple(measures), skip, within,
            scope=tuple((qual, n) for n in keys) + tuple((None, n) for n, _ in measures),
            types=tuple(by_name[k] for k in keys) + tuple(self._measure_type(mm, by_name) for _, mm in measures),
        )  # fmt: skip
        exprs = [(k, _col(k)) for k in keys]
        taken = set(keys)
        for name, e in outputs:
            if name in taken:
                raise PlanError(f"MATCH_RECOGNIZE: two output columns are named {name}")
            taken.add(name)
            exprs.append((name, e))
        types = tuple(self.check(e, matched) for _, e in exprs)
        scope = tuple((qual, n) for n, _ in exprs)
        return Project(matched, tuple(exprs), scope=scope, types=types)

    def _measure_type(self, m: Measure, by_name: dict):
        import pyarrow as pa

        from ...ops.pattern.conditions import measure_type

        schema = pa.schema([(n, t) for n, t in by_name.items()])
        try:
            return measure_type(m, schema)
        except PlanError as err:
            raise SqlTypeError(f"MEASURES {m.text()}: {err}") from None

    def _column(self, node: Node, col: exp.Column, upper: dict) -> tuple[str | None, str]:
        """(pattern variable or None, input column) of a column reference in DEFINE or MEASURES."""
        table = col.table
        if table and table.upper() in upper:
            if isinstance(col.this, exp.Star):
                return upper[table.upper()], "*"
            return upper[table.upper()], self.resolve(exp.column(col.name), node)
        return None, self.resolve(col, node)

    def _define(self, node: Node, var: str, upper: dict, cond: exp.Expression) -> tuple:
        from ...ops.pattern.conditions import Ref

        refs: list[Ref] = []

        def ref(r: Ref) -> exp.Expression:
            if r not in refs:
                refs.append(r)
            return _col(f"__ref{refs.index(r)}")

        def visit(e: exp.Expression):
            if isinstance(e, exp.AggFunc) and not isinstance(e, exp.First | exp.Last):
                raise PlanError(f"DEFINE {var}: aggregates in DEFINE are not supported: {e.sql()}")
            if isinstance(e, exp.Anonymous) and e.name.upper() in _REFUSED:
                raise PlanError(f"DEFINE {var}: {_REFUSED[e.name.upper()]} is not supported")
            if isinstance(e, exp.Anonymous) and e.name.upper() == "PREV":
                args = e.expressions
                if not args or not isinstance(args[0], exp.Column) or len(args) > 2:
                    raise PlanError(f"DEFINE {var}: {e.sql()}: PREV takes a column and an optional offset")
                n = _const_int(args[1], "PREV's offset") if len(args) == 2 else 1
                if n < 1:
                    raise PlanError(f"DEFINE {var}: {e.sql()}: PREV's offset must be at least 1")
                v, c = self._column(node, args[0], upper)
                return ref(Ref("prev", None if v == var else v, c, n))
            if isinstance(e, exp.First | exp.Last):
                if not isinstance(e.this, exp.Column) or e.args.get("expression") is not None:
                    raise PlanError(f"DEFINE {var}: {e.sql()}: FIRST/LAST take one column (offsets are not supported)")
                v, c = self._column(node, e.this, upper)
                if v is None:
                    if isinstance(e, exp.Last):
                        return _col(c)  # the universal row pattern variable: the current row
                    raise PlanError(f"DEFINE {var}: {e.sql()}: name the variable, FIRST(X.column)")
                if v == var and isinstance(e, exp.Last):
                    return _col(c)
                return ref(Ref("first" if isinstance(e, exp.First) else "last", v, c))
            if isinstance(e, exp.Column) and not isinstance(e.this, exp.Star):
                v, c = self._column(node, e, upper)
                return _col(c) if v is None or v == var else ref(Ref("last", v, c))
            return None

        bound = _transform(cond.copy(), visit)
        by_name = dict(zip(node.names, node.types, strict=True))
        extra = [(f"__ref{k}", by_name[r.column]) for k, r in enumerate(refs)]
        scope_node = Project(
            node, tuple((n, _col(n)) for n in (*node.names, *(n for n, _ in extra))),
            scope=(*((None, n) for n in node.names), *((None, n) for n, _ in extra)),
            types=(*node.types, *(t for _, t in extra)),
        )  # fmt: skip
        t = self.check(bound, scope_node)
        if t is not None and not is_condition_type(t):
            raise SqlTypeError(f"DEFINE {var} AS {cond.sql(dialect='duckdb')} is {sql_type_name(t)}, not boolean")
        return var, bound, tuple(refs)

    def _measure(self, node: Node, upper: dict, e: exp.Expression, measures: list) -> exp.Expression:
        from ...ops.pattern.conditions import Measure

        def prim(m: Measure) -> exp.Expression:
            for name, known in measures:
                if known == m:
                    return _col(name)
            name = self.fresh("m")
            measures.append((name, m))
            return _col(name)

        def visit(x: exp.Expression):
            if isinstance(x, exp.Anonymous) and x.name.upper() in (*_REFUSED, "PREV"):
                raise PlanError(f"MEASURES {e.sql()}: {x.name.upper()} is not supported in MEASURES")
            if isinstance(x, exp.First | exp.Last):
                if not isinstance(x.this, exp.Column) or x.args.get("expression") is not None:
                    raise PlanError(f"MEASURES {x.sql()}: FIRST/LAST take one column (offsets are not supported)")
                v, c = self._column(node, x.this, upper)
                return prim(Measure("first" if isinstance(x, exp.First) else "last", v, c))
            if isinstance(x, exp.AggFunc):
                kind = _AGGS.get(type(x))
                if kind is None or isinstance(x.this, exp.Distinct):
                    raise PlanError(f"MEASURES {x.sql()}: only COUNT, SUM, AVG, MIN, MAX, FIRST, LAST are supported")
                arg = x.this
                if isinstance(arg, exp.Star) and kind == "count":
                    return prim(Measure("count", None, None))
                if not isinstance(arg, exp.Column):
                    raise PlanError(f"MEASURES {x.sql()}: aggregate a column (X.column), not an expression")
                v, c = self._column(node, arg, upper)
                if c == "*" and kind == "count":
                    return prim(Measure("count", v, None))
                return prim(Measure(kind, v, c))
            if isinstance(x, exp.Column) and not isinstance(x.this, exp.Star):
                v, c = self._column(node, x, upper)
                return prim(Measure("last", v, c))
            return None

        return _transform(e.copy(), visit)
