"""Growing input: standard input and files that grow (``tail``), read as they are written.

A :class:`TextFeed` reads lines of CSV (or TSV) or JSON lines from a :class:`PipeBytes` (standard
input) or a :class:`FileBytes` (a file that another process appends to) and parses them into
Arrow record batches with a fixed schema (:func:`live_schema` infers it from the first rows).
Batches are cut by wall clock as well as by size: a batch goes out once ``latency`` seconds have
passed since its first line arrived, or once it holds ``max_rows`` lines, whichever comes first,
so a slow producer's rows reach the query within the latency and a fast one's in large batches.
While nothing arrives the feed yields :data:`~tidal.core.feed.IDLE` heartbeats.

A record is one line: a quoted CSV field holding a line break is not supported (it is reported as
a malformed row naming its line). A line is read only once its newline has arrived, except the
last line of input that ended without one.

The feed's position is the byte offset just after the last line consumed (with the line and row
counts, for error messages and row ordinals), so a file reopened there continues with the next
line. Standard input cannot be reopened: a pipe's bytes are gone once read.
"""

from __future__ import annotations

import io
import os
import re
import select
import sys
import time
from collections.abc import Callable, Iterator

import pyarrow as pa

from ..core.errors import InputError
from ..core.feed import IDLE, Feed
from ..core.messages import Completed, Punctuation
from .csv_nulls import CSV_NULLS
from .files import _csv_settings, _normalise_times

DEFAULT_LATENCY = 0.25  # seconds: a batch is cut at most this long after its first line arrived
MAX_ROWS = 65_536
READ_BYTES = 1 << 20
STOPS = ("never", "eof")


class PipeBytes:
    """Standard input, read once: ``read(timeout)`` returns new bytes, ``b''`` when none came in time,
    ``None`` at end of input. Bytes read ahead (to infer the schema) are served first."""

    def __init__(self, stream=None):
        self.stream = stream if stream is not None else sys.stdin
        self.ahead = b""
        self.consumed = 0  # bytes handed out by read()
        self.eof = False
        try:
            self.fd = self.stream.fileno()
        except (AttributeError, OSError, io.UnsupportedOperation):
            self.fd = None

    def _raw(self, timeout: float) -> bytes | None:
        if self.eof:
            return None
        if self.fd is not None:
            ready, _, _ = select.select([self.fd], [], [], max(timeout, 0))
            if not ready:
                return b""
            data = os.read(self.fd, READ_BYTES)
        else:  # a stream without a descriptor (an in-memory one in tests): reads never wait
            buffer = getattr(self.stream, "buffer", self.stream)
            data = buffer.read1(READ_BYTES) if hasattr(buffer, "read1") else buffer.read(READ_BYTES)
            if isinstance(data, str):
                data = data.encode()
        if not data:
            self.eof = True
            return None
        return data

    def peek_lines(self, lines: int) -> bytes:
        """At least ``lines`` complete lines (or everything, at end of input) without consuming them,
        plus whatever else has already arrived."""
        while self.ahead.count(b"\n") < lines and len(self.ahead) < READ_BYTES:
            data = self._raw(1.0)
            if data is None:
                break
            self.ahead += data
        while self.fd is not None and len(self.ahead) < READ_BYTES:  # and what is there already, without waiting
            data = self._raw(0)
            if not data:
                break
            self.ahead += data
        return self.ahead

    def claim(self, reader) -> None:
        """Standard input is one pipe: a second reader in the same run would get only part of it."""
        owner = getattr(self, "owner", None)
        if owner is not None and owner is not reader:
            raise InputError(
                "standard input is read twice in one query (a pipe can be read once): not supported; "
                "save it to a file and name the file instead"
            )
        self.owner = reader

    def seek(self, offset: int) -> None:
        if offset != self.consumed:
            raise InputError(
                "standard input cannot be resumed at byte "
                f"{offset}: a pipe cannot be re-read (use tail(path => ...) on a file)"
            )

    def read(self, timeout: float) -> bytes | None:
        if self.ahead:
            data, self.ahead = self.ahead, b""
        else:
            data = self._raw(timeout)
        if data:
            self.consumed += len(data)
        return data

    def close(self) -> None:
        pass


_STDIN: dict[int, PipeBytes] = {}


def stdin_bytes() -> PipeBytes:
    """The one reader of the current ``sys.stdin`` (a query reads standard input once, from plan to run)."""
    got = _STDIN.get(id(sys.stdin))
    if got is None or got.stream is not sys.stdin:
        _STDIN.clear()
        got = _STDIN[id(sys.stdin)] = PipeBytes(sys.stdin)
    return got


class FileBytes:
    """A file another process appends to, read from ``offset`` on; polled when there is nothing new."""

    def __init__(self, path: str, poll: float = 0.02):
        self.path = path
        self.poll = poll
        self.handle = None
        self.offset = 0

    def _open(self):
        if self.handle is None:
            if not os.path.exists(self.path):
                raise InputError(f"file not found: {self.path} (looked in {os.getcwd()})")
            if os.path.isdir(self.path):
                raise InputError(f"{self.path} is a directory, not a file")
            self.handle = open(self.path, "rb")  # noqa: SIM115 (closed by close())
        return self.handle

    def peek_lines(self, lines: int, wait: bool = True) -> bytes:
        with open(self._open().name, "rb") as fh:
            data = fh.read(READ_BYTES)
            while wait and data.count(b"\n") < lines and len(data) < READ_BYTES:
                time.sleep(self.poll)
                data += fh.read(READ_BYTES - len(data))
        return data

    def seek(self, offset: int) -> None:
        size = os.path.getsize(self.path)
        if size < offset:
            raise InputError(
                f"{self.path} has {size} bytes, fewer than the {offset} already read: the file was truncated "
                "or replaced since the state was saved"
            )
        self._open().seek(offset)
        self.offset = offset

    def read(self, timeout: float, stop_at_eof: bool = False) -> bytes | None:
        handle = self._open()
        deadline = time.monotonic() + max(timeout, 0)
        while True:
            data = handle.read(READ_BYTES)
            if data:
                self.offset += len(data)
                return data
            if stop_at_eof:
                return None
            left = deadline - time.monotonic()
            if left <= 0:
                return b""
            time.sleep(min(self.poll, left))

    def close(self) -> None:
        if self.handle is not None:
            self.handle.close()
            self.handle = None


def _sample_table(sample: bytes, fmt: str, options: dict, path: str) -> pa.Table:
    import pyarrow.csv as pv
    import pyarrow.json as pj

    if fmt == "json":
        try:
            return pj.read_json(io.BytesIO(sample))
        except pa.ArrowInvalid as exc:
            raise InputError(f"{path}: cannot read the first lines as JSON: {exc}") from None
    sep, _, read_opts = _csv_settings(options, "\t" if fmt == "tsv" else ",")
    try:
        return pv.read_csv(
            io.BytesIO(sample),
            read_options=read_opts,
            parse_options=pv.ParseOptions(delimiter=sep, invalid_row_handler=lambda row: "skip"),
            convert_options=pv.ConvertOptions(null_values=CSV_NULLS, strings_can_be_null=True),
        )
    except pa.ArrowInvalid as exc:
        raise InputError(f"{path}: {exc}") from None


def _complete_lines(data: bytes, at_eof: bool) -> bytes:
    if at_eof or b"\n" not in data:
        return data
    return data[: data.rindex(b"\n") + 1]


def live_schema(source, path: str, fmt: str, options: dict, at_eof: bool = False) -> pa.Schema:
    """The columns of a growing input and their types, inferred from the rows there so far (at least
    one: it waits for the header and a first row). Timestamps are read as microseconds, as files are."""
    _, header, _ = _csv_settings(options, ",") if fmt != "json" else (None, False, None)
    need = 1 + int(header) + int(options.get("skip", 0) or 0)
    sample = source.peek_lines(need)
    eof = at_eof or getattr(source, "eof", False)
    sample = _complete_lines(sample, eof)
    if not sample.strip():
        raise InputError(f"{path}: no rows to infer the columns from (empty input)")
    table = _sample_table(sample, fmt, options, path)
    schema = pa.schema([f.with_type(pa.string()) if pa.types.is_null(f.type) else f for f in table.schema])
    if fmt != "json" and not header:
        schema = pa.schema([pa.field(f"column{i}", f.type) for i, f in enumerate(schema)])
    return _normalise_times(schema.empty_table()).schema


_ROW = re.compile(r"Row #(\d+)")
_VALUE = re.compile(r"invalid value '(.*)'$")


class LineParser:
    """Complete lines → a record batch with the input's schema (``columns``: those to keep)."""

    def __init__(self, path: str, fmt: str, schema: pa.Schema, columns: list[str], options: dict, on_error: str):
        self.path, self.fmt, self.schema, self.columns = path, fmt, schema, columns
        self.options = dict(options)
        self.on_error = on_error
        self.skipped = 0
        if fmt != "json":
            sep, self.header, _ = _csv_settings(self.options, "\t" if fmt == "tsv" else ",")
            self.sep = sep

    def parse(self, data: bytes, first_line: int) -> pa.Table:
        """``data``: whole lines, the first of which is line ``first_line`` (1-based) of the input."""
        if self.fmt == "json":
            return self._json(data, first_line)
        return self._csv(data, first_line)

    def _json(self, data: bytes, first_line: int) -> pa.Table:
        import pyarrow.json as pj

        wanted = pa.schema([self.schema.field(c) for c in self.columns])
        opts = pj.ParseOptions(explicit_schema=wanted, unexpected_field_behavior="ignore")
        try:
            table = pj.read_json(io.BytesIO(data), parse_options=opts)
        except pa.ArrowInvalid as exc:
            last = first_line + data.count(b"\n") - 1
            raise InputError(f"{self.path}: lines {first_line}-{last}: cannot read as JSON: {exc}") from None
        return _normalise_times(table.select(self.columns))

    def _csv(self, data: bytes, first_line: int) -> pa.Table:
        import pyarrow.csv as pv

        bad: list = []

        def on_invalid(row) -> str:
            bad.append(row)
            return "skip"

        raw = (lambda n: n) if self.header else (lambda n: "f" + n[len("column") :])
        names = [raw(n) for n in self.schema.names]
        nulls = self.options.get("null", self.options.get("nullstr"))
        try:
            table = pv.read_csv(
                io.BytesIO(data),
                read_options=pv.ReadOptions(column_names=names),
                parse_options=pv.ParseOptions(
                    delimiter=self.sep,
                    quote_char=self.options.get("quote", '"'),
                    escape_char=self.options.get("escape", False),
                    invalid_row_handler=on_invalid,
                    ignore_empty_lines=len(names) > 1,
                ),
                convert_options=pv.ConvertOptions(
                    include_columns=[raw(c) for c in self.columns],
                    null_values=[nulls] if nulls is not None else CSV_NULLS,
                    strings_can_be_null=True,
                    column_types={raw(f.name): _parse_type(f.type) for f in self.schema},
                ),
            )
        except pa.ArrowInvalid as exc:
            text = str(exc).replace("\n", " ")
            m = _ROW.search(text)
            value = _VALUE.search(text)
            line = _line_with_field(data, value.group(1), self.sep, first_line) if value else None
            if m:
                where = f"line {first_line + int(m.group(1)) - 1}"
            else:
                where = f"line {line}" if line is not None else f"lines from {first_line}"
            raise InputError(
                f"{self.path}: {where}: {text} (the column types were inferred from the first rows of the input)"
            ) from None
        if bad:
            row = bad[0]
            line = first_line + row.number - 1 if row.number not in (None, -1) else _line_in(data, row.text, first_line)
            if self.on_error == "fail":
                column = min(row.expected_columns, row.actual_columns) + 1
                raise InputError(
                    f"{self.path}: line {line}, column {column}: malformed row, expected {row.expected_columns} "
                    f"fields, got {row.actual_columns}: {row.text!r} (use --on-error skip to skip such rows)"
                )
            self.skipped += len(bad)
        if not self.header:
            table = table.rename_columns(["column" + n[1:] for n in table.column_names])
        return _normalise_times(table.select(self.columns))


def _line_in(data: bytes, text: str, first_line: int) -> int | None:
    """The line number of the first of ``data``'s lines equal to ``text`` (pyarrow does not always say)."""
    want = text.encode()
    for i, line in enumerate(data.splitlines()):
        if line.rstrip(b"\r") == want:
            return first_line + i
    return None


def _line_with_field(data: bytes, value: str, sep: str, first_line: int) -> int | None:
    """The line number of the first of ``data``'s lines with a field equal to ``value``."""
    for i, line in enumerate(data.decode("utf-8", "replace").splitlines()):
        if value in (f.strip('"') for f in line.rstrip("\r").split(sep)):
            return first_line + i
    return None


def _parse_type(t: pa.DataType) -> pa.DataType:
    # a timestamp inferred as seconds from the first rows may have fractions later: parse at microseconds
    return pa.timestamp("us", t.tz) if pa.types.is_timestamp(t) else t


class TextFeed(Feed):
    """Lines of a growing input as messages: each batch of lines is parsed and passed to
    ``to_messages(table, first_row)``, which returns the messages for it (an ``EventBatch``, then
    only punctuations). At the end of input (standard input closed, or ``stop='eof'`` at the end of
    a file) it yields ``Completed``; with ``stop='never'`` a file is followed until interrupted."""

    def __init__(
        self,
        source,
        parser: LineParser,
        to_messages: Callable[[pa.Table, int], list],
        *,
        stop: str = "eof",
        latency: float = DEFAULT_LATENCY,
        max_rows: int = MAX_ROWS,
        on_rows: Callable[[int], None] | None = None,
    ):
        if stop not in STOPS:
            raise InputError(f"stop must be one of {', '.join(STOPS)}, got {stop!r}")
        if latency < 0:
            raise InputError(f"the batch latency must not be negative, got {latency}")
        if max_rows < 1:
            raise InputError(f"a batch holds at least one line, got batch rows {max_rows}")
        self.source, self.parser, self.to_messages = source, parser, to_messages
        self.stop, self.latency, self.max_rows = stop, latency, max_rows
        self.on_rows = on_rows
        self._position: dict = {"offset": 0, "line": 0, "rows": 0, "then": []}

    def position(self) -> dict:
        return dict(self._position)

    def close(self) -> None:
        self.source.close()

    def open(self, position=None) -> Iterator:
        pos = dict(position) if position else {"offset": 0, "line": 0, "rows": 0, "then": []}
        self._position = dict(pos)
        return self._messages(pos)  # a generator: nothing is read (or sought) before the first message

    def _read(self, timeout: float) -> bytes | None:
        if isinstance(self.source, FileBytes):
            return self.source.read(timeout, stop_at_eof=self.stop == "eof")
        return self.source.read(timeout)

    def _messages(self, pos: dict) -> Iterator:
        offset, line, rows = pos["offset"], pos["line"], pos["rows"]
        for kind, t in pos.get("then", []):  # messages of a batch delivered only in part before a restart
            self._position = {**self._position, "then": self._position["then"][1:]}
            yield Punctuation(t) if kind == "punctuation" else Completed()
        if pos.get("done"):
            return
        if hasattr(self.source, "claim"):
            self.source.claim(self)
        self.source.seek(offset)
        header_lines = 0
        if offset == 0 and self.parser.fmt != "json":
            header_lines = int(self.parser.options.get("skip", 0) or 0) + int(self.parser.header)
        buffer = b""  # bytes after the last complete line
        lines: list[bytes] = []  # complete lines waiting to form a batch
        first_at = 0.0
        eof = False
        extra = 0  # a newline added to a last line that ended without one (not a byte of the input)
        while True:
            wait = self.latency - (time.monotonic() - first_at) if lines else max(self.latency, 0.05)
            data = self._read(max(wait, 0)) if not eof else None
            if data is None:
                eof = True
                if buffer.strip():
                    buffer += b"\n"
                    extra = 1
            elif data:
                buffer += data
            if b"\n" in buffer:
                cut = buffer.rindex(b"\n") + 1
                new = [part + b"\n" for part in buffer[: cut - 1].split(b"\n")]  # (a lone \r ends no record)
                buffer = buffer[cut:]
                while header_lines and new:
                    consumed = new.pop(0)
                    offset += len(consumed) - (extra if not new else 0)
                    line += 1
                    header_lines -= 1
                if new and not lines:
                    first_at = time.monotonic()
                lines.extend(new)
            if lines and (eof or len(lines) >= self.max_rows or time.monotonic() - first_at >= self.latency):
                take, lines = lines[: self.max_rows], lines[self.max_rows :]
                chunk = b"".join(take)
                table = self.parser.parse(chunk, line + 1)
                offset += len(chunk) - (extra if eof and not lines else 0)
                line += len(take)
                before = rows
                rows += table.num_rows
                if self.on_rows is not None:
                    self.on_rows(table.num_rows)
                yield from self._deliver(self.to_messages(table, before), offset, line, rows)
                if lines:
                    first_at = time.monotonic()
                continue
            if eof:
                self._position = {"offset": offset, "line": line, "rows": rows, "then": [], "done": True}
                self.source.close()
                yield Completed()
                return
            if data == b"" and not lines:
                yield IDLE

    def _deliver(self, messages: list, offset: int, line: int, rows: int) -> Iterator:
        rest = []
        for m in messages[1:]:
            if isinstance(m, Punctuation):
                rest.append(["punctuation", m.time])
            else:
                raise TypeError(f"a live batch's messages after the first must be punctuations, got {m!r}")
        for i, m in enumerate(messages):
            self._position = {"offset": offset, "line": line, "rows": rows, "then": rest[i:]}
            yield m


LIVE_FORMATS = ("csv", "tsv", "json")


def live_bytes(path: str, kind: str):
    """The byte reader of a growing input: standard input's one reader, or a fresh reader of the file."""
    return stdin_bytes() if kind == "stdin" else FileBytes(path)


def input_schema(path: str, fmt: str, options: dict, live: dict) -> pa.Schema:
    """:func:`live_schema` of standard input or of a file being tailed (which it waits for the first
    rows of, unless ``stop='eof'``)."""
    kind = live.get("kind", "tail")
    source = live_bytes(path, kind)
    if kind == "stdin":
        if getattr(source, "owner", None) is not None:
            source.claim(object())  # already read by another part of this query: the error says so
        return live_schema(source, path, fmt, options)
    source._open()
    try:
        if live.get("stop") == "eof":
            source.peek_lines = lambda lines, _peek=source.peek_lines: _peek(lines, wait=False)
            return live_schema(source, path, fmt, options, at_eof=True)
        return live_schema(source, path, fmt, options)
    finally:
        source.close()
