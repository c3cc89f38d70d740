"""Plan rewrites: each rule is a function ``rule(node, consumers) -> node`` in its own module.

``optimize`` applies ``RULES`` in order, each over the whole plan, bottom-up: a rule sees a
node whose inputs are already rewritten and returns it or a replacement with the same meaning
(``consumers`` counts, per node id, the nodes that read it in the plan being rewritten, so a
rule can fuse a node into its only consumer). Nodes reached twice stay shared.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..node import PlanNode, walk
from .filter_below_window import filter_below_window
from .final_values import final_values
from .fuse_where_aggregate import fuse_where_aggregate
from .fuse_where_select import fuse_where_select
from .fuse_window_aggregate import fuse_window_aggregate

Rule = Callable[[PlanNode, dict[int, int]], PlanNode]

RULES: tuple[Rule, ...] = (
    filter_below_window,
    fuse_window_aggregate,
    final_values,  # before the where fusions: it takes an aggregate under a trigger whole
    fuse_where_aggregate,
    fuse_where_select,
)
# a distributed backend fuses by itself (it cuts the plan at stateful nodes); it takes only the rewrites of meaning
PORTABLE_RULES: tuple[Rule, ...] = (filter_below_window,)


def consumer_counts(roots: Sequence[PlanNode]) -> dict[int, int]:
    counts: dict[int, int] = {}
    for node in walk(roots):
        for child in node.inputs:
            if child is not None:
                counts[id(child)] = counts.get(id(child), 0) + 1
    for root in roots:
        counts[id(root)] = counts.get(id(root), 0) + 1  # a sink reads each root
    return counts


def apply_rule(roots: Sequence[PlanNode], rule: Rule) -> list[PlanNode]:
    consumers = consumer_counts(roots)
    done: dict[int, PlanNode] = {}
    return [_visit(r, rule, consumers, done) for r in roots]


# a module function, not a closure: a recursive closure is a reference cycle that keeps every
# node it saw alive until the next garbage collection
def _visit(node: PlanNode, rule: Rule, consumers: dict[int, int], done: dict[int, PlanNode]) -> PlanNode:
    if id(node) in done:
        return done[id(node)]
    inputs = tuple(_visit(c, rule, consumers, done) for c in node.inputs)
    same = all(a is b for a, b in zip(inputs, node.inputs, strict=True))
    current = node if same else node.with_inputs(inputs)
    consumers[id(current)] = consumers.get(id(node), 0)
    out = rule(current, consumers)
    consumers[id(out)] = consumers.get(id(node), 0)
    done[id(node)] = out
    return out


def optimize(roots: Sequence[PlanNode], rules: Sequence[Rule] = RULES) -> list[PlanNode]:
    """``roots`` rewritten by each rule in turn (the same nodes where no rule applies)."""
    out = list(roots)
    for rule in rules:
        out = apply_rule(out, rule)
    return out
