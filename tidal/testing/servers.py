"""Throwaway PostgreSQL and Redis servers on loopback, for tests and benchmarks.

Both come from Debian's packages (``scripts/services.sh`` installs them). :class:`PostgresServer`
runs ``initdb`` into a fresh temporary directory (as the ``postgres`` user when run as root:
initdb refuses root) and then ``postgres`` itself on 127.0.0.1 and a free port, logging every
statement (``log`` in its directory); :class:`RedisServer` runs ``redis-server`` on a free port,
saving nothing. ``stop()`` ends each and removes its directory. Where a server or its client library
is not installed, the constructor raises :class:`Unavailable` saying what to install.

Both servers are direct children (not daemons started by ``pg_ctl``) and ask the kernel for a
signal when the process that started them dies: a test run killed with ``kill -9`` leaves no server
behind.
"""

from __future__ import annotations

import ctypes
import glob
import importlib.util
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time


class Unavailable(Exception):
    """A server (or its Python client) is not installed here."""


def _need(module: str, message: str) -> None:
    if importlib.util.find_spec(module) is None:
        raise Unavailable(message)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


_PR_SET_PDEATHSIG = 1


def _dies_with_parent(sig: int, user: pwd.struct_passwd | None = None):
    """A ``preexec_fn``: optionally become ``user``, then get ``sig`` when the parent dies.

    The death signal is set after the user change because the kernel clears it on a change of
    credentials.
    """

    def setup() -> None:
        if user is not None:
            os.setgroups([])
            os.setgid(user.pw_gid)
            os.setuid(user.pw_uid)
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0)

    return setup


def _wait_until(ready, proc: subprocess.Popen, what: str, stop) -> None:
    deadline = time.monotonic() + 60
    while True:
        try:
            if ready():
                return
        except Exception:
            pass
        if time.monotonic() > deadline or proc.poll() is not None:
            stop()
            raise RuntimeError(f"{what} did not start")
        time.sleep(0.05)


INSTALL_HINT = "run scripts/services.sh as root (apt-get install postgresql redis-server)"


def _pg_bin() -> str | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    if found:
        return os.path.dirname(found[-1])
    initdb = shutil.which("initdb")
    return os.path.dirname(initdb) if initdb else None


class PostgresServer:
    """initdb into a temporary directory, postgres on 127.0.0.1; root runs both as user postgres."""

    def __init__(self):
        bindir = _pg_bin()
        if bindir is None:
            raise Unavailable(f"PostgreSQL is not installed: {INSTALL_HINT}")
        _need("psycopg", "psycopg is not installed: pip install 'tidal[postgres]'")
        self.bindir = bindir
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="tidal-pg-")
        self.user: pwd.struct_passwd | None = None
        if os.geteuid() == 0:  # initdb refuses root: the server runs as the package's postgres user
            try:
                self.user = pwd.getpwnam("postgres")
            except KeyError:
                raise Unavailable(f"root, and no postgres user to run PostgreSQL as: {INSTALL_HINT}") from None
            os.chown(self.dir, self.user.pw_uid, self.user.pw_gid)
        self.data = os.path.join(self.dir, "data")
        self._run("initdb", "-D", self.data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-locale")
        self.dsn = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"
        # every statement is logged: tests read what tidal sent to the server
        cmd = [os.path.join(bindir, "postgres"), "-D", self.data, "-p", str(self.port), "-k", self.dir]
        cmd += ["-c", "listen_addresses=127.0.0.1", "-c", "log_statement=all", "-F"]
        with open(os.path.join(self.dir, "log"), "ab") as log:
            if self.user is not None:
                os.chown(log.name, self.user.pw_uid, self.user.pw_gid)
            # SIGQUIT is PostgreSQL's immediate shutdown; its backends follow the postmaster
            self.proc = subprocess.Popen(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                preexec_fn=_dies_with_parent(signal.SIGQUIT, self.user),
            )
        _wait_until(self._accepts, self.proc, "PostgreSQL", self.stop)

    def _accepts(self) -> bool:
        with self.connect() as con:
            return con.execute("SELECT 1").fetchone() == (1,)

    def _run(self, tool: str, *args: str) -> None:
        cmd = [os.path.join(self.bindir, tool), *args]
        done = subprocess.run(
            cmd, capture_output=True, text=True, timeout=120, preexec_fn=_dies_with_parent(signal.SIGKILL, self.user)
        )
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed:\n{done.stdout}\n{done.stderr}")

    def connect(self):
        import psycopg

        return psycopg.connect(self.dsn, autocommit=True)

    def stop(self) -> None:
        _end(self.proc, signal.SIGQUIT)
        shutil.rmtree(self.dir, ignore_errors=True)


class RedisServer:
    """redis-server on 127.0.0.1 and a free port, nothing saved to disk."""

    def __init__(self):
        binary = shutil.which("redis-server", path=os.environ.get("PATH", "") + ":/usr/bin:/usr/sbin")
        if binary is None:
            raise Unavailable(f"redis-server is not installed: {INSTALL_HINT}")
        _need("redis", "the redis client is not installed: pip install 'tidal[redis]'")
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="tidal-redis-")
        self.proc = subprocess.Popen(
            [
                binary,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                self.dir,
            ],  # fmt: skip
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=_dies_with_parent(signal.SIGKILL),  # it saves nothing: no shutdown needed
        )
        self.url = f"redis://127.0.0.1:{self.port}/0"
        _wait_until(lambda: self.client().ping(), self.proc, "redis-server", self.stop)

    def client(self):
        import redis

        return redis.Redis.from_url(self.url)

    def stop(self) -> None:
        _end(self.proc, signal.SIGTERM)
        shutil.rmtree(self.dir, ignore_errors=True)


def _end(proc: subprocess.Popen, sig: int) -> None:
    if proc.poll() is None:
        proc.send_signal(sig)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
