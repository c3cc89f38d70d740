"""DuckDB's aggregates of a DECIMAL, planned over the engine's integer and DOUBLE aggregates.

* ``SUM(d)`` is DuckDB's exact DECIMAL(38, s) (a 128-bit sum): the unscaled values are summed in 32-bit
  limbs, each an ordinary BIGINT SUM, and put back together after (``tidal.expr.decimal_sum``); in a
  window (``SUM(d) OVER ...``) too. ``SUM(DISTINCT d)`` sums the distinct unscaled values as one BIGINT
  (a sum beyond 64 bits is the integer sum's error).
* ``median``/``quantile_cont`` of a DECIMAL(p, s) is a DECIMAL(p, s): DuckDB interpolates the unscaled
  values in floating point, ``lo + (hi - lo) * d``, and truncates toward zero (the median of 2.62 and 2.63
  is 2.62, of -2.62 and -2.63 -2.62). The engine's ``percentile_cont`` of the unscaled BIGINTs computes
  that same DOUBLE where it is exact (a fraction of few binary digits, as the median's 0.5, of at most 15
  digits: :func:`exact_fraction`); it is truncated and scaled back after. Other cases are refused by
  name: DuckDB's fused multiply-add rounds once where the engine rounds twice, and the truncation makes
  that last bit a whole unit (``quantile_cont(x, 0.3)`` of -404 and 271 is 0 in DuckDB, 1 computed twice
  rounded). ``quantile_disc`` picks a value: the engine's own, of any width.
* ``AVG(d)`` is DuckDB's DOUBLE of the exact sum over the count, divided as DuckDB 2.0 divides it: a
  grouped AVG in 80-bit floating point for more than 4 digits (``tidal.expr.decimal_sum.average``), a
  global one (no GROUP BY) as ``CAST(SUM(d) AS DOUBLE) / CAST(COUNT(d) AS DOUBLE)`` (DuckDB rewrites
  it so); ``AVG(DISTINCT d)``, a window AVG, ``VARIANCE`` and ``STDDEV`` of a DECIMAL are DOUBLEs of its
  DOUBLEs (select_list).
"""

from __future__ import annotations

import pyarrow as pa
from sqlglot import exp

from ...core.errors import PlanError
from ...expr.decimal_sum import limb_count
from .exprs import _col
from .nodes import AggCall


def _limb(arg: exp.Expression, i: int, n: int) -> exp.Expression:
    return exp.Anonymous(this="__decimal_limb", expressions=[arg.copy(), exp.Literal.number(i), exp.Literal.number(n)])


def _from_limbs(columns: list[exp.Expression], scale: int) -> exp.Expression:
    return exp.Anonymous(this="__decimal_from_limbs", expressions=[*columns, exp.Literal.number(scale)])


def exact_sum(fn, out, arg_expr, arg_type: pa.DataType, param, fresh, pre: list, calls: list, fixes: dict):
    """Plan ``fn`` (``sum``/``sum_distinct``) of DECIMAL ``arg_expr`` into ``out``: (the pre-projected
    column the caller's AggCall(out, fn, ...) sums (limb 0), ``fn``, ``param``), with the other limbs' sums added to
    ``calls`` and ``fixes[out]`` the expression of the DECIMAL(38, s) result."""
    scale = exp.Literal.number(arg_type.scale)
    if fn == "sum_distinct":  # distinct values, not distinct limbs: their unscaled BIGINTs
        phys = fresh("a")
        pre.append((phys, exp.Anonymous(this="__decimal_unscaled", expressions=[arg_expr.copy()])))
        fixes[out] = exp.Anonymous(this="__decimal_scaled", expressions=[_col(out), scale])
        return phys, fn, param
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
    return limbs[0], fn, param


def exact_average(fn, out, arg_expr, arg_type: pa.DataType, param, fresh, pre: list, calls: list, fixes: dict):
    """``AVG`` of DECIMAL ``arg_expr`` into ``out``: its exact sum's limbs (as :func:`exact_sum`) and a
    count of its values, ``fixes[out]`` DuckDB's DOUBLE quotient of the two (``param``: a global AVG)."""
    first, _, _ = exact_sum("sum", out, arg_expr, arg_type, None, fresh, pre, calls, fixes)
    count = fresh("g")
    calls.append(AggCall(count, "count_not_null", first))
    if param:
        double = exp.DataType.build("DOUBLE")
        quotient = exp.Div(this=exp.Cast(this=fixes[out], to=double), expression=exp.Cast(this=_col(count), to=double))
        fixes[out] = exp.Paren(this=quotient)
        return first, "sum", None
    width, scale = (exp.Literal.number(x) for x in (arg_type.precision, arg_type.scale))
    limbs = fixes[out].expressions[:-1]
    fixes[out] = exp.Anonymous(this="__decimal_average", expressions=[*limbs, _col(count), width, scale])
    return first, "sum", None


def interpolated(fn, out, arg_expr, arg_type: pa.DataType, param, fresh, pre: list, calls: list, fixes: dict) -> str:
    """``percentile_cont`` (median, quantile_cont) of DECIMAL ``arg_expr`` into ``out``, as DuckDB's: the
    pre-projected column of unscaled BIGINTs the caller's AggCall interpolates, ``fixes[out]`` its DOUBLE
    truncated toward zero into DECIMAL(p, s)."""
    if not exact_fraction(float(param), arg_type.precision):
        name = "median" if param == 0.5 else f"quantile_cont(x, {param})"
        raise PlanError(
            f"{name} of DECIMAL({arg_type.precision},{arg_type.scale}) is not supported: DuckDB interpolates it in "
            "floating point with a fused multiply-add, which tidal matches only for fractions of few binary digits "
            "(0.5, 0.25, 0.125...) of DECIMALs of at most 15 digits; cast it to DOUBLE"
        )
    phys = fresh("a")
    pre.append((phys, exp.Anonymous(this="__decimal_unscaled", expressions=[arg_expr.copy()])))
    width, scale = (exp.Literal.number(x) for x in (arg_type.precision, arg_type.scale))
    fixes[out] = exp.Anonymous(this="__decimal_truncated", expressions=[_col(out), width, scale])
    return phys, fn, param


def exact_fraction(q: float, precision: int) -> bool:
    """Whether every interpolation ``lo + (hi - lo) * d`` of unscaled values of ``precision`` digits at
    quantile ``q`` is exact in a DOUBLE (so that DuckDB's fused multiply-add and the engine's two roundings
    agree): ``q`` is ``k / 2**j`` (then so is each ``d``, the fraction of ``q * (n - 1)``) and the values
    times ``2**(j + 1)`` stay below ``2**53``."""
    for j in range(54):
        if (q * 2**j).is_integer():
            return 2 ** (j + 1) * 10**precision <= 2**53
    return False


DECIMAL_AGGREGATES = {
    "sum": exact_sum,
    "sum_distinct": exact_sum,
    "average": exact_average,
    "percentile_cont": interpolated,
}


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
