"""A finished query is freed by reference counting alone: no operator, batch or plan node of it
waits for the cyclic garbage collector (which may run much later and so keep a query's state and
last output in memory)."""

from __future__ import annotations

import gc

import numpy as np
import pyarrow as pa
import pytest

import tidal

N = 1000
EVENTS = pa.table({"t": np.arange(N, dtype="int64"), "k": np.arange(N) % 7, "v": np.ones(N)})
OTHER = pa.table({"t": np.arange(0, N, 3, dtype="int64"), "k": np.arange(0, N, 3) % 7, "w": np.ones(334)})


def _windowed():
    s = tidal.from_arrow(EVENTS, time="t").where(lambda e: e.v > 0)
    return s.tumbling_window(100).group_aggregate("k", n=tidal.agg.count()).to_arrow()


def _joined():
    a = tidal.from_arrow(EVENTS, time="t").alter_duration(10)
    b = tidal.from_arrow(OTHER, time="t").alter_duration(10)
    return a.join(b, "k", "k").to_arrow()


def _outer_joined():
    a = tidal.from_arrow(EVENTS, time="t").alter_duration(10)
    b = tidal.from_arrow(OTHER, time="t").alter_duration(10)
    return a.full_outer_join(b, "k", "k").to_arrow()


def _sessions():
    s = tidal.from_arrow(EVENTS, time="t").session_window(5)
    return s.group_aggregate("k", total=tidal.agg.sum("v")).to_intervals()


def _union_explained():
    s = tidal.from_arrow(EVENTS, time="t").union(tidal.from_arrow(EVENTS, time="t").where(lambda e: e.k > 2))
    s.explain()
    return s.select("k").to_arrow()


def _garbage_of(run) -> list:
    run()  # compiles and caches kernels: only a second run's garbage is the query's own
    gc.collect()
    was_enabled = gc.isenabled()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        result = run()
        assert result.num_rows > 0
        del result
        gc.collect()
        return [o for o in gc.garbage if type(o).__module__.startswith("tidal.")]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        if was_enabled:
            gc.enable()


@pytest.mark.parametrize(
    "run", [_windowed, _joined, _outer_joined, _sessions, _union_explained], ids=lambda f: f.__name__
)
def test_a_finished_query_leaves_no_cyclic_garbage(run):
    left = _garbage_of(run)
    assert not left, sorted({type(o).__qualname__ for o in left})
