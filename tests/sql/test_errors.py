"""Type errors name the user's expression, in the user's terms: never an internal column (an
aggregate's, a GROUP BY expression's, a join key's or a renamed join column), never Arrow's
kernel names or type names. Also: standard input as a file (``stdin.csv``, ``stdin.json``)."""

from __future__ import annotations

import pytest

from tidal.cli.main import main as cli
from tidal.sql import SqlTypeError, plan


@pytest.mark.parametrize(
    ("sql", "named"),
    [
        ("SELECT upper(sum(qty)) FROM 'orders.csv'", "UPPER(SUM(qty)): not defined for BIGINT"),
        (
            "SELECT customer FROM 'orders.csv' GROUP BY customer HAVING sum(qty) + customer > 1",
            "SUM(qty) + customer: not defined for BIGINT, VARCHAR",
        ),
        ("SELECT customer FROM 'orders.csv' GROUP BY customer HAVING max(customer)", "HAVING MAX(customer) is VARCHAR"),
        ("SELECT upper(qty + 1) FROM 'orders.csv' GROUP BY qty + 1", "UPPER(qty + 1)"),
        ("SELECT customer FROM 'orders.csv' GROUP BY customer ORDER BY upper(count(*))", "UPPER(COUNT(*))"),
        ("SELECT a.qty + b.customer FROM 'orders.csv' a JOIN 'orders.csv' b ON a.id = b.id", "a.qty + b.customer"),
        (
            "SELECT * FROM 'orders.csv' o LEFT JOIN 'customers.csv' c ON o.customer = c.name AND o.qty + c.city > 1",
            "o.qty + c.city",
        ),
        ("SELECT * FROM 'orders.csv' o JOIN 'customers.csv' c ON upper(o.qty) = c.name", "UPPER(o.qty)"),
        ("SELECT s.t + 'a' FROM (SELECT sum(qty) AS t FROM 'orders.csv') s", "s.t + 'a'"),
        ("SELECT count(*) FROM 'orders.csv' WHERE customer", "WHERE customer is VARCHAR, not boolean"),
        ("SELECT sum(qty * customer) FROM 'orders.csv'", "qty * customer"),
    ],
)
def test_type_errors_name_the_users_expression(files_dir, sql, named):
    with pytest.raises(SqlTypeError) as err:
        plan(sql).result()
    message = str(err.value)
    assert named in message
    assert "__" not in message and "kernel" not in message and "int64" not in message


def test_a_value_error_at_run_time_names_the_expression(files_dir, capsys):
    sql = "SELECT CAST(c AS INTEGER) FROM (SELECT upper(customer) AS c FROM 'orders.csv') x"
    assert cli(["query", sql, "--format", "batch-csv"]) == 2
    err = capsys.readouterr().err
    assert "CAST(c AS INT)" in err and "'FRANK' as INTEGER" in err and "int32" not in err


def test_stdin_csv_and_json_read_standard_input(files_dir, capsys, monkeypatch):
    import io
    import sys

    import pyarrow.csv as pv

    from .test_golden import _rows, run_duckdb

    for name, text, sql in [
        ("stdin.csv", "a,b\n1,x\n2,y\n3,x\n", "SELECT b, sum(a) AS s FROM 'stdin.csv' GROUP BY b"),
        (
            "stdin.json",
            '{"a": 1, "b": "x"}\n{"a": 5, "b": "z"}\n',
            "SELECT b, a * 2 AS d FROM 'stdin.json' WHERE a > 1",
        ),
    ]:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(text.encode())))
        assert cli(["query", sql, "--format", "batch-csv"]) == 0
        got = pv.read_csv(io.BytesIO(capsys.readouterr().out.encode()))
        copy = name.replace("stdin", "copy")
        (files_dir / copy).write_text(text)
        assert _rows(got) == _rows(run_duckdb(sql.replace(name, copy), files_dir))
