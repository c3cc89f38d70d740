"""The Impatience sorter's chunks (a large pushed batch radix sorted into one sorted run instead of placed
element by element) against the plain reference models of ``test_impatience`` and ``test_impatience_fused``:
``chunk_min`` small makes most pushes chunks, mixed with placed batches, punctuations, snapshots and
``push_punctuate`` calls, and times spanning more than 2**33 (placed as usual)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tidal.ops.impatience import INT64_MAX, INT64_MIN, ImpatienceSorter

from .test_impatience import RefSorter, _apply, _same, streams
from .test_impatience_fused import programs, reference

chunk_mins = st.sampled_from([1, 2, 5])


@settings(deadline=None, max_examples=150)
@given(streams(), chunk_mins)
def test_chunked_pushes_match_the_reference(ops, chunk_min):
    s, ref = ImpatienceSorter(initial_capacity=1, chunk_min=chunk_min), RefSorter()
    for op in ops:
        _same(_apply(s, op), _apply(ref, op))
        assert s.buffered == len(ref.buf)
    assert s.num_runs == 0


@settings(deadline=None, max_examples=100)
@given(streams(), chunk_mins, st.data())
def test_chunks_survive_a_snapshot(ops, chunk_min, data):
    cut = data.draw(st.integers(0, len(ops)))
    s = ImpatienceSorter(initial_capacity=1, chunk_min=chunk_min)
    for op in ops[:cut]:
        _apply(s, op)
    state = s.snapshot()
    for k, v in state.items():
        assert isinstance(v, int | np.ndarray), k
    r = ImpatienceSorter.restore({k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in state.items()})
    assert r.buffered == s.buffered and r.num_runs == s.num_runs and r.next_row_id == s.next_row_id
    for op in ops[cut:]:
        _same(_apply(s, op), _apply(r, op))


@settings(max_examples=100, deadline=None)
@given(programs(), chunk_mins, st.data())
def test_push_punctuate_with_a_chunk_held_equals_the_reference(program, chunk_min, data):
    """A long push before the first punctuation (a chunk), then ``push_punctuate`` for the rest."""
    times, ends, puncts, _ = program
    late_ref, out_ref, rest_ref = reference(times.tolist(), ends, puncts)
    stop = data.draw(st.integers(0, ends[0] if ends else len(times)))
    s = ImpatienceSorter(64, chunk_min=chunk_min)
    late = s.push(times[:stop]).tolist()
    mask, t, r, counts = s.push_punctuate(
        times[stop:], np.array(ends, dtype=np.int64) - stop, np.array(puncts, dtype=np.int64)
    )
    assert late + mask.tolist() == late_ref
    got = [
        list(zip(t[k : k + c].tolist(), r[k : k + c].tolist(), strict=True))
        for k, c in zip((np.cumsum(counts) - counts).tolist(), counts.tolist(), strict=True)
    ]
    assert got == out_ref
    t, r = s.flush_all()
    assert list(zip(t.tolist(), r.tolist(), strict=True)) == rest_ref


@pytest.mark.parametrize("p", [0.01, 0.3, 1.0])
def test_large_batches_against_numpy(p):
    """Batches of 10,000 (chunks by default) with punctuations between, against a stable argsort."""
    rng = np.random.default_rng(7)
    n = 200_000
    t = np.arange(n, dtype=np.int64) * 3
    m = rng.random(n) < p
    t[m] -= rng.exponential(20_000, int(m.sum())).astype(np.int64)
    s = ImpatienceSorter()
    out_t, out_r, late = [], [], []
    for pos in range(0, n, 10_000):
        late.append(s.push(t[pos : pos + 10_000]))
        a, b = s.punctuate(int(t[: pos + 10_000].max()) - 40_000)
        out_t.append(a)
        out_r.append(b)
        assert s.num_runs <= 20
    a, b = s.flush_all()
    late = np.concatenate(late)
    keep = np.flatnonzero(~late)
    order = keep[np.argsort(t[keep], kind="stable")]
    np.testing.assert_array_equal(np.concatenate([*out_r, b]), order)
    np.testing.assert_array_equal(np.concatenate([*out_t, a]), t[order])


def test_wide_times_are_placed():
    """Times spanning more than 2**33 in a disordered push are placed into runs (a radix sort would need too
    many passes); the first push (taken as nearly sorted) inserts them into the in-order queue instead."""
    wide = np.array([INT64_MAX, INT64_MIN, 0, 5, INT64_MIN + 1], dtype=np.int64)
    s = ImpatienceSorter(chunk_min=1)
    s.push(wide)
    assert s.num_runs == 0 and s.buffered == 5  # all in the queue, four of them inserted
    t, r = s.flush_all()
    assert t.tolist() == [INT64_MIN, INT64_MIN + 1, 0, 5, INT64_MAX] and r.tolist() == [1, 4, 2, 3, 0]
    s.push(wide)  # the first push was disordered: this one is pushed the usual way
    assert s.num_runs == 3  # placement: runs [MAX], [MIN, 0, 5], [MIN + 1]
    t, r = s.flush_all()
    assert t.tolist() == [INT64_MIN, INT64_MIN + 1, 0, 5, INT64_MAX] and r.tolist() == [6, 9, 7, 8, 5]
    s.push(np.array([9, 4, 4, 7], dtype=np.int64))
    assert s.num_runs == 1  # one chunk
    t, r = s.punctuate(4)
    assert t.tolist() == [4, 4] and r.tolist() == [11, 12]


@settings(deadline=None, max_examples=40)
@given(
    st.integers(0, 2**32 - 1),
    st.sampled_from([3, 50, 5_000, 2**40]),
    st.sampled_from([1, 7, 200]),
    st.sampled_from([600, 3000]),
)
def test_many_runs_released_at_once_match_a_stable_sort(seed, spread, batch, every):
    """Placed batches building many runs (times drawn from a range, ties everywhere), released a few
    thousand at a time: the release radix sorts the runs' prefixes (or merges them: one long run, or
    times too wide) and puts ties in row id order."""
    rng = np.random.default_rng(seed)
    n = 6000
    t = np.arange(n, dtype=np.int64) // 4 * (1 + spread // 1000) + rng.integers(0, spread, n)
    s = ImpatienceSorter(chunk_min=10**9)
    got_t, got_r, late = [], [], []
    for pos in range(0, n, batch):
        late.append(s.push(t[pos : pos + batch]))
        if (pos // batch) % max(1, every // batch) == 0:
            a, b = s.punctuate(int(t[: pos + batch].max()) - spread)
            got_t.append(a)
            got_r.append(b)
    a, b = s.flush_all()
    late = np.concatenate(late)
    keep = np.flatnonzero(~late)
    order = keep[np.lexsort((keep, t[keep]))]
    np.testing.assert_array_equal(np.concatenate([*got_r, b]), order)
    np.testing.assert_array_equal(np.concatenate([*got_t, a]), t[order])


@settings(deadline=None, max_examples=200)
@given(
    st.lists(st.integers(-50, 50), min_size=1, max_size=300),
    st.sampled_from([1, 1000, 10**6]),
    st.integers(-(2**40), 2**40),
    st.booleans(),
    st.integers(-60, 60),
)
def test_the_bucket_sort_is_a_stable_sort_or_declines(jitter, step, base, given_ids, wm):
    """The nearly-in-order chunk sort gives (time, row id) order as a stable sort does, for jittered,
    crowded or spread times, ids given or counted, elements under the watermark left out; or it
    declines (-1) and writes nothing."""
    from tidal.ops.impatience_bucket import _bucket_chunk

    n = len(jitter)
    times = base + np.arange(n, dtype=np.int64) * step // 10 + np.array(jitter, dtype=np.int64) * step
    ids = np.arange(n, dtype=np.int64) * 3 + 7 if given_ids else np.empty(0, np.int64)
    row0, cut = 11, base + wm * step
    out_t, out_r = np.full(n, -1, np.int64), np.full(n, -1, np.int64)
    m = _bucket_chunk(times, row0, ids, cut, out_t, out_r)
    rows = ids if given_ids else row0 + np.arange(n, dtype=np.int64)
    keep = times >= cut
    order = np.argsort(times[keep], kind="stable")
    if m < 0:  # declined (the radix sort takes the chunk): nothing written
        assert (out_t == -1).all() and (out_r == -1).all()
        return
    assert m == int(keep.sum())
    assert out_t[:m].tolist() == times[keep][order].tolist() and out_r[:m].tolist() == rows[keep][order].tolist()


def test_the_bucket_sort_declines_times_crowded_into_one_bucket():
    from tidal.ops.impatience_bucket import _bucket_chunk

    times = np.array([5] * 50 + [6] * 50 + [2**30], dtype=np.int64)
    out = np.empty(len(times), np.int64), np.empty(len(times), np.int64)
    assert _bucket_chunk(times, 0, np.empty(0, np.int64), INT64_MIN, *out) == -1
