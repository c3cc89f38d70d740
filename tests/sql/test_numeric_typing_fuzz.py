"""A differential fuzzer of SQL integer and float typing against DuckDB.

hypothesis draws a small table (a Parquet file written with pyarrow) with a column of every integer type,
signed and unsigned, FLOAT, DOUBLE and DECIMALs, holding NULLs and edge values (each type's min and max, 0,
-0.0, NaN, infinities), and a random expression tree over its columns (``+ - * / // %`` with literals of every
size, CAST/TRY_CAST between these types, comparisons, CASE, COALESCE, GREATEST/LEAST, ABS, ROUND), used as a
projection, a WHERE, or under SUM/AVG/MIN/MAX/COUNT with or without GROUP BY. tidal and DuckDB run the query
over the same file and must give the same values (floats of a sum or an average within an ulp or two: the
order of summation may differ) of the same Arrow type, or both raise an error, or tidal refuses by name
("not supported"). ``HYPOTHESIS_PROFILE=explore`` draws new examples; ``TIDAL_FUZZ_EXAMPLES=n`` raises the
count of this file's draws.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import os
import re
from decimal import Decimal

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tidal.core.errors import TidalError
from tidal.sql import plan

EXAMPLES = int(os.environ.get("TIDAL_FUZZ_EXAMPLES", "0"))


def _limits(bits: int, signed: bool) -> list[int]:
    return [-(2 ** (bits - 1)), 2 ** (bits - 1) - 1, -1] if signed else [2**bits - 1]


# column -> (Arrow type, SQL type, edge values)
COLUMNS = {
    "ti": (pa.int8(), "TINYINT", _limits(8, True)),
    "si": (pa.int16(), "SMALLINT", _limits(16, True)),
    "ii": (pa.int32(), "INTEGER", _limits(32, True)),
    "bi": (pa.int64(), "BIGINT", _limits(64, True)),
    "ut": (pa.uint8(), "UTINYINT", _limits(8, False)),
    "us": (pa.uint16(), "USMALLINT", _limits(16, False)),
    "ui": (pa.uint32(), "UINTEGER", _limits(32, False)),
    "ub": (pa.uint64(), "UBIGINT", _limits(64, False)),
    "fl": (pa.float32(), "FLOAT", [math.nan, math.inf, -math.inf, -0.0, 3.4028234663852886e38, 1.5, -2.5]),
    "db": (pa.float64(), "DOUBLE", [math.nan, math.inf, -math.inf, -0.0, 1.7976931348623157e308, 0.1, -2.5]),
    "d1": (pa.decimal128(4, 1), "DECIMAL(4,1)", [Decimal("999.9"), Decimal("-999.9"), Decimal("0.5"), Decimal("-2.5")]),
    "d2": (pa.decimal128(18, 4), "DECIMAL(18,4)", [Decimal("99999999999999.9999"), Decimal("-1.0005")]),
}
NAMES = list(COLUMNS)
TYPES = [sql for _, sql, _ in COLUMNS.values()]
INT_LITERALS = [0, 1, 2, 3, 7, 100, 127, 128, 255, 256, 32767, 32768, 65535, 65536, 2147483647, 2147483648]
INT_LITERALS += [4294967295, 4294967296, 9223372036854775807]
REAL_LITERALS = ["0.5", "1.5", "2.25", "0.1", "1e3", "1e308", "3.0E38", "1e-5"]
ARITH = ["+", "-", "*", "/", "//", "%"]
COMPARE = ["=", "<>", "<", "<=", ">", ">="]


def _value(column: str):
    t, _, edges = COLUMNS[column]
    if pa.types.is_decimal(t):
        small = st.integers(-99, 99).map(lambda i: Decimal(i).scaleb(-1))
    elif pa.types.is_floating(t):
        small = st.integers(-9, 9).map(float)
    else:
        small = st.integers(0 if pa.types.is_unsigned_integer(t) else -9, 9)
    return st.one_of(
        st.none(), st.sampled_from([0, *edges]) if not pa.types.is_decimal(t) else st.sampled_from(edges), small
    )


@st.composite
def tables(draw) -> pa.Table:
    n = draw(st.integers(0, 6))
    columns = {"g": pa.array([draw(st.sampled_from([None, 1, 2])) for _ in range(n)], pa.int64())}
    for name, (t, _, _) in COLUMNS.items():
        values = [draw(_value(name)) for _ in range(n)]
        if pa.types.is_decimal(t):
            values = [Decimal(0) if v == 0 and not isinstance(v, Decimal) else v for v in values]
        columns[name] = pa.array(values, t)
    return pa.table(columns)


def _literal(draw) -> str:
    if draw(st.booleans()):
        v = draw(st.sampled_from(INT_LITERALS))
        return f"({-v})" if draw(st.booleans()) and v else str(v)
    return draw(st.sampled_from(REAL_LITERALS))


@st.composite
def numbers(draw, depth: int = 3) -> str:
    """A numeric expression over the table's columns."""
    kind = draw(st.integers(0, 10 if depth > 0 else 1))
    if kind == 0:
        return draw(st.sampled_from(NAMES))
    if kind == 1:
        return _literal(draw) if draw(st.booleans()) else draw(st.sampled_from(NAMES))
    sub = numbers(depth - 1)
    if kind in (2, 3, 4):
        op = draw(st.sampled_from(ARITH))
        return f"({draw(sub)} {op} {draw(sub)})"
    if kind == 5:
        cast = draw(st.sampled_from(["CAST", "TRY_CAST"]))
        return f"{cast}({draw(sub)} AS {draw(st.sampled_from(TYPES))})"
    if kind == 6:
        return f"(CASE WHEN {draw(conditions(depth - 1))} THEN {draw(sub)} ELSE {draw(sub)} END)"
    if kind == 7:
        f = draw(st.sampled_from(["COALESCE", "GREATEST", "LEAST"]))
        return f"{f}({', '.join(draw(sub) for _ in range(draw(st.integers(1, 3))))})"
    if kind == 8:
        return f"abs({draw(sub)})"
    if kind == 9:
        return f"round({draw(sub)})" if draw(st.booleans()) else f"round({draw(sub)}, {draw(st.integers(-2, 3))})"
    return f"(-{draw(sub)})"


@st.composite
def conditions(draw, depth: int = 2) -> str:
    kind = draw(st.integers(0, 3))
    if kind == 3:
        return f"{draw(numbers(depth))} IS NULL"
    if kind == 2 and depth > 0:
        return f"({draw(conditions(depth - 1))} {draw(st.sampled_from(['AND', 'OR']))} {draw(conditions(depth - 1))})"
    return f"{draw(numbers(depth))} {draw(st.sampled_from(COMPARE))} {draw(numbers(depth))}"


@st.composite
def queries(draw) -> tuple[str, bool]:
    """(SQL over 't.parquet', whether its floats come from a sum whose order may differ)."""
    where = f" WHERE {draw(conditions())}" if draw(st.booleans()) else ""
    shape = draw(st.sampled_from(["select", "select", "aggregate", "group"]))
    if shape == "select":
        items = [draw(numbers()) for _ in range(draw(st.integers(1, 2)))]
        cols = ", ".join(f"{e} AS c{i}" for i, e in enumerate(items))
        return f"SELECT {cols} FROM 't.parquet'{where}", False
    aggs = []
    for _ in range(draw(st.integers(1, 2))):
        f = draw(st.sampled_from(["sum", "avg", "min", "max", "count"]))
        aggs.append(f"{f}({draw(numbers(2))})")
    cols = ", ".join(f"{a} AS a{i}" for i, a in enumerate(aggs))
    if shape == "group":
        return f"SELECT g, {cols} FROM 't.parquet'{where} GROUP BY g", True
    return f"SELECT {cols} FROM 't.parquet'{where}", True


# -- comparing the answers ------------------------------------------------------------------------------


def _ulps(a: float, b: float, t: pa.DataType) -> float:
    if pa.types.is_float32(t):
        return abs(a - b) / max(math.ulp(abs(b)) * 2**29, 2**-149)  # a float32 ulp is 2**29 float64 ulps
    return abs(a - b) / max(math.ulp(abs(b)), 5e-324)


def _same_value(a, b, t: pa.DataType, summed: bool) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        if a == b:
            return True
        return summed and math.isfinite(a) and math.isfinite(b) and _ulps(a, b, t) <= 2
    return a == b and type(a) is type(b)


def _key(row):
    return tuple((v is None, repr(v)) for v in row)


def _rows(table: pa.Table) -> list[tuple]:
    return sorted(zip(*(c.to_pylist() for c in table.columns), strict=True), key=_key)


def _run_tidal(sql: str):
    try:
        return plan(sql).result()
    except (TidalError, ArithmeticError, OverflowError) as exc:
        return exc


def _run_duckdb(sql: str):
    """DuckDB's answer with its Arrow types as tidal maps DuckDB's: a HUGEINT (an integer sum) is a BIGINT in
    tidal (a sum beyond it an error), where DuckDB's Arrow export makes it a DECIMAL(38,0)."""
    con = duckdb.connect()
    # DuckDB's MIN/MAX over a whole Parquet file answer from its statistics, which leave NaN out (1.5 for MAX of
    # 1.5 and NaN): DuckDB reads the same file's table through Arrow instead
    for name in set(re.findall(r"'(t\d+\.parquet)'", sql)):
        con.register(name.split(".")[0], pq.read_table(name))
        sql = sql.replace(f"'{name}'", name.split(".")[0])
    try:
        rel = con.sql(sql)
        table = rel.to_arrow_table()
    except duckdb.Error as exc:
        return exc
    for i, t in enumerate(rel.types):
        if str(t) in ("HUGEINT", "UHUGEINT"):
            values = [None if v is None else int(v) for v in table.column(i).to_pylist()]
            if any(v is not None and not -(2**63) <= v < 2**63 for v in values):
                return BeyondBigint(f"DuckDB's HUGEINT {values} is beyond BIGINT")
            table = table.set_column(i, table.field(i).name, pa.array(values, pa.int64()))
    return table


class BeyondBigint(Exception):
    """DuckDB's answer is a HUGEINT beyond BIGINT: tidal must raise an error (it has no HUGEINT)."""


# Known and left (see the report of fuzz9): tidal types an integer literal BIGINT where DuckDB types it INTEGER
# (``SELECT 0``, ``CASE ... THEN 1``, ``coalesce(ti, 1)``, ``greatest(ii, 5)``): the values agree, the type is
# wider. TIDAL_FUZZ_STRICT=1 reports it too.
STRICT = os.environ.get("TIDAL_FUZZ_STRICT") == "1"


def _literal_widened(sql: str, got: pa.DataType, want: pa.DataType) -> bool:
    narrow = pa.types.is_signed_integer(want) and want.bit_width < 64
    return not STRICT and got == pa.int64() and narrow and re.search(r"(?<![\w.])\d+(?![\w.])", sql) is not None


def _known_error(got: Exception) -> bool:
    """Known and left: ``-x`` of an unsigned column is a type error in tidal, DuckDB's answer has x's type (an
    error only where x is not 0)."""
    return not STRICT and re.search(r"type error in -.*not defined for U", str(got)) is not None


def finding(sql: str, summed: bool) -> str | None:
    """Why tidal's answer to ``sql`` differs from DuckDB's, or None where they agree (or tidal refuses by name)."""
    got, want = _run_tidal(sql), _run_duckdb(sql)
    if isinstance(got, Exception):
        if "not supported" in str(got) or isinstance(want, Exception) or _known_error(got):
            return None
        return f"tidal errs where DuckDB answers:\n {sql}\n tidal: {type(got).__name__}: {got}\n DuckDB: {_rows(want)}"
    if isinstance(want, Exception):
        return f"tidal answers where DuckDB errs:\n {sql}\n tidal: {_rows(got)}\n DuckDB: {want}"
    got_types, want_types = [f.type for f in got.schema], [f.type for f in want.schema]
    if len(got_types) != len(want_types) or not all(
        g == w or _literal_widened(sql, g, w) for g, w in zip(got_types, want_types, strict=True)
    ):
        return f"types differ:\n {sql}\n tidal: {got_types}\n DuckDB: {want_types}"
    g, w = _rows(got), _rows(want)
    if len(g) != len(w):
        return f"row counts differ:\n {sql}\n tidal: {g}\n DuckDB: {w}"
    if summed:  # sorted by a float the engines may round apart: sort again by the exact columns only
        exact = [i for i, t in enumerate(got_types) if not pa.types.is_floating(t)]
        g = sorted(g, key=lambda r: _key([r[i] for i in exact]))
        w = sorted(w, key=lambda r: _key([r[i] for i in exact]))
    for rg, rw in zip(g, w, strict=True):
        if not all(_same_value(a, b, t, summed) for a, b, t in zip(rg, rw, got_types, strict=True)):
            return f"values differ:\n {sql}\n tidal: {g}\n DuckDB: {w}"
    return None


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("numeric_fuzz")


_FILES = itertools.count()
_SETTINGS = {"max_examples": EXAMPLES} if EXAMPLES else {}


@settings(suppress_health_check=list(HealthCheck), deadline=None, **_SETTINGS)
@given(table=tables(), query=queries())
def test_numeric_typing_matches_duckdb(workdir, table, query):
    sql, summed = query
    name = f"t{next(_FILES)}.parquet"  # a new file each time: no cache can hold the last one's answer
    sql = sql.replace("'t.parquet'", f"'{name}'")
    with contextlib.chdir(workdir):
        pq.write_table(table, name)
        problem = finding(sql, summed)
    assert problem is None, problem
