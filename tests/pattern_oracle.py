"""A brute-force enumerator of row pattern matches, written from the definition (SQL's row pattern matching).

Per partition, in row order: at each start position ``s`` (from the left), the preferred match is the
first one a backtracking matcher finds over the pattern's syntax tree: alternatives left to right,
greedy quantifiers trying one more iteration before stopping. A row maps to a variable only when the
variable's condition holds given the rows mapped so far; with ``within``, every row of the match lies
less than ``within`` after the first. After a match the search goes on per the skip mode; a position
without a match moves the search one row on. Slow and obvious on purpose.
"""

from __future__ import annotations

import os

from hypothesis import strategies as st

from tidal.ops.pattern.syntax import Alt, Repeat, Seq, Var


def examples(n: int) -> int:
    """Hypothesis examples for a pattern test: ``n`` times ``$TIDAL_PATTERN_FUZZ`` (default 1; more for long runs)."""
    return n * int(os.environ.get("TIDAL_PATTERN_FUZZ", "1"))


class SkipError(Exception):
    pass


def preferred_match(tree, s: int, n: int, times: list, ok, within):
    """The preferred match starting at row ``s`` as ``[(row, var), ...]``, or None.

    ``ok(var, row, mapped)`` says whether ``row`` may map to ``var`` after the rows ``mapped``."""

    def m(node, i, mapped, k):
        if isinstance(node, Var):
            if i < n and (within is None or times[i] - times[s] < within) and ok(node.name, i, mapped):
                return k(i + 1, [*mapped, (i, node.name)])
            return None
        if isinstance(node, Seq):

            def chain(j, idx, mp):
                if j == len(node.parts):
                    return k(idx, mp)
                return m(node.parts[j], idx, mp, lambda idx2, mp2: chain(j + 1, idx2, mp2))

            return chain(0, i, mapped)
        if isinstance(node, Alt):
            for opt in node.options:
                r = m(opt, i, mapped, k)
                if r is not None:
                    return r
            return None
        assert isinstance(node, Repeat)

        def rep(count, idx, mp):
            if node.high is None or count < node.high:
                r = m(node.body, idx, mp, lambda j, mp2: rep(count + 1, j, mp2) if j > idx else None)
                if r is not None:
                    return r
            return k(idx, mp) if count >= node.low else None

        return rep(0, i, mapped)

    return m(tree, s, [], lambda i, mp: mp if mp else None)


def all_matches(tree, times: list, ok, within=None, skip="past_last_row") -> list:
    """Every match of one partition, in order, per the skip mode."""
    n = len(times)
    out = []
    s = 0
    while s < n:
        mp = preferred_match(tree, s, n, times, ok, within)
        if mp is None:
            s += 1
            continue
        out.append(mp)
        if skip == "past_last_row":
            s = mp[-1][0] + 1
        elif skip == "to_next_row":
            s = s + 1
        else:
            kind, var = skip
            hits = [r for r, v in mp if v == var]
            if not hits:
                raise SkipError(f"no row mapped to {var}")
            target = hits[0] if kind == "to_first" else hits[-1]
            if target == s:
                raise SkipError("skip to the first row of the match")
            s = target
    return out


def measure(kind: str, var, column, rows: list, mapped: list):
    """A measure over the rows (dicts) mapped to ``var`` (all when None)."""
    picked = [rows[r] for r, v in mapped if var is None or v == var]
    values = [p[column] for p in picked] if column is not None else picked
    if kind == "first":
        return values[0] if values else None
    if kind == "last":
        return values[-1] if values else None
    present = [v for v in values if v is not None]
    if kind == "count":
        return len(values) if column is None else len(present)
    if not present:
        return None
    return {"sum": sum, "min": min, "max": max, "avg": lambda xs: sum(xs) / len(xs)}[kind](present)


def patterns():
    """Random pattern trees over A, B, C (some can match no rows: check them before use)."""
    leaf = st.sampled_from([Var(v) for v in ("A", "B", "C")])

    def extend(inner):
        quant = st.sampled_from([(0, None), (1, None), (0, 1), (1, 2), (0, 2), (2, 3), (2, None), (2, 2)])
        return st.one_of(
            st.lists(inner, min_size=2, max_size=3).map(lambda xs: Seq(tuple(xs))),
            st.lists(inner, min_size=2, max_size=3).map(lambda xs: Alt(tuple(xs))),
            st.tuples(inner, quant).map(lambda p: Repeat(p[0], p[1][0], p[1][1])),
        )

    return st.recursive(leaf, extend, max_leaves=5)
