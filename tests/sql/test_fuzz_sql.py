"""A grammar-aware SQL fuzzer (issue 16): mutations of the golden queries and random expressions
through ``tidal query``. Every run must end in an answer or in one line and exit status 2: no
traceback, no internal error, no hang.

The budget is small in CI (``FUZZ_EXAMPLES`` below, about half a minute); ``TIDAL_FUZZ_EXAMPLES=5000``
runs a longer campaign. Queries run in-process in a worker (``fuzzing.Worker``), a few as a real
subprocess.
"""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .data import write_files
from .fuzzing import EXAMPLES, ROOT, TIMEOUT, Worker, verdict
from .test_golden import HERE

FUZZ_EXAMPLES = EXAMPLES or 120
FORMATS = ["batch-csv", "batch-json", "stream-json", "live-csv", "batch-table"]


def _golden() -> list[str]:
    out = []
    for name in ("queries.sql", "session_queries.sql"):
        for block in re.split(r"^-- name: ", (HERE / name).read_text(), flags=re.M)[1:]:
            body = block.partition("\n")[2].partition("-- duckdb:")[0]
            out.append(" ".join(line for line in body.splitlines() if not line.startswith("--")).strip().rstrip(";"))
    return out


GOLDEN = _golden()
TOKEN = re.compile(r"'(?:[^']|'')*'|\"[^\"]*\"|\d+\.\d*|\d+|\w+|<>|<=|>=|!=|\|\||::|=>|\S")

COLUMNS = ["id", "customer", "qty", "price", "discount", "note", "ts", "nope", "o.id", "x.qty"]
FUNCTIONS = [
    "upper", "lower", "length", "substring", "replace", "trim", "concat", "abs", "round", "coalesce", "nullif",
    "greatest", "least", "regexp_matches", "regexp_replace", "strftime", "date_trunc", "epoch", "left", "right",
    "count", "sum", "min", "max", "avg", "median", "stddev", "string_agg", "first", "quantile_cont", "contains",
    "starts_with", "reverse", "ln", "sqrt", "power", "floor", "ceil", "sign", "hash", "strlen", "typeof",
]  # fmt: skip
LITERALS = [
    "0", "1", "-1", "2", "9223372036854775807", "9223372036854775808", "-9223372036854775808", "1e308", "1e309",
    "0.5", "'a'", "''", "'%a%'", "NULL", "TRUE", "FALSE", "DATE '2024-03-01'", "TIMESTAMP '2024-03-01 10:00:00'",
    "INTERVAL 1 DAY", "INTERVAL 3 HOURS", "'2024-03-01'", "99999999999999999999", "1/0", "'\\x00'",
]  # fmt: skip
OPERATORS = ["+", "-", "*", "/", "//", "%", "||", "=", "<>", "<", "<=", ">", ">=", "AND", "OR", "LIKE", "IS", "IN"]
KEYWORDS = [
    "SELECT", "FROM", "WHERE", "GROUP", "BY", "ORDER", "HAVING", "LIMIT", "OFFSET", "JOIN", "ON", "AS", "DISTINCT",
    "CASE", "WHEN", "THEN", "ELSE", "END", "NOT", "NULL", "UNION", "ALL", "WITH", "OVER", "PARTITION", "CAST",
    "BETWEEN", "EXISTS", "(", ")", ",", "*", ";", "'orders.csv'", "'customers.csv'", "'events.json'", "TRIGGER",
    "COUNTING", "tumble", "hop", "session", "DESCRIPTOR", "TABLE", "=>", "::", "INTEGER", "VARCHAR", "DOUBLE",
    "WINDOW", "DESCRIBE", "list", "string_agg", "left_grapheme", "substring_grapheme", "SUMMARIZE",
]  # fmt: skip
VOCABULARY = COLUMNS + FUNCTIONS + LITERALS + OPERATORS + KEYWORDS


def expressions(depth: int = 3):
    """Random expressions over orders.csv's columns: functions with any number of arguments (too few
    and too many too), operators, CASE, CAST, IN, BETWEEN, deep nesting now and then."""
    leaf = st.one_of(st.sampled_from(COLUMNS[:7]), st.sampled_from(LITERALS), st.integers().map(str))
    if depth == 0:
        return leaf
    sub = expressions(depth - 1)
    return st.one_of(
        leaf,
        st.tuples(sub, st.sampled_from(OPERATORS), sub).map(lambda t: f"{t[0]} {t[1]} {t[2]}"),
        st.tuples(st.sampled_from(FUNCTIONS), st.lists(sub, max_size=4), st.booleans()).map(
            lambda t: f"{t[0]}({'DISTINCT ' if t[2] else ''}{', '.join(t[1])})"
        ),
        sub.map(lambda e: f"({e})"),
        sub.map(lambda e: f"NOT {e}"),
        st.tuples(sub, sub, sub).map(lambda t: f"CASE WHEN {t[0]} THEN {t[1]} ELSE {t[2]} END"),
        st.tuples(sub, st.sampled_from(["INTEGER", "BIGINT", "DOUBLE", "VARCHAR", "DATE", "TIMESTAMP", "BOOLEAN"])).map(
            lambda t: f"CAST({t[0]} AS {t[1]})"
        ),
        st.tuples(sub, st.lists(sub, min_size=1, max_size=3)).map(lambda t: f"{t[0]} IN ({', '.join(t[1])})"),
        st.tuples(sub, sub, sub).map(lambda t: f"{t[0]} BETWEEN {t[1]} AND {t[2]}"),
        st.integers(1, 130).map(lambda n: "(" * n + "qty" + ")" * n),
        st.integers(1, 1100).map(lambda n: " OR ".join(f"qty = {i}" for i in range(n))),
    )


TEMPLATES = [
    "SELECT {e} AS x FROM 'orders.csv'",
    "SELECT id FROM 'orders.csv' WHERE {e}",
    "SELECT customer, {e} AS x FROM 'orders.csv' GROUP BY customer",
    "SELECT {e} AS x, count(*) AS n FROM 'orders.csv' GROUP BY 1",
    "SELECT id, {e} AS x FROM 'orders.csv' ORDER BY {e} LIMIT 3",
    "SELECT count(*) AS n FROM 'orders.csv' HAVING {e}",
    "SELECT o.id, {e} AS x FROM 'orders.csv' o JOIN 'customers.csv' c ON o.customer = c.name",
    "SELECT window_start, {e} AS x FROM tumble(source => TABLE('orders.csv'), time_field => DESCRIPTOR(ts), "
    "window_length => INTERVAL 1 HOUR) t GROUP BY window_start",
    "SELECT id FROM 'orders.csv' o WHERE EXISTS (SELECT 1 FROM 'customers.csv' c WHERE c.name = o.customer AND {e})",
    "SELECT id, (SELECT count(*) FROM 'orders.csv' x WHERE x.customer = o.customer AND {e}) AS n FROM 'orders.csv' o",
    "SELECT id, sum(qty) OVER w AS x FROM 'orders.csv' WINDOW w AS (PARTITION BY {e} ORDER BY id)",
    "SELECT customer, string_agg(CAST({e} AS VARCHAR), ',' ORDER BY id) AS x FROM 'orders.csv' GROUP BY customer",
]


@st.composite
def mutated(draw):
    """A golden query with one to three token-level mutations."""
    tokens = TOKEN.findall(draw(st.sampled_from(GOLDEN)))
    for _ in range(draw(st.integers(1, 3))):
        if not tokens:
            break
        i = draw(st.integers(0, len(tokens) - 1))
        action = draw(st.sampled_from(["delete", "replace", "insert", "duplicate", "swap", "truncate"]))
        if action == "delete":
            del tokens[i : i + draw(st.integers(1, 3))]
        elif action == "replace":
            tokens[i] = draw(st.sampled_from(VOCABULARY))
        elif action == "insert":
            tokens.insert(i, draw(st.one_of(st.sampled_from(VOCABULARY), expressions(1))))
        elif action == "duplicate":
            tokens.insert(i, tokens[i])
        elif action == "swap":
            j = draw(st.integers(0, len(tokens) - 1))
            tokens[i], tokens[j] = tokens[j], tokens[i]
        else:
            tokens = tokens[:i]
    return " ".join(tokens)


queries = st.one_of(mutated(), st.tuples(st.sampled_from(TEMPLATES), expressions()).map(lambda t: t[0].format(e=t[1])))


@pytest.fixture(scope="module")
def worker(tmp_path_factory):
    directory = tmp_path_factory.mktemp("fuzz")
    write_files(directory)
    w = Worker(directory)
    yield w
    w.close()


@settings(max_examples=FUZZ_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(sql=queries, fmt=st.sampled_from(FORMATS), skip=st.booleans())
def test_every_query_is_answered_or_rejected_in_one_line(worker, sql, fmt, skip):
    argv = ["query", "--format", fmt, *(["--on-error", "skip"] if skip else []), "--", sql]
    problem = verdict(argv, worker.run(argv))
    assert problem is None, problem


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT " + "(" * 150 + "1" + ")" * 150 + " FROM 'orders.csv'",
        "SELECT COUNT(DISTINCT) FROM 'orders.csv'",
        "SELECT replace(customer, '', 'A') AS r FROM 'orders.csv'",
    ],
)
def test_as_a_subprocess(tmp_path, sql):
    """The real command (``python -m tidal.cli.main``): the same verdict, and it ends within the timeout."""
    write_files(tmp_path)
    argv = ["query", "--format", "batch-csv", "--", sql]
    done = subprocess.run(
        [sys.executable, "-m", "tidal.cli.main", *argv],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=TIMEOUT + 30,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    problem = verdict(argv, (done.returncode, done.stdout, done.stderr))
    assert problem is None, problem


def test_replace_with_an_empty_search_string_answers_as_duckdb(tmp_path):
    """Once a loop that never ended (memory growing by gigabytes): DuckDB leaves the string as it is."""
    import duckdb

    write_files(tmp_path)
    sql = "SELECT id, replace(customer, '', 'A') AS r FROM 'orders.csv'"
    done = subprocess.run(
        [sys.executable, "-m", "tidal.cli.main", "query", "--format", "batch-csv", sql],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr
    got = [tuple(line.split(",")) for line in done.stdout.splitlines()[1:]]
    with duckdb.connect() as con:
        want = con.sql(sql.replace("'orders.csv'", f"'{tmp_path / 'orders.csv'}'")).fetchall()
    assert sorted((int(i), r.strip('"')) for i, r in got) == sorted(want)
