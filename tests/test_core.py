"""Seed examples, explain(), Arrow round trips, ingress policies and bad input."""

from __future__ import annotations

import dataclasses
from collections import namedtuple

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tidal
from tidal.core.batch import BatchSizer, EventBatch
from tidal.core.time import INFINITY
from tidal.expr import compile as compile_mod
from tidal.testing import Reference, assert_same_snapshots


def titanic() -> pa.Table:
    return pa.table(
        {
            "t": [1, 2, 3, 4, 5, 6],
            "survived": [True, False, True, True, False, True],
            "pclass": [1, 3, 2, 1, 3, 2],
            "name": ["Allen", "Braund", "Cumings", "Futrelle", "Moran", "Nasser"],
            "sex": ["female", "male", "female", "female", "male", "female"],
            "age": [29, 22, 38, 35, 40, 14],
        }
    )


def test_titanic_where_and_select():
    ps = tidal.from_arrow(titanic(), time="t")
    survivors = ps.where(lambda p: p.survived and p.age > 30).to_arrow()
    assert survivors.column("name").to_pylist() == ["Cumings", "Futrelle"]
    projected = ps.select(lambda p: {"name_sex": p.name + "," + p.sex, "age": p.age}).to_arrow()
    assert projected.column_names == ["sync_time", "other_time", "name_sex", "age"]
    assert projected.column("name_sex").to_pylist()[:2] == ["Allen,female", "Braund,male"]
    assert "columnar" in ps.where(lambda p: p.survived and p.age > 30).explain()


def ad_clicks(n=5000, seed=1) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table(
        {
            "click_time": np.sort(rng.integers(0, 3_600, n)),
            "user_id": rng.integers(0, 10_000, n),
            "ad_id": rng.integers(0, 20, n),
        }
    )


def test_ad_click_sample_filter_and_projection():
    t = ad_clicks()
    q = tidal.from_arrow(t, time="click_time").where(lambda e: e.user_id % 100 < 5).select(lambda e: {"ad_id": e.ad_id})
    out = q.to_arrow()
    mask = (t.column("user_id").to_numpy() % 100) < 5
    assert out.column("ad_id").to_numpy().tolist() == t.column("ad_id").to_numpy()[mask].tolist()
    assert out.column("sync_time").to_numpy().tolist() == t.column("click_time").to_numpy()[mask].tolist()


def _helper(x):
    return x % 100 < 5


def test_explain_columnar_and_row_mode_agree():
    s = tidal.from_arrow(ad_clicks(), time="click_time")
    columnar = s.where(lambda e: e.user_id % 100 < 5)
    row = s.where(lambda e: _helper(e.user_id))
    assert "columnar: ((user_id % 100) < 5)" in columnar.explain()
    assert "row mode" in row.explain()
    assert columnar.to_arrow().equals(row.to_arrow())


def test_fused_jit_kernel_matches_numpy(monkeypatch):
    monkeypatch.setattr(compile_mod, "JIT_THRESHOLD", 1)
    t = ad_clicks(20_000)
    s = tidal.from_arrow(t, time="click_time", batch_size=1000)
    q = s.where(lambda e: (e.user_id * 3 + e.ad_id) % 7 < 2 or e.ad_id == 5)
    monkeypatch.setattr(compile_mod, "JIT_THRESHOLD", 10**12)
    expected = s.where(lambda e: (e.user_id * 3 + e.ad_id) % 7 < 2 or e.ad_id == 5).to_arrow()
    monkeypatch.setattr(compile_mod, "JIT_THRESHOLD", 1)
    assert q.to_arrow().equals(expected)


def test_division_by_zero_in_some_rows_is_a_row_error():
    t = pa.table({"t": [1, 2, 3], "a": [4, 5, 6], "b": [2, 0, 3]})
    with pytest.raises(tidal.LambdaError) as err:
        tidal.from_arrow(t, time="t").select(lambda e: {"q": e.a // e.b}).to_arrow()
    msg = str(err.value)
    assert "ZeroDivisionError" in msg and "sync_time=2" in msg and "b=0" in msg and "a=5" in msg


def test_lambda_raising_names_row_and_values():
    t = pa.table({"t": [1, 2], "name": ["x", None]})
    with pytest.raises(tidal.LambdaError) as err:
        tidal.from_arrow(t, time="t").where(lambda e: e.name.upper() == "X").to_arrow()
    assert "name=None" in str(err.value) and "sync_time=2" in str(err.value)


def test_time_going_backwards_names_row_and_times():
    rows = [{"ts": 1, "v": 1}, {"ts": 5, "v": 2}, {"ts": 3, "v": 3}]
    with pytest.raises(tidal.InputError) as err:
        tidal.from_records(rows, time="ts").to_arrow()
    msg = str(err.value)
    assert "row 2" in msg and "3" in msg and "5" in msg and "'ts'" in msg


def test_missing_time_field_names_row_and_field():
    rows = [{"ts": 1, "v": 1}, {"v": 2}]
    with pytest.raises(tidal.InputError) as err:
        tidal.from_records(rows, time="ts").to_arrow()
    assert "row 1" in str(err.value) and "ts" in str(err.value)
    with pytest.raises(tidal.InputError, match="time field 'when' not found"):
        tidal.from_arrow(pa.table({"ts": [1]}), time="when")


def test_tuple_of_wrong_length_names_its_row():
    rows = [(1, 2), (2, 3), (3,), (4, 5)]
    with pytest.raises(tidal.InputError, match=r"row 2: has 1 values, expected 2 \(\['ts', 'v'\]\): \(3,\)"):
        tidal.from_records(rows, time="ts", names=["ts", "v"]).to_arrow()
    # the second chunk of rows: the row number counts from the start of the input
    rows = [(t, t) for t in range(10)] + [(10, 1, 2)]
    with pytest.raises(tidal.InputError, match="row 10: has 3 values"):
        tidal.from_records(rows, time="ts", names=["ts", "v"], batch_size=4).to_arrow()


def test_unknown_field_in_lambda_is_a_plan_error():
    with pytest.raises(tidal.PlanError, match="nope"):
        tidal.from_arrow(pa.table({"ts": [1]}), time="ts").where(lambda e: e.nope > 1)


def test_round_trip_keeps_columns_and_types():
    t = pa.table(
        {
            "ts": pa.array([1, 2, 3], pa.int64()),
            "f": pa.array([1.5, None, 2.5], pa.float64()),
            "s": pa.array(["a", "b", None], pa.string()),
            "i8": pa.array([1, 2, 3], pa.int8()),
            "when": pa.array([1, 2, 3], pa.timestamp("us")),
            "flag": pa.array([True, False, None]),
        }
    )
    out = tidal.from_arrow(t, time="ts").to_arrow()
    assert out.drop_columns(["sync_time", "other_time"]).equals(t)
    assert out.column("other_time").to_pylist() == [2, 3, 4]


def test_round_trip_of_ten_million_rows_shares_numeric_buffers():
    n = 10_000_000
    t = pa.table({"ts": np.arange(n, dtype=np.int64), "value": np.arange(n, dtype=np.float64)})
    out = tidal.from_arrow(t, time="ts").to_arrow()
    assert out.num_rows == n
    src = t.column("value").chunk(0).buffers()[1]
    lo, hi = src.address, src.address + src.size
    for chunk in out.column("value").chunks:
        buf = chunk.buffers()[1]
        assert lo <= buf.address + chunk.offset * 8 < hi  # a view of the input, not a copy
    sync_src = t.column("ts").chunk(0).buffers()[1]
    first = out.column("sync_time").chunk(0)
    assert first.buffers()[1].address == sync_src.address


def test_physical_round_trip_with_edges():
    t = pa.table({"sync_time": [1, 2, 5], "other_time": [tidal.INFINITY, 9, 1], "v": [7, 8, 7]})
    out = tidal.from_arrow(t, time="sync_time", other="other_time").to_arrow()
    assert out.equals(t)
    assert [e.kind for e in tidal.from_arrow(t, time="sync_time", other="other_time").to_events()] == [
        "start",
        "interval",
        "end",
    ]


def test_ingress_from_many_row_shapes():
    Point = namedtuple("Point", "ts v")

    @dataclasses.dataclass
    class Rec:
        ts: int
        v: int

    expected = tidal.from_records([{"ts": 1, "v": 2}, {"ts": 3, "v": 4}], time="ts").to_arrow()
    for rows, kw in (
        ([Point(1, 2), Point(3, 4)], {}),
        ([Rec(1, 2), Rec(3, 4)], {}),
        ([(1, 2), (3, 4)], {"names": ["ts", "v"]}),
        ((r for r in [{"ts": 1, "v": 2}, {"ts": 3, "v": 4}]), {}),
    ):
        assert tidal.from_records(rows, time="ts", **kw).to_arrow().equals(expected)
    df = pd.DataFrame({"ts": [1, 3], "v": [2, 4]})
    assert tidal.from_pandas(df, time="ts").to_arrow().equals(expected)
    assert tidal.from_numpy({"ts": np.array([1, 3]), "v": np.array([2, 4])}, time="ts").to_arrow().equals(expected)
    lam = tidal.from_records([{"ts": 1, "v": 2}, {"ts": 3, "v": 4}], time=lambda r: r.ts * 10).to_arrow()
    assert lam.column("sync_time").to_pylist() == [10, 30]


def test_intervals_starts_and_changelog():
    rows = [{"a": 1, "b": 4, "p": "x"}, {"a": 4, "b": 6, "p": "x"}, {"a": 5, "b": 7, "p": "y"}]
    s = tidal.from_records(rows, time="a", end="b")
    iv = s.select("p").to_intervals()
    assert iv.to_pylist() == [{"start": 1, "end": 6, "p": "x"}, {"start": 5, "end": 7, "p": "y"}]
    log = s.select("p").to_changelog().to_pylist()
    assert [(r["time"], r["undo"], r["p"]) for r in log] == [
        (1, False, "x"),
        (4, True, "x"),
        (4, False, "x"),
        (5, False, "y"),
        (6, True, "x"),
        (7, True, "y"),
    ]
    starts = tidal.from_records(rows, time="a", kind="start").select("p").to_intervals()
    assert starts.column("end").to_pylist() == [tidal.INFINITY] * 3


def test_punctuation_policies_and_subscribe():
    t = pa.table({"ts": np.arange(0, 100, dtype=np.int64), "v": np.ones(100, dtype=np.int64)})
    seen, puncts = [], []
    tidal.from_arrow(t, time="ts", punctuate_every=10).subscribe(seen.append, puncts.append)
    assert puncts[:-1] == list(range(0, 100, 10)) and puncts[-1] == tidal.INFINITY
    assert sum(b.num_rows for b in seen) == 100
    # flushed at every punctuation: no output batch spans a punctuation boundary
    for b in seen:
        ts = b.column("sync_time").to_numpy()
        assert ts.min() // 10 == ts.max() // 10
    puncts = []
    tidal.from_arrow(t, time="ts", punctuate_every_events=25).subscribe(lambda b: None, puncts.append)
    assert puncts == [24, 49, 74, 99, tidal.INFINITY]


def test_adaptive_batch_size_follows_punctuation_spacing():
    sizer = BatchSizer(default=80_000, start=250)
    assert sizer.max_size == 250
    for _ in range(8):
        sizer.on_flush(1000)
    assert sizer.max_size == 1250
    fixed = BatchSizer(default=80_000, adaptive=False)
    assert fixed.max_size == 80_000
    # events arriving 100 at a time are gathered until the adaptive size is reached (250 at first,
    # then 1.25x the 1000 events between punctuations)
    t = pa.table({"ts": np.arange(0, 100_000, dtype=np.int64)})
    trickle = pa.Table.from_batches(t.to_batches(max_chunksize=100))
    sizes = []
    tidal.from_arrow(trickle, time="ts", punctuate_every_events=1000, flush="none").subscribe(
        lambda b: sizes.append(b.num_rows)
    )
    assert sizes[0] == 300 and max(sizes) == 1300 and sum(sizes) == 100_000
    # events that arrive together are not cut into small pieces: that would only add work per batch
    sizes.clear()
    tidal.from_arrow(t, time="ts", punctuate_every_events=1000, flush="none").subscribe(
        lambda b: sizes.append(b.num_rows)
    )
    assert sizes[0] == 1000 and sum(sizes) == 100_000


@given(
    st.lists(st.tuples(st.integers(0, 5), st.integers(-3, 3)), max_size=40),
    st.sampled_from([1, 2, 5, 1000]),
    st.sampled_from([1, 2, 5, 1000]),
)
def test_batching_never_changes_the_answer(rows, size_a, size_b):
    rows = sorted(rows)
    t = pa.table({"ts": pa.array([r[0] for r in rows], pa.int64()), "v": pa.array([r[1] for r in rows], pa.int64())})

    def query(size):
        return (
            tidal.from_arrow(t, time="ts", batch_size=size, punctuate_every=2)
            .where(lambda e: e.v != 0)
            .select(lambda e: {"w": e.v * 2})
            .hopping_window(4, 2)
        )

    a, b = query(size_a).to_intervals(), query(size_b).to_intervals()
    assert a.equals(b)
    ref = Reference.points(("ts", "v"), [(r[0], r) for r in rows])
    assert_same_snapshots(
        query(size_a), ref.where(lambda e: e.v != 0).select(lambda e: {"w": e.v * 2}).hopping_window(4, 2)
    )


def test_row_mode_builds_only_the_fields_a_lambda_reads():
    from tidal.expr.lambdas import fields_used

    assert fields_used(lambda e: _opaque_check(e.a) and e["b"] > 1) == {"a", "b"}
    assert fields_used(lambda e: _opaque_check(e)) is None  # the row itself escapes: build every field
    t = pa.table({"t": [1, 2, 3], "a": [1, -2, 3], "b": [5, 5, 0]})
    s = tidal.from_arrow(t, time="t")
    assert s.where(lambda e: _opaque_check(e.a) and e["b"] > 1).to_arrow().column("a").to_pylist() == [1]
    assert s.where(lambda e: _opaque_check(e)).count() == 3


def _opaque_check(x):
    return x if not isinstance(x, int) else x > 0


def test_start_edges_left_unmade_read_as_infinity_through_every_derivation():
    """A batch of start edges given ``START_EDGES`` keeps them unmade through slice, take, concat, replace,
    pickling and copying, and reads INFINITY for each event wherever its other times are read."""
    import copy
    import pickle

    from tidal.core.batch import START_EDGES, concat_batches

    sync = np.array([1, 4, 4, 9, 12], dtype=np.int64)
    lazy = EventBatch(sync, START_EDGES, {"v": pa.array([10, 20, 30, 40, 50])})
    made = EventBatch(sync, np.full(5, INFINITY, np.int64), {"v": pa.array([10, 20, 30, 40, 50])})
    derived = [
        (lazy.slice(1, 4), made.slice(1, 4)),
        (lazy.take(np.array([4, 0, 2])), made.take(np.array([4, 0, 2]))),
        (concat_batches([lazy, lazy.slice(2, 3)]), concat_batches([made, made.slice(2, 3)])),
        (lazy.replace(sync=sync + 1), made.replace(sync=sync + 1)),
        (pickle.loads(pickle.dumps(lazy)), made),
        (copy.deepcopy(lazy), made),
        (lazy.with_absent(np.array([False, True, False, False, True])).compact(), made.take(np.array([0, 2, 3]))),
    ]
    for got, want in derived:
        assert got.starts and not got.points
        assert got.to_record_batch().equals(want.to_record_batch())
        assert got.other.tolist() == [INFINITY] * len(got) and not got.starts  # made when read, then kept
    mixed = concat_batches([lazy, EventBatch(sync, sync + 3, {"v": pa.array([1, 2, 3, 4, 5])})])
    assert mixed.other.tolist() == [INFINITY] * 5 + (sync + 3).tolist()
