"""SQL functions of times as DuckDB defines them: ``strftime``'s format codes and date arithmetic.

``strftime(t, format)``: Arrow's own ``strftime`` differs from DuckDB's on several codes (its ``%S``
carries the fraction of the second, it knows no ``%f``/``%g``/``%n`` nor the unpadded ``%-d``
forms, its ``%c`` is C's), so the format is split at those codes: the rest is formatted by Arrow
over whole seconds, the others are computed per row, and the pieces joined. A code DuckDB does not
know is an error naming it, never text passed through.

``strptime(text, format)``: each distinct text is read by Python's ``datetime.strptime``, which checks
the fields as DuckDB does (no 30 February, no second 60) where Arrow's C ``strptime`` rolls them over;
codes Python reads otherwise than DuckDB (week numbers, day of the year, ISO years, zones, %g/%n
fractions, %p beside a 24-hour %H) are refused by name. A text that does not parse is an error, as in
DuckDB.

``date - date`` is the number of days between them (a BIGINT, DuckDB's), ``date ± integer`` a date.
"""

from __future__ import annotations

import datetime as dt
import re
from decimal import ROUND_HALF_UP, Decimal

import pyarrow as pa
import pyarrow.compute as pc

from .sqlstrings import SqlTypeError

# codes Arrow formats as DuckDB does (over a timestamp in whole seconds)
_SAME = set("aAwdbBhmyYHIpMSjUWGVuT%")
# codes written out in others DuckDB spells as Arrow does
_SPELLED = {"c": "%Y-%m-%d %H:%M:%S", "x": "%Y-%m-%d", "X": "%H:%M:%S"}
_CODE = re.compile(r"%(-?)(.)", re.S)


def _fraction(v, digits: int):
    """The fraction of the second in ``digits`` digits (3: %g, 6: %f, 9: %n), zero-padded."""
    us = pc.add(pc.multiply(pc.cast(pc.millisecond(v), pa.int64()), 1000), pc.cast(pc.microsecond(v), pa.int64()))
    value = pc.divide(us, 1000) if digits == 3 else pc.multiply(us, 1000) if digits == 9 else us
    return pc.utf8_lpad(pc.cast(value, pa.string()), digits, "0")


_UNPADDED = {
    "d": pc.day,
    "m": pc.month,
    "H": pc.hour,
    "M": pc.minute,
    "S": pc.second,
    "j": pc.day_of_year,
    "y": lambda v: pc.subtract(pc.year(v), pc.multiply(pc.floor(pc.divide(pc.year(v), 100.0)), 100)),
    "I": lambda v: pc.add(
        pc.subtract(pc.hour(v), pc.multiply(pc.floor(pc.divide(pc.add(pc.hour(v), 11), 12)), 12)), 12
    ),
}


def strftime(v, fmt: str):
    """``strftime(v, fmt)`` with DuckDB's format codes (see the module's docstring)."""
    v = check_calendar_range(v, "strftime")
    if pa.types.is_date(v.type):
        v = pc.cast(v, pa.timestamp("us"))
    if pa.types.is_timestamp(v.type) and v.type.unit != "us":
        v = pc.cast(v, pa.timestamp("us", v.type.tz))
    seconds = pc.cast(pc.floor_temporal(v, unit="second"), pa.timestamp("s", v.type.tz))
    pieces, arrow_fmt, at = [], [], 0

    def flush():
        if arrow_fmt:
            pieces.append(pc.strftime(seconds, "".join(arrow_fmt)))
            arrow_fmt.clear()

    for m in _CODE.finditer(fmt):
        arrow_fmt.append(fmt[at : m.start()].replace("%", "%%"))
        at = m.end()
        dash, code = m.groups()
        if not dash and code in _SAME:
            arrow_fmt.append(m.group(0))
        elif not dash and code in _SPELLED:
            arrow_fmt.append(_SPELLED[code])
        elif not dash and code in "fgn":
            flush()
            pieces.append(_fraction(v, {"g": 3, "f": 6, "n": 9}[code]))
        elif not dash and code in "zZ" and v.type.tz is None:
            arrow_fmt.append("+00" if code == "z" else "")  # DuckDB's for a time without a zone
        elif dash and code in _UNPADDED:
            flush()
            pieces.append(pc.cast(pc.cast(_UNPADDED[code](v), pa.int64()), pa.string()))
        else:
            raise SqlTypeError(f"strftime: the format code {m.group(0)!r} (in {fmt!r}) is not supported")
    if "%" in fmt[at:]:  # DuckDB: "Trailing format character %"
        raise SqlTypeError(f"strftime: a trailing format character % (in {fmt!r}) is not supported")
    arrow_fmt.append(fmt[at:].replace("%", "%%"))
    flush()
    if len(pieces) == 1:
        return pieces[0]
    return pc.binary_join_element_wise(*pieces, "")


def date_arith(op: str, a, b):
    """``a op b`` when it is date arithmetic DuckDB defines apart from Arrow's, else None."""
    da, db = pa.types.is_date(a.type), pa.types.is_date(b.type)
    if op == "-" and da and db:  # the days between two dates
        return pc.subtract(_days(a), _days(b))
    if op in "+-" and da and pa.types.is_integer(b.type) or op == "+" and db and pa.types.is_integer(a.type):
        date, days = (a, b) if da else (b, a)
        moved = (pc.add_checked if op == "+" else pc.subtract_checked)(_days(date), pc.cast(days, pa.int64()))
        return pc.cast(pc.cast(moved, pa.int32()), pa.date32())  # checked: a date out of range is an error
    return None


def _days(v):
    """A date's days since 1970-01-01, as BIGINT."""
    return pc.cast(pc.cast(pc.cast(v, pa.date32()), pa.int32()), pa.int64())


def epoch(ev, node):
    """DuckDB's ``epoch`` (seconds, DOUBLE), ``epoch_ms`` (milliseconds rounded half away from zero, as
    DuckDB rounds them; of an integer, the TIMESTAMP that many milliseconds from 1970), ``epoch_us`` and
    ``epoch_ns`` (BIGINT) of a timestamp or date; ``extract(epoch from t)`` is ``epoch``."""
    v = ev.eval(node.args[0])
    if node.func == "epoch_ms" and pa.types.is_integer(v.type):
        return pc.cast(pc.multiply_checked(pc.cast(v, pa.int64()), 1000), pa.timestamp("us"))
    if not (pa.types.is_timestamp(v.type) or pa.types.is_date(v.type) or pa.types.is_null(v.type)):
        raise SqlTypeError(f"type error in {ev.sql(node)}: {node.func}() takes a TIMESTAMP or DATE, not {v.type}")
    us = pc.cast(pc.cast(v, pa.timestamp("us")), pa.int64())
    if node.func == "epoch_us":
        return us
    if node.func == "epoch_ns":
        return pc.multiply_checked(us, 1000)
    if node.func == "epoch_ms":
        whole = pc.divide(us, 1000)  # toward zero
        rest = pc.subtract(us, pc.multiply(whole, 1000))
        up = pc.cast(pc.greater_equal(rest, 500), pa.int64())
        down = pc.cast(pc.less_equal(rest, -500), pa.int64())
        return pc.subtract(pc.add(whole, up), down)
    return pc.divide(pc.cast(us, pa.float64(), safe=False), 1e6)


def hours(v):
    """The ``hour`` part; of a TIME, its whole hours since midnight, so DuckDB's ``24:00:00`` is hour 24 (Arrow's
    ``hour`` takes it modulo a day)."""
    if pa.types.is_time(v.type):
        per_hour = 3600 * {"s": 1, "ms": 10**3, "us": 10**6, "ns": 10**9}[v.type.unit]
        ints = pc.cast(v, pa.int64() if pa.types.is_time64(v.type) else pa.int32())
        return pc.cast(pc.divide(ints, per_hour), pa.int64())
    return pc.hour(v)


def milliseconds(v):
    """DuckDB's ``millisecond`` part: the milliseconds within the minute (seconds included), 0-59999."""
    return pc.add(pc.multiply(pc.second(v), 1000), pc.millisecond(v))


def microseconds(v):
    """DuckDB's ``microsecond`` part: the microseconds within the minute, 0-59999999."""
    return pc.add(pc.multiply(milliseconds(v), 1000), pc.microsecond(v))


# -- text cast to BOOLEAN or an integer, as DuckDB reads it -------------------------------------------
_TRUE, _FALSE = {"true", "t", "yes", "y", "1"}, {"false", "f", "no", "n", "0"}


def _per_value(v, parse, target: pa.DataType, text: str, named: pa.DataType | None = None):
    """``parse`` over the distinct strings of ``v`` (a scalar or an array), NULL kept; a value it refuses
    (ValueError) is an error naming it and the expression."""
    values = [v.as_py()] if isinstance(v, pa.Scalar) else pc.unique(v).to_pylist()
    parsed = {}
    for s in values:
        if s is None:
            continue
        try:
            parsed[s] = parse(s)
        except (ValueError, ArithmeticError):
            raise SqlTypeError(f"cannot evaluate {text}: could not convert {s!r} to {named or target}") from None
    if isinstance(v, pa.Scalar):
        return pa.scalar(parsed.get(v.as_py()), target)
    keys = pa.array(list(parsed), v.type)
    return pc.take(pa.array(list(parsed.values()), target), pc.index_in(v, keys))


def _text_bool(s: str) -> bool:
    low = s.lower()
    if low in _TRUE or low in _FALSE:
        return low in _TRUE
    raise ValueError(s)


_MISPLACED_SEPARATOR = re.compile(r"(?<![0-9])_|_(?![0-9])")
_EXPONENT = re.compile(r"[eE]([+-]?\d+)$")
_HEX = re.compile(r"0[xX][0-9a-fA-F]+(?:_[0-9a-fA-F]+)*")


def number_text(s: str) -> str:
    """A number's text without DuckDB's digit separators: an ``_`` stands only between two digits ('1_000',
    '1.2_5e1_0'); anywhere else ('_1', '1_', '1__0', '1_.5', '1e_5') the text is no number (ValueError).
    (Python's ``Decimal`` takes an ``_`` anywhere.)"""
    if "_" in s and _MISPLACED_SEPARATOR.search(s):
        raise ValueError(s)
    return s.replace("_", "")


def _text_int(s: str) -> int:
    """An integer's text as DuckDB casts it: spaces around, a sign, ``_`` between digits, ``0x`` hex, and a
    decimal or exponent rounded half away from zero ('2.5' is 3)."""
    if _HEX.fullmatch(s):  # hex: no sign, no spaces around, its value unsigned ('0x80' is 128, beyond a TINYINT)
        return int(s[2:].replace("_", ""), 16)
    t = s.strip()
    if not t.isascii() or not t:
        raise ValueError(s)
    sign, body = (-1, t[1:]) if t[0] == "-" else (1, t[1:] if t[0] == "+" else t)
    if body != body.strip():
        raise ValueError(s)
    body = number_text(body)
    if (e := _EXPONENT.search(body)) and int(e.group(1)) < -32768:  # DuckDB reads an exponent as a SMALLINT
        raise ValueError(s)
    try:
        return sign * int(body)
    except ValueError:
        pass
    number = Decimal(body)  # InvalidOperation is an ArithmeticError
    if not number.is_finite():
        raise ValueError(s)
    return sign * int(number.quantize(Decimal(1), rounding=ROUND_HALF_UP))


def text_to_bool(v, text: str):
    """CAST(text AS BOOLEAN): true/t/yes/y/1 and false/f/no/n/0 in any case; other text is an error."""
    return _per_value(v, _text_bool, pa.bool_(), text)


def _has_x(v) -> bool:
    if isinstance(v, pa.Scalar):
        return v.is_valid and "x" in v.as_py().lower()
    return bool(pc.any(pc.match_substring(v, "x", ignore_case=True)).as_py())


def text_to_number(v, target: pa.DataType, text: str):
    """CAST(text AS an integer or a floating-point type) as DuckDB (see :func:`_text_int`, :func:`number_text`);
    out of the type's range an error."""
    try:
        if pa.types.is_integer(target) and _has_x(v):  # Arrow reads '0x80' as a TINYINT's bits (-128)
            raise pa.ArrowInvalid(f"Failed to parse string as {target}")
        return pc.cast(v, target)
    except pa.ArrowInvalid as exc:
        refused = exc
    if pa.types.is_floating(target):  # Arrow reads no digit separators: '1_000.5'
        try:
            return pc.cast(_per_value(v, lambda s: number_text(s.strip()), pa.string(), text, target), target)
        except (SqlTypeError, pa.ArrowInvalid):
            raise refused from None
    try:
        wide = _per_value(
            v, _text_int, pa.decimal128(38, 0), text, target
        )  # (DECIMAL: no int64 overflow while parsing)
    except SqlTypeError:
        raise refused from None  # Arrow's words for text that is no number ("... as INTEGER")
    try:
        return pc.cast(wide, target)
    except pa.ArrowInvalid:
        raise SqlTypeError(f"cannot evaluate {text}: a value is out of {target}'s range") from None


# strptime codes Python reads as DuckDB does; the spelled-out ones as DuckDB spells them
_PARSE_SAME = set("YmdHMSybBhaAIpf%")
_PARSE_UNPADDED = set("dmHMSyI")


def _python_format(fmt: str) -> str:
    if not fmt:
        raise SqlTypeError("strptime: an empty format is not supported")
    out, at = [], 0
    for m in _CODE.finditer(fmt):
        out.append(fmt[at : m.start()])
        at = m.end()
        dash, code = m.groups()
        if dash and code in _PARSE_UNPADDED or not dash and code in _PARSE_SAME:
            out.append("%" + code)
        elif not dash and code in _SPELLED:
            out.append(_SPELLED[code])
        else:
            raise SqlTypeError(f"strptime: the format code {m.group(0)!r} (in {fmt!r}) is not supported")
    if "%" in fmt[at:]:
        raise SqlTypeError(f"strptime: a trailing format character % (in {fmt!r}) is not supported")
    out.append(fmt[at:])
    text = "".join(out)
    if "%p" in text and "%I" not in text:  # DuckDB: AM/PM beside a 24-hour %H is an error; Python ignores it
        raise SqlTypeError(f"strptime: %p without %I (in {fmt!r}) is not supported")
    return text


def strptime(v, fmt: str):
    """``strptime(text, format)`` as DuckDB reads it (see the module's docstring): a TIMESTAMP."""
    python_fmt = _python_format(fmt)
    if isinstance(v, pa.Scalar):
        return strptime(pa.array([v.as_py()], v.type), fmt)[0]
    texts = v.to_pylist()
    parsed: dict[str, dt.datetime] = {}
    out = []
    for text in texts:
        if text is None:
            out.append(None)
            continue
        if text not in parsed:
            value = text.strip() if python_fmt == python_fmt.strip() else text  # DuckDB skips outer blanks
            try:
                parsed[text] = dt.datetime.strptime(value, python_fmt)
            except ValueError as e:
                raise SqlTypeError(f"strptime: could not parse {text!r} according to the format {fmt!r}: {e}") from None
        out.append(parsed[text])
    return pa.array(out, pa.timestamp("us"))


def text_unlike_duckdb(v) -> bool:
    """Whether Arrow's text of ``v`` is not DuckDB's: an INTERVAL (a duration here: DuckDB writes its own
    days/hours split, '30:00:00'), a time with a zone ('+00'), a date or timestamp outside the years 1 to 9999
    ('1994-08-14 (BC)')."""
    if pa.types.is_duration(v.type) or pa.types.is_timestamp(v.type) and v.type.tz is not None:
        return True
    if pa.types.is_date(v.type) or pa.types.is_timestamp(v.type):
        days = _day_range(v)  # 0001-01-01 and 9999-12-31 as days since 1970-01-01
        return days is not None and (days[0] < -719162 or days[1] > 2932896)
    return False


def _day_range(v) -> tuple[int, int] | None:
    """The first and last day (since 1970-01-01) of a date or timestamp array or scalar, None without a value.
    Days by floor division: a time on the day before 1970-01-01 (or before 0001-01-01) is on that day, not the
    next (Arrow's integer divide truncates toward zero: 0000-12-31 12:00 was read as on 0001-01-01)."""
    ticks = pc.cast(v, pa.int32() if pa.types.is_date32(v.type) else pa.int64())
    low, high = (ticks, ticks) if isinstance(ticks, pa.Scalar) else pc.min_max(ticks).values()
    if not low.is_valid:
        return None
    if pa.types.is_date(v.type):
        per_day = 1 if pa.types.is_date32(v.type) else 86_400_000  # (date64: milliseconds)
    else:
        per_day = {"s": 1, "ms": 10**3, "us": 10**6, "ns": 10**9}[v.type.unit] * 86400
    return low.as_py() // per_day, high.as_py() // per_day


def date_trunc(v, unit: str):
    """``date_trunc(unit, v)``: of a DATE, a TIMESTAMP (DuckDB's)."""
    v = check_calendar_range(v, "date_trunc")
    return pc.floor_temporal(pc.cast(v, pa.timestamp("us")) if pa.types.is_date(v.type) else v, unit=unit)


def check_text_cast(v, target: pa.DataType, text: str) -> None:
    """Refuses a cast to VARCHAR whose text tidal would write otherwise than DuckDB."""
    if pa.types.is_string(target) and text_unlike_duckdb(v):
        raise SqlTypeError(f"type error in {text}: a cast of {v.type} to VARCHAR is not supported")


class NotExact(SqlTypeError):
    """tidal cannot give DuckDB's value for these values: "not supported". A CASE still tries it on only the
    rows that reach it (as any type error); ``TRY_CAST`` never turns it into NULL."""


def try_each(exc, values, target: pa.DataType, cast_one):
    """``TRY_CAST`` row by row after the whole column's cast raised ``exc``: NULL where a value's cast fails,
    the error where tidal cannot cast exactly (:class:`NotExact`)."""
    if isinstance(exc, NotExact):
        raise exc
    out = []
    for x in values.to_pylist():
        try:
            out.append(cast_one(x).as_py())
        except NotExact:
            raise
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, SqlTypeError):
            out.append(None)
    return pa.array(out, target)


_SHAPED = re.compile(r"^(\d{4})-(\d{1,2})-(\d{1,2})(?:[ T](\d{1,2}):(\d{2})(?::(\d{2})(?:\.(\d+))?)?)?$")


def refuse_time_text(value, text: str, shaped: bool = False) -> None:
    """Raises "not supported" (which ``TRY_CAST`` does not turn into NULL) for a text DuckDB may read as a
    date or timestamp and tidal does not: another shape ('2004/02/29', '12345-01-01', '1994-08-14 (BC)',
    'infinity'), or (``shaped``: text of the form YYYY-MM-DD[ HH:MM[:SS[.F]]] Arrow did not read) a valid
    date with an hour of 24, a seventh digit of a second... Empty text, and a date that does not exist
    (2001-02-29, month 13), return: DuckDB cannot read those either."""
    if value is None or not value.strip():
        return
    if not re.search(r"\d", value) and not re.search(r"(?i)inf|epoch", value):
        return  # no digit, no 'infinity' or 'epoch' ('x', 'now'): DuckDB's error too
    m = _SHAPED.match(value)
    if m is not None and shaped is None:  # (DuckDB reads '2020-01-01 ' as a DATE, not as a TIMESTAMP)
        raise NotExact(f"{text}: reading {value!r} with blanks around it as a timestamp is not supported")
    if m is None:
        if shaped or re.fullmatch(r"[\d\s:-]*", value) is None or re.match(r"\d+[-\s]\d{1,2}[-\s]\d{1,2}", value):
            raise NotExact(
                f"{text}: {value!r} is not a timestamp tidal reads (YYYY-MM-DD[ HH:MM[:SS[.F]]]): not supported"
            )
        return  # digits, '-' and ':' not starting with a date ('1111-11', '20200101'): DuckDB's error too
    import datetime as dt

    try:
        dt.date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
    except ValueError:
        return
    if shaped:
        raise NotExact(f"{text}: {value!r} is not a timestamp tidal reads (YYYY-MM-DD[ HH:MM[:SS[.F]]]): not supported")


# days since 1970-01-01 of -32767-01-01 and 32767-12-31: Arrow's calendar functions (year, month, day of
# the week, date_trunc, strftime) hold the year in 16 bits and answer garbage beyond
_FAR = (-12_687_428, 11_248_737)


def check_calendar_range(v, what: str):
    """``v`` (a date or timestamp array or scalar) unchanged; refused when one of its values lies beyond
    the years Arrow's calendar functions compute right (DuckDB's dates reach 5,881,580)."""
    if not (pa.types.is_date(v.type) or pa.types.is_timestamp(v.type)):
        return v
    days = _day_range(v)
    if days is not None and (days[0] < _FAR[0] or days[1] > _FAR[1]):
        raise NotExact(f"{what} of a date beyond the years -32767 to 32767 is not supported")
    return v
