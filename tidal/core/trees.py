"""Walking trees without recursion: plans and expressions built from SQL can be deeper than Python's
recursion limit."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

T = TypeVar("T")


def tree_depth(root: T, children: Callable[[T], Iterable[T]]) -> int:
    """The number of levels of the tree under ``root`` (``children(node)`` gives a node's children)."""
    deepest, todo = 0, [(root, 1)]
    while todo:
        node, d = todo.pop()
        deepest = max(deepest, d)
        todo.extend((child, d + 1) for child in children(node))
    return deepest
