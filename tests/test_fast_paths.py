"""The fast paths give the same answers as the general ones: lazy point lifetimes, the remembered
order check, compiled and fused where/select kernels (and their disk cache), the reusable row."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tidal
from tidal import agg
from tidal.core.batch import EventBatch, concat_batches
from tidal.expr import compile as compile_mod
from tidal.expr import jit
from tidal.io import ingress

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def kernel_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("TIDAL_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "tidal-cache"))


def table(n: int = 500, seed: int = 1) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table(
        {
            "ts": np.sort(rng.integers(0, n // 2, n)),
            "user_id": rng.integers(-1000, 1000, n),
            "v": rng.random(n) * 10 - 5,
            "name": [f"n{i % 7}" for i in range(n)],
        }
    )


def _eager_points(monkeypatch):
    """Ingress as before lazy lifetimes: points get ``other = sync + 1`` materialised."""
    real = ingress.other_times

    def eager(rb, sync, offset, **kw):
        other = real(rb, sync, offset, **kw)
        return sync + 1 if other is None else other

    monkeypatch.setattr(ingress, "other_times", eager)


# -- lazy point lifetimes -----------------------------------------------------------------------
PIPELINES = {
    "identity": lambda s: s,
    "where": lambda s: s.where(lambda e: e.user_id % 3 == 0),
    "select": lambda s: s.select(lambda e: {"u": e.user_id + 1, "name": e.name}),
    "select_many": lambda s: s.select_many(lambda e: [e.user_id] * (e.user_id % 2)),
    "tumbling": lambda s: s.tumbling_window(10),
    "hopping": lambda s: s.hopping_window(10, 5),
    "alter_duration": lambda s: s.alter_duration(3),
    "shift": lambda s: s.shift_lifetime(4),
    "extend": lambda s: s.extend_lifetime(2),
    "clip": lambda s: s.tumbling_window(10).clip_duration(3),
    "quantize": lambda s: s.quantize_lifetime(7),
    "point_at_end": lambda s: s.alter_duration(5).point_at_end(),
    "chop": lambda s: s.alter_duration(9).chop(4),
    "union": lambda s: s.union(s.shift_lifetime(1)),
    "count": lambda s: s.tumbling_window(10).aggregate(n=agg.count()),
    "sum_points": lambda s: s.aggregate(total=agg.sum("user_id")),
    "grouped": lambda s: s.group_apply("name", lambda g: g.aggregate(n=agg.count())),
    "join": lambda s: s.join(s.alter_duration(3), "name", "name"),
    "distinct": lambda s: s.select("name").distinct(),
}


@pytest.mark.parametrize("name", sorted(PIPELINES))
def test_point_events_without_other_behave_as_explicit_points(name, monkeypatch):
    pipeline = PIPELINES[name]
    lazy = pipeline(tidal.from_arrow(table(300), time="ts", batch_size=37))
    got = lazy.to_arrow(), lazy.to_intervals()
    _eager_points(monkeypatch)
    eager = pipeline(tidal.from_arrow(table(300), time="ts", batch_size=37))
    assert got[0].equals(eager.to_arrow())
    assert got[1].equals(eager.to_intervals())


def test_every_egress_sees_point_lifetimes(monkeypatch):
    lazy = tidal.from_arrow(table(100), time="ts", batch_size=16)
    got = [], []
    lazy.subscribe(got[0].append)
    views = lazy.to_events(), lazy.to_changelog(), lazy.to_pandas()
    sync = lazy.to_arrow().column("sync_time").to_numpy()
    assert (lazy.to_arrow().column("other_time").to_numpy() == sync + 1).all()
    _eager_points(monkeypatch)
    eager = tidal.from_arrow(table(100), time="ts", batch_size=16)
    eager.subscribe(got[1].append)
    assert views[0] == eager.to_events()
    assert views[1].equals(eager.to_changelog())
    assert views[2].equals(eager.to_pandas())
    assert pa.Table.from_batches(got[0]).equals(pa.Table.from_batches(got[1]))


def test_lazy_other_survives_batch_operations():
    cols = {"x": pa.array([1, 2, 3, 4])}
    b = EventBatch(np.array([1, 2, 2, 5]), None, cols)
    assert b.points and b.take(np.array([0, 3])).points and b.slice(1, 3).points
    assert concat_batches([b, b.slice(0, 2)]).points
    assert not concat_batches([b, EventBatch(np.array([7]), np.array([9]), {"x": pa.array([0])})]).points
    moved = b.replace(sync=b.sync + 10)  # a new sync without a new other keeps the old lifetimes
    assert moved.other.tolist() == [2, 3, 3, 6]
    assert b.other.tolist() == [2, 3, 3, 6] and not b.points
    assert b.to_record_batch().column(1).to_pylist() == [2, 3, 3, 6]


# -- the order check ----------------------------------------------------------------------------
def test_order_of_an_arrow_table_is_checked_on_the_first_run_only(monkeypatch):
    calls = []
    real = ingress._check_order
    monkeypatch.setattr(ingress, "_check_order", lambda *a: calls.append(1) or real(*a))
    s = tidal.from_arrow(table(1000), time="ts", batch_size=100)
    first = s.count()
    assert len(calls) == 10
    assert s.where(lambda e: e.v > 0).count() <= first == s.count() == 1000
    assert len(calls) == 10  # later runs of the same table skip it
    bad = tidal.from_arrow(pa.table({"ts": [1, 5, 3, 4], "v": [1, 2, 3, 4]}), time="ts", batch_size=2)
    for _ in range(2):  # never proven, so checked every time
        with pytest.raises(tidal.InputError, match="row 2: sync time 3"):
            bad.count()


def test_order_proof_is_shared_by_every_stream_over_one_table(monkeypatch):
    calls = []
    real = ingress._check_order
    monkeypatch.setattr(ingress, "_check_order", lambda *a: calls.append(1) or real(*a))
    data = table(1000)
    assert tidal.from_arrow(data, time="ts", batch_size=100).count() == 1000
    assert len(calls) == 10
    assert tidal.from_arrow(data, time="ts", batch_size=250).count() == 1000  # a new stream, the same table
    assert len(calls) == 10
    other = table(1000)  # an equal table is another object: checked again
    assert tidal.from_arrow(other, time="ts", batch_size=100).count() == 1000
    assert len(calls) == 20
    bad = pa.table({"ts": [1, 5, 3, 4], "v": [1, 2, 3, 4]})
    for _ in range(2):  # never proven, so every stream over it checks it
        with pytest.raises(tidal.InputError, match="row 2: sync time 3"):
            tidal.from_arrow(bad, time="ts", batch_size=2).count()


@given(st.lists(st.integers(-50, 50), min_size=1, max_size=9000), st.integers(-60, 60))
@settings(max_examples=40, deadline=None)
def test_first_step_back_finds_the_first_descent(values, previous):
    sync = np.array(values, dtype=np.int64)
    steps = [i for i in range(len(values)) if values[i] < (values[i - 1] if i else previous)]
    assert ingress._first_step_back(sync, previous) == (steps[0] if steps else -1)


# -- compiled where / where+select ------------------------------------------------------------
EXPRESSIONS = [
    (lambda e: e.user_id % 100 < 5, lambda e: {"a": e.user_id, "v2": e.v * 2.0, "name": e.name}),
    (lambda e: e.user_id % 7 == 3 or e.v > 4.5, lambda e: {"m": e.user_id % -9, "q": e.user_id // 4}),
    (lambda e: abs(e.user_id) % 3 > 0 and e.v < 0, lambda e: e.v + e.user_id),
    (lambda e: (e.user_id * 3 + 1) % 5 != 0, lambda e: {"name": e.name, "ts": e.ts}),
]


def _run(monkeypatch, compiled: bool, build):
    monkeypatch.setattr(compile_mod, "JIT_THRESHOLD", 1 if compiled else 10**15)
    monkeypatch.setattr(jit, "is_cached", lambda body: compiled)
    return build().to_arrow()


@pytest.mark.parametrize("case", range(len(EXPRESSIONS)))
@given(seed=st.integers(0, 2**16), batch_size=st.sampled_from([1, 3, 64, 1000]), prefilter=st.booleans())
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_compiled_and_fused_kernels_agree_with_numpy(monkeypatch, case, seed, batch_size, prefilter):
    pred, proj = EXPRESSIONS[case]
    t = table(400, seed)

    def build():
        s = tidal.from_arrow(t, time="ts", batch_size=batch_size)
        if prefilter:  # absence bits from an earlier where (its predicate keeps more than a quarter)
            s = s.where(lambda e: e.user_id != 17)
        return s.where(pred).select(proj)

    want = _run(monkeypatch, False, build)
    assert _run(monkeypatch, True, build).equals(want)
    where_only = lambda: tidal.from_arrow(t, time="ts", batch_size=batch_size).where(pred)  # noqa: E731
    assert _run(monkeypatch, True, where_only).equals(_run(monkeypatch, False, where_only))


def test_fused_kernel_falls_back_on_division_by_zero(monkeypatch):
    t = pa.table({"ts": [1, 2, 3], "a": [4, 5, 6], "b": [2, 0, 3]})
    build = lambda: tidal.from_arrow(t, time="ts").where(lambda e: e.a > 4).select(lambda e: {"q": e.a // e.b})  # noqa: E731
    with pytest.raises(tidal.LambdaError, match="ZeroDivisionError.*sync_time=2"):
        _run(monkeypatch, True, build)
    ok = lambda: tidal.from_arrow(t, time="ts").where(lambda e: e.b != 0).select(lambda e: {"q": e.a // e.b})  # noqa: E731
    assert _run(monkeypatch, True, ok).column("q").to_pylist() == [2, 2]


def test_interval_lifetimes_go_through_the_fused_kernel(monkeypatch):
    t = table(200).append_column("end", pa.compute.add(table(200).column("ts"), 3))
    build = lambda: tidal.from_arrow(t, time="ts", end="end").where(lambda e: e.v > 0).select(lambda e: e.v * 3)  # noqa: E731
    assert _run(monkeypatch, True, build).equals(_run(monkeypatch, False, build))


_CHILD = """
import sys
import numpy as np, pyarrow as pa
import tidal
from tidal.expr import compile as compile_mod, jit
compile_mod.JIT_THRESHOLD = 1
t = pa.table({"ts": np.arange(5000), "u": np.arange(5000) * 7, "v": np.arange(5000) * 0.5})
n = tidal.from_arrow(t, time="ts").where(lambda e: e.u % 11 < 3).select(lambda e: {"w": e.v * 2.0}).count()
fns = list(jit._MODULES.values())
hits = sum(sum(f.stats.cache_hits.values()) for f in fns)
print(n, sum(len(f.signatures) for f in fns), hits, sum(sum(f.stats.cache_misses.values()) for f in fns))
"""


def test_kernel_cache_on_disk_means_a_second_process_compiles_nothing(tmp_path):
    env = {**os.environ, "TIDAL_CACHE_DIR": str(tmp_path), "PYTHONPATH": str(ROOT)}

    script = tmp_path / "kernel_child.py"  # a file: lambdas typed at -c have no source to translate
    script.write_text(_CHILD)

    def child():
        out = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, check=True)
        return [int(x) for x in out.stdout.split()]

    n, compiled, hits, _ = child()
    assert compiled >= 1 and hits == 0 and n == sum(1 for u in range(5000) if (u * 7) % 11 < 3)
    assert list((tmp_path / "kernels").glob("tidal_kernel_*.py"))
    assert child() == [n, compiled, compiled, 0]  # every kernel loaded from the cache, none compiled


def test_kernel_module_is_written_once_and_never_replaced(tmp_path):
    path = tmp_path / "k.py"
    jit._write_once(path, "a = 1\n")
    inode = path.stat().st_ino
    jit._write_once(path, "a = 2\n")  # a second writer (another process) leaves the first file in place
    assert path.read_text() == "a = 1\n" and path.stat().st_ino == inode
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


# -- row mode ---------------------------------------------------------------------------------
def _opaque(x):
    return x % 3 == 0


def test_row_mode_predicate_that_keeps_its_rows_sees_them_unchanged():
    kept = []
    t = table(50)
    s = tidal.from_arrow(t, time="ts")
    out = s.where(lambda e: kept.append(e) or _opaque(e.user_id)).to_arrow()
    assert [r.user_id for r in kept] == t.column("user_id").to_pylist()
    assert out.column("user_id").to_pylist() == [u for u in t.column("user_id").to_pylist() if u % 3 == 0]
    assert kept[0]["name"] == kept[0].name == "n0" and kept[0]._asdict()["ts"] == kept[0].ts


def test_row_mode_truth_of_non_bool_results():
    t = pa.table({"ts": [1, 2, 3, 4], "s": ["", "a", "b", ""]})
    out = tidal.from_arrow(t, time="ts").where(lambda e: _opaque(0) and e.s.strip()).to_arrow()
    assert out.column("s").to_pylist() == ["a", "b"]
