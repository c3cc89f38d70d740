"""``ImpatienceSorter.push_punctuate`` (many pushes and punctuations in one compiled call) against a plain
reference: an element is late below the largest punctuation before it; each punctuation releases the
buffered elements up to it sorted by (time, row id); row ids count every element pushed, late ones too."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tidal.ops import impatience
from tidal.ops.impatience import ImpatienceSorter


def reference(times: list[int], ends: list[int], puncts: list[int]):
    """(late mask, released (time, row) per punctuation, left buffered) for one stream."""
    buffered, late, out = [], [], []
    wm = -(2**63)
    i = 0
    for end, p in zip(ends, puncts, strict=True):
        for k in range(i, end):
            late.append(times[k] < wm)
            if not late[-1]:
                buffered.append((times[k], k))
        i = end
        wm = max(wm, p)
        buffered.sort()
        out.append([e for e in buffered if e[0] <= p])
        buffered = [e for e in buffered if e[0] > p]
    for k in range(i, len(times)):
        late.append(times[k] < wm)
        if not late[-1]:
            buffered.append((times[k], k))
    return late, out, sorted(buffered)


@st.composite
def programs(draw):
    n = draw(st.integers(0, 600))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    share = draw(st.sampled_from([0.0, 0.1, 0.5, 1.0]))
    times = np.arange(n, dtype=np.int64) - (rng.random(n) < share) * rng.integers(0, draw(st.sampled_from([5, 100])), n)
    every = draw(st.sampled_from([1, 2, 10, 97, 1000]))
    lag = draw(st.sampled_from([0, 3, 50, 1000]))
    ends = list(range(every, n + 1, every))
    if ends and draw(st.booleans()):
        ends.pop()  # elements after the last punctuation
    high = np.maximum.accumulate(times) if n else times
    puncts = [int(high[e - 1]) - lag for e in ends]
    calls = draw(st.integers(1, 4))  # the stream cut into this many push_punctuate calls
    return times, ends, puncts, calls


@settings(max_examples=200, deadline=None)
@given(programs(), st.sampled_from([64, 4096]), st.sampled_from([1, 4096]))
def test_push_punctuate_equals_the_reference_and_the_separate_calls(program, capacity, long_segments):
    """(``long_segments`` 1: every call goes the way of long segments, one push and punctuate each)"""
    saved = impatience._LONG_SEGMENTS
    impatience._LONG_SEGMENTS = long_segments
    try:
        _check(*program, capacity)
    finally:
        impatience._LONG_SEGMENTS = saved


def _check(times, ends, puncts, calls, capacity):
    late_ref, out_ref, rest_ref = reference(times.tolist(), ends, puncts)
    fused = ImpatienceSorter(capacity)
    late, released = [], []
    bounds = np.linspace(0, len(ends), calls + 1).astype(int)
    start = 0
    for c in range(calls):
        es = np.array(ends[bounds[c] : bounds[c + 1]], dtype=np.int64)
        ps = np.array(puncts[bounds[c] : bounds[c + 1]], dtype=np.int64)
        stop = len(times) if c == calls - 1 else (int(es[-1]) if len(es) else start)
        mask, t, r, counts = fused.push_punctuate(times[start:stop], es - start, ps)
        late.extend(mask.tolist())
        assert counts.sum() == len(t) == len(r)
        for k, cnt in zip((np.cumsum(counts) - counts).tolist(), counts.tolist(), strict=True):
            released.append(list(zip(t[k : k + cnt].tolist(), r[k : k + cnt].tolist(), strict=True)))
        start = stop
    assert late == late_ref
    assert released == out_ref
    assert fused.buffered == len(rest_ref)
    t, r = fused.flush_all()
    assert list(zip(t.tolist(), r.tolist(), strict=True)) == rest_ref
    assert fused.next_row_id == len(times)


def test_push_punctuate_checks_its_ends():
    s = ImpatienceSorter()
    times = np.arange(10, dtype=np.int64)
    for ends, puncts in (([5, 3], [1, 2]), ([11], [1]), ([5], [1, 2])):
        try:
            s.push_punctuate(times, np.array(ends), np.array(puncts))
        except ValueError as e:
            assert "ends and puncts" in str(e)
        else:
            raise AssertionError(f"accepted ends {ends}")
