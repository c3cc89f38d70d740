"""A grouped aggregate over start edges whose only reader is a trigger without rules runs as one operator
that computes the final values only (``tidal.ops.trigger.FinalValuesOp``): the SQL translator's plan for
a GROUP BY over rows in event time without a TRIGGER clause. Same output, no change per input tick."""

from __future__ import annotations

from ...ops.aggregate.functions import ORDER_SENSITIVE
from ...ops.trigger import TriggerSpec
from ..node import PlanNode
from ..nodes.aggregate import Aggregate
from ..nodes.relational import FinalValues, Trigger

# results that may depend on the rows' times
ORDERED_AGGREGATES = (*ORDER_SENSITIVE, "udf")


def final_values(node: PlanNode, consumers: dict[int, int]) -> PlanNode:
    agg = node.inputs[0] if isinstance(node, Trigger) else None
    if (
        isinstance(agg, Aggregate)
        and node.spec == TriggerSpec()
        and node.count_field is None
        and consumers.get(id(agg), 0) == 1
        and agg.in_props.start_edge_only
        and agg.variant is None
        and not any(fn.kind in ORDERED_AGGREGATES for _, fn in agg.specs)
    ):
        return FinalValues(agg, node)
    return node
