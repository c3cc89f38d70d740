"""Run DuckDB's sqllogictest files through tidal and compare with their expected results.

DuckDB sets each file's tables up (CREATE TABLE / INSERT / UPDATE / DELETE run in an in-memory
DuckDB, the setup, not the system under test); before each query tidal answers, every table is
written as ``<name>.parquet`` in a temporary directory, which is the working directory while tidal
runs, so ``FROM t`` reads ``t.parquet``. Each ``query`` block (and each ``statement error`` or
``statement ok`` that is a query) is one block with an outcome:

- ``passed``: tidal's answer equals the expected rows (or tidal errs where DuckDB errs); where the
  file writes a float only to its runner's 1%, tidal's must equal the installed DuckDB's answer;
- ``refused``: tidal raised one of its own errors (``TidalError``: "not supported", an unknown
  function, ...) where DuckDB answers;
- ``wrong``: a different answer, or an answer where DuckDB errs;
- ``crashed``: any other exception (a Python traceback);
- ``skipped``: out of scope (after a PRAGMA/SET, a view, a macro, ``mode skip``, a ``require``...).

Results are compared as DuckDB's runner prints them: NULL as ``NULL``, '' as ``(empty)``, booleans
as ``true``/``false``; numbers compare by value (relative 1e-6 for floats). ``rowsort`` and
``valuesort`` sort; ``nosort`` keeps tidal's order only when the query has a top-level ORDER BY
(without one SQL fixes no order, and a stream engine need not keep the scan order).
"""

from __future__ import annotations

import contextlib
import datetime
import decimal
import hashlib
import math
import os
import re
import tempfile
import traceback
from dataclasses import dataclass, field, replace
from pathlib import Path

import duckdb
import pyarrow as pa
import sqlglot

from tidal.core.errors import TidalError
from tidal.sql import plan

OUTCOMES = ("passed", "refused", "wrong", "crashed", "skipped")
SETUP = re.compile(
    r"^\s*(create\s+(or\s+replace\s+)?(temp\s+|temporary\s+)?table|insert|update|delete|drop\s+table|alter\s+table)\b",
    re.I,
)
MAX_LOOP = 20
# settings that change nothing an answer shows (verification, spilling, threads...): ignored
HARMLESS = re.compile(
    r"^\s*(pragma|set)\s+(enable_verification|disable_verification|verify_\w+|debug_\w+|threads|"
    r"memory_limit|enable_profiling|disable_profiling|profiling_\w+|force_\w+|preserve_insertion_order|explain_output)\b",
    re.I,
)
# blocks whose expected rows are one of several answers SQL allows, by (file name, line): out of scope
UNSPECIFIED = {
    ("test_distinct_on.test", 66): "DISTINCT ON (k) ... ORDER BY k with rows tied on k: DuckDB keeps the first in scan "
    "order, tidal the first ordered by every column (docs/sql.md, window functions)",
    ("union_limit.test", 23): "STRING_AGG without ORDER BY over a UNION ALL: DuckDB concatenates in scan order, "
    "which SQL leaves unspecified",
}
NULL_ORDER = re.compile(r"^\s*(pragma|set)\s+default_null_order\s*(=|to)\s*'?(\w+)'?\s*;?\s*$", re.I)


@dataclass
class Block:
    line: int
    kind: str  # "query" | "statement"
    sql: str
    types: str = ""
    sort: str = "nosort"
    label: str | None = None
    expect_error: bool = False
    error_text: str = ""
    expected: list[str] = field(default_factory=list)
    skip: str | None = None  # why it is out of scope


@dataclass
class Outcome:
    file: str
    line: int
    outcome: str
    sql: str
    detail: str = ""


# -- parsing -------------------------------------------------------------------------------------


def parse(text: str) -> list[Block]:
    """The file's blocks in order, loops expanded, with directives as ``statement`` skips."""
    lines = text.split("\n")
    blocks: list[Block] = []
    i, skipping, halted = 0, False, False
    loops: list[tuple[int, str, list[str], int]] = []  # (start line, var, values, index)
    subst: dict[str, str] = {}
    skip_next: str | None = None
    while i < len(lines):
        raw = lines[i]
        line = raw.strip()
        for k, v in subst.items():
            line = line.replace("${" + k + "}", v).replace("{" + k + "}", v)
        words = line.split()
        if not words or line.startswith("#"):
            i += 1
            continue
        head = words[0]
        if head in ("loop", "foreach", "concurrentloop", "concurrentforeach"):
            if head.endswith("loop"):
                values = [str(v) for v in range(int(words[2]), int(words[3]))]
            else:
                values = words[2:]
            if len(values) > MAX_LOOP or head.startswith("concurrent"):
                end = _matching_end(lines, i)
                blocks.append(Block(i + 1, "statement", line, skip=f"{head} of {len(values)}"))
                i = end + 1
                continue
            loops.append((i, words[1], values, 0))
            subst[words[1]] = values[0] if values else ""
            if not values:
                i = _matching_end(lines, i) + 1
                loops.pop()
                subst.pop(words[1], None)
                continue
            i += 1
            continue
        if head == "endloop":
            start, var, values, idx = loops.pop()
            if idx + 1 < len(values):
                loops.append((start, var, values, idx + 1))
                subst[var] = values[idx + 1]
                i = start + 1
            else:
                subst.pop(var, None)
                i += 1
            continue
        if head == "mode":
            skipping = {"skip": True, "unskip": False}.get(words[1], skipping)
            i += 1
            continue
        if head in ("skipif", "onlyif"):
            engine = words[1] if len(words) > 1 else ""
            if (head == "skipif") == (engine == "duckdb"):
                skip_next = line
            i += 1
            continue
        if head == "halt":
            halted = True
            break
        if head in ("require", "load", "restart", "reconnect", "require-env", "test-env", "unzip", "sleep"):
            # no_alternative_verify: DuckDB's runner skips the file under its alternative verification only
            why = "" if line in ("require parquet", "require no_alternative_verify") else line
            if why:
                blocks.append(Block(i + 1, "statement", line, skip=why))
            i += 1
            continue
        if head not in ("statement", "query"):
            i += 1
            continue
        start = i
        i += 1
        sql_lines: list[str] = []
        while i < len(lines) and lines[i].strip() and lines[i].strip() != "----":
            sql_lines.append(lines[i])
            i += 1
        sql = "\n".join(sql_lines)
        for k, v in subst.items():
            sql = sql.replace("${" + k + "}", v).replace("{" + k + "}", v)
        result: list[str] = []
        if i < len(lines) and lines[i].strip() == "----":
            i += 1
            while i < len(lines) and lines[i].strip():
                result.append(lines[i].rstrip("\r"))
                i += 1
        block = Block(start + 1, head, sql.strip())
        if head == "statement":
            block.expect_error = words[1] == "error" if len(words) > 1 else False
            block.error_text = "\n".join(result)
            if len(words) > 1 and words[1] not in ("ok", "error"):
                block.skip = line
        else:
            block.types = words[1] if len(words) > 1 else ""
            block.sort = words[2] if len(words) > 2 else "nosort"
            block.label = words[3] if len(words) > 3 else None
            if block.sort not in ("nosort", "rowsort", "valuesort", "sort"):
                block.label, block.sort = block.sort, "nosort"
            block.expected = result
            if len(words) > 1 and words[1] == "error":
                block.kind, block.expect_error, block.error_text = "statement", True, "\n".join(result)
        if skipping:
            block.skip = "mode skip"
        elif skip_next:
            block.skip = skip_next
        skip_next = None
        blocks.append(block)
    if halted:
        blocks.append(Block(i + 1, "statement", "halt", skip="halt"))
    return blocks


def _matching_end(lines: list[str], i: int) -> int:
    depth = 0
    for j in range(i, len(lines)):
        w = lines[j].strip().split()
        if w and w[0] in ("loop", "foreach", "concurrentloop", "concurrentforeach"):
            depth += 1
        elif w and w[0] == "endloop":
            depth -= 1
            if depth == 0:
                return j
    return len(lines)


# -- formatting and comparing --------------------------------------------------------------------


def fmt(v) -> str:
    """A value as DuckDB's test runner prints it."""
    if v is None:
        return "NULL"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    if isinstance(v, str):
        return "(empty)" if v == "" else v.replace("\x00", "\\0")  # DuckDB's runner prints NUL as \0
    if isinstance(v, datetime.datetime):  # DuckDB writes a whole-hour offset as +00
        return re.sub(r"([+-]\d\d):00$", r"\1", _no_trailing_zeros(v.isoformat(sep=" ")))
    if isinstance(v, datetime.time):
        return _no_trailing_zeros(str(v))
    if isinstance(v, datetime.date | decimal.Decimal):
        return str(v)
    if isinstance(v, datetime.timedelta):
        return _interval(v)
    if isinstance(v, list):
        return "[" + ", ".join(_inner(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"'{k}': {_inner(x)}" for k, x in v.items()) + "}"
    if isinstance(v, bytes):  # as DuckDB prints a BLOB: printable ASCII as is, other bytes \xAB
        return "".join(chr(b) if 32 <= b < 127 and b != 92 else f"\\x{b:02X}" for b in v)
    return str(v)


def values(column) -> list:
    """A column's values for ``fmt``; dates and timestamps Python cannot hold (BC, after 9999, DuckDB's
    infinities) as the text DuckDB prints for them."""
    if pa.types.is_time(column.type):  # as DuckDB prints a TIME: 24:00:00, nanoseconds (Python's time has neither)
        digits = {"s": 0, "ms": 3, "us": 6, "ns": 9}[column.type.unit]
        ints = column.cast(pa.int64() if pa.types.is_time64(column.type) else pa.int32()).to_pylist()
        return [None if n is None else _time_text(n, digits) for n in ints]
    try:
        return column.to_pylist()
    except (OverflowError, ValueError):
        kind = column.type
        if not (pa.types.is_date32(kind) or pa.types.is_timestamp(kind)):
            raise
    ints = column.cast(pa.int32() if pa.types.is_date32(kind) else pa.int64()).to_pylist()
    per_day = 1 if pa.types.is_date32(kind) else {"s": 1, "ms": 1000, "us": 10**6, "ns": 10**9}[kind.unit] * 86400
    top = 2**31 - 1 if pa.types.is_date32(kind) else 2**63 - 1
    return [None if n is None else _far_time(n, per_day, top, pa.types.is_date32(kind)) for n in ints]


def _time_text(n: int, digits: int) -> str:
    """A TIME's value (``digits`` of a second's fraction) as DuckDB prints it: ``24:00:00``, ``23:59:59.123456789``."""
    whole, frac = divmod(n, 10**digits)
    text = f"{whole // 3600:02d}:{whole // 60 % 60:02d}:{whole % 60:02d}"
    return text + (f".{frac:0{digits}d}".rstrip("0") if frac else "")


def _far_time(n: int, per_day: int, top: int, is_date: bool) -> str:
    if abs(n) == top:
        return "infinity" if n > 0 else "-infinity"
    days, rest = divmod(n, per_day)
    # days since 1970-01-01 to a proleptic Gregorian date (H. Hinnant's civil_from_days)
    z = days + 719468
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d, m = doy - (153 * mp + 2) // 5 + 1, mp + 3 if mp < 10 else mp - 9
    y = yoe + era * 400 + (m <= 2)
    text = f"{y if y > 0 else 1 - y:04d}-{m:02d}-{d:02d}"
    bc = " (BC)" if y <= 0 else ""
    if is_date:
        return text + bc
    micros = rest * 86400 * 10**6 // per_day
    clock = f"{micros // 3_600_000_000:02d}:{micros // 60_000_000 % 60:02d}:{micros // 10**6 % 60:02d}"
    clock = _no_trailing_zeros(clock + (f".{micros % 10**6:06d}" if micros % 10**6 else ""))
    return f"{text}{bc} {clock}"


def _no_trailing_zeros(text: str) -> str:
    """A time's fraction of a second as DuckDB prints it: without trailing zeros (12:00:01.5)."""
    return re.sub(r"(\.\d*?)0+(?=$|[+-])", r"\1", text).replace(".+", "+").rstrip(".")


def _interval(v: datetime.timedelta) -> str:
    """A day-time INTERVAL as DuckDB prints one it made from microseconds (``t1 - t2``): whole days split
    off toward zero, the rest with the same sign: ``5 days 12:00:00``, ``-29 days -05:50:46``."""
    total = v // datetime.timedelta(microseconds=1)
    days = abs(total) // _DAY * (1 if total >= 0 else -1)
    rest = total - days * _DAY
    parts = [f"{days} day{'s' if abs(days) != 1 else ''}"] if days else []
    if rest or not days:
        r = abs(rest)
        text = f"{'-' if rest < 0 else ''}{r // 3_600_000_000:02d}:{r // 60_000_000 % 60:02d}:{r // 10**6 % 60:02d}"
        parts.append(_no_trailing_zeros(text + (f".{r % 10**6:06d}" if r % 10**6 else "")))
    return " ".join(parts)


_DAY = 86_400_000_000
_INTERVAL_TEXT = re.compile(r"^(?:(-?\d+) days? ?)?(?:(-?)(\d+):(\d\d):(\d\d)(?:\.(\d{1,6}))?)?$")


def interval_micros(text: str) -> int | None:
    """The length of a day-time INTERVAL as DuckDB prints it (days of 24 hours; None with months or years).
    tidal's INTERVAL is a duration (``pa.duration``), which keeps no days apart from hours: DuckDB's
    ``INTERVAL 90 HOURS`` prints ``90:00:00``, the same length as tidal's ``3 days 18:00:00``."""
    m = _INTERVAL_TEXT.match(text)
    if not m or not text or not (m.group(1) or m.group(3)):
        return None
    days, sign, h, mi, sec, frac = m.groups()
    clock = (int(h or 0) * 3600 + int(mi or 0) * 60 + int(sec or 0)) * 10**6 + int((frac or "0").ljust(6, "0"))
    return int(days or 0) * _DAY + (-clock if sign else clock)


def _inner(v) -> str:
    return "''" if v == "" else ("NULL" if v is None else (f"'{v}'" if isinstance(v, str) and not v else fmt(v)))


def same_value(got: str, want: str) -> bool:
    if got == want:
        return True
    if (g := interval_micros(got)) is not None and g == interval_micros(want):
        return True
    if want == "(empty)" and got == "":
        return True
    if got in ("true", "false") and want.lower() in ("1", "0", "true", "false"):
        # DuckDB's runner casts the expected text to the column's type: '1' is true
        return (got == "true") == (want.lower() in ("1", "true"))
    try:
        g, w = float(got), float(want)
    except ValueError:
        return got.lower() == want.lower() and want.lower() in ("true", "false", "nan", "inf", "-inf")
    if math.isnan(g) or math.isnan(w):
        return math.isnan(g) and math.isnan(w)
    return g == w or math.isclose(g, w, rel_tol=1e-6, abs_tol=1e-12)


def _bool_text(x: str) -> str:
    return {"1": "true", "0": "false", "true": "true", "false": "false"}.get(x.lower(), x)


def expected_rows(block: Block, width: int) -> list[list[str]] | None:
    """The expected result as rows of strings; None when it is a hash (``N values hashing to``)."""
    lines = block.expected
    if len(lines) == 1 and re.match(r"^\d+ values hashing to [0-9a-f]+$", lines[0]):
        return None
    if width > 1 and lines and all("\t" not in x for x in lines) and len(lines) % width == 0:
        if not any(len(x.split("\t")) == width for x in lines):
            return [lines[k : k + width] for k in range(0, len(lines), width)]
    return [x.split("\t") for x in lines]


def has_top_order(sql: str) -> bool:
    try:
        tree = sqlglot.parse_one(sql, read="duckdb")
    except sqlglot.errors.ParseError:
        return True
    return tree.args.get("order") is not None


def runner_close(got: str, want: str) -> bool:
    """DuckDB's own runner's test of a number (1% of the expected value): its files' floats are that close."""
    try:
        g, w = float(got), float(want)
    except ValueError:
        return same_value(got, want)
    return same_value(got, want) or abs(g - w) <= abs(w) * 0.01 + 1e-8


def compare(block: Block, got_rows: list[list[str]], same=same_value) -> str | None:
    """None when tidal's rows are the expected ones, else why not."""
    width = len(block.types) if block.types else (len(got_rows[0]) if got_rows else 1)
    want = expected_rows(block, width)
    if got_rows and len(got_rows[0]) != width and want is not None:  # (a hash is of all the values)
        return f"{len(got_rows[0])} columns, expected {width}"
    if want is not None:  # DuckDB's runner reads a BOOLEAN column's expected 1/0 as true/false: sorted as such
        bools = {j for r in got_rows for j, x in enumerate(r) if x in ("true", "false")}
        want = [[_bool_text(x) if j in bools else x for j, x in enumerate(r)] for r in want]
    sort = block.sort
    if sort == "nosort" and not has_top_order(block.sql):
        sort = "rowsort"
    if sort == "valuesort":
        got_rows = [[v] for v in sorted(v for r in got_rows for v in r)]
        if want is not None:
            want = [[v] for v in sorted(v for r in want for v in r)]
    elif sort in ("rowsort", "sort"):
        got_rows = sorted(got_rows)
        if want is not None:
            want = sorted(want)
    if want is None:
        n, digest = block.expected[0].split(" values hashing to ")
        values = [v for r in got_rows for v in r]
        text = "".join(v + "\n" for v in values)
        if len(values) != int(n) or hashlib.md5(text.encode()).hexdigest() != digest:
            return f"hash differs: {len(values)} values {values[:20]}"
        return None
    if len(got_rows) != len(want) or any(
        len(g) != len(w) or not all(same(a, b) for a, b in zip(g, w, strict=True))
        for g, w in zip(got_rows, want, strict=False)
    ):
        return f"got {got_rows[:12]}{'...' if len(got_rows) > 12 else ''}, expected {want[:12]}"
    return None


# -- running -------------------------------------------------------------------------------------


@contextlib.contextmanager
def _cwd(path: Path):
    old = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(old)


def _modifies(sql: str) -> bool:
    """Whether ``sql`` (a WITH ...) inserts, updates or deletes rows."""
    if not re.match(r"^\s*\(*\s*with\b", sql, re.I) or not re.search(r"\b(insert|update|delete)\b", sql, re.I):
        return False
    try:
        tree = sqlglot.parse_one(sql, read="duckdb")
    except sqlglot.errors.ParseError:
        return True
    return any(True for _ in tree.find_all(sqlglot.exp.Insert, sqlglot.exp.Update, sqlglot.exp.Delete))


def _is_query(sql: str) -> bool:
    s = re.sub(r"^\s*\(+", "", sql).lstrip().lower()
    return s.startswith(("select", "with", "from", "values", "table ", "(select"))


class Runner:
    """One file's run: a DuckDB connection for the setup, a directory of Parquet files for tidal."""

    def __init__(self, path: Path, directory: Path):
        self.path, self.dir = path, directory
        self.con = duckdb.connect()
        self.dirty = True
        self.off: str | None = None  # once set, the rest of the file is out of scope
        self.outcomes: list[Outcome] = []
        self.nulls_first = False  # SET default_null_order='nulls_first': each ORDER BY says so
        self.labels: dict[str, list[str]] = {}  # a label's expected rows (query I nosort label)

    def materialise(self) -> None:
        for f in self.dir.glob("*.parquet"):
            f.unlink()
        names = [r[0] for r in self.con.execute("SELECT table_name FROM duckdb_tables()").fetchall()]
        zoned = "SELECT table_name, column_name FROM duckdb_columns() WHERE data_type = 'TIME WITH TIME ZONE'"
        if zoned := self.con.execute(zoned).fetchall():  # Parquet keeps such a time in UTC, not its offset
            raise duckdb.InvalidInputException(f"TIME WITH TIME ZONE column {'.'.join(zoned[0])} (its offset)")
        for name in names:
            self.con.execute(f"COPY \"{name}\" TO '{self.dir / (name + '.parquet')}' (FORMAT parquet)")
        self.dirty = False

    def record(self, block: Block, outcome: str, detail: str = "") -> None:
        self.outcomes.append(Outcome(self.path.as_posix(), block.line, outcome, block.sql, detail))

    def run(self) -> list[Outcome]:
        for block in parse(self.path.read_text()):
            self.step(block)
        return self.outcomes

    def step(self, block: Block) -> None:
        query_like = block.kind == "query" or _is_query(block.sql)
        if self.off or block.skip:
            if query_like:
                self.record(block, "skipped", self.off or block.skip or "")
            elif block.skip and block.sql in ("halt",) or (block.skip or "").startswith(("require", "load", "restart")):
                self.off = self.off or block.skip
            return
        if not query_like or SETUP.match(block.sql):
            self.setup(block)
            return
        if _modifies(block.sql):  # WITH t AS (INSERT ... RETURNING ...) ...: DuckDB's setup, not a query tidal claims
            if block.kind == "query":
                self.record(block, "skipped", "a data-modifying CTE")
            self.setup(block, force=True)
            return
        if why := UNSPECIFIED.get((self.path.name, block.line)):
            self.record(block, "skipped", why)
            return
        if re.match(r"^\s*explain\b", block.sql, re.I):
            self.record(block, "skipped", "EXPLAIN shows a plan, not an answer")
            return
        sql = block.sql
        if self.nulls_first:
            sql = with_nulls_first(sql)
            if sql is None:
                self.record(block, "skipped", "explicit NULLS FIRST/LAST under default_null_order")
                return
        if self.dirty:
            try:
                self.materialise()
            except duckdb.Error as e:  # a table Parquet cannot hold (an empty STRUCT...): out of scope
                self.off = f"line {block.line}: a table Parquet cannot hold ({str(e)[:80]})"
                self.record(block, "skipped", self.off)
                return
        try:
            with _cwd(self.dir):
                table = plan(sql).result()
            rows = [[fmt(v) for v in row] for row in zip(*(values(c) for c in table.columns), strict=True)]
        except TidalError as e:
            if block.expect_error:
                self.record(block, "passed", f"both err: {e}")
            else:
                self.record(block, "refused", f"{type(e).__name__}: {e}")
            return
        except RecursionError as e:
            self.record(block, "crashed", f"RecursionError: {e}")
            return
        except Exception as e:  # noqa: BLE001 - every other exception is a crash, reported with its trace
            tb = traceback.format_exception(e)
            self.record(block, "crashed", f"{type(e).__name__}: {e}\n{''.join(tb[-4:])}")
            return
        if block.expect_error:
            self.record(block, "wrong", f"tidal answered {rows[:5]}; DuckDB errs: {block.error_text[:200]}")
            return
        if block.kind == "statement":
            self.record(block, "passed")
            return
        if block.label and block.expected:
            self.labels.setdefault(block.label, block.expected)
        if block.label and not block.expected:  # "the same result as the query labelled so": DuckDB's own
            if block.label not in self.labels:
                try:
                    duck = self.con.execute(sql).fetchall()
                except duckdb.Error as e:
                    self.record(block, "wrong", f"tidal answered; DuckDB errs: {e}")
                    return
                self.labels[block.label] = ["\t".join(fmt(v) for v in r) for r in duck]
            block = replace(block, expected=self.labels[block.label], types="")  # (its width: the labelled rows)
        why = compare(block, rows)
        if why and compare(block, rows, runner_close) is None and self.duckdb_answers(block, sql, rows):
            self.record(block, "passed", f"the file's number is DuckDB's to 1% (its runner's test); {why}")
            return
        self.record(block, "wrong" if why else "passed", why or "")

    def duckdb_answers(self, block: Block, sql: str, rows: list[list[str]]) -> bool:
        """Whether the DuckDB installed here gives ``rows`` (a file's float written to its runner's 1%)."""
        try:
            duck = [[fmt(v) for v in r] for r in self.con.execute(sql).fetchall()]
        except duckdb.Error:
            return False
        return compare(replace(block, expected=["\t".join(r) for r in duck]), rows) is None

    def setup(self, block: Block, force: bool = False) -> None:
        sql = block.sql
        if HARMLESS.match(sql):
            return
        if m := NULL_ORDER.match(sql):
            setting = m.group(3).lower()
            if setting in ("nulls_first", "nulls_last"):
                self.nulls_first = setting == "nulls_first"
                return
        if re.search(r"\bcollate\b", sql, re.I):
            # a column's collation lives in DuckDB's catalog, not in the Parquet files tidal reads
            self.off = f"line {block.line}: a COLLATE column (collations do not travel in Parquet)"
            return
        if (force or SETUP.match(sql)) and not re.search(
            r"\bcreate\s+(or\s+replace\s+)?(temp\w*\s+)?table\s+\w+\.\w+", sql, re.I
        ):
            try:
                self.con.execute(sql)
                ok = True
            except duckdb.Error:
                ok = False
            if ok == block.expect_error:
                self.off = f"setup differs from DuckDB's at line {block.line}"
            self.dirty = True
            return
        # PRAGMA, SET, views, macros, sequences, transactions...: the rest of the file is out of scope
        self.off = f"line {block.line}: {sql.split(chr(10))[0][:60]}"


def with_nulls_first(sql: str) -> str | None:
    """The query with NULLS FIRST on each ORDER BY key (None when one already says NULLS ...)."""
    if re.search(r"\bnulls\s+(first|last)\b", sql, re.I):
        return None
    try:
        tree = sqlglot.parse_one(sql, read="duckdb")
    except sqlglot.errors.ParseError:
        return sql
    ordered = list(tree.find_all(sqlglot.exp.Ordered))
    if not ordered:  # nothing to change: sqlglot's rendering is not the text DuckDB was given (bool_or(0))
        return sql
    for o in ordered:
        o.set("nulls_first", True)
    return tree.sql(dialect="duckdb")


def run_file(path: Path) -> list[Outcome]:
    with tempfile.TemporaryDirectory(prefix="tidal-slt-") as d:
        return Runner(path, Path(d)).run()


def area_of(outcome: Outcome, root: Path) -> str:
    return Path(outcome.file).relative_to(root.as_posix()).parts[0]


def table(outcomes: list[Outcome], root: Path) -> str:
    """The per-area table: blocks in scope, passed, refused, wrong, crashed (and skipped)."""
    areas: dict[str, dict[str, int]] = {}
    for o in outcomes:
        row = areas.setdefault(area_of(o, root), dict.fromkeys(OUTCOMES, 0))
        row[o.outcome] += 1
    head = f"{'area':<18}{'in scope':>9}{'passed':>8}{'refused':>8}{'wrong':>7}{'crashed':>8}{'pass %':>8}"
    head += f"{'skipped':>8}"
    lines = [head, "-" * len(head)]
    total = dict.fromkeys(OUTCOMES, 0)
    for name in sorted(areas) + ["total"]:
        row = total if name == "total" else areas[name]
        if name != "total":
            for k in OUTCOMES:
                total[k] += row[k]
        scope = sum(row[k] for k in OUTCOMES[:4])
        pct = 100.0 * row["passed"] / scope if scope else 100.0
        lines.append(
            f"{name:<18}{scope:>9}{row['passed']:>8}{row['refused']:>8}{row['wrong']:>7}{row['crashed']:>8}{pct:>7.1f}%{row['skipped']:>8}"
        )
    return "\n".join(lines)
