"""The FROM clause of a SELECT: files, subqueries, CTEs, table functions (windows, watermarks) and joins."""

from __future__ import annotations

import os
import re
from dataclasses import replace

import pyarrow as pa
from sqlglot import exp

from ...core.errors import InputError, PlanError
from ...io.files import FORMATS as FILE_FORMATS
from ...io.files import file_format, file_schema, is_stdin
from ..expressions import Evaluator, SqlTypeError, arrow_type, has_subquery
from .exprs import (
    FILE_FUNCTIONS,
    TVF_PARAMETERS,
    TVF_SIGNATURES,
    _and,
    _col,
    _columns,
    _conjuncts,
    _interval_arg,
    _key_sides,
    _with_columns,
    check_tvf_args,
)
from .inline import inline_rows, number_series
from .nodes import EventTime, Filter, Join, Node, Project, Scan, Session, Tumble, event_time_field
from .types import _cast_to, _key_type, is_condition_type, sql_type_name


class FromItems:
    """Part of :class:`~.builder.Builder`: FROM items and joins."""

    # -- FROM items ----------------------------------------------------------------------
    def from_item(self, item: exp.Expression) -> Node:
        alias = item.alias_or_name if isinstance(item, exp.Subquery | exp.Table | exp.Values) and item.alias else None
        if isinstance(item, exp.Values):
            node = inline_rows(item)
        elif isinstance(item, exp.Subquery):
            node = self._rename_visible(self.query(item.this))
        elif isinstance(item, exp.Table):
            node = self.table(item)
            if alias is None and isinstance(item.this, exp.Identifier) and not item.this.quoted:
                alias = item.name
        else:
            raise PlanError(f"unsupported FROM item: {item.sql()}")
        table_alias = item.args.get("alias")
        if isinstance(table_alias, exp.TableAlias) and table_alias.columns:
            node = self._rename_columns(node, [c.name for c in table_alias.columns], item)
        if alias:
            node = self._requalify(node, alias)
        return node

    def _rename_columns(self, node: Node, new: list[str], item: exp.Expression) -> Node:
        """``AS t(a, b)``: the first visible columns take the names given, in order."""
        visible = [i for i, (_, n) in enumerate(node.scope) if not n.startswith("__")]
        if len(new) > len(visible):
            raise PlanError(f"{item.sql(dialect='duckdb')}: {len(new)} column names for {len(visible)} columns")
        scope = list(node.scope)
        for i, name in zip(visible, new, strict=False):
            scope[i] = (scope[i][0], name)
        return self._with_scope(node, tuple(scope))

    def _requalify(self, node: Node, alias: str) -> Node:
        return self._with_scope(node, tuple((alias, n) for _, n in node.scope))

    def _with_scope(self, node: Node, scope: tuple) -> Node:
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
            if not common:  # DuckDB: a binder error, no columns found to join
                raise PlanError(f"NATURAL JOIN of sides sharing no column name is not supported: {join.sql()}")
            using = [exp.to_identifier(n) for n in dict.fromkeys(common)]
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

    def _join_on(self, left: Node, right: Node, kind: str, on, using, swapped: bool = False, bound_on=None) -> Node:
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
        elif on is not None or bound_on is not None:
            both = Join(left, right, "cross")
            bound = self.bind(on, both) if bound_on is None else bound_on
            t = self.check(bound, both)
            if t is not None and not is_condition_type(t):
                raise SqlTypeError(f"ON {(on or bound).sql(dialect='duckdb')} is {sql_type_name(t)}, not boolean")
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
            if not target.quoted and name.lower() in self.catalog:
                return self.catalog_table(name.lower())
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
        if isinstance(target, exp.GenerateSeries):
            return number_series(target)
        if isinstance(target, exp.Anonymous | exp.Func):
            return self.tvf(target)
        raise PlanError(f"unsupported FROM item: {item.sql()}")

    def catalog_table(self, name: str) -> Node:
        """A table or view of the session's catalog (CREATE TABLE / CREATE VIEW), built once per query
        (two references share one node) in the catalog's own scope, not the referring query's CTEs."""
        if name not in self._catalog_nodes:
            outer, self.ctes = self.ctes, [{}]
            self._catalog_nodes[name] = None  # a view that reaches itself is refused below
            try:
                self._catalog_nodes[name] = self._rename_visible(self.query(self.catalog[name]))
            finally:
                self.ctes = outer
        node = self._catalog_nodes[name]
        if node is None:
            raise PlanError(f"view {name} refers to itself (not supported)")
        return node

    def _kwargs(self, args, fn: str) -> dict:
        out = {}
        for a in args:
            if not isinstance(a, exp.Kwarg | exp.PropertyEQ | exp.EQ):
                raise PlanError(f"expected a named argument (name => value), got {a.sql()}")
            key = a.this.name.lower()
            if key in out:
                raise PlanError(f"{fn}(...): argument {key} is given twice")
            value = a.expression
            if isinstance(value, exp.Literal):
                out[key] = value.name if value.is_string else Evaluator({}, 0).eval(value).as_py()
                out[key] = float(out[key]) if type(out[key]).__name__ == "Decimal" else out[key]  # 1.5: a DECIMAL
            elif isinstance(value, exp.Boolean):
                out[key] = bool(value.this)
            else:
                out[key] = value
        return out

    def scan(self, path: str, fmt: str | None, options: dict, live: tuple = ()) -> Scan:
        for key, value in options.items():
            if isinstance(value, exp.Expression):
                raise PlanError(f"reading {path}: option {key} must be a constant, got {value.sql()}")
        fmt = file_format(path, fmt)
        if fmt == "tsv" and "sep" not in options:
            options = {**options, "sep": "\t"}
        if live or is_stdin(path):  # growing inputs (their reader is imported only for them)
            from ...io.live import LIVE_FORMATS, input_schema
        if not live and is_stdin(path) and fmt in LIVE_FORMATS:
            live = (("kind", "stdin"),)  # standard input is read as it arrives
        if live:
            if fmt not in LIVE_FORMATS:
                raise PlanError(f"{path}: a growing input must be CSV, TSV or JSON lines, not {fmt} (not supported)")
            schema = input_schema(path, "csv" if fmt == "tsv" else fmt, options, dict(live))
        else:
            schema = file_schema(path, format="csv" if fmt == "tsv" else fmt, options=options)
        twice = sorted({n for n in schema.names if schema.names.count(n) > 1})
        if twice:  # columns are read by name: DuckDB's renaming (x, x_1) is not supported
            raise InputError(
                f"{path}: the file names more than one column {', '.join(map(repr, twice))} (not supported)"
            )
        return Scan(
            path=path,
            format="csv" if fmt == "tsv" else fmt,
            options=tuple(sorted(options.items())),
            names=tuple(schema.names),
            scope=tuple((None, n) for n in schema.names),
            types=tuple(schema.types),
            file_columns=tuple(schema.names),
            live=live,
        )

    def postgres_scan(self, args: dict) -> Scan:
        """``postgres(dsn, table | query)``: a Scan of a database relation (tidal/sql/postgres.py reads it)."""
        from ...io.postgres import Relation

        for k, v in args.items():
            if k != "cache_keys" and not isinstance(v, str) or k == "cache_keys" and not isinstance(v, int):
                raise PlanError(f"postgres(...): {k} must be a {'number' if k == 'cache_keys' else 'string'}")
        columns = Relation(args["dsn"], args.get("table"), args.get("query")).columns()
        what = f"table => {args['table']!r}" if "table" in args else f"query => {args['query']!r}"
        options = {**args, "columns_sql": tuple((c.name, c.select()) for c in columns)}
        return Scan(
            path=f"postgres({what})",
            format="postgres",
            options=tuple(sorted(options.items())),
            names=tuple(c.name for c in columns),
            scope=tuple((None, c.name) for c in columns),
            types=tuple(c.type for c in columns),
            file_columns=tuple(c.name for c in columns),
        )

    def redis_scan(self, args: dict) -> Node:
        """``redis(url, stream, ...)``: a Scan of a Redis Stream (tidal/sql/redis.py runs it), under an
        EventTime when ``time_field`` is given."""
        from ...io.redis_streams import RedisStreamFeed

        for k in ("url", "stream", "format", "field", "schema", "start", "stop", "dead_letter"):
            if k in args and not isinstance(args[k], str):
                raise PlanError(f"redis(...): {k} must be a string")
        time_names = self.descriptor_names(args.get("time_field"), "redis")
        if len(time_names) > 1:
            raise PlanError("redis(...): time_field names one column")
        delay = _interval_arg(args, "max_delay", "redis") if "max_delay" in args else 0
        given = _parse_schema(args["schema"]) if "schema" in args else None
        opts = {k: args[k] for k in ("url", "stream", "format", "field", "start", "stop", "dead_letter") if k in args}
        schema = RedisStreamFeed(args["url"], args["stream"], format=opts.get("format", "json"),
                                 field=opts.get("field"), schema=given).schema()  # fmt: skip
        scan = Scan(
            path=f"redis({args['stream']!r})",
            format="redis",
            options=tuple(sorted(opts.items())),
            names=tuple(schema.names),
            scope=tuple((None, n) for n in schema.names),
            types=tuple(schema.types),
            file_columns=tuple(schema.names),
        )
        if not time_names:
            return scan
        time_field = self.resolve(exp.column(time_names[0]), scan)
        return EventTime(scan, time_field, "max_diff", (("offset", delay),))

    def tvf(self, call: exp.Expression) -> Node:
        name = (call.name if isinstance(call, exp.Anonymous) else call.sql_name()).lower()
        items = list(call.expressions if isinstance(call, exp.Anonymous) else call.args.get("expressions", []))
        if isinstance(call, exp.ReadCSV):  # sqlglot keeps read_csv's first argument apart
            items = [call.this, *items] if call.this is not None else items
        if name == "kafka":  # a Kafka topic (tidal/sql/kafka.py)
            from ..kafka import kafka_scan

            return kafka_scan(self, self._kwargs(items, name))
        if name not in TVF_SIGNATURES:
            raise PlanError(f"unknown table function {name}; tidal has {', '.join(sorted(TVF_SIGNATURES))}, kafka")
        args = self._kwargs(self._named(name, items), name)
        check_tvf_args(name, args)
        if name == "tail":
            return self.tail(args)
        if name == "postgres":
            return self.postgres_scan(args)
        if name == "redis":
            return self.redis_scan(args)
        if name in FILE_FUNCTIONS:
            path = args.pop("path")
            if not isinstance(path, str):
                shown = path.sql(dialect="duckdb") if isinstance(path, exp.Expression) else repr(path)
                raise PlanError(f"{name}(...): the file must be a quoted path such as 'data.csv', got {shown}")
            fmt = {"read_json": "json", "read_json_auto": "json", "read_parquet": "parquet"}.get(name, "csv")
            return self.scan(path, fmt, args)
        node = self.table_arg(args["source"])
        time_field = self.descriptor(node, args.get("time_field"), name)
        if name == "max_diff_watermark":
            offset = _interval_arg(args, "offset", name) if "offset" in args else 0
            return EventTime(node, time_field, "max_diff", (("offset", offset),))
        if name == "percentile_watermark":
            params = tuple((k, args[k]) for k in ("events", "percentile", "frequency"))
            return EventTime(node, time_field, "percentile", params)
        if name in ("tumble", "hop"):
            length = _interval_arg(args, "window_length", name)
            offset = _interval_arg(args, "offset", name) if "offset" in args else 0
            scope = (*node.scope, (None, "window_start"), (None, "window_end"))
            hop = None
            if name == "hop":
                given = [k for k in ("hop", "slide", "hop_length") if k in args]
                hop = _interval_arg(args, given[0], name)
                if hop <= 0 or length <= 0:
                    raise PlanError("hop(...): window_length and hop must be positive intervals")
            elif length <= 0:
                raise PlanError("tumble(...): window_length must be a positive interval")
            align = args.get("align", "start")
            if not isinstance(align, str) or align.lower() not in ("start", "end"):
                shown = align.sql(dialect="duckdb") if isinstance(align, exp.Expression) else repr(align)
                raise PlanError(
                    f"{name}(...): align is 'start' (windows [start, end), the default) or 'end' (Trill's"
                    f" convention: windows (start, end], a time on the grid closes its window), got {shown}"
                )
            return Tumble(node, time_field, length, offset, scope=scope, hop=hop, align=align.lower())
        return self.session(node, time_field, args)

    def tail(self, args: dict) -> Scan:
        """``tail(path => 'f.csv' [, stop => 'never' | 'eof'] [, format => 'csv'] [, latency => INTERVAL ...])``:
        a file read as another process appends to it (CSV options as in read_csv)."""
        path = args.pop("path")
        fmt = args.pop("format", None)
        stop = str(args.pop("stop", "never")).lower()
        if stop not in ("never", "eof"):
            raise PlanError(f"tail(...): stop is 'never' (follow the file until interrupted) or 'eof', got {stop!r}")
        latency = _interval_arg(args, "latency", "tail") if "latency" in args else None
        args.pop("latency", None)
        if latency is not None and latency < 0:
            raise PlanError("tail(...): latency must not be negative")
        return self.scan(path, fmt, args, live=(("kind", "tail"), ("stop", stop), ("latency_us", latency)))

    def session(self, node: Node, time_field: str, args: dict) -> Session:
        """``session(source, time_field, gap [, max_duration] [, key])``: sessions per ``key``."""
        given = [k for k in ("gap", "timeout") if k in args]
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
            declared = event_time_field(node)
            if declared is None:
                raise PlanError(
                    f"{fn}(...) needs time_field => DESCRIPTOR(column): its source declares no event time "
                    "(wrap it in max_diff_watermark(...) or percentile_watermark(...), or name the column)"
                )
            return declared
        if isinstance(value, exp.Anonymous) and value.name.upper() == "DESCRIPTOR":
            value = value.expressions[0]
        if isinstance(value, str):
            value = exp.column(value)
        # the qualifier in DESCRIPTOR(e.time) names the table function's own alias: match the column name
        return self.resolve(exp.column(value.name), node)


def _parse_schema(text: str) -> pa.Schema:
    """``'a BIGINT, b VARCHAR, t TIMESTAMP'`` as an Arrow schema."""
    fields = []
    for part in re.split(r",(?![^(]*\))", text):
        m = re.match(r"\s*(\"[^\"]+\"|\w+)\s+(.+?)\s*$", part)
        if not m:
            raise PlanError(f"redis(...) schema: expected 'name TYPE, ...', got {part.strip()!r}")
        fields.append(pa.field(m.group(1).strip('"'), arrow_type(exp.DataType.build(m.group(2), dialect="duckdb"))))
    return pa.schema(fields)
