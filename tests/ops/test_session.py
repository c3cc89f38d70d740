"""Session windows, stitch and distinct against the reference evaluator, and their checkpoints."""

from __future__ import annotations

import pickle
from collections import Counter

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st
from streams import lifetimes, physical_table, run_with_restart, stream_cases

import tidal
from tidal import INFINITY, agg
from tidal.core.batch import EventBatch
from tidal.core.errors import InputError, PlanError
from tidal.ops.base import Consumer
from tidal.ops.session import DistinctOp, SessionWindowOp, StitchOp
from tidal.testing import Reference, assert_same_snapshots
from tidal.testing.reference import canonical, check_physical

SESSION_PARAMS = st.sampled_from(
    [
        (1, None, "session"),
        (5, None, "session"),
        (5, None, "event"),
        (4, 10, "session"),
        (7, 6, "event"),
        (3, 1, "session"),
    ]
)


def edge_intervals(table: pa.Table) -> list[tuple[int, int, tuple]]:
    """The physical events as lifetimes, each end edge paired with its start edge (no coalescing)."""
    names = [n for n in table.column_names if n not in ("sync_time", "other_time")]
    payloads = list(zip(*[table.column(n).to_pylist() for n in names], strict=True)) or [()] * table.num_rows
    open_edges: Counter = Counter()
    out = []
    for s, o, p in zip(
        table.column("sync_time").to_pylist(), table.column("other_time").to_pylist(), payloads, strict=True
    ):
        if o == INFINITY:
            open_edges[(s, p)] += 1
        elif o < s:
            assert open_edges[(o, p)] > 0, f"end edge ({s}, {o}, {p}) has no open start edge"
            open_edges[(o, p)] -= 1
            out.append((o, s, p))
        else:
            out.append((s, o, p))
    out += [(s, INFINITY, p) for (s, p), c in open_edges.items() for _ in range(c)]
    return sorted(out)


# -- against the reference evaluator -----------------------------------------------------------------
@given(case=stream_cases(), params=SESSION_PARAMS)
def test_session_window_matches_reference(case, params):
    stream, ref = case
    result = stream.session_window(*params).to_arrow()
    check_physical(result)
    assert_same_snapshots(result, ref.session_window(*params))


@given(case=stream_cases(), params=SESSION_PARAMS)
def test_grouped_session_window_matches_reference(case, params):
    stream, ref = case
    result = stream.group_apply("k", lambda g: g.session_window(*params)).to_arrow()
    check_physical(result)
    assert_same_snapshots(result, ref.group_apply("k", lambda g: g.session_window(*params)))


@given(case=stream_cases(), timeout=st.sampled_from([2, 6]))
def test_session_count_per_key(case, timeout):
    # with whole-session lifetimes, an aggregate gives one row per session
    stream, ref = case
    q = stream.group_apply("k", lambda g: g.session_window(timeout).aggregate(agg.count(), agg.sum("v")))
    expected = ref.group_apply("k", lambda g: g.session_window(timeout).aggregate(agg.count(), agg.sum("v")))
    result = q.to_arrow()
    check_physical(result)
    assert_same_snapshots(result, expected)


@given(case=stream_cases(), grouped=st.booleans())
def test_stitch_matches_reference(case, grouped):
    stream, ref = case
    if grouped:
        stream = stream.group_apply("k", lambda g: g.select(lambda e: {"w": e.v % 2}).stitch())
        ref = ref.group_apply("k", lambda g: g.select(lambda e: {"w": e.v % 2}).stitch())
    else:
        stream, ref = stream.select(lambda e: {"w": e.v % 3}).stitch(), ref.select(lambda e: {"w": e.v % 3}).stitch()
    result = stream.to_arrow()
    check_physical(result)
    assert_same_snapshots(result, ref)
    # not only the same snapshots: the lifetimes themselves are the coalesced layers
    assert edge_intervals(result) == sorted(canonical(ref))


@given(case=stream_cases(), grouped=st.booleans())
def test_distinct_matches_reference(case, grouped):
    stream, ref = case
    if grouped:
        stream = stream.group_apply("k", lambda g: g.select(lambda e: {"w": e.v % 2}).distinct())
        ref = ref.group_apply("k", lambda g: g.select(lambda e: {"w": e.v % 2}).distinct())
    else:
        stream, ref = (
            stream.select(lambda e: {"w": e.v % 3}).distinct(),
            ref.select(lambda e: {"w": e.v % 3}).distinct(),
        )
    result = stream.to_arrow()
    check_physical(result)
    assert_same_snapshots(result, ref)
    assert edge_intervals(result) == sorted(canonical(ref))


@given(case=stream_cases())
def test_distinct_of_whole_payload_then_count(case):
    stream, ref = case
    result = stream.distinct().aggregate(agg.count()).to_arrow()
    assert_same_snapshots(result, ref.distinct().aggregate(agg.count()))


# -- worked examples ----------------------------------------------------------------------------------
def _points(rows):
    return tidal.from_arrow(
        pa.table({"t": pa.array([t for t, _ in rows], pa.int64()), "u": pa.array([u for _, u in rows], pa.string())}),
        time="t",
    )


def test_session_window_example():
    # user a: 0 2 4 | 20 ;  user b: 3 | 9      (timeout 5)
    # a's first session is [0, 9); b's sessions are [3, 8) and [9, 14); a's second [20, 25)
    s = _points([(0, "a"), (2, "a"), (3, "b"), (4, "a"), (9, "b"), (20, "a")])

    def lifetimes_of(q):
        return sorted((r["start"], r["end"], r["u"], r["t"]) for r in q.to_intervals().to_pylist())

    assert lifetimes_of(s.group_apply("u", lambda g: g.session_window(5))) == [
        (0, 9, "a", 0),
        (0, 9, "a", 2),
        (0, 9, "a", 4),
        (3, 8, "b", 3),
        (9, 14, "b", 9),
        (20, 25, "a", 20),
    ]
    # Trill's lifetimes: from each event's own start to its session's end
    trill = lifetimes_of(s.group_apply("u", lambda g: g.session_window(5, lifetime="event")))
    assert [(b, e) for b, e, u, _ in trill if u == "a"] == [(0, 9), (2, 9), (4, 9), (20, 25)]
    # max_duration 4: no session crosses 4, 8, ...: a's 0 and 2 end at 4, where 4 opens a new session
    capped = lifetimes_of(s.group_apply("u", lambda g: g.session_window(5, max_duration=4)))
    assert [(b, e, t) for b, e, u, t in capped if u == "a"] == [(0, 4, 0), (0, 4, 2), (4, 8, 4), (20, 24, 20)]


def test_stitch_example():
    # [0,3) then [3,6) of the same payload join; [1,4) overlapping becomes a second layer
    t = pa.table(
        {
            "sync_time": pa.array([0, 1, 3], pa.int64()),
            "other_time": pa.array([3, 4, 6], pa.int64()),
            "x": pa.array([7, 7, 7], pa.int64()),
        }
    )
    got = tidal.from_arrow(t, time="sync_time", other="other_time").stitch().to_arrow()
    assert edge_intervals(got) == [(0, 6, (7,)), (1, 4, (7,))]


def test_bad_arguments_and_inputs():
    s = _points([(0, "a")])
    with pytest.raises(PlanError):
        s.session_window(0)
    with pytest.raises(PlanError):
        s.session_window(5, max_duration=-1)
    with pytest.raises(PlanError):
        s.session_window(5, lifetime="window")
    orphan = pa.table(
        {"sync_time": pa.array([5], pa.int64()), "other_time": pa.array([2], pa.int64()), "x": pa.array([1])}
    )
    with pytest.raises(InputError, match="ends more often"):
        tidal.from_arrow(orphan, time="sync_time", other="other_time").stitch().to_arrow()


# -- operator level: punctuations and checkpoints --------------------------------------------------------
class Recorder(Consumer):
    """Collects output and checks order: sync times never go back, nothing undercuts a punctuation."""

    def __init__(self):
        self.log: list = []
        self.last_sync = -(2**63)
        self.punctuation = -(2**63)

    def on_batch(self, batch: EventBatch) -> None:
        b = batch.compact()
        if len(b) == 0:
            return
        assert int(b.sync[0]) >= self.last_sync and (np.diff(b.sync) >= 0).all(), "output out of sync order"
        assert int(b.sync[0]) >= self.punctuation, "output earlier than a punctuation already sent"
        self.last_sync = int(b.sync[-1])
        self.log.append(b.to_record_batch(with_key=True))

    def on_punctuation(self, time: int) -> None:
        assert time >= self.punctuation
        self.punctuation = time
        self.log.append(("punctuation", time))

    def on_completed(self) -> None:
        self.log.append("completed")


@st.composite
def message_lists(draw, grouped: bool):
    """Batches of random sizes over random events, with valid punctuations in between."""
    table = physical_table(draw(lifetimes(30)))
    if table.num_rows == 0:
        return []
    sync = table.column("sync_time").to_numpy()
    k = table.column("k")
    messages, start = [], 0
    while start < table.num_rows:
        size = draw(st.sampled_from([1, 2, 5, 100]))
        piece = table.slice(start, size)
        b = EventBatch(
            sync=piece.column("sync_time").to_numpy(),
            other=piece.column("other_time").to_numpy(),
            columns={"k": piece.column("k").combine_chunks(), "v": piece.column("v").combine_chunks()},
        )
        if grouped:
            kk = k.slice(start, size).combine_chunks()
            b = b.replace(key=pa.StructArray.from_arrays([kk], names=["k"]), hash=kk.to_numpy().astype(np.int64))
        messages.append(b)
        start += size
        if start < table.num_rows and draw(st.booleans()):
            messages.append(("punctuation", draw(st.integers(int(sync[start - 1]), int(sync[start])))))
    return messages


def _feed(op, messages):
    for m in messages:
        if isinstance(m, tuple):
            op.on_punctuation(m[1])
        else:
            op.on_batch(m)


def _run_with_checkpoint(make, messages, cut):
    whole, whole_out = make(), Recorder()
    whole.downstream.append(whole_out)
    _feed(whole, messages)
    whole.on_completed()

    first, out = make(), Recorder()
    first.downstream.append(out)
    _feed(first, messages[:cut])
    state = pickle.loads(pickle.dumps(first.snapshot()))  # plain data only: survives serialisation
    second = make()
    second.restore(state)
    second.downstream.append(out)
    _feed(second, messages[cut:])
    second.on_completed()
    return whole_out.log, out.log


OPERATORS = {
    "session": lambda: SessionWindowOp(5),
    "session_event": lambda: SessionWindowOp(3, lifetime="event"),
    "session_capped": lambda: SessionWindowOp(4, max_duration=7),
    "stitch": StitchOp,
    "distinct": DistinctOp,
}


@given(data=st.data(), name=st.sampled_from(sorted(OPERATORS)), grouped=st.booleans())
def test_checkpoint_mid_stream_continues_exactly(data, name, grouped):
    messages = data.draw(message_lists(grouped))
    cut = data.draw(st.integers(0, len(messages)))
    expected, got = _run_with_checkpoint(OPERATORS[name], messages, cut)
    assert got == expected


@given(data=st.data(), params=SESSION_PARAMS, grouped=st.booleans())
def test_session_operator_matches_reference_with_punctuations(data, params, grouped):
    # drives the operator directly: the Recorder checks that no output undercuts a punctuation
    messages = data.draw(message_lists(grouped))
    op, out = SessionWindowOp(*params), Recorder()
    op.downstream.append(out)
    _feed(op, messages)
    op.on_completed()
    batches = [b for b in out.log if isinstance(b, pa.RecordBatch)]
    events = []
    for m in messages:
        if isinstance(m, EventBatch):
            rows = zip(
                m.sync.tolist(), m.other.tolist(), m.columns["k"].to_pylist(), m.columns["v"].to_pylist(), strict=True
            )
            events += [(s, o, (k, v)) for s, o, k, v in rows if o >= s]  # end edges add nothing here
    ref = Reference(("k", "v"), events)
    expected = ref.group_apply("k", lambda g: g.session_window(*params)) if grouped else ref.session_window(*params)
    empty = pa.table({n: pa.array([], pa.int64()) for n in ("sync_time", "other_time", "k", "v")})
    table = pa.Table.from_batches(batches) if batches else empty
    assert_same_snapshots(table.select(["sync_time", "other_time", "k", "v"]), expected)


QUERIES = {
    "session": lambda s: s.session_window(4),
    "session_grouped_capped": lambda s: s.group_apply("k", lambda g: g.session_window(6, max_duration=9)),
    "session_event_count": lambda s: s.group_apply(
        "k", lambda g: g.session_window(3, lifetime="event").aggregate(agg.count())
    ),
    "stitch_grouped": lambda s: s.group_apply("k", lambda g: g.select(lambda e: {"w": e.v % 2}).stitch()),
    "distinct": lambda s: s.select(lambda e: {"w": e.v % 3}).distinct(),
}


@given(case=stream_cases(), which=st.sampled_from(sorted(QUERIES)), cut=st.integers(0, 40))
def test_restored_query_continues_exactly(case, which, cut):
    stream, _ = case
    q = QUERIES[which](stream)
    whole = q.to_arrow()
    combined = run_with_restart(q, cut)
    assert combined.to_pylist() == whole.to_pylist()  # the same events in the same order


@pytest.mark.parametrize("timeout", [1, 7, 40])
def test_session_window_matches_duckdb_sessionisation(timeout):
    # the relational view: DuckDB's gap-and-island query assigns every event the same session
    duckdb = pytest.importorskip("duckdb")
    rng = np.random.default_rng(timeout)
    n = 3000
    table = pa.table(
        {
            "ts": np.cumsum(rng.integers(0, 4, n)).astype(np.int64),
            "key": rng.integers(0, 25, n),
            "id": np.arange(n),
        }
    )
    con = duckdb.connect(config={"threads": 1})
    con.register("events", table)
    expected = con.execute(
        f"""
        WITH flagged AS (
          SELECT key, ts, id,
                 CASE WHEN ts - lag(ts) OVER (PARTITION BY key ORDER BY ts, id) < {timeout} THEN 0 ELSE 1 END AS fresh
          FROM events),
        numbered AS (
          SELECT *, sum(fresh) OVER (PARTITION BY key ORDER BY ts, id ROWS UNBOUNDED PRECEDING) AS sid FROM flagged)
        SELECT min(ts) OVER w AS start, max(ts) OVER w + {timeout} AS stop, key, id
        FROM numbered WINDOW w AS (PARTITION BY key, sid)
        """
    ).fetchall()
    got = tidal.from_arrow(table, time="ts").group_apply("key", lambda g: g.session_window(timeout)).to_arrow()
    rows = zip(*(got.column(c).to_pylist() for c in ("sync_time", "other_time", "key", "id")), strict=True)
    assert sorted(rows) == sorted(expected)
