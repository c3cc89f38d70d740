"""Kill a durable query with SIGKILL at random instants and restart it, until it finishes on its own.

Reusable for any command that resumes from its own durable state (the Python API's
``run_durable`` in ``kafka_child.py``; ``tidal query --state`` once it exists): ``kill_loop``
starts ``command``, lets it live a random time, kills it with SIGKILL, and starts it again,
``kills`` times; then lets the last run end and returns what happened. Runs that end by
themselves before their kill are counted as finished and restarted only if the command is
expected to be still unfinished (its exit status is checked either way).

``env`` is added to every run's environment; ``env_for(i)`` may give run ``i`` (not the last)
extra environment variables, e.g. ``TIDAL_KILL_IN_SAVE=N`` for
the child to kill itself inside its N-th commit (after the output was committed, before the
checkpoint reached the store: the moment where output must roll back); such a run is not killed
by the loop but left to end (or kill itself).

``ready`` (a path the run creates, or a function that says whether the run is under way) makes the
random lifetime count from when the run is under way rather than from its start.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field


@dataclass
class KillReport:
    kills: int = 0  # runs we killed with SIGKILL
    self_kills: int = 0  # runs that killed themselves inside a commit (exit -9 without our signal)
    finished_early: int = 0  # runs that completed before their kill came
    lifetimes: list[float] = field(default_factory=list)


def kill_loop(
    command: list[str],
    kills: int = 20,
    seed: int = 0,
    live: tuple[float, float] = (0.3, 1.5),
    env_for=None,
    env: dict | None = None,
    timeout: float = 120.0,
    cwd: str | None = None,
    log=None,
    ready=None,
    on_start=None,
) -> KillReport:
    rng = random.Random(seed)
    report = KillReport()
    run = 0
    while report.kills + report.self_kills < kills:
        extra = env_for(run) if env_for else {}
        run_env = {**os.environ, **(env or {}), **extra}
        if isinstance(ready, str) and os.path.exists(ready):
            os.remove(ready)
        elif hasattr(ready, "reset"):
            ready.reset()
        proc = subprocess.Popen(command, env=run_env, cwd=cwd, stdout=log, stderr=log)
        if on_start is not None:
            on_start(run, False)
        started = time.monotonic()
        under_way = (lambda: os.path.exists(ready)) if isinstance(ready, str) else ready
        if under_way is not None:  # the random instant counts from when the run is under way
            while not under_way() and proc.poll() is None and time.monotonic() - started < timeout:
                time.sleep(0.01)
        wait = rng.uniform(*live) if not extra else timeout  # a run given extra variables is left to its own end
        try:
            code = proc.wait(wait)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            report.kills += 1
            report.lifetimes.append(time.monotonic() - started)
        else:
            report.lifetimes.append(time.monotonic() - started)
            if code == -signal.SIGKILL:
                report.self_kills += 1
            elif code == 0:
                report.finished_early += 1
                return report
            else:
                raise RuntimeError(f"{command} exited with {code} (run {run})")
        run += 1
    proc = subprocess.Popen(command, env={**os.environ, **(env or {})}, cwd=cwd, stdout=log, stderr=log)
    if on_start is not None:
        on_start(run, True)
    code = proc.wait(timeout)
    if code != 0:
        raise RuntimeError(f"the last run of {command} exited with {code}")
    return report


def paced_producer(
    broker, topic: str, n: int, chunk: int, pause: float = 0.02
) -> tuple[threading.Thread, threading.Semaphore]:
    """Writes ``n`` rows ``{t, k, v}`` to each of the two partitions of ``topic``, ``chunk`` rows per
    partition each time the semaphore is released (once per restart), 10 rows each ``pause`` seconds
    while the query runs. Times rise within a partition and never tie across them (partition p:
    ``10 i + 3 p + 0..2``)."""
    rng = random.Random(5)
    events = [[{"t": i * 10 + 3 * p + rng.randint(0, 2), "k": rng.randint(0, 15), "v": rng.randint(-50, 50)}
               for i in range(n)] for p in (0, 1)]  # fmt: skip
    go = threading.Semaphore(0)

    def write():
        prod = broker.producer()
        for i in range(0, n, chunk):
            go.acquire()
            for j in range(i, min(i + chunk, n), 10):  # spread over a moment, while the query runs
                for p in (0, 1):
                    for e in events[p][j : j + 10]:
                        prod.produce(topic, value=json.dumps(e).encode(), partition=p)
                prod.poll(0)
                time.sleep(pause)
        assert prod.flush(30) == 0

    thread = threading.Thread(target=write, daemon=True)
    thread.start()
    return thread, go


class Committed:
    """A ``ready`` for commands with a SQLite ``--state`` file: true once the state (or its WAL file) was
    written since the run started, i.e. once the run has restored and committed."""

    def __init__(self, state: str):
        self.paths = (state, f"{state}-wal")
        self.before = self._stamp()

    def _stamp(self) -> tuple:
        return tuple(os.stat(p).st_mtime_ns if os.path.exists(p) else 0 for p in self.paths)

    def reset(self) -> None:  # called by kill_loop before each run starts
        self.before = self._stamp()

    def __call__(self) -> bool:
        return self._stamp() != self.before
