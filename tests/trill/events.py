"""Trill's test vocabulary as data: stream events, streams built from them, and the comparison.

Trill's unit tests write inputs and expected outputs as ``StreamEvent`` arrays (intervals,
start edges, end edges, points, punctuations) and compare with ``IsEquivalentTo``. Here the
same arrays are tuples, ``stream()`` feeds them to tidal exactly as written (punctuations
included, in batches of a chosen size), and ``check()`` asserts that tidal's output has the
same snapshot at every instant as Trill's expected events and, when given, as the plain
reference evaluator (``tidal.testing.Reference``) on the same input.

Trill's ``IsEquivalentTo`` compares the physical events after sorting them; two physical
streams can differ (a start/end edge pair for an interval, say) and still mean the same thing,
so the comparison here is on snapshots: tidal's canonical layers (``tidal.testing.canonical``).
"""

from __future__ import annotations

import pyarrow as pa

import tidal
from tidal import INFINITY
from tidal.core.messages import Completed, Punctuation
from tidal.plan.nodes import Source
from tidal.plan.properties import Properties
from tidal.testing import Reference, assert_same_snapshots
from tidal.testing.reference import check_physical

BATCH_SIZES = (1, 3, None)  # None: one batch per punctuation-delimited segment


def interval(s: int, e: int, p) -> tuple:
    return ("interval", s, e, p)


def start(s: int, p) -> tuple:
    return ("start", s, INFINITY, p)


def end(e: int, s: int, p) -> tuple:
    return ("end", e, s, p)


def point(t: int, p) -> tuple:
    return ("interval", t, t + 1, p)


def punct(t: int = INFINITY) -> tuple:
    return ("punct", t, None, None)


def _payload(p) -> tuple:
    return p if isinstance(p, tuple) else (p,)


def _table(events, names, schema: pa.Schema | None = None) -> pa.Table:
    cols = {"sync_time": pa.array([e[1] for e in events], pa.int64()),
            "other_time": pa.array([e[2] for e in events], pa.int64())}  # fmt: skip
    for i, n in enumerate(names):
        cols[n] = pa.array([_payload(e[3])[i] for e in events], None if schema is None else schema.field(n).type)
    return pa.table(cols)


def stream(events, names=("v",), batch_size: int | None = None, clean: bool = True) -> tidal.Stream:
    """A tidal stream delivering ``events`` as physical events, punctuations where they are written.

    ``clean`` orders the data by sync time first (stably), as Trill's ``ToCleanStreamable`` does.
    """
    data = [e for e in events if e[0] != "punct"]
    if clean:
        order = sorted(range(len(events)), key=lambda i: (events[i][1], i))
        events = [events[i] for i in order]
    schema = _table(data or [("interval", 0, 1, tuple(0 for _ in names))], names).schema
    schema = pa.schema([f for f in schema if f.name not in ("sync_time", "other_time")])

    def messages():
        segment = []
        for e in [*events, punct(INFINITY)]:
            if e[0] != "punct":
                segment.append(e)
                continue
            if segment:
                table = _table(segment, names, schema)
                src = tidal.from_arrow(table, time="sync_time", other="other_time", batch_size=batch_size)
                for m in src.node.open_messages():
                    if not isinstance(m, Punctuation | Completed):
                        yield m
                segment = []
            yield Punctuation(e[1])
        yield Completed()

    return tidal.Stream(Source(messages, schema, Properties(), "trill test events"))


def intervals(events) -> list[tuple[int, int, tuple]]:
    """The logical ``(start, end, payload)`` events of a physical list: each end edge closes a start
    edge of the same start time and payload (an end with no such start is an error)."""
    out, open_ = [], {}
    for kind, a, b, p in events:
        if kind == "punct":
            continue
        p = _payload(p)
        if kind == "interval":
            out.append((a, b, p))
        elif kind == "start":
            open_.setdefault((a, p), []).append(len(out))
            out.append((a, INFINITY, p))
        else:
            waiting = open_.get((b, p))
            if not waiting:
                raise ValueError(f"end edge ({a}, {b}, {p}) closes no start edge")
            i = waiting.pop(0)
            out[i] = (b, a, p)
    return out


def reference(events, names=("v",)) -> Reference:
    return Reference(tuple(names), intervals(events))


def check(actual: tidal.Stream, expected_events, ref: Reference | None = None, digits: int | None = None) -> None:
    """tidal's output is well formed and has Trill's expected snapshots (and the reference's)."""
    table = actual.to_arrow()
    check_physical(table)
    assert_same_snapshots(table, intervals(expected_events), digits=digits)
    if ref is not None:
        assert_same_snapshots(table, ref, digits=digits)
