"""DECIMAL arithmetic over 64-bit unscaled integers: the fast way of :mod:`tidal.expr.sqldecimal`.

A DECIMAL(p, s) of at most 18 digits is an int64 ``v`` standing for ``v / 10**s``; an integer is one of
scale 0. ``+``/``-`` bring both to the larger scale and add, ``*`` multiplies (the scales add), each in
numpy int64, exact while every value stays within 2**62 (checked first, from the operands' largest
magnitudes; otherwise None: the caller's 256-bit way). The result is built as DECIMAL128 from those
integers directly, with no per-value conversion, after checking it fits the result type's width
(DuckDB's overflow error otherwise).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

_LIMIT = 2**62


def unscaled(v, n: int) -> tuple[np.ndarray, np.ndarray, int] | None:
    """(int64 unscaled values, null mask, scale) of an integer or DECIMAL (at most 18 digits) array or
    scalar broadcast to ``n`` rows; None for wider types."""
    t = v.type
    if isinstance(v, pa.Scalar):  # a 0-d value: numpy broadcasts it
        if not v.is_valid:
            return np.zeros((), np.int64), np.ones((), bool), getattr(t, "scale", 0)
        value = v.as_py()
        if pa.types.is_decimal(t):
            value = int(value.scaleb(t.scale))
        if not -_LIMIT < value < _LIMIT:
            return None
        return np.array(value, np.int64), np.zeros((), bool), getattr(t, "scale", 0)
    if isinstance(v, pa.ChunkedArray):
        v = v.combine_chunks()
    mask = np.asarray(v.is_null().to_numpy(zero_copy_only=False), bool) if v.null_count else np.zeros(len(v), bool)
    if pa.types.is_decimal128(t) and t.precision <= 18:
        words = np.frombuffer(v.buffers()[1], dtype=np.int64, count=2 * (len(v) + v.offset))
        values = words[2 * v.offset :: 2]  # the low 64 bits: the value itself below 10**18
        return (np.where(mask, 0, values) if v.null_count else values.copy()), mask, t.scale
    if pa.types.is_integer(t) and not pa.types.is_uint64(t):
        values = np.asarray(v.fill_null(0).to_numpy(zero_copy_only=False), np.int64)
        return values, mask, 0
    return None


def arithmetic(op: str, a, b, target: pa.DataType):
    """``a op b`` (``+ - *``) as DECIMAL ``target`` over int64 unscaled values, or None when an operand is
    wider than 18 digits or a value could leave int64 on the way."""
    n = len(a) if not isinstance(a, pa.Scalar) else len(b) if not isinstance(b, pa.Scalar) else 1
    ua, ub = unscaled(a, n), unscaled(b, n)
    if ua is None or ub is None or target.precision > 38:
        return None
    if ua[0].ndim == ub[0].ndim == 0:  # two constants: one row
        ua, ub = ((np.atleast_1d(v), np.atleast_1d(m), s) for v, m, s in (ua, ub))
    (x, xm, xs), (y, ym, ys) = ua, ub
    big = [float(np.max(np.abs(v.astype(np.float64)))) if v.size else 0.0 for v in (x, y)]  # int64 min: no wrap
    if op == "*":
        if big[0] * big[1] >= _LIMIT:
            return None
        out = x * y
    else:
        scale = max(xs, ys)
        fx, fy = 10 ** (scale - xs), 10 ** (scale - ys)
        if big[0] * fx >= _LIMIT or big[1] * fy >= _LIMIT:
            return None
        out = x * fx + y * fy if op == "+" else x * fx - y * fy
    mask = np.broadcast_to(xm | ym, out.shape)
    if target.precision < 19 and len(out) and np.max(np.abs(np.where(mask, 0, out))) >= 10**target.precision:
        raise pa.ArrowInvalid(
            f"Overflow in {op} of DECIMAL: the result does not fit in DECIMAL({target.precision},{target.scale})"
        )
    words = np.empty((len(out), 2), np.int64)
    words[:, 0] = out
    words[:, 1] = out >> 63  # the sign, extended to 128 bits
    validity = pa.array(~mask).buffers()[1] if mask.any() else None
    result = pa.Array.from_buffers(target, len(out), [validity, pa.py_buffer(words)], null_count=int(mask.sum()))
    scalar = isinstance(a, pa.Scalar) and isinstance(b, pa.Scalar)
    return result[0] if scalar else result
