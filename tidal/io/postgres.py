"""PostgreSQL as a bounded table and as a lookup side, through psycopg 3.

A :class:`Relation` is what ``postgres(dsn => ..., table => ... | query => ...)`` names. Its rows
are read whole (:func:`read`: the projection and a filter rendered by the SQL layer go into the
statement sent to the server) or, for a lookup join, per batch of keys (:class:`Lookup`: ``WHERE key =
ANY(%s)``, answers cached per key). Column types come from the server's description of the
statement: integers become int64 (so they join with integers from files), ``numeric(p, s)``
DECIMAL(p, s) and an unconstrained ``numeric`` float64 (as DuckDB's postgres scanner reads them),
``float4`` float32, text types string, ``date``, ``timestamp`` and ``timestamptz`` (in UTC) Arrow dates
and timestamps, ``bytea`` binary, and every
other type (json, uuid, interval, arrays, ...) its text form.

Bad values: a date or timestamp outside what tidal holds (``infinity``, beyond year 9999) is a
malformed row, reported with the table and the row's primary key (or its position in a query's
result); with ``on_error="skip"`` it is counted and written to the dead-letter file. A lost
connection is retried with backoff (:mod:`.retry`); a bounded read starts over, since nothing
of it has been delivered yet.
"""

from __future__ import annotations

import functools
import gc
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..core.errors import InputError, PlanError
from .dead_letter import BadRows
from .retry import Backoff, with_retries

# type oid -> (Arrow type, the cast applied in the statement or None)
_TYPES = {
    16: (pa.bool_(), None),
    20: (pa.int64(), None),
    21: (pa.int64(), "int8"),
    23: (pa.int64(), "int8"),
    26: (pa.int64(), "int8"),
    700: (pa.float32(), None),
    701: (pa.float64(), None),
    1700: (pa.float64(), "float8"),
    25: (pa.string(), None),
    1043: (pa.string(), None),
    1042: (pa.string(), None),
    19: (pa.string(), "text"),
    18: (pa.string(), "text"),
    1082: (pa.date32(), None),
    1114: (pa.timestamp("us"), None),
    1184: (pa.timestamp("us", tz="UTC"), None),
    17: (pa.binary(), None),
}
FETCH_ROWS = 50_000
LOOKUP_CHUNK = 10_000


def _psycopg():
    try:
        import psycopg
    except ImportError:  # pragma: no cover - the extra is part of the test install
        raise PlanError("the postgres connector needs psycopg 3: pip install 'tidal[postgres]'") from None
    return psycopg


def server_label(dsn: str) -> str:
    """``host:port/db`` of a DSN, never its password."""
    from psycopg.conninfo import conninfo_to_dict

    try:
        parts = conninfo_to_dict(dsn)
    except Exception:
        return "postgres (unparsable DSN)"
    return f"{parts.get('host', 'localhost')}:{parts.get('port', 5432)}/{parts.get('dbname', '')}"


class Malformed:
    """A value psycopg could not turn into a Python value (a date or timestamp out of range)."""

    def __init__(self, text: str):
        self.text = text


def _safe_loaders(conn) -> None:
    psycopg = _psycopg()
    import psycopg.types.datetime as dt

    loaders = (("date", dt.DateLoader), ("timestamp", dt.TimestampLoader), ("timestamptz", dt.TimestamptzLoader))
    for name, base in loaders:

        class Safe(base):
            def load(self, data):
                try:
                    return super().load(data)
                except psycopg.DataError:
                    return Malformed(bytes(data).decode())

        conn.adapters.register_loader(name, Safe)


DEFAULT_BACKOFF = Backoff()


# what a server says when connecting can never work: retrying would only delay the error
_PERMANENT = ("does not exist", "authentication failed", "no pg_hba.conf entry", "permission denied")


def transient(exc: BaseException) -> bool:
    """A lost or refused connection (class 08, the server shutting down or starting: 57P), not an
    answer such as a wrong password (28) or a missing database (3D); libpq reports failures to
    connect without a SQLSTATE, so those are told apart by the server's message."""
    state = getattr(exc, "sqlstate", None)
    if state is not None:
        return state.startswith(("08", "57P"))
    return not any(p in str(exc) for p in _PERMANENT)


def connect(dsn: str, backoff: Backoff = DEFAULT_BACKOFF):
    """An autocommit connection in UTC, retried with backoff while the server is unreachable."""
    psycopg = _psycopg()

    def attempt():
        conn = psycopg.connect(dsn, autocommit=True, connect_timeout=10)
        conn.execute("SET TIME ZONE 'UTC'")
        _safe_loaders(conn)
        return conn

    what = f"postgres at {server_label(dsn)}"
    try:
        return with_retries(f"{what}: connect", attempt, (psycopg.OperationalError,), backoff, transient=transient)
    except psycopg.OperationalError as exc:
        raise PlanError(f"{what}: {str(exc).strip().splitlines()[-1]}") from None


def quote_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _qualified(table: str) -> str:
    if table.startswith('"') or "(" in table:
        return table  # already quoted by the user
    return ".".join(quote_ident(p) for p in table.split("."))


@dataclass(frozen=True)
class Column:
    name: str
    type: pa.DataType
    sql_type: str  # the server's type of the value selected (after the cast)
    cast: str | None
    raw_type: str = ""  # the column's own type on the server

    def key(self, source: str = "") -> tuple[str, str, tuple[int, int] | None]:
        """How a lookup compares this column with an array of keys: (expression, array element type,
        the range of keys that can match). A widened integer is compared as its own type, so that
        an index on it serves the lookup; keys outside that type's range cannot match."""
        ranges = {"smallint": (-(2**15), 2**15 - 1), "integer": (-(2**31), 2**31 - 1)}
        if self.cast == "int8" and self.raw_type in ranges:
            return f"{source}{quote_ident(self.name)}", self.raw_type, ranges[self.raw_type]
        return self.select(source), self.sql_type, None

    def select(self, source: str = "") -> str:
        ref = f"{source}{quote_ident(self.name)}"
        return f"{ref}::{self.cast}" if self.cast else ref


@dataclass(frozen=True)
class Relation:
    """A table or a query on a PostgreSQL server."""

    dsn: str
    table: str | None = None
    query: str | None = None
    backoff: Backoff = field(default=Backoff(), compare=False)

    def __post_init__(self):
        if (self.table is None) == (self.query is None):
            raise PlanError("postgres(...) needs table => 'name' or query => 'SELECT ...', not both")

    @property
    def from_item(self) -> str:
        return _qualified(self.table) if self.table is not None else f"({self.query}) AS q"

    def label(self) -> str:
        what = f"table {self.table}" if self.table is not None else "query"
        return f"postgres {what} at {server_label(self.dsn)}"

    def _retry(self, what: str, call):
        psycopg = _psycopg()
        return with_retries(f"{self.label()}: {what}", call, (psycopg.OperationalError,), self.backoff)

    def columns(self) -> list[Column]:
        """The relation's columns and their types (asks the server)."""

        def ask():
            with connect(self.dsn, self.backoff) as conn:
                return self.describe(conn)

        return self._retry("describe", ask)

    def describe(self, conn) -> list[Column]:
        """:meth:`columns` on an open connection."""
        try:
            cur = conn.execute(f"SELECT * FROM {self.from_item} LIMIT 0")
        except _psycopg().errors.Error as exc:
            if isinstance(exc, _psycopg().OperationalError):
                raise
            raise PlanError(f"{self.label()}: {str(exc).strip()}") from None
        described = list(cur.description)
        if not described:
            return []
        marks = ", ".join(["%s::regtype::text"] * len(described))
        raw = conn.execute(f"SELECT {marks}", [d.type_code for d in described]).fetchone()
        out = []
        for d, raw_type in zip(described, raw, strict=True):
            arrow, cast = _TYPES.get(d.type_code, (pa.string(), "text"))
            if d.type_code == 1700 and (exact := numeric_type(d.precision, d.scale)) is not None:
                arrow, cast = exact, None  # numeric(p, s): DECIMAL(p, s), as DuckDB's postgres scanner reads it
            out.append(Column(d.name, arrow, cast or raw_type, cast, raw_type))
        return out

    def primary_key(self) -> list[str]:
        """The table's primary key columns (none for a query or a table without one)."""
        if self.table is None:
            return []

        def ask():
            with connect(self.dsn, self.backoff) as conn:
                return self.key_of(conn)

        return self._retry("primary key", ask)

    def key_of(self, conn) -> list[str]:
        """:meth:`primary_key` on an open connection."""
        if self.table is None:
            return []
        rows = conn.execute(
            "SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid "
            "AND a.attnum = ANY(i.indkey) WHERE i.indrelid = %s::regclass AND i.indisprimary",
            [_qualified(self.table)],
        ).fetchall()
        return [r[0] for r in rows]


@contextmanager
def _no_gc():
    """Rows arrive as millions of small tuples without cycles: the cycle collector, which would walk
    every live object again and again while they are made, waits (a read ran 2x faster)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def numeric_type(precision: int | None, scale: int | None) -> pa.DataType | None:
    """A ``numeric(p, s)`` column's DECIMAL(p, s), as DuckDB's postgres scanner types it; None (a DOUBLE,
    as DuckDB reads it too) for an unconstrained ``numeric``, one of more than 38 digits, or a scale
    outside 0..p (PostgreSQL 15's negative scales)."""
    if precision is None or scale is None or not (1 <= precision <= 38 and 0 <= scale <= precision):
        return None
    return pa.decimal128(precision, scale)


def _to_table(rows: list[tuple], columns: list[Column]) -> pa.Table:
    data = list(zip(*rows, strict=True)) if rows else [() for _ in columns]
    out = {}
    for c, v in zip(columns, data, strict=True):
        if pa.types.is_decimal(c.type) and any(x is not None and not x.is_finite() for x in v):
            bad = next(x for x in v if x is not None and not x.is_finite())
            raise InputError(f"column {c.name} ({c.raw_type}) holds {bad}, which a DECIMAL cannot hold (not supported)")
        out[c.name] = pa.array(list(v), c.type)
    return pa.table(out)


def _clean(rows: list[tuple], columns: list[Column], key_at: list[int], relation: Relation, base: int, bad: BadRows):
    """Rows without malformed values; each malformed one reported by table and key (or position)."""
    temporal = [j for j, c in enumerate(columns) if pa.types.is_date(c.type) or pa.types.is_timestamp(c.type)]
    if not temporal:  # only dates and timestamps can fail to load
        return rows
    broken_at = [i for i, row in enumerate(rows) if any(isinstance(row[j], Malformed) for j in temporal)]
    if not broken_at:
        return rows
    out = []
    drop = set(broken_at)
    for i, row in enumerate(rows):
        if i not in drop:
            out.append(row)
            continue
        broken = [j for j in temporal if isinstance(row[j], Malformed)]
        if key_at:
            key = ", ".join(f"{columns[j].name}={row[j]!r}" for j in key_at)
            where = f"{relation.label()}, row {key}"
        else:
            where = f"{relation.label()}, row {base + i + 1} of the result"
        j = broken[0]
        problem = f"column {columns[j].name} holds {row[j].text!r}, outside the dates and times tidal can hold"
        record = {c.name: (v.text if isinstance(v, Malformed) else v) for c, v in zip(columns, row, strict=True)}
        bad.bad(where, problem, record)
    return out


def read(
    relation: Relation,
    names: list[str] | None = None,
    where: tuple[str, list] | None = None,
    bad: BadRows | None = None,
) -> pa.Table:
    """The relation's rows (columns ``names``, in that order; all by default) satisfying ``where``
    (SQL over the relation's columns with ``%s`` parameters, and the parameters)."""
    bad = bad or BadRows()
    skipped_before = bad.skipped
    shape: dict = {}

    def statement(conn) -> tuple[str, list]:
        by_name = {c.name: c for c in relation.describe(conn)}
        missing = [n for n in names or () if n not in by_name]
        if missing:
            raise PlanError(f"{relation.label()} has no column {missing[0]}")
        columns = [by_name[n] for n in names] if names is not None else list(by_name.values())
        key = [k for k in relation.key_of(conn) if k in by_name]
        extra = [by_name[k] for k in key if k not in {c.name for c in columns}]
        selected = columns + extra
        shape.update(columns=columns, selected=selected, key_at=[[c.name for c in selected].index(k) for k in key])
        listed = ", ".join(c.select() for c in selected) or "1"
        sql = f"SELECT {listed} FROM {relation.from_item}"
        if where is None:
            return sql, []
        return sql + f" WHERE {where[0]}", list(where[1])

    def fetch():
        bad.skipped = skipped_before  # a retried read starts over
        parts = []
        base = 0
        with connect(relation.dsn, relation.backoff) as conn:
            sql, params = statement(conn)
            selected, key_at = shape["selected"], shape["key_at"]
            with conn.transaction(), conn.cursor(name="tidal_read") as cur, _no_gc():
                cur.execute(sql, params)
                while rows := cur.fetchmany(FETCH_ROWS):
                    parts.append(_to_table(_clean(rows, selected, key_at, relation, base, bad), selected))
                    base += len(rows)
        return parts

    try:
        parts = relation._retry("read", fetch)
    except _psycopg().errors.Error as exc:
        raise InputError(f"{relation.label()}: {str(exc).strip()}") from None
    table = pa.concat_tables(parts) if parts else _to_table([], shape["selected"])
    return table.select([c.name for c in shape["columns"]])


class Lookup:
    """The rows of a relation whose key columns equal given keys, fetched per batch of keys
    (``WHERE k = ANY(...)``, or ``(k1, k2) IN (SELECT * FROM unnest(...))``) and cached as Arrow
    (a key without rows too); the probe meets the cache in Arrow's hash join."""

    def __init__(
        self,
        relation: Relation,
        names: list[str],
        keys: list[str],
        where: tuple[str, list] | None = None,
        cache_keys: int = 100_000,
        bad: BadRows | None = None,
    ):
        self.relation = relation
        self.names, self.keys, self.where = list(names), list(keys), where
        self.cache_keys = cache_keys
        self._reset()
        self.bad = bad or BadRows()
        self.queries = 0  # statements sent (for tests and explain)
        self._conn = None
        self._columns: list[Column] | None = None

    def _ready(self):
        if self._columns is None:
            by_name = {c.name: c for c in self.relation.columns()}
            self._columns = [by_name[n] for n in self.names]
            self._key_cols = [by_name[k] for k in self.keys]
            self._pk = [k for k in self.relation.primary_key() if k in by_name]
            self._pk_cols = [by_name[k] for k in self._pk if k not in self.names]
        if self._conn is None or self._conn.closed:
            self._conn = connect(self.relation.dsn, self.relation.backoff)
        return self._conn

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _query(self, wanted: list[tuple]) -> list[tuple]:
        cols = self._columns + self._pk_cols
        listed = ", ".join(c.select("q.") for c in cols)
        compare = [k.key("q.") for k in self._key_cols]
        wanted = [
            w for w in wanted if all(r is None or r[0] <= v <= r[1] for v, (_, _, r) in zip(w, compare, strict=True))
        ]
        if not wanted:
            return []
        if len(compare) == 1:
            expr, element, _ = compare[0]
            cond = f"{expr} = ANY(%s::{element}[])"
            params = [[w[0] for w in wanted]]
        else:
            lhs = ", ".join(expr for expr, _, _ in compare)
            arrays = ", ".join(f"%s::{element}[]" for _, element, _ in compare)
            cond = f"({lhs}) IN (SELECT * FROM unnest({arrays}))"
            params = [[w[i] for w in wanted] for i in range(len(compare))]
        sql = f"SELECT {listed} FROM {self.relation.from_item} AS q WHERE {cond}"
        if self.relation.query is not None:
            sql = f"SELECT {listed} FROM {self.relation.from_item.removesuffix(' AS q')} AS q WHERE {cond}"
        if self.where is not None:
            sql += f" AND ({self.where[0]})"
            params += list(self.where[1])

        def run():
            self.queries += 1
            with _no_gc():
                return self._ready().execute(sql, params).fetchall()

        def reconnect():
            self.close()

        psycopg = _psycopg()
        rows = with_retries(
            f"{self.relation.label()}: lookup", run, (psycopg.OperationalError,), self.relation.backoff, reconnect
        )
        key_at = [[c.name for c in cols].index(k) for k in self._pk]
        return [r[: len(self._columns)] for r in _clean(rows, cols, key_at, self.relation, 0, self.bad)]

    def _reset(self) -> None:
        self._seen: pa.Table | None = None  # the keys looked up (with rows or without)
        self._rows: pa.Table | None = None  # their rows: the ``names`` columns and ``__row``, in fetch order

    def _fetch(self, missing: pa.Table) -> None:
        wanted = list(zip(*[c.to_pylist() for c in missing.columns], strict=True))
        parts = []
        base = 0 if self._rows is None else self._rows.num_rows
        for start in range(0, len(wanted), LOOKUP_CHUNK):
            table = _to_table(self._query(wanted[start : start + LOOKUP_CHUNK]), self._columns)
            parts.append(table.append_column("__row", pa.array(np.arange(base, base + table.num_rows))))
            base += table.num_rows
        self._rows = pa.concat_tables(([self._rows] if self._rows is not None else []) + parts).combine_chunks()
        self._seen = missing if self._seen is None else pa.concat_tables([self._seen, missing]).combine_chunks()

    def match(self, keys: pa.Table) -> pa.Table:
        """For each row ``i`` of ``keys`` (the probe's key values, one column per key, in ``keys``
        order) without a null, the relation's rows with those key values: a table of ``__probe``
        (``i``) and the ``names`` columns, ordered by ``i`` and then as the rows were fetched. Keys
        not seen before are fetched (one statement per chunk of them); at most ``cache_keys`` keys
        are held, then the cache starts afresh."""
        self._ready()
        names = [f"__k{i}" for i in range(keys.num_columns)]
        probe = keys.rename_columns(names).append_column("__probe", pa.array(np.arange(keys.num_rows)))
        valid = functools.reduce(pc.and_, [pc.is_valid(probe.column(n)) for n in names])
        probe = probe.filter(valid)
        distinct = probe.select(names).group_by(names).aggregate([])
        if self._seen is not None and self._seen.num_rows + distinct.num_rows > self.cache_keys:
            self._reset()
        missing = distinct if self._seen is None else distinct.join(self._seen, names, join_type="left anti")
        if missing.num_rows:
            self._fetch(missing.combine_chunks())
        out = ["__probe", *self.names]
        if self._rows is None or self._rows.num_rows == 0 or probe.num_rows == 0:
            return pa.table(
                {"__probe": pa.array([], pa.int64()), **{c.name: pa.array([], c.type) for c in self._columns}}
            )
        joined = probe.join(self._rows, names, right_keys=self.keys, join_type="inner", coalesce_keys=False)
        return joined.sort_by([("__probe", "ascending"), ("__row", "ascending")]).select(out)
