"""Separate virtual environments for peers whose pins clash with tidal's (PyFlink, Bytewax, TPC-H dbgen).

Each peer gets ``bench/.envs/<name>/`` (gitignored), created with the interpreter running the
suite and filled by pip from ``REQUIREMENTS``. A marker file records the requirement set, so an
environment is reused when it is complete and rebuilt when the requirements change or an earlier
install was interrupted. Setup time is recorded for the report.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

ENVS = Path(__file__).resolve().parent.parent / ".envs"

# What each driver needs; pip resolves the peer's own pins (PyFlink caps numpy/pyarrow) inside its env.
REQUIREMENTS = {
    "bytewax": ["bytewax>=0.21", "pyarrow"],
    "pyflink": ["apache-flink>=1.19"],
    # TPC-H data: DuckDB's tpch extension ships on PyPI for DuckDB 1.5.5 (tidal's own env has DuckDB 2.0)
    "tpch": ["duckdb==1.5.5", "duckdb-extension-tpch==1.5.5"],
}


def python(name: str) -> Path:
    return ENVS / name / "bin" / "python"


def _marker(name: str) -> Path:
    return ENVS / name / "tidal-bench-ready.json"


def ready(name: str) -> bool:
    """True when the environment exists and was completed for the current requirements."""
    marker = _marker(name)
    if not marker.exists() or not python(name).exists():
        return False
    return json.loads(marker.read_text()).get("requirements") == REQUIREMENTS[name]


def ensure(name: str, timeout: float = 1800.0, log=None) -> dict:
    """Create (or reuse) the environment; returns {"ready", "seconds", "reused", "error"}.

    pip's output goes to ``log`` (default ``bench/.envs/<name>-setup.log``).
    """
    if ready(name):
        return {"ready": True, "seconds": 0.0, "reused": True, "error": None}
    if log is None:
        ENVS.mkdir(parents=True, exist_ok=True)
        with open(ENVS / f"{name}-setup.log", "a") as fh:
            return ensure(name, timeout, fh)
    started = time.perf_counter()
    env = ENVS / name
    steps = [
        [sys.executable, "-m", "venv", "--clear", str(env)],
        [str(python(name)), "-m", "pip", "install", "-q", *REQUIREMENTS[name]],
    ]
    for cmd in steps:
        remaining = timeout - (time.perf_counter() - started)
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=max(remaining, 1.0))
        except subprocess.TimeoutExpired:
            return {"ready": False, "seconds": time.perf_counter() - started, "reused": False, "error": "timed out"}
        if log is not None:
            log.write(f"$ {' '.join(cmd)}\n{done.stdout}{done.stderr}\n")
        if done.returncode != 0:
            tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
            return {
                "ready": False,
                "seconds": time.perf_counter() - started,
                "reused": False,
                "error": f"`{' '.join(cmd[-3:])}` failed: {' '.join(tail)}",
            }
    seconds = time.perf_counter() - started
    _marker(name).write_text(json.dumps({"requirements": REQUIREMENTS[name], "setup_s": seconds}))
    return {"ready": True, "seconds": seconds, "reused": False, "error": None}


if __name__ == "__main__":
    for peer in sys.argv[1:] or list(REQUIREMENTS):
        print(peer, ensure(peer, log=sys.stdout), flush=True)
