"""A durable SQL query writing to PostgreSQL, run in its own process by test_postgres_sink.py, which kills it.

    python pg_sink_child.py SQL URL STATE [--kill-at N --how after-commit|in-commit|after-checkpoint]

Run from the directory holding the query's files. ``--kill-at N`` sends SIGKILL to this process at
its N-th sink commit: inside the database transaction (``in-commit``: the transaction is lost),
right after the transaction committed but before the checkpoint is saved (``after-commit``: the
database is ahead of the checkpoint) or right after the checkpoint (``after-checkpoint``).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import signal

import psycopg

from tidal.io.postgres_sink import PostgresTable
from tidal.sql import plan, planner
from tidal.sql.postgres_output import PostgresOutput
from tidal.state.store import CheckpointStore
from tidal.stream.query import Query


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("sql")
    parser.add_argument("url")
    parser.add_argument("state")
    parser.add_argument("--kill-at", type=int)
    parser.add_argument("--how", default="after-commit")
    args = parser.parse_args()
    commits = [0]

    def kill() -> None:
        os.kill(os.getpid(), signal.SIGKILL)

    commit = PostgresTable.commit

    def counted_commit(self, seq):
        commits[0] += 1
        dying = commits[0] == args.kill_at
        if dying and args.how == "in-commit":
            executemany = psycopg.Cursor.executemany

            def die_after(cur, *a, **k):
                executemany(cur, *a, **k)
                kill()

            psycopg.Cursor.executemany = die_after
        commit(self, seq)
        if dying and args.how == "after-commit":
            kill()

    PostgresTable.commit = counted_commit
    planner.BATCH_ROWS = 16  # the file arrives in many small batches: many commits to be killed in
    q = plan(args.sql)
    stream = q.stream()
    sink = PostgresOutput(q, args.url)
    fingerprint = hashlib.sha256(stream.explain().encode()).hexdigest()[:16]

    def on_checkpoint(seq: int) -> None:
        if args.how == "after-checkpoint" and commits[0] == args.kill_at:
            kill()

    with CheckpointStore(args.state) as store:
        query = Query([stream.node], [sink])
        query.run_durably(store, "query", fingerprint, every_messages=5, on_checkpoint=on_checkpoint)
    sink.close()


if __name__ == "__main__":
    main()
