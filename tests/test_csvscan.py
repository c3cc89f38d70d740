"""The CSV quote scan (``tidal.io.csvscan``): the compiled pass that skips quote-free 8-byte words finds
the same open quote as a byte-at-a-time reference, for any text, length and alignment."""

from __future__ import annotations

import io

from hypothesis import given, settings
from hypothesis import strategies as st

from tidal.io.csvscan import unterminated_quote


def reference(data: bytes, quote: int = ord('"'), delimiter: int = ord(",")) -> int:
    inside, opener, i = False, -1, 0
    while i < len(data):
        if data[i] == quote:
            if inside:
                if i + 1 < len(data) and data[i + 1] == quote:
                    i += 1
                else:
                    inside = False
            elif i == 0 or data[i - 1] in (delimiter, 10, 13):
                inside, opener = True, i
        i += 1
    return opener if inside else -1


@settings(max_examples=300, deadline=None)
@given(
    text=st.lists(st.sampled_from(['"', '"', ",", "\n", "\r", "a", "bcdefgh", '""', "12345678"]), max_size=80),
    lead=st.integers(0, 9),
)
def test_the_scan_agrees_with_a_byte_at_a_time_reference(text, lead):
    data = ("x" * lead + "".join(text)).encode()
    assert unterminated_quote(io.BytesIO(data), '"', ",") == reference(data)


def test_a_quote_after_long_quote_free_runs_is_found():
    data = b"a,b\n" + b"1,abcdefghijklmnop\n" * 1000 + b'2,"open\n' + b"3,x\n" * 100
    assert unterminated_quote(io.BytesIO(data), '"', ",") == data.index(b'"')
    assert unterminated_quote(io.BytesIO(data + b'"'), '"', ",") == -1
