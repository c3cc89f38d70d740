"""tidal's command line.

``tidal query "<SQL>"`` runs a query of tidal's SQL dialect over files (paths relative to the
current directory) and prints its result in one of several formats; ``tidal explain "<SQL>"``
prints the logical plan, the rewrites applied and the stream plan.

``tidal demo`` runs the main job on the embedded engine (``tidal/cli/demo.py``): generated ad clicks
arriving out of order, sorted under a reorder latency, joined with each ad's price at the click's time,
spend per ad per minute, late clicks counted; it prints the plan and throughput. ``--events N`` sets
the size.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import select
import signal
import sys
import time

from tidal.cli import startup


def _demo(args) -> int:
    from tidal.cli import demo

    return demo.run(args)


FORMATS = ("live-table", "batch-table", "live-csv", "batch-csv", "batch-json", "stream-json", "parquet")
REDRAW_SECONDS = 0.1


def _json_value(v):
    """Dates and timestamps as DuckDB prints them, in every format (see tidal.sql.output.temporal_text)."""
    from tidal.sql.output import temporal_text

    return temporal_text(v)


def _rich_table(table):
    from rich.table import Table

    out = Table(show_lines=False)
    for name in table.column_names:
        out.add_column(name)
    for row in table.to_pylist():
        out.add_row(*["NULL" if v is None else str(_json_value(v)) for v in row.values()])
    return out


def _table_text(table, stats) -> str:
    from rich.console import Console

    console = Console(width=200, record=True, file=io.StringIO())
    console.print(_rich_table(table))
    return console.export_text()


def _status(stats) -> str:
    from tidal.core.time import INFINITY

    wm = stats.watermark
    if wm == INFINITY:
        wm_text = "end of input"
    elif wm is None:
        wm_text = "none"
    else:
        wm_text = str(wm)
        if 0 <= wm < 10**17:  # event time in microseconds since the epoch
            import datetime as dt

            wm_text = _json_value(dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=wm))
    counts = f"rows read: {stats.rows_read:,}  late rows: {stats.late:,}  skipped rows: {stats.skipped:,}"
    return f"{counts}  watermark: {wm_text}"


def _live_table(q, out) -> None:
    """Redraw the current result (ordered and limited like the final one) as changes arrive."""
    from rich.console import Console
    from rich.live import Live

    from tidal.sql.output import ChangelogSink, CurrentResult

    names = list(q.optimized.names)
    schema = q.optimized.schema()
    q.live = True  # grouped results are shown as they change, not only when their TRIGGER fires
    current = CurrentResult()
    console = Console(file=out)
    last = [0.0]

    def view():
        from rich.console import Group
        from rich.text import Text

        return Group(_rich_table(q.finish(current.table(names, schema))), Text(_status(q.stats), style="dim"))

    with Live(view(), console=console, auto_refresh=False) as live:

        def redraw(*_args, force: bool = False) -> None:
            now = time.perf_counter()
            if force or now - last[0] >= REDRAW_SECONDS:
                last[0] = now
                live.update(view(), refresh=True)

        def on_change(t, undo, row) -> None:
            current(t, undo, row)
            if not undo:  # a changed row is a retraction then an insert: never draw between the two
                redraw()

        q.stats.on_progress = redraw
        q.run(ChangelogSink(names, names, on_change))
        redraw(force=True)


def _with_progress(q, work):
    """Run ``work()`` with a progress bar of rows read on stderr (batch formats on a terminal)."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    progress = Progress(
        TextColumn("reading"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("rows; late {task.fields[late]}"),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
    )
    with progress:
        task = progress.add_task("read", total=None, late=0)

        def update(stats) -> None:
            progress.update(task, completed=stats.rows_read, total=stats.rows_total or None, late=stats.late)

        q.stats.on_progress = update
        return work()


def _pyarrow_without_pandas() -> None:
    """pyarrow imports pandas (about half a second) the first time it converts a Python list when pandas
    is installed, to recognise pandas objects. The embedded engine never hands pyarrow pandas objects,
    so ``tidal query`` lets pyarrow's one import attempt fail: pyarrow then skips its pandas checks,
    and pandas itself stays importable (Spark's engine needs pyarrow's pandas support: not called there)."""
    import pyarrow as pa

    if "pandas" in sys.modules:
        return
    sys.meta_path.insert(0, _NoPandas)
    try:
        pa.array([0])  # pyarrow tries to import pandas once, now, and remembers it has none
    finally:
        sys.meta_path.remove(_NoPandas)


class _NoPandas:
    """A finder that makes ``import pandas`` fail (on ``sys.meta_path`` only while pyarrow looks), and
    ``import dateutil``: pyarrow looks for it then too (~2.5 ms: calendar, locale), and again at a later
    conversion, so a query that converts no Python values never loads it (relativedelta still converts)."""

    @staticmethod
    def find_spec(name, path=None, target=None):
        if name in ("pandas", "dateutil"):
            raise ModuleNotFoundError(f"{name} is not used by tidal query", name=name)
        return None


_OWN_PROCESS = False  # set by ``entry``: the process is the `tidal` command, not a caller of ``main``


def _query(args) -> int:
    if args.engine == "embedded" and _OWN_PROCESS:  # never change pyarrow for a program that called main()
        _pyarrow_without_pandas()
    from tidal.sql import plan
    from tidal.sql.output import ChangelogSink, LiveCsv, StreamJson

    fmt = args.format or ("live-table" if sys.stdout.isatty() else "batch-csv")
    if args.output and args.output.startswith("kafka://") and args.format is None:
        fmt = "stream-json"  # a topic gets each change as a message
    latency = args.batch_latency / 1000 if args.batch_latency is not None else None
    q = plan(
        args.sql,
        on_error=args.on_error,
        late_path=args.late_records,
        late=args.late,
        batch_latency=latency,
        batch_rows=args.batch_rows,
        catalog=getattr(args, "catalog", None),
    )
    _sink_columns(q, getattr(args, "columns", None))
    startup.resume()
    if args.state:
        return _durable(q, fmt, args)
    if args.output and args.output.startswith(("postgresql://", "postgres://")) and not args.state:
        return _to_postgres(q, args)
    labels = list(q.query.output_names)
    if args.output and args.output.startswith("kafka://"):
        return _to_kafka(q, args, labels)
    out = open(args.output, "w") if args.output and fmt != "parquet" else sys.stdout  # noqa: SIM115
    try:
        with _stop_on_signals(lambda: q.running.stop() if q.running is not None else False) as got:
            if args.progressive:
                _progressive(q, args.progressive, fmt, out)
            elif fmt in ("stream-json", "live-csv"):
                writer = StreamJson(out, labels) if fmt == "stream-json" else LiveCsv(out, labels)
                q.run(ChangelogSink(q.visible_names(), labels, writer))
            elif fmt == "live-table" and out.isatty():
                _live_table(q, out)
            elif args.engine == "spark":
                _on_spark(q, args, fmt, out, labels)
            else:
                show_progress = fmt != "live-table" and sys.stderr.isatty()
                table = _with_progress(q, q.result) if show_progress else q.result()
                _write_final(table, fmt, out, args, q.stats)
        out.flush()
        if fmt in ("live-table", "batch-table") or q.stats.late or q.stats.skipped or _has_watermark(q):
            print(_status(q.stats), file=sys.stderr)  # the late count is always reported when rows can be late
    finally:
        if out is not sys.stdout:
            out.close()
    if got:
        print(f"tidal: stopped by {got[0].name}: the output above is the answer so far", file=sys.stderr)
        return 128 + got[0].value
    return 0


def _sink_columns(q, columns) -> None:
    """``INSERT INTO t SELECT ...`` (tidal/cli/run.py): the answer's columns take t's names, by position."""
    if not columns:
        return
    names = q.query.output_names
    if len(names) != len(columns):
        from tidal.core.errors import PlanError

        raise PlanError(
            f"the query gives {len(names)} columns ({', '.join(names)}) and the sink table has "
            f"{len(columns)} ({', '.join(columns)}): they are matched by position"
        )
    q.query.output_names = tuple(columns)


@contextlib.contextmanager
def _stop_on_signals(stop):
    """SIGINT and SIGTERM ask the running query to stop between two messages (``stop()``; False when
    nothing runs yet: then the signal interrupts at once, as does a second one). Yields the signals got."""
    got: list = []

    def handler(signum, frame):
        got.append(signal.Signals(signum))
        if len(got) > 1 or not stop():
            raise KeyboardInterrupt

    previous = {}
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            previous[sig] = signal.signal(sig, handler)
        except ValueError:  # not the main thread: signals stay as they are
            pass
    try:
        yield got
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def _durable(q, fmt: str, args) -> int:
    """``--state``: exactly-once output that survives a crash (see tidal.sql.durable)."""
    from tidal.sql.durable import STREAM_FORMATS, DurableRun, check_durable

    check_durable(q, fmt, args.output, bool(args.progressive), args.engine)
    run = DurableRun(q, fmt, args.output, args.state)
    with _stop_on_signals(lambda: run.stop() or run.runner is not None) as got:
        finished = run.run(every_seconds=args.checkpoint_interval)
    if not finished:
        print(
            f"tidal: stopped by {got[0].name if got else 'request'}; state saved (checkpoint {run.sequence} in "
            f"{args.state}): run the same command to continue",
            file=sys.stderr,
        )
        return 128 + (got[0].value if got else 0)
    if fmt not in STREAM_FORMATS and not run.url:  # (a URL's sink wrote its own output)
        table = run.result()
        tmp = f"{args.output}.tmp"
        if fmt == "parquet":
            import pyarrow.parquet as pq

            from tidal.sql.output import unique_names

            pq.write_table(table.rename_columns(unique_names(table.column_names)), tmp)
        else:
            with open(tmp, "w") as out:
                _write_final(table, "batch-table" if fmt == "live-table" else fmt, out, args, q.stats)
                out.flush()
                os.fsync(out.fileno())
        os.replace(tmp, args.output)  # the answer appears whole, once
    if q.stats.late or q.stats.skipped or _has_watermark(q):
        print(_status(q.stats), file=sys.stderr)
    return 0


def _to_kafka(q, args, labels) -> int:
    """``--output kafka://host:port/topic``: each change a message, as stream-json writes it."""
    from tidal.io.kafka_sink import KafkaSink
    from tidal.sql.output import ChangelogSink, StreamJson

    if args.format not in (None, "stream-json"):
        raise SystemExit("tidal: --output kafka://... writes changes (stream-json); drop --format")
    address, _, topic = args.output[len("kafka://") :].partition("/")
    if not address or not topic:
        raise SystemExit("tidal: --output kafka://HOST:PORT/TOPIC")
    sink = KafkaSink(address, topic, query=args.sql)

    class _Messages:  # StreamJson writes one JSON line per change: each becomes a message
        def write(self, text: str) -> None:
            for line in text.splitlines():
                sink.write_bytes(line.encode())

        def flush(self) -> None:
            pass

    q.run(ChangelogSink(q.visible_names(), labels, StreamJson(_Messages(), labels)))
    sink.close()
    print(f"{_status(q.stats)}  messages: {sink.sent} to {args.output}", file=sys.stderr)
    return 0


def _to_postgres(q, args) -> int:
    """``--output postgresql://.../db?table=t``: the final state kept in a table (tidal/sql/postgres_output.py)."""
    from tidal.sql.postgres_output import PostgresOutput

    sink = PostgresOutput(q, args.output, autocommit=True)
    try:
        sink.resume_at(None)
        q.run(sink)
    finally:
        sink.close()
    print(_status(q.stats), file=sys.stderr)
    return 0


def _has_watermark(q) -> bool:
    from tidal.sql.logical import EventTime

    def walk(node) -> bool:
        return isinstance(node, EventTime) or any(walk(i) for i in node.inputs)

    return walk(q.optimized)


def _on_spark(q, args, fmt: str, out, labels) -> None:
    """The same query planned by tidal, executed inside Spark tasks (see tidal.spark)."""
    from tidal.spark.sql import run_query_on_spark
    from tidal.sql.output import LiveCsv, StreamJson

    if fmt in ("stream-json", "live-csv"):
        log = run_query_on_spark(q, master=args.spark_master, changelog=True)
        names = [n for n in log.column_names if n not in ("time", "undo")]
        writer = StreamJson(out, names) if fmt == "stream-json" else LiveCsv(out, names)
        for row in log.to_pylist():
            writer(row["time"], row["undo"], tuple(row[n] for n in names))
        return
    table = run_query_on_spark(q, master=args.spark_master)
    _write_final(table, "batch-table" if fmt == "live-table" else fmt, out, args, q.stats)


def _write_final(table, fmt: str, out, args, stats) -> None:
    """A final answer in one of the batch formats."""
    from tidal.sql.output import csv_ready, csv_text, json_ready, json_text, unique_names

    if fmt == "batch-csv":
        out.write(csv_text(csv_ready(table)))  # (pyarrow.csv's writer, imported for large or typed tables only)
    elif fmt == "batch-json":
        table = json_ready(table.rename_columns(unique_names(table.column_names)))  # keys of one object
        for row in table.to_pylist():
            out.write(json_text({k: _json_value(v) for k, v in row.items()}) + "\n")
    elif fmt == "parquet":
        import pyarrow.parquet as pq

        if not args.output:
            from tidal.core.errors import PlanError

            raise PlanError("--format parquet needs --output PATH")
        pq.write_table(table.rename_columns(unique_names(table.column_names)), args.output)
    else:  # live-table off a terminal shows its final redraw; batch-table the final state
        out.write(_table_text(table, stats).rstrip("\n") + "\n")


def _progressive(q, percent: float, fmt: str, out) -> None:
    """Refined answers after every ``percent``% of the input, then the exact answer (Trill's progressive mode)."""
    from tidal.sql.output import csv_ready, csv_text, json_text, unique_names
    from tidal.sql.progressive import run_progressive

    def report(fraction: float, table) -> None:
        if fmt in ("batch-json", "stream-json"):
            table = table.rename_columns(unique_names(table.column_names))
            for row in table.to_pylist():
                record = {k: _json_value(v) for k, v in row.items()}
                record["sys.progress"] = round(fraction, 6)
                out.write(json_text(record) + "\n")
        else:
            header = f"-- after {fraction:.0%} of the input" if fraction < 1 else "-- exact answer (all input)"
            out.write(header + "\n")
            if fmt == "batch-csv" or fmt == "live-csv":
                out.write(csv_text(csv_ready(table)))
            else:
                out.write(_table_text(table, q.stats).rstrip("\n") + "\n")
        out.flush()

    run_progressive(q, percent, report)


def _explain(args) -> int:
    from tidal.sql import plan

    print(plan(args.sql).explain())
    return 0


def _stdout_gone() -> bool:
    """Whether standard output is a pipe whose reader has closed it (and not some other pipe or socket)."""
    try:
        poll = select.poll()
        poll.register(sys.stdout.fileno(), select.POLLOUT)
        return any(events & select.POLLERR for _, events in poll.poll(0))
    except (AttributeError, OSError, ValueError):  # no poll(), or a stdout without a descriptor
        return False


def _engine_arguments(parser, engine_help: str) -> None:
    """``--engine`` and ``--spark-master``, shared by the commands that can run on Spark."""
    parser.add_argument("--engine", choices=("embedded", "spark"), default="embedded", help=engine_help)
    parser.add_argument(
        "--spark-master", help="Spark master URL for --engine spark (default: $SPARK_MASTER, else local[*])"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tidal", description="Temporal stream analytics for Python.")
    sub = parser.add_subparsers(dest="command")
    demo = sub.add_parser("demo", help="out-of-order ad clicks: sort, temporal join, windowed spend, late count")
    demo.add_argument("--events", type=int, default=2_000_000, help="number of generated clicks")
    demo.add_argument(
        "--seed",
        type=int,
        default=7,
        help="seed of the generated clicks, delays and prices (default 7): the same seed gives the same "
        "stream, the same late count and the same answer",
    )
    demo.add_argument(
        "--live",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="show the query's output as a live table while it runs (default: when standard output is a terminal)",
    )
    _engine_arguments(demo, "spark: also run the same query inside Spark tasks and check it gives the same answer")
    demo.set_defaults(run=_demo)
    query = sub.add_parser("query", help="run a SQL query over files")
    query.add_argument("sql", help="the query, e.g. \"SELECT a, COUNT(*) FROM 'data.csv' GROUP BY a\"")
    query.add_argument("--format", choices=FORMATS, help="output format (default: live-table on a terminal)")
    query.add_argument("--output", help="write the result to PATH instead of standard output")
    query.add_argument("--on-error", choices=("fail", "skip"), default="fail", help="malformed CSV rows")
    query.add_argument(
        "--late",
        choices=("drop", "file", "adjust"),
        help="records behind the watermark: drop them (default), drop them and write them to --late-records "
        "(file), or move their time up to the watermark (adjust, Trill's Adjust); their count is always reported",
    )
    query.add_argument(
        "--late-records",
        metavar="PATH",
        help="write the late records to PATH, one JSON object a line (implies --late file); "
        "each run starts a fresh file",
    )
    query.add_argument(
        "--progressive",
        type=float,
        metavar="N",
        help="on finite input, print refined answers after every N%% of the input, ending with the exact answer",
    )
    _engine_arguments(query, "run in this process (default) or inside Spark tasks")
    query.add_argument(
        "--batch-latency",
        type=float,
        metavar="MS",
        help="growing input (standard input, tail(...)): a batch goes out at most MS milliseconds after its "
        "first line arrived (default 250), or when full",
    )
    query.add_argument(
        "--batch-rows",
        type=int,
        metavar="N",
        help="growing input: at most N lines in one batch (default 65536)",
    )
    query.add_argument(
        "--state",
        metavar="PATH",
        help="durable exactly-once run: sources' positions, operator state and output progress are committed "
        "to PATH (SQLite); after a crash or kill, the same command continues (needs --output)",
    )
    query.add_argument(
        "--checkpoint-interval",
        type=float,
        default=1.0,
        metavar="SECONDS",
        help="with --state: commit at most this often (default 1 s of wall clock)",
    )
    query.set_defaults(run=_query)
    explain = sub.add_parser(
        "explain",
        help="show a query's logical plan, rewrites and stream plan",
        description="Print how tidal runs a query, without running it: the logical plan built from the SQL, "
        "the rewrites applied (filters and columns pushed into scans...), the optimized logical plan, and the "
        "stream plan of operators with their variants (sort, join and aggregate algorithms, columnar or row "
        "mode) and properties. Files are opened to read their columns only.",
    )
    explain.add_argument("sql", help="the query, as for tidal query")
    explain.set_defaults(run=_explain)
    from tidal.cli import run as run_cli
    from tidal.cli import shell as shell_cli

    script = run_cli.add_parser(sub, FORMATS)
    script.set_defaults(run=lambda a: run_cli.run_script(a, _query))
    shell = shell_cli.add_parser(sub)
    shell.set_defaults(run=lambda a: shell_cli.run_shell(a, _query))
    for command in (demo, query, explain, script, shell):
        command.add_argument("--debug", action="store_true", help="on an error, show the traceback too")
    args = parser.parse_args(argv)
    if args.command is None:  # `tidal` alone: the interactive shell
        args = parser.parse_args(["shell"])
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 20_000))  # room for tidal.sql.dialect's MAX_DEPTH
    from tidal.cli.report import show_warnings

    show_warnings()
    if args.run is not _query:  # only a query re-enables it itself, once planned
        startup.resume()
    try:
        return args.run(args)
    except KeyboardInterrupt as exc:
        from tidal.cli.report import report

        return report(exc, args)
    except BrokenPipeError:
        if not _stdout_gone():
            raise
        # the reader of our output left (``| head``): end quietly with the status of a process ended
        # by SIGPIPE, as cat and seq do (128 + 13 = 141: `set -o pipefail` sees it); stdout now points
        # at /dev/null, so the interpreter's last flush of what is still buffered does not fail again
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + signal.SIGPIPE
    except Exception as exc:  # a person reads one line, not a traceback (tidal/cli/report.py)
        from tidal.cli.report import report

        return report(exc, args)


def entry() -> None:
    """The `tidal` command: run `main`, then leave without C++ static destructors.

    Arrow keeps a pool of worker threads; destroying it while a worker is still alive at interpreter
    exit aborts the process ("terminate called without an active exception", apache/arrow#34314) after
    the answer was written, turning a success into SIGABRT. So the command runs Python's own exit
    work (atexit handlers, weakref finalizers), flushes its output and ends with `os._exit`.
    """
    global _OWN_PROCESS
    _OWN_PROCESS = True
    status = 1
    startup.begin()  # the collector paused, one BLAS thread
    try:
        status = main()
    except SystemExit as exc:  # argparse's --help and usage errors
        status = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
        if not isinstance(exc.code, int) and exc.code is not None:
            print(exc.code, file=sys.stderr)
    finally:
        import atexit
        import threading

        for thread in threading.enumerate():  # as the interpreter does: wait for non-daemon threads
            if thread is not threading.current_thread() and not thread.daemon:
                thread.join()
        atexit._run_exitfuncs()
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (BrokenPipeError, OSError, ValueError):
                pass  # the reader left or the stream is closed: nothing more can be delivered
    os._exit(status or 0)


if __name__ == "__main__":
    entry()
