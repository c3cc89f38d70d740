"""The servers the connector tests use start from the project's own files (scripts/services.sh)."""

import os
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_services_script_is_quiet_and_idempotent_once_installed(postgres_server, redis_server):
    done = subprocess.run(["bash", os.path.join(ROOT, "scripts", "services.sh")], capture_output=True, text=True)
    assert done.returncode == 0
    assert done.stdout == "" and done.stderr == ""


def test_a_throwaway_postgres_answers(pg):
    assert pg.execute("SELECT 1 + 1").fetchone() == (2,)
    assert pg.execute("SHOW listen_addresses").fetchone() == ("127.0.0.1",)


def test_a_throwaway_redis_answers(redis_server):
    r = redis_server.client()
    r.set("k", "v")
    assert r.get("k") == b"v"
