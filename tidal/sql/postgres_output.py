"""``--output postgresql://user@host:port/db?table=t[&key=a,b]``: a query's final state kept in a table.

The query's changelog (:class:`~tidal.sql.output.ChangelogSink`) goes to
:class:`~tidal.io.postgres_sink.PostgresTable`: inserts become upserts and retractions deletes,
keyed by the query's GROUP BY columns (which must all be selected) or by ``key=`` from the URL.
As a durable sink (``Query.run_durably``, ``--state``) each commit is one database transaction
holding the changes and the sink's progress; after a crash the replay from the last checkpoint
rewrites what that commit had already written with the same values, so the table ends exactly as
one uninterrupted run leaves it. A ``key=`` that turns out not to be unique in the result (two
live rows with one key at a commit) is an error, not a silently overwritten row.
"""

from __future__ import annotations

import heapq
import time
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from sqlglot import exp

from ..core.errors import PlanError
from ..io.postgres_sink import PostgresTable
from ..io.segments import DurableSink
from .logical import Aggregate, Filter, Project
from .output import ChangelogSink

SCHEMES = ("postgresql://", "postgres://")
AUTOCOMMIT_SECONDS = 1.0


def is_postgres_url(output: str | None) -> bool:
    return bool(output) and output.startswith(SCHEMES)


def parse_url(url: str) -> tuple[str, str, list[str]]:
    """(DSN, table, key columns) of a sink URL; tidal's own parameters are removed from the DSN."""
    parts = urlsplit(url)
    params = parse_qsl(parts.query, keep_blank_values=True)
    own = {k: v for k, v in params if k in ("table", "key")}
    rest = [(k, v) for k, v in params if k not in ("table", "key")]
    if not own.get("table"):
        raise PlanError(f"a PostgreSQL output needs the table: {url.split('?')[0]}?table=name")
    dsn = urlunsplit((parts.scheme, parts.netloc, parts.path, urlencode(rest), ""))
    keys = [k.strip() for k in own.get("key", "").split(",") if k.strip()]
    return dsn, own["table"], keys


def group_key(q) -> list[str]:
    """The display names of the SELECT columns that are the query's GROUP BY key (none if any key
    column is not selected, or the query does not group)."""
    node = q.optimized
    visible = q.visible_names()
    source = {n: n for n in visible}  # visible column -> the column it is below the projections
    while isinstance(node, Project | Filter):
        if isinstance(node, Project):
            exprs = dict(node.exprs)
            source = {v: exprs[s].name for v, s in source.items() if isinstance(exprs.get(s), exp.Column)}
        node = node.input
    if not isinstance(node, Aggregate) or not node.keys:
        return []
    labels = dict(zip(visible, q.query.output_names, strict=True))
    by_source = {s: v for v, s in source.items()}
    if not all(k in by_source for k in node.keys):
        return []
    return [labels[by_source[k]] for k in node.keys]


class PostgresOutput(DurableSink):
    """The changelog of ``q`` applied to a PostgreSQL table (see the module docstring)."""

    def __init__(self, q, url: str, autocommit: bool = False):
        """``autocommit``: commit by itself (each second of changes, and at the end) when no durable
        run drives the commits."""
        dsn, table, keys = parse_url(url)
        self.user_key = bool(keys)
        labels = list(q.query.output_names)
        if len(set(labels)) != len(labels):
            raise PlanError(f"a PostgreSQL output needs distinct column names, got {labels}: name them with AS")
        keys = keys or group_key(q)
        schema = q.optimized.schema()
        names = q.visible_names()
        types = [schema.field(n).type for n in names]
        self.table = PostgresTable(dsn, table, list(zip(labels, types, strict=True)), keys)
        self.key_at = [labels.index(k) for k in keys]
        self.changelog = ChangelogSink(names, labels, self._change)
        self.live: dict[tuple, int] = {}  # rows per key seen in this process (a given key must be unique)
        self.seq = 0
        self.autocommit = autocommit
        self.last_commit = time.monotonic()

    def _change(self, time: int, undo: bool, row: tuple) -> None:
        self.table.change(undo, row)
        if self.user_key:
            k = tuple(row[i] for i in self.key_at)
            self.live[k] = max(0, self.live.get(k, 0) + (-1 if undo else 1))

    def on_batch(self, batch) -> None:
        self.changelog.on_batch(batch)

    def on_punctuation(self, t: int) -> None:
        self.changelog.on_punctuation(t)
        if self.autocommit and self.table.pending and time.monotonic() - self.last_commit >= AUTOCOMMIT_SECONDS:
            self.commit()

    def on_completed(self) -> None:
        self.changelog.on_completed()
        if self.autocommit:
            self.commit()

    def commit(self):
        twice = [k for k, n in self.live.items() if n > 1]
        if twice:
            cols = ", ".join(self.table.keys)
            raise PlanError(
                f"the output key ({cols}) is not unique in the result: {twice[0]} has {self.live[twice[0]]} rows; "
                "a PostgreSQL output with such a key is not supported (give key= columns that identify a row)"
            )
        self.live = {k: n for k, n in self.live.items() if n}
        self.seq += 1
        self.table.commit(self.seq)
        self.last_commit = time.monotonic()
        return self.committed

    @property
    def committed(self) -> dict:
        """What a checkpoint stores: the commit number and the changelog's pending interval ends."""
        return {"seq": self.seq, "pending": list(self.changelog.pending), "order": self.changelog._seq}

    def progress(self) -> dict:
        return self.committed

    def resume_at(self, position) -> None:
        stored = self.table.open()
        if not position:  # a fresh run: the table becomes this run's result (emptied in the first commit)
            self.seq = stored
            self.table.reset = True
            return
        self.seq = position["seq"]
        if stored < self.seq:
            raise PlanError(
                f"{self.table.label}: the database holds commit {stored} of this output but the checkpoint "
                f"says {self.seq} were written: the table was changed or restored behind tidal's back"
            )
        self.changelog.pending = [tuple(p) for p in position["pending"]]
        heapq.heapify(self.changelog.pending)
        self.changelog._seq = position["order"]

    def close(self) -> None:
        self.table.close()


def durable_sink(q, fmt: str, output: str, state: str) -> PostgresOutput:
    """The factory ``tidal query --state`` takes for ``postgresql://`` and ``postgres://`` outputs
    (``fmt`` does not apply: the table holds the final state; the state file holds the checkpoints)."""
    return PostgresOutput(q, output)
