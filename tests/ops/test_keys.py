"""KeyIndex: dense group ids for key columns, whatever their type, spread and batching."""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
from hypothesis import example, given
from hypothesis import strategies as st

from tidal.ops.keys import KeyIndex, stable_hash

VALUES = {
    "small_ints": st.integers(-5, 5),
    "wide_ints": st.one_of(st.integers(-(2**62), 2**62), st.integers(0, 3)),
    "floats": st.one_of(st.sampled_from([0.0, -0.0, 1.5, math.nan, -2.25]), st.floats(-1e6, 1e6)),
    "strings": st.sampled_from(["a", "b", "", "ü", "long string"]),
}


def _norm(v):
    if isinstance(v, float):
        return "nan" if math.isnan(v) else v + 0.0
    return v


@given(
    kinds=st.lists(st.sampled_from(sorted(VALUES)), min_size=1, max_size=3),
    data=st.data(),
    cuts=st.lists(st.integers(0, 40), max_size=4),
)
def test_ids_are_dense_consistent_and_give_back_the_keys(kinds, data, cuts):
    n = data.draw(st.integers(0, 40))
    cols = [data.draw(st.lists(st.one_of(st.none(), VALUES[k]), min_size=n, max_size=n)) for k in kinds]
    types = {"small_ints": pa.int64(), "wide_ints": pa.int64(), "floats": pa.float64(), "strings": pa.string()}
    arrays = [pa.array(c, type=types[k]) for c, k in zip(cols, kinds, strict=True)]
    index = KeyIndex(tuple(f"k{i}" for i in range(len(kinds))))
    bounds = sorted({0, n, *[min(c, n) for c in cuts]})
    ids = np.concatenate(
        [index.ids([a.slice(lo, hi - lo) for a in arrays]) for lo, hi in zip(bounds, bounds[1:], strict=False)]
        or [np.empty(0, np.int64)]
    )
    rows = [tuple(_norm(c[i]) for c in cols) for i in range(n)]
    first_id: dict = {}
    for row, got in zip(rows, ids.tolist(), strict=True):
        assert first_id.setdefault(row, got) == got  # equal keys, equal ids
    assert len(set(first_id.values())) == len(first_id) == len(index)  # distinct keys, distinct dense ids
    assert sorted(first_id.values()) == list(range(len(index)))
    back = index.key_columns(np.arange(len(index)))
    decoded = list(zip(*[[_norm(v) for v in col.to_pylist()] for col in back], strict=True)) if back else []
    for row, got in first_id.items():
        assert decoded[got] == row
    restored = KeyIndex(index.names)
    restored.restore(index.snapshot())
    if n:
        assert restored.ids(arrays).tolist() == ids.tolist()
        assert restored.hashes(ids).tolist() == index.hashes(ids).tolist()


def test_wide_integer_keys_switch_to_the_hash_table_keeping_ids():
    index = KeyIndex(("k",))
    first = index.ids([pa.array([3, 1, None, 3])])
    second = index.ids([pa.array([2**40, 1, None, -(2**50)])])
    assert first.tolist() == [0, 1, 2, 0]
    assert second.tolist() == [3, 1, 2, 4]
    assert index.key_columns(np.arange(5))[0].to_pylist() == [3, 1, None, 2**40, -(2**50)]


def test_stable_hash_is_the_same_in_every_process():
    h = stable_hash([pa.array([1, 2]), pa.array(["x", None])])
    assert h.tolist() == stable_hash([pa.array([1, 2]), pa.array(["x", None])]).tolist()
    assert h[0] != h[1]


NAN_PAYLOAD = float(np.array([0x7FF8000000000001], np.int64).view(np.float64)[0])  # a NaN with other bits


@given(
    batches=st.lists(
        st.lists(
            st.one_of(
                st.none(),
                st.sampled_from([0.0, -0.0, math.nan, NAN_PAYLOAD, math.inf, -math.inf, 1.0, 2.0, 3.0]),
                st.floats(allow_nan=False),
            ),
            max_size=30,
        ),
        max_size=4,
    )
)
def test_float_codes_in_one_pass_follow_first_appearance(batches):
    """Float64 keys (the compiled one-pass path): codes in order of first appearance, -0.0 is 0.0, every
    NaN one NaN, and a batch's first null takes the code after that batch's new values."""
    index = KeyIndex(("k",))
    known: dict = {}
    for values in batches:
        got = index.ids([pa.array(values, pa.float64())]).tolist()
        fresh = [v for v in dict.fromkeys(_norm(v) for v in values if v is not None) if v not in known]
        for v in fresh:
            known[v] = len(known)
        if None in values and None not in known:
            known[None] = len(known)
        assert got == [known[None if v is None else _norm(v)] for v in values]
    assert len(index) == len(known)


@given(
    st.lists(
        st.tuples(
            st.lists(
                st.one_of(
                    st.none(), st.sampled_from(["a", "b", "", "ü", "a\x00", "\x00", "1234567", "12345678", "x" * 20])
                ),
                max_size=30,
            ),
            st.sampled_from([pa.string(), pa.large_string()]),
            st.integers(0, 3),
        ),
        max_size=5,
    )
)
@example([(["a", "a\x00", "", "\x00", "b"], pa.string(), 1), (["a\x00", None, "x" * 20, "c"], pa.large_string(), 0)])
def test_text_codes_follow_first_appearance_whichever_path(batches):
    """Text keys: a batch of values of at most 7 bytes and no null takes the compiled short-text pass, any
    other batch Arrow's dictionary encoding; a value has one code whichever path met it, codes in order
    of first appearance, and the values come back (string and large_string, sliced arrays)."""
    index = KeyIndex(("k",))
    known: dict = {}
    for values, type_, lead in batches:
        col = pa.array(["pad"] * lead + values, type_).slice(lead)  # offsets that do not start at 0
        got = index.ids([col]).tolist()
        for v in dict.fromkeys(values):
            known.setdefault(v, len(known))
        assert got == [known[v] for v in values]
    assert len(index) == len(known)
    assert index.key_columns(np.arange(len(index)))[0].to_pylist() == list(known)
