"""Query-level conformance with DuckDB: each query runs on tidal and on DuckDB over the same files.

Subqueries with LIMIT/OFFSET, ORDER BY an alias that is also a column, duplicate output names in
JSON, a LIMIT without a value, CSV files with empty lines and all-NULL columns, IN (subquery) in
the select list, and tuple-returning key lambdas in the Python API. A construct tidal does not run
must fail with an error naming it, never give a different answer.
"""

from __future__ import annotations

import json

import duckdb
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tidal import agg
from tidal.cli.main import main as cli
from tidal.core.errors import PlanError
from tidal.sql import plan
from tidal.sql.dialect import SqlSyntaxError
from tidal.sql.output import unique_names
from tidal.stream.sources import from_arrow

ROWS = "x,name,a\n3,c,1\n1,a,2\n2,b,3\n5,e,4\n4,d,5\n,f,\n"


def tidal_rows(sql: str) -> list[tuple]:
    table = plan(sql).result()
    return list(zip(*[c.to_pylist() for c in table.columns], strict=True)) if table.num_rows else []


def duck_rows(sql: str) -> list[tuple]:
    return [tuple(r) for r in duckdb.sql(sql).fetchall()]


def same(sql: str, ordered: bool = True) -> list[tuple]:
    got, want = tidal_rows(sql), duck_rows(sql)
    if not ordered:
        key = repr
        got, want = sorted(got, key=key), sorted(want, key=key)
    assert got == want, sql
    return got


@pytest.fixture
def t(in_dir):
    (in_dir / "t.csv").write_text(ROWS)
    return "'t.csv'"


# -- 1. LIMIT/OFFSET inside a subquery, DISTINCT ON ----------------------------------------------


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT * FROM (SELECT * FROM {t} ORDER BY x LIMIT 3) ORDER BY x",
        "SELECT * FROM (SELECT * FROM {t} ORDER BY x NULLS FIRST LIMIT 3) ORDER BY name",
        "SELECT * FROM (SELECT * FROM {t} ORDER BY x DESC LIMIT 3 OFFSET 1) WHERE a > 1 ORDER BY x",
        "SELECT count(*), sum(a) FROM (SELECT a FROM {t} ORDER BY a DESC LIMIT 2)",
        "WITH c AS (SELECT name, a FROM {t} ORDER BY a LIMIT 2) SELECT * FROM c ORDER BY name",
        "SELECT name FROM (SELECT name, a FROM {t} ORDER BY x + a, x DESC LIMIT 2) ORDER BY name",
        "SELECT x FROM {t} UNION ALL (SELECT a FROM {t} ORDER BY x LIMIT 1) ORDER BY x",
        "SELECT * FROM (SELECT * FROM {t} ORDER BY x LIMIT 2 OFFSET 10)",
        "SELECT x FROM {t} WHERE x IN (SELECT a FROM {t} ORDER BY a DESC LIMIT 2) ORDER BY x",
        "SELECT s.name, u.a FROM (SELECT * FROM {t} ORDER BY x LIMIT 2) s JOIN {t} u ON s.x = u.x ORDER BY 1",
    ],
)
def test_limit_in_subquery(t, sql):
    rows = same(sql.format(t=t))
    assert rows or "OFFSET 10" in sql


def test_subquery_limit_is_not_the_whole_file(t):
    assert len(same(f"SELECT * FROM (SELECT * FROM {t} ORDER BY x LIMIT 3)", ordered=False)) == 3


def test_distinct_on_keeps_the_first_row_per_key(t):
    # DuckDB: the first row of each key in ORDER BY order (more in tests/sql/test_distinct_on.py)
    same(f"SELECT DISTINCT ON (a % 2) a, x FROM {t} ORDER BY a % 2, x, a")
    assert sorted(same(f"SELECT DISTINCT ON (name) name FROM {t}", ordered=False)) == sorted(
        same(f"SELECT DISTINCT name FROM {t}", ordered=False)
    )


# -- 2. ORDER BY an alias that is also a column ------------------------------------------------


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT name, a AS name FROM {t} ORDER BY name",
        "SELECT *, a AS name FROM {t} ORDER BY name",
        "SELECT a AS name, name FROM {t} ORDER BY name",
        "SELECT x AS n, a AS n FROM {t} ORDER BY n",
        "SELECT a AS name FROM {t} ORDER BY name DESC",
        "SELECT x, a AS name FROM {t} ORDER BY name LIMIT 3",
        "SELECT name, -a AS NAME FROM {t} ORDER BY name NULLS FIRST",
        "SELECT name, name FROM {t} ORDER BY name",
        "SELECT name AS n, sum(a) AS name FROM {t} GROUP BY name ORDER BY name, n",
        "SELECT -x AS x FROM {t} ORDER BY -x",
    ],
)
def test_order_by_alias_over_column(t, sql):
    same(sql.format(t=t))


# -- 3. duplicate output names in JSON -------------------------------------------------------------


def test_unique_names_as_duckdb():
    con = duckdb.connect()
    for names in (["a", "a"], ["a", "a", "A"], ["a", "a", "a_1"], ["x", "x_1", "x", "X", "x_1"]):
        select = ", ".join(f'{i} AS "{n}"' for i, n in enumerate(names))
        want = con.sql(f"SELECT * FROM (SELECT {select}) LIMIT 0").df()  # pandas names are DuckDB's deduped ones
        assert unique_names(names) == list(want.columns), names


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT x, x, a AS X FROM {t} ORDER BY a",
        "SELECT l.x, r.x, l.name FROM {t} l JOIN {t} r ON l.x = r.a ORDER BY l.x",
    ],
)
def test_batch_json_keeps_duplicate_columns(t, in_dir, sql):
    sql = sql.format(t=t)
    for fmt in ("batch-json", "stream-json"):
        assert cli(["query", sql, "--format", fmt, "--output", "out.json"]) == 0
        got = [json.loads(line) for line in (in_dir / "out.json").read_text().splitlines()]
        duckdb.sql(f"COPY ({sql}) TO 'duck.json' (FORMAT json)")
        want = [json.loads(line) for line in (in_dir / "duck.json").read_text().splitlines()]
        if fmt == "stream-json":
            got, want = sorted(got, key=repr), sorted(want, key=repr)
        assert got == want
        assert all(len(r) == 3 for r in got)


# -- 4. LIMIT without a value -------------------------------------------------------------------


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT 1 FROM {t} LIMIT",
        "SELECT x FROM {t} OFFSET",
        "SELECT x FROM {t} ORDER BY x LIMIT",
        "SELECT x FROM {t} LIMIT 2 OFFSET",
    ],
)
def test_limit_without_value_is_a_syntax_error(t, sql):
    sql = sql.format(t=t)
    with pytest.raises(duckdb.ParserException):
        duckdb.sql(sql)
    with pytest.raises(SqlSyntaxError):
        plan(sql)


def test_limit_with_value_still_parses(t):
    same(f"SELECT x FROM {t} t2 ORDER BY x LIMIT 2 OFFSET 1")


# -- 5. CSV: empty lines of a one-column file, all-NULL columns -----------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "c\n\n\n\n",
        "c\n1\n\n2\n\n",
        "c\n1\n\n2\n\n\n",
        "c\n",
        "c\n\n",
        "a,c\n1,\n2,\n",
        "a,b\n1,x\n\n2,y\n\n",
        "c\nx\n\ny\n",
    ],
)
def test_csv_empty_fields(in_dir, text):
    (in_dir / "f.csv").write_text(text)
    cols = duckdb.sql("SELECT * FROM 'f.csv'").columns
    c = cols[-1]
    same(f"SELECT count(*), count({c}), max({c}), min({c}) FROM 'f.csv'")
    same(f"SELECT * FROM 'f.csv' ORDER BY {cols[0]} NULLS LAST", ordered=False)
    types = [str(t) for t in duckdb.sql("SELECT * FROM 'f.csv'").types]
    if "VARCHAR" in types[-1]:  # an all-NULL column is VARCHAR: string functions take it
        same(f"SELECT upper({c}), {c} || 'x', length({c}) FROM 'f.csv'", ordered=False)


# -- 6. IN (subquery) in the select list; tuple key lambdas ----------------------------------------


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT x, x IN (SELECT a FROM {t} WHERE a > 3) AS i FROM {t} ORDER BY x",
        "SELECT x IN (SELECT a FROM {t} WHERE a > 3) AS i, name FROM {t} ORDER BY x LIMIT 2",
        "SELECT name, a IN (SELECT x FROM {t} WHERE x > 2) FROM {t} GROUP BY name, a ORDER BY name",
        "SELECT sum(a) IN (SELECT x FROM {t} WHERE x > 2) AS s, name FROM {t} GROUP BY name ORDER BY name",
        "SELECT a % 2 AS k, count(*) IN (SELECT x FROM {t} WHERE x < 3) FROM {t} GROUP BY k ORDER BY k",
        "SELECT name FROM {t} GROUP BY name HAVING max(a) IN (SELECT x FROM {t} WHERE x > 2) ORDER BY 1",
        "SELECT sum(CASE WHEN a IN (SELECT x FROM {t} WHERE x > 2) THEN 1 ELSE 0 END) FROM {t}",
        "SELECT i, count(*) FROM (SELECT x IN (SELECT a FROM {t} WHERE a > 3) AS i FROM {t}) GROUP BY i ORDER BY i",
    ],
)
def test_in_subquery_in_select_list(t, sql):
    same(sql.format(t=t))


def test_aggregate_filter_on_first_is_named_not_supported(t):
    # FIRST keeps NULLs, so the CASE rewrite that serves the other aggregates would change its answer
    with pytest.raises(PlanError, match="FILTER"):
        plan(f"SELECT first(a) FILTER (WHERE a > 2) FROM {t}")


EVENTS = pa.table({"a": [1, 1, 2, 2, 1], "b": [1, 1, 1, 2, 1], "v": [1, 2, 3, 4, 5]})
OTHERS = pa.table({"a": [1, 2, 2], "b": [1, 2, 1], "w": [10, 20, 30]})


def _payload(s) -> list:
    return sorted(s.to_arrow().drop_columns(["sync_time", "other_time"]).to_pylist(), key=repr)


def test_tuple_key_lambda_is_a_composite_key():
    def events():
        return from_arrow(EVENTS, time=lambda e: 0)

    def others():
        return from_arrow(OTHERS, time=lambda e: 0)

    by_tuple = events().group_aggregate(lambda e: (e.a, e.b), total=agg.sum(lambda e: e.v))
    by_list = events().group_aggregate(["a", "b"], total=agg.sum(lambda e: e.v))
    assert _payload(by_tuple) == _payload(by_list)
    want = duck_rows("SELECT a, b, sum(v) FROM EVENTS GROUP BY a, b")
    assert sorted({(r["a"], r["b"], r["total"]) for r in _payload(by_tuple)}) == sorted(want)
    joined = events().join(others(), lambda e: (e.a, e["b"]), lambda e: [e.a, e.b])
    assert _payload(joined) == _payload(events().join(others(), ["a", "b"], ["a", "b"]))
    assert len(_payload(joined)) == duck_rows("SELECT count(*) FROM EVENTS JOIN OTHERS USING (a, b)")[0][0]


def test_tuple_key_lambda_of_expressions_is_a_clear_error():
    events = from_arrow(EVENTS, time=lambda e: 0)
    with pytest.raises(PlanError, match="list of field names"):
        events.group_aggregate(lambda e: (e.a + 1, e.b), total=agg.sum(lambda e: e.v))
    with pytest.raises(PlanError, match="list of field names"):
        events.join(from_arrow(OTHERS, time=lambda e: 0), lambda e: (e.a * 2, e.b), ["a", "b"])
    # a lambda whose source cannot be read runs row by row: its tuples are refused when they arrive
    key = eval("lambda e: (e.a, e.b)")
    with pytest.raises(PlanError, match="list of field names"):
        events.group_aggregate(key, total=agg.sum(lambda e: e.v)).to_arrow()


# -- hypothesis: ORDER BY ... LIMIT/OFFSET inside a subquery ----------------------------------------

values = st.one_of(st.none(), st.integers(-3, 3))


@given(
    rows=st.lists(st.tuples(values, values), max_size=12),
    desc=st.booleans(),
    nulls_first=st.booleans(),
    limit=st.integers(0, 6),
    offset=st.integers(0, 4),
    outer=st.sampled_from(["*", "count(*), sum(q), min(p)", "p, q"]),
)
def test_subquery_order_limit_offset_like_duckdb(tmp_path_factory, rows, desc, nulls_first, limit, offset, outer):
    path = tmp_path_factory.mktemp("h") / "h.csv"
    text = "p,q\n" + "".join(f"{'' if p is None else p},{'' if q is None else q}\n" for p, q in rows)
    path.write_text(text)
    if [str(x) for x in duckdb.sql(f"SELECT * FROM '{path}'").types] != ["BIGINT", "BIGINT"]:
        return  # an empty or all-NULL column: other types (covered above)
    direction = ("DESC" if desc else "ASC") + (" NULLS FIRST" if nulls_first else " NULLS LAST")
    # every column in the ORDER BY: the rows that make the cut are the same in both engines
    inner = f"SELECT p, q FROM '{path}' ORDER BY p {direction}, q {direction} LIMIT {limit} OFFSET {offset}"
    grouped = "count(" in outer
    sql = f"SELECT {outer} FROM ({inner})" + ("" if grouped else " ORDER BY p NULLS FIRST, q NULLS FIRST")
    same(sql)


def test_a_csv_sampled_while_planning_and_changed_before_the_read_is_read_as_it_is(in_dir):
    """The one-column check reuses the width the planner's sample saw only while the file is unchanged:
    a file rewritten from two columns to one (empty lines then rows of NULL, as in DuckDB) is looked at again."""
    import os

    from tidal.io.files import file_schema, read_file

    for text in ("c\n1\n\n2\n\n\n", "c\n1\n\n22\n\n\n\n\n"):  # the second: as long as the first file
        (in_dir / "g.csv").write_text("a,b\n1,2\n3,4\n")
        stamp = os.stat(in_dir / "g.csv").st_mtime_ns
        file_schema("g.csv")  # planning samples the two-column file
        (in_dir / "g.csv").write_text(text)
        os.utime(in_dir / "g.csv", ns=(stamp, stamp))  # rewritten within one tick of the file system's clock
        got = read_file("g.csv").table.column("c").to_pylist()
        assert got == [r[0] for r in duck_rows("SELECT c FROM 'g.csv'")]
        same("SELECT count(*), count(c) FROM 'g.csv'")
