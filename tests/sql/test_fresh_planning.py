"""Planning a query afresh does less work (issue 19) and plans the same: each shortcut is checked against the
long way it replaces, and the answers against DuckDB.

* the query is tokenized once (the tokens of the nesting check are parsed): the same tree as sqlglot's parse;
* constant folding keeps an expression object when nothing in it folds (``CAST('nan' AS DOUBLE)``, column
  names), and still folds what folds;
* the rules' applied list is worked out when read, with the names the eager list had;
* a bare input column's type is read from the schema, as evaluating it gives.
"""

from __future__ import annotations

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import sqlglot

from tidal.core.errors import PlanError
from tidal.sql import plan, plan_cache
from tidal.sql.dialect import SqlSyntaxError, Tidal, _group_typed_literals, parse
from tidal.sql.expressions import output_type
from tidal.sql.logical import Builder, Project
from tidal.sql.rules import RULES, Applied, explain_logical, optimize
from tidal.sql.rules.fold_constants import _fold, fold_constants

TAXI = "SELECT k, COUNT(*), AVG(v) FROM 't.parquet' GROUP BY k"


@pytest.fixture()
def files(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    pq.write_table(
        pa.table({"k": [1.0, None, -0.0, 0.0, 2.0, 1.0], "v": [1.5, 2.5, float("nan"), 4.0, 5.5, 6.0],
                  "s": ["a", "b", "c", "d", "e", "f"], "i": pa.array([1, 2, 3, 4, 5, 6], pa.int32())}),
        "t.parquet",
    )  # fmt: skip
    plan_cache.clear()
    yield tmp_path
    plan_cache.clear()


@pytest.mark.parametrize(
    "sql",
    [
        TAXI,
        "SELECT TIMESTAMP '2024-01-02 03:04:05'::DATE AS d, 1 + 2 AS three",
        "SELECT a FROM (VALUES (1), (2)) t(a) WHERE a > 1 TRIGGER COUNTING 2",
        "SELECT x, -- a comment\n y FROM 'f.csv' /* another */ ORDER BY 1 LIMIT 3",
        "SELECT 'it''s', \"quoted name\" FROM t",
    ],
)
def test_one_tokenization_parses_as_sqlglot_does(sql):
    assert parse(sql) == sqlglot.parse(_group_typed_literals(sql), read=Tidal)[0]
    assert parse(sql).sql(dialect="duckdb") == sqlglot.parse(_group_typed_literals(sql), read=Tidal)[0].sql("duckdb")


def test_syntax_errors_are_reported_as_before():
    for bad in ("SELECT 'unterminated", "SELECT FROM WHERE", "SELECT (1 + 2"):
        with pytest.raises(SqlSyntaxError):
            parse(bad)


def _projects(node):
    if isinstance(node, Project):
        yield node
    for child in node.inputs:
        yield from _projects(child)


def test_folding_keeps_the_plan_when_nothing_folds_and_folds_what_does(files):
    root = Builder().build(parse(TAXI)).root
    assert any("CAST('nan' AS DOUBLE)" in p.describe() for p in _projects(root))
    assert fold_constants(root) is root  # nothing folds: the same nodes
    assert all(_fold(e) is e for p in _projects(root) for _, e in p.exprs)  # each expression kept, not copied
    folded = Builder().build(parse("SELECT k, v * (1 + 2) AS x, CAST('nan' AS DOUBLE) AS n FROM 't.parquet'")).root
    after = fold_constants(folded)
    assert after is not folded
    text = explain_logical(after)
    assert "3" in text and "1 + 2" not in text and "CAST('nan' AS DOUBLE)" in text


def _eager_applied(root):
    """The rules that changed the plan, as optimize listed them before (explain texts compared at once)."""
    applied, text = [], None
    for rule in RULES:
        new = rule(root)
        if new is not root:
            text = explain_logical(root) if text is None else text
            after = explain_logical(new)
            if after != text:
                applied.append(rule.__name__)
            text = after
        root = new
    return applied


@pytest.mark.parametrize(
    "sql",
    [
        TAXI,
        "SELECT k FROM 't.parquet' WHERE v > 1 + 1 AND 1 = 1",
        "SELECT s, i FROM 't.parquet' WHERE i > 2",
        "SELECT * FROM 't.parquet'",
    ],
)
def test_the_applied_rules_are_the_ones_the_eager_list_named(files, sql):
    root = Builder().build(parse(sql)).root
    optimized, applied = optimize(root)
    assert isinstance(applied, Applied)
    assert applied == _eager_applied(root) == list(applied)
    assert plan(sql).rules_applied == applied
    assert "Rewrites applied: " + (", ".join(applied) or "none") in plan(sql).explain()


def test_a_bare_columns_type_is_the_one_evaluation_gives(files):
    b = Builder()
    q = b.build(parse("SELECT k, v, s, i FROM 't.parquet'"))
    scan = q.root
    while scan.inputs:
        scan = scan.inputs[0]
    schema = scan.schema()
    for name in schema.names:
        col = sqlglot.exp.column(name, quoted=True)
        assert b.check(col, scan) == output_type(col, schema) == schema.field(name).type
    with pytest.raises(Exception, match="unknown column|nope"):
        b.check(sqlglot.exp.column("nope", quoted=True), scan)


@pytest.mark.parametrize(
    "sql",
    [
        TAXI + " ORDER BY k",
        "SELECT k, SUM(v) AS s, COUNT(*) AS n FROM 't.parquet' WHERE i > 1 GROUP BY k ORDER BY k",
        "SELECT s, i * 2 AS j FROM 't.parquet' WHERE v > 2 ORDER BY s",
    ],
)
def test_answers_match_duckdb(files, sql):
    got = [tuple(r.values()) for r in plan(sql).result().to_pylist()]
    want = duckdb.sql(sql).fetchall()
    assert [tuple("nan" if x != x else x for x in r) for r in got] == [
        tuple("nan" if x != x else x for x in r) for r in want
    ]


def test_column_labels_made_only_when_needed_still_name_the_users_columns(files):
    """A label with no quoted name and a grouped query's correlated-subquery check read no column labels
    (18 columns of the taxi file each written by sqlglot's DuckDB generator on every grouped query): the
    error that needs them still names the user's column, not the internal one, and the labels of internal
    columns are the user's SQL."""
    pq.write_table(pa.table({"x": [1.5, 4.0]}), files / "u.parquet")
    ungrouped = "SELECT k, (SELECT COUNT(*) FROM 'u.parquet' u WHERE u.x = t.v) FROM 't.parquet' t GROUP BY k"
    with pytest.raises(PlanError, match=r"^column t\.v must appear in GROUP BY .*\(in a correlated subquery\)$"):
        plan(ungrouped)
    grouped = "SELECT k, (SELECT COUNT(*) FROM 'u.parquet' u WHERE u.x = t.k + 0.5) AS c FROM 't.parquet' t GROUP BY k"
    got = sorted(plan(grouped).result().to_pylist(), key=repr)
    want = duckdb.sql(grouped).fetchall()
    assert got == sorted(({"k": k, "c": c} for k, c in want), key=repr)
    q = plan("SELECT k, SUM(v * 2) FROM 't.parquet' GROUP BY k")
    assert "sum((v * 2))" in list(q.query.output_names) or "sum(v * 2)" in list(q.query.output_names)
    assert all(not text.startswith("__") and '"__' not in text for text in q.query.labels.values()), q.query.labels
