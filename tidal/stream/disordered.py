"""Disordered streams: order-insensitive operators before the sort, then Impatience sort.

A :class:`DisorderedStream` is a stream in *arrival* order (sort-as-needed, after the
Impatience paper, section IV). It offers only operators whose meaning does not depend on
order: ``where``, ``select``, ``select_many`` and the per-event lifetime changes
(``tumbling_window``, ``hopping_window``, ``alter_duration``, ``alter_lifetime``,
``shift_lifetime``). Running them before the sort means the sort handles fewer, smaller
and (after a window) less disordered events. ``to_stream`` inserts the sort and returns an
ordinary :class:`~tidal.stream.streamable.Stream`; every other method raises
:class:`PlanError` saying so.

``to_streams(latencies, piq, merge)`` is the Impatience framework (paper section V): one sort
pass routes every event to the delay band of the first latency it meets; output ``j`` holds
every event that arrived within latency ``j``. Without ``piq``/``merge`` output ``j`` is the
temporal union of bands ``0..j`` (the basic framework); with them band ``j``'s partial result
``piq(band_j)`` is merged into the previous output: ``out_j = merge(out_{j-1}, piq(band_j))``
(the advanced framework: each event is evaluated once, unions buffer partial results only).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pyarrow as pa

from ..core.errors import PlanError
from ..io import egress
from ..ops.reorder import DisorderPolicy, DisorderStats
from ..plan.node import PlanNode, explain
from ..plan.nodes import BeforeSort, DelayBand, ImpatienceSort
from .query import execute_many
from .streamable import Stream

ORDER_INSENSITIVE = (
    "where",
    "select",
    "select_many",
    "tumbling_window",
    "hopping_window",
    "alter_duration",
    "alter_lifetime",
    "shift_lifetime",
)


# --------------------------------------------------------------------------------------------------
# the user-facing types
# --------------------------------------------------------------------------------------------------


class Streams(tuple):
    """The outputs of the Impatience framework, one :class:`Stream` per reorder latency (ascending).

    ``bands`` are the disjoint sorted delay bands the outputs are built from. ``to_arrow()``
    and ``subscribe()`` run every output in one pass (one sort), which is how the framework
    shares its work; running a single output on its own runs only what it needs.
    """

    latencies: tuple[int, ...]
    bands: tuple[Stream, ...]

    def __new__(cls, outputs: Sequence[Stream], bands: Sequence[Stream], latencies: Sequence[int]):
        self = super().__new__(cls, outputs)
        self.bands = tuple(bands)
        self.latencies = tuple(latencies)
        return self

    def to_arrow(self) -> list[pa.Table]:
        sinks = [egress.CollectSink(s.schema) for s in self]
        execute_many([s.node for s in self], sinks)
        return [sink.table() for sink in sinks]

    def subscribe(self, on_batch: Callable, on_punctuation: Callable | None = None, on_completed=None) -> None:
        """Run all outputs once; callbacks receive ``(index, ...)`` first."""
        sinks = [
            egress.CallbackSink(
                lambda rb, i=i: on_batch(i, rb),
                None if on_punctuation is None else (lambda t, i=i: on_punctuation(i, t)),
                None if on_completed is None else (lambda i=i: on_completed(i)),
            )
            for i in range(len(self))
        ]
        execute_many([s.node for s in self], sinks)

    def late_count(self) -> int:
        return self[-1].late_count()

    def late_events(self) -> Stream:
        return self[-1].late_events()

    def disorder_stats(self) -> list[DisorderStats]:
        return self[-1].disorder_stats()


class DisorderedStream:
    """A stream in arrival order; see the module docstring."""

    def __init__(self, node: PlanNode, defaults: dict | None = None):
        self.node = node
        self._defaults = dict(defaults or {})

    @property
    def schema(self) -> pa.Schema | None:
        return self.node.schema

    @property
    def properties(self):
        return self.node.props

    def explain(self) -> str:
        return "unsorted (arrival order): call to_stream() to sort\n" + explain(self.node)

    def _wrap(self, stream: Stream) -> DisorderedStream:
        return DisorderedStream(stream.node, self._defaults)

    def _wrap_lifetime(self, stream: Stream) -> DisorderedStream:
        return DisorderedStream(BeforeSort(stream.node), self._defaults)

    # -- order-insensitive operators ----------------------------------------------------------
    def where(self, predicate) -> DisorderedStream:
        """Keep the events whose payload satisfies ``predicate`` (before the sort)."""
        return self._wrap(Stream(self.node).where(predicate))

    def select(self, *fields, **named) -> DisorderedStream:
        """Project each payload (before the sort); see :meth:`Stream.select`."""
        return self._wrap(Stream(self.node).select(*fields, **named))

    def select_many(self, fn) -> DisorderedStream:
        return self._wrap(Stream(self.node).select_many(fn))

    def tumbling_window(self, size: int, offset: int = 0, align: str = "start") -> DisorderedStream:
        """Windows before the sort: events snap to the window grid, which also reduces disorder."""
        return self._wrap_lifetime(Stream(self.node).tumbling_window(size, offset, align))

    def hopping_window(self, size: int, hop: int, offset: int = 0, align: str = "start") -> DisorderedStream:
        return self._wrap_lifetime(Stream(self.node).hopping_window(size, hop, offset, align))

    def alter_duration(self, duration) -> DisorderedStream:
        return self._wrap_lifetime(Stream(self.node).alter_duration(duration))

    def alter_lifetime(self, start=None, duration=None) -> DisorderedStream:
        """``[f(s), f(s)+d)`` per event; before the sort ``f`` need not be non-decreasing."""
        return self._wrap_lifetime(Stream(self.node).alter_lifetime(start, duration))

    def shift_lifetime(self, delta: int) -> DisorderedStream:
        return self._wrap_lifetime(Stream(self.node).shift_lifetime(delta))

    # -- sorting ------------------------------------------------------------------------------
    def _policy(self, latencies, disorder, punctuate_every, punctuate_every_events, on_completed) -> DisorderPolicy:
        d = self._defaults
        return DisorderPolicy(
            latencies=tuple(latencies),
            disorder=disorder or d.get("disorder") or "throw",
            punctuate_every=punctuate_every if punctuate_every is not None else d.get("punctuate_every"),
            punctuate_every_events=punctuate_every_events
            if punctuate_every_events is not None
            else d.get("punctuate_every_events"),
            on_completed=on_completed or d.get("on_completed") or "end_of_stream",
        )

    def to_stream(
        self,
        reorder_latency: int | None = None,
        disorder: str | None = None,
        *,
        punctuate_every: int | None = None,
        punctuate_every_events: int | None = None,
        on_completed: str | None = None,
    ) -> Stream:
        """Sort here. Events more than ``reorder_latency`` ticks behind the high watermark may be
        late: ``disorder`` says whether they are dropped, adjusted or raise (default ``"throw"``).
        Late events are counted (``late_count()``) and available as ``late_events()``."""
        if reorder_latency is None:
            reorder_latency = self._defaults.get("reorder_latency")
        if reorder_latency is None:
            reorder_latency = 0
        policy = self._policy([reorder_latency], disorder, punctuate_every, punctuate_every_events, on_completed)
        return Stream(ImpatienceSort(self.node, policy))

    def to_streams(
        self,
        latencies: Sequence[int],
        piq: Callable[[Stream], Stream] | None = None,
        merge: Callable[[Stream, Stream], Stream] | None = None,
        disorder: str | None = None,
        *,
        punctuate_every: int | None = None,
        punctuate_every_events: int | None = None,
        on_completed: str | None = None,
    ) -> Streams:
        """The Impatience framework: one output per latency (ascending); see the module docstring.

        ``piq(stream) -> stream`` is applied to each delay band once; ``merge(previous, partial)``
        combines the previous output with the next band's partial result. Give both or neither.
        """
        if (piq is None) != (merge is None):
            raise PlanError("to_streams: give both piq and merge (advanced framework) or neither (basic framework)")
        policy = self._policy(sorted(latencies), disorder, punctuate_every, punctuate_every_events, on_completed)
        if list(latencies) != list(policy.latencies):
            raise PlanError(f"to_streams: latencies must be strictly increasing, got {list(latencies)}")
        sort = ImpatienceSort(self.node, policy)
        bands = [Stream(DelayBand(sort, j)) for j in range(len(policy.latencies))]
        outputs: list[Stream] = []
        for j, band in enumerate(bands):
            if piq is None:
                out = band if j == 0 else outputs[-1].union(band)
            else:
                partial = piq(band)
                out = partial if j == 0 else merge(outputs[-1], partial)
            outputs.append(out)
        return Streams(outputs, bands, policy.latencies)

    # -- everything else needs order ----------------------------------------------------------
    def __getattr__(self, name: str):
        if not name.startswith("_") and hasattr(Stream, name):
            raise PlanError(
                f"{name}() needs a stream in time order, and this one is in arrival order: call "
                f"to_stream(reorder_latency=...) first (only {', '.join(ORDER_INSENSITIVE)} run before the sort)"
            )
        raise AttributeError(name)
