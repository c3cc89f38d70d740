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
        if (i & 7) == 0 and i + 8 <= n:
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


def unterminated_quote(source, quote: str, delimiter: str) -> int:
    """Where a quoted field opens that never closes in the CSV ``source`` (a path or bytes), or -1."""
    if isinstance(source, io.BytesIO):
        data = np.frombuffer(source.getbuffer(), np.uint8)
    else:
        data = np.frombuffer(pa.memory_map(source).read_buffer(), np.uint8)
    words = data[: len(data) // 8 * 8].view(np.uint64)
    return int(_open_quote_at_end(data, words, np.uint8(ord(quote)), np.uint8(ord(delimiter))))
