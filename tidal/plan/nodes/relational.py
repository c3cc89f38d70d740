"""Nodes the SQL translator adds for relational results over time: shaping rows, row identities for
outer joins, session columns, SQL windows, triggers, late-row time columns, TopK, window functions,
watermark taps.
Each operator's temporal semantics are stated in its ``tidal.ops`` module."""

from __future__ import annotations

import pyarrow as pa

from ...core.time import check_span
from ...ops import watermark
from ...ops.base import Operator
from ...ops.rank import RowNumberOp
from ...ops.shape import RowIdentityOp, SessionColumnsOp, ShapeOp
from ...ops.topk import TopKOp
from ...ops.trigger import FinalValuesOp, TriggerOp, TriggerSpec
from ...ops.tumble import TumbleOp, WindowRowsOp
from ...ops.window_functions import WindowFunctionsOp
from ..node import PlanNode
from ..properties import Properties


class Shape(PlanNode):
    """Each payload cut or cast to ``schema`` (fields by name)."""

    label = "Shape"

    def __init__(self, input: PlanNode, schema: pa.Schema):
        super().__init__((input,), schema, input.props)

    def make(self) -> Operator:
        return ShapeOp(self.schema)


class EmptyDefault(PlanNode):
    """A relational global aggregate's result, with its row over no rows when the result is empty."""

    label = "EmptyDefault"

    def __init__(self, input: PlanNode, row: dict):
        # one partition (a global key): on Spark it must see the whole result, not one part of it each
        super().__init__((input,), input.schema, input.props, row=tuple(sorted(row.items())), partitioning=((),))

    def make(self) -> Operator:
        from ...ops.empty_default import EmptyDefaultOp

        return EmptyDefaultOp(self.schema, dict(self.row))


class RowIdentity(PlanNode):
    """Each payload plus a null-safe identity of its columns: a null flag and a filled value per column."""

    label = "RowIdentity"

    def __init__(self, input: PlanNode, names: list, flags: list, values: list):
        fields = list(input.schema) + [pa.field(f, pa.int64()) for f in flags]
        fields += [pa.field(v, input.schema.field(n).type) for n, v in zip(names, values, strict=True)]
        super().__init__((input,), pa.schema(fields), input.props, names=names, flags=flags, values=values)

    def make(self) -> Operator:
        return RowIdentityOp(self.names, self.flags, self.values)


class SessionColumns(PlanNode):
    """Session rows: the input's columns and the session's bounds, as start edges."""

    label = "SessionColumns"

    def __init__(self, input: PlanNode, names: tuple, schema: pa.Schema, props):
        super().__init__((input,), schema, props, names=names)

    def make(self) -> Operator:
        return SessionColumnsOp(self.names)


class Tumble(PlanNode):
    """SQL ``tumble``/``hop``: rows gain their window's bounds as columns."""

    def __init__(
        self, input: PlanNode, length: int, offset: int, hop: int | None, schema: pa.Schema, align: str = "start"
    ):
        name = "tumble" if hop is None else "hop"
        for value, what in ((length, "window_length"), (hop, "hop"), (offset, "offset")):
            check_span(value, f"{name}(...): the {what} (microseconds)")  # (t - offset in int64 wrapped)
        props = input.props.but(grouping=())
        super().__init__((input,), schema, props, length=length, offset=offset, hop=hop, align=align)

    @property
    def label(self) -> str:
        return "Tumble" if self.hop is None else "Hop"

    def make(self) -> Operator:
        return TumbleOp(self.length, self.offset, self.hop, self.align)


class WindowRows(PlanNode):
    """A window aggregate's results as rows at their window's end, with the window's bounds as columns."""

    label = "WindowRows"

    def __init__(
        self, input: PlanNode, length: int, step: int, columns: tuple, schema: pa.Schema, align: str = "start"
    ):
        props = Properties(start_edge_only=True, grouping=input.props.grouping)
        super().__init__((input,), schema, props, length=length, step=step, columns=tuple(columns), align=align)

    def make(self) -> Operator:
        return WindowRowsOp(self.length, self.step, self.columns, self.align)


class Trigger(PlanNode):
    """When a changing aggregate result is materialised per key (OctoSQL's TRIGGER)."""

    label = "Trigger"

    def __init__(self, input: PlanNode, spec, keys: tuple, event_time, count_field, has_clock: bool = True):
        schema = pa.schema([f for f in input.schema if f.name != count_field])
        # without rules each key fires once, at end of input; over an aggregate of start edges a key's value
        # never leaves, so nothing materialised is ever retracted: start edges only
        in_props = getattr(input, "in_props", None)
        once = spec == TriggerSpec() and count_field is None and in_props is not None and in_props.start_edge_only
        super().__init__(
            (input,),
            schema,
            input.props.but(start_edge_only=True) if once else input.props,
            spec=spec,
            in_schema=input.schema,
            keys=keys,
            event_time=event_time,
            count_field=count_field,
            has_clock=has_clock,
        )

    def make(self) -> Operator:
        return TriggerOp(
            self.spec, self.in_schema, self.keys, self.event_time, self.count_field, has_clock=self.has_clock
        )


class FinalValues(PlanNode):
    """A grouped aggregate over start edges and the trigger without rules after it, as one operator that
    skips the per-tick changes nobody reads (``tidal.ops.trigger.FinalValuesOp``)."""

    label = "Aggregate"

    def __init__(self, aggregate: PlanNode, trigger: Trigger):
        super().__init__(
            aggregate.inputs,
            trigger.schema,
            trigger.props,
            aggregate=aggregate,
            trigger=trigger,
            partitioning=aggregate.partitioning,
        )

    def explain_inputs(self):
        from .aggregate import Absorbed

        aggregate = Absorbed(self.aggregate.with_inputs(self.inputs))
        return (Absorbed(self.trigger.but(inputs=(aggregate,))),)

    def make(self) -> Operator:
        return FinalValuesOp(self.aggregate.with_inputs(self.inputs).make(), self.trigger.make())


class AdjustedTime(PlanNode):
    """The event-time column set from each event's (adjusted) start time."""

    label = "AdjustedTime"

    def __init__(self, input: PlanNode, column: str):
        super().__init__((input,), input.schema, input.props, column=column)

    def make(self) -> Operator:
        return watermark.TimeColumnFromSyncOp(self.column)


class TopK(PlanNode):
    """ORDER BY ... LIMIT/OFFSET of a changing result: the window of every snapshot, over the whole result."""

    label = "TopK"

    def __init__(self, input: PlanNode, order: list, limit, offset):
        super().__init__(
            (input,),
            input.schema,
            input.props.but(grouping=()),
            order=order,
            limit=limit,
            offset=offset,
            partitioning=((),),
        )

    def make(self) -> Operator:
        starts_only = self.props.start_edge_only
        return TopKOp(self.schema, self.order, self.limit, self.offset, starts_only)


class WindowFunctions(PlanNode):
    """SQL window functions (``... OVER (...)``): each snapshot's rows with one column per call."""

    label = "WindowFunctions"

    def __init__(self, input: PlanNode, calls: tuple, types: tuple, at_end: bool = False):
        fields = list(input.schema) + [pa.field(c.output, t) for c, t in zip(calls, types, strict=True)]
        # rows are retracted and re-emitted as their ranks change, and every partition meets in one place;
        # computed once at end of input (``at_end``), the rows are start edges
        props = Properties(start_edge_only=at_end)
        super().__init__((input,), pa.schema(fields), props, calls=tuple(calls), at_end=at_end, partitioning=((),))

    def make(self) -> Operator:
        return WindowFunctionsOp(self.inputs[0].schema, list(self.calls), self.schema, self.at_end)

    def describe(self) -> str:
        return "; ".join(c.describe() for c in self.calls) + ("; computed once at end of input" if self.at_end else "")


class RowNumber(PlanNode):
    """ROW_NUMBER() OVER (PARTITION BY ... ORDER BY ...) up to ``limit``: a Top-N per partition of every
    snapshot, each row with its number in the column ``number``."""

    label = "RowNumber"

    def __init__(
        self, input: PlanNode, partition: list, order: list, limit: int | None, number: str, at_end: bool = False
    ):
        schema = input.schema.append(pa.field(number, pa.int64()))
        # a row is retracted when another overtakes it: start edges only when numbered once, at end of input
        super().__init__(
            (input,),
            schema,
            Properties(start_edge_only=at_end),
            partition=tuple(partition),
            order=tuple(order),
            limit=limit,
            number=number,
            at_end=at_end,
            partitioning=(tuple(partition),),
        )

    def make(self) -> Operator:
        partition, order, starts_only = list(self.partition), list(self.order), self.inputs[0].props.start_edge_only
        return RowNumberOp(self.inputs[0].schema, partition, order, self.limit, self.number, starts_only, self.at_end)


class WatermarkTap(PlanNode):
    """Reads a sort's punctuations into run statistics (the watermark shown while a query runs)."""

    label = "WatermarkTap"

    def __init__(self, input: PlanNode, stats):
        super().__init__((input,), input.schema, input.props, stats=stats)

    def make(self) -> Operator:
        return watermark.WatermarkTap(self.stats)
