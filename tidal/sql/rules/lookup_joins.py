"""Rule: an inner join of an event-time stream with a relational table becomes a lookup join."""

from __future__ import annotations

import math
import os
from dataclasses import replace

from ..logical import EventTime, Join, Node, Project, Scan, Session, Tumble
from ..logical.exprs import _col
from .walk import bottom_up


def _timed(node: Node) -> bool:
    return isinstance(node, EventTime | Tumble | Session) or any(_timed(i) for i in node.inputs)


def _file_bytes(node: Node) -> float:
    """The size of the files a subtree reads (unknown, e.g. standard input: infinite)."""
    if isinstance(node, Scan):
        if node.rows is not None:
            return node.rows.nbytes
        return os.path.getsize(node.path) if os.path.isfile(node.path) else math.inf
    return sum((_file_bytes(i) for i in node.inputs), 0.0)


def lookup_joins(root: Node) -> Node:
    """An inner join of an event-time stream with a relational input (a table read whole, alive
    from time 0) becomes a lookup join: the table is indexed once and the stream's rows probe it
    without being stored. Of two relational inputs, the one read from fewer bytes is the table.
    The table goes on the left (the engine builds its left input); a projection puts the columns
    back in SQL order."""

    def fn(node):
        if not isinstance(node, Join) or node.kind != "inner" or node.build_left or not node.left_keys:
            return node
        left_timed, right_timed = _timed(node.left), _timed(node.right)
        if not left_timed and not right_timed:
            left_timed = _file_bytes(node.left) > _file_bytes(node.right)
            right_timed = not left_timed
        if not left_timed and right_timed:
            return replace(node, build_left=True)
        if left_timed and not right_timed:
            swapped = Join(node.right, node.left, "inner", node.right_keys, node.left_keys, build_left=True)
            return Project(swapped, tuple((n, _col(n)) for n in node.names), scope=node.scope, types=node.types)
        return node

    return bottom_up(root, fn)
