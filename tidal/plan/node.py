"""The base of every logical plan node, and ``explain``.

A plan is a DAG of immutable nodes, one class per logical operator (``tidal.plan.nodes``).
A node knows its inputs, its payload schema (``None`` when only known at run time), its
stream properties, what a distributed backend must do with its inputs' placement
(``partitioning``), and how to make its physical operator (``make``). Nodes never change once
built: rewrites (``tidal.plan.rules``) return new nodes, and the runtime builds operators from
the rewritten plan. A node reached twice is one node: its operator is built once (a multicast).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from functools import cached_property
from typing import ClassVar

import pyarrow as pa

from ..ops.base import Consumer, Operator
from .properties import Properties


class PlanNode:
    """One operator of a logical plan (see the module docstring)."""

    label: ClassVar[str] = "node"

    def __init__(self, inputs: Sequence[PlanNode], schema: pa.Schema | None, props: Properties, **fields):
        self._set(inputs=tuple(inputs), schema=schema, props=props, **fields)

    def _set(self, **fields) -> None:
        for name, value in fields.items():
            object.__setattr__(self, name, value)

    def __setattr__(self, name, value):
        raise AttributeError(f"plan nodes are immutable: {type(self).__name__}.{name} cannot be set")

    # -- what backends ask of a node ---------------------------------------------------------
    # None for a stateless node (it runs on any partition of its input); otherwise one entry per
    # input: the payload fields that input must be hash-partitioned by so that equal keys meet, or
    # () when the whole input must be in one partition. Stateful nodes set it when built.
    partitioning: tuple[tuple[str, ...], ...] | None = None

    def make(self) -> Operator:
        raise NotImplementedError

    def ports(self, op: Operator) -> list[Consumer]:
        """Where each input connects on the physical operator."""
        return list(getattr(op, "ports", [op] * len(self.inputs)))

    # -- describing ------------------------------------------------------------------------
    @cached_property
    def probe(self) -> Operator:
        """An operator built only to be described (its variant is chosen from the same facts)."""
        return self.make()

    def describe(self) -> str:
        return getattr(self.probe, "variant", "")

    def describe_plan(self) -> str:
        """``describe()`` without what the last run measured: what a plan's fingerprint is made of."""
        return self.describe()

    def explain_inputs(self) -> tuple[PlanNode, ...]:
        """What ``explain`` shows below this node: its inputs, or the nodes it absorbed by fusion."""
        return self.inputs

    # -- rewriting -------------------------------------------------------------------------
    def with_inputs(self, inputs: Sequence[PlanNode | None]) -> PlanNode:
        """The same node over other inputs (``None`` inputs: detached, to ship to a Spark task)."""
        return self.but(inputs=tuple(inputs))

    def but(self, **fields) -> PlanNode:
        """A copy with some fields replaced (``props=`` to declare what a source guarantees, say)."""
        clone = copy.copy(self)
        for name in _derived(type(self)):  # derived from the old fields: derived again when asked
            clone.__dict__.pop(name, None)
        clone.__dict__.update(fields)
        return clone

    def __getstate__(self):
        # derived values (the probe operator, ...) need not pickle: a Spark task derives its own
        return {k: v for k, v in self.__dict__.items() if k not in _derived(type(self))}

    def __setstate__(self, state):
        self.__dict__.update(state)


def _derived(cls: type) -> set[str]:
    """The names of ``cls``'s cached properties: values derived from a node's fields."""
    return {name for klass in cls.__mro__ for name, v in vars(klass).items() if isinstance(v, cached_property)}


def walk(roots: Sequence[PlanNode]):
    """Every node reachable from ``roots``, each once, inputs after their consumers."""
    seen: set[int] = set()
    stack = list(reversed(roots))
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        yield node
        stack.extend(reversed(node.inputs))


def explain(root: PlanNode, measured: bool = True) -> str:
    """The plan under ``root``: each node, its variant and detail, properties and payload fields (and,
    with ``measured``, what nodes report of their last run, such as a transaction node's chains)."""
    lines: list[str] = []
    seen: dict[int, int] = {}
    stack: list[tuple[PlanNode, int]] = [(root, 0)]  # a stack, not a recursive closure (a cycle)
    while stack:
        node, depth = stack.pop()
        pad = "  " * depth + ("└─ " if depth else "")
        if id(node) in seen:
            lines.append(f"{pad}{node.label} (shared, see #{seen[id(node)]})")
            continue
        seen[id(node)] = len(seen) + 1
        schema = (
            ", ".join(f"{f.name}: {f.type}" for f in node.schema) if node.schema is not None else "known at run time"
        )
        detail = node.describe() if measured else node.describe_plan()
        lines.append(f"{pad}#{seen[id(node)]} {node.label} [{detail}]")
        lines.append(f"{'  ' * depth}{'   ' if depth else ''}   properties: {node.props.describe()}; payload: {schema}")
        stack.extend((child, depth + 1) for child in reversed(node.explain_inputs()))
    return "\n".join(lines)
