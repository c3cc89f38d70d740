"""PostgreSQL ``numeric(p, s)`` columns read as DECIMAL(p, s), as DuckDB's postgres scanner reads them
(an unconstrained ``numeric`` a DOUBLE, as there): values, types and DECIMAL arithmetic against DuckDB
over the same rows, on a real server."""

from __future__ import annotations

from decimal import Decimal

import duckdb
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tidal.core.errors import TidalError
from tidal.sql import plan

_TYPES = {"a": pa.decimal128(10, 2), "b": pa.decimal128(30, 5), "c": pa.decimal128(4, 0)}


def _load(pg, name: str, rows: list[tuple]) -> pa.Table:
    pg.execute(f"CREATE TABLE {name} (id int PRIMARY KEY, a numeric(10,2), b numeric(30,5), c numeric(4), u numeric)")
    with pg.cursor() as cur, cur.copy(f"COPY {name} FROM STDIN") as copy:
        for row in rows:
            copy.write_row(row)
    return pa.table(
        {
            "id": pa.array([r[0] for r in rows], pa.int64()),
            **{k: pa.array([r[i + 1] for r in rows], t) for i, (k, t) in enumerate(_TYPES.items())},
            "u": pa.array([None if r[4] is None else float(r[4]) for r in rows], pa.float64()),
        }
    )


def _same(pg_dsn: str, sql: str, table: pa.Table) -> None:
    con = duckdb.connect()
    con.register("t", table)
    want = con.sql(sql.format(t="t")).to_arrow_table()
    got = plan(sql.format(t=f"postgres(dsn => '{pg_dsn}', table => 't')")).result()
    assert got.schema.types == want.schema.types, (sql, got.schema, want.schema)
    key = repr
    g = sorted((tuple(r.values()) for r in got.to_pylist()), key=key)
    w = sorted((tuple(r.values()) for r in want.to_pylist()), key=key)
    assert [tuple(map(str, r)) for r in g] == [tuple(map(str, r)) for r in w], (sql, g, w)


QUERIES = [
    "SELECT id, a, b, c, u, typeof(a) AS ta, typeof(b) AS tb, typeof(u) AS tu FROM {t}",
    "SELECT id, a * 2 AS a2, a + b AS ab, c * a AS ca FROM {t} WHERE a > 1.5 OR b < -100",
    "SELECT sum(a) AS sa, sum(b) AS sb, min(b) AS mb, max(c) AS mc, avg(c) AS ac, count(a) AS n FROM {t}",
    "SELECT id FROM {t} WHERE a = 12.30 OR c IN (1, 7) OR b BETWEEN 0 AND 2.5",
]


def _digits(p: int, s: int):
    top = 10**p - 1
    return st.one_of(st.none(), st.integers(-top, top).map(lambda v: Decimal(f"{v}E-{s}")))


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(st.tuples(_digits(10, 2), _digits(30, 5), _digits(4, 0), _digits(12, 3)), min_size=1, max_size=15))
def test_numeric_columns_are_duckdbs_decimals(pg, pg_dsn, rows):
    pg.execute("DROP TABLE IF EXISTS t")
    table = _load(pg, "t", [(i, *r) for i, r in enumerate(rows)])
    for sql in QUERIES:
        _same(pg_dsn, sql, table)


def test_explicit_numeric_values(pg, pg_dsn):
    rows = [(1, Decimal("12.30"), Decimal("-123456789012345678901234.56789"), Decimal("7"), Decimal("0.1")),
            (2, Decimal("99999999.99"), Decimal("1.00001"), Decimal("-9999"), None),
            (3, None, None, None, Decimal("1e20"))]  # fmt: skip
    table = _load(pg, "t", rows)
    for sql in QUERIES:
        _same(pg_dsn, sql, table)


def test_a_nan_in_a_numeric_column_is_an_error_naming_it(pg, pg_dsn):
    pg.execute("CREATE TABLE t (id int, a numeric(10,2))")
    pg.execute("INSERT INTO t VALUES (1, 1.5), (2, 'NaN')")
    with pytest.raises(TidalError, match="column a .* NaN.*not supported"):
        plan(f"SELECT a FROM postgres(dsn => '{pg_dsn}', table => 't')").result()
