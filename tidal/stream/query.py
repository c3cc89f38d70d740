"""A running query: the physical operator DAG of one or more plans, driven message by message.

:class:`Query` builds each plan node's operator once (a node shared by several consumers is
a multicast), connects the sinks, and drives the sources in sync-time order: the source
whose next message is earliest goes first, so two-input operators buffer little.

A query can stop between any two messages, ``checkpoint()`` the state of every operator
(Arrow tables, numpy arrays and plain values) with the number of messages each source has
delivered, and a new query over the same plan can ``restore()`` that and continue: sources
are re-read and fast-forwarded past what was already delivered, so the restored query
produces exactly the output the original would have produced from that point.
Fast-forwarding needs sources that replay the same messages when reopened (files, tables,
lists); a one-shot generator cannot be restored. A :class:`~tidal.plan.nodes.source.Feed`
(a broker, a growing file) is instead reopened at the position it reported with the last
delivered message, so nothing is re-read.
"""

from __future__ import annotations

import hashlib
import heapq
import itertools
import time
from collections.abc import Sequence

from ..core.batch import EventBatch
from ..core.errors import StateError, TidalError
from ..core.feed import Idle
from ..core.messages import Completed, Flush, LowWatermark, Punctuation
from ..core.time import INFINITY
from ..io.segments import DurableSink
from ..ops.base import Consumer, Operator
from ..plan.node import PlanNode, explain, walk
from ..plan.nodes import Source
from ..plan.rules import RULES, optimize

_EARLIEST = -(2**63)


def _message_time(msg) -> int:
    if isinstance(msg, EventBatch):
        return int(msg.sync[0]) if len(msg) else _EARLIEST
    if isinstance(msg, Punctuation | LowWatermark):
        return min(msg.time, INFINITY)
    return _EARLIEST


def deliver(op: Consumer, msg) -> None:
    if isinstance(msg, EventBatch):
        op.on_batch(msg)
    elif isinstance(msg, Punctuation):
        op.on_punctuation(msg.time)
    elif isinstance(msg, LowWatermark):
        op.on_low_watermark(msg.time)
    elif isinstance(msg, Flush):
        op.on_flush()
    elif isinstance(msg, Completed):
        op.on_completed()
    else:
        raise TypeError(f"unknown message {msg!r}")


def plan_fingerprint(roots: Sequence[PlanNode]) -> str:
    """What identifies a plan in its checkpoints: each node's explanation and the code and constants of
    the functions it holds (two lambdas explain alike when their source cannot be read)."""
    digest = hashlib.sha256()
    for root in roots:
        digest.update(explain(root, measured=False).encode())
    for node in walk(roots):
        for value in vars(node).values():
            code = getattr(value, "__code__", None)
            if code is not None:
                digest.update(_code_bytes(code))
    return digest.hexdigest()[:16]


def _code_bytes(code) -> bytes:
    """A function's bytecode, names and constants (nested functions' code included, never an address)."""
    consts = [_code_bytes(c) if hasattr(c, "co_code") else repr(c).encode() for c in code.co_consts]
    return code.co_code + repr(code.co_names).encode() + b"|".join(consts)


class Query:
    """The operators of ``roots`` wired to ``sinks`` (one sink per root), ready to run."""

    def __init__(self, roots: Sequence[PlanNode], sinks: Sequence[Consumer], rules=RULES):
        roots = optimize(roots, rules)
        self.operators: list[Operator] = []  # in a deterministic build order: checkpoints index by it
        self.sources: list[tuple[Source, Operator]] = []
        built: dict[int, Operator] = {}
        for root, sink in zip(roots, sinks, strict=True):
            self._build(root, built).downstream.append(sink)
        self.fingerprint = plan_fingerprint(roots)
        self.sinks = list(sinks)
        # per source: messages delivered, or a feed's position after the last delivered message
        self.positions: list = [None if node.feed is not None else 0 for node, _ in self.sources]
        self.finished = [False] * len(self.sources)
        self._heap: list | None = None
        self._iters: list = []
        self.stopping = False
        self.delivered = 0  # messages delivered by this query object (all runs)
        self.events_read = 0  # events in the batches the sources delivered
        self.on_progress = None  # called with the query after each delivered batch (tidal.stream.progress)

    def _build(self, node: PlanNode, built: dict[int, Operator]) -> Operator:
        """The operator for ``node``, made once per node, with its inputs' operators feeding it.

        A method rather than a recursive closure: such a closure is a reference cycle that
        would keep the query and its operators alive until the next garbage collection.
        """
        if id(node) in built:
            return built[id(node)]
        op, inputs = node.make(), node.inputs
        built[id(node)] = op
        self.operators.append(op)
        if isinstance(node, Source):
            self.sources.append((node, op))
        for child, port in zip(inputs, node.ports(op), strict=True):
            self._build(child, built).downstream.append(port)
        return op

    # -- running ----------------------------------------------------------------------------
    def _start(self) -> None:
        self._heap = []
        self._iters = []
        for idx, (node, _) in enumerate(self.sources):
            if node.feed is not None:
                it = iter(node.feed.open(self.positions[idx]))
            else:
                it = iter(node.open_messages())
                if self.positions[idx]:
                    it = itertools.islice(it, self.positions[idx], None)
            self._iters.append(it)
            if not self.finished[idx]:
                self._pull(idx)

    def _pull(self, idx: int) -> None:
        msg = next(self._iters[idx], None)
        if msg is None:
            # the source ended without saying so: complete it
            self.finished[idx] = True
            self.sources[idx][1].on_completed()
            return
        feed = self.sources[idx][0].feed
        if isinstance(msg, Idle):  # a heartbeat: nothing to deliver; the loop regains control
            heapq.heappush(self._heap, (_EARLIEST, idx, msg, self.positions[idx]))
            return
        # a feed's position is read as the message is pulled, and stored once it is delivered
        after = feed.position() if feed is not None else self.positions[idx] + 1
        heapq.heappush(self._heap, (_message_time(msg), idx, msg, after))

    def run(self, max_messages: int | None = None, until: float | None = None) -> bool:
        """Deliver messages (all, or at most ``max_messages``, or until ``time.monotonic()`` passes
        ``until``, or until :meth:`stop` is called); True once every source has completed."""
        if self._heap is None:
            self._start()
        delivered = 0
        while self._heap and (max_messages is None or delivered < max_messages):
            if self.stopping or (until is not None and time.monotonic() >= until):
                break
            _, idx, msg, after = heapq.heappop(self._heap)
            if isinstance(msg, Idle):
                self._pull(idx)
                continue
            deliver(self.sources[idx][1], msg)
            self.positions[idx] = after
            delivered += 1
            self.delivered += 1
            if isinstance(msg, EventBatch):
                self.events_read += len(msg)
                if self.on_progress is not None:
                    self.on_progress(self)
            if isinstance(msg, Completed):
                self.finished[idx] = True
                continue
            self._pull(idx)
        return not self._heap

    def stop(self) -> None:
        """Ask a running query to return from :meth:`run` after the message it is delivering (safe from
        a signal handler: a feed waiting for input returns a heartbeat within its latency)."""
        self.stopping = True

    def close(self) -> None:
        """Release the feeds' connections (a query over feeds should be closed when done with)."""
        for node, _ in self.sources:
            if node.feed is not None:
                node.feed.close()

    # -- checkpoints ------------------------------------------------------------------------
    def checkpoint(self) -> dict:
        """Every operator's state and each source's position, between two messages."""
        return {
            "version": 1,
            "plan": self.fingerprint,
            "operators": [op.snapshot() for op in self.operators],
            "positions": list(self.positions),
            "finished": list(self.finished),
            # a durable sink's committed position; the caller commits it before taking the checkpoint
            "sinks": [s.progress() if isinstance(s, DurableSink) else None for s in self.sinks],
        }

    def restore(self, state: dict) -> None:
        """Continue from ``checkpoint()`` of a query over the same plan (before running this one)."""
        if self._heap is not None:
            raise TidalError("restore a checkpoint into a query that has not started running")
        if not isinstance(state, dict) or "operators" not in state or "positions" not in state:
            raise StateError("not a checkpoint: restore takes what Query.checkpoint() returned")
        if state.get("plan", self.fingerprint) != self.fingerprint:
            raise StateError(
                "checkpoint is of another plan (its operators, their arguments or functions differ); "
                "restore it into a query over the plan that made it"
            )
        if len(state["operators"]) != len(self.operators) or len(state["positions"]) != len(self.sources):
            raise StateError(
                f"checkpoint is of another plan: {len(state['operators'])} operators and "
                f"{len(state['positions'])} sources, this query has {len(self.operators)} and {len(self.sources)}"
            )
        for op, op_state in zip(self.operators, state["operators"], strict=True):
            op.restore(op_state)
        self.positions = list(state["positions"])
        self.finished = list(state["finished"])
        for sink, position in zip(self.sinks, state.get("sinks", [None] * len(self.sinks)), strict=True):
            if position is not None:
                sink.resume_at(position)

    def run_durably(
        self,
        store,
        name: str,
        fingerprint: str,
        every_messages: int | None = 200,
        on_checkpoint=None,
        every_seconds: float | None = None,
        plan: str = "",
    ) -> int:
        """Run to completion (or until :meth:`stop`), saving a checkpoint to ``store`` every
        ``every_messages`` messages or every ``every_seconds`` of wall clock, whichever comes first
        (None: not by that measure), and once more at the end.

        If ``store`` already holds a checkpoint named ``name`` (an earlier run that was stopped or
        crashed), continue from it. Durable sinks are committed before each checkpoint is saved, so
        after a crash the output rolls back to the checkpoint and the replay writes the rest once.
        ``plan`` (a summary of the plan) is stored beside the fingerprint and shown when another plan
        finds the checkpoint. ``on_checkpoint(seq)`` is called after each save. Returns the last
        checkpoint's sequence number.
        """
        if every_messages is not None and every_messages < 1:
            raise ValueError("every_messages must be at least 1")
        if every_seconds is not None and every_seconds <= 0:
            raise ValueError("every_seconds must be positive")
        extra = {"plan": plan} if plan else {}
        state = store.load(name, fingerprint, **extra)
        if state is not None:
            self.restore(state)
        else:
            for sink in self.sinks:
                if isinstance(sink, DurableSink):
                    sink.resume_at(0)
        saved_at = -1
        while True:
            until = time.monotonic() + every_seconds if every_seconds is not None else None
            done = self.run(max_messages=every_messages, until=until)
            if self.delivered == saved_at and not (done or self.stopping):
                continue  # an idle feed: nothing changed since the last checkpoint
            saved_at = self.delivered
            for sink in self.sinks:
                if isinstance(sink, DurableSink):
                    sink.commit()
            seq = store.save(name, fingerprint, self.checkpoint(), **extra)
            if on_checkpoint is not None:
                on_checkpoint(seq)
            if done or self.stopping:
                return seq


def execute(root: PlanNode, sink: Consumer) -> None:
    """Build the physical DAG for ``root``, attach ``sink``, and run it to completion."""
    execute_many([root], [sink])


def execute_many(roots: Sequence[PlanNode], sinks: Sequence[Consumer]) -> None:
    """Several roots in one DAG (shared nodes built once), run once."""
    from .progress import watching

    query = Query(roots, sinks)
    try:
        with watching(query):
            query.run()
    finally:
        query.close()
