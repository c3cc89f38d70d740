"""Golden tests of each rewrite rule: input SQL -> the logical plan after that rule alone.

``rules_golden.txt`` pairs each query with the plan the rule must produce (the sqlglot habit).
Every case is also *executed*: the plan before the rule, the plan after it, and DuckDB must give
the same answer on the same files. ``TIDAL_UPDATE_GOLDEN=1`` rewrites the expected plans (review
the diff before committing).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from tidal.sql.dialect import parse
from tidal.sql.logical import Builder
from tidal.sql.query import SqlQuery
from tidal.sql.rules import RULES, explain_logical

from .data import write_files
from .test_golden import _rows, _same, run_duckdb

HERE = Path(__file__).parent
GOLDEN = HERE / "rules_golden.txt"
RULE_BY_NAME = {r.__name__: r for r in RULES}


def _cases():
    text = GOLDEN.read_text()
    out = []
    for block in re.split(r"^-- rule: ", text, flags=re.M)[1:]:
        header, _, body = block.partition("\n")
        rule, name = header.split()[:2]
        sql, _, plan = body.partition("-- plan:\n")
        out.append(pytest.param(rule, sql.strip(), plan.rstrip("\n"), id=f"{rule}-{name}"))
    return out


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("rules")
    write_files(d)
    return d


def _check_same(table, expected):
    import io

    import pyarrow.csv as pv

    def via_csv(t):
        buf = io.BytesIO()
        pv.write_csv(t, buf)
        return pv.read_csv(io.BytesIO(buf.getvalue()))

    g, e = _rows(via_csv(table)), _rows(via_csv(expected))
    assert len(g) == len(e), (g, e)
    for rg, re_ in zip(g, e, strict=True):
        assert all(_same(a, b) for a, b in zip(rg, re_, strict=True)), (rg, re_)


@pytest.mark.parametrize(("rule", "sql", "expected_plan"), _cases())
def test_rule(rule, sql, expected_plan, data_dir):
    old = os.getcwd()
    os.chdir(data_dir)
    try:
        query = Builder().build(parse(sql))
        before = query.root
        after = RULE_BY_NAME[rule](before)
        got_plan = explain_logical(after)
        if os.environ.get("TIDAL_UPDATE_GOLDEN"):
            text = GOLDEN.read_text()
            old_block = f"{sql}\n-- plan:\n" + (f"{expected_plan}\n" if expected_plan else "")
            GOLDEN.write_text(text.replace(old_block, f"{sql}\n-- plan:\n{got_plan}\n"))
        else:
            assert got_plan == expected_plan
        assert got_plan != explain_logical(before), f"{rule} did not change the plan of this case"
        expected = run_duckdb(sql, data_dir)
        for root in (before, after):
            _check_same(SqlQuery(sql, query, root, root, [rule]).result(), expected)
    finally:
        os.chdir(old)
