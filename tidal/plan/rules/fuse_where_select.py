"""A where feeding only a plain select runs in the same pass (``tidal.ops.selection``)."""

from __future__ import annotations

from ..node import PlanNode
from ..nodes.selection import Select, SqlFilter, SqlProject, Where, WhereSelect

WHERES = (Where, SqlFilter)
SELECTS = (Select, SqlProject)


def fuse_where_select(node: PlanNode, consumers: dict[int, int]) -> PlanNode:
    where = node.inputs[0] if isinstance(node, SELECTS) else None
    if isinstance(where, WHERES) and consumers.get(id(where), 0) == 1:
        return WhereSelect(where, node)
    return node
