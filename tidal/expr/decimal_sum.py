"""SUM of a DECIMAL exact to 38 digits, as DuckDB's 128-bit sum, over the engine's 64-bit integer sums.

A DECIMAL(p, s) value is an unscaled integer below 10**p. Its sum is split into 32-bit *limbs*: a value
of at most 9 digits is one limb (itself), one of at most 18 digits two (``v & 0xFFFFFFFF`` and ``v >> 32``),
a wider one four (the 128-bit two's complement cut in four, the top limb signed). Each limb is summed as
an ordinary BIGINT aggregate (so every path that sums integers sums limbs: the relational grouping, the
engine's running sums and their retractions in sliding windows, window functions), and
:func:`from_limbs` puts the limb sums back together into the exact DECIMAL(38, s) sum, with carries.
A limb's sum stays within 64 bits for 2**31 rows of a group (beyond: the integer sum's overflow error,
never a wrong value). A total beyond 38 digits is DuckDB's overflow error. (Four limbs for a wide value
are summed as exactly as two: each limb's sum is exact, and the recombination is exact integer arithmetic.)
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

MAX_WIDTH = 38
_MASK = 0xFFFFFFFF
_TOP = 10**MAX_WIDTH >> 64  # a high word of magnitude below this is a value below 10**38


def limb_count(precision: int) -> int:
    """How many 32-bit limbs a DECIMAL of ``precision`` digits is summed as."""
    return 1 if precision <= 9 else 2 if precision <= 18 else 4


def _words(v: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(low, high) int64 words of a DECIMAL128 array's 128-bit unscaled values (0 where NULL)."""
    words = np.frombuffer(v.buffers()[1], dtype=np.int64, count=2 * (len(v) + v.offset))[2 * v.offset :]
    low, high = words[0::2], words[1::2]
    if v.null_count:
        valid = np.asarray(v.is_valid().to_numpy(zero_copy_only=False), bool)
        low, high = np.where(valid, low, 0), np.where(valid, high, 0)
    return low, high


def limb(ev, node):
    """``__decimal_limb(x, i, n)``: limb ``i`` of ``n`` of DECIMAL x's unscaled value, a BIGINT. The limbs
    of one argument are cut from its words read once per evaluator (``x`` is computed once, not per limb)."""
    i, n = node.params
    memo = ev.__dict__.setdefault("_decimal_words", {})
    key = (node.args[0], id(ev.columns), ev.n)
    if key not in memo:
        memo.clear()  # one argument's words at a time: its limbs are evaluated one after another
        v = ev.eval(node.args[0])
        if pa.types.is_null(v.type):
            memo[key] = v
        else:
            scalar = isinstance(v, pa.Scalar)
            v = pa.array([v.as_py()], v.type) if scalar else v
            memo[key] = (scalar, _words_of(v.combine_chunks() if isinstance(v, pa.ChunkedArray) else v))
    held = memo[key]
    if isinstance(held, (pa.Array, pa.Scalar, pa.ChunkedArray)):
        return pc.cast(held, pa.int64())
    scalar, words = held
    out = _limb(words, i, n)
    return out[0] if scalar else out


def limb_of(v: pa.Array, i: int, n: int) -> pa.Array:
    """Limb ``i`` of ``n`` (see :func:`limb_count`) of each value of DECIMAL128 array ``v``."""
    return _limb(_words_of(v), i, n)


def _words_of(v: pa.Array):
    if v.type.bit_width != 128:
        v = pc.cast(v, pa.decimal128(min(v.type.precision, MAX_WIDTH), v.type.scale))  # DECIMAL256 of <= 38 digits
    low, high = _words(v)
    mask = v.is_null().to_numpy(zero_copy_only=False) if v.null_count else None
    return low, high, mask


def _limb(words, i: int, n: int) -> pa.Array:
    low, high, mask = words
    if n == 1:
        out = low.copy()
    elif n == 2:
        out = low & _MASK if i == 0 else low >> 32
    else:
        word = low if i < 2 else high
        out = word & _MASK if i % 2 == 0 else (word >> 32) & _MASK if i == 1 else word >> 32
    return pa.array(out, pa.int64(), mask=mask)


def from_limbs(ev, node):
    """``__decimal_from_limbs(l0, ..., scale)``: limb sums put back into DECIMAL(38, scale); an error beyond
    38 digits (DuckDB's overflow of SUM)."""
    values = [ev.eval(a) for a in node.args]
    target = pa.decimal128(MAX_WIDTH, node.params[0])
    if any(pa.types.is_null(v.type) for v in values):
        return pc.cast(values[0], target) if pa.types.is_null(values[0].type) else pa.nulls(len(values[0]), target)
    scalar = isinstance(values[0], pa.Scalar)
    arrays = [pa.array([v.as_py()], pa.int64()) if isinstance(v, pa.Scalar) else v for v in values]
    arrays = [a.combine_chunks() if isinstance(a, pa.ChunkedArray) else a for a in arrays]
    out = combine(arrays, target)
    return out[0] if scalar else out


def combine(limb_sums: list[pa.Array], target: pa.DataType, within_width: bool = True) -> pa.Array:
    """The exact sums whose 32-bit limbs summed to ``limb_sums`` (int64 arrays), as DECIMAL ``target``;
    without ``within_width``, any 128-bit sum (an AVG's: DuckDB checks 128 bits there, not 38 digits)."""
    n = len(limb_sums[0])
    nulls = np.zeros(n, bool)
    for a in limb_sums:
        if a.null_count:
            nulls |= np.asarray(a.is_null().to_numpy(zero_copy_only=False), bool)
    sums = [np.where(nulls, 0, np.asarray(a.fill_null(0).to_numpy(zero_copy_only=False), np.int64)) for a in limb_sums]
    # carries, in int64 while every limb sum is within (-2**62, 2**62) (a limb's sum reaches that past 2**30 rows
    # of a group): otherwise each such row in Python's integers (both bounds compared: np.abs(-2**63) wraps)
    far = np.zeros(n, bool)
    for s in sums:
        far |= (s >= 2**62) | (s <= -(2**62))
    digits = []
    carry = np.zeros(n, np.int64)
    for s in sums[:-1]:
        x = np.where(far, 0, s) + carry
        digits.append(x & _MASK)
        carry = x >> 32
    top = np.where(far, 0, sums[-1]) + carry
    if len(sums) == 1:
        low, high = top, top >> 63
    elif len(sums) == 2:
        low, high = (top << 32) | digits[0], top >> 32
    else:
        far |= (top < -(2**31)) | (top >= 2**31)  # beyond 128 bits: checked (and refused) below
        low, high = digits[0] | (digits[1] << 32), digits[2] | (top << 32)
    far |= ~nulls & ((high >= _TOP) | (high < -_TOP))  # possibly 38 digits or more: checked exactly
    low, high = low.copy(), high.copy()
    for r in np.flatnonzero(far & ~nulls):
        total = sum(int(s[r]) << (32 * k) for k, s in enumerate(sums))
        if not within_width and not -(2**127) <= total < 2**127:
            raise pa.ArrowInvalid("Overflow in HUGEINT addition: the sum of an AVG of DECIMAL is beyond 128 bits")
        if within_width and abs(total) >= 10**target.precision:
            raise pa.ArrowInvalid(
                f"Overflow in SUM of DECIMAL: the result does not fit in DECIMAL({target.precision},{target.scale})"
            )
        bits = total & (2**128 - 1)
        low[r] = np.uint64(bits & (2**64 - 1)).view(np.int64)
        high[r] = np.uint64(bits >> 64).view(np.int64)
    words = np.empty((n, 2), np.int64)
    words[:, 0], words[:, 1] = low, high
    validity = pa.array(~nulls).buffers()[1] if nulls.any() else None
    return pa.Array.from_buffers(target, n, [validity, pa.py_buffer(words)], null_count=int(nulls.sum()))


def truncated(ev, node):
    """``__decimal_truncated(x, p, s)``: a DOUBLE of unscaled values truncated toward zero, as DECIMAL(p, s)
    (DuckDB's interpolated DECIMAL quantile)."""
    v = ev.eval(node.args[0])
    target = pa.decimal128(*node.params)
    if pa.types.is_null(v.type):
        return pc.cast(v, target)
    if isinstance(v, pa.Scalar):
        return truncated_of(pa.array([v.as_py()], pa.float64()), target)[0]
    return truncated_of(v.combine_chunks() if isinstance(v, pa.ChunkedArray) else v, target)


def truncated_of(v: pa.Array, target: pa.DataType) -> pa.Array:
    values = np.asarray(v.fill_null(0.0).to_numpy(zero_copy_only=False), np.float64)
    whole = np.trunc(values).astype(np.int64)
    words = np.empty((len(v), 2), np.int64)
    words[:, 0], words[:, 1] = whole, whole >> 63
    validity = pa.array(v.is_valid().to_numpy(zero_copy_only=False)).buffers()[1] if v.null_count else None
    return pa.Array.from_buffers(target, len(v), [validity, pa.py_buffer(words)], null_count=v.null_count)


def average(ev, node):
    """``__decimal_average(l0, ..., count, p, s)``: DuckDB's AVG of a DECIMAL(p, s), a DOUBLE, from the limb
    sums of its values and their count (NULL for none)."""
    values = [ev.eval(a) for a in node.args]
    precision, scale = node.params
    scalar = isinstance(values[0], pa.Scalar)
    if any(pa.types.is_null(v.type) for v in values):
        return pa.scalar(None, pa.float64()) if scalar else pa.nulls(len(values[0]), pa.float64())
    arrays = [pa.array([v.as_py()], pa.int64()) if isinstance(v, pa.Scalar) else v for v in values]
    arrays = [a.combine_chunks() if isinstance(a, pa.ChunkedArray) else a for a in arrays]
    out = average_of(arrays[:-1], arrays[-1], precision, scale)
    return out[0] if scalar else out


def average_of(limb_sums: list[pa.Array], counts: pa.Array, precision: int, scale: int) -> pa.Array:
    """The quotient of the exact sums (from ``limb_sums``) by ``counts``, rounded as DuckDB rounds it: a
    DECIMAL of at most 4 digits sums into a 64-bit integer divided in DOUBLE; a wider one into a 128-bit
    integer, rounded to an 80-bit ``long double``, divided by the count times ``10**s`` in ``long double``
    and rounded again to DOUBLE (numpy's ``longdouble`` is that type on x86-64 Linux)."""
    sums = combine(limb_sums, pa.decimal128(MAX_WIDTH, scale), within_width=False)
    low, high = _words(sums)
    n = np.asarray(counts.fill_null(0).to_numpy(zero_copy_only=False), np.int64)
    empty = n == 0
    n = np.where(empty, 1, n)  # no values: NULL (below), not a division by zero
    if precision <= 4:
        result = low.astype(np.float64) / (n.astype(np.float64) * float(10**scale))
    else:
        wide = np.longdouble
        total = low.view(np.uint64).astype(wide) + high.astype(wide) * wide(2.0**64)
        # DuckDB's cast of a 128-bit integer whose high word is -1 avoids a rounding in the sum above
        small = high == -1
        total[small] = -(np.uint64(2**64 - 1) - low[small].view(np.uint64)).astype(wide) - 1
        result = (total / (n.astype(wide) * wide(float(10**scale)))).astype(np.float64)
    return pa.array(np.where(empty, 0.0, result), pa.float64(), mask=empty | ~np.asarray(sums.is_valid(), bool))


FUNCS = {
    "decimal_limb": limb,
    "decimal_from_limbs": from_limbs,
    "decimal_truncated": truncated,
    "decimal_average": average,
}
