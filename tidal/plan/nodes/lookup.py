"""The lookup join node: a stream probing a table through a connector (``tidal.ops.lookup``)."""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa

from ...core.errors import PlanError
from ...ops.base import Operator
from ...ops.lookup import LookupJoinOp
from ..node import PlanNode


class LookupJoin(PlanNode):
    """Each probe event with the table rows of its key, with the probe's lifetime.

    ``open_lookup()`` returns ``(match, close)`` for one run (a fresh connection and cache);
    ``output`` lists (output column, ``"probe"``/``"table"``, column) in the output's order.
    """

    label = "LookupJoin"

    def __init__(
        self,
        probe: PlanNode,
        open_lookup: Callable[[], tuple[Callable, Callable]],
        probe_keys: list[str],
        output: list[tuple[str, str, str]],
        schema: pa.Schema,
        detail: str,
    ):
        if not (probe.props.start_edge_only or probe.props.constant_duration is not None):
            raise PlanError("a lookup join probes with start edges or intervals only (end edges would need state)")
        props = probe.props.but(grouping=(), sorted_by=())
        super().__init__(
            (probe,), schema, props, open_lookup=open_lookup, probe_keys=list(probe_keys), output=list(output),
            detail=detail,
        )  # fmt: skip

    def make(self) -> Operator:
        match, close = self.open_lookup()
        return LookupJoinOp(match, self.probe_keys, self.output, close)

    def describe(self) -> str:
        return f"{self.detail}; keys {', '.join(self.probe_keys)}"
