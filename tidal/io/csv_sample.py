"""The sample of a CSV file its types and width are inferred from (its first megabyte, whole lines), and
what the sample said, kept so that a file is sampled once per query: :func:`tidal.io.files.file_schema`
samples it while planning, and the read's one-column check (:func:`one_column`) asks again.

No temporal semantics: reading helpers only.
"""

from __future__ import annotations

import io
import os

import pyarrow as pa

SCHEMA_SAMPLE_BYTES = 1 << 20


def head(source) -> bytes:
    """The file's first :data:`SCHEMA_SAMPLE_BYTES`, cut after its last whole line."""
    if isinstance(source, io.BytesIO):
        head = source.getvalue()[:SCHEMA_SAMPLE_BYTES]
    else:
        with open(source, "rb") as fh:
            head = fh.read(SCHEMA_SAMPLE_BYTES)
    if len(head) == SCHEMA_SAMPLE_BYTES and b"\n" in head:
        head = head[: head.rindex(b"\n") + 1]
    return head


_WIDTHS: dict[tuple, tuple[bytes, int]] = {}  # a file's sample and its column count, by sample_key
_WIDTHS_KEPT = 64


def sample_key(source, sep: str, read_opts) -> tuple | None:
    """The file as sampled with these settings: path, size and modification time (None: standard input)."""
    if isinstance(source, io.BytesIO):
        return None
    try:
        st = os.stat(source)
    except OSError:
        return None
    settings = (sep, read_opts.autogenerate_column_names, read_opts.skip_rows)
    return (os.path.abspath(source), st.st_size, st.st_mtime_ns, *settings)


def remember_width(key: tuple | None, sample: bytes, width: int) -> None:
    """Keep the column count read from ``sample`` (the file's :func:`head`)."""
    if key is None:
        return
    if len(_WIDTHS) >= _WIDTHS_KEPT:
        _WIDTHS.pop(next(iter(_WIDTHS)))
    _WIDTHS[key] = (sample, width)


def one_column(source, sep: str, read_opts, columns=None) -> bool:
    """Whether the CSV file has a single column: then an empty line is a row (a NULL), as in DuckDB
    (in a wider file it is skipped). Known without a look when two columns are asked for, or from the
    sample :func:`file_schema` took of the same file when its first megabyte is still the same bytes (the
    width is read from them: a file rewritten since is looked at again)."""
    import pyarrow.csv as pv

    if columns is not None and len(set(columns)) >= 2:
        return False
    key = sample_key(source, sep, read_opts)
    sample = head(source)
    if key in _WIDTHS and _WIDTHS[key][0] == sample:
        return _WIDTHS[key][1] == 1
    try:
        reader = pv.open_csv(
            io.BytesIO(utf8_head(sample)),
            read_options=read_opts,
            parse_options=pv.ParseOptions(delimiter=sep, invalid_row_handler=lambda row: "skip"),
        )
    except (pa.ArrowInvalid, OSError):
        return False
    remember_width(key, sample, len(reader.schema))
    return len(reader.schema) == 1


def utf8_head(head: bytes) -> bytes:
    """The sample a CSV's types are inferred from, without lines that are not UTF-8."""
    try:
        head.decode("utf-8")
        return head
    except UnicodeDecodeError:
        return b"".join(line for line in head.splitlines(keepends=True) if _decodes(line))


def _decodes(line: bytes) -> bool:
    try:
        line.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True
