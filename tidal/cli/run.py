"""``tidal run job.sql``: a SQL script of DDL, ``INSERT INTO`` and queries, statement by statement.

The statements (:mod:`tidal.sql.ddl`) share one :class:`Session`: ``CREATE TABLE`` and
``CREATE VIEW`` add to its catalog, ``INSERT INTO sink SELECT ...`` runs the query into the sink
table's connector (a file, a Kafka topic, a PostgreSQL table, standard output: the same writers
as ``tidal query --output``), a query prints its answer, ``EXPLAIN`` its plan. The interactive
shell (:mod:`tidal.cli.shell`) runs statements through the same session.

A failing statement stops the script (nothing after it runs) with its file and line; an
``INSERT``'s sink columns are matched to the query's by position, as in Flink.
"""

from __future__ import annotations

import argparse
import sys

from tidal.core.errors import PlanError, TidalError

# the query options a script's statements run with (tidal query's, where tidal run has no flag)
DEFAULTS = dict(
    format=None,
    output=None,
    on_error="fail",
    late=None,
    late_records=None,
    progressive=None,
    engine="embedded",
    spark_master=None,
    batch_latency=None,
    batch_rows=None,
    state=None,
    checkpoint_interval=1.0,
    debug=False,
)


class Session:
    """A catalog of tables and views, and the options statements run with."""

    def __init__(self, args=None, out=None, query=None):
        from tidal.sql.ddl import Catalog

        self.catalog = Catalog()
        self.query = query  # runs a query as `tidal query` does: tidal.cli.main passes its _query
        self.args = args
        self.out = out or sys.stdout
        self.state_used = False

    def _args(self, **given) -> argparse.Namespace:
        values = dict(DEFAULTS)
        for key in DEFAULTS:
            if self.args is not None and getattr(self.args, key, None) is not None:
                values[key] = getattr(self.args, key)
        values.update(given)
        return argparse.Namespace(**values, catalog=self.catalog.queries())

    def execute(self, stmt, table_format: str | None = None) -> str | None:
        """Run one statement; returns a message for DDL (None for what prints its own output)."""
        if stmt.kind in ("create table", "create view", "drop"):
            return self.catalog.execute(stmt)
        if stmt.kind == "show tables":
            names = self.catalog.names()
            self.out.write("".join(f"{n}\n" for n in names) if names else "(no tables)\n")
            return None
        if stmt.kind == "explain":
            from tidal.sql import plan

            self.out.write(plan(stmt.body, catalog=self.catalog.queries()).explain().rstrip("\n") + "\n")
            return None
        if stmt.kind == "query":
            args = self._args(sql=stmt.body, state=None)
            if table_format and args.format is None:
                args.format = table_format
            return self._finish(self._run(args))
        if stmt.kind == "insert":
            target, columns = self.catalog.sink(stmt.name)
            state = getattr(self.args, "state", None) if self.args is not None else None
            if state and self.state_used:
                raise PlanError("--state keeps one INSERT's progress: a script with --state has one INSERT INTO")
            self.state_used = self.state_used or bool(state)
            args = self._args(sql=stmt.body, output=target.output, format=target.format, columns=columns)
            return self._finish(self._run(args))
        raise PlanError(f"not supported: {stmt.kind} statements")

    def _run(self, args) -> int:
        if self.query is None:
            raise PlanError("this session runs DDL only (it was made without a query runner)")
        return self.query(args)

    @staticmethod
    def _finish(status: int) -> None:
        if status:
            raise _Stopped(status)
        return None


class _Stopped(Exception):
    """A statement's run ended early (a signal): the script stops with its status."""

    def __init__(self, status: int):
        super().__init__(status)
        self.status = status


def run_script(args, query) -> int:
    """``tidal run PATH``: every statement of the file, in order; stops at the first error."""
    from tidal.sql.ddl import located, split

    path = args.path
    if path == "-":
        text = sys.stdin.read()
    else:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    try:
        statements = split(text)
    except TidalError as exc:
        raise located(exc, path) from None
    if not statements:
        raise PlanError(f"{path}: no statements")
    session = Session(args, query=query)
    for stmt in statements:
        try:
            message = session.execute(stmt)
        except _Stopped as stop:
            return stop.status
        except TidalError as exc:
            raise located(exc, f"{path}, line {stmt.line}") from None
        if message and args.verbose:
            print(f"tidal: {message}", file=sys.stderr)
    return 0


def add_parser(sub, formats: tuple[str, ...]) -> argparse.ArgumentParser:
    run = sub.add_parser(
        "run",
        help="run a SQL script: CREATE TABLE / CREATE VIEW (Flink-style DDL), INSERT INTO sink SELECT ..., queries",
        description="Run the statements of a .sql file in order: CREATE TABLE name (cols..., WATERMARK FOR ts AS "
        "ts - INTERVAL '5' SECOND) WITH ('connector' = 'filesystem' | 'kafka' | 'postgres' | 'print', ...), "
        "CREATE VIEW, INSERT INTO table SELECT ..., DROP, SHOW TABLES, EXPLAIN and queries (their answers "
        "go to standard output). The first failing statement stops the script.",
    )
    run.add_argument("path", help="the script (- for standard input)")
    run.add_argument(
        "--format", choices=formats, help="output format of the script's queries (not of INSERT INTO: the sink's)"
    )
    run.add_argument("--on-error", choices=("fail", "skip"), default="fail", help="malformed CSV rows")
    run.add_argument("--late", choices=("drop", "file", "adjust"), help="records behind the watermark (as tidal query)")
    run.add_argument("--late-records", metavar="PATH", help="write the late records to PATH (implies --late file)")
    run.add_argument(
        "--engine", choices=("embedded", "spark"), default="embedded", help="run here or inside Spark tasks"
    )
    run.add_argument("--spark-master", help="Spark master URL for --engine spark")
    run.add_argument(
        "--state",
        metavar="PATH",
        help="durable exactly-once run of the script's one INSERT INTO (as tidal query --state)",
    )
    run.add_argument("--checkpoint-interval", type=float, default=1.0, metavar="SECONDS", help="with --state")
    run.add_argument("-v", "--verbose", action="store_true", help="say what each DDL statement did (on stderr)")
    return run
