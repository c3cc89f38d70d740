"""A file fuzzer (issue 16): CSV, JSON, Parquet and Arrow files, damaged at random, read by
``tidal query``. Every run ends in an answer or in one line and exit status 2 (no traceback, no
internal error, no hang), and with ``--on-error skip`` a CSV whose lines were damaged one by one
gives rows read + rows skipped == the rows in the file.

Budget: ``FUZZ_EXAMPLES`` below in CI; ``TIDAL_FUZZ_EXAMPLES=2000`` for a longer campaign.
"""

from __future__ import annotations

import io
import json
import re

import pyarrow as pa
import pyarrow.ipc as ipc
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .fuzzing import EXAMPLES, Worker, verdict

FUZZ_EXAMPLES = EXAMPLES or 60

values = st.fixed_dictionaries(
    {
        "id": st.integers(-(10**6), 10**6),
        "name": st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=8),
        "price": st.floats(allow_nan=False, allow_infinity=False, width=32),
        "at": st.datetimes().map(lambda d: d.replace(microsecond=0).isoformat(sep=" ")),
    }
)
tables = st.lists(values, min_size=1, max_size=30)

NASTY = [b'"', b",", b"\n", b"\r", b"\xff", b"\xfe\xff", b"\x00", b'""', b"{", b"}", b"\\", b"\t", b"\xc3", b"9" * 40]


def _csv_text(rows, quoted: bool = True) -> bytes:
    out = io.StringIO()
    out.write("id,name,price,at\n")
    for r in rows:
        name = '"' + r["name"].replace('"', '""') + '"' if quoted else r["name"]
        out.write(f"{r['id']},{name},{r['price']},{r['at']}\n")
    return out.getvalue().encode()


# names without quotes, delimiters or line ends: each line of such a file is one record until damaged
plain_values = values.map(lambda r: {**r, "name": "".join(c for c in r["name"] if c.isalnum()) or "n"})


def _binary(rows, fmt: str) -> bytes:
    table = pa.Table.from_pylist(rows)
    sink = io.BytesIO()
    if fmt == "parquet":
        pq.write_table(table, sink)
    else:
        with ipc.new_file(sink, table.schema) as w:
            w.write_table(table)
    return sink.getvalue()


@st.composite
def damaged(draw):
    """``(extension, bytes)``: a file of some format, damaged anywhere."""
    rows = draw(tables)
    fmt = draw(st.sampled_from(["csv", "json", "parquet", "arrow"]))
    if fmt == "csv":
        data = _csv_text(rows)
    elif fmt == "json":
        data = "".join(json.dumps(r) + "\n" for r in rows).encode()
    else:
        data = _binary(rows, fmt)
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.integers(0, len(data)))
        action = draw(st.sampled_from(["insert", "delete", "truncate", "flip", "empty", "garbage"]))
        if action == "insert":
            data = data[:i] + draw(st.sampled_from(NASTY)) + data[i:]
        elif action == "delete":
            data = data[:i] + data[i + draw(st.integers(1, 40)) :]
        elif action == "truncate":
            data = data[:i]
        elif action == "flip":
            data = data[:i] + bytes(b ^ 0xA5 for b in data[i : i + 8]) + data[i + 8 :]
        elif action == "empty":
            data = b""
        else:
            data = draw(st.binary(max_size=200)) + data
    return fmt, data


# a damage that stays inside one line: each damaged line is one bad row (or still a good one)
LINE_DAMAGE = ["extra field", "missing field", "stray quote", "invalid utf-8", "garbage", "bad number"]


@st.composite
def damaged_lines(draw):
    """``(csv bytes, data lines)``: a CSV without quotes with some of its lines damaged, at most one stray
    quote (which then never closes: the reader would swallow every later line)."""
    lines = _csv_text(draw(st.lists(plain_values, min_size=1, max_size=30)), quoted=False).split(b"\n")[:-1]
    quoted = False
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(1, len(lines) - 1)) if len(lines) > 1 else 0
        if i == 0:
            break
        damage = draw(st.sampled_from(LINE_DAMAGE))
        if damage == "stray quote" and quoted:
            continue
        quoted = quoted or damage == "stray quote"
        line = lines[i]
        lines[i] = {
            "extra field": line + b",extra",
            "missing field": line.rpartition(b",")[0],
            "stray quote": b'"' + line,
            "invalid utf-8": line.replace(b",", b",\xff", 1),
            "garbage": line + b",,,,",
            "bad number": b"x" + line,
        }[damage]
    return b"\n".join(lines) + b"\n", len(lines) - 1


@pytest.fixture(scope="module")
def worker(tmp_path_factory):
    directory = tmp_path_factory.mktemp("files")
    w = Worker(directory)
    yield w
    w.close()


def _rows_and_skipped(out: str, err: str) -> tuple[int, int]:
    """Rows read (the status line's count, which must be the rows printed) and rows skipped."""
    m = re.search(r"rows read: ([\d,]+) .*skipped rows: ([\d,]+)", err)
    if m is None:
        return len(out.splitlines()), 0
    read = int(m.group(1).replace(",", ""))
    assert read == len(out.splitlines()), err
    return read, int(m.group(2).replace(",", ""))


@settings(max_examples=FUZZ_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(file=damaged(), skip=st.booleans(), query=st.sampled_from(["SELECT * FROM '{f}'", "SELECT count(*) FROM '{f}'"]))
def test_a_damaged_file_is_read_or_rejected_in_one_line(worker, file, skip, query):
    fmt, data = file
    name = f"damaged.{fmt}"
    (worker.directory / name).write_bytes(data)
    argv = ["query", "--format", "batch-json", *(["--on-error", "skip"] if skip else []), "--", query.format(f=name)]
    problem = verdict(argv, worker.run(argv))
    assert problem is None, f"{problem}\nfile bytes: {data[:600]!r}"


@settings(max_examples=FUZZ_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(file=damaged_lines())
def test_skipped_rows_and_rows_read_add_up_to_the_file(worker, file):
    data, lines = file
    (worker.directory / "lines.csv").write_bytes(data)
    argv = ["query", "--format", "batch-json", "--on-error", "skip", "--", "SELECT * FROM 'lines.csv'"]
    got = worker.run(argv)
    problem = verdict(argv, got)
    assert problem is None, f"{problem}\nfile bytes: {data[:600]!r}"
    status, out, err = got
    if status == 0:
        read, skipped = _rows_and_skipped(out, err)
        assert read + skipped == lines, f"read {read} + skipped {skipped} != {lines} lines\n{data[:600]!r}\n{err}"
