"""One class per logical operator, grouped by family like ``tidal.ops``."""

from .aggregate import Aggregate, FusedWindowAggregate, Group, Ungroup
from .combine import Join, Union
from .disorder import DelayBand, ImpatienceSort, LateEvents, sorts_in
from .lifetime import (
    AlterLifetime,
    BeforeSort,
    Chop,
    ClipDuration,
    ExtendLifetime,
    HoppingWindow,
    PointAtEnd,
    QuantizeLifetime,
    ShiftLifetime,
    TumblingWindow,
    window,
)
from .pattern import Detect
from .selection import Multicast, NamedSelect, Select, SelectMany, SqlFilter, SqlProject, Where, WhereSelect
from .session import Distinct, SessionWindow, Stitch
from .source import Source

__all__ = [
    "Aggregate", "AlterLifetime", "BeforeSort", "Chop", "ClipDuration", "DelayBand", "Distinct", "ExtendLifetime",
    "FusedWindowAggregate", "Group", "HoppingWindow", "ImpatienceSort", "Join", "LateEvents", "Multicast",
    "NamedSelect", "PointAtEnd", "QuantizeLifetime", "Select", "SelectMany", "SessionWindow", "ShiftLifetime",
    "Source", "SqlFilter", "SqlProject", "Stitch", "TumblingWindow", "Ungroup", "Union", "Where", "WhereSelect",
    "sorts_in", "window",
    "Detect",
]  # fmt: skip
