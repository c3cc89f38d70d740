"""The interactive shell (``tidal`` with no arguments): driven through a pipe as a user's terminal
session would be, and its line editor (prompt_toolkit) driven with keystrokes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from tidal.cli.run import Session
from tidal.cli.shell import complete_statement, words

ROOT = Path(__file__).resolve().parents[1]


def _shell(cwd: Path, text: str, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TIDAL_HISTORY": str(cwd / "history")}
    cmd = [sys.executable, "-m", "tidal.cli.main", *args]
    return subprocess.run(cmd, input=text, capture_output=True, text=True, cwd=cwd, env=env, timeout=300)


def _cells(out: str) -> list[list[str]]:
    lines = [line.replace("┃", "│") for line in out.splitlines()]  # (the header's rule is heavier)
    return [[c.strip() for c in line.split("│")[1:-1]] for line in lines if line.startswith("│")]


SESSION = """CREATE TABLE goals (team VARCHAR, minute INT)
  WITH ('connector' = 'filesystem', 'path' = 'goals.csv');
SELECT team, COUNT(*) AS n
  FROM goals
  GROUP BY team ORDER BY team;
SELECT nope FROM goals;
SELECT 'a;b' AS s;
CREATE VIEW late_goals AS SELECT team FROM goals WHERE minute > 45;
SELECT team, COUNT(*) AS n FROM late_goals GROUP BY team ORDER BY team; SHOW TABLES;
"""


def test_a_piped_session_keeps_ddl_prints_tables_and_survives_errors(tmp_path):
    rows = [("red", 10), ("blue", 50), ("red", 70), ("green", 80), ("red", 90)]
    (tmp_path / "goals.csv").write_text("team,minute\n" + "".join(f"{t},{m}\n" for t, m in rows))
    done = _shell(tmp_path, SESSION)  # `tidal` with no arguments, standard input a pipe
    assert done.returncode == 2, done.stderr  # one statement failed: the status says so at the end
    con = duckdb.connect()
    con.execute("CREATE TABLE goals (team VARCHAR, minute INT)")
    con.executemany("INSERT INTO goals VALUES (?, ?)", rows)
    everyone = con.sql("SELECT team, COUNT(*) FROM goals GROUP BY team ORDER BY team").fetchall()
    late = con.sql("SELECT team, COUNT(*) FROM goals WHERE minute > 45 GROUP BY team ORDER BY team").fetchall()
    cells = _cells(done.stdout)
    expected = [["team", "n"], *[[t, str(n)] for t, n in everyone], ["s"], ["a;b"], ["team", "n"]]
    expected += [[t, str(n)] for t, n in late]
    assert cells == expected  # the statements after the error ran, in order
    assert done.stdout.endswith("└───────┴───┘\ngoals\nlate_goals\n")  # SHOW TABLES, last
    errors = [line for line in done.stderr.splitlines() if line.startswith("tidal:") and "created" not in line]
    assert len(errors) == 1 and "nope" in errors[0]  # one line, naming the column
    assert "Traceback" not in done.stderr


def test_the_shell_subcommand_reads_a_script_on_stdin_and_stops_at_quit(tmp_path):
    done = _shell(tmp_path, "SELECT 41 + 1 AS answer;\n.quit\nSELECT 'never' AS x;\n", "shell")
    assert done.returncode == 0, done.stderr
    assert _cells(done.stdout) == [["answer"], ["42"]]
    # an unterminated last statement still runs at the end of input
    done = _shell(tmp_path, "SELECT 7 AS x")
    assert _cells(done.stdout) == [["x"], ["7"]]


@pytest.mark.parametrize(
    ("text", "complete"),
    [
        ("SELECT 1", False),
        ("SELECT 1;", True),
        ("SELECT 'a;", False),  # inside a string
        ("SELECT 1 -- ;", False),  # inside a comment
        ("SELECT 1;\nSELECT 2", False),
        ("SELECT 1; SELECT 2;", True),
        (".quit", True),
        ("", True),
    ],
)
def test_a_statement_is_complete_at_its_semicolon(text, complete):
    assert complete_statement(text) is complete


def test_the_line_editor_continues_lines_keeps_history_and_completes_names(tmp_path):
    pytest.importorskip("prompt_toolkit")
    from prompt_toolkit.document import Document
    from prompt_toolkit.input import create_pipe_input
    from prompt_toolkit.output import DummyOutput

    from tidal.cli.shell import prompt_session
    from tidal.sql.ddl import split

    session = Session()
    for stmt in split("CREATE VIEW spend_per_ad AS SELECT 1 AS x;"):
        session.execute(stmt)
    history = tmp_path / "history"
    with create_pipe_input() as keys:
        editor = prompt_session(session, str(history), input=keys, output=DummyOutput())
        keys.send_text("SELECT x\rFROM spend_per_ad;\r")  # Enter before the ';' starts a new line
        assert editor.prompt("tidal> ") == "SELECT x\nFROM spend_per_ad;"
    assert "FROM spend_per_ad;" in history.read_text()  # kept for the next session
    completer = editor.completer
    found = [c.text for c in completer.get_completions(Document("SELECT * FROM spe"), None)]
    assert found == ["spend_per_ad"]
    assert "spend_per_ad" in words(session) and "tumble" in words(session)
