"""Start-up stays light (issue 19): ``tidal --help`` and ``import tidal`` load no numba, pandas or Spark,
and ``tidal query`` over a Parquet file loads no pandas. Each check runs in a fresh interpreter and
reads its ``sys.modules``, so an eager import anywhere on the path makes it fail."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("numba", "llvmlite", "pandas", "pyspark", "polars", "duckdb")

REPORT = f"""
import json, sys
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in {HEAVY!r})))
"""


def _loaded(code: str, cwd: Path = ROOT) -> list[str]:
    """The heavy modules a fresh interpreter has loaded after running ``code`` (tidal from this checkout)."""
    env_path = str(ROOT)
    out = subprocess.run(
        [sys.executable, "-c", f"import sys; sys.path.insert(0, {env_path!r})\n{code}\n{REPORT}"],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_help_imports_no_numba_pandas_or_spark():
    code = """
from tidal.cli.main import main
import tidal.cli.main; tidal.cli.main._OWN_PROCESS = True  # as the `tidal` command's entry
try:
    main(["--help"])
except SystemExit as exc:
    assert exc.code == 0, exc.code
"""
    assert _loaded(code) == []


def test_import_tidal_is_light_and_its_names_still_resolve():
    assert _loaded("import tidal") == []
    loaded = _loaded(
        """
import tidal
assert "from_arrow" in dir(tidal) and "Stream" in tidal.__all__
assert tidal.from_arrow.__module__ == "tidal.stream.sources"
assert tidal.agg.count().kind == "count"
try:
    tidal.no_such_name
except AttributeError as exc:
    assert "no_such_name" in str(exc)
else:
    raise AssertionError("an unknown name must raise AttributeError")
"""
    )
    assert "numba" in loaded  # using the engine loads its kernels: the names are real, not stubs


def test_query_on_parquet_does_not_import_pandas(tmp_path):
    pq.write_table(pa.table({"k": [1.0, None, 1.0, 2.0], "v": [1.0, 2.0, 3.0, 4.0]}), tmp_path / "t.parquet")
    code = """
import contextlib, io
from tidal.cli.main import main
import tidal.cli.main; tidal.cli.main._OWN_PROCESS = True  # as the `tidal` command's entry
out = io.StringIO()
with contextlib.redirect_stdout(out):
    assert main(["query", "SELECT k, COUNT(*) AS n, AVG(v) AS a FROM 't.parquet' GROUP BY k ORDER BY k",
                 "--format", "batch-json"]) == 0
rows = [json.loads(line) for line in out.getvalue().splitlines()]
assert rows == [{"k": 1.0, "n": 2, "a": 2.0}, {"k": 2.0, "n": 1, "a": 4.0}, {"k": None, "n": 1, "a": 2.0}], rows
import pandas  # still importable afterwards
"""
    loaded = _loaded("import json\n" + code, cwd=tmp_path)
    assert "pyspark" not in loaded and "polars" not in loaded
    assert loaded.count("pandas") == 1  # only the explicit import at the end


def test_query_on_parquet_loads_no_pandas_before_asked(tmp_path):
    pq.write_table(pa.table({"k": [1, 2, 2], "v": [1.5, 2.5, 3.5]}), tmp_path / "t.parquet")
    code = """
import contextlib, io
from tidal.cli.main import main
import tidal.cli.main; tidal.cli.main._OWN_PROCESS = True  # as the `tidal` command's entry
with contextlib.redirect_stdout(io.StringIO()):
    assert main(["query", "SELECT k, SUM(v) FROM 't.parquet' GROUP BY k", "--format", "batch-csv"]) == 0
"""
    assert "pandas" not in _loaded(code, cwd=tmp_path)


def test_relational_query_on_parquet_imports_no_numba(tmp_path):
    """A GROUP BY over a Parquet file without temporal operators runs on the relational path
    (tidal/sql/relational.py): no numba or llvmlite load, and the answer is still right."""
    pq.write_table(pa.table({"k": [1.0, None, -0.0, 0.0, 2.0], "v": [1.0, 2.0, 3.0, 4.0, 5.0]}), tmp_path / "t.parquet")
    code = """
import contextlib, io, json
from tidal.cli.main import main
import tidal.cli.main; tidal.cli.main._OWN_PROCESS = True  # as the `tidal` command's entry
out = io.StringIO()
with contextlib.redirect_stdout(out):
    assert main(["query", "SELECT k, COUNT(*) AS n, AVG(v) AS a FROM 't.parquet' WHERE v > 1 GROUP BY k",
                 "--format", "batch-json"]) == 0
rows = [json.loads(line) for line in out.getvalue().splitlines()]
assert rows == [{"k": None, "n": 1, "a": 2.0}, {"k": -0.0, "n": 2, "a": 3.5}, {"k": 2.0, "n": 1, "a": 5.0}], rows
"""
    loaded = _loaded(code, cwd=tmp_path)
    assert not any(m.split(".")[0] in ("numba", "llvmlite") for m in loaded), loaded
    # the same query with a MEDIAN runs on the stream engine, which loads numba: the check can fail
    engine = code.replace("AVG(v) AS a", "MEDIAN(v) AS a")
    engine = engine.replace("assert rows ==", "assert len(rows) == 3 or")
    assert "numba" in _loaded(engine, cwd=tmp_path)


def test_a_grouped_parquet_query_loads_no_numpy_ma_and_collects_garbage_after_planning(tmp_path):
    """``pyarrow.array(ndarray)`` imports numpy.ma (5% of the start-up): the relational path makes its
    arrays with tidal.core.arrow instead; ``tidal query`` pauses the garbage collector until planned."""
    pq.write_table(pa.table({"k": [1.0, None, 1.0, -0.0], "v": [1.0, 2.0, 3.0, 4.0]}), tmp_path / "t.parquet")
    code = """
import contextlib, gc, io, json, sys
from tidal.cli import main as cli, startup
cli._OWN_PROCESS = True  # as the `tidal` command's entry
out = io.StringIO()
startup.pause()
assert not gc.isenabled()
with contextlib.redirect_stdout(out):
    assert cli.main(["query", "SELECT k, COUNT(*) AS n, AVG(v) AS a FROM 't.parquet' GROUP BY k",
                     "--format", "batch-json"]) == 0
assert gc.isenabled()  # collecting again once the query was planned
rows = [json.loads(line) for line in out.getvalue().splitlines()]
assert rows == [{"k": 1.0, "n": 2, "a": 2.0}, {"k": None, "n": 1, "a": 2.0}, {"k": -0.0, "n": 1, "a": 4.0}], rows
assert "numpy.ma" not in sys.modules
"""
    assert _loaded(code, tmp_path) == []


def test_a_parquet_query_reads_without_importing_pyarrow_parquet(tmp_path):
    """``pyarrow.parquet``'s Python layer (filesystems, OpenSSL) is not imported to plan and read a local
    Parquet file (tidal.io.parquet_read uses the reader class it wraps); the answer is still right, and
    ``--format parquet`` (which writes one) still imports it: the check can fail."""
    pq.write_table(pa.table({"k": [1.0, None, 1.0], "v": [1.0, 2.0, 4.0]}), tmp_path / "t.parquet")
    code = """
import contextlib, io, json, sys
from tidal.cli.main import main
import tidal.cli.main; tidal.cli.main._OWN_PROCESS = True  # as the `tidal` command's entry
out = io.StringIO()
with contextlib.redirect_stdout(out):
    assert main(["query", "SELECT k, AVG(v) AS a FROM 't.parquet' GROUP BY k", "--format", "batch-json"]) == 0
rows = [json.loads(line) for line in out.getvalue().splitlines()]
assert rows == [{"k": 1.0, "a": 2.5}, {"k": None, "a": 2.0}], rows
print(json.dumps(sorted(m for m in sys.modules if m in ("pyarrow.parquet", "pyarrow.fs"))))
"""
    out = subprocess.run([sys.executable, "-c", f"import sys; sys.path.insert(0, {str(ROOT)!r})\n{code}"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []
    written = code.replace('"--format", "batch-json"]', '"--format", "parquet", "--output", "o.parquet"]')
    written = written.replace("assert rows ==", "assert not rows or")
    out = subprocess.run([sys.executable, "-c", f"import sys; sys.path.insert(0, {str(ROOT)!r})\n{written}"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "pyarrow.parquet" in json.loads(out.stdout.strip().splitlines()[-1])


def test_query_on_parquet_does_not_load_openssl_or_pyarrow_parquet(tmp_path):
    """hashlib (OpenSSL: md5() imports it when used) and pyarrow.parquet's Python layer (filesystems,
    OpenSSL through pyarrow.fs) cost a command-line query milliseconds it does not use."""
    pq.write_table(pa.table({"k": [1.0, None, 1.0], "v": [1.0, 2.0, 3.0]}), tmp_path / "t.parquet")
    code = """
import contextlib, io, json, sys
from tidal.cli.main import main
import tidal.cli.main; tidal.cli.main._OWN_PROCESS = True  # as the `tidal` command's entry
with contextlib.redirect_stdout(io.StringIO()):
    sql = "SELECT k, COUNT(*) AS n, AVG(v) AS a FROM 't.parquet' GROUP BY k"
    assert main(["query", sql, "--format", "batch-csv"]) == 0
unused = ("hashlib", "_hashlib", "ssl", "pyarrow.parquet", "pyarrow.fs")
print(json.dumps(sorted(m for m in unused if m in sys.modules)))
"""
    out = subprocess.run(
        [sys.executable, "-c", f"import sys; sys.path.insert(0, {str(ROOT)!r})\n{code}"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []


def _entry_env(tmp_path: Path, env: dict) -> dict:
    """``OPENBLAS_NUM_THREADS`` and numpy's presence as the `tidal` command's ``entry()`` leaves them after a
    query (printed by an atexit handler: entry runs those, then ends with os._exit)."""
    pq.write_table(pa.table({"k": [1.0, None, 1.0], "v": [1.0, 2.0, 3.0]}), tmp_path / "t.parquet")
    code = f"""
import atexit, json, os, sys
sys.path.insert(0, {str(ROOT)!r})
atexit.register(lambda: print(json.dumps({{"blas": os.environ.get("OPENBLAS_NUM_THREADS"),
                                          "numpy": "numpy" in sys.modules}})))
sys.argv = ["tidal", "query", "SELECT k, AVG(v) FROM 't.parquet' GROUP BY k", "--format", "batch-csv"]
from tidal.cli.main import entry
entry()
"""
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                         env=env)  # fmt: skip
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_the_command_asks_openblas_for_one_thread_unless_the_user_chose(tmp_path):
    """numpy's OpenBLAS starts a spinning thread pool when it loads (60 ms of CPU per query on 2 cores);
    tidal never calls BLAS, so the command asks for one thread before numpy loads; a user's value is kept."""
    import os

    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    assert _entry_env(tmp_path, env) == {"blas": "1", "numpy": True}
    assert _entry_env(tmp_path, dict(env, OPENBLAS_NUM_THREADS="3")) == {"blas": "3", "numpy": True}


def test_a_small_csv_answer_is_written_without_pyarrow_csv(tmp_path):
    """``--format batch-csv`` of a small answer of numbers and strings is written by tidal.sql.output.csv_text
    (pyarrow.csv's import and first write cost ~1.5 ms); an answer with a timestamp still goes through
    pyarrow's writer, which imports it: the check can fail."""
    pq.write_table(pa.table({"k": [1.0, None, 1.0], "s": ["a", "b", "a"], "v": [1, 2, 3]}), tmp_path / "t.parquet")
    code = """
import contextlib, io, json, sys
from tidal.cli.main import main
import tidal.cli.main; tidal.cli.main._OWN_PROCESS = True  # as the `tidal` command's entry
out = io.StringIO()
with contextlib.redirect_stdout(out):
    assert main(["query", SQL, "--format", "batch-csv"]) == 0
print(json.dumps([out.getvalue(), "pyarrow.csv" in sys.modules]))
"""

    def run(sql: str) -> list:
        text = code.replace("SQL", repr(sql))
        done = subprocess.run([sys.executable, "-c", f"import sys; sys.path.insert(0, {str(ROOT)!r})\n{text}"],
                              cwd=tmp_path, capture_output=True, text=True, timeout=120)  # fmt: skip
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout.strip().splitlines()[-1])

    sql = "SELECT k, s, COUNT(*) AS n, AVG(v) AS a FROM 't.parquet' GROUP BY k, s ORDER BY k, s"
    assert run(sql) == ['"k","s","n","a"\n1,"a",2,2\n,"b",1,2\n', False]
    stamped = run("SELECT TIMESTAMP '2024-01-02 03:04:05' AS t, COUNT(*) AS n FROM 't.parquet'")
    assert stamped == ['"t","n"\n2024-01-02 03:04:05,3\n', True]


def test_a_parquet_query_loads_no_dateutil_and_pyarrow_still_converts_relativedelta(tmp_path):
    """pyarrow looks for dateutil (calendar, locale: ~2.5 ms) with pandas the first time it converts Python
    values; ``tidal query`` refuses both while it looks. dateutil is then not loaded by a query that converts
    no Python values, and pyarrow still converts a relativedelta afterwards (it looks again then)."""
    pq.write_table(pa.table({"k": [1.0, None, 1.0], "v": [1.0, 2.0, 3.0]}), tmp_path / "t.parquet")
    code = """
import contextlib, io, json, sys
from tidal.cli.main import main
import tidal.cli.main; tidal.cli.main._OWN_PROCESS = True  # as the `tidal` command's entry
with contextlib.redirect_stdout(io.StringIO()):
    assert main(["query", "SELECT k, COUNT(*), AVG(v) FROM 't.parquet' GROUP BY k", "--format", "batch-csv"]) == 0
loaded = "dateutil" in sys.modules
import pyarrow as pa
from dateutil.relativedelta import relativedelta
converted = pa.array([relativedelta(months=2, days=1), None])
print(json.dumps([loaded, str(converted.type), converted.to_pylist()[1], converted[0].value.months]))
"""
    out = subprocess.run([sys.executable, "-c", f"import sys; sys.path.insert(0, {str(ROOT)!r})\n{code}"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.strip().splitlines()[-1]) == [False, "month_day_nano_interval", None, 2]
