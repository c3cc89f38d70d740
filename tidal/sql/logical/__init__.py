"""The logical plan: immutable relational nodes built from a sqlglot tree.

Modules: :mod:`.nodes` (the nodes), :mod:`.builder` with :mod:`.from_items` and :mod:`.select_list`
(building them from sqlglot), :mod:`.types` (type inference), :mod:`.exprs` (expression helpers).

Each node lists its output columns as physical names (unique within the node, what the
batches carry) and a scope of ``(qualifier, name)`` pairs that SQL names resolve against.
Expressions in nodes are *bound*: their columns name physical columns of the node's input.

Time: a :class:`Scan` reads rows; :class:`EventTime` (from a watermark generator) says which
column is the event time and how the watermark is computed; :class:`Tumble` and
:class:`Session` add ``window_start``/``window_end`` and make the window end the event time. Rows whose event
time is not declared are relational: they all exist from time 0.
"""

from .builder import Builder
from .exprs import TVF_PARAMETERS, column_labels
from .match import MatchRecognize
from .nodes import (
    AggCall,
    Aggregate,
    Binary,
    EventTime,
    Filter,
    Join,
    Limit,
    Node,
    Project,
    Query,
    SameColumns,
    Scan,
    Session,
    Tumble,
    Unary,
    UnionAll,
    WindowColumns,
    WindowFunctions,
    event_time_field,
)
from .types import sql_type_name, user_message

__all__ = [
    "TVF_PARAMETERS",
    "AggCall",
    "Aggregate",
    "Binary",
    "Builder",
    "EventTime",
    "Filter",
    "Join",
    "Limit",
    "MatchRecognize",
    "Node",
    "Project",
    "Query",
    "SameColumns",
    "Scan",
    "Session",
    "Tumble",
    "Unary",
    "UnionAll",
    "WindowColumns",
    "WindowFunctions",
    "column_labels",
    "event_time_field",
    "sql_type_name",
    "user_message",
]
