"""SQL ``MATCH_RECOGNIZE`` against a brute-force enumeration of matches (tests/pattern_oracle.py).

Random short sequences, random patterns, random DEFINE conditions (on the current row, on earlier rows
of the match through ``X.v``/``LAST``/``FIRST``, on physical rows before through ``PREV``), every
AFTER MATCH SKIP mode, with and without PARTITION BY and WITHIN; and the same rows arriving out of
order through a watermark give the same answer. Refused constructs are named.
"""

from __future__ import annotations

import random
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pv
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from pattern_oracle import SkipError, all_matches, examples, measure, patterns

from tidal.core.errors import InputError, PlanError
from tidal.ops.pattern.syntax import Alt, Seq, Var, check, to_text
from tidal.sql import plan

VARS = ("A", "B", "C")
PATTERNS = patterns()
SKIPS = {
    "PAST LAST ROW": "past_last_row",
    "TO NEXT ROW": "to_next_row",
    "TO FIRST A": ("to_first", "A"),
    "TO LAST A": ("to_last", "A"),
    "TO FIRST B": ("to_first", "B"),
    "TO LAST C": ("to_last", "C"),
}
# name: (SQL, oracle) with the oracle's measure pieces (kind, variable, column)
MEASURES = {
    "s": ("FIRST(t)", [("first", None, "t")]),
    "e": ("LAST(t)", [("last", None, "t")]),
    "n": ("COUNT(*)", [("count", None, None)]),
    "a_first": ("FIRST(A.v)", [("first", "A", "v")]),
    "b_last": ("B.v", [("last", "B", "v")]),
    "b_sum": ("SUM(B.v)", [("sum", "B", "v")]),
    "c_max": ("MAX(C.v)", [("max", "C", "v")]),
    "a_count": ("COUNT(A.*)", [("count", "A", None)]),
    "avg": ("AVG(v)", [("avg", None, "v")]),
    "rise": ("LAST(v) - FIRST(v)", [("last", None, "v"), ("first", None, "v")]),
}


def _vars(tree) -> set:
    if isinstance(tree, Var):
        return {tree.name}
    kids = tree.parts if isinstance(tree, Seq) else tree.options if isinstance(tree, Alt) else (tree.body,)
    return set().union(*(_vars(k) for k in kids))


def condition(var: str, kind: tuple, used: set):
    """(SQL for DEFINE, the oracle's test(rows, i, mapped)) of a drawn condition kind."""
    name, arg = kind
    if name == "lt":
        return f"{var}.v < {arg}", lambda rows, i, mp: rows[i]["v"] < arg
    if name == "ge":
        return f"v >= {arg}", lambda rows, i, mp: rows[i]["v"] >= arg
    if name == "odd":
        return "v % 2 = 1", lambda rows, i, mp: rows[i]["v"] % 2 == 1
    if name == "prev":
        return "v > PREV(v)", lambda rows, i, mp: i > 0 and rows[i]["v"] > rows[i - 1]["v"]
    if arg not in used:
        return None, lambda rows, i, mp: True
    # while DEFINE of X runs, the current row counts as mapped to X (FIRST(X.v), LAST(X.v), X.v)
    if name == "gt_last":

        def gt(rows, i, mp):
            last = [r for r, v in [*mp, (i, var)] if v == arg]
            return bool(last) and rows[i]["v"] > rows[last[-1]]["v"]

        return f"{var}.v > LAST({arg}.v)", gt
    if name == "le_ref":

        def le(rows, i, mp):
            last = [r for r, v in [*mp, (i, var)] if v == arg]
            return bool(last) and rows[i]["v"] <= rows[last[-1]]["v"]

        return f"v <= {arg}.v", le

    def first(rows, i, mp):
        hits = [r for r, v in [*mp, (i, var)] if v == arg]
        return bool(hits) and rows[hits[0]]["v"] <= rows[i]["v"]

    return f"FIRST({arg}.v) <= {var}.v", first


KINDS = st.one_of(
    st.tuples(st.sampled_from(["lt", "ge"]), st.integers(0, 5)),
    st.sampled_from([("odd", 0), ("prev", 0), ("any", 0)]),
    st.tuples(st.sampled_from(["gt_last", "le_ref", "first_lt"]), st.sampled_from(VARS)),
)


@st.composite
def cases(draw, distinct_times=False):
    tree = draw(PATTERNS)
    try:
        check(tree)
    except PlanError:
        assume(False)
    n = draw(st.integers(1, 10))  # a CSV file without rows has text columns
    rows, t = [], draw(st.sampled_from([0, 0, -5, -(2**40)]))  # before 1970 too: -1 and 0 are no markers
    for _ in range(n):
        t += draw(st.integers(1 if distinct_times else 0, 3))
        rows.append({"t": t, "k": draw(st.sampled_from(["x", "y"])), "v": draw(st.integers(0, 5))})
    keyed = draw(st.booleans())
    kinds = {v: draw(KINDS) for v in VARS}
    within = draw(st.one_of(st.none(), st.integers(1, 8)))
    skip = draw(st.sampled_from(sorted(SKIPS)))
    used = _vars(tree)
    assume(not isinstance(SKIPS[skip], tuple) or SKIPS[skip][1] in used)
    return tree, rows, keyed, kinds, within, skip


def query(path: str, tree, kinds: dict, within, skip: str, keyed: bool, watermark: int | None = None):
    used = _vars(tree)
    ms = {n: m for n, m in MEASURES.items() if all(v is None or v in used for _, v, _ in m[1])}
    defines, tests = [], {}
    for var in sorted(used):
        sql, test = condition(var, kinds[var], used)
        tests[var] = test
        if sql is not None and kinds[var][0] != "any":
            defines.append(f"{var} AS {sql}")
        else:
            tests[var] = lambda rows, i, mp: True
    source = f"'{path}'"
    if watermark is not None:
        source = (
            f"max_diff_watermark(source => TABLE('{path}'), time_field => DESCRIPTOR(t), "
            f"offset => INTERVAL '{watermark}' MICROSECOND)"
        )
    text = f"""SELECT * FROM {source} MATCH_RECOGNIZE (
        {"PARTITION BY k" if keyed else ""} ORDER BY t
        MEASURES {", ".join(f"{sql} AS {n}" for n, (sql, _) in ms.items())}
        ONE ROW PER MATCH AFTER MATCH SKIP {skip}
        PATTERN ({to_text(tree)}) {f"WITHIN INTERVAL '{within}' MICROSECOND" if within else ""}
        {"DEFINE " + ", ".join(defines) if defines else ""}) AS m"""
    return text, tests, ms


def expected(rows, tree, tests, within, skip, keyed, ms) -> list | str:
    out = []
    for part in sorted({r["k"] for r in rows}) if keyed else [None]:
        sub = [r for r in rows if part is None or r["k"] == part]
        times = [r["t"] for r in sub]
        try:
            found = all_matches(tree, times, lambda var, i, mp, sub=sub: tests[var](sub, i, mp), within, SKIPS[skip])
        except SkipError:
            return "error"
        for mp in found:
            values = []
            for _, pieces in ms.values():
                got = [measure(k, v, c, sub, mp) for k, v, c in pieces]
                values.append(got[0] if len(got) == 1 else got[0] - got[1])
            out.append(((part,) if keyed else ()) + tuple(values))
    return sorted(out, key=repr)


def actual(text: str) -> list | str:
    try:
        table = plan(text).result()
    except InputError:
        return "error"
    return sorted((tuple(r.values()) for r in table.to_pylist()), key=repr)


def write(rows: list[dict], path: Path) -> None:
    schema = pa.schema([("t", pa.int64()), ("k", pa.string()), ("v", pa.int64())])
    pv.write_csv(pa.Table.from_pylist(rows, schema=schema), path)


@settings(max_examples=examples(70), deadline=None)
@given(case=cases())
def test_match_recognize_matches_the_enumerator(case):
    tree, rows, keyed, kinds, within, skip = case
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "rows.csv"
        write(rows, path)
        text, tests, ms = query(str(path), tree, kinds, within, skip, keyed)
        assert actual(text) == expected(rows, tree, tests, within, skip, keyed, ms), text


@settings(max_examples=examples(35), deadline=None)
@given(case=cases(distinct_times=True), seed=st.integers(0, 1000))
def test_disordered_rows_through_a_watermark_give_the_same_matches(case, seed):
    tree, rows, keyed, kinds, within, skip = case
    arrived = list(rows)
    random.Random(seed).shuffle(arrived)
    times = [r["t"] for r in rows]
    latency = 1 + max(times, default=0) - min(times, default=0)  # nothing is late
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "rows.csv"
        write(arrived, path)
        text, tests, ms = query(str(path), tree, kinds, within, skip, keyed, watermark=latency)
        assert actual(text) == expected(rows, tree, tests, within, skip, keyed, ms), text


def test_late_rows_behind_the_watermark_are_dropped_not_matched(in_dir):
    # A B with B right after A; the B at t=2 arrives after t=9 has moved the watermark to 9 - 3
    write([{"t": 1, "k": "x", "v": 1}, {"t": 9, "k": "x", "v": 0}, {"t": 2, "k": "x", "v": 2}], in_dir / "r.csv")
    text = """SELECT * FROM max_diff_watermark(source => TABLE('r.csv'), time_field => DESCRIPTOR(t),
                                                  offset => INTERVAL '3' MICROSECOND)
              MATCH_RECOGNIZE (ORDER BY t MEASURES FIRST(A.t) AS s PATTERN (A B) DEFINE A AS v = 1, B AS v = 2)"""
    q = plan(text)
    assert q.result().num_rows == 0
    assert q.stats.late == 1


@pytest.mark.parametrize(
    "clause, words",
    [
        ("ORDER BY t MEASURES FIRST(A.t) AS s ALL ROWS PER MATCH PATTERN (A B)", "ALL ROWS PER MATCH is not supported"),
        ("ORDER BY t MEASURES FIRST(A.t) AS s PATTERN (A B*?)", "reluctant quantifier"),
        ("ORDER BY t DESC MEASURES FIRST(A.t) AS s PATTERN (A B)", "ORDER BY the event time"),
        ("ORDER BY t, v MEASURES FIRST(A.t) AS s PATTERN (A B)", "ORDER BY the event time"),
        ("ORDER BY t MEASURES CLASSIFIER() AS c PATTERN (A B)", "CLASSIFIER is not supported"),
        ("ORDER BY t MEASURES FIRST(A.t) AS s PATTERN (A B) DEFINE B AS v > NEXT(v)", "NEXT.* is not supported"),
        ("ORDER BY t MEASURES FIRST(A.t) AS s PATTERN (A B) DEFINE B AS v > AVG(A.v)", "aggregates in DEFINE"),
        ("ORDER BY t MEASURES FIRST(A.t) AS s PATTERN (A B) DEFINE Z AS v > 1", "not a variable of PATTERN"),
        ("ORDER BY t MEASURES FIRST(A.t) AS s PATTERN (A*)", "can match no rows"),
        ("ORDER BY t MEASURES FIRST(A.t, 1) AS s PATTERN (A B)", "offsets are not supported"),
        ("ORDER BY t MEASURES COUNT(DISTINCT A.v) AS s PATTERN (A B)", "only COUNT"),
        ("ORDER BY t MEASURES FIRST(A.t) AS s AFTER MATCH SKIP TO LAST Q PATTERN (A B)", "not a pattern variable"),
        ("ORDER BY t MEASURES FIRST(A.t) AS s AFTER MATCH SKIP TO A PATTERN (A B)", "TO var.* not supported"),
        ("ORDER BY t MEASURES FIRST(A.t) AS s PATTERN (A B) SUBSET U = (A, B)", "SUBSET is not supported"),
        ("ORDER BY t MEASURES FIRST(A.t) AS s PATTERN (A B) DEFINE A AS v > 1, A AS v < 3", "defined twice"),
        ("PARTITION BY v + 1 ORDER BY t MEASURES FIRST(A.t) AS s PATTERN (A B)", "only columns"),
    ],
)
def test_refused_constructs_are_named(in_dir, clause, words):
    write([{"t": 1, "k": "x", "v": 1}], in_dir / "r.csv")
    with pytest.raises(PlanError, match=words):
        plan(f"SELECT * FROM 'r.csv' MATCH_RECOGNIZE ({clause})").result()


def test_measures_feed_the_rest_of_the_query(in_dir):
    rows = [{"t": i, "k": "xy"[i % 2], "v": v} for i, v in enumerate([1, 5, 2, 7, 3, 9, 1, 1, 8, 2])]
    write(rows, in_dir / "r.csv")
    text = """SELECT k, COUNT(*) AS matches, SUM(n) AS rows FROM 'r.csv' MATCH_RECOGNIZE (
                PARTITION BY k ORDER BY t MEASURES COUNT(*) AS n
                PATTERN (A B+) DEFINE A AS v < 4, B AS B.v > A.v) AS m
              WHERE n > 1 GROUP BY k ORDER BY k"""
    # k=x (even t): 1 2 3 1 8 -> A=1 B=2,3 ; A=1 B=8 ; k=y (odd t): 5 7 9 1 2 -> A=1 B=2
    assert plan(text).result().to_pylist() == [
        {"k": "x", "matches": 2, "rows": 5},
        {"k": "y", "matches": 1, "rows": 2},
    ]
