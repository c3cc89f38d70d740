"""Rejected queries: one line on standard error (plus the query with a caret where the place is
known) and exit status 2, never a traceback; ``--debug`` shows it; what still escapes is reported as
an internal error with the query. Each query of issue 16's list has its test here."""

from __future__ import annotations

import json

import duckdb
import pytest

import tidal
import tidal.errors as errors
import tidal.sql
from tidal.cli.main import main as cli


def rejected(capsys, sql: str, *more: str) -> str:
    """Run ``sql`` through the command line; it must be rejected in one line. Returns that line."""
    capsys.readouterr()
    status = cli(["query", sql, "--format", "batch-csv", *more])
    err = capsys.readouterr().err
    assert status == 2, err
    assert "Traceback" not in err and "internal error" not in err, err
    lines = err.splitlines()
    assert lines[0].startswith("tidal: ")
    assert all(line.startswith("  ") for line in lines[1:]), err  # only the indented excerpt follows
    return err


def test_the_error_family():
    family = [
        errors.ParseError,
        errors.PlanError,
        errors.TidalTypeError,
        errors.InputError,
        errors.LambdaError,
        errors.StateError,
        errors.ResourceError,
        errors.InternalError,
    ]
    assert all(issubclass(e, errors.TidalError) for e in family)
    assert tidal.TidalError is errors.TidalError and tidal.PlanError is errors.PlanError
    assert tidal.InputError is errors.InputError
    assert issubclass(tidal.sql.SqlSyntaxError, errors.ParseError)
    assert issubclass(tidal.sql.SqlTypeError, errors.TidalTypeError)
    assert issubclass(errors.ParseError, errors.PlanError)  # ``except PlanError`` still catches both


def test_a_syntax_error_shows_the_query_with_a_caret(files_dir, capsys):
    err = rejected(capsys, "SELECT id FROM 'orders.csv' WHERE id >")
    first, query, mark = err.splitlines()
    assert first.startswith("tidal: syntax error at line 1")
    assert query == "  SELECT id FROM 'orders.csv' WHERE id >"
    assert mark.index("^") <= len(query)


def test_debug_shows_the_traceback(files_dir, capsys):
    assert cli(["query", "SELECT nope FROM 'orders.csv'", "--debug"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" in err and err.splitlines()[-1].startswith("tidal: ")


def test_an_internal_error_is_reported_with_the_query(files_dir, capsys, monkeypatch):
    def broken(*args, **kwargs):
        raise ValueError("a bug")

    monkeypatch.setattr(tidal.sql, "plan", broken)  # stands for a bug anywhere below the command line
    assert cli(["query", "SELECT 1 AS one FROM 'orders.csv'"]) == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "internal error, please report" in err and "ValueError: a bug" in err
    assert "query: SELECT 1 AS one FROM 'orders.csv'" in err


def test_ctrl_c_ends_with_status_130(files_dir, capsys, monkeypatch):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(tidal.sql, "plan", interrupted)
    assert cli(["query", "SELECT 1 FROM 'orders.csv'"]) == 130
    assert capsys.readouterr().err == "tidal: interrupted\n"


def test_an_unwritable_output_is_one_line(files_dir, capsys):
    err = rejected(capsys, "SELECT id FROM 'orders.csv'", "--output", str(files_dir / "no" / "such" / "out.csv"))
    assert "No such file or directory" in err and "out.csv" in err


def test_parquet_without_output_is_rejected(files_dir, capsys):
    capsys.readouterr()
    assert cli(["query", "SELECT id FROM 'orders.csv'", "--format", "parquet"]) == 2
    assert "--format parquet needs --output" in capsys.readouterr().err


def _nested(n: int) -> str:
    return "SELECT " + "(" * n + "qty" + ")" * n + " AS q FROM 'orders.csv'"


def _ors(n: int) -> str:
    return "SELECT id FROM 'orders.csv' WHERE " + " OR ".join(f"qty = {i}" for i in range(n))


def test_nesting_is_a_checked_limit(files_dir, capsys):
    from tidal.sql.dialect import MAX_NESTING

    assert tidal.sql.plan(_nested(MAX_NESTING)).result().column("q").to_pylist() == [3, 1, 5, 2, 7, 4, 1, 2, 6, 3]
    err = rejected(capsys, _nested(MAX_NESTING + 1))
    assert f"more than {MAX_NESTING} levels deep" in err and "^" in err
    err = rejected(capsys, "SELECT id FROM 'orders.csv' WHERE " + "NOT " * 3000 + "qty > 1")
    assert "levels deep" in err
    err = rejected(capsys, "SELECT " + "CASE WHEN qty > 1 THEN " * 200 + "1" + " END" * 200 + " FROM 'orders.csv'")
    assert "levels deep" in err


def test_long_or_chains_run_up_to_the_depth_limit(files_dir, capsys):
    from tidal.sql.dialect import MAX_DEPTH

    sql = _ors(MAX_DEPTH - 10)
    got = sorted(tidal.sql.plan(sql).result().column("id").to_pylist())
    assert got == sorted(r[0] for r in duckdb.sql(sql).fetchall())
    err = rejected(capsys, _ors(MAX_DEPTH + 1))
    assert f"more than {MAX_DEPTH}" in err and "IN (" in err


@pytest.mark.parametrize("digits", ["9223372036854775808", "99999999999999999999", "9" * 5000])
def test_integer_literals_past_bigint_are_rejected(files_dir, capsys, digits):
    err = rejected(capsys, f"SELECT {digits} AS x FROM 'orders.csv'")
    assert "out of BIGINT's range" in err and "line 1, column 8" in err
    assert len(err) < 1000  # a 5,000-digit literal is shortened


def test_the_largest_bigint_literal_runs(files_dir, capsys):
    assert cli(["query", "SELECT 9223372036854775807 AS x FROM 'orders.csv' LIMIT 1", "--format", "batch-json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"x": 2**63 - 1}


@pytest.mark.parametrize(
    ("sql", "named"),
    [
        ("SELECT COUNT(DISTINCT) FROM 'orders.csv'", "COUNT() needs an argument"),
        ("SELECT MIN() FROM 'orders.csv'", "MIN() needs an argument"),
        ("SELECT max() FROM 'orders.csv'", "MAX() needs an argument"),
        ("SELECT sum(DISTINCT) FROM 'orders.csv'", "SUM() needs an argument"),
        ("SELECT upper() FROM 'orders.csv'", "UPPER() is missing an argument"),
        ("SELECT substring(customer) FROM 'orders.csv'", "SUBSTRING() needs more arguments"),
        ("SELECT replace(customer, 'a') FROM 'orders.csv'", "REPLACE() needs more arguments"),
        ("SELECT quantile_cont(qty) FROM 'orders.csv'", "PERCENTILE_CONT() needs more arguments"),
    ],
)
def test_missing_arguments_name_the_function(files_dir, capsys, sql, named):
    err = rejected(capsys, sql)
    assert named in err and "sqlglot" not in err
    with pytest.raises(duckdb.Error):  # the oracle rejects it too
        duckdb.sql(sql).fetchall()


def test_select_without_columns_in_stream_json(files_dir, capsys):
    err = rejected(capsys, "SELECT FROM 'orders.csv'", "--format", "stream-json")
    assert "without a selection list" in err


@pytest.mark.parametrize("fmt", ["batch-json", "stream-json"])
def test_intervals_print_as_duckdb_prints_them(files_dir, capsys, fmt):
    exprs = ["INTERVAL 1 DAY", "INTERVAL 2 DAY + INTERVAL 90 MINUTE", "INTERVAL 1500 MILLISECOND", "-INTERVAL 1 HOUR"]
    sql = "SELECT " + ", ".join(f"{e} AS i{k}" for k, e in enumerate(exprs)) + " FROM 'orders.csv' LIMIT 1"
    capsys.readouterr()
    assert cli(["query", sql, "--format", fmt]) == 0
    got = json.loads(capsys.readouterr().out.splitlines()[-1])
    want = duckdb.sql("SELECT " + ", ".join(f"({e})::VARCHAR" for e in exprs)).fetchall()[0]
    assert [got[f"i{k}"] for k in range(len(exprs))] == list(want)


@pytest.mark.parametrize(
    ("sql", "named"),
    [
        ("SELECT id, date_trunc(EXISTS, ts) FROM 'orders.csv'", "unknown date part 'exists'"),
        ("SELECT id FROM 'orders.csv' WHERE NOT strlen()", "strlen() takes one argument, got 0"),
        ("SELECT a, b FROM read_csv('pipes.txt', sep => a)", "option sep must be a constant"),
        ("SELECT a, b FROM read_csv('pipes.txt', sep => '||')", "sep must be one character"),
    ],
)
def test_found_by_the_fuzzer(files_dir, capsys, sql, named):
    assert named in rejected(capsys, sql)


def test_date_trunc_takes_plural_units(files_dir, capsys):
    sql = "SELECT date_trunc('hours', ts) AS h FROM 'orders.csv' ORDER BY h LIMIT 1"
    capsys.readouterr()
    assert cli(["query", sql, "--format", "batch-json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"h": "2024-03-01 09:00:00"}


def test_a_long_or_chain_in_a_grouped_query_is_rejected_quickly(files_dir, capsys):
    import time

    ors = " OR ".join(f"qty = {i}" for i in range(900))
    start = time.perf_counter()
    err = rejected(capsys, f"SELECT customer, {ors} AS x FROM 'orders.csv' GROUP BY customer")
    assert "column qty must appear in GROUP BY" in err
    assert time.perf_counter() - start < 20  # took minutes: every subtree was bound and printed


@pytest.mark.parametrize("call", ["read_csv(id, sep => '|')", "read_parquet(1 + 2)", "read_json_auto(NULL)"])
def test_a_file_function_needs_a_quoted_path(capsys, call):
    err = rejected(capsys, f"SELECT * FROM {call}")
    assert "must be a quoted path" in err
