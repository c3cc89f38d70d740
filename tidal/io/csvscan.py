"""A CSV file's quoting, scanned the way pyarrow's reader parses it: a quote opens a field only at the
start of the field, ``""`` inside a quoted field is a quote, and a quoted field runs until its closing
quote (over delimiters and newlines). A quote that never closes makes the reader swallow every later
row into one field; :func:`unterminated_quote` finds it (one compiled pass over the mapped file's bytes,
no array of quote positions in between).
"""

from __future__ import annotations

import io

import numba
import numpy as np
import pyarrow as pa

_ONES = np.uint64(0x0101010101010101)
_HIGHS = np.uint64(0x8080808080808080)


@numba.njit(cache=True, nogil=True)
def _open_quote_at_end(data, words, quote, delimiter):
    """The position of the quote whose field is still open at the end of ``data``, or -1.

    Only quotes change the state: outside a field a quote opens one when it starts the field (after
    a delimiter, a line end, or at the start); inside, a quote followed by another is a quote, else
    it closes the field. ``words`` is ``data``'s whole 8-byte words: a word without a quote byte
    (found with the zero-byte trick on ``word ^ quotes``) is skipped whole."""
    inside = False
    opener = -1
    n = len(data)
    pattern = _ONES * np.uint64(quote)
    i = 0
    while i < n:
        if (i & 7) == 0 and (i >> 3) < len(words):
            x = words[i >> 3] ^ pattern
            if ((x - _ONES) & ~x & _HIGHS) == 0:  # no quote among these 8 bytes
                i += 8
                continue
        if data[i] == quote:
            if inside:
                if i + 1 < n and data[i + 1] == quote:
                    i += 1  # a doubled quote inside the field
                else:
                    inside = False
            elif i == 0 or data[i - 1] == delimiter or data[i - 1] == 10 or data[i - 1] == 13:
                inside = True
                opener = i
        i += 1
    return opener if inside else -1


@numba.njit(cache=True, nogil=True)
def _line_ends(data, words):
    """How many newline bytes ``data`` holds: a word at a time (``words``: its whole 8-byte words, the
    zero-byte trick on ``word ^ newlines``), no temporary array of flags the size of the file."""
    pattern = _ONES * np.uint64(10)
    lows = ~_HIGHS
    count = 0
    m = len(words)
    for w in range(m):
        x = words[w] ^ pattern
        # exact per-byte zero test (no borrow between bytes): the high bit is set where a byte of x is 0
        y = ~(((x & lows) + lows) | x | lows)
        if y:
            count += _popcount(y)
    for i in range(m * 8, len(data)):
        count += data[i] == 10
    return count


@numba.njit(cache=True, nogil=True)
def _line_ends_ascii(data, words):
    """``(newline bytes, whether every byte is ASCII)`` of ``data``: :func:`_line_ends`'s count, and the OR of
    every word kept on the side (a byte is ASCII when its high bit is clear), in the same pass."""
    pattern = _ONES * np.uint64(10)
    lows = ~_HIGHS
    count = 0
    seen = np.uint64(0)
    m = len(words)
    for w in range(m):
        word = words[w]
        seen |= word
        x = word ^ pattern
        y = ~(((x & lows) + lows) | x | lows)
        if y:
            count += _popcount(y)
    for i in range(m * 8, len(data)):
        count += data[i] == 10
        seen |= np.uint64(data[i])
    return count, (seen & _HIGHS) == 0


@numba.njit(cache=True, nogil=True, inline="always")
def _popcount(y):
    y = y - ((y >> np.uint64(1)) & np.uint64(0x5555555555555555))
    y = (y & np.uint64(0x3333333333333333)) + ((y >> np.uint64(2)) & np.uint64(0x3333333333333333))
    y = (y + (y >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return (y * _ONES) >> np.uint64(56)


def text_scan(source) -> tuple[int, bool]:
    """``(newline bytes, whether the file is all ASCII)`` of a file (path, bytes or :func:`mapped` buffer):
    one compiled pass over the mapped file that
    :func:`is_utf8` (ASCII is UTF-8) and :func:`rows_are_lines` (the line count) then both use, instead of
    a pass each."""
    data = _data(source)
    count, ascii = _line_ends_ascii(data, _words(data))
    return int(count), bool(ascii)


def is_utf8(source, scan: tuple[int, bool] | None = None) -> bool:
    """Whether the whole file is UTF-8 (checked by Arrow over the mapped file: no copy, no Python str).
    ``scan``: the file's :func:`text_scan`, when known: a file all ASCII is UTF-8 without another pass."""
    if scan is not None and scan[1]:
        return True
    data = pa.py_buffer(source.getvalue()) if isinstance(source, io.BytesIO) else pa.memory_map(source).read_buffer()
    offsets = pa.py_buffer(np.array([0, data.size], np.int64).tobytes())
    try:
        pa.Array.from_buffers(pa.large_string(), 1, [None, offsets, data]).validate(full=True)
    except pa.ArrowInvalid:
        return False
    return True


def _words(data: np.ndarray) -> np.ndarray:
    """``data``'s whole 8-byte words (none when ``data`` does not start on an 8-byte boundary)."""
    if data.ctypes.data % 8:
        return np.empty(0, np.uint64)
    return data[: len(data) // 8 * 8].view(np.uint64)


def _data(source) -> np.ndarray:
    if isinstance(source, io.BytesIO):
        return np.frombuffer(source.getbuffer(), np.uint8)
    if isinstance(source, pa.Buffer):
        return np.frombuffer(source, np.uint8)
    return np.frombuffer(pa.memory_map(source).read_buffer(), np.uint8)


def mapped(source) -> pa.Buffer | None:
    """A file's bytes, mapped (None for standard input, already in memory): :func:`text_scan` and the CSV
    reader then read the same pages, mapped once (a second read of a file copies it from the page cache)."""
    return None if isinstance(source, io.BytesIO) else pa.memory_map(source).read_buffer()


LAST_LINE_BYTES = 1 << 16


def rows_are_lines(source, rows: int, quote: str, delimiter: str, scan: tuple[int, bool] | None = None) -> bool:
    """Whether the CSV ``source`` has exactly ``rows`` lines and its last line leaves no quote open.

    Then no quoted field spans lines (each line is one row), so every line starts outside a quote, and
    a quote left open could only be on the last line: checked there. True proves that no quote is
    left open; False proves nothing (multi-line fields, empty lines, a long last line): scan it all
    with :func:`unterminated_quote`. One count of line ends instead of a pass over every quote (none when
    ``scan``, the file's :func:`text_scan`, gives it)."""
    data = _data(source)
    n = len(data)
    if n == 0:
        return rows == 0
    ends = scan[0] if scan is not None else int(_line_ends(data, _words(data)))
    lines = ends + (0 if data[-1] == 10 else 1)
    if lines != rows:
        return False
    end = n - 1 if data[-1] == 10 else n
    tail = data[max(0, end - LAST_LINE_BYTES) : end]
    breaks = np.flatnonzero(tail == 10)
    if len(breaks) == 0 and end > LAST_LINE_BYTES:
        return False  # a last line longer than the tail looked at
    last = tail[breaks[-1] + 1 :] if len(breaks) else tail
    return int(_open_quote_at_end(last, _words(last), np.uint8(ord(quote)), np.uint8(ord(delimiter)))) < 0


def unterminated_quote(source, quote: str, delimiter: str) -> int:
    """Where a quoted field opens that never closes in the CSV ``source`` (a path or bytes), or -1."""
    data = _data(source)
    return int(_open_quote_at_end(data, _words(data), np.uint8(ord(quote)), np.uint8(ord(delimiter))))
