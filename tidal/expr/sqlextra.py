"""DuckDB's ``isinf``, ``isfinite``, ``lpad``/``rpad``, ``make_date``, ``to_timestamp`` (epoch seconds)
and ``md5``, as the kernels of :mod:`tidal.expr.sqlkernels` take them (the evaluator and the
:class:`~tidal.expr.nodes.SqlCall` node). NULL in, NULL out; errors name the expression.

* ``isinf(x)``/``isfinite(x)``: numbers (integers are finite), dates and timestamps (finite here:
  Arrow has no infinite time).
* ``lpad(s, n, fill)``/``rpad``: ``s`` cut to ``n`` code points, or filled on the left/right with
  ``fill`` repeated up to ``n``; ``n <= 0`` gives ''; an empty ``fill`` that must pad is DuckDB's error.
* ``make_date(y, m, d)``: the proleptic Gregorian date (year 0 is 1 BC); a day that does not exist
  or lies outside DuckDB's range (``-5877641-06-25`` to ``5881580-07-10``) is an error.
* ``to_timestamp(s)``: ``TIMESTAMP WITH TIME ZONE`` (UTC) of ``s`` seconds since 1970, the
  microseconds rounded to nearest even as DuckDB's cast does; NaN, infinities and values beyond
  int64 microseconds are DuckDB's error.
* ``md5(s)``: the lowercase hex MD5 of the string's UTF-8 bytes (strings only, as in DuckDB).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .sqlstrings import SqlTypeError, _text


def _finite_test(finite: bool):
    def run(ev, node):
        x = ev.array(node.args[0])
        t = x.type
        if pa.types.is_floating(t):
            ok = pc.is_finite(x)
            return ok if finite else pc.is_inf(x)
        if pa.types.is_integer(t) or pa.types.is_decimal(t) or pa.types.is_null(t):
            return pc.if_else(pc.is_null(x), pa.scalar(None, pa.bool_()), finite)
        if pa.types.is_timestamp(t) or pa.types.is_date(t):
            return pc.if_else(pc.is_null(x), pa.scalar(None, pa.bool_()), finite)
        name = "isfinite" if finite else "isinf"
        raise SqlTypeError(f"{ev.sql(node)}: {name} takes a number, a date or a timestamp, not {t}")

    return run


def _int_args(ev, node, what: str) -> tuple[np.ndarray, np.ndarray]:
    """An integer argument's int64 values (nulls as 0) and validity."""
    x = ev.array(node)
    if pa.types.is_null(x.type):
        return np.zeros(len(x), np.int64), np.zeros(len(x), bool)
    if not pa.types.is_integer(x.type) or x.type == pa.uint64():
        raise SqlTypeError(f"{ev.sql(node)}: the {what} must be an integer, not {x.type}")
    ok = np.asarray(x.is_valid().to_numpy(zero_copy_only=False), bool)
    return np.asarray(x.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False), np.int64), ok


def _pad(left: bool):
    def run(ev, node):
        s = _text(ev, node.args[0])
        n, n_ok = _int_args(ev, node.args[1], "length")
        fill = _text(ev, node.args[2])
        out = []
        for value, count, ok, f in zip(s.to_pylist(), n.tolist(), n_ok.tolist(), fill.to_pylist(), strict=True):
            if value is None or not ok or f is None:
                out.append(None)
                continue
            if count <= len(value):
                out.append(value[: max(count, 0)])
                continue
            if not f:
                raise SqlTypeError(f"{ev.sql(node)}: insufficient padding in {'LPAD' if left else 'RPAD'}")
            need = count - len(value)
            if need > 1 << 30:
                raise SqlTypeError(f"{ev.sql(node)}: padding to {count} characters is not supported (at most 2**30)")
            pad = (f * (need // len(f) + 1))[:need]
            out.append(pad + value if left else value + pad)
        return pa.array(out, pa.string())

    return run


_MIN_DATE = (-5877641, 6, 25)
_MAX_DATE = (5881580, 7, 10)


def _days_from_civil(y: np.ndarray, m: np.ndarray, d: np.ndarray) -> np.ndarray:
    """Days since 1970-01-01 of proleptic Gregorian dates (H. Hinnant's algorithm), in int64."""
    y = y - (m <= 2)
    era = np.floor_divide(y, 400)
    yoe = y - era * 400
    mp = (m + 9) % 12
    doy = (153 * mp + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def _make_date(ev, node):
    (y, y_ok), (m, m_ok), (d, d_ok) = (
        _int_args(ev, a, what) for a, what in zip(node.args, ("year", "month", "day"), strict=True)
    )
    ok = y_ok & m_ok & d_ok
    leap = (y % 4 == 0) & ((y % 100 != 0) | (y % 400 == 0))
    month_days = np.array([31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31], np.int64)
    valid_month = (m >= 1) & (m <= 12)
    last = np.where(valid_month, month_days[np.clip(m - 1, 0, 11)] + ((m == 2) & leap), 0)
    ymd = np.stack([y, m, d], axis=1) if len(y) else np.zeros((0, 3), np.int64)
    in_range = np.array([_MIN_DATE <= tuple(r) <= _MAX_DATE for r in ymd.tolist()], bool)
    bad = ok & ~(valid_month & (d >= 1) & (d <= last) & in_range)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise SqlTypeError(f"{ev.sql(node)}: date out of range: {y[i]}-{m[i]}-{d[i]}")
    days = np.where(ok, _days_from_civil(y, np.where(ok, m, 1), d), 0)
    return pa.array(days.astype(np.int32), pa.date32(), mask=~ok)


def _to_timestamp(ev, node):
    x = ev.array(node.args[0])
    if pa.types.is_null(x.type):
        return pa.nulls(len(x), pa.timestamp("us", "UTC"))
    if not (pa.types.is_integer(x.type) or pa.types.is_floating(x.type) or pa.types.is_decimal(x.type)):
        raise SqlTypeError(f"{ev.sql(node)}: to_timestamp takes seconds as a number, not {x.type}")
    ok = np.asarray(x.is_valid().to_numpy(zero_copy_only=False), bool)
    seconds = np.asarray(x.cast(pa.float64()).fill_null(0.0).to_numpy(zero_copy_only=False), np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        micros = np.rint(seconds * 1e6)  # DuckDB: seconds * 10**6 as DOUBLE, cast to BIGINT (nearest, ties even)
        bad = ok & ~((micros > -(2.0**63)) & (micros < 2.0**63))  # NaN and infinities fail both
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise SqlTypeError(f"{ev.sql(node)}: epoch seconds out of range for TIMESTAMP WITH TIME ZONE: {seconds[i]}")
    values = np.where(ok, micros, 0).astype(np.int64)
    return pa.array(values, pa.timestamp("us", "UTC"), mask=~ok)


def _md5(ev, node):
    import hashlib  # (imported when used: it loads OpenSSL, 2-3 ms of every command's start-up)

    s = _text(ev, node.args[0])
    encoded = pc.dictionary_encode(s)
    digests = [hashlib.md5(v.encode()).hexdigest() for v in encoded.dictionary.to_pylist()]
    return pa.array(digests, pa.string()).take(encoded.indices)


FUNCS = {
    "isinf": _finite_test(False),
    "isfinite": _finite_test(True),
    "lpad": _pad(True),
    "rpad": _pad(False),
    "make_date": _make_date,
    "to_timestamp": _to_timestamp,
    "md5": _md5,
}
