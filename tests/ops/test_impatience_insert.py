"""The Impatience sorter's nearly sorted pushes: a chunk push after a nearly sorted one inserts its slightly late
elements into the in-order queue (``_split_insert``, bounded reach and moves) and a release of only the queue's
prefix hands over the queue's buffers. Checked against numpy's stable argsort and the plain reference sorter of
``test_impatience``, with the thresholds (reach, move budget, hand-off size) set low so that every branch runs:
elements beyond the reach, a budget spent, hand-offs of every release, outputs kept while pushing goes on."""

from __future__ import annotations

from contextlib import contextmanager

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import tidal.ops.impatience as imp
from tidal.ops.impatience import INT64_MIN, ImpatienceSorter
from tidal.ops.impatience_chunks import _merge_into, _split_insert

from .test_impatience import RefSorter, _apply, _same

_NONE = np.empty(0, dtype=np.int64)


def _nearly_sorted(rng, n, p, d, far):
    """Times 0..n-1 in arrival order, a share ``p`` moved back by up to ``d`` (and a share ``far`` by up to 50 d);
    ties come from the moves."""
    t = np.arange(n, dtype=np.int64)
    m = rng.random(n) < p
    t[m] -= rng.integers(0, d + 1, int(m.sum()))
    f = rng.random(n) < far
    t[f] -= rng.integers(0, 50 * d + 1, int(f.sum()))
    return t


@contextmanager
def _limits(reach, budget, hand_off):
    saved = imp._REACH, imp._BUDGET, imp._HAND_OFF
    imp._REACH, imp._BUDGET, imp._HAND_OFF = reach, budget, hand_off
    try:
        yield
    finally:
        imp._REACH, imp._BUDGET, imp._HAND_OFF = saved


@settings(deadline=None, max_examples=200)
@given(
    st.integers(0, 2**32 - 1),
    st.integers(0, 300),
    st.integers(0, 60),
    st.sampled_from([0, 1, 3, 2**40]),
    st.integers(1, 50),
    st.sampled_from([0, 1, 2, 1000]),
    st.integers(0, 20),
)
def test_split_insert_matches_a_stable_sort(seed, held, n, offset, reach, budget, wm_back):
    """The queue after the kernel holds its old pairs and the inserted ones sorted by (time, row id); the
    others are the rest, in arrival order; with them, every element at or above the watermark is there once."""
    rng = np.random.default_rng(seed)
    q = np.sort(rng.integers(0, 40, held)).astype(np.int64) + offset  # the queue's live pairs (rows 0..held-1)
    times = rng.integers(0, 50, n).astype(np.int64) + offset
    wm = (int(q[0]) if held else offset) - wm_back if held or n else INT64_MIN
    wm = min(wm, int(q[0])) if held else wm  # queued pairs are never below the watermark
    lo = int(rng.integers(0, 5))  # pairs before the queue's head are not touched
    q_t = np.full(lo + held + n + 1, -7, dtype=np.int64)
    q_r = np.full(lo + held + n + 1, -7, dtype=np.int64)
    q_t[lo : lo + held], q_r[lo : lo + held] = q, np.arange(held)
    oth_t, oth_r = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
    high = int(q[-1]) if held else int(INT64_MIN)
    no, nu, new_high, ins, far = _split_insert(
        times, held, _NONE, wm, high, q_t, q_r, lo, lo + held, oth_t, oth_r, budget, reach
    )
    assert (q_t[:lo] == -7).all() and (q_t[lo + held + no :] == -7).all()
    keep = np.flatnonzero(times >= wm)
    all_t = np.concatenate([q, times[keep]])
    all_r = np.concatenate([np.arange(held), held + keep])
    got_t = np.concatenate([q_t[lo : lo + held + no], oth_t[:nu]])
    got_r = np.concatenate([q_r[lo : lo + held + no], oth_r[:nu]])
    order = np.lexsort((got_r, got_t))
    ref = np.argsort(all_t, kind="stable")
    np.testing.assert_array_equal(got_t[order], all_t[ref])
    np.testing.assert_array_equal(got_r[order], all_r[ref])
    queued = np.lexsort((q_r[lo : lo + held + no], q_t[lo : lo + held + no]))
    np.testing.assert_array_equal(queued, np.arange(held + no))  # the queue is sorted by (time, row id)
    assert (np.diff(oth_r[:nu]) > 0).all()  # the others keep arrival order
    assert new_high == max([high, *times[keep].tolist()])
    assert nu >= far and (budget > 0 or ins == 0)


@settings(deadline=None, max_examples=60)
@given(
    st.integers(0, 2**32 - 1),
    st.sampled_from([0.0, 0.01, 0.2]),
    st.sampled_from([0.0, 0.002]),
    st.sampled_from([(1, 2, 1), (4, 1, 64), (1024, 2, 10**9), (16, 0, 1)]),
    st.sampled_from([8, 50]),
    st.sampled_from([30, 200, 5000]),
)
def test_nearly_sorted_pushes_match_the_reference(seed, p, far, limits, batch, every):
    """Pushes of nearly sorted times (all chunk pushes), punctuations at the high mark less a latency (some
    elements late) and at the end a flush: each call's result as the reference sorter's, and every output kept
    unchanged by the pushes after it (handed-off buffers belong to the caller)."""
    rng = np.random.default_rng(seed)
    d = int(rng.integers(1, 40))
    t = _nearly_sorted(rng, 3000, p, d, far)
    s, ref = ImpatienceSorter(initial_capacity=1, chunk_min=4), RefSorter()
    kept = []
    with _limits(*limits):
        for pos in range(0, len(t), batch):
            op = ("push", t[pos : pos + batch].tolist())
            _same(_apply(s, op), _apply(ref, op))
            if (pos // batch) % max(1, every // batch) == 0:
                op = ("punct", int(t[: pos + batch].max()) - 2 * d)
                got = _apply(s, op)
                _same(got, _apply(ref, op))
                kept.append((got, tuple(a.copy() for a in got)))
        got = _apply(s, ("flush", None))
        _same(got, _apply(ref, ("flush", None)))
    kept.append((got, tuple(a.copy() for a in got)))
    for now, then in kept:
        _same(now, then)
    assert s.buffered == 0


def test_a_nearly_sorted_stream_is_released_without_a_copy():
    """Large pushes of times a few positions late, punctuated rarely: the release is the queue's prefix, handed
    over (a view of the queue's old buffer, not a fresh copy), and equals numpy's stable sort."""
    rng = np.random.default_rng(7)
    t = _nearly_sorted(rng, 600_000, 0.01, 100, 0.0)
    s = ImpatienceSorter()
    outs = []
    for pos in range(0, len(t), 200_000):
        s.push(t[pos : pos + 200_000])
        assert s.num_runs == 0  # nothing outside the queue: every late element was inserted
        outs.append(s.punctuate(int(t[: pos + 200_000].max()) - 300))
        assert outs[-1][0].base is not None and len(outs[-1][0]) > imp._HAND_OFF  # a view of the old buffer
    outs.append(s.flush_all())
    order = np.argsort(t, kind="stable")
    np.testing.assert_array_equal(np.concatenate([o[1] for o in outs]), order)
    np.testing.assert_array_equal(np.concatenate([o[0] for o in outs]), t[order])


def _sorted_pairs(times, rows):
    order = np.lexsort((rows, times))
    return times[order], rows[order]


@settings(deadline=None, max_examples=200)
@given(st.integers(0, 2**32 - 1), st.integers(0, 200), st.integers(0, 60), st.integers(0, 4))
def test_merge_into_matches_a_stable_sort(seed, held, m, lo):
    """Sorted pairs merged into a sorted queue from the back, in place: the queue then holds both sorted by
    (time, row id), as a stable sort of all of them by time in row id order; the pairs before the queue's head
    are not touched."""
    rng = np.random.default_rng(seed)
    rows = rng.permutation(held + m).astype(np.int64)
    times = rng.integers(0, 30, held + m).astype(np.int64)
    q_t, q_r = _sorted_pairs(times[:held], rows[:held])
    s_t, s_r = _sorted_pairs(times[held:], rows[held:])
    buf_t = np.full(lo + held + m, -1, dtype=np.int64)
    buf_r = np.full(lo + held + m, -1, dtype=np.int64)
    buf_t[lo : lo + held], buf_r[lo : lo + held] = q_t, q_r
    _merge_into(buf_t, buf_r, lo, lo + held, s_t, s_r, m)
    assert (buf_t[:lo] == -1).all() and (buf_r[:lo] == -1).all()
    by_row = np.argsort(rows, kind="stable")  # the pairs in row id order, then a stable sort by time
    ref = by_row[np.argsort(times[by_row], kind="stable")]
    np.testing.assert_array_equal(buf_t[lo:], times[ref])
    np.testing.assert_array_equal(buf_r[lo:], rows[ref])


def test_moderate_disorder_is_merged_into_the_queue():
    """Large pushes with a tenth of the events a little late (more than a nearly sorted push inserts): their
    sorted others are merged into the queue, so that a release is still the queue's prefix, handed over."""
    rng = np.random.default_rng(11)
    t = _nearly_sorted(rng, 600_000, 0.1, 100, 0.0)
    s = ImpatienceSorter()
    outs = []
    for pos in range(0, len(t), 200_000):
        s.push(t[pos : pos + 200_000])
        assert s.num_runs == 0
        outs.append(s.punctuate(int(t[: pos + 200_000].max()) - 300))
        assert outs[-1][0].base is not None and len(outs[-1][0]) > imp._HAND_OFF
    outs.append(s.flush_all())
    order = np.argsort(t, kind="stable")
    np.testing.assert_array_equal(np.concatenate([o[1] for o in outs]), order)
    np.testing.assert_array_equal(np.concatenate([o[0] for o in outs]), t[order])


def test_a_disordered_push_turns_insertion_off():
    """A batch mostly out of order is sorted the usual way next time (into one chunk), and the results stay
    those of a stable sort."""
    rng = np.random.default_rng(3)
    t = np.concatenate([np.arange(20_000), rng.permutation(20_000) + 20_000, rng.permutation(20_000) + 40_000])
    s = ImpatienceSorter(chunk_min=1000)
    for pos in range(0, len(t), 10_000):
        s.push(t[pos : pos + 10_000])
    assert s.num_runs >= 2  # the disordered batches became chunks
    got_t, got_r = s.flush_all()
    order = np.argsort(t, kind="stable")
    np.testing.assert_array_equal(got_r, order)
    np.testing.assert_array_equal(got_t, t[order])
