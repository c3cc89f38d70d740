"""Stream properties: compile-time facts that let operators pick faster physical variants."""

from __future__ import annotations

from dataclasses import dataclass, replace


@dataclass(frozen=True)
class Properties:
    """Compile-time facts about a stream that let operators pick faster variants.

    * ``constant_duration``: every event is an interval of exactly this length.
    * ``constant_hop``: ``(hop, offset)``: every start lies on this grid (windows).
    * ``start_edge_only``: every event is a start edge (no ends ever come).
    * ``grouping``: the grouping key fields, ``()`` when ungrouped.
    * ``sorted_by``: payload fields the events are sorted by within each sync time (Trill's
      snapshot-sorted streams): at any one sync time, events come in non-decreasing
      lexicographic order of these fields, nulls last. Operators that keep the fields and
      neither move nor add events keep it; everything else drops it.
    """

    constant_duration: int | None = None
    constant_hop: tuple[int, int] | None = None
    start_edge_only: bool = False
    grouping: tuple[str, ...] = ()
    sorted_by: tuple[str, ...] = ()

    def but(self, **changes) -> Properties:
        return replace(self, **changes)

    def describe(self) -> str:
        parts = []
        if self.constant_duration is not None:
            parts.append(f"constant duration {self.constant_duration}")
        if self.constant_hop is not None:
            parts.append(f"constant hop {self.constant_hop[0]} (offset {self.constant_hop[1]})")
        if self.start_edge_only:
            parts.append("start edges only")
        if self.grouping:
            parts.append(f"grouped by {', '.join(self.grouping)}")
        if self.sorted_by:
            parts.append(f"sorted by {', '.join(self.sorted_by)} within each sync time")
        return "; ".join(parts) or "general"
