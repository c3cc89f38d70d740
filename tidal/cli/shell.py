"""``tidal`` (no arguments) or ``tidal shell``: an interactive SQL shell, as DuckDB's and Flink's clients are.

Statements end with ``;`` and may span lines; ``CREATE TABLE`` / ``CREATE VIEW`` stay in the
session (:class:`tidal.cli.run.Session`), so later queries and ``INSERT INTO`` use them. A query's
answer is printed as a table (redrawn live while it runs, on a terminal); Ctrl-C stops a running
query and keeps the shell. An error is printed (``tidal: ...``) and the shell goes on.

On a terminal the line editor is prompt_toolkit's: history kept in ``$TIDAL_HISTORY`` (default
``~/.tidal_history``), Tab completes keywords, table functions and the session's tables and views.
Without prompt_toolkit, Python's readline does the same. Off a terminal (``tidal < job.sql``,
``echo 'SELECT 1;' | tidal``) statements are read from standard input with no prompt, and the exit
status is 2 if any statement failed.

Shell commands: ``.tables``, ``.help``, ``.quit`` (or ``quit``, ``exit``, Ctrl-D).
"""

from __future__ import annotations

import os
import sys

KEYWORDS = (
    "SELECT", "FROM", "WHERE", "GROUP BY", "ORDER BY", "HAVING", "LIMIT", "JOIN", "LEFT JOIN", "ON", "AS", "AND",
    "OR", "NOT", "IN", "CASE", "WHEN", "THEN", "ELSE", "END", "WITH", "UNION ALL", "DISTINCT", "COUNT", "SUM",
    "AVG", "MIN", "MAX", "INTERVAL", "SECOND", "MINUTE", "HOUR", "DAY", "CAST", "TIMESTAMP", "BIGINT", "DOUBLE",
    "VARCHAR", "BOOLEAN", "CREATE TABLE", "CREATE VIEW", "INSERT INTO", "DROP TABLE", "DROP VIEW", "SHOW TABLES",
    "EXPLAIN", "WATERMARK FOR", "WITH", "TABLE", "DESCRIPTOR", "MATCH_RECOGNIZE", "TRIGGER", "OVER", "PARTITION BY",
    "'connector'", "'filesystem'", "'kafka'", "'postgres'", "'print'", "'path'", "'format'", "'topic'",
    "'properties.bootstrap.servers'", "'scan.startup.mode'", "'url'", "'table-name'",
)  # fmt: skip
TABLE_FUNCTIONS = ("tumble", "hop", "session", "max_diff_watermark", "percentile_watermark", "read_csv",
                   "read_json", "read_parquet", "tail", "kafka", "postgres", "redis")  # fmt: skip
COMMANDS = {".quit", ".exit", "quit", "exit", "quit;", "exit;", ".tables", ".help", "help"}
HELP = """Statements end with ';' and may span lines. For example:
  CREATE TABLE clicks (ad BIGINT, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '5' SECOND)
    WITH ('connector' = 'filesystem', 'path' = 'clicks.csv');
  SELECT ad, window_end, COUNT(*) FROM tumble(source => TABLE(clicks), window_length => INTERVAL '1' MINUTE)
    GROUP BY ad, window_end;
  CREATE VIEW v AS SELECT ...;   INSERT INTO sink SELECT ...;   EXPLAIN SELECT ...;   SHOW TABLES;
Commands: .tables  .help  .quit (or Ctrl-D).  Ctrl-C stops a running query.  Docs: docs/ddl.md"""


def complete_statement(text: str) -> bool:
    """Whether ``text`` is ready to run: a shell command, or statements whose last ends with ``;``."""
    from sqlglot.errors import TokenError
    from sqlglot.tokens import TokenType

    from tidal.sql.dialect import Tidal

    stripped = text.strip()
    if not stripped or stripped.lower() in COMMANDS:
        return True
    try:
        tokens = Tidal().tokenize(text)
    except TokenError:  # an unterminated string or comment: more lines to come
        return False
    return bool(tokens) and tokens[-1].token_type == TokenType.SEMICOLON


def words(session) -> list[str]:
    """What Tab completes: keywords, table functions, the session's tables and views."""
    return [*KEYWORDS, *TABLE_FUNCTIONS, *session.catalog.names()]


def handle(session, text: str, table_format: str, args) -> str | None:
    """Run what the user entered. Returns ``"quit"``, ``"error"`` or None; never raises for a bad statement."""
    from tidal.cli.report import message
    from tidal.sql.ddl import split

    command = text.strip().lower().rstrip(";").strip()
    if command in ("quit", "exit", ".quit", ".exit"):
        return "quit"
    if command in (".help", "help"):
        print(HELP)
        return None
    if command == ".tables":
        text = "SHOW TABLES;"
    if not command:
        return None
    try:
        for stmt in split(text):
            note = session.execute(stmt, table_format)
            sys.stdout.flush()
            if note:
                print(f"tidal: {note}", file=sys.stderr)
    except KeyboardInterrupt:
        print("tidal: interrupted", file=sys.stderr)
        return "error"
    except Exception as exc:  # noqa: BLE001 - the shell reports every error and goes on
        from tidal.cli.run import _Stopped

        if isinstance(exc, _Stopped):
            return None  # a query stopped by Ctrl-C has said so
        print(message(exc, args)[0], file=sys.stderr)
        return "error"
    return None


def _piped(session, args) -> int:
    """Statements from a pipe or file, no prompt; the exit status says whether any failed."""
    failed, buffer = False, ""
    for line in sys.stdin:
        buffer += line
        if complete_statement(buffer):
            outcome = handle(session, buffer, "batch-table", args)
            buffer = ""
            failed |= outcome == "error"
            if outcome == "quit":
                break
    if buffer.strip():
        failed |= handle(session, buffer, "batch-table", args) == "error"
    return 2 if failed else 0


def history_path() -> str:
    return os.environ.get("TIDAL_HISTORY") or os.path.join(os.path.expanduser("~"), ".tidal_history")


def prompt_session(session, history: str, **io):
    """prompt_toolkit's line editor: multi-line until ``;``, history file, completion (``io``: input/output
    for tests)."""
    from prompt_toolkit import PromptSession
    from prompt_toolkit.completion import WordCompleter
    from prompt_toolkit.filters import Condition
    from prompt_toolkit.history import FileHistory

    holder: list = []
    editor = PromptSession(
        history=FileHistory(history),
        completer=WordCompleter(lambda: words(session), ignore_case=True, WORD=True),
        multiline=Condition(lambda: not complete_statement(holder[0].default_buffer.text)),
        prompt_continuation="   ...> ",
        **io,
    )
    holder.append(editor)
    return editor


def _interactive(session, args) -> int:
    print("tidal SQL shell: statements end with ';'. .help for help, .quit or Ctrl-D to leave.", file=sys.stderr)
    try:
        editor = prompt_session(session, history_path())
        read = lambda: editor.prompt("tidal> ")  # noqa: E731
    except ImportError:
        read = _readline_reader(session)
    while True:
        try:
            text = read()
        except KeyboardInterrupt:
            continue
        except EOFError:
            return 0
        if handle(session, text, "live-table", args) == "quit":
            return 0


def _readline_reader(session):
    """Without prompt_toolkit: Python's readline (history file, Tab completion), lines gathered until ``;``."""
    import atexit
    import readline

    path = history_path()
    try:
        readline.read_history_file(path)
    except OSError:
        pass
    atexit.register(lambda: _save_history(readline, path))

    def completer(prefix: str, state: int):
        found = [w for w in words(session) if w.lower().startswith(prefix.lower())]
        return found[state] if state < len(found) else None

    readline.set_completer(completer)
    readline.parse_and_bind("tab: complete")

    def read() -> str:
        text = input("tidal> ")
        while not complete_statement(text):
            text += "\n" + input("   ...> ")
        return text

    return read


def _save_history(readline, path: str) -> None:
    try:
        readline.write_history_file(path)
    except OSError:
        pass


def run_shell(args, query) -> int:
    from tidal.cli.run import Session

    session = Session(args, query=query)
    if not sys.stdin.isatty():
        return _piped(session, args)
    return _interactive(session, args)


def add_parser(sub):
    shell = sub.add_parser(
        "shell",
        help="interactive SQL shell (also: tidal with no arguments); reads statements from standard input "
        "when it is not a terminal",
    )
    shell.add_argument("--on-error", choices=("fail", "skip"), default="fail", help="malformed CSV rows")
    shell.add_argument("--engine", choices=("embedded", "spark"), default="embedded", help="run here or in Spark")
    return shell
