"""Snapshot aggregation: one result row per group per snapshot.

Semantics: at every instant ``T`` and for every group whose snapshot at ``T`` is non-empty,
the output holds exactly one event whose payload is the aggregates over that snapshot (the
group's key fields first, when the operator groups by payload fields). Empty snapshots
produce nothing. Physically a result is a start edge when its snapshot begins and an end
edge when it changes or empties (Trill's output), except after tumbling windows, where each
result is the interval ``[w, w + duration)`` of its window.

The algorithm is Trill's (seed 001 section 5.2.1), compiled with numba and run over whole
batches: per group *aggregate state* (running sums, and sorted multisets for min/max-like
aggregates), a *held* list of the groups touched at the current sync time (cleared, not
rebuilt, when time moves on), and an *endpoint compensation queue* of future interval
ends. The queue's shape comes from stream properties:

==================  ===================================================================
variant (module)    when
==================  ===================================================================
tumbling window     constant hop and constant duration <= hop: no queue; state resets
(``window``)        at each window and each result is an interval
start edges only    nothing ever ends: no queue
(``start_edge``)
constant duration   ends arrive in start order: a FIFO queue
(``fifo``)
general (``heap``)  a binary-heap priority queue
==================  ===================================================================

The variant is chosen once, when the operator is built (``choose_mode``, then the variant's
engine from ``operator.ENGINES``); each compiled variant runs its own sweep kernel.

A result changes only when the snapshot changes; a group touched at an instant whose state
comes out unchanged emits nothing. Aggregates the kernels cannot evaluate (lists, strings,
user-defined functions) run in the same algorithm with Python state objects per group.

Fused with the window before it (only linear aggregates), a window and the aggregate compute
exactly what ``hopping_window(size, hop, offset)`` followed by ``aggregate``/``group_aggregate``
do, for ``size <= hop`` (tumbling windows, or windows with gaps)
and for ``size`` a multiple of ``hop`` (hopping windows of ``k = size / hop`` hops):

* ``size <= hop``: every event starting in ``[w, w + size)`` (``w`` on the grid
  ``offset + k*hop``) belongs to window ``w``; each group with events there gets one result,
  the interval ``[w, w + size)`` carrying the aggregates over them. Events in the gap of a
  window shorter than its hop belong to no window.
* ``size = k * hop``: an event starting in hop slice ``[a, a + hop)`` lives ``[a, a + size)``,
  so at every instant of ``[p, p + hop)`` (``p`` on the grid) the alive events are those of the
  ``k`` slices starting at ``p - (k-1)*hop .. p``; each group with any gets the interval
  ``[p, p + hop)`` carrying the aggregates over them (the same snapshots as the unfused plan's
  start and end edges, as intervals).

End edges carry nothing new (a window fixes lifetimes at the start). Empty snapshots produce
nothing. Results leave once input progress passes their start: an event of a later slice, or a
punctuation (which leaves snapped down to the grid, as after the window operator).

Modules: ``functions`` (the aggregate functions), ``base`` (variant choice, argument columns),
``compiled`` and ``kernels`` (the compiled engines' shared base and numba sweeps), one module per
variant (``start_edge``, ``fifo``, ``heap``, ``window``, ``fused`` with ``fused_kernels``),
``python_state`` (the Python-state engine the variants extend) and ``operator``.
"""

from .base import MODE_FIFO, MODE_HEAP, MODE_NONE, MODE_WINDOW, VARIANTS, ArgumentColumn, choose_mode
from .compiled import CompiledEngine
from .functions import LINEAR, ORDERED, AggregateFunction, UserAggregate, new_state, result_type, user_defined
from .fused import FusedWindowAggregateOp
from .operator import ENGINES, SnapshotAggregateOp
from .python_state import PythonEngine

__all__ = [
    "ENGINES",
    "LINEAR",
    "MODE_FIFO",
    "MODE_HEAP",
    "MODE_NONE",
    "MODE_WINDOW",
    "ORDERED",
    "VARIANTS",
    "AggregateFunction",
    "ArgumentColumn",
    "CompiledEngine",
    "FusedWindowAggregateOp",
    "PythonEngine",
    "SnapshotAggregateOp",
    "UserAggregate",
    "choose_mode",
    "new_state",
    "result_type",
    "user_defined",
]
