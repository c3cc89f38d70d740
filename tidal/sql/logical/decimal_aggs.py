"""DuckDB's aggregates of a DECIMAL, planned over the engine's integer and DOUBLE aggregates.

* ``SUM(d)`` is DuckDB's exact DECIMAL(38, s) (a 128-bit sum): the unscaled values are summed in 32-bit
  limbs, each an ordinary BIGINT SUM, and put back together after (``tidal.expr.decimal_sum``); in a
  window (``SUM(d) OVER ...``) too. ``SUM(DISTINCT d)`` sums the distinct unscaled values as one BIGINT
  (a sum beyond 64 bits is the integer sum's error).
* ``AVG``, ``VARIANCE``, ``STDDEV`` of a DECIMAL are DOUBLEs of its DOUBLEs (select_list).
"""

from __future__ import annotations

import pyarrow as pa
from sqlglot import exp

from ...expr.decimal_sum import limb_count
from .exprs import _col
from .nodes import AggCall


def _limb(arg: exp.Expression, i: int, n: int) -> exp.Expression:
    return exp.Anonymous(this="__decimal_limb", expressions=[arg.copy(), exp.Literal.number(i), exp.Literal.number(n)])


def _from_limbs(columns: list[exp.Expression], scale: int) -> exp.Expression:
    return exp.Anonymous(this="__decimal_from_limbs", expressions=[*columns, exp.Literal.number(scale)])


def exact_sum(fn, out, arg_expr, arg_type: pa.DataType, fresh, pre: list, calls: list, fixes: dict) -> str:
    """Plan ``fn`` (``sum``/``sum_distinct``) of DECIMAL ``arg_expr`` into ``out``: the pre-projected
    column the caller's AggCall(out, fn, ...) sums (limb 0), with the other limbs' sums added to ``calls``
    and ``fixes[out]`` the expression of the DECIMAL(38, s) result."""
    scale = exp.Literal.number(arg_type.scale)
    if fn == "sum_distinct":  # distinct values, not distinct limbs: their unscaled BIGINTs
        phys = fresh("a")
        pre.append((phys, exp.Anonymous(this="__decimal_unscaled", expressions=[arg_expr.copy()])))
        fixes[out] = exp.Anonymous(this="__decimal_scaled", expressions=[_col(out), scale])
        return phys
    n = limb_count(arg_type.precision)
    limbs = []
    for i in range(n):
        phys = fresh("a")
        pre.append((phys, _limb(arg_expr, i, n)))
        limbs.append(phys)
    sums = [out]
    for phys in limbs[1:]:
        sums.append(fresh("g"))
        calls.append(AggCall(sums[-1], "sum", phys))
    fixes[out] = _from_limbs([_col(s) for s in sums], arg_type.scale)
    return limbs[0]


def window_sum(w: exp.Window, type_of) -> tuple[list[exp.Window], int | None]:
    """A window SUM of a DECIMAL as the window SUMs of its limbs, and the scale to put back (else
    ``[w]`` and None); a window AVG of a DECIMAL as the AVG of its DOUBLEs (DuckDB's is a DOUBLE)."""
    fn = w.this
    if not isinstance(fn, exp.Sum | exp.Avg) or fn.this is None or isinstance(fn.this, exp.Distinct | exp.Star):
        return [w], None
    t = type_of(fn.this)
    if t is None or not pa.types.is_decimal(t):
        return [w], None
    if isinstance(fn, exp.Avg):
        w = w.copy()
        w.this.set("this", exp.Cast(this=w.this.this, to=exp.DataType.build("DOUBLE")))
        return [w], None
    n = limb_count(t.precision)
    out = []
    for i in range(n):
        part = w.copy()
        part.this.set("this", _limb(part.this.this, i, n))
        out.append(part)
    return out, t.scale


def window_sum_result(columns: list[str], scale: int) -> exp.Expression:
    """The DECIMAL(38, scale) window SUM from its limbs' window SUM columns."""
    return _from_limbs([_col(c) for c in columns], scale)
