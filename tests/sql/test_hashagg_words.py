"""The compiled GROUP BY pass a validity word at a time (issue 19): hashagg_jit groups 64 rows at a time,
a word with no null by each row's raw key bits alone, a word with nulls row by row, and finds the other
bits of one float value (-0.0 for 0.0, NaNs of any payload or sign) off the row loop, once per form.
Its groups, their order, each group's key (every bit: the first row's value) and every count and sum
must equal the numpy path's (Arrow's dictionary encoding, then bincount): for whole columns
(hashagg.grouped) and for a column handed over in pieces (hashagg.PieceGroups), across word borders,
bitmap offsets that are not a byte's, words all valid, all null or mixed, many NaN payloads, and
enough values to grow the table. The numpy path is the oracle."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from tidal.sql import hashagg

# NaNs of several payloads and both signs (a signalling one too), beside -0.0 and 0.0
NAN_BITS = [0x7FF8_0000_0000_0000, 0xFFF8_0000_0000_0000, 0x7FF8_0000_0000_0001, 0x7FF0_0000_0000_0002,
            0xFFFF_FFFF_FFFF_FFFF]  # fmt: skip
FLOATS = [0.0, -0.0, 1.0, -1.0, 2.5, np.inf, -np.inf, *np.array(NAN_BITS, np.uint64).view(np.float64)]
INTS = [0, 1, -1, 7, 2**62, -(2**63), 2**63 - 1]


@st.composite
def key_columns(draw) -> pa.Array:
    """A float64 or int64 key column (sliced at any offset) whose nulls are none, all, a few or dense."""
    kind = draw(st.sampled_from(["float", "int"]))
    n = draw(st.integers(0, 330))
    distinct = draw(st.sampled_from(["few", "many"]))
    if distinct == "few":
        pool = FLOATS if kind == "float" else INTS
        values = np.array(draw(st.lists(st.sampled_from(range(len(pool))), min_size=n, max_size=n)), np.int64)
        data = np.array(pool, np.float64 if kind == "float" else np.int64)[values] if n else np.zeros(0)
    else:  # past the first table and group arrays (1024 groups): they grow mid-word
        n = draw(st.integers(1100, 3000))
        rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
        data = rng.integers(-(10**6), 10**6, n)
        data[rng.random(n) < 0.05] = 0
        if kind == "float":
            data = data / 4
            data[rng.random(n) < 0.05] = -0.0
            data[rng.random(n) < 0.05] = np.array(NAN_BITS, np.uint64).view(np.float64)[rng.integers(0, 5)]
    data = np.asarray(data, np.float64 if kind == "float" else np.int64)
    nulls = draw(st.sampled_from(["none", "all", "few", "dense"]))
    if nulls == "none" or n == 0:
        mask = None
    elif nulls == "all":
        mask = np.ones(n, bool)
    elif nulls == "few":
        mask = np.zeros(n, bool)
        mask[draw(st.lists(st.integers(0, n - 1), max_size=4))] = True
    else:
        mask = np.random.default_rng(draw(st.integers(0, 2**32 - 1))).random(n) < 0.5
    col = pa.array(data, mask=mask)
    start = draw(st.integers(0, min(n, 70)))  # an offset into the validity bitmap, often not a byte's
    return col.slice(start)


def _bits(col: pa.Array) -> list:
    """Each value's bits (None for a null): NaN payloads and -0.0 told apart."""
    values = np.asarray(col.fill_null(0).to_numpy(zero_copy_only=False)).view(np.int64).tolist()
    return [v if ok else None for v, ok in zip(values, col.is_valid().to_pylist(), strict=True)]


def _numpy_path(fn):
    real = hashagg._jit
    try:
        hashagg._jit = lambda: None
        return fn()
    finally:
        hashagg._jit = real


def _answer(groups: hashagg.Groups, out: dict) -> tuple:
    return len(groups.order), _bits(groups.keys[0]), {name: repr(col.to_pylist()) for name, col in out.items()}


@settings(max_examples=60, deadline=None)
@given(key=key_columns(), seed=st.integers(0, 2**32 - 1))
def test_whole_columns_group_as_numpy_does(key, seed):
    import numba  # noqa: F401  (loaded: the compiled pass applies)

    v = pa.array(np.random.default_rng(seed).normal(0, 1e3, len(key)))
    calls = [("n", "count", None), ("a", "average", v), ("s", "sum", v)]
    compiled = _answer(*hashagg.grouped([key], calls))
    assert compiled == _answer(*_numpy_path(lambda: hashagg.grouped([key], calls)))
    # with the row codes written too (a MIN reads them)
    calls = [("n", "count", None), ("m", "min", v)]
    compiled = _answer(*hashagg.grouped([key], calls))
    assert compiled == _answer(*_numpy_path(lambda: hashagg.grouped([key], calls)))


@settings(max_examples=60, deadline=None)
@given(key=key_columns(), data=st.data())
def test_pieces_group_as_the_whole_column_does(key, data):
    import numba  # noqa: F401

    n = len(key)
    v = pa.array(np.random.default_rng(data.draw(st.integers(0, 2**32 - 1))).normal(0, 1e3, n))
    cuts = sorted(data.draw(st.lists(st.integers(0, n), max_size=5)))
    bounds = [0, *cuts, n]
    acc = hashagg.PieceGroups()
    for lo, hi in zip(bounds, bounds[1:], strict=False):
        assert acc.add(key.slice(lo, hi - lo), v.slice(lo, hi - lo))
    calls = [("n", "count", None), ("a", "average", v), ("s", "sum", v)]
    got = acc.result(calls)
    assert got is not None
    assert _answer(*got) == _answer(*_numpy_path(lambda: hashagg.grouped([key], calls)))
