"""Snapshot aggregates and grouping (``tidal.ops.aggregate``, ``tidal.ops.grouping``)."""

from __future__ import annotations

from functools import cached_property

import pyarrow as pa

from ...ops.aggregate import MODE_WINDOW, FusedWindowAggregateOp, SnapshotAggregateOp, choose_mode
from ...ops.aggregate.functions import result_type
from ...ops.aggregate.picks import pair_type
from ...ops.base import Operator
from ...ops.grouping import GroupOp, UngroupOp
from ..node import PlanNode
from ..properties import Properties


class Aggregate(PlanNode):
    """At every instant, one row of aggregates over the events alive (per group and key fields).

    ``variant`` forces a physical variant (``None``: from the input's properties; ``"fused"``: the
    window variant fused with the window before it, which ``tidal.plan.rules`` applies).
    ``final_only``: the consumer reads the result only at end of input (see the operator's module)."""

    label = "Aggregate"

    def __init__(
        self, input: PlanNode, specs, key_fields: tuple[str, ...] = (), variant=None, engine=None, final_only=False
    ):
        props = input.props
        force = None if variant == "fused" else variant
        probe = SnapshotAggregateOp(list(specs), input.schema, props, key_fields, force=force, engine=engine)
        window = choose_mode(props, None if variant == "fused" else variant) == MODE_WINDOW
        out_props = Properties(
            constant_duration=props.constant_duration if window else None,
            constant_hop=props.constant_hop if window else None,
            grouping=props.grouping,
        )
        schema = _aggregate_schema(specs, input.schema, key_fields)
        super().__init__(
            (input,),
            schema,
            out_props,
            specs=tuple(specs),
            key_fields=tuple(key_fields),
            variant=variant,
            engine=engine,
            final_only=final_only,
            in_schema=input.schema,
            in_props=props,
            partitioning=(tuple(key_fields) or props.grouping,),
        )
        self.__dict__["probe"] = probe  # built first: it validates the aggregates

    @cached_property
    def window_fusable(self) -> bool:
        """Whether this aggregate, built for a window's output, can run fused with the window."""
        if self.engine == "python" or self.variant not in (None, "fused") or self.in_schema is None:
            return False
        op = SnapshotAggregateOp(list(self.specs), self.in_schema, self.in_props, self.key_fields)
        return FusedWindowAggregateOp.fusable(op)

    @property
    def force(self) -> str | None:
        """The variant the operator must use; ``"fused"`` is the window variant, chosen by the rules."""
        return None if self.variant == "fused" else self.variant

    def make(self) -> Operator:
        return SnapshotAggregateOp(
            list(self.specs),
            self.in_schema,
            self.in_props,
            self.key_fields,
            force=self.force,
            engine=self.engine,
            final_only=self.final_only,
        )


class FusedWindowAggregate(PlanNode):
    """A window and the aggregate right after it as one operator (one pass; ``tidal.ops.aggregate.fused``)."""

    label = "Aggregate"

    def __init__(self, window, aggregate: Aggregate):
        super().__init__(
            window.inputs,
            aggregate.schema,
            aggregate.props,
            window=window,
            aggregate=aggregate,
            partitioning=aggregate.partitioning,
        )

    def explain_inputs(self):
        return (Absorbed(self.window.with_inputs(self.inputs)),)

    def make(self) -> Operator:
        a = self.aggregate
        return FusedWindowAggregateOp(list(a.specs), a.in_schema, a.in_props, a.key_fields, self.window.window)


class Absorbed(PlanNode):
    """For ``explain``: a node whose work the node above it does (it builds no operator of its own)."""

    def __init__(self, node: PlanNode):
        super().__init__(node.inputs, node.schema, node.props, node=node)

    @property
    def label(self) -> str:
        return self.node.label

    def describe(self) -> str:
        return f"{self.node.describe()}; done by the operator above"


def fusable(window, aggregate: Aggregate) -> bool:
    """Whether ``aggregate`` (right after the window node ``window``) can run fused with it."""
    size, hop, _ = window.window
    if window.align != "start":  # the fused engines snap starts down
        return False
    return not (size > hop and size % hop) and aggregate.window_fusable


class Group(PlanNode):
    """Start of a group_apply: each event's group key becomes ``fields`` (``drop``: fields added for the key)."""

    label = "Group"

    def __init__(self, input: PlanNode, fields: tuple[str, ...], drop: tuple[str, ...], grouping: tuple[str, ...]):
        schema = input.schema
        inner_schema = None if schema is None else pa.schema([f for f in schema if f.name not in drop])
        props = input.props.but(grouping=grouping)
        super().__init__(
            (input,), inner_schema, props, fields=tuple(fields), drop=tuple(drop), partitioning=(tuple(fields),)
        )

    def make(self) -> Operator:
        return GroupOp(self.fields, self.drop)


class Ungroup(PlanNode):
    """End of a group_apply: the key fields back into each payload (or ``result(key, payload)``)."""

    label = "Ungroup"

    def __init__(self, input: PlanNode, key_count: int, result, schema, outer: tuple[str, ...]):
        props = input.props.but(grouping=outer, sorted_by=input.props.sorted_by if result is None else ())
        super().__init__((input,), schema, props, key_count=key_count, result=result)

    def make(self) -> Operator:
        return UngroupOp(self.key_count, self.result)


def _aggregate_schema(specs, schema: pa.Schema | None, key_fields) -> pa.Schema | None:
    if schema is None:
        return None
    fields = [schema.field(k) for k in key_fields]
    for name, fn in specs:
        arg = schema.field(fn.arg).type if isinstance(fn.arg, str) else None
        arg = pair_type(fn.arg, schema) if isinstance(fn.arg, tuple) else arg  # arg_min/arg_max's (by, x)
        t = result_type(fn, arg)
        if t is None:
            return None
        fields.append(pa.field(name, t))
    return pa.schema(fields)


class WhereAggregate(PlanNode):
    """A where (and a select of renamed fields after it) whose only consumer is an aggregate: one compiled
    loop tests each row and accumulates it (``tidal.ops.filter_aggregate``). ``renames``: the aggregate's
    field -> the where's input field."""

    label = "Where+Aggregate"

    def __init__(self, where, select, aggregate: Aggregate, renames: dict[str, str]):
        super().__init__(
            where.inputs,
            aggregate.schema,
            aggregate.props,
            where=where,
            select=select,
            aggregate=aggregate,
            renames=dict(renames),
            partitioning=aggregate.partitioning,
        )

    def make(self) -> Operator:
        from ...ops.filter_aggregate import link

        aggregate = self.aggregate.make()
        link(self.where.make(), None if self.select is None else self.select.make(), aggregate, self.renames)
        return aggregate

    def describe(self) -> str:
        select = "" if self.select is None else f"; select: {self.select.describe()}"
        return (
            f"one loop: the predicate tested and the aggregates accumulated per row, no kept positions; "
            f"where: {self.where.describe()}{select}; aggregate: {self.aggregate.describe()}"
        )
