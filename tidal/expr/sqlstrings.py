"""SQL's string functions with DuckDB's rules, columnar (``pyarrow.compute`` and numpy).

* A NULL argument gives NULL (``replace(s, 'a', NULL)``, ``contains(s, NULL)``, ``trim(s, NULL)``...);
  constant arguments arrive as the node's ``params``, ``None`` for NULL.
* ``substring``/``left``/``right`` count code points and take positions and lengths per row (a
  column or a constant), negative ones as DuckDB does: ``substring(s, p, n)`` starts at ``p``
  (1-based; ``p < 0`` counts from the end, ``p = 0`` is one before the first character) and takes
  ``n`` characters forward, or ``-n`` backwards when ``n < 0``; ``left(s, -n)`` is all but the last
  ``n``, ``right(s, -n)`` all but the first ``n``.
* ``trim(s)`` removes spaces only (not tabs or newlines); ``trim(s, chars)`` those characters.
* ``LIKE`` has no escape character: a backslash in the pattern is an ordinary character.
* Regular expressions are RE2's, with DuckDB's options (translated to ``ilsg``:
  case-insensitive, literal, dot matches newline, replace every match; ``regexp_replace``
  replaces the first match only without ``g``).
"""

from __future__ import annotations

import re

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..core.errors import TidalTypeError


class SqlTypeError(TidalTypeError):
    """An expression cannot be evaluated on the types it is given (defined here, below the evaluator
    of :mod:`tidal.expr.sqlkernels` that raises it too)."""


_NULL_TYPES = {"bool": pa.bool_(), "string": pa.string(), "double": pa.float64()}


def null_of(ev, node):
    """A NULL of the node's result type for each row (the argument is still evaluated: type errors stay)."""
    ev.eval(node.args[0])
    return pa.scalar(None, _NULL_TYPES[node.params[0]])


def like(v, pattern: str, ignore_case: bool):
    if "\\" not in pattern:
        return pc.match_like(v, pattern, ignore_case=ignore_case)
    # Arrow's LIKE takes backslash as its escape character (and mishandles an escaped one before a
    # trailing %); SQL's (DuckDB's) has none by default: as an anchored regular expression instead
    parts = {"%": ".*", "_": "."}
    body = "".join(parts.get(c, _literal(c, "l")) for c in pattern)
    return pc.match_substring_regex(v, f"(?s{'i' if ignore_case else ''})^{body}$")


# -- substrings by code point positions ---------------------------------------------------------
def _ints(ev, node, v, what: str):
    """A position or length argument: int64 values (nulls as 0) and a validity mask, per row."""
    x = ev.array(node)
    if pa.types.is_null(x.type):
        return np.zeros(len(x), np.int64), np.zeros(len(x), bool)
    if not pa.types.is_integer(x.type):
        raise SqlTypeError(f"{ev.sql(node)}: the {what} must be an integer, not {x.type}")
    ok = np.asarray(x.is_valid().to_numpy(zero_copy_only=False), bool)
    vals = np.asarray(x.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False), np.int64)
    return np.clip(vals, -(2**40), 2**40), ok  # no string is longer; no int64 overflow below


def _text(ev, node):
    v = ev.array(node)
    if pa.types.is_null(v.type):
        return v.cast(pa.string())
    if pa.types.is_large_string(v.type):
        return v.cast(pa.string())
    if not pa.types.is_string(v.type):
        raise SqlTypeError(f"type error in {ev.sql(node)}: not a string but {v.type}")
    return v


def slice_chars(v: pa.Array, start: np.ndarray, stop: np.ndarray, ok: np.ndarray) -> pa.Array:
    """Each string's code points ``[start, stop)`` (clamped to its length); null where not ``ok``."""
    n = len(v)
    size = np.asarray(pc.utf8_length(v).fill_null(0).to_numpy(zero_copy_only=False), np.int64)
    a = np.clip(start, 0, size)
    b = np.maximum(np.clip(stop, 0, size), a)
    offsets = np.frombuffer(v.buffers()[1], np.int32)[v.offset : v.offset + n + 1].astype(np.int64)
    data_buf = v.buffers()[2]
    data = np.frombuffer(data_buf, np.uint8) if data_buf is not None else np.zeros(0, np.uint8)
    if n and offsets[-1] > offsets[0] and not bool(pc.all(pc.string_is_ascii(v)).as_py() or False):
        starts = np.append(np.flatnonzero((data & 0xC0) != 0x80), len(data))  # each code point's first byte
        before = np.concatenate([[0], np.cumsum((data & 0xC0) != 0x80)])  # code points before each byte
        first = before[offsets[:-1]]

        def byte(k):
            return np.where(k < size, starts[np.minimum(first + k, len(starts) - 1)], offsets[1:])

        ba, bb = byte(a), byte(b)
    else:
        ba, bb = offsets[:-1] + a, offsets[:-1] + b
    lengths = np.where(ok, bb - ba, 0)
    out_offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    gather = np.repeat(ba - out_offsets[:-1], lengths) + np.arange(out_offsets[-1])
    out = pa.StringArray.from_buffers(n, pa.py_buffer(out_offsets), pa.py_buffer(data[gather].tobytes()))
    return out if ok.all() else pc.if_else(pa.array(ok), out, pa.scalar(None, pa.string()))


def _valid(v: pa.Array) -> np.ndarray:
    return np.asarray(v.is_valid().to_numpy(zero_copy_only=False), bool)


def check_substring_range(ev, node, values: np.ndarray, ok: np.ndarray, what: str) -> None:
    """DuckDB's bound on a substring's offset and length: beyond 32 bits either way is an error."""
    bad = ok & ((values > 4294967295) | (values < -4294967296))
    if bad.any():
        raise SqlTypeError(f"{ev.sql(node)}: substring {what} outside of supported range: {int(values[bad][0])}")


def substring(ev, node):
    v = _text(ev, node.args[0])
    offset, ok = _ints(ev, node.args[1], v, "start position")
    check_substring_range(ev, node, offset, ok, "offset")
    ok = ok & _valid(v)
    size = np.asarray(pc.utf8_length(v).fill_null(0).to_numpy(zero_copy_only=False), np.int64)
    begin = np.where(offset > 0, offset - 1, np.where(offset < 0, size + offset, -1))
    if len(node.args) < 3:
        return slice_chars(v, begin, np.full(len(v), 2**41), ok)
    length, ok2 = _ints(ev, node.args[2], v, "length")
    check_substring_range(ev, node, length, ok2, "length")
    end = begin + length
    return slice_chars(v, np.minimum(begin, end), np.maximum(begin, end), ok & ok2)


def left(ev, node):
    v = _text(ev, node.args[0])
    k, ok = _ints(ev, node.args[1], v, "length")
    size = np.asarray(pc.utf8_length(v).fill_null(0).to_numpy(zero_copy_only=False), np.int64)
    return slice_chars(v, np.zeros(len(v), np.int64), np.where(k >= 0, k, size + k), ok & _valid(v))


def right(ev, node):
    v = _text(ev, node.args[0])
    k, ok = _ints(ev, node.args[1], v, "length")
    size = np.asarray(pc.utf8_length(v).fill_null(0).to_numpy(zero_copy_only=False), np.int64)
    return slice_chars(v, np.where(k >= 0, size - k, -k), size, ok & _valid(v))


# -- functions of a string and constants ----------------------------------------------------------
def _strict(kind: str, f):
    """``f(value, *params)``, or NULL of ``kind`` when a constant argument is NULL."""

    def run(ev, node):
        v = ev.eval(node.args[0])
        if any(p is None for p in node.params):
            return pa.scalar(None, _NULL_TYPES[kind])
        return f(v, *node.params)

    return run


def _replace(v, pattern, replacement):
    return v if pattern == "" else pc.replace_substring(v, pattern, replacement)


def _trim(v, position, chars):
    f = {"LEADING": pc.utf8_ltrim, "TRAILING": pc.utf8_rtrim}.get(position, pc.utf8_trim)
    return v if chars == "" else f(v, characters=chars)


def _flags(options: str) -> str:
    flags = "".join(c for c in "is" if c in options)
    return f"(?{flags})" if flags else ""


def text_beside_time(v, kind: pa.DataType):
    """``v``, a text compared with (or added to) a ``kind`` time: DuckDB casts a string literal to the time, never a
    VARCHAR column ("Cannot compare values of type DATE and VARCHAR"): a column's text is refused."""
    if isinstance(v, pa.Scalar):
        return v
    raise SqlTypeError(f"a VARCHAR column beside a {kind} is not supported (DuckDB refuses it too): CAST it")


def _literal(pattern: str, options: str) -> str:
    return re.sub(r"([^\w\s])", r"\\\1", pattern) if "l" in options else pattern


def regex(pattern: str, options: str) -> str:
    """A pattern with DuckDB's options (``i``, ``l``, ``s``) as RE2 sees them."""
    return _flags(options) + _literal(pattern, options)


def _regexp_like(v, pattern, options):
    return pc.match_substring_regex(v, regex(pattern, options))


def _regexp_replace(v, pattern, replacement, options):
    everywhere = "g" in options
    return pc.replace_substring_regex(
        v, regex(pattern, options), replacement, max_replacements=None if everywhere else 1
    )


def _groups(pattern: str):
    """The pattern with each capturing group named ``g1``, ``g2``..., and their number (escaped
    parentheses and those inside a character class are not groups)."""
    out, count, i, in_class = [], 0, 0, False
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            out.append(pattern[i : i + 2])
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
            if pattern[i + 1 : i + 2] == "]":  # a ']' first in a class is a member
                out.append("[]")
                i += 2
                continue
        elif c == "(" and pattern[i + 1 : i + 2] != "?":
            count += 1
            out.append(f"(?P<g{count}>")
            i += 1
            continue
        out.append(c)
        i += 1
    return "".join(out), count


def regexp_extract(ev, node):
    pattern, group, options = node.params
    v = _text(ev, node.args[0])
    if pattern is None:
        return pa.scalar(None, pa.string())
    named, count = _groups(_literal(pattern, options))
    wrapped = _flags(options) + "(?P<g0>" + named + ")"
    if not 0 <= group <= 9:  # DuckDB: an error, whatever the rows
        raise SqlTypeError(f"{ev.sql(node)}: group index must be between 0 and 9, not {group}")
    if not len(v):
        return pa.array([], pa.string())
    if group > count:
        return pc.if_else(pc.is_null(v), None, pa.scalar("", pa.string()))  # DuckDB: no such group, ''
    got = pc.extract_regex(v, wrapped)
    # DuckDB returns '' when nothing matches
    return pc.if_else(pc.is_null(v), None, pc.fill_null(pc.struct_field(got, [group]), ""))


def strlen(ev, node):
    """DuckDB's ``strlen``: the string's bytes in UTF-8 (``length`` counts code points)."""
    return pc.binary_length(_text(ev, node.args[0])).cast(pa.int64())


FUNCS = {
    "null_of": null_of,
    "strlen": strlen,
    "substring": substring,
    "left": left,
    "right": right,
    "regexp_extract": regexp_extract,
    "replace": _strict("string", _replace),
    "trim": _strict("string", _trim),
    "starts_with": _strict("bool", pc.starts_with),
    "ends_with": _strict("bool", pc.ends_with),
    "contains": _strict("bool", pc.match_substring),
    "regexp_like": _strict("bool", _regexp_like),
    "regexp_replace": _strict("string", _regexp_replace),
}
