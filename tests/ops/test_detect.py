"""Detect (row pattern matching) against a brute-force enumerator of matches, checkpoints, bad input."""

from __future__ import annotations

import pickle
import random

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from pattern_oracle import SkipError, all_matches, examples, measure, patterns

import tidal
from tidal.core.batch import EventBatch
from tidal.core.errors import InputError, PlanError
from tidal.core.time import EARLIEST
from tidal.ops.pattern.syntax import Alt, Seq, Var, check, parse_pattern, to_text
from tidal.plan import nodes

VARS = ("A", "B", "C")
PATTERNS = patterns()


# -- random patterns and conditions -------------------------------------------------------------------
def local(kind: str, c: int):
    if kind == "lt":
        return lambda e: e.v < c
    if kind == "ge":
        return lambda e: e.v >= c
    return lambda e: e.v % 2 == 1


def conditions(draw_kinds: dict) -> tuple[dict, dict]:
    """The lambdas for ``detect`` and the oracle's ``ok(var, row, mapped)`` pieces, from drawn kinds."""
    define, tests = {}, {}
    for var, (kind, arg) in draw_kinds.items():
        if kind in ("gt_last", "le_last") and arg not in draw_kinds:
            kind = "any"  # it names a variable the pattern lacks
        if kind == "any":
            tests[var] = lambda rows, i, mapped: True
        elif kind in ("gt_last", "le_last"):
            op = ">" if kind == "gt_last" else "<="
            define[var] = eval(f"lambda e, {arg}: e.v {op} {arg}.v")  # a parameter named after the variable

            def test(rows, i, mapped, arg=arg, op=op):
                last = [r for r, v in mapped if v == arg]
                if not last:
                    return False
                a, b = rows[i]["v"], rows[last[-1]]["v"]
                return a > b if op == ">" else a <= b

            tests[var] = test
        else:
            define[var] = local(kind, arg)
            tests[var] = {
                "lt": lambda rows, i, mapped, c=arg: rows[i]["v"] < c,
                "ge": lambda rows, i, mapped, c=arg: rows[i]["v"] >= c,
                "odd": lambda rows, i, mapped: rows[i]["v"] % 2 == 1,
            }[kind]
    return define, tests


def condition_kinds(var: str):
    others = [v for v in VARS if v != var]
    return st.one_of(
        st.tuples(st.sampled_from(["lt", "ge"]), st.integers(0, 5)),
        st.just(("odd", 0)),
        st.just(("any", 0)),
        st.tuples(st.sampled_from(["gt_last", "le_last"]), st.sampled_from(others)),
    )


SKIPS = st.sampled_from(
    ["past_last_row", "to_next_row", ("to_first", "A"), ("to_last", "A"), ("to_first", "B"), ("to_last", "C")]
)
MEASURES = {  # name: (spec, oracle's (kind, variable, column))
    "start": ("first(t)", ("first", None, "t")),
    "end": ("last(t)", ("last", None, "t")),
    "rows": ("count(*)", ("count", None, None)),
    "a_first": ("first(A.v)", ("first", "A", "v")),
    "b_last": ("last(B.v)", ("last", "B", "v")),
    "b_sum": ("sum(B.v)", ("sum", "B", "v")),
    "c_max": ("max(C.v)", ("max", "C", "v")),
    "a_count": ("count(A)", ("count", "A", None)),
    "avg": ("avg(v)", ("avg", None, "v")),
}


def measures_for(used: set) -> dict:
    return {n: m for n, m in MEASURES.items() if m[1][1] is None or m[1][1] in used}


def expected(rows: list[dict], tree, tests: dict, within, skip, keyed: bool, ms: dict) -> list | str:
    """The oracle's matches as sorted (end time, [key], measures...) tuples, or "error"."""
    parts = sorted({r["k"] for r in rows}) if keyed else [None]
    out = []
    for p in parts:
        sub = [r for r in rows if not keyed or r["k"] == p]
        times = [r["t"] for r in sub]

        def ok(var, i, mapped, sub=sub):
            return tests[var](sub, i, mapped)

        try:
            found = all_matches(tree, times, ok, within, skip)
        except SkipError:
            return "error"
        for mp in found:
            values = tuple(measure(k, v, c, sub, mp) for _, (k, v, c) in ms.values())
            out.append((times[mp[-1][0]], *((p,) if keyed else ()), *values))
    return sorted(out, key=repr)


def actual(stream, keyed: bool, ms: dict) -> list | str:
    try:
        table = stream.to_arrow()
    except InputError:
        return "error"
    names = (["k"] if keyed else []) + list(ms)
    cols = [table.column("sync_time").to_pylist()] + [table.column(n).to_pylist() for n in names]
    assert table.column("other_time").to_pylist() == [t + 1 for t in cols[0]]
    assert cols[0] == sorted(cols[0])
    return sorted(zip(*cols, strict=True), key=repr)


def table(rows: list[dict]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=pa.schema([("t", pa.int64()), ("k", pa.int64()), ("v", pa.int64())]))


def rows_of(values: list[int], gaps: list[int], keys: list[int], base: int = 0) -> list[dict]:
    t, rows = base, []
    for v, g, k in zip(values, gaps, keys, strict=False):
        t += g
        rows.append({"t": t, "k": k, "v": v})
    return rows


BASES = st.sampled_from([0, 0, -4, -(2**40), EARLIEST])


@st.composite
def cases(draw, distinct_times=False):
    tree = draw(PATTERNS)
    try:
        check(tree)
    except PlanError:
        assume(False)
    n = draw(st.integers(0, 12))
    values = draw(st.lists(st.integers(0, 5), min_size=n, max_size=n))
    gaps = draw(st.lists(st.integers(1 if distinct_times else 0, 3), min_size=n, max_size=n))
    keyed = draw(st.booleans())
    keys = draw(st.lists(st.integers(0, 1), min_size=n, max_size=n)) if keyed else [0] * n
    kinds = {v: draw(condition_kinds(v)) for v in VARS}
    within = draw(st.one_of(st.none(), st.integers(1, 8)))
    skip = draw(SKIPS)
    base = draw(BASES)  # times before 1970 too: around -1 and 0 (never markers), far back, the range's start
    return tree, rows_of(values, gaps, keys, base), keyed, kinds, within, skip


def detect(stream, tree, define, within, skip, keyed, ms):
    specs = {n: spec for n, (spec, _) in ms.items()}
    return stream.detect(to_text(tree), define, specs, within=within, skip=skip, partition_by="k" if keyed else None)


def _vars(tree):
    if isinstance(tree, Var):
        return [tree]
    kids = tree.parts if isinstance(tree, Seq) else tree.options if isinstance(tree, Alt) else (tree.body,)
    return [v for k in kids for v in _vars(k)]


# -- against the enumerator -----------------------------------------------------------------------------
def _prepared(case):
    """A drawn case's pattern, rows and options, its DEFINE conditions and measures (over the variables the
    pattern uses), and the enumerator's matches."""
    tree, rows, keyed, kinds, within, skip = case
    used = {v.name for v in _vars(tree)}
    assume(not isinstance(skip, tuple) or skip[1] in used)
    define, tests = conditions({v: k for v, k in kinds.items() if v in used})
    for v in used:
        tests.setdefault(v, lambda rows, i, mapped: True)
    ms = measures_for(used)
    return tree, rows, keyed, within, skip, define, ms, expected(rows, tree, tests, within, skip, keyed, ms)


@settings(max_examples=examples(250), deadline=None)
@given(case=cases(), batch=st.sampled_from([1, 3, 1000]))
def test_detect_matches_the_enumerator(case, batch):
    tree, rows, keyed, within, skip, define, ms, want = _prepared(case)
    stream = tidal.from_arrow(table(rows), time="t", batch_size=batch)
    assert actual(detect(stream, tree, define, within, skip, keyed, ms), keyed, ms) == want


@settings(max_examples=examples(100), deadline=None)
@given(case=cases(distinct_times=True), seed=st.integers(0, 1000))
def test_disordered_input_through_a_watermark_gives_the_same_matches(case, seed):
    tree, rows, keyed, within, skip, define, ms, want = _prepared(case)
    arrived = list(rows)
    random.Random(seed).shuffle(arrived)
    times = [r["t"] for r in rows]
    latency = 1 + max(times, default=0) - min(times, default=0)  # nothing late: the sort restores the order
    stream = tidal.from_arrow(
        table(arrived), time="t", disorder="drop", reorder_latency=latency, punctuate_every_events=2
    )
    assert actual(detect(stream, tree, define, within, skip, keyed, ms), keyed, ms) == want


# -- examples ------------------------------------------------------------------------------------------
def trades():
    prices = [10, 12, 15, 11, 9, 8, 13, 14, 7, 20]
    return [{"t": i * 10, "sym": "X" if i % 3 else "Y", "price": p} for i, p in enumerate(prices)]


def test_a_rising_run_per_symbol():
    s = tidal.from_records(trades(), time="t")
    out = s.detect(
        "A B+",
        {"B": lambda e, A: e.price > A.price},
        {"start": "first(A.t)", "end": "last(B.t)", "n": "count(B)", "top": "max(B.price)"},
        partition_by="sym",
    )
    got = out.to_arrow().select(["sym", "start", "end", "n", "top"]).to_pylist()
    # X: 12(10) 15(20) 9(40) 8(50) 14(70) 7(80) ; Y: 10(0) 11(30) 13(60) 20(90)
    assert got == [
        {"sym": "X", "start": 10, "end": 20, "n": 1, "top": 15},
        {"sym": "X", "start": 50, "end": 70, "n": 1, "top": 14},
        {"sym": "Y", "start": 0, "end": 90, "n": 3, "top": 20},
    ]


def test_matches_wait_for_progress_and_within_bounds_state():
    # A followed by B within 5 ticks: every match is emitted; state stays small over a long input
    rows = [{"t": i, "v": i % 7} for i in range(3000)]
    s = tidal.from_records(rows, time="t", batch_size=100)
    out = s.detect("A B", {"A": lambda e: e.v == 1, "B": lambda e: e.v == 2}, {"a": "first(A.t)"}, within=5)
    q = out.query()
    q.run()
    assert q.sink.table().column("a").to_pylist() == [t for t in range(3000) if t % 7 == 1 and t + 1 < 3000]
    op = next(o for o in q.operators if type(o).__name__ == "DetectOp")
    assert all(len(k.rows) <= 200 and len(k.attempts) <= 5 for k in op.state.values())


def test_checkpoint_and_restore_continue_exactly():
    rows = [{"t": i, "k": i % 3, "v": (i * 7) % 10} for i in range(400)]
    s = tidal.from_records(rows, time="t", batch_size=7, punctuate_every_events=5)
    out = s.detect(
        "A B* C", {"A": lambda e: e.v < 3, "B": lambda e, A: e.v >= A.v, "C": lambda e: e.v > 7},
        {"s": "first(A.t)", "n": "count(B)"}, within=20, partition_by="k",
    )  # fmt: skip
    whole = out.to_arrow()
    q = out.query()
    q.run(max_messages=30)
    state = pickle.loads(pickle.dumps(q.checkpoint()))
    first = q.sink.table()
    q2 = out.query()
    q2.restore(state)
    q2.run()
    assert pa.concat_tables([first, q2.sink.table()]).to_pylist() == whole.to_pylist()
    assert whole.num_rows > 10


@pytest.mark.parametrize(
    "pattern, words",
    [
        ("A+?", "reluctant"),
        ("A*", "can match no rows"),
        ("(A?)+ B", "empty match"),
        ("^A B", "anchor"),
        ("A {- B -} C", "exclusion"),
        ("PERMUTE(A, B)", "PERMUTE"),
        ("A B{3,2}", "bad quantifier"),
        ("A (B", "expected ')'"),
    ],
)
def test_refused_patterns_name_the_construct(pattern, words):
    with pytest.raises(PlanError, match="not supported|bad quantifier|expected"):
        parse_pattern(pattern)
    with pytest.raises(PlanError) as err:
        parse_pattern(pattern)
    assert words in str(err.value)


def test_bad_arguments_are_plan_errors():
    s = tidal.from_records(trades(), time="t")
    with pytest.raises(PlanError, match="does not use"):
        s.detect("A B", {"Z": lambda e: True}, {"n": "count(*)"})
    with pytest.raises(PlanError, match="unknown field"):
        s.detect("A B", {}, {"n": "sum(A.nope)"})
    with pytest.raises(PlanError, match="no pattern variable"):
        s.detect("A B", {"B": lambda e, Q: True}, {"n": "count(*)"})
    with pytest.raises(PlanError, match="within"):
        s.detect("A B", {}, {"n": "count(*)"}, within=0)
    with pytest.raises(PlanError, match="not a pattern variable"):
        s.detect("A B", {}, {"n": "count(*)"}, skip=("to_last", "Q"))


def test_skip_to_the_first_row_of_the_match_is_an_error():
    s = tidal.from_records(trades(), time="t")
    out = s.detect("A B", {}, {"n": "count(*)"}, skip=("to_first", "A"))
    with pytest.raises(InputError, match="endless loop"):
        out.to_arrow()


def test_lifetimes_do_not_matter_and_end_edges_are_no_events():
    # the same three events as points, as intervals, and as start edges closed later by end edges
    points = [(1, 2, 1), (2, 3, 2), (5, 6, 2)]
    intervals = [(1, 9, 1), (2, 4, 2), (5, 7, 2)]
    edges = [(1, tidal.INFINITY, 1), (2, tidal.INFINITY, 2), (4, 1, 1), (5, tidal.INFINITY, 2), (6, 2, 2)]
    got = []
    for rows in (points, intervals, edges):
        t = pa.table({"s": [r[0] for r in rows], "o": [r[1] for r in rows], "v": [r[2] for r in rows]})
        s = tidal.from_arrow(t, time="s", other="o").select("v")
        out = s.detect("A B+", {"A": lambda e: e.v == 1, "B": lambda e: e.v == 2}, {"n": "count(B)"})
        got.append(out.to_arrow().select(["sync_time", "n"]).to_pylist())
    assert got[0] == got[1] == got[2] == [{"sync_time": 5, "n": 2}]


class _Collect:
    def __init__(self):
        self.rows, self.punctuations = [], []

    def on_batch(self, batch):
        self.rows += list(zip(batch.sync.tolist(), batch.columns["s"].to_pylist(), strict=True))

    def on_punctuation(self, time):
        self.punctuations.append(time)

    def on_completed(self):
        pass


def test_a_match_comes_out_exactly_when_nothing_later_can_change_it():
    node = tidal.from_arrow(pa.table({"t": [0], "v": ["A"]}), time="t").node
    define = {"A": lambda e: e.v == "A", "B": lambda e: e.v == "B"}
    op = nodes.Detect(node, "A B+", define, {"s": "first(A.t)"}, within=10).make()
    sink = _Collect()
    op.downstream.append(sink)

    def event(t, v):
        op.on_batch(EventBatch(np.array([t], np.int64), None, {"t": pa.array([t]), "v": pa.array([v])}))

    event(0, "A")
    event(1, "B")
    event(2, "B")
    assert sink.rows == []  # B+ is greedy: another B may come
    event(3, "X")
    assert sink.rows == [(2, 0)]  # the X ends it
    event(4, "A")
    event(5, "B")
    op.on_punctuation(13)
    assert sink.rows == [(2, 0)] and sink.punctuations[-1] == 5  # held back to the pending match's end
    op.on_punctuation(14)  # 4 + within: no later B can join the match that started at 4
    assert sink.rows == [(2, 0), (5, 4)] and sink.punctuations[-1] == 14
