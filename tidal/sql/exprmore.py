"""Translation of more of DuckDB's scalar functions and predicates (evaluated by
:mod:`tidal.expr.sqlmore`): a mixin of :mod:`tidal.sql.expressions`' translator; the length of INTERVAL literals;
DuckDB's regex options."""

from __future__ import annotations

from decimal import Decimal

from sqlglot import exp

from ..core.errors import PlanError
from ..expr.nodes import SqlCall, Unary

_UNIT_US = {
    "MICROSECOND": 1,
    "MILLISECOND": 1_000,
    "SECOND": 1_000_000,
    "MINUTE": 60_000_000,
    "HOUR": 3_600_000_000,
    "DAY": 86_400_000_000,
    "WEEK": 7 * 86_400_000_000,
}


def sql_text(e: exp.Expression) -> str:
    """``e`` as SQL text for an error; a call whose arguments sqlglot cannot print (a MAP with a non-text key:
    ``switch(x, MAP {1: 'a'})``) as its name and the count of its arguments."""
    try:
        return e.sql()
    except ValueError:
        return f"{e.name.upper()}({len(e.expressions)} arguments)"


def interval_micros(node: exp.Expression) -> int:
    """The length of an ``INTERVAL n UNIT`` literal (``INTERVAL '1 day 2 hours'``: every part), or a plain
    integer, in microseconds."""
    if isinstance(node, exp.Interval):
        unit = node.args.get("unit")
        value = node.this.name if isinstance(node.this, exp.Literal) else node.this.sql()
        parts = [value, unit.name] if unit is not None and unit.name else value.split()
        parts = parts + ["SECOND"] if len(parts) == 1 else parts  # INTERVAL '5': seconds
        if len(parts) % 2:
            raise PlanError(f"an INTERVAL of {value!r} is not supported (write 'n unit', e.g. '1 day 2 hours')")
        if not value.strip():
            raise PlanError(f"could not convert {value!r} to an INTERVAL")
        total = 0
        for text, unit_name in zip(parts[::2], parts[1::2], strict=True):
            unit_name = unit_name.upper()[:-1] if unit_name.upper().endswith("S") else unit_name.upper()
            if unit_name not in _UNIT_US:
                raise PlanError(f"unsupported interval unit {unit_name!r} in {node.sql()}")
            try:
                number = Decimal(text)
            except ArithmeticError:
                raise PlanError(
                    f"an INTERVAL of a value that is not a constant is not supported: {node.sql()}"
                ) from None
            separate = unit is not None and unit.name and not node.args.get("fraction_in_string")
            if separate and unit_name not in ("SECOND", "MILLISECOND"):
                number = Decimal(int(number))  # INTERVAL '1.5' DAY: DuckDB drops the fraction ('1.5 days' keeps it)
            total += int(round(float(number) * _UNIT_US[unit_name]))  # (as DuckDB rounds '0.0000000005 DAY')
        if not -(2**63) < total < 2**63:
            raise PlanError(f"{node.sql()} is out of the range of an INTERVAL tidal holds (64-bit microseconds)")
        return total
    if isinstance(node, exp.Literal) and not node.is_string:
        return int(node.name)
    raise PlanError(f"expected an INTERVAL literal, got {node.sql()}")


_PLURAL_PARTS = {"year", "month", "day", "hour", "minute", "second", "millisecond", "microsecond", "quarter", "week"}


class MoreTranslations:
    """``t_`` methods for sqlglot classes; ``self`` is the translator (``visit``, ``_call``, ``_const``...)."""

    def _distinct(self, e, negate: bool):
        return self._call("distinct", e, [e.this, e.expression], [negate])

    def t_NullSafeEQ(self, e):
        return self._distinct(e, False)

    def t_Trunc(self, e):
        if e.args.get("decimals") is not None:
            raise PlanError(f"{e.sql(dialect='duckdb')}: trunc with a number of places is not supported")
        return self._call("trunc", e, [e.this])

    def t_NullSafeNEQ(self, e):
        return self._distinct(e, True)

    def t_Escape(self, e):
        like = e.this
        if not isinstance(like, exp.Like | exp.ILike):
            raise PlanError(f"ESCAPE is supported after LIKE or ILIKE only: {e.sql()}")
        pattern = self._text(e, like.expression, "pattern")
        escape = self._text(e, e.expression, "escape character")
        node = self._call("like_escape", e, [like.this], [pattern, escape, isinstance(like, exp.ILike)])
        if like.args.get("negate"):
            return Unary("not", self._made(node, e))
        return node

    def t_StrPosition(self, e):
        if e.args.get("position") is not None or e.args.get("occurrence") is not None:
            raise PlanError(f"{e.sql()}: a start position or occurrence is not supported")
        return self._call("strpos", e, [e.this], [self._text(e, e.args["substr"], "search string")])

    def t_Contains(self, e):
        if isinstance(e.expression, exp.Null) and isinstance(e.this, exp.Literal | exp.Null):
            # DuckDB: of two constants without a type, ambiguous (text, list and map contains), an error
            raise PlanError(f"{e.sql()}: contains of an untyped NULL is ambiguous (cast the NULL to VARCHAR)")
        return self._call("contains", e, [e.this], [self._text(e, e.expression, "second argument")])

    def t_ToMap(self, e):  # (sqlglot cannot print a MAP with a non-text key: named here, not printed)
        raise PlanError("MAP values (MAP {...}) are not supported")

    def t_SplitPart(self, e):
        if e.args.get("delimiter") is None or e.args.get("part_index") is None:
            raise PlanError(f"{e.sql()}: split_part takes 3 arguments (string, delimiter, part index)")
        delim = self._text(e, e.args["delimiter"], "delimiter")
        index = self._const(e, e.args["part_index"], "part index")
        if index is not None and not isinstance(index, int):
            raise PlanError(f"{e.sql()}: the part index must be an integer")
        return self._call("split_part", e, [e.this], [delim, index])

    def t_Translate(self, e):
        source = self._text(e, e.args["from_"], "characters to replace")
        return self._call("translate", e, [e.this], [source, self._text(e, e.args["to"], "replacements")])

    def t_IsNan(self, e):
        return self._call("isnan", e, [e.this])

    def t_Ascii(self, e):
        return self._call("ascii", e, [e.this])

    def t_Log(self, e):
        if e.expression is None:  # DuckDB's one-argument log is base 10
            return self._call("log", e, [exp.Literal.number(10), e.this])
        return self._call("log", e, [e.this, e.expression])

    def _duck(self, node, e):
        """``node`` named in errors by ``e`` as DuckDB writes it (make_date, not DATE_FROM_PARTS)."""
        return self._made(node, e.sql(dialect="duckdb"))

    def t_IsInf(self, e):
        return self._duck(self._call("isinf", e, [e.this]), e)

    def t_MD5(self, e):
        return self._duck(self._call("md5", e, [e.this]), e)

    def t_Pad(self, e):
        name = "lpad" if e.args.get("is_left") else "rpad"
        if e.args.get("fill_pattern") is None:  # DuckDB has no two-argument form
            raise PlanError(f"{e.sql(dialect='duckdb')}: {name} takes a string, a length and a fill string")
        return self._duck(self._call(name, e, [e.this, e.expression, e.args["fill_pattern"]]), e)

    def t_DateFromParts(self, e):
        parts = [e.args.get(k) for k in ("year", "month", "day")]
        if None in parts or any(v is not None for k, v in e.args.items() if k not in ("year", "month", "day")):
            raise PlanError(f"{e.sql(dialect='duckdb')}: make_date takes a year, a month and a day")
        return self._duck(self._call("make_date", e, parts), e)

    def _date_part(self, e, args):
        unit = self._text(e, args[0], "date part")
        if unit is None:  # DuckDB: a NULL part gives NULL (DOUBLE)
            return SqlCall("null_of", (self.visit(args[1]),), ("double",))
        unit = unit.strip().lower()
        unit = unit[:-1] if unit.endswith("s") and unit[:-1] in _PLURAL_PARTS else unit  # 'years' as DuckDB reads it
        return self._call("part", e, [args[1]], [unit])

    def more_function(self, name: str, e) -> SqlCall | None:
        """A function sqlglot leaves anonymous, or None when it is not one of these."""
        args = e.expressions
        if name == "isnan" and len(args) == 1:
            return self._call("isnan", e, [args[0]])
        if name == "isfinite" and len(args) == 1:
            return self._call("isfinite", e, [args[0]])
        if name in ("date_part", "datepart") and len(args) == 2:
            return self._date_part(e, args)
        if name == "__nan_guard":  # an aggregate's argument that must hold no NaN (select_list)
            return self._call("nan_guard", e, [args[0]], [args[1].name])
        if name in ("__decimal_unscaled", "__decimal_scaled"):  # a DECIMAL's exact sum (select_list)
            return self._call(name[2:], e, [args[0]], [int(a.name) for a in args[1:]])
        if name in ("__decimal_limb", "__decimal_from_limbs", "__decimal_truncated", "__decimal_average"):
            # sums, averages, quantiles (decimal_aggs): the trailing numbers are parameters
            split = {"__decimal_from_limbs": len(args) - 1, "__decimal_average": len(args) - 2}.get(name, 1)
            return self._call(name[2:], e, list(args[:split]), [int(a.name) for a in args[split:]])
        if name == "__one_row":  # a correlated scalar subquery's value, at most one row each (correlated.py)
            return self._call("one_row", e, list(args))
        if name == "__pack":  # an ordered aggregate's keys and value as one struct (select_list._packed)
            return self._call("pack", e, list(args))
        if name in ("left_grapheme", "right_grapheme", "substring_grapheme"):
            counts = (2, 3) if name == "substring_grapheme" else (2,)
            if len(args) not in counts:
                raise PlanError(f"{e.sql()}: {name}() takes {' or '.join(map(str, counts))} arguments, got {len(args)}")
            return self._call(name, e, list(args))
        if name in ("prefix", "suffix") and len(args) == 2:
            func = "starts_with" if name == "prefix" else "ends_with"
            return self._call(func, e, [args[0]], [self._text(e, args[1], "second argument")])
        return None


_REGEX_OPTIONS = {"c": ("case", True), "i": ("case", False), "l": ("literal", True), "s": ("dot_nl", True)}
_REGEX_OPTIONS |= {c: ("dot_nl", False) for c in "mnp"}


def regex_options(e: exp.Expression, flags: str | None, func: str) -> str:
    """DuckDB's regex options (``c i l m n p s``, and ``g`` for regexp_replace) as a canonical string of
    the ones that change anything: ``i`` (case-insensitive), ``l`` (literal), ``s`` (dot matches newline), ``g``."""
    if flags is None:
        raise PlanError(f"{e.sql()}: the regex options must not be NULL")
    state = {"case": True, "literal": False, "dot_nl": False, "g": False}
    for c in flags:
        if c in " \t\n":
            continue
        if c == "g" and func == "regexp_replace":
            state["g"] = True
        elif c == "g":
            raise PlanError(f"{e.sql()}: option 'g' (global replace) is only valid for regexp_replace")
        elif c in _REGEX_OPTIONS:
            key, value = _REGEX_OPTIONS[c]
            state[key] = value
        else:
            raise PlanError(f"{e.sql()}: unrecognized regex option {c!r}")
    on = {"i": not state["case"], "l": state["literal"], "s": state["dot_nl"], "g": state["g"]}
    return "".join(c for c in "ilsg" if on[c])
