"""Real servers on loopback for the connector tests: a throwaway PostgreSQL and a redis-server.

Both come from Debian's packages (``scripts/services.sh`` installs them; ``scripts/test.sh`` calls
it). Each fixture starts its server in a fresh temporary directory on a free port and stops it after
the session. Where a server's package is not installed the tests that need it skip, naming why.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time

import pytest

INSTALL_HINT = "run scripts/services.sh as root (apt-get install postgresql redis-server)"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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
            pytest.skip(f"PostgreSQL is not installed: {INSTALL_HINT}")
        pytest.importorskip("psycopg", reason="psycopg is not installed: pip install -e '.[test]'")
        self.bindir = bindir
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="tidal-pg-")
        self.run_as: list[str] = []
        if os.geteuid() == 0:  # initdb refuses root: the server runs as the package's postgres user
            try:
                user = pwd.getpwnam("postgres")
            except KeyError:
                pytest.skip(f"running as root and there is no postgres user to run PostgreSQL as: {INSTALL_HINT}")
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
            pytest.skip(f"redis-server is not installed: {INSTALL_HINT}")
        pytest.importorskip("redis", reason="the redis client is not installed: pip install -e '.[test]'")
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


@pytest.fixture(scope="session")
def postgres_server():
    server = PostgresServer()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def redis_server():
    server = RedisServer()
    yield server
    server.stop()


_databases = iter(range(1, 1 << 30))


@pytest.fixture
def pg_dsn(postgres_server):
    """A fresh database on the session's server, for one test: its DSN (dropped afterwards)."""
    name = f"t{next(_databases)}"
    with postgres_server.connect() as conn:
        conn.execute(f"CREATE DATABASE {name}")
    yield postgres_server.dsn.rsplit("/", 1)[0] + "/" + name
    with postgres_server.connect() as conn:
        conn.execute(f"DROP DATABASE {name} WITH (FORCE)")


@pytest.fixture
def pg(pg_dsn):
    """A connection (autocommit) to the test's own database."""
    import psycopg

    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        yield conn
