"""``SUMMARIZE <file | table | query>``: one row of statistics per column, DuckDB's columns.

The statement becomes an ordinary query over the summarized one (a CTE), one ``SELECT`` of
aggregates per column joined by ``UNION ALL``, so it runs (and streams) like any other query::

    column_name, column_type, min, max, approx_unique, avg, std, q25, q50, q75, count, null_percentage

``min``/``max`` (as text), ``avg`` and ``std`` (as text, numbers only), ``count`` (all rows) and
``null_percentage`` (``DECIMAL(9,2)``) are DuckDB's definitions. Two of DuckDB's columns are
approximations (HyperLogLog's ``approx_count_distinct`` and T-Digest's ``approx_quantile``) that
tidal does not reproduce; tidal gives the exact values instead: ``approx_unique`` is
``count(DISTINCT c)`` (DuckDB's estimate equals it on small inputs), and the quartiles are
``quantile_disc`` for integer columns (a value of the column, typed like DuckDB's) and
``quantile_cont`` for floating ones. DuckDB's estimates can differ from both. Columns of dates and
timestamps (whose average and quartiles DuckDB rounds in its own way) and nested columns are
refused, naming the column; ``SUMMARIZE SELECT * EXCLUDE (col) FROM ...`` summarizes the others.
"""

from __future__ import annotations

import pyarrow as pa
from sqlglot import exp

from ...core.errors import PlanError
from .types import duckdb_type_name

SOURCE = "summarized__rows"
COLUMNS = (
    "column_name", "column_type", "min", "max", "approx_unique", "avg", "std", "q25", "q50", "q75", "count",
    "null_percentage",
)  # fmt: skip


def summarized_query(tree: exp.Summarize) -> exp.Expression:
    """The query whose columns ``SUMMARIZE`` describes."""
    target = tree.this
    if isinstance(target, exp.Subquery):
        return target.this.copy()
    if isinstance(target, exp.Query):
        return target.copy()
    if isinstance(target, exp.Literal) and target.is_string:  # SUMMARIZE 'file.csv'
        target = exp.Table(this=exp.to_identifier(target.name, quoted=True))
    if isinstance(target, exp.Table):
        return exp.select("*").from_(target.copy())
    raise PlanError(f"SUMMARIZE of {target.sql(dialect='duckdb')} is not supported: summarize a file, table or query")


def _text(e: str) -> str:
    return f"CAST({e} AS VARCHAR)"


def _column_select(name: str, sql_type: pa.DataType, type_text: str | None = None) -> str:
    if pa.types.is_nested(sql_type):
        raise PlanError(f"SUMMARIZE of column {name} ({duckdb_type_name(sql_type)}) is not supported (nested values)")
    if pa.types.is_temporal(sql_type):
        raise PlanError(
            f"SUMMARIZE of column {name} ({duckdb_type_name(sql_type)}) is not supported (DuckDB's average and "
            f"quartiles of dates and times); SUMMARIZE SELECT * EXCLUDE ({name}) FROM ... summarizes the others"
        )
    col = exp.column(name, quoted=True).sql(dialect="duckdb")
    numeric = pa.types.is_integer(sql_type) or pa.types.is_floating(sql_type) or pa.types.is_decimal(sql_type)
    if numeric:
        quantile = "quantile_disc" if pa.types.is_integer(sql_type) else "quantile_cont"
        avg, std = _text(f"avg({col})"), _text(f"stddev_samp({col})")
        qs = [_text(f"{quantile}({col}, {q})") for q in ("0.25", "0.5", "0.75")]
    else:
        avg = std = "CAST(NULL AS VARCHAR)"
        qs = ["CAST(NULL AS VARCHAR)"] * 3
    label = exp.Literal.string(name).sql(dialect="duckdb")
    type_name = exp.Literal.string(type_text or duckdb_type_name(sql_type)).sql(dialect="duckdb")
    return (
        f"SELECT {label} AS column_name, {type_name} AS column_type, {_text(f'min({col})')} AS min, "
        f"{_text(f'max({col})')} AS max, count(DISTINCT {col}) AS approx_unique, {avg} AS avg, {std} AS std, "
        f"{qs[0]} AS q25, {qs[1]} AS q50, {qs[2]} AS q75, count(*) AS count, "
        f"CASE WHEN count(*) > 0 THEN CAST((1 - count({col}) / count(*)) * 100 AS DECIMAL(9,2)) END"
        f" AS null_percentage FROM {SOURCE}"
    )


def summarize_tree(
    target: exp.Expression, names: list[str], types: list[pa.DataType], parse, texts=None
) -> exp.Expression:
    """The summary of ``target`` (whose visible columns are ``names`` of ``types``) as a query tree;
    ``parse`` reads SQL text in tidal's dialect. Rows come in column order, as DuckDB gives them."""
    if not names:
        raise PlanError("SUMMARIZE of a query without columns is not supported")
    texts = texts or [None] * len(names)  # DuckDB's type names where tidal's types do not tell them
    parts = [_column_select(n, t, x) for n, t, x in zip(names, types, texts, strict=True)]
    union = " UNION ALL ".join(f"SELECT *, {i} AS summarized__ord FROM ({p})" for i, p in enumerate(parts))
    outer = ", ".join(COLUMNS)
    tree = parse(f"WITH {SOURCE} AS (SELECT 1) SELECT {outer} FROM ({union}) ORDER BY summarized__ord")
    cte = tree.args.get("with_") or tree.args.get("with")
    cte.expressions[0].set("this", target)
    return tree
