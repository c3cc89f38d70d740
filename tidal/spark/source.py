"""Streams whose source is a Spark DataFrame, and the physical events Spark works on.

``from_spark(df, time=..., end=..., other=..., kind=...)`` mirrors :func:`tidal.from_arrow`:
each row is a point ``[t, t+1)``, an interval ``[t, end)``, a start edge (``kind="start"``),
or with ``other=`` a physical event exactly as ``to_arrow()`` writes it. Time fields are
integer ticks or timestamps (microseconds since the epoch). On Spark the conversion to
``sync_time, other_time, payload...`` is a Spark SQL projection; a null time or an end not
after its start fails the job with an error that shows the row. Run embedded (``to_arrow()``
on the stream), the DataFrame is collected, sorted by time and read like ``from_arrow``.
"""

from __future__ import annotations

import pyarrow as pa

from ..core.batch import OTHER_FIELD, SYNC_FIELD
from ..core.errors import InputError, PlanError
from ..core.time import INFINITY
from ..io.ingress import KINDS
from ..plan.nodes import Source
from ..plan.properties import Properties
from ..stream.sources import from_arrow
from ..stream.streamable import Stream
from .sqltext import ident, string


def arrow_schema_of(df) -> pa.Schema:
    from pyspark.sql.pandas.types import to_arrow_schema

    timezone = df.sparkSession.conf.get("spark.sql.session.timeZone") or "UTC"
    return to_arrow_schema(df.schema, timezone=timezone)


class SparkSourceNode(Source):
    """A plan source reading a Spark DataFrame (batch or streaming)."""

    label = "SparkIngress"

    def __init__(self, df, time: str, end: str | None, other: str | None, kind: str):
        full = arrow_schema_of(df)
        for spec, role in ((time, "time"), (end, "end"), (other, "other")):
            if spec is not None and (not isinstance(spec, str) or spec not in full.names):
                raise InputError(
                    f"{role} must name a field of the DataFrame on Spark, got {spec!r}; fields are {full.names}"
                )
        if kind not in KINDS:
            raise PlanError(f"kind must be one of {KINDS}, got {kind!r}")
        payload = pa.schema([f for f in full if other is None or f.name not in (time, other)])
        clash = [n for n in payload.names if n in (SYNC_FIELD, OTHER_FIELD)]
        if clash:
            raise PlanError(f"payload fields may not be named {clash}: rename them or read them with other=")
        if other is not None or end is not None:
            props = Properties()
        else:
            props = Properties(start_edge_only=True) if kind == "start" else Properties(constant_duration=1)
        shape = "physical events" if other else ("intervals" if end else f"{kind} events")
        streaming = " (streaming)" if df.isStreaming else ""
        super().__init__(self._open_embedded, payload, props, f"spark DataFrame{streaming}, {shape}")
        self._set(df=df, time=time, end=end, other=other, kind=kind)

    @property
    def physical(self) -> bool:
        """True when rows are physical events, which may be edges that must meet their partners."""
        return self.other is not None

    def _open_embedded(self):
        if self.df.isStreaming:
            raise PlanError("a streaming DataFrame runs on Spark only: use tidal.spark.start_streaming")
        table = self.df.toArrow().sort_by(self.time)
        return from_arrow(table, self.time, self.end, other=self.other, kind=self.kind).node.open_messages()

    def to_physical(self):
        """The DataFrame as physical events: ``sync_time, other_time``, then the payload fields."""
        df = self.df
        types = {f.name: f.dataType.typeName() for f in df.schema.fields}
        row = f"to_json(struct({', '.join(ident(c) for c in df.columns)}))"

        def fail(message: str) -> str:
            return f"raise_error(concat({string('tidal: ' + message + ' in row ')}, {row}))"

        def ticks(name: str, role: str) -> str:
            dtype, c = types[name], ident(name)
            if dtype in ("long", "integer", "short", "byte"):
                value = f"CAST({c} AS BIGINT)"
            elif dtype in ("timestamp", "timestamp_ntz"):
                value = f"unix_micros(CAST({c} AS TIMESTAMP))"
            else:
                raise InputError(f"{role} field {name!r} must be an integer or timestamp, got {dtype}")
            return f"CASE WHEN {c} IS NULL THEN {fail(f'{role} field {name!r} is null')} ELSE {value} END"

        sync = ticks(self.time, "time")
        if self.other is not None:
            other = ticks(self.other, "other")
        elif self.end is not None:
            end = ticks(self.end, "end")
            message = f"end field {self.end!r} is not after time field {self.time!r}"
            other = f"CASE WHEN ({end}) <= ({sync}) THEN {fail(message)} ELSE {end} END"
        elif self.kind == "start":
            other = f"CAST({INFINITY} AS BIGINT)"
        else:
            other = f"({sync}) + 1"
        payload = [ident(n) for n in self.schema.names]
        return df.selectExpr(f"{sync} AS {SYNC_FIELD}", f"{other} AS {OTHER_FIELD}", *payload)


def from_spark(df, time: str, end: str | None = None, *, other: str | None = None, kind: str = "point") -> Stream:
    """A stream over a Spark DataFrame, one event per row (see the module docstring)."""
    return Stream(SparkSourceNode(df, time, end, other, kind))
