"""A where feeding only an aggregate (through a select of renamed fields, as SQL plans it) runs as one
loop that tests and accumulates each row (``tidal.ops.filter_aggregate``)."""

from __future__ import annotations

from ...expr.kernels import record_fields
from ...expr.nodes import Col
from ...ops.filter_aggregate import foldable
from ..node import PlanNode
from ..nodes.aggregate import Aggregate, WhereAggregate
from .fuse_where_select import SELECTS, WHERES


def _renames(select) -> dict[str, str] | None:
    """A select's output field -> its input field, when every output field is an input field; else None."""
    op = select.probe
    projection = op.projection
    if projection.mode != "columnar" or projection.node is None:
        return None
    out = {}
    for name, node in record_fields(projection.node):
        if not isinstance(node, Col):
            return None
        out[name] = node.name
    return out


def fuse_where_aggregate(node: PlanNode, consumers: dict[int, int]) -> PlanNode:
    if not isinstance(node, Aggregate) or node.engine == "python":
        return node
    child, select = node.inputs[0], None
    if isinstance(child, SELECTS) and consumers.get(id(child), 0) == 1:
        select, child = child, child.inputs[0]
    if not isinstance(child, WHERES) or consumers.get(id(child), 0) != 1:
        return node
    renames = {} if select is None else _renames(select)
    if renames is None or not foldable(node.probe, child.probe.predicate, renames, child.schema):
        return node
    return WhereAggregate(child, select, node, renames)
