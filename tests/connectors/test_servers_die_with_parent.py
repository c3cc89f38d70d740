"""The throwaway servers end when the process that started them is killed (no server left behind)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from tidal.testing.servers import PostgresServer, RedisServer, Unavailable

STARTER = """
import sys, time
from tidal.testing import servers
server = getattr(servers, sys.argv[1])()
print(server.proc.pid, flush=True)
time.sleep(600)
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie whose parent has not reaped it yet is gone for our purpose
    with open(f"/proc/{pid}/stat") as f:
        return f.read().split(") ", 1)[1][0] != "Z"


@pytest.mark.parametrize("kind", [PostgresServer, RedisServer], ids=lambda k: k.__name__)
def test_a_server_ends_when_its_starter_is_killed(kind):
    try:  # skip where the server is not installed, as the connector fixtures do
        kind().stop()
    except Unavailable as exc:
        pytest.skip(str(exc))
    starter = subprocess.Popen([sys.executable, "-c", STARTER, kind.__name__], stdout=subprocess.PIPE, text=True)
    with starter:
        pid = int(starter.stdout.readline())
        assert _alive(pid)
        starter.kill()  # SIGKILL: the starter runs no clean-up of its own
        starter.wait()
        deadline = time.monotonic() + 30
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _alive(pid), f"{kind.__name__} (pid {pid}) outlived the process that started it"
