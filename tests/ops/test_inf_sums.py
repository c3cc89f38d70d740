"""SUM/AVG of floats where values leave the snapshot, with infinities, NaN, NULL and values of very different
magnitudes, on every path that subtracts (constant durations, general lifetimes, hopping windows fused and
unfused, a hopping window that is not a multiple of its hop, SQL's live GROUP BY over retractions, SQL
``hop``), at batch sizes 1..n, against the snapshot oracle (``tidal.testing.Reference``) or DuckDB.

A running float sum that an infinity entered is NaN forever once it leaves (inf - inf): the engine keeps the
sum of the finite values alive and counts of +inf and -inf alive (``compiled.with_infinities``). Values are
drawn per example as one magnitude tier (1e16, 2**60, 1e300, 1e-300, 5e-324) beside small binary fractions:
the compensated running sum (Neumaier's, ``kernels._add_flt``) then leaves no residue when a large value
leaves (values of three tiers at once can: see docs/operators/aggregates.md).
"""

from __future__ import annotations

import contextlib
import copy
import math

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from streams import run_with_restart, timed_values_table

import tidal
from ops.test_variance_stable import assert_close_snapshots
from tidal import agg
from tidal.core.errors import TidalError
from tidal.ops.aggregate.functions import SumOverflowError
from tidal.sql import plan
from tidal.testing import Reference, assert_same_snapshots
from tidal.testing.reference import exact_sum

TIERS = [1e16, 2.0**60, 1e300, 1e-300, 5e-324]
SPECIAL = [math.inf, -math.inf, math.nan, None]


@st.composite
def rows(draw, max_rows=25):
    """(time, key, value, duration) rows in time order: infinities, NaN, NULL, one large or tiny magnitude
    tier (and its negation), small binary fractions."""
    tier = draw(st.sampled_from(TIERS))
    out, t = [], draw(st.sampled_from([0, -4]))  # -4: through -1 and 0 (no time is a marker)
    for _ in range(draw(st.integers(0, max_rows))):
        t += draw(st.integers(0, 3))
        r = draw(st.integers(0, 9))
        if r < 3:
            v = draw(st.sampled_from(SPECIAL))
        elif r < 5:
            v = tier * draw(st.sampled_from([1, -1, 2]))
        else:
            v = draw(st.integers(-8, 8)) / 4.0
        out.append((t, draw(st.integers(0, 2)), v, draw(st.integers(1, 12))))
    return out


def _aggs():
    return dict(s=agg.sum("v"), a=agg.average("v"), n=agg.count_not_null("v"))


PATHS = {
    # name: (stream from a source, reference lifetime of a row, window (size, hop), forced variant, explain())
    "constant duration": (lambda s: s().alter_duration(5), lambda r: (r[0], r[0] + 5), None, None, "FIFO"),
    "general": (lambda s: s(end="e"), lambda r: (r[0], r[0] + r[3]), None, None, "priority endpoint queue"),
    "hopping fused": (lambda s: s(), lambda r: (r[0], r[0] + 1), (10, 5), None, "fused hopping"),
    "hopping unfused": (lambda s: s(), lambda r: (r[0], r[0] + 1), (12, 4), "fifo", "FIFO"),
    "hopping, size not a multiple": (lambda s: s(), lambda r: (r[0], r[0] + 1), (7, 3), None, "priority endpoint"),
}
INF_LEAVES = [(0, 0, math.inf, 2), (1, 0, 1.0, 20), (2, 0, 2.0, 20), (9, 0, 0.25, 20)]
BOTH_LEAVE = [(0, 0, math.inf, 2), (1, 0, -math.inf, 3), (2, 0, 2.0, 20), (6, 0, 0.5, 20)]
LARGE_LEAVES = [(0, 0, 1e16, 2), (1, 0, 1.0, 20), (2, 0, 1.0, 20), (2, 0, 1.0, 20), (9, 0, 1.0, 20)]


@settings(max_examples=150, deadline=None)
@given(
    data=rows(),
    which=st.sampled_from(sorted(PATHS)),
    batch=st.integers(1, 30),
    keyed=st.booleans(),
    engine=st.sampled_from([None, None, "python"]),
)
@example(data=INF_LEAVES, which="constant duration", batch=1, keyed=False, engine=None)
@example(data=BOTH_LEAVE, which="general", batch=2, keyed=True, engine=None)
@example(data=INF_LEAVES, which="hopping fused", batch=80_000, keyed=True, engine=None)
@example(data=BOTH_LEAVE, which="hopping unfused", batch=3, keyed=False, engine=None)
@example(data=LARGE_LEAVES, which="constant duration", batch=80_000, keyed=False, engine=None)
def test_sums_where_values_leave_match_the_snapshot_oracle(data, which, batch, keyed, engine):
    make, lifetime, window, force, variant = PATHS[which]
    table = timed_values_table(data)

    def source(**opts):
        return tidal.from_arrow(table, time="t", batch_size=batch, **opts)

    stream = make(source)
    ref = Reference(
        ("k", "v"), [(s, e, (k, v)) for (s, e), (_, k, v, _) in zip(map(lifetime, data), data, strict=True)]
    )
    if window is not None:
        stream, ref = stream.hopping_window(*window), ref.hopping_window(*window)
    opts = {"variant": force} if force else {}
    if engine:
        opts["engine"] = engine
    q = stream.group_aggregate("k", **_aggs(), **opts) if keyed else stream.aggregate(**_aggs(), **opts)
    assert engine or variant in q.explain()
    expected = ref.group_aggregate("k", **_aggs()) if keyed else ref.aggregate(**_aggs())
    assert_close_snapshots(q.to_arrow(), expected)


def test_the_issues_example():
    table = pa.table({"t": [0, 1, 2], "x": [math.inf, 1.0, 2.0]})
    got = tidal.from_arrow(table, time="t").alter_duration(3).aggregate(s=agg.sum("x"), a=agg.average("x"))
    rows = got.to_intervals().to_pylist()
    assert [(r["start"], r["end"], r["s"], r["a"]) for r in rows] == [
        (0, 3, math.inf, math.inf),
        (3, 4, 3.0, 1.5),
        (4, 5, 2.0, 2.0),
    ]
    # DuckDB's sums over the same windows (rows t-2..t): inf, inf, inf, then 1 + 2 and 2
    con = duckdb.connect()
    con.register("x", table)
    want = con.sql("SELECT t, sum(x) OVER (ORDER BY t RANGE BETWEEN 2 PRECEDING AND CURRENT ROW) FROM x").fetchall()
    assert [s for _, s in sorted(want)] == [math.inf] * 3


def test_a_large_value_leaving_leaves_the_small_ones_exact():
    """1e16 enters, 1.0s come, 1e16 leaves: the sum of the 1.0s alive is exact at every instant (no digits)."""
    data = sorted(LARGE_LEAVES + [(3, 0, 1e16, 1), (4, 0, 1.0, 20), (5, 0, 3.0, 20)])
    for which in ("constant duration", "general"):
        make, lifetime, _, _, _ = PATHS[which]
        stream = make(lambda **o: tidal.from_arrow(timed_values_table(data), time="t", batch_size=2, **o))
        ref = Reference(
            ("k", "v"), [(s, e, (k, v)) for (s, e), (_, k, v, _) in zip(map(lifetime, data), data, strict=True)]
        )
        assert_same_snapshots(stream.aggregate(s=agg.sum("v")).to_arrow(), ref.aggregate(s=agg.sum("v")))


def test_the_oracle_sums_by_definition():
    assert math.isnan(exact_sum([math.inf, 1.0, -math.inf]))
    assert exact_sum([-math.inf, 5.0]) == -math.inf
    assert exact_sum([1e308, 1e308, -1e308]) == 1e308  # exact, then rounded: no intermediate overflow
    assert exact_sum([1e308, 1e308]) == math.inf
    assert exact_sum([1e16, 1.0, 1.0]) == 1e16 + 2.0
    assert exact_sum([3, 4]) == 7 and isinstance(exact_sum([3, 4]), int)


def test_a_finite_sum_past_doubles_range_where_values_leave_is_refused():
    table = pa.table({"t": [0, 1, 2], "x": [1e308, 1e308, 1.0]})
    with pytest.raises(SumOverflowError, match="not supported"):
        tidal.from_arrow(table, time="t").alter_duration(2).aggregate(s=agg.sum("x")).to_arrow()
    # where nothing leaves the sum is DuckDB's in row order: inf
    got = tidal.from_arrow(table, time="t", kind="start").aggregate(s=agg.sum("x")).to_intervals()
    assert got.column("s").to_pylist()[-1] == math.inf


CHECKPOINTED = {
    "fifo": lambda s: s.alter_duration(4).group_aggregate("k", s=agg.sum("v"), a=agg.average("v")),
    "general": lambda s: s.aggregate(s=agg.sum("v"), a=agg.average("v")),
    "fused hopping": lambda s: s.hopping_window(6, 2).group_aggregate("k", s=agg.sum("v"), a=agg.average("v")),
}


def _checkpoint_stream(which: str):
    rng = np.random.default_rng(18)
    n = 60
    values = rng.choice(np.array([math.inf, -math.inf, math.nan, 1.5, -2.0, 1e16, 0.25]), n)
    table = pa.table({"t": np.sort(rng.integers(0, 40, n)), "k": rng.integers(0, 3, n), "v": values})
    source = tidal.from_arrow(table, time="t", batch_size=7)
    if which == "general":
        source = tidal.from_arrow(
            table.append_column("e", pa.compute.add(table["t"], 5)), time="t", end="e", batch_size=7
        )
    return CHECKPOINTED[which](source)


def _rows(table: pa.Table) -> list:
    return sorted(repr(r) for r in zip(*(c.to_pylist() for c in table.columns), strict=True))


@pytest.mark.parametrize("which", sorted(CHECKPOINTED))
@pytest.mark.parametrize("cut", [1, 4, 9])
def test_a_checkpoint_restores_exactly_and_an_old_layout_is_refused(which, cut):
    q = _checkpoint_stream(which)
    whole = q.to_arrow()
    states = []
    assert _rows(run_with_restart(q, cut, states)) == _rows(whole)
    state = states[0]

    def engines(node):  # the aggregate engines' states within the checkpoint
        if isinstance(node, dict):
            if "inf_counts" in node:
                yield node
            for v in node.values():
                yield from engines(v)
        elif isinstance(node, list | tuple):
            for v in node:
                yield from engines(v)

    for marker, what in (("inf_counts", "infinity leaving"), ("residue", "rounded away")):
        older = copy.deepcopy(state)
        found = list(engines(older))
        assert found and all(marker in engine for engine in found)
        for engine in found:
            del engine[marker]
        with pytest.raises(TidalError, match=f"older tidal.*{what}.*not supported"):
            q.query().restore(older)


SOURCE = "max_diff_watermark(source => TABLE(ev), time_field => DESCRIPTOR(t), offset => INTERVAL 3 SECONDS)"
HOP = (
    f"hop(source => TABLE({SOURCE}), time_field => DESCRIPTOR(t), window_length => INTERVAL 10 SECONDS,"
    " hop => INTERVAL 2 SECONDS)"
)
SQL = {
    # an inner GROUP BY that changes at every row: the outer one sees each old maximum retracted (an end edge)
    "group by over retractions": (
        f"SELECT sum(m) AS s, avg(m) AS a, count(m) AS c FROM (SELECT k, max(f) AS m FROM {SOURCE} GROUP BY k"
        " TRIGGER COUNTING 1)",
        "SELECT sum(m), avg(m), count(m) FROM (SELECT k, max(f) AS m FROM ev GROUP BY k)",
    ),
    "hop": (
        f"SELECT window_end, sum(f) AS s, avg(f) AS a FROM {HOP} GROUP BY window_end",
        "SELECT time_bucket(INTERVAL 2 SECONDS, t) - j * INTERVAL 2 SECONDS + INTERVAL 10 SECONDS AS we, sum(f),"
        " avg(f) FROM ev, range(5) r(j) GROUP BY we",
    ),
}
SQL_VALUES = st.sampled_from([math.inf, -math.inf, math.nan, None, -1.5, 0.25, 2.0, 1e16, -1e300])


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=1e-9)
    return a == b


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(values=st.lists(SQL_VALUES, min_size=1, max_size=30), seed=st.integers(0, 1000))
@example(values=[-math.inf, 1.0, 2.0], seed=0)
def test_sql_sums_over_retractions_and_hops_are_duckdbs(tmp_path, values, seed):
    rng = np.random.default_rng(seed)
    n = len(values)
    t = np.sort(rng.integers(0, 30_000, n))  # in order: the watermark keeps every row
    ev = pa.table(
        {
            "t": pa.array(t, pa.int64()).cast(pa.timestamp("ms")),
            "k": pa.array(rng.integers(0, 2, n) if seed % 2 else np.zeros(n, np.int64)),
            "f": pa.array(values, pa.float64()),
        }
    )
    pq.write_table(ev, tmp_path / "ev.parquet")
    con = duckdb.connect()
    for name, (sql, oracle) in SQL.items():
        with contextlib.chdir(tmp_path):
            got = plan(sql.replace("TABLE(ev)", "TABLE('ev.parquet')")).result().to_pylist()
        want = con.sql(oracle).fetchall()
        got_rows = sorted((tuple(r.values()) for r in got), key=repr)
        want_rows = sorted(want, key=repr)
        assert len(got_rows) == len(want_rows), name
        for g, w in zip(got_rows, want_rows, strict=True):
            assert all(_same(x, y) for x, y in zip(g, w, strict=True)), (name, g, w)


def test_an_infinity_in_a_python_contribution_leaves_too():
    """A user aggregate compiled as a running sum (its contribution a lambda) takes the same path."""
    table = pa.table({"t": [0, 1, 2, 3], "x": [1.0, 2.0, 3.0, 4.0]})
    q = (
        tidal.from_arrow(table, time="t")
        .alter_duration(2)
        .aggregate(s=agg.sum(lambda e: 1.0 / (e.x - 1.0) if e.x > 1.0 else math.inf))
    )
    ref = Reference(("t", "x"), [(r["t"], r["t"] + 2, (r["t"], r["x"])) for r in table.to_pylist()])
    want = ref.aggregate(s=agg.sum(lambda e: 1.0 / (e.x - 1.0) if e.x > 1.0 else math.inf))
    assert_close_snapshots(q.to_arrow(), want)


# -- three and more magnitudes alive at once: no residue of the values that left --------------------------------

MAGNITUDES = [1e300, 1e200, 2.0**60, 1e16, 1.0, 0.375, 1e-300]
THREE_LEAVE = [(0, 0, 1e300, 2), (0, 0, 1e16, 2), (0, 0, 1.0, 20), (3, 0, 2.0, 20)]  # the issue's example


@st.composite
def magnitude_rows(draw, max_rows=25):
    """(time, key, value, duration) rows whose values come from three or more magnitude tiers at once (with
    ``signs``, either sign: values alive cancel each other), leaving in any order (durations 1..12)."""
    tiers = draw(st.lists(st.sampled_from(MAGNITUDES), min_size=3, max_size=5, unique=True))
    signs = draw(st.booleans())
    out, t = [], 0
    for _ in range(draw(st.integers(1, max_rows))):
        t += draw(st.integers(0, 2))
        v = draw(st.sampled_from(tiers)) * draw(st.sampled_from([1, 2, 3]))
        if signs and draw(st.booleans()):
            v = -v
        out.append((t, draw(st.integers(0, 1)), v, draw(st.integers(1, 12))))
    return out


@settings(max_examples=200, deadline=None)
@given(
    data=magnitude_rows(),
    which=st.sampled_from(sorted(PATHS)),
    batch=st.integers(1, 30),
    keyed=st.booleans(),
    engine=st.sampled_from([None, None, None, "python"]),
)
@example(data=THREE_LEAVE, which="general", batch=1, keyed=False, engine=None)
@example(data=THREE_LEAVE, which="general", batch=80_000, keyed=True, engine=None)
@example(data=[(0, 0, 1e300, 1), (2, 0, 1e16, 1), (4, 0, 1.0, 1), (8, 0, 2.0, 1)], which="hopping fused", batch=1,
         keyed=False, engine=None)  # fmt: skip
@example(data=[(0, 0, 1e300, 1), (2, 0, 1e16, 1), (4, 0, 1.0, 1), (8, 0, 2.0, 1)], which="hopping unfused",
         batch=2, keyed=False, engine=None)  # fmt: skip
@example(data=[(0, 0, 1e300, 1), (1, 0, 1e16, 1), (2, 0, 1.0, 1), (5, 0, 2.0, 1)], which="constant duration",
         batch=3, keyed=True, engine=None)  # fmt: skip
def test_sums_of_three_magnitudes_keep_nothing_of_the_values_that_left(data, which, batch, keyed, engine):
    """At every instant each group's SUM/AVG is the exact sum of its values alive, rounded once (within 1e-9
    relative): the engine rebuilds a running sum from the values alive when what its compensation rounded away
    could show (``kernels._rebuild_sums``, over the queue's values alive or the live hop slices' sums). A fused
    hopping window's slice adds its own values in row order (compensated, not rebuilt: nothing has left it), and
    three magnitudes that cancel inside one slice can round there (as DuckDB's SUM): its values are drawn of one
    sign."""
    if which == "hopping fused":
        data = [(t, k, abs(v), d) for t, k, v, d in data]
    test_sums_where_values_leave_match_the_snapshot_oracle.hypothesis.inner_test(data, which, batch, keyed, engine)


def test_the_issues_three_magnitudes():
    """1e300, 1e16 and 1.0 enter, the first two leave, 2.0 enters: 1.0, then 3.0 (it was 0.0, then 2.0)."""
    table = timed_values_table(THREE_LEAVE)
    for batch in (1, 2, 80_000):
        got = tidal.from_arrow(table, time="t", end="e", batch_size=batch).aggregate(s=agg.sum("v"))
        rows = [(r["start"], r["end"], r["s"]) for r in got.to_intervals().to_pylist()]
        assert rows == [(0, 2, 1e300), (2, 3, 1.0), (3, 20, 3.0), (20, 23, 2.0)], batch


def test_a_residue_that_queued_values_cannot_rebuild_is_refused(tmp_path):
    """A GROUP BY over retractions feeds the outer SUM start edges and later end edges, which the endpoint queue
    does not hold: -1e300, -1e16 and 1.0 alive, the first two retracted (0.5, 0.25 come in their place). DuckDB:
    1.75; the running sum would say 0.0, so the query is refused, naming what it cannot do."""
    ev = pa.table(
        {
            "t": pa.array([0, 1000, 2000, 3000, 4000], pa.int64()).cast(pa.timestamp("ms")),
            "k": [0, 1, 2, 0, 1],
            "f": [-1e300, -1e16, 1.0, 0.5, 0.25],
        }
    )
    pq.write_table(ev, tmp_path / "ev.parquet")
    con = duckdb.connect()
    con.register("ev", ev)
    assert con.sql(SQL["group by over retractions"][1]).fetchall()[0][0] == 1.75
    with contextlib.chdir(tmp_path), pytest.raises(SumOverflowError, match="end edges.*residue.*not supported"):
        plan(SQL["group by over retractions"][0].replace("TABLE(ev)", "TABLE('ev.parquet')")).result()


@pytest.mark.parametrize("which", ["constant duration", "general", "hopping fused"])
def test_a_checkpoint_taken_with_a_residue_pending_restores_exactly(which):
    """What a compensation rounded away is part of the state: a query stopped after any message, while 1e300,
    1e16 and 1.0 are alive, restored and run on gives the uninterrupted answer, the reference's."""
    data = [(0, 0, 1e300, 5), (1, 0, 1e16, 5), (2, 0, 1.0, 10), (8, 0, 2.0, 5), (9, 0, 1e16, 3), (13, 0, 0.5, 3)]
    make, lifetime, window, _, _ = PATHS[which]
    stream = make(lambda **o: tidal.from_arrow(timed_values_table(data), time="t", batch_size=1, **o))
    ref = Reference(
        ("k", "v"), [(s, e, (k, v)) for (s, e), (_, k, v, _) in zip(map(lifetime, data), data, strict=True)]
    )
    if which == "hopping fused":
        stream, ref = stream.hopping_window(6, 2), ref.hopping_window(6, 2)
    q = stream.aggregate(s=agg.sum("v"))
    whole = q.to_arrow()
    assert_close_snapshots(whole, ref.aggregate(s=agg.sum("v")))
    for cut in range(1, 12):
        assert _rows(run_with_restart(q, cut)) == _rows(whole), cut
