"""Durable checkpoints: a query's state kept in an embedded SQLite database, incrementally.

A checkpoint (see :meth:`tidal.stream.query.Query.checkpoint`) is every operator's state as
Arrow tables, numpy arrays and plain values, plus how far each source and each durable sink
has got. :class:`CheckpointStore` writes each one in a single SQLite transaction (WAL
journal, synchronous commits), so after a crash the newest checkpoint is either wholly there
or not there at all, never half written. It keeps the newest ``keep`` checkpoints per query.

Incremental: the state is cut into *chunks*, each named by its BLAKE2b hash: per top-level
entry of each operator's state a small pickled skeleton, and its Arrow tables and large numpy
arrays in blocks of rows (:mod:`.chunks`). A chunk already in the store (an entry that did not
change since an earlier checkpoint, the leading rows of a join's stored rows that only grew) is
not written again; the checkpoint itself is a small manifest of chunk names (with positions and
sinks). Chunks no kept checkpoint names are deleted in the same transaction.

Checksums: a chunk's name is the hash of its bytes and the manifest carries its own hash, so
loading recomputes both and refuses a checkpoint whose bytes changed (one flipped bit is an
error naming the query, the checkpoint and the chunk), as well as a database SQLite itself
finds damaged.

Each checkpoint carries the fingerprint of the plan that made it and a summary of that plan
(for a SQL query: its text, output format and stream plan); loading it for another plan is an
error that shows both, rather than a silently wrong answer.

Values are serialised with pickle (protocol 5, which keeps numpy and Arrow buffers intact).
Like any pickle, a checkpoint file must come from a source you trust: it is tidal's own
working state, not an exchange format.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import pickle
import sqlite3
import time
from pathlib import Path

from ..core.errors import ResourceError, StateError
from .chunks import decode, encode, names_in

_SCHEMA = [
    """CREATE TABLE IF NOT EXISTS checkpoints (
        query TEXT NOT NULL,
        seq INTEGER NOT NULL,
        fingerprint TEXT NOT NULL,
        saved_at REAL NOT NULL,
        plan TEXT NOT NULL DEFAULT '',
        manifest BLOB NOT NULL,
        digest BLOB NOT NULL,
        PRIMARY KEY (query, seq)
    )""",
    "CREATE TABLE IF NOT EXISTS chunks (hash BLOB PRIMARY KEY, data BLOB NOT NULL) WITHOUT ROWID",
    """CREATE TABLE IF NOT EXISTS refs (
        query TEXT NOT NULL, seq INTEGER NOT NULL, hash BLOB NOT NULL, PRIMARY KEY (query, seq, hash)
    ) WITHOUT ROWID""",
    "CREATE INDEX IF NOT EXISTS refs_by_hash ON refs (hash)",
]
_DIGEST = 20  # bytes of BLAKE2b per chunk name


def _hash(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=_DIGEST).digest()


def _commit_hook() -> None:
    """A test hook inside each commit (``TIDAL_TEST_COMMIT_HOOK``: ``sleep:SECONDS`` widens the window
    in which a kill lands inside a commit; ``kill:N`` kills the process inside its N-th commit)."""
    hook = os.environ.get("TIDAL_TEST_COMMIT_HOOK")
    if not hook:
        return
    what, _, arg = hook.partition(":")
    if what == "sleep":
        time.sleep(float(arg))
    elif what == "kill":
        _commit_hook.calls = getattr(_commit_hook, "calls", 0) + 1
        if _commit_hook.calls == int(arg):
            import signal

            os.kill(os.getpid(), signal.SIGKILL)


class CheckpointStore:
    """Checkpoints of named queries in the SQLite file at ``path`` (created if missing)."""

    def __init__(self, path: str | Path, keep: int = 2):
        if keep < 1:
            raise ValueError("keep must be at least 1")
        self.path = Path(path)
        self.keep = keep
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.written = 0  # bytes of chunks written by the last save (how incremental it was)
        self._db = sqlite3.connect(self.path, isolation_level=None)  # transactions are explicit below
        with self._reporting("opening"):
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")  # a commit that returned survives power loss
            self._db.execute("BEGIN")
            for statement in _SCHEMA:
                self._db.execute(statement)
            self._db.execute("COMMIT")
            columns = {row[1] for row in self._db.execute("PRAGMA table_info(checkpoints)")}
            if columns != {"query", "seq", "fingerprint", "saved_at", "plan", "manifest", "digest"}:
                raise sqlite3.DatabaseError("its checkpoints table is not tidal's")
        self._known: set[bytes] = set()  # chunks this process knows to be in the store

    # -- saving ------------------------------------------------------------------------------
    def _chunks(self, state: dict) -> tuple[dict, dict[bytes, bytes]]:
        """The manifest (the state with each operator entry replaced by its skeleton's chunk name) and
        the chunks (skeletons, and the blocks of their Arrow and large numpy values: :mod:`.chunks`)."""
        chunks: dict[bytes, bytes] = {}

        def put(data: bytes) -> bytes:
            name = _hash(data)
            chunks[name] = data
            return name

        def chunk(value) -> bytes:
            return put(pickle.dumps(encode(value, put), protocol=5))

        manifest = {k: v for k, v in state.items() if k != "operators"}
        if "operators" in state:
            manifest["operators"] = [
                {k: chunk(v) for k, v in op.items()} if isinstance(op, dict) else chunk(op) for op in state["operators"]
            ]
        return manifest, chunks

    def save(self, query: str, fingerprint: str, state: dict, plan: str = "") -> int:
        """Store ``state`` as the newest checkpoint of ``query``; returns its sequence number."""
        manifest, chunks = self._chunks(state)
        blob = pickle.dumps(manifest, protocol=5)
        db = self._db
        with self._reporting("saving a checkpoint to"):
            db.execute("BEGIN IMMEDIATE")
            try:
                (last,) = db.execute(
                    "SELECT COALESCE(MAX(seq), 0) FROM checkpoints WHERE query = ?", (query,)
                ).fetchone()
                seq = last + 1
                new = [(h, d) for h, d in chunks.items() if h not in self._known]
                db.executemany("INSERT OR IGNORE INTO chunks (hash, data) VALUES (?, ?)", new)
                self.written = sum(len(d) for _, d in new) + len(blob)
                db.executemany(
                    "INSERT INTO refs (query, seq, hash) VALUES (?, ?, ?)", [(query, seq, h) for h in chunks]
                )
                db.execute(
                    "INSERT INTO checkpoints (query, seq, fingerprint, saved_at, plan, manifest, digest) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (query, seq, fingerprint, time.time(), plan, blob, _hash(blob)),
                )
                _commit_hook()
                old = seq - self.keep
                if old >= 1:
                    db.execute("DELETE FROM checkpoints WHERE query = ? AND seq <= ?", (query, old))
                    db.execute("DELETE FROM refs WHERE query = ? AND seq <= ?", (query, old))
                    db.execute("DELETE FROM chunks WHERE NOT EXISTS (SELECT 1 FROM refs WHERE refs.hash = chunks.hash)")
                db.execute("COMMIT")
            except BaseException:
                self._rollback()
                raise
        if old >= 1:  # what the deletion kept is still known; what it removed is not
            self._known = {h for (h,) in db.execute("SELECT hash FROM refs WHERE query = ?", (query,))}
        self._known.update(chunks)
        return seq

    def _rollback(self) -> None:
        self._known.clear()
        if self._db.in_transaction:  # SQLite ends the transaction itself on some errors (a full disk)
            self._db.execute("ROLLBACK")

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

    # -- loading -----------------------------------------------------------------------------
    def load(self, query: str, fingerprint: str | None = None, plan: str | None = None) -> dict | None:
        """The newest checkpoint of ``query``, or None; with ``fingerprint``, refuse another plan's
        (``plan``: this plan's summary, shown beside the stored one)."""
        with self._reporting("loading a checkpoint from"):
            return self._load(query, fingerprint, plan)

    def _load(self, query: str, fingerprint: str | None, plan: str | None) -> dict | None:
        row = self._db.execute(
            "SELECT seq, fingerprint, plan, manifest, digest FROM checkpoints "
            "WHERE query = ? ORDER BY seq DESC LIMIT 1",
            (query,),
        ).fetchone()
        if row is None:
            return None
        seq, stored, stored_plan, blob, digest = row
        if fingerprint is not None and stored != fingerprint:
            raise StateError(
                f"the state in {self.path} (checkpoint {seq} of query {query!r}) was made by a different plan "
                f"(fingerprint {stored}, this plan {fingerprint}); use another state file or delete it.\n"
                f"-- the stored plan:\n{stored_plan or '(not recorded)'}\n-- this plan:\n{plan or '(not given)'}"
            )
        where = f"checkpoint {seq} of query {query!r} in {self.path}"
        if _hash(blob) != digest:
            raise StateError(f"{where} is corrupt: its manifest's checksum does not match")
        manifest = self._unpickle(blob, where, "its manifest")
        names = [h for op in manifest.get("operators", []) for h in (op.values() if isinstance(op, dict) else [op])]
        datas = self._fetch(names, where)
        skeletons = {name: self._unpickle(datas[name], where, f"chunk {name.hex()}") for name in set(names)}
        datas.update(self._fetch([n for sk in skeletons.values() for n in names_in(sk)], where))
        self._known = set(datas)

        def value(name: bytes):
            return decode(skeletons[name], datas.__getitem__)

        state = {k: v for k, v in manifest.items() if k != "operators"}
        if "operators" in manifest:
            state["operators"] = [
                {k: value(h) for k, h in op.items()} if isinstance(op, dict) else value(op)
                for op in manifest["operators"]
            ]
        return state

    def _fetch(self, names: list[bytes], where: str) -> dict[bytes, bytes]:
        """The chunks ``names``, each checked against its name (the hash of its bytes)."""
        names = list(dict.fromkeys(names))
        datas: dict[bytes, bytes] = {}
        for i in range(0, len(names), 500):
            part = names[i : i + 500]
            marks = ",".join("?" * len(part))
            datas.update(self._db.execute(f"SELECT hash, data FROM chunks WHERE hash IN ({marks})", part).fetchall())
        for name in names:
            data = datas.get(name)
            if data is None:
                raise StateError(f"{where} is incomplete: chunk {name.hex()} is missing")
            if _hash(data) != name:
                raise StateError(f"{where} is corrupt: chunk {name.hex()} does not match its checksum")
        return datas

    @staticmethod
    def _unpickle(data: bytes, where: str, what: str):
        try:
            return pickle.loads(data)
        except Exception as exc:  # the checksum matched but the bytes are not ours
            raise StateError(f"{where}: {what} cannot be read: {exc}") from None

    def sequence(self, query: str) -> int:
        """The newest checkpoint's sequence number of ``query`` (0 when there is none)."""
        (last,) = self._db.execute("SELECT COALESCE(MAX(seq), 0) FROM checkpoints WHERE query = ?", (query,)).fetchone()
        return last

    def clear(self, query: str) -> None:
        self._db.execute("DELETE FROM checkpoints WHERE query = ?", (query,))
        self._db.execute("DELETE FROM refs WHERE query = ?", (query,))
        self._db.execute("DELETE FROM chunks WHERE NOT EXISTS (SELECT 1 FROM refs WHERE refs.hash = chunks.hash)")
        self._known.clear()

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> CheckpointStore:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
