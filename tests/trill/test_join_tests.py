"""Trill's JoinTests (start-edge, sorted and fixed-interval equi-joins), re-expressed for tidal's ``join``.

Inputs and expected results from Trill's test Sources/Test/SimpleTesting/Streamables/JoinTests.tt
(generated for row/columnar, small-batch and multi-string variants), MIT licence (Copyright (c)
Microsoft Corporation). ``MyStruct { field1, field2 }`` payloads are two fields; an atemporal input
with ``TimelinePolicy.Sequence(100)`` is start edges whose time advances by one every 100 events.

Which Trill tests are ported here, and which are not and why: tests/trill/README.md.
"""

from __future__ import annotations

import pytest

from trill.events import BATCH_SIZES, check, interval, point, reference, start, stream

N = 200
NAMES = ("field1", "field2")


def _declared(s, *sorted_by):
    """Trill's ``IsConstantDuration(true, infinity)`` / ``IsSnapshotSorted``: declared properties."""
    return type(s)(s.node.but(props=s.node.props.but(start_edge_only=True, sorted_by=tuple(sorted_by))))


def _game(left, right, from_right):
    return {"EventType": left.field1, "GameId": int(getattr(right, from_right))}


@pytest.mark.parametrize("batch", BATCH_SIZES)
@pytest.mark.parametrize("case", ["IOOEJ1", "IOOEJ2"])
def test_sorted_start_edge_join(case, batch):
    """IOOEJ1/2: start edges at 0, declared sorted by the key: one result per key, in key order."""
    left_events = [start(0, (i, 2.0 * i)) for i in range(N)]
    if case == "IOOEJ1":
        right_events, right_names, right_key, field = left_events, NAMES, "field1", "field2"
        expected = [start(0, (i, 2 * i)) for i in range(N)]
    else:
        right_events, right_names, right_key, field = [start(0, i) for i in range(N)], ("v",), "v", "v"
        expected = [start(0, (i, i)) for i in range(N)]
    left = _declared(stream(left_events, NAMES, batch_size=batch), "field1")
    right = _declared(stream(right_events, right_names, batch_size=batch), right_key)
    got = left.join(right, "field1", right_key, lambda a, b: _game(a, b, field))
    ref = reference(left_events, NAMES).join(
        reference(right_events, right_names), "field1", right_key, lambda a, b: _game(a, b, field)
    )
    check(got, expected, ref)
    assert got.to_arrow().column("EventType").to_pylist() == list(range(N))  # Trill: results in key order


def _sequence(values, names):
    """Atemporal ingress, ``TimelinePolicy.Sequence(100)``: the k-th value starts at k // 100."""
    return [start(k // 100, v) for k, v in enumerate(values)]


@pytest.mark.parametrize("batch", BATCH_SIZES)
@pytest.mark.parametrize("case", ["StartEdgeEquiJoin1", "StartEdgeEquiJoin2", "StartEdgeEquiJoin3"])
def test_start_edge_equi_join(case, batch):
    left_events = _sequence([(i, 2.0 * i) for i in reversed(range(N))], NAMES)
    if case == "StartEdgeEquiJoin1":
        right_events, right_names, right_key = _sequence(list(range(N)), ("v",)), ("v",), "v"

        def result(a, b):
            return {"EventType": a.field1, "GameId": b.v}

        ok = lambda r: r["EventType"] == r["GameId"]  # noqa: E731
    else:
        right_events, right_names, right_key = _sequence([(i, 2.0 * i) for i in range(N)], NAMES), NAMES, "field1"
        if case == "StartEdgeEquiJoin2":

            def result(a, b):
                return {"EventType": a.field1, "GameId": int(b.field2)}

            ok = lambda r: r["EventType"] * 2 == r["GameId"]  # noqa: E731
        else:

            def result(a, b):
                return {"EventType": str(a.field1 * 2), "GameId": str(int(b.field2))}

            ok = lambda r: r["EventType"] == r["GameId"]  # noqa: E731
    left = stream(left_events, NAMES, batch_size=batch)
    right = stream(right_events, right_names, batch_size=batch)
    got = left.join(right, "field1", right_key, result)
    ref = reference(left_events, NAMES).join(reference(right_events, right_names), "field1", right_key, result)
    table = got.to_arrow()
    rows = table.select(["EventType", "GameId"]).to_pylist()
    assert len(rows) == N and all(ok(r) for r in rows)  # Trill's assertions
    check(got, [start(s, p) for s, _, p in ref.events], ref)


@pytest.mark.parametrize("batch", BATCH_SIZES)
@pytest.mark.parametrize("left_first", [True, False], ids=["FixedIntervalEquiJoin1", "FixedIntervalEquiJoin2"])
def test_fixed_interval_equi_join(left_first, batch):
    """Points lasting 100 ticks joined on the payload: each pair alive [i + 100, i + 150)."""
    early, late = [point(i + 50, i) for i in range(N)], [point(i + 100, i) for i in range(N)]
    left_events, right_events = (late, early) if left_first else (early, late)
    left = stream(left_events, batch_size=batch).alter_duration(100)
    right = stream(right_events, batch_size=batch).alter_duration(100)
    got = left.join(right, "v", "v", lambda a, b: {"v": a.v})
    ref = (
        reference(left_events)
        .alter_duration(100)
        .join(reference(right_events).alter_duration(100), "v", "v", lambda a, b: {"v": a.v})
    )
    check(got, [interval(i + 100, i + 150, i) for i in range(N)], ref)


@pytest.mark.parametrize("batch", BATCH_SIZES)
@pytest.mark.parametrize("keyed", [False, True], ids=["FixedIntervalEquiJoin3", "FixedIntervalEquiJoin4"])
def test_partitioned_fixed_interval_join(keyed, batch):
    """Trill's partitioned streams (partition i holds payload i): the partition is a field here, and
    the join runs per partition (Join3: no key beyond the partition; Join4: also on the payload)."""
    names = ("part", "v")
    left_events = [point(i + 50, (i, i)) for i in range(N)]
    right_events = [point(i + 100, (i, i)) for i in range(N)]
    key = "part" if not keyed else ["part", "v"]
    left = stream(left_events, names, batch_size=batch).alter_duration(100)
    right = stream(right_events, names, batch_size=batch).alter_duration(100)
    got = left.join(right, key, key, lambda a, b: {"part": a.part, "v": a.v})
    check(got, [interval(i + 100, i + 150, (i, i)) for i in range(N)])
