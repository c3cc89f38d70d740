"""SQL on Spark: the SQL planner's stream plan run by :mod:`tidal.spark.batch`.

The statement is planned as for the embedded engine (same rewrites, same stream plan); the
plan runs on Spark; the final answer is the last snapshot of the result events, ordered and
limited as the statement says, and the changelog is the insert/retract view of the same
events. Both match the embedded engine's.
"""

from __future__ import annotations

import pyarrow as pa

from .batch import to_arrow
from .session import spark_session


def run_query_on_spark(
    sql,
    *,
    master: str | None = None,
    partitions: int | None = None,
    changelog: bool = False,
    spark=None,
    **plan_options,
) -> pa.Table:
    """Run a statement of tidal's SQL dialect (text, or a planned ``SqlQuery``) on Spark.

    Returns the final answer, or with ``changelog=True`` the inserts and retractions.
    """
    from ..io.egress import changelog_from_table
    from ..sql import plan
    from ..sql.query import final_snapshot

    query = plan(sql, **plan_options) if isinstance(sql, str) else sql
    spark = spark or spark_session(master)
    events = to_arrow(query.stream(), partitions=partitions, spark=spark)
    if not changelog:
        return query.finish(final_snapshot(events))
    log = changelog_from_table(events)
    hidden = query.query.hidden
    payload_names = log.column_names[2 : len(log.column_names) - hidden]
    return log.select(["time", "undo", *payload_names]).rename_columns(["time", "undo", *query.query.output_names])
