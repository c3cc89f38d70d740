"""The plan layer: typed, immutable logical plan nodes, their properties, and the rules that rewrite them.

The fluent API (``tidal.stream``) and the SQL translator (``tidal.sql``) build plans; the embedded
runtime (``tidal.stream.query``), ``explain`` and the Spark backend (``tidal.spark``) read them,
dispatching on node types.
"""

from .node import PlanNode, explain, walk
from .properties import Properties
from .rules import PORTABLE_RULES, RULES, optimize

__all__ = ["PORTABLE_RULES", "RULES", "PlanNode", "Properties", "explain", "optimize", "walk"]
