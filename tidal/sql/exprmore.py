"""Translation of more of DuckDB's scalar functions and predicates (evaluated by
:mod:`tidal.expr.sqlmore`): a mixin of :mod:`tidal.sql.expressions`' translator."""

from __future__ import annotations

from sqlglot import exp

from ..core.errors import PlanError
from ..expr.nodes import SqlCall, Unary


class MoreTranslations:
    """``t_`` methods for sqlglot classes; ``self`` is the translator (``visit``, ``_call``, ``_const``...)."""

    def _distinct(self, e, negate: bool):
        return self._call("distinct", e, [e.this, e.expression], [negate])

    def t_NullSafeEQ(self, e):
        return self._distinct(e, False)

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

    def t_SplitPart(self, e):
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

    def more_function(self, name: str, e) -> SqlCall | None:
        """A function sqlglot leaves anonymous, or None when it is not one of these."""
        args = e.expressions
        if name == "isnan" and len(args) == 1:
            return self._call("isnan", e, [args[0]])
        if name == "__nan_guard":  # an aggregate's argument that must hold no NaN (select_list)
            return self._call("nan_guard", e, [args[0]], [args[1].name])
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
