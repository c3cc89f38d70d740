"""Sort-as-needed: the Impatience sort, its delay bands and its late events (``tidal.ops.reorder``)."""

from __future__ import annotations

from ...ops.base import Operator
from ...ops.reorder import BandTap, DisorderPolicy, DisorderStats, LateTap, ReorderOp
from ..node import PlanNode, walk
from .source import Source


class ImpatienceSort(PlanNode):
    """The sort: arrival order in, one sorted stream per delay band out.

    ``stats`` is filled by each run (counts of late, dropped and adjusted events): the one mutable
    part of a plan, since users ask a stream for them after running it."""

    label = "ImpatienceSort"

    def __init__(self, child: PlanNode, policy: DisorderPolicy):
        super().__init__(
            (child,),
            child.schema,
            child.props,
            partitioning=((),),
            policy=policy,
            stats=DisorderStats(),
            # taken now: a plan fragment run elsewhere (a Spark task) has its inputs cut off
            hop=child.props.constant_hop,
            row_word="row" if isinstance(child, Source) else "event (counting those reaching the sort)",
        )

    def make(self) -> Operator:
        return ReorderOp(self.policy, self.stats, hop=self.hop, row_word=self.row_word)

    def describe(self) -> str:
        return "sorts here; " + self.policy.describe()


def sorts_in(node: PlanNode) -> list[ImpatienceSort]:
    """The sorts upstream of a plan node (each once)."""
    return [n for n in walk([node]) if isinstance(n, ImpatienceSort)]


class DelayBand(PlanNode):
    """One delay band of a multi-latency sort: the events late for latency j-1 but not for j."""

    label = "DelayBand"

    def __init__(self, sort: ImpatienceSort, band: int):
        super().__init__((sort,), sort.schema, sort.props, band=band, latencies=sort.policy.latencies)

    def make(self) -> Operator:
        return BandTap(self.band)

    def describe(self) -> str:
        lats = self.latencies
        low = "0" if self.band == 0 else str(lats[self.band - 1])
        return f"band {self.band}: delay in ({low}, {lats[self.band]}] ticks past the punctuations"


class LateEvents(PlanNode):
    """The late events of a sort, with their original times, sorted when the input completes."""

    label = "LateEvents"

    def __init__(self, sort: ImpatienceSort):
        super().__init__((sort,), sort.inputs[0].schema, sort.inputs[0].props)

    def make(self) -> Operator:
        return LateTap()

    def describe(self) -> str:
        return "late events (original times), released when the input completes"
