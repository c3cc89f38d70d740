"""A query's final state kept in a PostgreSQL table: an upsert per inserted row, a delete per retraction.

:class:`PostgresTable` receives a changelog (``change(undo, row)``) and applies it in one
transaction per ``commit(seq)``, together with the sink's progress (``seq``) in the table
``tidal_sink_progress``: the table and the progress move together or not at all.

Rows are keyed (the GROUP BY key, or the key the user gives). An insert is ``INSERT ... ON CONFLICT
(key) DO UPDATE`` (the new value of the key); a retraction deletes the row only if it still holds
exactly the retracted values (``IS NOT DISTINCT FROM`` on every column), so a change that arrives
as "insert new value, then retract old value" and one that arrives the other way round both leave
the new value. Applying a changelog again from an earlier point (a restart replaying what a crash
left uncommitted in the checkpoint) leaves the same final rows: each key ends with its last
change. The table is created when missing, with a unique index on the key in which nulls are
equal (a NULL group is one row).
"""

from __future__ import annotations

import pyarrow as pa

from ..core.errors import PlanError
from .postgres import DEFAULT_BACKOFF, _psycopg, connect, quote_ident, server_label
from .retry import with_retries

PROGRESS_TABLE = "tidal_sink_progress"


def sql_type(t: pa.DataType) -> str:
    if pa.types.is_boolean(t):
        return "boolean"
    if pa.types.is_integer(t):
        return "bigint"
    if pa.types.is_float32(t):
        return "real"
    if pa.types.is_floating(t):
        return "double precision"
    if pa.types.is_decimal(t):
        return "numeric"
    if pa.types.is_date(t):
        return "date"
    if pa.types.is_timestamp(t):
        return "timestamptz" if t.tz else "timestamp"
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return "bytea"
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_null(t):
        return "text"
    raise PlanError(f"a PostgreSQL sink cannot store a column of type {t}: not supported")


class PostgresTable:
    """The keyed rows of a result in ``table`` on the server ``dsn`` (see the module docstring)."""

    def __init__(self, dsn: str, table: str, columns: list[tuple[str, pa.DataType]], keys: list[str], backoff=None):
        if not keys:
            raise PlanError("a PostgreSQL sink needs a key: GROUP BY in the query, or ?key=column,... in the URL")
        names = [n for n, _ in columns]
        missing = [k for k in keys if k not in names]
        if missing:
            raise PlanError(f"the sink key {missing[0]} is not a column of the result ({', '.join(names)})")
        self.dsn, self.table, self.columns, self.keys = dsn, table, list(columns), list(keys)
        self.backoff = backoff or DEFAULT_BACKOFF
        self.pending: list[tuple[bool, tuple]] = []
        self.reset = False  # empty the table in the next commit (a fresh run replaces its contents)
        self.conn = None
        self.label = f"postgres table {table} at {server_label(dsn)}"
        q = ".".join(quote_ident(p) for p in table.split("."))
        cols = ", ".join(quote_ident(n) for n in names)
        marks = ", ".join(["%s"] * len(names))
        rest = [n for n in names if n not in keys]
        on = ", ".join(quote_ident(k) for k in keys)
        update = ", ".join(f"{quote_ident(n)} = EXCLUDED.{quote_ident(n)}" for n in rest)
        self.upsert = f"INSERT INTO {q} ({cols}) VALUES ({marks}) ON CONFLICT ({on}) " + (
            f"DO UPDATE SET {update}" if rest else "DO NOTHING"
        )
        same = " AND ".join(f"{quote_ident(n)} IS NOT DISTINCT FROM %s" for n in names)
        self.delete = f"DELETE FROM {q} WHERE {same}"
        self.quoted = q

    # -- connection ---------------------------------------------------------------------------
    def _conn(self):
        if self.conn is None or self.conn.closed:
            self.conn = connect(self.dsn, self.backoff)
        return self.conn

    def _retry(self, what: str, call):
        psycopg = _psycopg()

        def reconnect():
            if self.conn is not None:
                self.conn.close()
            self.conn = None

        return with_retries(f"{self.label}: {what}", call, (psycopg.OperationalError,), self.backoff, reconnect)

    def open(self) -> int:
        """Create the table (and the progress table) if missing; return the progress stored for it."""

        def run():
            conn = self._conn()
            with conn.transaction():
                conn.execute(f"CREATE TABLE IF NOT EXISTS {PROGRESS_TABLE} (sink text PRIMARY KEY, seq bigint)")
                cols = ", ".join(f"{quote_ident(n)} {sql_type(t)}" for n, t in self.columns)
                conn.execute(f"CREATE TABLE IF NOT EXISTS {self.quoted} ({cols})")
                have = [
                    r[0]
                    for r in conn.execute(
                        "SELECT attname FROM pg_attribute WHERE attrelid = %s::regclass AND attnum > 0 "
                        "AND NOT attisdropped ORDER BY attnum",
                        [self.quoted],
                    )
                ]
                want = [n for n, _ in self.columns]
                if sorted(have) != sorted(want):
                    raise PlanError(
                        f"{self.label} exists with columns ({', '.join(have)}) but this output has "
                        f"({', '.join(want)}): drop the table or write to another one"
                    )
                keys = ", ".join(quote_ident(k) for k in self.keys)
                index = quote_ident(f"{self.table.replace('.', '_')}_tidal_key")
                conn.execute(f"CREATE UNIQUE INDEX IF NOT EXISTS {index} ON {self.quoted} ({keys}) NULLS NOT DISTINCT")
                row = conn.execute(f"SELECT seq FROM {PROGRESS_TABLE} WHERE sink = %s", [self.table]).fetchone()
            return 0 if row is None else int(row[0])

        try:
            return self._retry("open", run)
        except _psycopg().errors.Error as exc:
            if isinstance(exc, _psycopg().OperationalError):
                raise
            raise PlanError(f"{self.label}: {str(exc).strip()}") from None

    def change(self, undo: bool, row: tuple) -> None:
        self.pending.append((undo, tuple(row)))

    def commit(self, seq: int) -> None:
        """Apply the pending changes, in order, and store ``seq`` as the progress: one transaction."""
        pending = self.pending

        def run():
            conn = self._conn()
            with conn.transaction(), conn.cursor() as cur:
                if self.reset:
                    cur.execute(f"DELETE FROM {self.quoted}")
                start = 0
                while start < len(pending):  # runs of the same kind keep the changelog's order
                    undo = pending[start][0]
                    stop = start
                    while stop < len(pending) and pending[stop][0] == undo:
                        stop += 1
                    cur.executemany(self.delete if undo else self.upsert, [r for _, r in pending[start:stop]])
                    start = stop
                cur.execute(
                    f"INSERT INTO {PROGRESS_TABLE} (sink, seq) VALUES (%s, %s) "
                    "ON CONFLICT (sink) DO UPDATE SET seq = EXCLUDED.seq",
                    [self.table, seq],
                )

        self._retry("commit", run)
        self.pending = []
        self.reset = False

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None
