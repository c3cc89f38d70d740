"""The ingress order check (``tidal.io.ingress._first_step_back``) against a plain Python scan."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tidal.io.ingress import _first_step_back

I64 = np.iinfo(np.int64)
times = st.integers(I64.min, I64.max) | st.sampled_from([I64.min, I64.max, -1, 0, 1])


def _plain(sync, previous):
    if len(sync) and sync[0] < previous:
        return 0
    return next((i for i in range(1, len(sync)) if sync[i] < sync[i - 1]), -1)


@settings(max_examples=200, deadline=None)
@given(st.lists(times, max_size=50), times, st.integers(0, 9000), st.data())
def test_first_step_back_equals_a_plain_scan(values, previous, length, data):
    # a long ordered run (blocks of 4096) with the drawn values spliced in somewhere
    run = np.arange(length, dtype=np.int64) * 3
    at = data.draw(st.integers(0, length))
    sync = np.concatenate([run[:at], np.array(values, dtype=np.int64), run[at:]])
    assert _first_step_back(sync, previous) == _plain(sync.tolist(), previous)
