"""Tests for the Impatience sorter (tidal.ops.impatience)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tidal.ops.impatience import INT64_MAX, INT64_MIN, ImpatienceSorter

# --------------------------------------------------------------------------------------------------
# reference model
# --------------------------------------------------------------------------------------------------


class RefSorter:
    """Obviously-correct model: a list, sorted() on punctuation."""

    def __init__(self):
        self.buf: list[tuple[int, int]] = []
        self.wm = int(INT64_MIN)
        self.next_row = 0

    def push(self, times):
        late = []
        for x in times:
            x = int(x)
            is_late = x < self.wm
            late.append(is_late)
            if not is_late:
                self.buf.append((x, self.next_row))
            self.next_row += 1
        return np.array(late, dtype=bool)

    def punctuate(self, t):
        self.wm = max(self.wm, int(t))
        return self._release(int(t))

    def flush_all(self):
        return self._release(int(INT64_MAX))

    def _release(self, t):
        out = sorted(e for e in self.buf if e[0] <= t)
        self.buf = [e for e in self.buf if e[0] > t]
        return (np.array([e[0] for e in out], dtype=np.int64), np.array([e[1] for e in out], dtype=np.int64))


def _apply(sorter, op):
    kind, arg = op
    if kind == "push":
        return sorter.push(np.asarray(arg, dtype=np.int64))
    if kind == "punct":
        return sorter.punctuate(arg)
    return sorter.flush_all()


def _same(a, b):
    if isinstance(a, tuple):
        assert len(a) == len(b) == 2
        np.testing.assert_array_equal(a[0], b[0])
        np.testing.assert_array_equal(a[1], b[1])
        assert a[0].dtype == np.int64 and a[1].dtype == np.int64
    else:
        np.testing.assert_array_equal(a, b)
        assert a.dtype == np.bool_


# --------------------------------------------------------------------------------------------------
# strategies
# --------------------------------------------------------------------------------------------------


@st.composite
def streams(draw, max_ops=40):
    """A list of ops: ('push', [times]), ('punct', t) with non-decreasing t, ending with ('flush', None)."""
    span = draw(st.sampled_from([3, 20, 1000, 2**40]))
    base = draw(st.integers(-(2**40), 2**40))
    ops = []
    p = base - draw(st.integers(0, span))
    for _ in range(draw(st.integers(0, max_ops))):
        if draw(st.integers(0, 2)) == 0:
            p += draw(st.integers(0, max(1, span // 4)))
            ops.append(("punct", p))
        else:
            n = draw(st.sampled_from([1, 1, 2, 3, 7, 20]))
            # times cluster around the current punctuation so that some are late and many tie
            lo = p - max(1, span // 8)
            ops.append(("push", draw(st.lists(st.integers(lo, lo + span), min_size=n, max_size=n))))
    ops.append(("flush", None))
    return ops


# --------------------------------------------------------------------------------------------------
# tests
# --------------------------------------------------------------------------------------------------


def test_paper_example():
    # arrival 2 6 5 1 2* 4 3 7 4* 8 inf*
    s = ImpatienceSorter()
    got = []
    for x in [2, 6, 5, 1, "2*", 4, 3, 7, "4*", 8, "inf*"]:
        if isinstance(x, str):
            t = x[:-1]
            got.append(s.punctuate(INT64_MAX) if t == "inf" else s.punctuate(int(t)))
        else:
            assert not s.push(np.array([x])).any()
    assert [g[0].tolist() for g in got] == [[1, 2], [3, 4], [5, 6, 7, 8]]
    assert [g[1].tolist() for g in got] == [[3, 0], [5, 4], [2, 1, 6, 7]]
    assert s.buffered == 0


def test_paper_example_one_batch_and_flush():
    s = ImpatienceSorter()
    s.push(np.array([2, 6, 5, 1]))
    assert s.punctuate(2)[0].tolist() == [1, 2]
    s.push(np.array([4, 3, 7]))
    assert s.punctuate(4)[0].tolist() == [3, 4]
    s.push(np.array([8]))
    assert s.buffered == 4
    assert s.flush_all()[0].tolist() == [5, 6, 7, 8]


def test_late_semantics():
    s = ImpatienceSorter()
    s.push(np.array([5, 10]))
    assert s.punctuate(5)[0].tolist() == [5]
    late = s.push(np.array([4, 5, 6, 3]))
    assert late.tolist() == [True, False, False, True]
    assert s.buffered == 3
    times, rows = s.punctuate(5)
    assert times.tolist() == [5] and rows.tolist() == [3]
    # backwards punctuation: releases nothing, watermark unchanged
    assert s.punctuate(1)[0].size == 0
    assert s.watermark == 5
    assert s.push(np.array([4])).tolist() == [True]
    times, rows = s.flush_all()
    assert times.tolist() == [6, 10] and rows.tolist() == [4, 1]
    assert s.next_row_id == 7


def test_empty_inputs():
    s = ImpatienceSorter()
    assert s.push(np.empty(0, dtype=np.int64)).shape == (0,)
    t, r = s.punctuate(0)
    assert t.size == 0 and r.size == 0 and t.dtype == np.int64
    t, r = s.flush_all()
    assert t.size == 0
    assert s.snapshot()["times"].size == 0
    s2 = ImpatienceSorter.restore(s.snapshot())
    assert s2.buffered == 0 and s2.watermark == 0


def test_extreme_values():
    s = ImpatienceSorter()
    s.push(np.array([INT64_MAX, INT64_MIN, 0, INT64_MIN, INT64_MAX]))
    t, r = s.punctuate(INT64_MIN)
    assert t.tolist() == [INT64_MIN, INT64_MIN] and r.tolist() == [1, 3]
    t, r = s.flush_all()
    assert t.tolist() == [0, INT64_MAX, INT64_MAX] and r.tolist() == [2, 0, 4]


@pytest.mark.parametrize("cap", [1, 64, 1 << 16])
def test_large_against_numpy(cap):
    """Many runs (long decreasing stretches), pool relocation and compaction, several merges."""
    rng = np.random.default_rng(cap)
    n = 60_000
    t = np.arange(n, dtype=np.int64) // 3
    m = rng.random(n) < 0.3
    t[m] -= np.abs(rng.normal(0, 500, m.sum())).astype(np.int64)
    t[20_000:20_500] = np.arange(500)[::-1] + 5_000  # a strictly decreasing burst: 500 runs
    s = ImpatienceSorter(initial_capacity=cap)
    outs_t, outs_r, late_all = [], [], []
    wm = INT64_MIN
    pos = 0
    for size in rng.integers(1, 3000, size=200):
        b = t[pos : pos + size]
        if b.size == 0:
            break
        late_all.append(s.push(b))
        pos += b.size
        wm = max(wm, int(b.max()) - 1500)
        ot, orow = s.punctuate(wm)
        outs_t.append(ot)
        outs_r.append(orow)
    late_all.append(s.push(t[pos:]))
    ot, orow = s.flush_all()
    outs_t.append(ot)
    outs_r.append(orow)
    late = np.concatenate(late_all)
    got_t, got_r = np.concatenate(outs_t), np.concatenate(outs_r)
    keep = np.flatnonzero(~late)
    order = keep[np.lexsort((keep, t[keep]))]
    np.testing.assert_array_equal(got_r, order)
    np.testing.assert_array_equal(got_t, t[order])
    assert s.buffered == 0


@settings(deadline=None, max_examples=150)
@given(streams())
def test_matches_reference(ops):
    s, ref = ImpatienceSorter(initial_capacity=1), RefSorter()
    released_t, released_r, late_rows = [], [], []
    row = 0
    for op in ops:
        a, b = _apply(s, op), _apply(ref, op)
        _same(a, b)
        if op[0] == "push":
            late_rows.extend((row + np.flatnonzero(a)).tolist())
            row += len(op[1])
        else:
            released_t.append(a[0])
            released_r.append(a[1])
        assert s.buffered == len(ref.buf)
    out_t = np.concatenate(released_t)
    out_r = np.concatenate(released_r)
    # sorted and stable overall
    assert (np.diff(out_t) >= 0).all()
    ties = np.diff(out_t) == 0
    assert (np.diff(out_r)[ties] > 0).all()
    # every element released exactly once or flagged late exactly once
    all_rows = np.sort(np.concatenate([out_r, np.array(late_rows, dtype=np.int64)]))
    np.testing.assert_array_equal(all_rows, np.arange(row))
    assert not set(late_rows) & set(out_r.tolist())
    # released multiset equals sorted() of the non-late inputs
    pushed = [x for op in ops if op[0] == "push" for x in op[1]]
    late_set = set(late_rows)
    assert out_t.tolist() == sorted(x for i, x in enumerate(pushed) if i not in late_set)


@settings(deadline=None, max_examples=150)
@given(streams(), st.data())
def test_snapshot_restore_continuation(ops, data):
    cut = data.draw(st.integers(0, len(ops)))
    s = ImpatienceSorter(initial_capacity=1)
    for op in ops[:cut]:
        _apply(s, op)
    state = s.snapshot()
    for k, v in state.items():
        assert isinstance(v, int | np.ndarray), k
    copied = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in state.items()}
    r = ImpatienceSorter.restore(copied)
    assert r.buffered == s.buffered and r.watermark == s.watermark and r.next_row_id == s.next_row_id
    assert r.num_runs == s.num_runs
    for op in ops[cut:]:
        _same(_apply(s, op), _apply(r, op))
        assert r.buffered == s.buffered


@settings(deadline=None, max_examples=100)
@given(st.lists(st.integers(0, 30), min_size=1, max_size=200), st.data())
def test_batch_split_invariance(times, data):
    """Pushing element by element or in random batches gives the same result as one batch."""
    t = np.array(times, dtype=np.int64)
    whole = ImpatienceSorter()
    whole.push(t)
    ref = whole.flush_all()
    split = ImpatienceSorter()
    pos = 0
    while pos < len(t):
        n = data.draw(st.integers(1, 10))
        split.push(t[pos : pos + n])
        pos += n
    _same(split.flush_all(), ref)
    np.testing.assert_array_equal(ref[1], np.lexsort((np.arange(len(t)), t)))
