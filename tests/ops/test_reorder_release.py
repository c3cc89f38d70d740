"""A release of the reorder operator in one pass (the sorter's output merged with the in-order queue's prefix
and mapped to the payload store's rows, then one gather per column), the in-order queue itself, the
Impatience sorter's large pushes (cut into chunks, the in-order part queued), and ``to_arrow`` handing its
memory back with the table. Oracles: plain Python sorting and dictionaries, numpy's stable argsort."""

from __future__ import annotations

import gc
import tracemalloc

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tidal
from tidal.ops.impatience import ImpatienceSorter
from tidal.ops.reorder_queue import InOrderQueue
from tidal.ops.reorder_store import PayloadStore

from .test_reorder_store import KINDS, _check_other, _columns


@st.composite
def releases(draw):
    """Batches added to a store; each release takes some live rows as a 'sorter' part (any rows, sorted by
    (time, row)) and the rest of a prefix of the rows in id order as a 'queue' part."""
    steps = []
    for _ in range(draw(st.integers(1, 20))):
        if draw(st.booleans()):
            k = draw(st.integers(0, 30))
            keep = draw(st.lists(st.booleans(), min_size=k, max_size=k)) if draw(st.booleans()) else None
            steps.append(("add", k, keep, draw(st.booleans())))
        else:
            steps.append(
                ("release", draw(st.floats(0, 1)), draw(st.floats(0, 1)), draw(st.randoms(use_true_random=False)))
            )
    return steps


@settings(max_examples=150, deadline=None)
@given(releases(), st.sampled_from(KINDS), st.sampled_from([0, 8, 65_536]), st.integers(1, 4))
def test_a_release_merges_maps_and_gathers_in_one_pass(program, kind, slack, spread):
    store = PayloadStore(slack=slack)
    model: dict[int, tuple] = {}  # row id -> (time, other, payload)
    made = 0
    for i, step in enumerate(program):
        if step[0] == "add":
            _, k, keep, points = step
            cols = _columns(kind, made, k, i)
            sync = (np.arange(made, made + k, dtype=np.int64) // spread) * 10  # ties when spread > 1
            other = sync + 1 if points else sync * 3 + 7
            present = None if keep is None else np.flatnonzero(np.array(keep, dtype=bool))
            first = store.add(None if points else other, cols, present, sync)
            for r in range(k) if present is None else present.tolist():
                model[first + r] = (int(sync[r]), int(other[r]), {n: c[r].as_py() for n, c in cols.items()})
            made += k
            continue
        _, prefix, frac, rnd = step
        alive = sorted(model)
        queued = alive[: int(len(alive) * prefix)]  # a prefix in id order, times not decreasing
        rest = [r for r in alive if r not in set(queued)]
        picked = sorted(rnd.sample(rest, int(len(rest) * frac)), key=lambda r: (model[r][0], r))
        if not queued and not picked:
            continue

        def arrays(rows):
            return (
                np.array([model[r][0] for r in rows], dtype=np.int64),
                np.array(rows, dtype=np.int64),
            )

        parts = store.release(*arrays(picked), *arrays(queued))
        want = sorted(picked + queued, key=lambda r: (model[r][0], r))
        got_t, got_other, got_cols = [], [], {}
        for times, other, cols in parts:
            got_t += times.tolist()
            got_other += (times + 1).tolist() if other is None else other.tolist()
            for name, col in cols.items():
                got_cols.setdefault(name, []).extend(col.to_pylist())
        assert got_t == [model[r][0] for r in want]
        _check_other(None if all(o is None for _, o, _ in parts) else np.array(got_other), [model[r][1] for r in want])
        for name, values in got_cols.items():
            assert values == [model[r][2][name] for r in want], name
        for r in want:
            del model[r]
        assert store.held == len(model)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 40), st.integers(0, 60)), max_size=30))
def test_the_in_order_queue_keeps_its_pairs_through_compaction_and_growth(steps):
    """Appends of increasing times, releases of prefixes up to a time; against a list."""
    queue, model, t = InOrderQueue(4), [], 0
    for k, upto in steps:
        times = t + np.arange(k, dtype=np.int64) // 2
        rows = np.arange(len(model) + 1000 * t, len(model) + 1000 * t + k, dtype=np.int64)
        queue.append(times, rows)
        model += list(zip(times.tolist(), rows.tolist(), strict=True))
        t += k // 2 + 1
        c = queue.count_le(upto + t // 2)
        assert c == sum(1 for x, _ in model if x <= upto + t // 2)
        got_t, got_r = queue.view(c)
        assert list(zip(got_t.tolist(), got_r.tolist(), strict=True)) == model[:c]
        queue.pop(c)
        model = model[c:]
        assert len(queue) == len(model)
        live = queue.live()
        assert list(zip(live[0].tolist(), live[1].tolist(), strict=True)) == model


@pytest.mark.parametrize("p", [0.0, 0.01, 0.5, 1.0])
@pytest.mark.parametrize("every", [1, 3, 50])
def test_pushes_larger_than_a_chunk_against_numpy(p, every):
    """Pushes of 100,000 elements (cut into chunks; those in order queued) with a punctuation after every
    ``every`` pushes, a snapshot and restore on the way; against a stable argsort."""
    rng = np.random.default_rng(11)
    n = 600_000
    t = np.arange(n, dtype=np.int64)
    m = rng.random(n) < p
    t[m] -= rng.exponential(30_000, int(m.sum())).astype(np.int64)
    s = ImpatienceSorter()
    out_t, out_r, late = [], [], []
    for k, pos in enumerate(range(0, n, 100_000)):
        late.append(s.push(t[pos : pos + 100_000]))
        if k == 3:
            s = ImpatienceSorter.restore(s.snapshot())
        if (k + 1) % every == 0:
            a, b = s.punctuate(int(t[: pos + 100_000].max()) - 50_000)
            out_t.append(a)
            out_r.append(b)
    a, b = s.flush_all()
    late = np.concatenate(late)
    keep = np.flatnonzero(~late)
    order = keep[np.argsort(t[keep], kind="stable")]
    np.testing.assert_array_equal(np.concatenate([*out_r, b]), order)
    np.testing.assert_array_equal(np.concatenate([*out_t, a]), t[order])
    assert s.buffered == 0


def test_to_arrow_hands_its_memory_back_with_the_table():
    """The collected batches are freed with the table, not at the next garbage collection (the operators may
    form a reference cycle)."""
    rng = np.random.default_rng(5)
    n = 200_000
    times = np.arange(n, dtype=np.int64) * 10 - (rng.random(n) < 0.05) * rng.integers(0, 5_000, n)
    table = pa.table({"t": times, "v": rng.random(n)})
    stream = tidal.from_arrow(table, time="t", disorder="drop", reorder_latency=10_000)
    stream.to_arrow()  # compile and warm up
    kept = stream.count()
    gc.collect()
    gc.disable()
    tracemalloc.start()  # numpy memory (the gathered payload and times) is traced; Arrow's pool is counted apart

    def allocated() -> int:
        return pa.total_allocated_bytes() + tracemalloc.get_traced_memory()[0]

    try:
        before = allocated()
        out = stream.to_arrow()
        assert out.num_rows == kept > 0.9 * n
        assert (np.diff(out.column("sync_time").to_numpy()) >= 0).all()
        held = allocated() - before
        assert held > 8 * kept  # the gathered payload
        del out
        assert allocated() - before < held // 4
    finally:
        tracemalloc.stop()
        gc.enable()


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(st.integers(0, 30), max_size=40), min_size=1, max_size=12), st.booleans())
def test_many_parts_merged_in_one_pass_match_a_sort(parts, disjoint):
    """Sorted (time, row id) parts, ties across parts, empty parts, or parts one after another in time."""
    from numba.typed import List

    from tidal.ops.impatience_chunks import _merge_many

    ts, rs, pairs, row = List(), List(), [], 0
    for k, part in enumerate(parts):
        times = sorted(t + (100 * k if disjoint else 0) for t in part)
        rows = list(range(row, row + len(times)))[::-1] if not disjoint else list(range(row, row + len(times)))
        rows = [r for _, r in sorted(zip(times, rows, strict=True))]  # sorted by (time, row id)
        row += len(times)
        ts.append(np.array(times, dtype=np.int64))
        rs.append(np.array(rows, dtype=np.int64))
        pairs += list(zip(times, rows, strict=True))
    total = len(pairs)
    out_t, out_r = np.empty(total, dtype=np.int64), np.empty(total, dtype=np.int64)
    stops = np.array([len(t) for t in ts], dtype=np.int64)
    assert _merge_many(ts, rs, np.zeros(len(ts), dtype=np.int64), stops, out_t, out_r) == total
    assert list(zip(out_t.tolist(), out_r.tolist(), strict=True)) == sorted(pairs)
