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
def _open_quote_at_end(data, quotes, delimiter):
    """The position of the quote whose field is still open at the end of ``data``, or -1.

    Only the quotes (at ``quotes``, ascending) change the state: outside a field a quote opens one
    when it starts the field (after a delimiter, a line end, or at the start); inside, a quote
    followed by another is a quote, else it closes the field."""
    inside = False
    opener = -1
    k = 0
    n = len(quotes)
    while k < n:
        p = quotes[k]
        if inside:
            if k + 1 < n and quotes[k + 1] == p + 1:
                k += 1  # a doubled quote inside the field
            else:
                inside = False
        elif p == 0 or data[p - 1] == delimiter or data[p - 1] == 10 or data[p - 1] == 13:
            inside = True
            opener = p
        k += 1
    return opener if inside else -1


def unterminated_quote(source, quote: str, delimiter: str) -> int:
    """Where a quoted field opens that never closes in the CSV ``source`` (a path or bytes), or -1."""
    if isinstance(source, io.BytesIO):
        data = np.frombuffer(source.getbuffer(), np.uint8)
    else:
        data = np.frombuffer(pa.memory_map(source).read_buffer(), np.uint8)
    quotes = np.flatnonzero(data == ord(quote))
    if len(quotes) == 0:
        return -1
    return int(_open_quote_at_end(data, quotes, ord(delimiter)))
