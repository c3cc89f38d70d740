"""SQL's var_samp/var_pop/stddev_samp/stddev_pop (variance, stddev) over values far from their mean,
against DuckDB and the exact answer, on the relational path (a file without event time), the stream
engine (the same query's final snapshot; a running GROUP BY over a watermarked source) and windows
(tumble, and hop, where rows leave the window).

Values are drawn around 0, ±1e9, 1e12, 1e15 with small steps, with outliers of other magnitudes,
NULLs, NaN and infinities, in groups of 1, 2 and more rows. Every answer must be within 1e-9
(relative) of the exact one (rationals, rounded once; NaN where DuckDB says NaN, NULL where it says
NULL), and equal to DuckDB's within 1e-9 wherever DuckDB's own answer is that close to the exact one
(DuckDB's running update loses digits of its own over such values: there tidal must be at least as
close to the exact answer as DuckDB is).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import math
from fractions import Fraction

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import example, given, settings
from hypothesis import strategies as st

from tidal.sql import plan
from tidal.sql.query import final_snapshot
from tidal.sql.relational import applies

BASES = [0.0, 1e9, -1e9, 1e12 + 0.5, 1e15]
OUTLIERS = [1e15 + 3, -2.5e9, 1e-3, 7.0]
REL = 1e-9
FUNCTIONS = {"a": "var_samp", "b": "var_pop", "c": "stddev_samp", "d": "stddev_pop", "e": "variance", "f": "stddev"}
CALLS = ", ".join(f"{fn}(x) AS {name}" for name, fn in FUNCTIONS.items())


@st.composite
def values(draw, max_rows=24, specials=True):
    base = draw(st.sampled_from(BASES))
    step = draw(st.sampled_from([1.0, 0.25, 5.0]))
    out = []
    for _ in range(draw(st.integers(0, max_rows))):
        r = draw(st.integers(0, 29))
        if r == 0:
            out.append((draw(st.integers(0, 3)), None))
        elif r == 1 and specials:
            out.append((draw(st.integers(0, 3)), draw(st.sampled_from([math.nan, math.inf, -math.inf]))))
        elif r == 2:
            out.append((draw(st.integers(0, 3)), draw(st.sampled_from(OUTLIERS))))
        else:
            out.append((draw(st.integers(0, 3)), base + draw(st.integers(-6, 6)) * step))
    return out


def exact(function: str, xs: list) -> float | None:
    """The exact answer of ``function`` over ``xs`` (NULLs skipped; NaN with a NaN or an infinity among two
    values or more)."""
    xs = [x for x in xs if x is not None]
    sample = function in ("var_samp", "stddev_samp", "variance", "stddev")
    if len(xs) < (2 if sample else 1):
        return None
    if len(xs) == 1:  # a population variance of one value is 0, whatever it is (DuckDB's rule)
        return 0.0
    if any(math.isnan(x) or math.isinf(x) for x in xs):
        return math.nan
    q = [Fraction(x) for x in xs]
    mean = sum(q) / len(q)
    var = float(sum((x - mean) ** 2 for x in q) / (len(q) - 1 if sample else len(q)))
    return math.sqrt(var) if function.startswith("stddev") else var


def _close(a, b, rel: float = REL) -> bool:
    if a is None or b is None:
        return a is None and b is None
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return math.isclose(a, b, rel_tol=rel, abs_tol=0.0)


def check(got: float | None, duck: float | None, want: float | None, what: str) -> None:
    assert _close(got, want), f"{what}: tidal {got!r}, exact {want!r} (DuckDB {duck!r})"
    if want is None or math.isnan(want):
        assert _close(duck, want), f"{what}: DuckDB {duck!r}, exact {want!r}"  # the oracle's own rules
        return
    if _close(duck, want, 1e-12):  # DuckDB exact enough to compare with
        assert _close(got, duck), f"{what}: tidal {got!r}, DuckDB {duck!r}"
    else:
        assert abs(got - want) <= abs(duck - want), f"{what}: tidal {got!r} farther than DuckDB {duck!r} from {want!r}"


def _duckdb(sql: str, **tables) -> list[dict]:
    con = duckdb.connect()
    for name, table in tables.items():
        con.register(name, table)
    return con.sql(sql).to_arrow_table().to_pylist()


def _by_key(rows: list[dict], *keys: str) -> dict:
    return {tuple(r[k] for k in keys): r for r in rows}


ISSUE = [(0, 1e9 + 1), (0, 1e9 + 2), (0, 1e9 + 3)]


@settings(max_examples=40, deadline=None)
@given(data=values(), where=st.booleans())
@example(data=ISSUE, where=False)
@example(data=[(0, 1e15 + 1), (0, 1e15 + 2), (1, 1e9), (2, 1e9 + 1), (2, None), (3, math.nan), (3, 1.0)], where=True)
def test_relational_and_engine_paths_against_duckdb_and_the_exact_answer(tmp_path_factory, data, where):
    directory = tmp_path_factory.mktemp("v")
    table = pa.table(
        {"k": pa.array([k for k, _ in data], pa.int64()), "x": pa.array([x for _, x in data], pa.float64())}
    )
    pq.write_table(table, directory / "t.parquet")
    filtered = " WHERE k <> 3" if where else ""
    sql = f"SELECT k, {CALLS} FROM 't.parquet'{filtered} GROUP BY k"
    with contextlib.chdir(directory):
        q = plan(sql)
        assert applies(q), "the relational path takes a query with no temporal operator"
        relational = q.result()
        streamed = q.finish(final_snapshot(q.events()))
    # the relational path is the engine's answer to the bit
    assert sorted(map(repr, relational.to_pylist())) == sorted(map(repr, streamed.to_pylist()))
    duck = _by_key(_duckdb(sql.replace("'t.parquet'", "t"), t=table), "k")
    got = _by_key(relational.to_pylist(), "k")
    assert got.keys() == duck.keys()
    for (k,), row in got.items():
        xs = [x for kk, x in data if kk == k]
        for name, fn in FUNCTIONS.items():
            check(row[name], duck[(k,)][name], exact(fn, xs), f"{fn} of group {k} {xs}")


def test_the_issues_example_is_duckdbs_answer_exactly(tmp_path):
    table = pa.table({"x": [1e9 + 1, 1e9 + 2, 1e9 + 3]})
    pq.write_table(table, tmp_path / "t.parquet")
    sql = f"SELECT {CALLS} FROM 't.parquet'"
    with contextlib.chdir(tmp_path):
        got = plan(sql).result().to_pylist()
    assert got == _duckdb(sql.replace("'t.parquet'", "t"), t=table)
    assert got[0]["a"] == 1.0


BASE = dt.datetime(2024, 6, 1)
SOURCE = "max_diff_watermark(source => TABLE(ev), time_field => DESCRIPTOR(t), offset => INTERVAL 0 SECONDS)"
TUMBLE = f"tumble(source => TABLE({SOURCE}), time_field => DESCRIPTOR(t), window_length => INTERVAL 10 SECONDS)"
HOP = (
    f"hop(source => TABLE({SOURCE}), time_field => DESCRIPTOR(t), window_length => INTERVAL 10 SECONDS,"
    " hop => INTERVAL 5 SECONDS)"
)
TIMED = {  # tidal's query, DuckDB's over the same rows, the keys of a row
    "running": (
        f"SELECT k, {CALLS} FROM {SOURCE} GROUP BY k",
        f"SELECT k, {CALLS} FROM ev GROUP BY k",
        ("k",),
    ),
    "tumble": (
        f"SELECT k, window_start, {CALLS} FROM {TUMBLE} GROUP BY k, window_start",
        f"SELECT k, time_bucket(INTERVAL 10 SECONDS, t) AS window_start, {CALLS} FROM ev GROUP BY ALL",
        ("k", "window_start"),
    ),
    "hop": (
        f"SELECT k, window_start, {CALLS} FROM {HOP} GROUP BY k, window_start",
        f"SELECT k, time_bucket(INTERVAL 5 SECONDS, t) - j * INTERVAL 5 SECONDS AS window_start, {CALLS}"
        " FROM ev, range(2) r(j) GROUP BY ALL",
        ("k", "window_start"),
    ),
}


@settings(max_examples=25, deadline=None)
@given(data=values(), gaps=st.lists(st.integers(0, 4), min_size=24, max_size=24))
@example(data=[(0, 1e15 + 3), (0, 1e9 + 1), (0, 1e9 + 2), (0, 1e9 + 3)], gaps=[0, 7, 1, 1] + [0] * 20)
def test_event_time_queries_against_duckdb_and_the_exact_answer(tmp_path_factory, data, gaps):
    directory = tmp_path_factory.mktemp("ev")
    seconds = [sum(gaps[: i + 1]) for i in range(len(data))]
    ev = pa.table(
        {
            "t": pa.array([BASE + dt.timedelta(seconds=s) for s in seconds], pa.timestamp("ms")),
            "k": pa.array([k for k, _ in data], pa.int64()),
            "x": pa.array([x for _, x in data], pa.float64()),
        }
    )
    pq.write_table(ev, directory / "ev.parquet")
    for name, (sql, oracle, keys) in TIMED.items():
        with contextlib.chdir(directory):
            got = _by_key(plan(sql).result().to_pylist(), *keys)
        duck = _by_key(_duckdb(oracle, ev=ev), *keys)
        assert got.keys() == duck.keys(), name
        for key, row in got.items():
            width = 10 if name != "running" else None
            xs = [
                x
                for (k, x), s in zip(data, seconds, strict=True)
                if k == key[0]
                and (width is None or 0 <= (BASE + dt.timedelta(seconds=s) - key[1]).total_seconds() < width)
            ]
            for column, fn in FUNCTIONS.items():
                check(row[column], duck[key][column], exact(fn, xs), f"{name}: {fn} of {key} {xs}")
