"""Sources: where events enter a plan."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from ...ops.base import Operator, PassThrough
from ..node import PlanNode


class Source(PlanNode):
    """Events read by ``open_messages()`` (a fresh iterator of messages on every run)."""

    label = "Ingress"

    def __init__(self, open_messages: Callable[[], Iterator], schema, props, detail: str):
        super().__init__((), schema, props, open_messages=open_messages, detail=detail)

    def make(self) -> Operator:
        return PassThrough()

    def describe(self) -> str:
        return self.detail
