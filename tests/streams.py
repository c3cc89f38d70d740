"""Hypothesis strategies: random well-formed physical streams and their logical meaning."""

from __future__ import annotations

import pyarrow as pa
from hypothesis import strategies as st

import tidal
from tidal import INFINITY
from tidal.testing import Reference

NAMES = ("k", "v")


@st.composite
def lifetimes(draw, max_events=25, allow_edges=True):
    """A list of (start, end, payload, as_edges) logical events."""
    n = draw(st.integers(0, max_events))
    out = []
    for _ in range(n):
        s = draw(st.integers(-20, 60))
        open_ended = allow_edges and draw(st.integers(0, 9)) == 0
        e = INFINITY if open_ended else s + draw(st.integers(1, 25))
        edges = open_ended or (allow_edges and draw(st.booleans()))
        payload = (draw(st.integers(0, 3)), draw(st.integers(-5, 5)))
        out.append((s, e, payload, edges))
    return out


def physical_table(events, names=NAMES, key_sorted: bool = False, value_type: pa.DataType | None = None) -> pa.Table:
    """The physical rows of logical events, in sync-time order (and, with ``key_sorted``, in order
    of the first field, nulls last, within each sync time: a ``sorted_by`` stream)."""
    rows = []
    for s, e, p, edges in events:
        if edges:
            rows.append((s, INFINITY, p))
            if e != INFINITY:
                rows.append((e, s, p))
        else:
            rows.append((s, e, p))
    if key_sorted:
        rows.sort(key=lambda r: (r[0], r[2][0] is None, r[2][0] or 0))
    else:
        rows.sort(key=lambda r: r[0])
    return pa.table(
        {
            "sync_time": pa.array([r[0] for r in rows], pa.int64()),
            "other_time": pa.array([r[1] for r in rows], pa.int64()),
            names[0]: pa.array([r[2][0] for r in rows], pa.int64()),
            names[1]: pa.array([r[2][1] for r in rows], value_type or pa.int64()),
        }
    )


def reference_of(events) -> Reference:
    return Reference(NAMES, [(s, e, p) for s, e, p, _ in events])


@st.composite
def stream_cases(draw, max_events=25, allow_edges=True):
    """(engine stream, reference) over the same random events, random batching and punctuation."""
    events = draw(lifetimes(max_events, allow_edges))
    batch_size = draw(st.sampled_from([1, 2, 3, 7, 80_000]))
    punct = draw(st.sampled_from([None, 1, 5, 17]))
    stream = tidal.from_arrow(
        physical_table(events), time="sync_time", other="other_time", batch_size=batch_size, punctuate_every=punct
    )
    return stream, reference_of(events)


def check_against_reference(case, engine_op, ref_op) -> None:
    """``engine_op`` on the engine stream gives well-formed events with ``ref_op``'s snapshots."""
    from tidal.testing import assert_same_snapshots
    from tidal.testing.reference import check_physical

    stream, ref = case
    result = engine_op(stream).to_arrow()
    check_physical(result)
    assert_same_snapshots(result, ref_op(ref))


def run_with_restart(q, cut: int, states: list | None = None) -> pa.Table:
    """``q`` run for ``cut`` messages, checkpointed (through pickle; the state appended to ``states``), restored
    in a new query and run to the end: both parts' output, concatenated."""
    import pickle

    first = q.query()
    first.run(max_messages=cut)
    state = pickle.loads(pickle.dumps(first.checkpoint()))
    if states is not None:
        states.append(state)
    second = q.query()
    second.restore(state)
    assert second.run()
    return pa.concat_tables([first.sink.table(), second.sink.table()], promote_options="permissive")


def timed_values_table(rows) -> pa.Table:
    """Rows ``(t, k, v, duration)`` as a table of start time ``t``, end ``e = t + duration``, key ``k``, value ``v``."""
    return pa.table(
        {
            "t": pa.array([r[0] for r in rows], pa.int64()),
            "e": pa.array([r[0] + r[3] for r in rows], pa.int64()),
            "k": pa.array([r[1] for r in rows], pa.int64()),
            "v": pa.array([r[2] for r in rows], pa.float64()),
        }
    )
