"""Logical plan nodes, stream properties, and the runtime that executes a plan.

A :class:`PlanNode` knows its inputs, its payload schema (``None`` when only known at run
time), its stream properties, and how to make its physical operator. Executing a plan
builds one physical operator per node (a node consumed twice is built once: that is a
multicast), connects them, and drives the sources in sync-time order: the source whose
next message is earliest goes first, so two-input operators buffer little.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace

import pyarrow as pa

from ..ops.base import Consumer, Operator, PassThrough


@dataclass(frozen=True)
class Properties:
    """Compile-time facts about a stream that let operators pick faster variants.

    * ``constant_duration``: every event is an interval of exactly this length.
    * ``constant_hop``: ``(hop, offset)``: every start lies on this grid (windows).
    * ``start_edge_only``: every event is a start edge (no ends ever come).
    * ``grouping``: the grouping key fields, ``()`` when ungrouped.
    * ``sorted_by``: payload fields the events are sorted by within each sync time (Trill's
      snapshot-sorted streams): at any one sync time, events come in non-decreasing
      lexicographic order of these fields, nulls last. Operators that keep the fields and
      neither move nor add events keep it; everything else drops it.
    """

    constant_duration: int | None = None
    constant_hop: tuple[int, int] | None = None
    start_edge_only: bool = False
    grouping: tuple[str, ...] = ()
    sorted_by: tuple[str, ...] = ()

    def but(self, **changes) -> Properties:
        return replace(self, **changes)

    def describe(self) -> str:
        parts = []
        if self.constant_duration is not None:
            parts.append(f"constant duration {self.constant_duration}")
        if self.constant_hop is not None:
            parts.append(f"constant hop {self.constant_hop[0]} (offset {self.constant_hop[1]})")
        if self.start_edge_only:
            parts.append("start edges only")
        if self.grouping:
            parts.append(f"grouped by {', '.join(self.grouping)}")
        if self.sorted_by:
            parts.append(f"sorted by {', '.join(self.sorted_by)} within each sync time")
        return "; ".join(parts) or "general"


class PlanNode:
    """One operator of a logical plan.

    ``partitioning`` tells a distributed backend what a node needs of its inputs' placement:
    ``None`` for a stateless node (runs on any partition of its input); otherwise one entry per
    input, each a tuple of payload field names the input must be hash-partitioned by so that
    equal keys meet, or ``()`` when the whole input must be in one partition.
    """

    label = "node"
    partitioning: tuple[tuple[str, ...], ...] | None = None

    def __init__(self, inputs: tuple[PlanNode, ...], schema: pa.Schema | None, props: Properties):
        self.inputs = inputs
        self.schema = schema
        self.props = props

    def make(self) -> Operator:
        raise NotImplementedError

    def describe(self) -> str:
        return ""

    def ports(self, op: Operator) -> list[Consumer]:
        """Where each input connects on the physical operator."""
        return list(getattr(op, "ports", [op] * len(self.inputs)))

    def fusion(self) -> tuple[Callable[[], Operator], tuple[PlanNode, ...]] | None:
        """``(factory, inputs)`` when this node's operator also does its input node's work and reads that
        node's inputs instead (the input node is then built only if something else consumes it)."""
        return None


class OperatorNode(PlanNode):
    """A node whose physical operator comes from a factory (most operators)."""

    def __init__(self, label: str, inputs, schema, props, factory: Callable[[], Operator], detail: str = ""):
        super().__init__(tuple(inputs), schema, props)
        self.label = label
        self.factory = factory
        self.detail = detail
        self._probe: Operator | None = None
        # fuse(input node) -> a factory of an operator doing both nodes' work, or None
        self.fuse: Callable[[PlanNode], Callable[[], Operator] | None] | None = None

    def make(self) -> Operator:
        return self.factory()

    def fusion(self) -> tuple[Callable[[], Operator], tuple[PlanNode, ...]] | None:
        if self.fuse is None or len(self.inputs) != 1 or self.inputs[0] is None:
            return None
        factory = self.fuse(self.inputs[0])
        return None if factory is None else (factory, self.inputs[0].inputs)

    def describe(self) -> str:
        if self._probe is None:
            fused = self.fusion()
            self._probe = fused[0]() if fused is not None else self.factory()
        variant = getattr(self._probe, "variant", "")
        return ", ".join(x for x in (variant, self.detail) if x)


class SourceNode(PlanNode):
    label = "Ingress"

    def __init__(self, open_messages: Callable[[], Iterator], schema, props, detail: str):
        super().__init__((), schema, props)
        self.open_messages = open_messages
        self.detail = detail

    def make(self) -> Operator:
        return PassThrough()

    def describe(self) -> str:
        return self.detail


def explain(root: PlanNode) -> str:
    lines: list[str] = []
    seen: dict[int, int] = {}

    def visit(node: PlanNode, depth: int) -> None:
        pad = "  " * depth + ("└─ " if depth else "")
        if id(node) in seen:
            lines.append(f"{pad}{node.label} (shared, see #{seen[id(node)]})")
            return
        seen[id(node)] = len(seen) + 1
        schema = (
            ", ".join(f"{f.name}: {f.type}" for f in node.schema) if node.schema is not None else "known at run time"
        )
        lines.append(f"{pad}#{seen[id(node)]} {node.label} [{node.describe()}]")
        lines.append(f"{'  ' * depth}{'   ' if depth else ''}   properties: {node.props.describe()}; payload: {schema}")
        for child in node.inputs:
            visit(child, depth + 1)

    visit(root, 0)
    return "\n".join(lines)
