"""hashagg.grouped (issue 19): where numba is loaded, one numeric GROUP BY key is grouped, counted and
summed (its first float SUM/AVG) in one compiled pass (hashagg_jit.key_groups). Its groups, their
order, keys and every aggregate must equal the numpy path's (Arrow's dictionary encoding, then
bincount) bit for bit: -0.0 joins 0.0 with the first row's sign kept, every NaN is one group, nulls
one group, sums in row order. The numpy path is the oracle; tests/sql/test_relational.py checks
both against the stream engine and DuckDB."""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from tidal.sql import hashagg

FLOAT_KEYS = st.sampled_from([0.0, -0.0, 1.0, 2.5, -3.0, math.nan, float("-nan"), math.inf, None])
VALUES = st.sampled_from([1.5, -2.25, 0.1, 1e300, -0.0, 7.0, None, math.nan])
CALLS = [
    [("n", "count", "v")],
    [("n", "count", None), ("a", "average", "v")],
    [("s", "sum", "v"), ("n", "count", None), ("a", "average", "v")],
    [("a", "average", "v"), ("m", "max", "v"), ("c", "count_not_null", "v")],
    [("s", "sum", "w"), ("a", "average", "v"), ("lo", "min", "w")],
    [("x", "variance", "w"), ("a", "average", "v")],
]


def _run(keys: pa.Array, cols: dict, calls: list) -> tuple:
    bound = [(name, fn, cols[arg] if arg is not None and fn != "count" else None) for name, fn, arg in calls]
    groups, out = hashagg.grouped([keys], bound)
    return (
        len(groups.order),  # the groups that occur (the numpy path's codes may leave gaps)
        [repr(k.to_pylist()) for k in groups.keys],
        {name: repr(col.to_pylist()) for name, col in out.items()},
    )


def _both(keys: pa.Array, cols: dict, calls: list) -> tuple[tuple, tuple]:
    import numba  # noqa: F401  (loaded: the compiled pass applies)

    compiled = _run(keys, cols, calls)
    real = hashagg._jit
    try:
        hashagg._jit = lambda: None
        return compiled, _run(keys, cols, calls)
    finally:
        hashagg._jit = real


@settings(max_examples=80, deadline=None)
@given(
    data=st.data(),
    n=st.integers(0, 60),
    kind=st.sampled_from(["float", "float32", "int", "timestamp", "sliced"]),
    calls=st.sampled_from(CALLS),
)
def test_the_compiled_pass_groups_and_sums_as_numpy_does(data, n, kind, calls):
    v = pa.array(data.draw(st.lists(VALUES, min_size=n, max_size=n)), pa.float64())
    w = pa.array(data.draw(st.lists(st.sampled_from([1, -4, 2**40, None]), min_size=n, max_size=n)), pa.int64())
    if kind in ("float", "float32", "sliced"):
        raw = data.draw(st.lists(FLOAT_KEYS, min_size=n + 3, max_size=n + 3))
        keys = pa.array(raw, pa.float32() if kind == "float32" else pa.float64())
        keys = keys.slice(3) if kind == "sliced" else keys.slice(0, n)  # an offset into the validity bitmap
    else:
        raw = data.draw(st.lists(st.sampled_from([0, 1, -1, 2**62, 7, None]), min_size=n, max_size=n))
        keys = pa.array(raw, pa.int64())
        if kind == "timestamp":  # within Python's datetime range
            keys = pa.array([None if x is None else x % 10**15 for x in raw], pa.int64()).cast(pa.timestamp("us"))
    compiled, numpy_path = _both(keys, {"v": v, "w": w}, calls)
    assert compiled == numpy_path


def test_many_groups_grow_the_table_and_keep_first_appearance_order():
    rng = np.random.default_rng(4)
    n = 60_000
    keys = rng.integers(0, 9_000, n).astype(np.float64) / 4
    keys[rng.random(n) < 0.01] = np.nan
    keys[rng.random(n) < 0.01] = -0.0
    mask = rng.random(n) < 0.02
    key_col = pa.array(keys, mask=mask)
    v = pa.array(rng.gamma(2.0, 3.0, n))
    calls = [("n", "count", None), ("s", "sum", "v"), ("a", "average", "v"), ("m", "min", "v")]
    compiled, numpy_path = _both(key_col, {"v": v}, calls)
    assert compiled == numpy_path
    assert compiled[0] > 9_000 // 2  # past the first table and group arrays: they grew


def test_only_count_and_the_fused_sum_need_no_row_codes():
    """COUNT(*) and AVG of the fused argument are answered by the pass alone (no codes written)."""
    import numba  # noqa: F401

    keys = pa.array([2.0, None, 2.0, -0.0, 0.0, math.nan], pa.float64())
    v = pa.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    groups, out = hashagg.grouped([keys], [("n", "count", None), ("a", "average", v)])
    assert groups.codes is None
    assert groups.keys[0].to_pylist()[:3] == [2.0, None, -0.0]  # the first row's value: -0.0 kept
    assert math.isnan(groups.keys[0].to_pylist()[3])
    assert out["n"].to_pylist() == [2, 1, 2, 1]
    assert out["a"].to_pylist() == [2.0, 2.0, 4.5, 6.0]


def test_keys_whose_bits_differ_only_at_one_end_group_apart():
    """The multiplicative hash takes a slot from the product's top bits: keys that differ only in their
    top bits (powers of two, INT64_MIN, the sign of -0.0) or only in their low bits (consecutive ints,
    neighbouring floats) must still be told apart, through collisions and every growth of the table."""
    rng = np.random.default_rng(11)
    high = [float(2.0**e) for e in range(-60, 61)] + [-(2.0**e) for e in range(0, 40)]
    low = np.nextafter(1.0, 2.0, dtype=np.float64)
    near = [1.0 + i * (low - 1.0) for i in range(3_000)]
    float_keys = rng.permutation(np.array(high + near + [0.0, -0.0] * 50, np.float64))
    ints = [np.int64(-(2**63)), 0, 1, -1] + [1 << e for e in range(63)] + [(i << 52) for i in range(-2_000, 2_000)]
    int_keys = rng.permutation(np.array(ints * 2, np.int64))
    calls = [("n", "count", None), ("s", "sum", "v")]
    for keys in (pa.array(float_keys), pa.array(int_keys)):
        v = pa.array(rng.gamma(2.0, 3.0, len(keys)))
        compiled, numpy_path = _both(keys, {"v": v}, calls)
        assert compiled == numpy_path
        assert compiled[0] == len(set(keys.to_pylist()))  # -0.0 == 0.0: one group
