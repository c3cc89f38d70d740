"""A CSV file's quoting, scanned the way pyarrow's reader parses it: a quote opens a field only at the
start of the field, ``""`` inside a quoted field is a quote, and a quoted field runs until its closing
quote (over delimiters and newlines). A quote that never closes makes the reader swallow every later
row into one field; :func:`unterminated_quote` finds it (one compiled pass over the mapped file).
"""

from __future__ import annotations

import io

import numba
import numpy as np
import pyarrow as pa


@numba.njit(cache=True, nogil=True)
def _open_quote_at_end(data, quote, delimiter):
    """The position of the quote whose field is still open at the end of ``data``, or -1."""
    n = len(data)
    inside = False
    field_start = True
    opener = -1
    i = 0
    while i < n:
        c = data[i]
        if inside:
            if c == quote:
                if i + 1 < n and data[i + 1] == quote:
                    i += 1  # a doubled quote inside the field
                else:
                    inside = False
                    field_start = False
        elif c == quote and field_start:
            inside = True
            opener = i
        elif c == delimiter or c == 10 or c == 13:
            field_start = True
        else:
            field_start = False
        i += 1
    return opener if inside else -1


def unterminated_quote(source, quote: str, delimiter: str) -> int:
    """Where a quoted field opens that never closes in the CSV ``source`` (a path or bytes), or -1."""
    if isinstance(source, io.BytesIO):
        data = np.frombuffer(source.getbuffer(), np.uint8)
    else:
        data = np.frombuffer(pa.memory_map(source).read_buffer(), np.uint8)
    if len(data) == 0:
        return -1
    return int(_open_quote_at_end(data, ord(quote), ord(delimiter)))
