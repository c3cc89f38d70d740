"""More SQL functions (DuckDB's): string positions and parts, ``translate``, ``ascii``, logarithms,
``IS [NOT] DISTINCT FROM``, ``LIKE ... ESCAPE`` and casts of text to ``TIMESTAMP``/``DATE``.

Each takes the evaluator and its :class:`~tidal.expr.nodes.SqlCall` node, as the kernels of
:mod:`tidal.expr.sqlkernels` do; constant arguments are the node's parameters (``None``: NULL).
"""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .sqlstrings import SqlTypeError, _ints, _literal, _text, _valid, check_substring_range, text_beside_time
from .sqltime import refuse_time_text


def _numeric(t) -> bool:
    return pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t)


def _temporal(t) -> bool:
    return pa.types.is_timestamp(t) or pa.types.is_date(t)


def _align(a, b):
    """Implicit casts SQL makes in comparisons and arithmetic: a string literal next to a time."""
    ta, tb = a.type, b.type
    if _temporal(ta) and pa.types.is_string(tb):
        return a, cast_to(text_beside_time(b, ta), ta if pa.types.is_timestamp(ta) else pa.date32())
    if _temporal(tb) and pa.types.is_string(ta):
        return cast_to(text_beside_time(a, tb), tb if pa.types.is_timestamp(tb) else pa.date32()), b
    if pa.types.is_timestamp(ta) and pa.types.is_date(tb):
        return a, cast_to(b, ta)
    if pa.types.is_date(ta) and pa.types.is_timestamp(tb):
        return cast_to(a, tb), b
    if pa.types.is_null(ta) and not pa.types.is_null(tb):
        return cast_to(a, tb), b
    if pa.types.is_null(tb) and not pa.types.is_null(ta):
        return a, cast_to(b, ta)
    if pa.types.is_null(ta) and pa.types.is_null(tb):  # NULL op NULL: DuckDB's NULL casts to (BIG)INT
        return cast_to(a, pa.int64()), cast_to(b, pa.int64())
    if pa.types.is_floating(ta) != pa.types.is_floating(tb) and _numeric(ta) and _numeric(tb):  # ints beyond 2**53
        return (a, cast_to(b, ta)) if pa.types.is_floating(ta) else (cast_to(a, tb), b)
    return a, b


def cast_to(v, target: pa.DataType, safe=None):
    """``pc.cast``, but an integer (or decimal) becomes floating point as SQL converts it: rounded to the
    nearest DOUBLE. Arrow's checked cast refuses integers beyond 2**53, and its compute functions cast
    implicitly that way, so integers meet reals only after this."""
    if pa.types.is_floating(target) and pa.types.is_decimal(v.type):
        return decimal_to_float(v, target)
    if pa.types.is_floating(target) and pa.types.is_integer(v.type):
        return pc.cast(v, target, safe=False)
    if (
        pa.types.is_decimal(target)
        and (_numeric(v.type) or pa.types.is_boolean(v.type))
        and not pa.types.is_floating(v.type)
    ):
        from .sqldecimal import cast_decimal  # rounded half away from zero where the scale drops (DuckDB's)

        return cast_decimal(v, target, "CAST")
    return pc.cast(v, target, safe=safe)


def decimal_to_float(v, target: pa.DataType):
    """A DECIMAL as the nearest DOUBLE (a FLOAT: that DOUBLE's nearest), as DuckDB casts it; Arrow's cast
    is an ulp off for about one value in six (1.005 became 1.0050000000000001). An unscaled value
    within 2**53 over 10**scale is one correctly rounded division; wider ones go through Python's."""
    scalar = isinstance(v, pa.Scalar)
    arr = pa.array([v.as_py()], v.type) if scalar else v
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    s = v.type.scale
    if v.type.precision <= 18 and s <= 22:  # the unscaled values are int64s: the low halves of Arrow's
        words = np.frombuffer(arr.buffers()[1], np.int64, 2 * len(arr), 16 * arr.offset)
        n = words[0::2].copy() if arr.null_count == 0 else np.where(np.asarray(arr.is_valid()), words[0::2], 0)
        out = n.astype(np.float64) / 10.0**s
        wide = np.flatnonzero(np.abs(n) > 2**53)
    else:
        out, wide = np.zeros(len(arr)), np.arange(len(arr))
    for k in wide.tolist():
        d = arr[k].as_py()
        out[k] = 0.0 if d is None else float(d)
    res = pa.array(out, mask=np.asarray(arr.is_null()) if arr.null_count else None)
    res = res.cast(target) if res.type != target else res
    return res[0] if scalar else res


# the text DuckDB casts to a TIMESTAMP: YYYY-MM-DD[( |T)HH:MM[:SS[.fraction]]]
_TIMESTAMP_TEXT = r"^\s*\d{4}-\d{1,2}-\d{1,2}([ T]\d{1,2}:\d{2}(:\d{2}(\.\d{1,9})?)?)?\s*$"


def text_to_time(v, target: pa.DataType, text: str):
    """A string cast to a timestamp or a date (DuckDB: a date's text may carry a time, dropped);
    text in another form (a zone offset, a bare hour) is an error, not a guess."""
    trimmed = pc.utf8_trim_whitespace(v)  # DuckDB reads ' 2001-02-28 ' as a date
    blanks = pc.fill_null(pc.not_equal(trimmed, v), False)
    if pa.types.is_timestamp(target) and (blanks.as_py() if isinstance(blanks, pa.Scalar) else pc.any(blanks).as_py()):
        changed = v if isinstance(v, pa.Scalar) else pc.filter(v, blanks)[0]
        refuse_time_text(changed.as_py().strip(), text, shaped=None)
    v = trimmed
    bad = pc.invert(pc.fill_null(pc.match_substring_regex(v, _TIMESTAMP_TEXT), True))
    if isinstance(v, pa.Scalar) and bad.as_py() or not isinstance(v, pa.Scalar) and pc.any(bad).as_py():
        example = v if isinstance(v, pa.Scalar) else pc.filter(v, bad)[0]
        refuse_time_text(example.as_py(), text)
        raise SqlTypeError(f"cannot evaluate {text}: {example} is not a timestamp (YYYY-MM-DD[ HH:MM[:SS[.US]]])")
    try:
        stamp = pc.cast(v, pa.timestamp("us"))
    except pa.ArrowInvalid:
        for example in [v] if isinstance(v, pa.Scalar) else v:
            refuse_time_text(example.as_py(), text, shaped=True)
        raise
    if pa.types.is_timestamp(target):  # TIMESTAMPTZ: the text's time in UTC, DuckDB's default TimeZone
        return stamp if target.tz is None else pc.cast(stamp, target)
    return pc.cast(pc.floor_temporal(stamp, unit="day"), pa.date32())


def time_to_text(v):
    """A timestamp's text as DuckDB writes it: seconds always, a fraction without trailing zeros."""
    us = pc.cast(pc.microsecond(v), pa.int64())
    whole = pc.add(pc.multiply(pc.cast(pc.millisecond(v), pa.int64()), 1000), us)
    fraction = pc.utf8_rtrim(pc.utf8_lpad(pc.cast(whole, pa.string()), 6, "0"), "0")
    text = pc.strftime(pc.cast(pc.floor_temporal(v, unit="second"), pa.timestamp("s")), "%Y-%m-%d %H:%M:%S")
    dotted = pc.binary_join_element_wise(text, fraction, ".")
    return pc.if_else(pc.equal(whole, 0), text, dotted)


def _distinct(ev, node):
    """``a IS [NOT] DISTINCT FROM b``: equality where two NULLs are equal, never NULL itself."""
    a, b = ev.eval(node.args[0]), ev.eval(node.args[1])
    eq = ev.compare("==", a, b)
    na, nb = pc.is_null(a), pc.is_null(b)
    same = pc.if_else(pc.and_(na, nb), True, pc.if_else(pc.or_(na, nb), False, eq))
    return pc.invert(same) if node.params[0] else same


def _like_regex(pattern: str, escape: str, ignore_case: bool, text: str) -> str:
    if len(escape) > 1:
        raise SqlTypeError(f"{text}: the escape string must be empty or one character")
    body, i = [], 0
    while i < len(pattern):
        c = pattern[i]
        if escape and c == escape:
            if i + 1 == len(pattern):
                raise SqlTypeError(f"{text}: a LIKE pattern must not end with its escape character")
            body.append(_literal(pattern[i + 1], "l"))
            i += 2
            continue
        body.append({"%": ".*", "_": "."}.get(c) or _literal(c, "l"))
        i += 1
    return f"(?s{'i' if ignore_case else ''})^{''.join(body)}$"


def _like_escape(ev, node):
    pattern, escape, ignore_case = node.params
    v = ev.eval(node.args[0])
    v = pc.cast(v, pa.string()) if pa.types.is_null(v.type) else v
    if pattern is None or escape is None:
        return pa.scalar(None, pa.bool_())
    return pc.match_substring_regex(v, _like_regex(pattern, escape, ignore_case, ev.sql(node)))


def _strpos(ev, node):
    """``strpos(s, t)``: the 1-based character position of ``t``'s first occurrence in ``s``, 0 if none."""
    (sub,) = node.params
    v = _text(ev, node.args[0])
    if sub is None:
        return pa.nulls(len(v), pa.int64())
    if sub == "":
        return pc.if_else(pc.is_null(v), pa.scalar(None, pa.int64()), pa.scalar(1, pa.int64()))
    parts = pc.split_pattern(v, sub, max_splits=1)
    found = pc.equal(pc.list_value_length(parts), 2)
    before = pc.cast(pc.utf8_length(pc.list_element(parts, 0)), pa.int64())
    return pc.if_else(found, pc.add(before, 1), pa.scalar(0, pa.int64()))


def _split_part(ev, node):
    """``split_part(s, delimiter, k)``: the k-th part (from the end when negative), '' when none;
    an empty delimiter splits into characters (DuckDB's)."""
    delim, k = node.params
    v = _text(ev, node.args[0])
    if delim is None or k is None:
        return pa.nulls(len(v), pa.string())
    if delim == "":
        if k == 0:
            part = pc.utf8_slice_codeunits(v, 0, 0)
        else:
            part = pc.utf8_slice_codeunits(v, k - 1, k) if k > 0 else pc.utf8_slice_codeunits(v, k, k + 1 or 2**40)
        return part
    lists = pc.split_pattern(v, delim)
    offsets = np.asarray(lists.offsets.to_numpy(zero_copy_only=False), np.int64)
    counts = offsets[1:] - offsets[:-1]
    ok = (counts >= abs(k)) & (k != 0) & np.asarray(v.is_valid().to_numpy(zero_copy_only=False), bool)
    at = offsets[:-1] + (k - 1) if k > 0 else offsets[1:] + k
    values = lists.values
    taken = values.take(pa.array(np.where(ok, at, 0))) if len(values) else pa.nulls(len(v), pa.string())
    out = pc.if_else(pa.array(ok), taken, pa.scalar("", pa.string()))
    return pc.if_else(pc.is_null(v), pa.scalar(None, pa.string()), out)


def _by_value(ev, node, f, result: pa.DataType):
    """``f`` of each distinct string value (a dictionary's), taken back to the rows."""
    v = _text(ev, node.args[0])
    if any(p is None for p in node.params):
        return pa.nulls(len(v), result)
    encoded = pc.dictionary_encode(v)
    mapped = pa.array([f(s, *node.params) for s in encoded.dictionary.to_pylist()], result)
    return mapped.take(encoded.indices)


def _translated(s: str, source: str, target: str) -> str:
    table: dict[int, str | None] = {}
    for i, c in enumerate(source):
        table.setdefault(ord(c), target[i] if i < len(target) else None)  # the first mapping wins
    return s.translate(table)


def _log(ev, node):
    """``log(b, x)``/``log2``/``log10``: DuckDB's (0 gives -inf, a negative number NaN)."""
    base, x = (cast_to(ev.eval(a), pa.float64()) for a in node.args)
    if isinstance(base, pa.Scalar) and base.is_valid and base.as_py() in (2.0, 10.0):
        return (pc.log2 if base.as_py() == 2.0 else pc.log10)(x)
    return pc.logb(x, base)


def _cut(size: int, offset: int, length: int) -> tuple[int, int]:
    """``substring``'s [start, end) over ``size`` units (the rule of :func:`tidal.expr.sqlstrings.substring`):
    a 1-based ``offset`` (negative: from the end; 0: one before the first), ``length`` units on
    (negative: backwards), clamped to the string."""
    begin = offset - 1 if offset > 0 else (size + offset if offset < 0 else -1)
    a, b = sorted((begin, begin + length))
    return max(0, min(a, size)), max(0, min(b, size))


def _clusters(s: str) -> list[str]:
    import regex

    return regex.findall(r"\X", s)


def _grapheme_count(s: str) -> int:
    return len(s) if s.isascii() else len(_clusters(s))


def reverse_text(v):
    """DuckDB's ``reverse``: by grapheme clusters (an accent stays on its letter, an emoji with its
    modifier), bytes when the text is ASCII."""
    if isinstance(v, pa.Scalar):
        return pa.scalar(None if v.as_py() is None else _reversed(v.as_py()), pa.string())
    if pc.all(pc.string_is_ascii(v)).as_py() is not False:
        return pc.utf8_reverse(v)
    encoded = pc.dictionary_encode(v)
    return pa.array([_reversed(s) for s in encoded.dictionary.to_pylist()], pa.string()).take(encoded.indices)


def _reversed(s: str) -> str:
    return s[::-1] if s.isascii() else "".join(reversed(_clusters(s)))


def _substring_grapheme(s: str, offset: int, length: int) -> str:
    """DuckDB's ``substring_grapheme``: when the bytes up to one past the cut are ASCII the cut is by
    characters (so a CR LF there is two), otherwise by grapheme clusters."""
    data = s.encode()
    start, end = _cut(len(data), offset, length)
    if data[: min(end + 1, len(data))].isascii():
        return data[start:end].decode()
    clusters = _clusters(s)
    start, end = _cut(len(clusters), offset, length)
    return "".join(clusters[start:end])


def _left_grapheme(s: str, k: int) -> str:
    if k < 0:
        k = max(0, _grapheme_count(s) + k)
    return _substring_grapheme(s, 1, k)


def _right_grapheme(s: str, k: int) -> str:
    n = _grapheme_count(s)
    size = min(n, k) if k >= 0 else n - min(n, -k)
    return _substring_grapheme(s, n - size + 1, size)


def _grapheme(kind: str):
    """``left_grapheme``/``right_grapheme``/``substring_grapheme``: ``left``/``right``/``substring``
    counting grapheme clusters (Unicode's extended grapheme clusters, UAX #29, found by the ``regex``
    package), with DuckDB's ASCII shortcut (see :func:`_substring_grapheme`)."""

    def run(ev, node):
        v = _text(ev, node.args[0])
        k, ok = _ints(ev, node.args[1], v, "length" if kind != "substring" else "start position")
        if kind == "substring":
            check_substring_range(ev, node, k, ok, "offset")
        ok = ok & _valid(v)
        n = None
        if kind == "substring" and len(node.args) > 2:
            n, ok2 = _ints(ev, node.args[2], v, "length")
            check_substring_range(ev, node, n, ok2, "length")
            ok = ok & ok2
        out = []
        for i, s in enumerate(v.to_pylist()):
            if not ok[i]:
                out.append(None)
            elif kind == "left":
                out.append(_left_grapheme(s, int(k[i])))
            elif kind == "right":
                out.append(_right_grapheme(s, int(k[i])))
            else:
                out.append(_substring_grapheme(s, int(k[i]), int(n[i]) if n is not None else 2**32 - 1))
        return pa.array(out, pa.string())

    return run


def _pack(ev, node):
    """The arguments as one struct column (fields ``f0``, ``f1``...): an ordered aggregate's keys and value."""
    arrays = [ev.array(a) for a in node.args]
    return pa.StructArray.from_arrays(arrays, names=[f"f{i}" for i in range(len(arrays))])


def _isnan(ev, node):
    """``isnan(x)``: NULL for NULL, false for a number that is not a float's NaN."""
    x = ev.array(node.args[0])
    if pa.types.is_floating(x.type):
        return pc.is_nan(x)
    if pa.types.is_integer(x.type) or pa.types.is_null(x.type) or pa.types.is_decimal(x.type):
        return pc.if_else(pc.is_null(x), pa.scalar(None, pa.bool_()), False)
    raise SqlTypeError(f"{ev.sql(node)}: isnan takes a number, not {x.type}")


def _nan_guard(ev, node):
    """The argument, or an error naming the aggregate when a NaN comes (see select_list)."""
    x = ev.array(node.args[0])
    if pa.types.is_floating(x.type) and pc.any(pc.is_nan(x)).as_py():
        raise SqlTypeError(f"{node.params[0]}: a NaN among its values is not supported (DuckDB orders NaN last)")
    return x


def _one_row(ev, node):
    """A correlated scalar subquery's value, or DuckDB's error when an outer row got more than one
    row from it (the first argument counts them per outer row; see logical/correlated.py)."""
    n = ev.array(node.args[0])
    if len(n) and (pc.max(n).as_py() or 0) > 1:
        raise SqlTypeError(
            "More than one row returned by a subquery used as an expression - scalar subqueries can only "
            "return a single row"
        )
    return ev.eval(node.args[1])


FUNCS = {
    "isnan": _isnan,
    "one_row": _one_row,
    "nan_guard": _nan_guard,
    "pack": _pack,
    "left_grapheme": _grapheme("left"),
    "right_grapheme": _grapheme("right"),
    "substring_grapheme": _grapheme("substring"),
    "distinct": _distinct,
    "like_escape": _like_escape,
    "strpos": _strpos,
    "split_part": _split_part,
    "translate": lambda ev, node: _by_value(ev, node, _translated, pa.string()),
    "ascii": lambda ev, node: _by_value(ev, node, lambda s: ord(s[0]) if s else 0, pa.int32()),
    "log": _log,
}


# -- numbers and their text (used by sqlkernels' evaluator) ---------------------------------------
def float_text(v):
    """Floats as DuckDB prints them: the shortest text that reads back the same (3.0, 1e+20, inf)."""
    single = pa.types.is_float32(v.type)
    if isinstance(v, pa.Scalar):
        return pa.scalar(_float_repr(v.as_py(), single) if v.is_valid else None, pa.string())
    return pa.array([None if x is None else _float_repr(x, single) for x in v.to_pylist()], pa.string())


def _float_repr(value: float, single: bool) -> str:
    if single:  # a REAL's shortest digits, laid out as a DOUBLE's are
        value = float(np.format_float_scientific(np.float32(value), unique=True))
    return repr(value)


def as_text(v):
    """A value as VARCHAR, as DuckDB's implicit cast makes it (for ``||`` and concat)."""
    if pa.types.is_floating(v.type):
        return float_text(v)
    if pa.types.is_timestamp(v.type) and v.type.tz is None:
        return time_to_text(v)
    return pc.cast(v, pa.string())


def decimal_rounded(v, digits: int, mode: str):
    """A DECIMAL(p, s) rounded to ``digits`` places (``mode``: Arrow's round mode) as DuckDB's ROUND, FLOOR and
    CEIL: a DECIMAL(p, min(s, max(digits, 0))). Rounded in one more digit of width: Arrow's rounding in place
    gives 0 for a value that grows out of its width (99999.99 -> 100000.00 in DECIMAL(7,2)) when the
    array holds a NULL; the cast back is checked (an error, never a wrong value)."""
    t = v.type
    wide = pa.decimal128(t.precision + 1, t.scale) if t.precision < 38 else pa.decimal256(t.precision + 1, t.scale)
    rounded = pc.round(pc.cast(v, wide), ndigits=digits, round_mode=mode)
    return pc.cast(rounded, pa.decimal128(t.precision, max(0, min(digits, t.scale))))


def floor_ceil(func: str):
    """SQL's FLOOR or CEIL (DECIMAL: :func:`decimal_rounded`)."""
    mode, arrow = ("down", pc.floor) if func == "floor" else ("up", pc.ceil)

    def run(v):
        if pa.types.is_decimal(v.type):
            return decimal_rounded(v, 0, mode)
        # an integer: DuckDB's DOUBLE of it (rounded to the nearest beyond 2**53, where Arrow's own cast refuses)
        return arrow(cast_to(v, pa.float64()) if pa.types.is_integer(v.type) else v)

    return run


def trunc(v):
    """SQL's TRUNC: toward zero, of the argument's type (a DECIMAL(p, s) becomes a DECIMAL(p, 0))."""
    if pa.types.is_decimal(v.type):
        return decimal_rounded(v, 0, "towards_zero")
    return v if pa.types.is_integer(v.type) else pc.trunc(v)


def sign(v):
    """DuckDB's SIGN: a TINYINT, 0 for NaN (and for -0.0)."""
    if pa.types.is_floating(v.type):
        v = pc.if_else(pc.is_nan(v), pa.scalar(0.0, v.type), v)
    return pc.cast(pc.sign(v), pa.int8())


def _round(v, digits: int):
    """SQL's ROUND: half away from zero; rounding to more tens than the type holds gives 0 (DuckDB's)."""
    if pa.types.is_decimal(v.type):
        if digits < v.type.scale - v.type.precision:  # more tens than the type holds: 0
            if v.null_count if isinstance(v, pa.Array) else not v.is_valid:
                raise SqlTypeError(f"ROUND of a DECIMAL NULL to {digits} digits is not supported (DuckDB makes it 0)")
            return pc.if_else(pc.is_valid(v), pa.scalar(0, pa.decimal128(v.type.precision, 0)), None)
        if digits < 0 and v.type.scale == 0 and v.type.precision < 38:  # one digit more: 99 -> 100
            v = pc.cast(v, pa.decimal128(v.type.precision + 1, 0))
        return decimal_rounded(v, digits, "half_towards_infinity")
    if pa.types.is_floating(v.type):
        return _float_round(v, np.int64(digits))
    if pa.types.is_uint64(v.type):
        raise SqlTypeError("ROUND of a UBIGINT (a HUGEINT in DuckDB) is not supported; CAST it to BIGINT or DOUBLE")
    if pa.types.is_unsigned_integer(v.type):  # DuckDB has no unsigned ROUND: it rounds the value as a BIGINT
        return _round(cast_to(v, pa.int64()), digits)
    if pa.types.is_integer(v.type) and v.type.bit_width < 64:  # as a BIGINT; one out of the type's range errs
        return cast_to(_round(cast_to(v, pa.int64()), digits), v.type)
    if digits < -18:  # 0, or beyond BIGINT where a value rounds to 10**19 (DuckDB's overflow error)
        big = pc.or_(pc.greater_equal(v, 5 * 10**18), pc.less_equal(v, -5 * 10**18))
        if digits == -19 and pc.any(big).as_py():
            raise SqlTypeError("ROUND of an integer to -19 digits: a value rounds beyond BIGINT (overflow)")
        return pc.if_else(pc.is_valid(v), pa.scalar(0, v.type), pa.scalar(None, v.type))
    return pc.round(v, ndigits=digits, round_mode="half_towards_infinity")  # errs where it would overflow


# 10**k as C's pow gives it (DuckDB's modifier; 10**23 is not the double nearest 1e23), k = 0..399
_POW10 = np.array([math.pow(10.0, k) if k < 309 else math.inf for k in range(400)])


def _float_round(v, digits: np.ndarray):
    """DuckDB's ROUND of floats, digit for digit: ``round(x * 10**d) / 10**d`` (``round(x / 10**-d) *
    10**-d`` for negative ``d``) with C's ``round`` (half away from zero) in doubles; where that
    overflows, ``x``; where it is NaN (``0 * inf``), ``x`` for ``d >= 0`` and 0 for ``d < 0``."""
    scalar = isinstance(v, pa.Scalar)
    arr = pa.array([v.as_py()], v.type) if scalar else v
    x = np.asarray(pc.fill_null(cast_to(arr, pa.float64()), 0.0).to_numpy(zero_copy_only=False))
    d = np.broadcast_to(np.asarray(digits, np.int64), x.shape)
    m = _POW10[np.minimum(np.abs(d), 399)]
    with np.errstate(all="ignore"):
        y = np.where(d >= 0, x * m, x / m)
        t = np.trunc(y)
        y = np.where(np.abs(y - t) >= 0.5, t + np.sign(y), t)  # C's round: half away from zero
        r = np.where(d >= 0, y / m, y * m)
    r = np.where(~np.isfinite(x) | np.isinf(r), x, np.where(np.isnan(r), np.where(d >= 0, x, 0.0), r))
    out = cast_to(pa.array(r, pa.float64(), mask=np.asarray(pc.is_null(arr))), arr.type)
    return out[0] if scalar else out


def round_by(ev, node):
    """``ROUND(x, d)`` with ``d`` per row (DuckDB takes it for floats and integers, not DECIMAL)."""
    v, d = ev.array(node.args[0]), ev.array(node.args[1])
    if not (pa.types.is_integer(d.type) or pa.types.is_null(d.type)):
        raise SqlTypeError(f"{ev.sql(node)}: the number of digits must be an integer, not {d.type}")
    if pa.types.is_null(v.type):
        v = cast_to(v, pa.int64())
    if not (pa.types.is_floating(v.type) or pa.types.is_integer(v.type)):
        raise SqlTypeError(f"{ev.sql(node)}: a per-row number of digits rounds a float or an integer, not {v.type}")
    digits = np.asarray(pc.fill_null(cast_to(d, pa.int64()), 0).to_numpy(zero_copy_only=False))
    if pa.types.is_floating(v.type):
        out = _float_round(v, digits)
    else:  # an integer: unchanged for d >= 0, and every d below -18 rounds to 0, so few kinds of row
        clipped = np.clip(digits, -19, 0)
        out = v
        for k in np.unique(clipped[clipped < 0]):  # (other rows as 0: only these rows' overflows err)
            rows = pa.array(clipped == k)
            out = pc.if_else(rows, _round(pc.if_else(rows, v, pa.scalar(0, v.type)), int(k)), out)
    return pc.if_else(pc.is_null(d), pa.scalar(None, out.type), out)


def trim_by(ev, node):
    """TRIM/LTRIM/RTRIM(s, characters) with the characters per row: NULL where either is NULL."""
    v, chars = ev.array(node.args[0]), ev.array(node.args[1])
    for x in (v, chars):
        if not (pa.types.is_string(x.type) or pa.types.is_null(x.type)):
            raise SqlTypeError(f"{ev.sql(node)}: TRIM takes text, not {x.type}")
    strip = {"LEADING": str.lstrip, "TRAILING": str.rstrip}.get(node.params[0], str.strip)
    pairs = zip(v.to_pylist(), chars.to_pylist(), strict=True)
    return pa.array([None if s is None or c is None else strip(s, c) if c else s for s, c in pairs], pa.string())


FUNCS["round_by"] = round_by
FUNCS["trim_by"] = trim_by


def ev_values(v) -> np.ndarray:
    """The valid values of an Arrow array or scalar, as numpy (NULLs left out)."""
    if isinstance(v, pa.Scalar):
        return np.array([] if v.as_py() is None else [v.as_py()])
    return pc.drop_null(v).to_numpy(zero_copy_only=False)


def _date(ev, node):
    v = ev.eval(node.args[0])
    if pa.types.is_timestamp(v.type):
        return pc.cast(pc.floor_temporal(v, unit="day"), pa.date32())
    return pc.cast(v, pa.date32())


def _greatest(values):
    """DuckDB's ``greatest``: NaN is larger than every number (Arrow's maximum passes over NaN)."""
    top = pc.max_element_wise(*values, skip_nulls=True)
    if not pa.types.is_floating(top.type):
        return top
    nan = None
    for v in values:
        if pa.types.is_floating(v.type):
            v_nan = pc.fill_null(pc.is_nan(v), False)
            nan = v_nan if nan is None else pc.or_(nan, v_nan)
    return top if nan is None else pc.if_else(nan, pa.scalar(float("nan"), top.type), top)


def _divided(ev, node, what: str):
    """``a // b`` or ``a % b`` over integers (truncated division, as DuckDB's): a zero divisor is an
    error, as is ``-2**63 // -1``; over reals ``//`` is ``/`` and ``%`` is ``fmod`` (DuckDB's)."""
    a, b = _align(*ev._args(node))
    if pa.types.is_null(a.type) or pa.types.is_null(b.type):
        return pa.scalar(None, b.type if pa.types.is_null(a.type) else a.type)
    if not (_numeric(a.type) and _numeric(b.type)):
        raise SqlTypeError(f"type error in {ev.sql(node)}: not defined for {a.type}, {b.type}")
    ts = (a.type, b.type)  # FLOAT with FLOAT or an exact number: FLOAT (DuckDB's), else DOUBLE
    real = pa.float32() if pa.float32() in ts and pa.float64() not in ts else pa.float64()
    if what == "%" and real == pa.float64() and (exact := _decimal_mod(ev, node, a, b)) is not None:
        return exact
    if pa.types.is_integer(a.type) and pa.types.is_integer(b.type):
        from .sqlints import int_operands  # the literal's type: DuckDB's tinyint_col // 2 is a TINYINT

        a, b = int_operands(ev, node, a, b, node.args[:2])
        try:
            q = pc.divide_checked(a, b)  # truncates toward zero
        except pa.ArrowInvalid as exc:
            problem = "division by zero" if "zero" in str(exc) else "integer overflow"
            raise SqlTypeError(f"cannot evaluate {ev.sql(node)}: {problem}") from None
        return q if what == "//" else pc.subtract(a, pc.multiply(q, b))
    a, b = cast_to(a, real), cast_to(b, real)
    if what == "//":
        if pc.any(ev._broadcast(pc.and_(pc.equal(b, 0.0), pc.is_valid(a)))).as_py():  # DuckDB: NULL // 0 is NULL
            raise SqlTypeError(f"cannot evaluate {ev.sql(node)}: division by zero")
        return pc.divide(a, b)
    fa, fb = (np.asarray(ev._broadcast(x).to_numpy(zero_copy_only=False), real.to_pandas_dtype()) for x in (a, b))
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.fmod(fa, fb)
    return pa.array(r, mask=np.asarray(pc.or_(ev._broadcast(pc.is_null(a)), ev._broadcast(pc.is_null(b)))))


def _decimal_mod(ev, node, a, b):
    """``a % b`` with a DECIMAL operand (and no DOUBLE): DuckDB's exact DECIMAL remainder, else None."""
    if not (pa.types.is_decimal(a.type) or pa.types.is_decimal(b.type)):
        return None
    from .sqldecimal import arithmetic

    try:
        return arithmetic("%", a, b, node.args[0], node.args[1], ev.columns)
    except pa.ArrowInvalid as exc:
        raise SqlTypeError(f"cannot evaluate {ev.sql(node)}: {exc}") from None


def lazy_args(ev, node) -> list:
    """COALESCE's arguments as DuckDB evaluates them: each only in the rows where every earlier one is NULL (a
    division by zero, an overflow or a bad cast in a row an earlier argument answers is no error)."""
    args, reach = [], None
    for arg in node.args:
        v = ev.eval(arg) if reach is None else ev._branch(arg, reach)
        args.append(v)
        reach = pc.is_null(v) if reach is None else pc.and_(reach, pc.is_null(v))
    return args
