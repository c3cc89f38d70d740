"""Durable checkpoints: a query's state kept in an embedded SQLite database.

A checkpoint (see :meth:`tidal.stream.query.Query.checkpoint`) is every operator's state as
Arrow tables, numpy arrays and plain values, plus how far each source and each durable sink
has got. :class:`CheckpointStore` writes each one in a single SQLite transaction (WAL
journal, synchronous commits), so after a crash the newest checkpoint is either wholly there
or not there at all, never half written. It keeps the newest ``keep`` checkpoints per query.

Each checkpoint carries the fingerprint of the plan that made it; loading it for another plan
is an error rather than a silently wrong answer.

The state is serialised with pickle (protocol 5, which keeps numpy and Arrow buffers
intact). Like any pickle, a checkpoint file must come from a source you trust: it is tidal's
own working state, not an exchange format.
"""

from __future__ import annotations

import contextlib
import pickle
import sqlite3
import time
from pathlib import Path

from ..core.errors import ResourceError, StateError

_SCHEMA = """
CREATE TABLE IF NOT EXISTS checkpoints (
    query TEXT NOT NULL,
    seq INTEGER NOT NULL,
    fingerprint TEXT NOT NULL,
    saved_at REAL NOT NULL,
    state BLOB NOT NULL,
    PRIMARY KEY (query, seq)
)
"""


class CheckpointStore:
    """Checkpoints of named queries in the SQLite file at ``path`` (created if missing)."""

    def __init__(self, path: str | Path, keep: int = 2):
        if keep < 1:
            raise ValueError("keep must be at least 1")
        self.path = Path(path)
        self.keep = keep
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, isolation_level=None)  # transactions are explicit below
        with self._reporting("opening"):
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")  # a commit that returned survives power loss
            self._db.execute(_SCHEMA)
            columns = {row[1] for row in self._db.execute("PRAGMA table_info(checkpoints)")}
            if columns != {"query", "seq", "fingerprint", "saved_at", "state"}:
                raise sqlite3.DatabaseError("its checkpoints table is not tidal's")

    @contextlib.contextmanager
    def _reporting(self, doing: str):
        """SQLite's errors in the user's terms: a full disk, a damaged or foreign file."""
        try:
            yield
        except sqlite3.Error as exc:
            text = str(exc)
            if "full" in text:
                raise ResourceError(
                    f"{self.path}: no space left to save the checkpoint ({text}); the previous checkpoint is kept: "
                    "free some space and run again to continue from it"
                ) from exc
            raise StateError(
                f"{self.path}: not a tidal checkpoint file, or a damaged one ({text}) while {doing} it; delete it "
                "(and the run's output directory) to start the run over"
            ) from exc

    def save(self, query: str, fingerprint: str, state: dict) -> int:
        """Store ``state`` as the newest checkpoint of ``query``; returns its sequence number."""
        blob = pickle.dumps(state, protocol=5)
        db = self._db
        with self._reporting("saving a checkpoint to"):
            db.execute("BEGIN IMMEDIATE")
            try:
                (last,) = db.execute(
                    "SELECT COALESCE(MAX(seq), 0) FROM checkpoints WHERE query = ?", (query,)
                ).fetchone()
                seq = last + 1
                db.execute(
                    "INSERT INTO checkpoints (query, seq, fingerprint, saved_at, state) VALUES (?, ?, ?, ?, ?)",
                    (query, seq, fingerprint, time.time(), blob),
                )
                db.execute("DELETE FROM checkpoints WHERE query = ? AND seq <= ?", (query, seq - self.keep))
                db.execute("COMMIT")
            except BaseException:
                if db.in_transaction:  # SQLite ends the transaction itself on some errors (a full disk)
                    db.execute("ROLLBACK")
                raise
        return seq

    def load(self, query: str, fingerprint: str | None = None) -> dict | None:
        """The newest checkpoint of ``query``, or None; with ``fingerprint``, refuse another plan's."""
        with self._reporting("loading a checkpoint from"):
            row = self._db.execute(
                "SELECT seq, fingerprint, state FROM checkpoints WHERE query = ? ORDER BY seq DESC LIMIT 1", (query,)
            ).fetchone()
        if row is None:
            return None
        seq, stored, blob = row
        if fingerprint is not None and stored != fingerprint:
            raise StateError(
                f"checkpoint {seq} of query {query!r} in {self.path} was made by a different plan "
                f"(fingerprint {stored}, this plan {fingerprint}); use another query name or delete the file"
            )
        try:
            state = pickle.loads(blob)
        except Exception as exc:
            raise StateError(
                f"{self.path}: checkpoint {seq} of query {query!r} is damaged ({type(exc).__name__}: {exc}); delete "
                "the file (and the run's output directory) to start the run over"
            ) from exc
        return state

    def sequence(self, query: str) -> int:
        """The newest checkpoint's sequence number of ``query`` (0 when there is none)."""
        (last,) = self._db.execute("SELECT COALESCE(MAX(seq), 0) FROM checkpoints WHERE query = ?", (query,)).fetchone()
        return last

    def clear(self, query: str) -> None:
        self._db.execute("DELETE FROM checkpoints WHERE query = ?", (query,))

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> CheckpointStore:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
