"""Trill's GroupApply tests, re-expressed for tidal's ``group_apply`` and ``aggregate``.

Inputs and expected results from Trill's test Sources/Test/SimpleTesting/Streamables/GroupStreamableTests.tt
(generated for row/columnar and small-batch variants), MIT licence (Copyright (c) Microsoft Corporation).

Which Trill tests are ported here, and which are not and why: tests/trill/README.md.
"""

from __future__ import annotations

import pytest

from tidal import INFINITY, agg
from tidal.testing import assert_same_snapshots
from trill.events import BATCH_SIZES, check, interval, punct, reference, start, stream

NUMBERS = [start(0, i) for i in range(20)]  # ToTemporalStreamable(s => 0, s => infinity)


@pytest.mark.parametrize("batch", BATCH_SIZES)
def test_group0_pass_through(batch):
    got = stream(NUMBERS, batch_size=batch).group_apply(lambda e: e.v % 2, lambda g: g, lambda k, e: {"v": e.v})
    check(got, NUMBERS, reference(NUMBERS).group_apply(lambda e: e.v % 2, lambda g: g, lambda k, e: {"v": e.v}))


@pytest.mark.parametrize("batch", BATCH_SIZES)
def test_group1_and_group3_count_per_parity(batch):
    """Group1 (payload: the count) and Group3 (the count in a struct's property): two groups of 10."""
    got = stream(NUMBERS, batch_size=batch).group_apply(lambda e: e.v % 2, lambda g: g.aggregate(agg.count()))
    ref = reference(NUMBERS).group_apply(lambda e: e.v % 2, lambda g: g.aggregate(agg.count()))
    check(got, [start(0, (0, 10)), start(0, (1, 10))], ref)
    only_count = stream(NUMBERS, batch_size=batch).group_apply(
        lambda e: e.v % 2, lambda g: g.aggregate(agg.count()), lambda k, c: {"P": c.count}
    )
    check(only_count, [start(0, 10), start(0, 10)])


def test_group5_sum_and_count():
    """``Enumerable.Range(0, 20).ToStreamable()``: start edges at 0; sum 190 + count 20 = 210."""
    got = stream(NUMBERS).aggregate(s=agg.sum("v"), c=agg.count()).select(lambda e: {"field1": e.s + e.c})
    check(got, [start(0, 210)])


@pytest.mark.parametrize("batch", BATCH_SIZES)
def test_group7_count_per_string_key(batch):
    """``ToStatStreamable``: start edges, 80,000 per tick (all 100 at time 0 here)."""
    rows = [start(0, (i, str(i % 10))) for i in range(100)]
    names = ("field1", "field2")
    got = stream(rows, names, batch_size=batch).group_apply(
        "field2", lambda g: g.aggregate(agg.count()), lambda k, c: {"Item1": k, "Item2": c.count}
    )
    check(got, [start(0, (str(k), 10)) for k in range(10)])


GAME_NAMES = ("EventType", "GameId", "UserId", "NumKills")
GAME = [
    start(9900, (0, 10, 100, 0)), start(10000, (1, 10, 100, 1)), start(10020, (1, 10, 100, 1)),
    start(10025, (1, 10, 100, 30)), start(10030, (1, 10, 100, 0)), start(10040, (2, 10, 0, 0)),
]  # fmt: skip


def _signal_changes(s):
    """Trill's ComputeSignalChangeStream: each value paired with the one just before it, at the change."""
    return s.multicast(
        lambda xs: xs.shift_lifetime(1).cross_join(
            xs.alter_duration(1), lambda a, b: {"FromKills": a.kills, "ToKills": b.kills}
        )
    )


def test_group2_kill_signal_changes():
    """Group2: game events clipped at the game's end, kills summed per (game, user), changes paired.

    Trill's test asserts that the output holds no data (only the final punctuation). By the
    definitions of the operators it uses, it does not: the per-snapshot sum of kills of user 100
    in game 10 is 0 from 9900, 1 from 10000, 2 from 10020, 32 from 10025, and again 32 from 10030
    (a new snapshot starts there: the aggregate emits one event per snapshot, as Trill's does), so
    pairing each sum event's point start with the sum alive just before it gives four pairs. tidal
    gives them, and so does the reference evaluator on the same plan. We found no reason in Trill's
    operators for an empty result (the test's comment describes a medal award that its query no
    longer computes), so the Trill assertion is recorded as a difference, not kept: the expectation
    here is the answer derived by hand from the definitions.
    """
    games = stream(GAME, GAME_NAMES)
    clipped = games.where(lambda e: e.EventType < 2).clip(games.where(lambda e: e.EventType == 2), "GameId", "GameId")
    got = clipped.group_apply(
        lambda e: e.GameId * 1000 + e.UserId, lambda g: _signal_changes(g.aggregate(kills=agg.sum("NumKills")))
    ).select("FromKills", "ToKills")
    by_hand = [
        interval(10000, 10001, (0, 1)), interval(10020, 10021, (1, 2)), interval(10025, 10026, (2, 32)),
        interval(10030, 10031, (32, 32)),
    ]  # fmt: skip
    check(got, by_hand)
    ref_games = reference(GAME, GAME_NAMES)
    ref_clipped = ref_games.where(lambda e: e.EventType < 2).clip(
        ref_games.where(lambda e: e.EventType == 2), "GameId", "GameId"
    )
    sums = ref_clipped.aggregate(kills=agg.sum("NumKills"))
    changes = sums.shift_lifetime(1).cross_join(sums.alter_duration(1), lambda a, b: {"a": a.kills, "b": b.kills})
    assert_same_snapshots(got, changes)
    assert INFINITY not in [e for _, e, _ in changes.events]
    check(got, [*by_hand, punct()])
