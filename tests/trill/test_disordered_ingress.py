"""Trill's disordered-ingress tests (DisorderPolicy Drop / Adjust / Throw), re-expressed for tidal's
``from_arrow(..., disorder=, reorder_latency=)`` and ``late_events()``.

Inputs and expected results from Trill's tests
Sources/Test/SimpleTesting/IngressEgress/DisorderedIngressAndEgressTests.tt and ReorderPolicyTests.tt,
MIT licence (Copyright (c) Microsoft Corporation). Trill draws its disordered inputs from .NET's
``Random(2)`` / ``Random(10)``, whose sequence is not reproduced here: the inputs are drawn the same
way (30 values from 10 on, half of them moved back by up to 10 ticks; intervals up to 10 long) from
several Python seeds, and the expected outputs are computed by Trill's own oracles, written out
below (``_trill_drop``, ``_trill_adjust``, ...).

Which Trill tests are ported here, and which are not and why: tests/trill/README.md.
"""

from __future__ import annotations

import random

import pyarrow as pa
import pytest

import tidal
from tidal.core.errors import InputError
from tidal.testing import assert_same_snapshots

SEEDS = range(8)
LAGS = (5, 20)


def _disordered(seed: int, size: int = 30, amount: int = 10, offset: int = 10) -> list[int]:
    rand = random.Random(seed)
    return [e - rand.randrange(0, amount) if rand.random() < 0.5 else e for e in range(offset, offset + size)]


def _late(values, lag):
    """Trill's oracle: a value is out of window when it is below (the largest before it) - lag."""
    latest, out = 0, []
    for v in values:
        out.append(v < latest - lag)
        latest = max(latest, v)
    return out


def _trill_adjusted_starts(values, lag):
    latest, out = 0, []
    for v in values:
        late = v < latest - lag
        latest = max(latest, v)
        out.append(latest - lag if late else v)
    return out


def _start_edges(values, policy, lag, punctuate_every=None):
    table = pa.table({"t": pa.array(values, pa.int64())})
    return tidal.from_arrow(
        table, time="t", kind="start", disorder=policy, reorder_latency=lag, punctuate_every=punctuate_every
    )


def _tidal_late(values, lag, period):
    """tidal's rule with ``punctuate_every=period``: late when below the last punctuation, the grid
    point ``align_down(high watermark - lag, period)`` (tidal.io.disorder)."""
    latest, out = None, []
    for v in values:
        out.append(latest is not None and v < (latest - lag) - (latest - lag) % period)
        latest = v if latest is None else max(latest, v)
    return out


def _starts(result: pa.Table) -> list[tuple[int, int]]:
    return list(zip(result.column("sync_time").to_pylist(), result.column("t").to_pylist(), strict=True))


@pytest.mark.parametrize("punctuate_every", [None, 10], ids=["", "Time"])
@pytest.mark.parametrize("lag", LAGS)
@pytest.mark.parametrize("policy", ["drop", "adjust", "throw"])
@pytest.mark.parametrize("seed", SEEDS)
def test_disordered_start_edges(seed, policy, lag, punctuate_every):
    """DisorderedStartEdgeTest{Drop,Adjust,Throw}{5,20}[Time][Diagnostic]: start edges ``(i, i)``."""
    values = _disordered(seed)
    late = _late(values, lag)
    if punctuate_every is not None:
        # a documented convention difference: with periodic punctuations tidal judges lateness
        # against the last (grid) punctuation, Trill against high watermark - lag; tidal's late
        # events are then a subset of Trill's
        tidal_late = _tidal_late(values, lag, punctuate_every)
        assert all(t <= r for t, r in zip(tidal_late, late, strict=True))
        late = tidal_late
    s = _start_edges(values, policy, lag, punctuate_every)
    if policy == "throw":
        if any(late):
            with pytest.raises(InputError):
                s.to_arrow()
            return
        assert _starts(s.to_arrow()) == sorted((v, v) for v in values)
        return
    result = s.to_arrow()
    times = result.column("sync_time").to_pylist()
    assert times == sorted(times)  # Trill: IsOrdered(SyncTime)
    if policy == "drop":
        expected = sorted((v, v) for v, gone in zip(values, late, strict=True) if not gone)
    elif punctuate_every is None:
        expected = sorted(zip(_trill_adjusted_starts(values, lag), values, strict=True))
    else:
        latest, moved = None, []
        for v, gone in zip(values, late, strict=True):
            moved.append(((latest - lag) - (latest - lag) % punctuate_every if gone else v, v))
            latest = v if latest is None else max(latest, v)
        expected = sorted(moved)
    assert sorted(_starts(result)) == expected
    # the Diagnostic variants: GetDroppedAdjustedEventsDiagnostic, the out-of-window events as they came
    late_values = sorted(v for v, gone in zip(values, late, strict=True) if gone)
    diagnostic = s.late_events().to_arrow()
    assert sorted(diagnostic.column("t").to_pylist()) == late_values
    assert sorted(diagnostic.column("sync_time").to_pylist()) == late_values


def _intervals(seed: int, size: int = 30, amount: int = 10, max_interval: int = 10):
    rand = random.Random(1000 + seed)
    out = []
    for e in range(amount, amount + size):
        s = e - rand.randrange(0, amount) if rand.random() < 0.5 else e
        out.append((s, s + rand.randrange(1, max_interval)))
    return out


@pytest.mark.parametrize("lag", LAGS)
@pytest.mark.parametrize("policy", ["drop", "adjust", "throw"])
@pytest.mark.parametrize("seed", SEEDS)
def test_disordered_intervals(seed, policy, lag):
    """DisorderedIntervalTest*: intervals; Trill checks the output's start times."""
    rows = _intervals(seed)
    late = _late([s for s, _ in rows], lag)
    table = pa.table({"start": pa.array([s for s, _ in rows], pa.int64()), "end": pa.array([e for _, e in rows])})
    s = tidal.from_arrow(table, time="start", end="end", disorder=policy, reorder_latency=lag)
    if policy == "throw":
        if any(late):
            with pytest.raises(InputError):
                s.to_arrow()
        else:
            assert sorted(s.to_arrow().column("sync_time").to_pylist()) == sorted(r[0] for r in rows)
        return
    got = s.to_arrow()
    if policy == "drop":
        kept = [(a, b, (a, b)) for (a, b), gone in zip(rows, late, strict=True) if not gone]
        assert got.column("sync_time").to_pylist() == sorted(a for a, _, _ in kept)  # Trill's check
        assert_same_snapshots(got, kept)
        return
    # adjust: a documented convention difference. Trill moves a late interval's start up to the
    # punctuation and keeps its end (dropping it when the end is before the punctuation); tidal
    # moves the start and keeps the duration (tidal.io.disorder). Both keep every on-time event as
    # it is and move every late start to the same punctuation.
    latest, tidal_rule, trill_rule, trill_drops = 0, [], [], False
    for (a, b), gone in zip(rows, late, strict=True):
        latest = max(latest, a)
        p = latest - lag
        tidal_rule.append((p, p + (b - a), (a, b)) if gone else (a, b, (a, b)))
        if not gone:
            trill_rule.append(a)
        elif b < p:
            trill_drops = True  # Trill drops it, tidal keeps it (moved)
        else:
            trill_rule.append(p)
    assert_same_snapshots(got, tidal_rule)
    assert (got.column("sync_time").to_pylist() == sorted(trill_rule)) == (not trill_drops)


def test_sorter_dequeue_until_per_partition():
    """SorterDequeueUntill: two partitions, each with its own high watermark (Drop(10)).

    Trill's partitioned ingress keeps a watermark per partition; tidal has none per key, so each
    partition is its own source here and the sorted streams are united: ``{1, 2}`` (partition 1,
    22 ticks behind its partition's watermark 20... by 18 > 10) is dropped, nothing of partition 0 is."""
    rows = [(0, 1), (1, 1), (0, 3), (0, 5), (1, 3), (1, 20), (0, 6), (0, 7), (0, 8), (1, 2), (0, 2), (1, 30), (0, 13)]
    expected = [(1, 1), (1, 3), (1, 20), (0, 1), (0, 2), (0, 3), (0, 5), (0, 6), (0, 7), (0, 8), (0, 13), (1, 30)]
    streams = []
    for part in (0, 1):
        t = [v for p, v in rows if p == part]
        table = pa.table({"part": pa.array([part] * len(t), pa.int64()), "t": pa.array(t, pa.int64())})
        streams.append(tidal.from_arrow(table, time="t", kind="start", disorder="drop", reorder_latency=10))
    got = streams[0].union(streams[1])
    assert_same_snapshots(got, [(t, tidal.INFINITY, (p, t)) for p, t in expected])


@pytest.mark.parametrize("n", [50_000])
def test_reorder_within_latency_drops_nothing(n):
    """ReorderTest1/2 (ImpatienceSort / PriorityQueue): half the events up to 200 ticks early, a
    reorder latency of 202: the output is the input sorted, nothing dropped (Trill uses 500,000)."""
    rand = random.Random(2)
    values = [e - rand.randrange(0, 200) if rand.random() < 0.5 else e for e in range(200, 200 + n)]
    table = pa.table({"t": pa.array(values, pa.int64())})
    s = tidal.from_arrow(table, time="t", kind="start", disorder="drop", reorder_latency=202)
    assert s.to_arrow().column("sync_time").to_pylist() == sorted(values)
    assert s.late_count() == 0
