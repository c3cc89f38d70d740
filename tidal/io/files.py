"""File sources: CSV, TSV, JSON lines, Parquet and Arrow IPC, chosen by extension.

Parquet is read with ``pyarrow.parquet`` (by ``pyarrow.dataset``, which imports pandas, when a filter is pushed down),
Arrow IPC by ``pyarrow.dataset``, CSV and JSON lines by ``pyarrow.csv``/``pyarrow.json``, which infer types (JSON dates
as DuckDB: :mod:`.json_dates`). ``stdin.csv`` / ``stdin.json`` read standard input. Times are normalised to
microseconds, tidal's SQL time unit, and string (binary) views to strings (binaries). CSV's compiled scans
(:mod:`.csvscan`, numba) load with the first CSV read only.
Malformed CSV rows stop the read with an error naming the file, line and column, unless ``on_error="skip"``: then they
are skipped and counted in :attr:`FileRead.skipped`; nothing is dropped silently. Pushdown: ``columns`` limits the
columns read; ``predicate`` (a ``pyarrow.compute.Expression``) filters the dataset scan or the table as read.
"""

from __future__ import annotations

import importlib
import io
import os
import sys
from dataclasses import field

import pyarrow as pa
import pyarrow.compute as pc

from ..core.errors import InputError, ResourceError, TidalError
from ..core.frozen import FACTORY, Fields, mutable
from .csv_nulls import CSV_NULLS
from .csv_sample import head as _head
from .csv_sample import one_column as _one_column
from .csv_sample import remember_width, sample_key
from .csv_sample import utf8_head as _utf8_head
from .json_dates import json_dates
from .parquet_read import read_columns, read_schema


def _csvscan():
    return importlib.import_module(".csvscan", __package__)


FORMATS = {
    ".csv": "csv",
    ".tsv": "tsv",
    ".json": "json",
    ".jsonl": "json",
    ".ndjson": "json",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".arrow": "arrow",
    ".ipc": "arrow",
    ".feather": "arrow",
}
# options accepted by read_csv(...) and friends, with the reader setting each one maps to
CSV_OPTIONS = {"sep", "delim", "delimiter", "header", "quote", "escape", "skip", "null", "nullstr"}


@mutable
class FileRead(Fields):
    """The result of reading one file: the table and how many malformed rows were skipped."""

    path: str
    table: pa.Table
    skipped: int = 0
    skipped_lines: list[int] = field(default_factory=list)

    def __init__(self, path, table, skipped=0, skipped_lines=FACTORY):
        self.path = path
        self.table = table
        self.skipped = skipped
        self.skipped_lines = list() if skipped_lines is FACTORY else skipped_lines


NO_FROM = "no FROM"  # the "format" of a SELECT without FROM: one row, one hidden column


def file_format(path: str, explicit: str | None = None) -> str:
    """The format of ``path`` from its extension (or ``explicit``), or an error naming the path."""
    if explicit:
        return explicit
    ext = os.path.splitext(path)[1].lower()
    if ext not in FORMATS:
        known = ", ".join(sorted(FORMATS))
        raise InputError(f"{path}: unknown file extension {ext or '(none)'!r}; known extensions are {known}")
    return FORMATS[ext]


def is_stdin(path: str) -> bool:
    """Whether ``path`` names standard input (``stdin.csv``, ``stdin.json``, ... that is not a file)."""
    return os.path.basename(path).split(".")[0] == "stdin" and not os.path.exists(path)


_is_stdin = is_stdin


_STDIN: dict[str, object] = {}


def _open(path: str):
    if _is_stdin(path):
        # standard input can be read once; a query that reads it twice (schema, then data) shares it
        # (the cache belongs to the stream it was read from: a replaced sys.stdin is read afresh)
        if _STDIN.get("source") is not sys.stdin:
            _STDIN["source"], _STDIN["data"] = sys.stdin, sys.stdin.buffer.read()
        return io.BytesIO(_STDIN["data"])
    if not os.path.exists(path):
        raise InputError(f"file not found: {path} (looked in {os.getcwd()})")
    if os.path.isdir(path):
        raise InputError(f"{path} is a directory, not a file")
    return path


def _needs_normalising(t: pa.DataType) -> bool:
    return (
        (pa.types.is_timestamp(t) and t.unit != "us")
        or pa.types.is_date64(t)
        or pa.types.is_string_view(t)
        or pa.types.is_binary_view(t)
    )


def _to_microseconds(name: str, col: pa.ChunkedArray) -> pa.ChunkedArray:
    """A timestamp column in microseconds; a value finer than that is refused by row, not rounded."""
    t = col.type
    try:
        return col.cast(pa.timestamp("us", t.tz))
    except pa.ArrowInvalid:
        import numpy as np

        ticks = pc.fill_null(pc.cast(col, pa.int64()), 0).to_numpy()
        row = int(np.flatnonzero(ticks % {"ns": 1000}.get(t.unit, 1))[0])
        raise InputError(
            f"column {name!r} row {row}: the timestamp {ticks[row]} ({t}) is finer than a microsecond; "
            f"tidal's SQL keeps timestamps in microseconds, so sub-microsecond timestamps (TIMESTAMP_NS) "
            f"are not supported: truncate them to microseconds first"
        ) from None


def _normalise_times(table: pa.Table) -> pa.Table:
    """Timestamps to microseconds (tidal's SQL tick), keeping their time zone; string and binary views
    (Parquet written by Arrow-rs and DataFusion, TPC-H's tpchgen) to the plain string and binary
    columns every kernel takes (few of pyarrow's compute functions take views)."""
    if not any(_needs_normalising(t) for t in table.schema.types):
        return table
    cols = []
    for col in table.columns:
        t = col.type
        if pa.types.is_timestamp(t) and t.unit != "us":
            col = _to_microseconds(table.column_names[len(cols)], col)
        elif pa.types.is_date64(t):
            col = col.cast(pa.date32())
        elif pa.types.is_string_view(t):
            col = col.cast(pa.string())
        elif pa.types.is_binary_view(t):
            col = col.cast(pa.binary())
        cols.append(col)
    return pa.Table.from_arrays(cols, names=table.column_names)


def _scan(source, fmt: str, columns, predicate, filter_any_types: bool):
    """``(table, filtered)`` from one ``pyarrow.dataset`` scan (format, projection and filter), or
    None when the scanner cannot read it: then the format's own reader reads it (or raises the
    error it always did).

    The filter is pushed only where it sees the types it would after the times are normalised (or
    ``filter_any_types``: Parquet), never over float columns: Parquet's statistics leave NaN out, and
    the scanner took a row group of NaN and -inf for the constant -inf (NaN > 0 is true in DuckDB).
    """
    import pyarrow.dataset as ds  # only here: it imports pandas (about half a second)
    import pyarrow.fs as pafs

    file_format = ds.ParquetFileFormat() if fmt == "parquet" else ds.IpcFileFormat()
    try:
        if isinstance(source, io.BytesIO):  # standard input, already read: one fragment over its bytes
            fragment = file_format.make_fragment(pa.py_buffer(source.getvalue()))
            dataset = ds.FileSystemDataset([fragment], fragment.physical_schema, file_format)
        else:  # a local file (never taken for a URI)
            dataset = ds.dataset(os.path.abspath(source), format=file_format, filesystem=pafs.LocalFileSystem())
        types = dataset.schema.types
        push = predicate is not None and not any(pa.types.is_floating(t) for t in types)
        push = push and (filter_any_types or not any(_needs_normalising(t) for t in types))
        table = dataset.to_table(columns=columns, filter=predicate if push else None)
    except (pa.ArrowException, OSError):
        return None
    return table, push


def _read_parquet(source, columns):
    """``(table, False)`` from pyarrow's Parquet reader, or None: then the dataset scanner (and its errors) read it."""
    try:
        table = read_columns(source, columns)
    except (pa.ArrowException, OSError, KeyError, ValueError):
        return None
    if isinstance(source, io.BytesIO):
        source.seek(0)
    return (table.select(columns) if columns is not None else table), False


def _line_of(data: bytes | str, text: str, header: bool) -> int | None:
    """1-based line of the first line equal to ``text`` (pyarrow does not always know it)."""
    if isinstance(data, bytes):
        raw = data
    else:
        with open(data, "rb") as fh:
            raw = fh.read()
    want = text.encode()
    for i, line in enumerate(raw.splitlines()):
        if i == 0 and header:
            continue
        if line.rstrip(b"\r") == want:
            return i + 1
    return None


BLOCK_SIZES = (1 << 20, 16 << 20, 64 << 20)  # a line must fit in a reader's block: bigger ones for longer lines
MAX_LINE_BYTES = BLOCK_SIZES[-1]


def _raw_bytes(source) -> bytes:
    if isinstance(source, io.BytesIO):
        return source.getvalue()
    with open(source, "rb") as fh:
        return fh.read()


def _place(raw: bytes, pos: int) -> str:
    """``line L, column C`` (1-based; the column counts bytes) of byte ``pos``."""
    line = raw.count(b"\n", 0, pos) + 1
    column = pos - (raw.rfind(b"\n", 0, pos) + 1) + 1
    return f"line {line}, column {column}"


def _utf8_error(path: str, source) -> InputError | None:
    """Where the file stops being UTF-8 text, as an error, or None when it is UTF-8."""
    raw = _raw_bytes(source)
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        bad = raw[exc.start : exc.end].hex(" ")
        return InputError(f"{path}: {_place(raw, exc.start)}: invalid UTF-8 (bytes {bad}); the file must be UTF-8 text")
    return None


def _without_invalid_utf8(path: str, source, on_error: str, scan=None):
    """``(source, skipped lines)``: pyarrow cannot even report a malformed row that is not UTF-8, so such
    lines are found first: an error naming the first (line, column), or with ``on_error="skip"`` skipped.
    ``scan``: the file's ``csvscan.text_scan`` (an all-ASCII file needs no UTF-8 check)."""
    if _csvscan().is_utf8(source, scan):
        return source, []
    if on_error == "fail":
        raise _utf8_error(path, source) or InputError(f"{path}: invalid UTF-8 text")
    kept, skipped = [], []
    for number, line in enumerate(_raw_bytes(source).splitlines(keepends=True), start=1):
        try:
            line.decode("utf-8")
        except UnicodeDecodeError:
            if number == 1:  # the header: nothing can be read
                raise _utf8_error(path, source) or InputError(f"{path}: invalid UTF-8 text") from None
            skipped.append(number)
            continue
        kept.append(line)
    return io.BytesIO(b"".join(kept)), skipped


def _long_line_error(path: str, source) -> TidalError:
    """The error for a line longer than the largest block the readers are given: names the longest."""
    raw = _raw_bytes(source)
    start, number, longest = 0, 1, (0, 0)
    while start < len(raw):
        end = raw.find(b"\n", start)
        end = len(raw) if end < 0 else end
        longest = max(longest, (end - start, -number))
        start, number = end + 1, number + 1
    return ResourceError(
        f"{path}: line {-longest[1]} is {longest[0]:,} bytes long; lines longer than {MAX_LINE_BYTES:,} bytes "
        "are not supported"
    )


def _rewound(source):  # standard input (a BytesIO) read again from its start
    return io.BytesIO(source.getvalue()) if isinstance(source, io.BytesIO) else source


def _with_block_sizes(path: str, source, read):
    """``read(block_size)`` with the smallest block its longest line fits in (pyarrow's readers need a
    whole line in one block); a line too long for the largest is a :class:`ResourceError` naming it."""
    for size in BLOCK_SIZES:
        try:
            return read(size)
        except pa.ArrowInvalid as exc:
            if "straddl" not in str(exc):
                raise
            if isinstance(source, io.BytesIO):
                source.seek(0)
    raise _long_line_error(path, source)


def _without_unterminated(path: str, source, options: dict, on_error: str, delimiter: str):
    """``(source, skipped lines)``: a CSV whose quote never closes swallows every later row into one
    field. Reported (file, line, column), or with ``on_error="skip"`` its line is skipped and the rows
    after it are read as rows."""
    quote = options.get("quote", '"')
    if not quote or options.get("escape"):
        return source, []
    sep = _csv_settings(options, delimiter)[0]
    skipped: list[int] = []
    while (pos := _csvscan().unterminated_quote(source, quote, sep)) >= 0:
        raw = _raw_bytes(source)
        if on_error == "fail":
            raise InputError(
                f"{path}: {_place(raw, pos)}: unterminated quoted field (the quote never closes) "
                "(use --on-error skip to skip the row)"
            )
        start = raw.rfind(b"\n", 0, pos) + 1
        end = raw.find(b"\n", pos)
        end = len(raw) if end < 0 else end + 1
        # the line number in the file as read (earlier skipped lines come before it)
        line = raw.count(b"\n", 0, pos) + 1 + sum(1 for n in skipped if n <= raw.count(b"\n", 0, pos) + 1)
        skipped.append(line)
        source = io.BytesIO(raw[:start] + raw[end:])
    return source, skipped


def _read_whole_lines(source, read, path: str, options: dict, delimiter: str, header: bool, bad: list, scan=None):
    """The table when the CSV reads as one row per line, no quote left open (``csvscan.rows_are_lines``,
    given the file's ``scan``); else None (``bad`` emptied, ``source`` rewound): the quote scan and the
    read run as for any file."""
    quote = options.get("quote", '"')
    if not quote or options.get("escape"):
        return None  # no quote scan needed, or escapes the scan does not model: read as before
    try:
        table = _with_block_sizes(path, source, read)
    except (pa.ArrowInvalid, UnicodeDecodeError, TidalError):
        table = None
    if isinstance(source, io.BytesIO):
        source.seek(0)
    if table is not None:
        lines = table.num_rows + len(bad) + int(header) + int(options.get("skip", 0))
        if _csvscan().rows_are_lines(source, lines, quote, _csv_settings(options, delimiter)[0], scan):
            return table
    bad.clear()
    return None


def _invalid_utf8_rows(table: pa.Table) -> tuple[pa.Table, int]:
    """Rows whose text columns are not UTF-8 (pyarrow reads them as binary) dropped, the columns as
    text; and how many rows were dropped."""
    binary = [i for i, t in enumerate(table.schema.types) if pa.types.is_binary(t) or pa.types.is_large_binary(t)]
    if not binary:
        return table, 0
    keep = [True] * table.num_rows
    for i in binary:
        for r, v in enumerate(table.column(i).to_pylist()):
            if v is not None and keep[r]:
                try:
                    v.decode("utf-8")
                except UnicodeDecodeError:
                    keep[r] = False
    table = table.filter(pa.array(keep))
    for i in binary:
        table = table.set_column(i, table.field(i).with_type(pa.string()), table.column(i).cast(pa.string()))
    return table, keep.count(False)


def _csv_settings(options: dict, delimiter: str):
    import pyarrow.csv as pv

    unknown = set(options) - CSV_OPTIONS
    if unknown:
        raise InputError(f"read_csv: unknown option(s) {sorted(unknown)}; known: {sorted(CSV_OPTIONS)}")
    sep = options.get("sep", options.get("delim", options.get("delimiter", delimiter)))
    for name, value in (("sep", sep), ("quote", options.get("quote", '"')), ("escape", options.get("escape", "\\"))):
        if value is not False and not (isinstance(value, str) and len(value) == 1):
            raise InputError(f"read_csv: {name} must be one character, got {value!r}")
    header = options.get("header", True)
    header = header if isinstance(header, bool) else str(header).lower() in ("true", "1", "yes")
    read_opts = pv.ReadOptions(autogenerate_column_names=not header, skip_rows=int(options.get("skip", 0)))
    return sep, header, read_opts


def _csv_options(options: dict, delimiter: str, columns, schema, on_invalid, source):
    """``(header, raw, read, parse, convert)``: pyarrow's CSV reader options for these settings, and
    ``raw(name)``, the reader's name of a column."""
    import pyarrow.csv as pv

    sep, header, read_opts = _csv_settings(options, delimiter)
    parse_opts = pv.ParseOptions(
        delimiter=sep,
        quote_char=options.get("quote", '"'),
        escape_char=options.get("escape", False),
        invalid_row_handler=on_invalid,
        ignore_empty_lines=not _one_column(source, sep, read_opts, columns),
    )
    nulls = options.get("null", options.get("nullstr"))
    # without a header pyarrow names columns f0, f1, ...; tidal (like DuckDB) calls them column0, column1, ...
    raw = (lambda n: n) if header else (lambda n: "f" + n[len("column") :])
    convert_opts = pv.ConvertOptions(
        include_columns=[raw(c) for c in columns] if columns is not None else None,
        null_values=[nulls] if nulls is not None else CSV_NULLS,
        strings_can_be_null=True,  # an empty field is NULL, as in DuckDB
        column_types=None if schema is None else {raw(f.name): f.type for f in schema},
    )
    return header, raw, read_opts, parse_opts, convert_opts


def _named_columns(table: pa.Table, header: bool) -> pa.Table:
    return table if header else table.rename_columns(["column" + n[1:] for n in table.column_names])


def _read_csv(path: str, source, options: dict, on_error: str, columns, delimiter: str, schema) -> FileRead:
    import pyarrow.csv as pv

    bad: list = []

    def on_invalid(row) -> str:
        # always skip inside pyarrow (an error raised from here escapes as an unraisable exception);
        # the first bad row is reported below when the user did not ask to skip
        bad.append(row)
        return "skip"

    header, _, read_opts, parse_opts, convert_opts = _csv_options(
        options, delimiter, columns, schema, on_invalid, source
    )
    given, mapped = source, _csvscan().mapped(source)  # the file mapped once: the scan and the reader share it
    scan = _csvscan().text_scan(source if mapped is None else mapped)  # line ends and ASCII, for both checks below
    source, not_utf8 = _without_invalid_utf8(path, source, on_error, scan)

    def read(block_size: int, serial: bool = False) -> pa.Table:
        opts = pv.ReadOptions(
            autogenerate_column_names=read_opts.autogenerate_column_names,
            skip_rows=read_opts.skip_rows,
            block_size=block_size,
            use_threads=not serial and pa.cpu_count() > 1,  # one thread: the serial reader, without a pool's cost
        )
        data = pa.BufferReader(mapped) if source is given and mapped is not None else source
        return pv.read_csv(data, read_options=opts, parse_options=parse_opts, convert_options=convert_opts)

    # read first: when rows and lines agree, no quote is left open and no need to scan every quote
    table = _read_whole_lines(source, read, path, options, delimiter, header, bad, scan) if not not_utf8 else None
    unterminated: list[int] = []
    if table is None:
        source, unterminated = _without_unterminated(path, source, options, on_error, delimiter)
    unterminated = not_utf8 + unterminated
    try:
        if table is None:
            table = _with_block_sizes(path, source, read)
    except pa.ArrowInvalid as exc:
        raise InputError(f"{path}: {exc}".replace("\n", " ")) from None
    except UnicodeDecodeError:  # column names that are not UTF-8
        raise _utf8_error(path, source) or InputError(f"{path}: invalid UTF-8 text") from None
    if bad and any(r.number in (None, -1) for r in bad):  # a parallel read does not number rows: read again in order
        bad.clear()
        if isinstance(source, io.BytesIO):
            source.seek(0)
        _with_block_sizes(path, source, lambda size: read(size, serial=True))
    if bad and on_error == "fail":
        row = bad[0]
        data = source.getvalue() if isinstance(source, io.BytesIO) else source
        line = row.number if row.number not in (None, -1) else _line_of(data, row.text, header)
        column = min(row.expected_columns, row.actual_columns) + 1
        raise InputError(
            f"{path}: line {line}, column {column}: malformed row, expected {row.expected_columns} "
            f"fields, got {row.actual_columns}: {row.text!r} (use --on-error skip to skip such rows)"
        )
    skipped_lines = [r.number for r in bad] + unterminated
    table, invalid = _invalid_utf8_rows(table)
    if invalid and on_error == "fail":
        raise _utf8_error(path, source) or InputError(f"{path}: invalid UTF-8 text")
    return FileRead(path, _named_columns(table, header), len(bad) + len(unterminated) + invalid, skipped_lines)


def read_file(
    path: str,
    *,
    format: str | None = None,
    options: dict | None = None,
    on_error: str = "fail",
    columns: list[str] | None = None,
    predicate: pc.Expression | None = None,
    schema: pa.Schema | None = None,
) -> FileRead:
    """Read ``path`` (relative to the current directory) into an Arrow table.

    ``options`` are the reader's settings (CSV: ``sep``, ``header``, ``quote``, ``escape``,
    ``skip``, ``null``); ``columns`` and ``predicate`` push a projection and a filter into
    the read; ``schema`` (from :func:`file_schema`) fixes the CSV column types.
    ``on_error`` is ``"fail"`` or ``"skip"`` (malformed CSV rows).
    """
    if on_error not in ("fail", "skip"):
        raise InputError(f"on_error must be 'fail' or 'skip', not {on_error!r}")
    options = dict(options or {})
    fmt = file_format(path, format)
    if fmt == NO_FROM:
        table = pa.table({"__one": pa.array([1], pa.int8())})
        return FileRead(path, table.select(columns) if columns is not None else table)
    source = _open(path)
    delimiter = "\t" if fmt == "tsv" else ","
    if fmt in ("csv", "tsv"):
        # pyarrow's CSV reader, not the dataset scanner: it converts only the projected columns and
        # parses blocks on every core (the scanner converts every column, one block at a time: a
        # 300,000-row taxi CSV took 0.08 s instead of 0.04 s), and it reports malformed rows
        scanned = None
    elif options:
        raise InputError(f"{path}: options {sorted(options)} apply to CSV files only")
    elif fmt == "parquet":
        scanned = _read_parquet(source, columns) if predicate is None else None
        scanned = scanned or _scan(source, fmt, columns, predicate, True)
    elif fmt == "arrow":  # the IPC file format (Feather 2) only: a stream is left to pyarrow.ipc below
        scanned = _scan(source, fmt, columns, predicate, False)
    else:  # JSON stays with read_json: the scanner fixes the fields from the first block, read_json adds later ones
        scanned = None
    filtered = False
    if scanned is not None:
        got, filtered = FileRead(path, scanned[0]), scanned[1]
    elif fmt in ("csv", "tsv"):
        got = _read_csv(path, source, options, on_error, columns, delimiter, schema)
    else:
        try:
            if fmt == "json":
                import pyarrow.json as pj

                if not _csvscan().is_utf8(source):
                    raise _utf8_error(path, source) or InputError(f"{path}: invalid UTF-8 text")
                table = _with_block_sizes(
                    path, source, lambda size: pj.read_json(source, read_options=pj.ReadOptions(block_size=size))
                )
                again = _rewound(source)
                table = json_dates(table, lambda o: _with_block_sizes(
                    path, again, lambda n: pj.read_json(_rewound(again), pj.ReadOptions(block_size=n), o)))  # fmt: skip
            elif fmt == "parquet":
                import pyarrow.parquet as pq

                table = pq.read_table(source, columns=columns)  # filtered below (statistics drop NaN)
            else:
                import pyarrow.ipc as ipc

                handle = pa.BufferReader(source.getvalue()) if isinstance(source, io.BytesIO) else pa.memory_map(source)
                try:
                    table = ipc.open_file(handle).read_all()
                except pa.ArrowInvalid:
                    handle.seek(0)
                    table = ipc.open_stream(handle).read_all()
        except (pa.ArrowInvalid, OSError) as exc:
            raise InputError(f"{path}: cannot read as {fmt} (is it empty, truncated or damaged?): {exc}") from None
        if columns is not None and fmt != "parquet":
            missing = [c for c in columns if c not in table.column_names]
            if missing:
                raise InputError(f"{path}: no column(s) {missing}; the file has {table.column_names}")
            table = table.select(columns)
        got = FileRead(path, table)
    if fmt == "arrow":  # IPC is mapped as it is: damaged buffers show only when read, so check them now
        try:
            got.table.validate(full=True)
        except pa.ArrowInvalid as exc:
            raise InputError(f"{path}: cannot read as arrow (the file is damaged): {exc}") from None
    if got.table.num_columns == 0 and columns is None:
        raise InputError(f"{path}: the file has no columns (is it empty?)")
    got.table = _normalise_times(got.table)
    if predicate is not None and not filtered:
        got.table = got.table.filter(predicate)
    return got


def file_schema(path: str, *, format: str | None = None, options: dict | None = None) -> pa.Schema:
    """The columns of ``path`` and their inferred types (reads Parquet/IPC metadata only)."""
    fmt = file_format(path, format)
    if fmt == NO_FROM:
        return pa.schema([pa.field("__one", pa.int8())])
    if fmt == "parquet" and not _is_stdin(path):
        _open(path)
        try:
            schema = read_schema(path)
        except (pa.ArrowException, OSError) as exc:
            raise InputError(f"{path}: cannot read as parquet (is it empty, truncated or damaged?): {exc}") from None
        return _normalise_times(schema.empty_table()).schema
    if fmt in ("csv", "tsv"):
        import pyarrow.csv as pv

        # types are inferred from the first megabyte; the full read then uses them for every row
        sep, header, read_opts = _csv_settings(dict(options or {}), "\t" if fmt == "tsv" else ",")
        source = _open(path)
        key = sample_key(source, sep, read_opts)
        raw_head = _head(source)
        head = _utf8_head(raw_head)
        try:
            sample = pv.read_csv(
                io.BytesIO(head),
                read_options=read_opts,
                parse_options=pv.ParseOptions(delimiter=sep, invalid_row_handler=lambda row: "skip"),
                convert_options=pv.ConvertOptions(null_values=CSV_NULLS, strings_can_be_null=True),
            )
        except pa.ArrowInvalid as exc:
            raise InputError(f"{path}: {exc}") from None
        except UnicodeDecodeError:  # column names that are not UTF-8
            raise _utf8_error(path, _open(path)) or InputError(f"{path}: invalid UTF-8 text") from None
        remember_width(key, raw_head, sample.num_columns)  # the read's one-column check uses it (_one_column)
        # a column with no value in the sample is VARCHAR, as in DuckDB (pyarrow's null type has no functions)
        schema = pa.schema([f.with_type(pa.string()) if pa.types.is_null(f.type) else f for f in sample.schema])
        if not header:
            schema = pa.schema([pa.field(f"column{i}", f.type) for i, f in enumerate(schema)])
        return _normalise_times(schema.empty_table()).schema
    return read_file(path, format=format, options=options, on_error="skip").table.schema
