"""Real servers on loopback for the connector tests: a throwaway PostgreSQL and a redis-server.

Both come from Debian's packages (``scripts/services.sh`` installs them; ``scripts/test.sh`` calls
it) and are started by :mod:`tidal.testing.servers`, each in a fresh temporary directory on a free
port, and stopped after the session. Where a server's package is not installed the tests that
need it skip, naming why.
"""

from __future__ import annotations

import pytest

from tidal.testing.servers import PostgresServer, RedisServer, Unavailable, free_port

__all__ = ["free_port"]


def _start(kind):
    try:
        return kind()
    except Unavailable as exc:
        pytest.skip(str(exc))


@pytest.fixture(scope="session")
def postgres_server():
    server = _start(PostgresServer)
    yield server
    server.stop()


@pytest.fixture(scope="session")
def redis_server():
    server = _start(RedisServer)
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
