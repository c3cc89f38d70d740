"""Throwaway PostgreSQL and Redis servers on loopback, for tests and benchmarks.

Both come from Debian's packages (``scripts/services.sh`` installs them). :class:`PostgresServer`
runs ``initdb`` into a fresh temporary directory (as the ``postgres`` user when run as root:
initdb refuses root) and ``pg_ctl start`` on 127.0.0.1 and a free port, logging every statement
(``log`` in its directory); :class:`RedisServer` runs ``redis-server`` on a free port, saving
nothing. ``stop()`` ends each and removes its directory. Where a server or its client library is
not installed, the constructor raises :class:`Unavailable` saying what to install.
"""

from __future__ import annotations

import glob
import importlib.util
import os
import pwd
import shutil
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


INSTALL_HINT = "run scripts/services.sh as root (apt-get install postgresql redis-server)"


def _pg_bin() -> str | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    if found:
        return os.path.dirname(found[-1])
    initdb = shutil.which("initdb")
    return os.path.dirname(initdb) if initdb else None


class PostgresServer:
    """initdb into a temporary directory, pg_ctl start on 127.0.0.1; root runs it as user postgres."""

    def __init__(self):
        bindir = _pg_bin()
        if bindir is None:
            raise Unavailable(f"PostgreSQL is not installed: {INSTALL_HINT}")
        _need("psycopg", "psycopg is not installed: pip install 'tidal[postgres]'")
        self.bindir = bindir
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="tidal-pg-")
        self.run_as: list[str] = []
        if os.geteuid() == 0:  # initdb refuses root: the server runs as the package's postgres user
            try:
                user = pwd.getpwnam("postgres")
            except KeyError:
                raise Unavailable(f"root, and no postgres user to run PostgreSQL as: {INSTALL_HINT}") from None
            os.chown(self.dir, user.pw_uid, user.pw_gid)
            self.run_as = ["runuser", "-u", "postgres", "--"]
        self.data = os.path.join(self.dir, "data")
        self._run("initdb", "-D", self.data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-locale")
        # every statement is logged: tests read what tidal sent to the server
        opts = f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 -c log_statement=all -F"
        self._run("pg_ctl", "start", "-D", self.data, "-w", "-t", "60", "-l", os.path.join(self.dir, "log"), "-o", opts)
        self.dsn = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, tool: str, *args: str) -> None:
        cmd = [*self.run_as, os.path.join(self.bindir, tool), *args]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed:\n{done.stdout}\n{done.stderr}")

    def connect(self):
        import psycopg

        return psycopg.connect(self.dsn, autocommit=True)

    def stop(self) -> None:
        try:
            self._run("pg_ctl", "stop", "-D", self.data, "-m", "immediate", "-w")
        finally:
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
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self.url = f"redis://127.0.0.1:{self.port}/0"
        deadline = time.monotonic() + 30
        while True:
            try:
                if self.client().ping():
                    break
            except Exception:
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    self.stop()
                    raise RuntimeError("redis-server did not start") from None
                time.sleep(0.05)

    def client(self):
        import redis

        return redis.Redis.from_url(self.url)

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        shutil.rmtree(self.dir, ignore_errors=True)
