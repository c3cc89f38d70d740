"""The CSV quote scan (``tidal.io.csvscan``): the compiled pass that skips quote-free 8-byte words finds
the same open quote as a byte-at-a-time reference, for any text, length and alignment."""

from __future__ import annotations

import io

from hypothesis import given, settings
from hypothesis import strategies as st

from tidal.io.csvscan import rows_are_lines, unterminated_quote


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


def reference_rows(data: bytes) -> int:
    """Rows as a CSV parser counts them: line ends outside quoted fields, and a last unterminated line."""
    inside, rows, since, i = False, 0, 0, 0
    while i < len(data):
        c = data[i]
        if c == ord('"'):
            if inside and i + 1 < len(data) and data[i + 1] == ord('"'):
                i += 1
            elif inside:
                inside = False
            elif i == 0 or data[i - 1] in (ord(","), 10, 13):
                inside = True
        elif c == 10 and not inside:
            rows, since = rows + 1, i + 1
        i += 1
    return rows + (1 if since < len(data) else 0)


@settings(max_examples=300, deadline=None)
@given(text=st.lists(st.sampled_from(['"', ",", "\n", "a", '""', "bc", "\r\n"]), max_size=60))
def test_rows_are_lines_never_hides_an_open_quote(text):
    """With the rows a parser reads, a True answer means no quote is left open."""
    data = "".join(text).encode()
    if rows_are_lines(io.BytesIO(data), reference_rows(data), '"', ","):
        assert reference(data) == -1


def test_rows_are_lines_sees_a_quote_open_on_the_last_line():
    assert rows_are_lines(io.BytesIO(b'a,b\n1,x\n2,"y\n'), 3, '"', ",") is False
    assert rows_are_lines(io.BytesIO(b'a,b\n1,x\n2,"y"\n'), 3, '"', ",") is True
    assert rows_are_lines(io.BytesIO(b'a,b\n1,x\n2,"y'), 3, '"', ",") is False


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300) | st.text(alphabet="a\n,\r", max_size=300).map(str.encode), st.integers(0, 7))
def test_line_ends_are_counted_as_numpy_counts_them(data, lead):
    import numpy as np

    from tidal.io.csvscan import _line_ends, _words

    raw = np.frombuffer(b"x" * lead + data, np.uint8)[lead:]  # every alignment of the first byte
    assert int(_line_ends(raw, _words(raw))) == int(np.count_nonzero(raw == 10))


@settings(max_examples=200, deadline=None)
@given(
    st.binary(max_size=300)
    | st.text(max_size=120).map(str.encode)
    | st.text(alphabet="a\n,\r", max_size=300).map(str.encode),
    st.integers(0, 7),
)
def test_the_text_scan_counts_line_ends_and_sees_any_byte_past_ascii(data, lead):
    """One pass gives both the line count and whether the bytes are ASCII, at every alignment; with it,
    ``is_utf8`` still answers as Python's decoder does (an ASCII file is UTF-8; any other is checked)."""
    import numpy as np

    from tidal.io.csvscan import _line_ends_ascii, _words, is_utf8, text_scan

    raw = np.frombuffer(b"x" * lead + data, np.uint8)[lead:]
    count, ascii = _line_ends_ascii(raw, _words(raw))
    assert int(count) == data.count(b"\n") and bool(ascii) == data.isascii()
    scan = text_scan(io.BytesIO(data))
    assert scan == (data.count(b"\n"), data.isascii())
    try:
        data.decode("utf-8")
        valid = True
    except UnicodeDecodeError:
        valid = False
    assert is_utf8(io.BytesIO(data), scan) is valid
    rows = reference_rows(data)
    assert rows_are_lines(io.BytesIO(data), rows, '"', ",", scan) == rows_are_lines(io.BytesIO(data), rows, '"', ",")
