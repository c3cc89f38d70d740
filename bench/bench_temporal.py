"""Temporal stream processing (Trill paper section 7.2): ingress, Fig. 4a's simple operators, Fig. 4b, Fig. 4c.

    python bench/bench_temporal.py [--quick] [--events N] [--python-events N] [--repeat 3]
                                   [--out bench/results/temporal.json]

Data: a time-ordered search log of N events (``ts`` in seconds over 30 days, ``user`` in [0, 10,000),
``query`` id in [0, 1,000)), in memory as Arrow; 10M events by default. tidal reads it
with a punctuation every 80,000 events (the paper's fixed latency) unless a workload varies that.
``--quick``: 300k events, 50k for the loop, and Fig. 4c at three window sizes.
The event-at-a-time peer is a plain Python loop over the rows as tuples (the "SPE-X" of the paper),
on a prefix of ``--python-events`` (1M by default); rates are per event, so sizes need
not match. DuckDB (``threads=1``) and Polars (``POLARS_MAX_THREADS=1``) run what a relational engine
can say: filters, projections and the lifetime arithmetic, on the same Arrow table.

* ingress (7.2.1): a pass-through query counting at egress, from columns (``from_arrow``) and from
  rows (``from_records`` over a list of tuples); peers: the loop over the tuples, Polars building a
  frame from the same tuples (rows) or the same Arrow table (columns).
* Fig. 4a: filter with no match, filter where all match, project (two fields, one computed),
  alter-lifetime (the 1 h / 10 min hopping window's lifetimes), windowed count (1 h window, 10 min
  hop) and grouped windowed sum (of ``user`` by ``query``, same window); Polars runs the windows as
  ``group_by_dynamic``, DuckDB as a six-fold expansion of each row. The A-then-B join (1 h) of
  Fig. 4a is ``bench_joins.py``; ``bench_stateful.py`` has the issue 3 goals' windowed queries.
* Fig. 4b: throughput against the punctuation spacing, 100 to 1M events, for the windowed count
  (1 h window, 10 min hop) and the all-match filter; the Python loop's windowed count has no
  punctuation and is drawn flat. Small spacings run on a prefix (at least 200 punctuations' worth).
* Fig. 4c: the windowed temporal join (per user, a search for a term of set A then one of set B
  within W) for W from 1 minute to 1 day: throughput, and memory at the peak of a separate run
  (tracemalloc: Python objects and numpy buffers; Linux also the resident set it added), tidal
  against the Python loop (a deque of recent A searches per user) and DuckDB's band join
  (throughput only). Pair counts are checked equal.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import defaultdict, deque

# Polars sizes its thread pool when imported: one thread, as for DuckDB and tidal.
os.environ.setdefault("POLARS_MAX_THREADS", "1")

import duckdb  # noqa: E402
import numpy as np  # noqa: E402
import polars as pl  # noqa: E402
import pyarrow as pa  # noqa: E402
from harness import Results, add_common_args, peak_memory  # noqa: E402

import tidal  # noqa: E402
from tidal import agg  # noqa: E402
from tidal.core.time import INFINITY  # noqa: E402

HOUR, TEN_MIN, DAY = 3600, 600, 86_400
USERS, QUERIES = 10_000, 1_000
PUNCTUATE = 80_000
SPACINGS = [100, 1_000, 10_000, 100_000, 1_000_000]
WINDOWS = [60, 600, HOUR, 6 * HOUR, DAY]


def make_log(n: int, seed: int = 17) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table(
        {
            "ts": np.sort(rng.integers(0, 30 * DAY, n)).astype(np.int64),
            "user": rng.integers(0, USERS, n),
            "query": rng.integers(0, QUERIES, n),
        }
    )


# ---------------------------------------------------------------------------------------------
# the event-at-a-time peer
# ---------------------------------------------------------------------------------------------


def py_windowed_count(rows) -> dict:
    """Count per 1 h window every 10 min: each event adds one to the six windows holding it."""
    counts: dict = defaultdict(int)
    for t, _, _ in rows:
        first = t - t % TEN_MIN
        for w in range(first - HOUR + TEN_MIN, first + 1, TEN_MIN):
            counts[w] += 1
    return counts


def py_grouped_windowed_sum(rows) -> dict:
    """Sum of ``user`` per query id per 1 h window every 10 min."""
    sums: dict = defaultdict(int)
    for t, user, query in rows:
        first = t - t % TEN_MIN
        for w in range(first - HOUR + TEN_MIN, first + 1, TEN_MIN):
            sums[(w, query)] += user
    return sums


def py_a_then_b(rows, window: int) -> int:
    """Pairs (A search, later B search of the same user within ``window``); an A and a B at the same
    instant pair too, so each instant's B searches wait until its A searches are in."""
    recent: dict[int, deque] = {}
    held: list = []
    pairs = 0
    now = None
    for t, user, query in rows:
        if t != now:
            for bt, bu in held:
                q = recent.get(bu)
                while q and q[0] + window <= bt:
                    q.popleft()
                pairs += len(q) if q else 0
            held.clear()
            now = t
        if query < QUERIES // 4:
            recent.setdefault(user, deque()).append(t)
        elif query < QUERIES // 2:
            held.append((t, user))
    for bt, bu in held:
        q = recent.get(bu)
        while q and q[0] + window <= bt:
            q.popleft()
        pairs += len(q) if q else 0
    return pairs


# ---------------------------------------------------------------------------------------------
# tidal's queries
# ---------------------------------------------------------------------------------------------


def window_values(physical: pa.Table, column: str, key: str | None = None) -> tuple[np.ndarray, ...]:
    """tidal's hopping-window answer (its physical output, ``to_arrow``) as sorted arrays (window
    start[, key], value). Each lifetime covers one or more 10-minute snapshot segments, and the
    segment [s, s + 10 min) holds the window that starts at s + 10 min - 1 h. A lifetime is an
    interval event, or a start edge paired with the end edge of the same start time and key (the
    pairing is vectorised here: ``Stream.to_intervals`` does it row by row)."""
    sync = physical.column("sync_time").to_numpy()
    other = physical.column("other_time").to_numpy()
    values = physical.column(column).to_numpy()
    keys = np.zeros(len(sync), np.int64) if key is None else physical.column(key).to_numpy()
    is_start, is_end = other == INFINITY, other < sync
    is_interval = ~(is_start | is_end)
    s_idx, e_idx = np.flatnonzero(is_start), np.flatnonzero(is_end)
    s_idx = s_idx[np.lexsort((keys[s_idx], sync[s_idx]))]
    e_idx = e_idx[np.lexsort((keys[e_idx], other[e_idx]))]
    if not (np.array_equal(sync[s_idx], other[e_idx]) and np.array_equal(keys[s_idx], keys[e_idx])):
        raise SystemExit("tidal's output has start edges without matching end edges")
    start = np.concatenate([sync[is_interval], sync[s_idx]])
    end = np.concatenate([other[is_interval], sync[e_idx]])
    value = np.concatenate([values[is_interval], values[s_idx]])
    group = np.concatenate([keys[is_interval], keys[s_idx]])
    segments = (end - start) // TEN_MIN
    first = np.repeat(start, segments)
    offset = np.arange(len(first)) - np.repeat(np.cumsum(segments) - segments, segments)
    windows = first + offset * TEN_MIN + TEN_MIN - HOUR
    expanded_keys = None if key is None else np.repeat(group, segments)
    return sorted_answer(windows, expanded_keys, np.repeat(value, segments))


def sorted_answer(windows, keys, values) -> tuple[np.ndarray, ...]:
    windows, values = np.asarray(windows, np.int64), np.asarray(values, np.int64)
    if keys is None:
        order = np.argsort(windows, kind="stable")
        return windows[order], values[order]
    keys = np.asarray(keys, np.int64)
    order = np.lexsort((keys, windows))
    return windows[order], keys[order], values[order]


def table_values(table: pa.Table, window: str, column: str, key: str | None = None) -> tuple[np.ndarray, ...]:
    keys = None if key is None else table.column(key).to_numpy()
    return sorted_answer(table.column(window).to_numpy(), keys, table.column(column).to_numpy())


def dict_values(answer: dict, keyed: bool) -> tuple[np.ndarray, ...]:
    """The Python loop's {window: value} or {(window, key): value} as sorted arrays."""
    keys = np.array(list(answer.keys()), np.int64).reshape(len(answer), 2 if keyed else 1)
    values = np.fromiter(answer.values(), np.int64, len(answer))
    return sorted_answer(keys[:, 0], keys[:, 1] if keyed else None, values)


def same(a: tuple, b: tuple) -> bool:
    return len(a) == len(b) and all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))


def windowed(table: pa.Table, key: str | None):
    """Fig. 4a's windowed count (``key`` None) or grouped windowed sum of ``user`` by ``key``."""
    hop = tidal.from_arrow(table, time="ts", punctuate_every_events=PUNCTUATE).hopping_window(HOUR, TEN_MIN)
    return hop.aggregate(agg.count()) if key is None else hop.group_aggregate(key, agg.sum("user"))


def tidal_a_then_b(table: pa.Table, window: int):
    shared = tidal.from_arrow(table, time="ts", punctuate_every_events=PUNCTUATE).multicast()
    a = shared.where(lambda e: e.query < 250).alter_duration(window)
    b = shared.where(lambda e: e.query >= 250 and e.query < 500)
    return a.join(b, "user", "user")


DUCKDB_JOIN = """
SELECT count(*) FROM join_log AS a JOIN join_log AS b
  ON a.user = b.user AND b.ts >= a.ts AND b.ts < a.ts + {window}
WHERE a.query < 250 AND b.query >= 250 AND b.query < 500
"""


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=None, help="events (default 10M, 300k with --quick)")
    ap.add_argument("--python-events", type=int, default=None, help="events for the Python loop (1M / 50k)")
    add_common_args(ap, "bench/results/temporal.json")
    args = ap.parse_args(argv)
    n = args.events or (300_000 if args.quick else 10_000_000)
    py_n = min(n, args.python_events or (50_000 if args.quick else 1_000_000))
    windows = [60, HOUR, DAY] if args.quick else WINDOWS
    repeat = args.repeat
    table = make_log(n)
    small = table.slice(0, py_n)
    rows = list(zip(*(small.column(c).to_pylist() for c in small.column_names), strict=True))
    # row objects cost ~150 bytes each and row ingress is slow: at most 2M rows
    rows_n = min(n, 2_000_000)
    all_rows = list(zip(*(table.slice(0, rows_n).column(c).to_pylist() for c in table.column_names), strict=True))
    stream = tidal.from_arrow(table, time="ts", punctuate_every_events=PUNCTUATE)
    con = duckdb.connect()
    con.execute("SET threads=1")
    con.register("log", table)
    frame = pl.from_arrow(table)
    results = Results()

    clock = {"start": time.perf_counter(), "last": None}

    def section(name):
        now = time.perf_counter()
        if clock["last"] is not None:
            print(f"[{now - clock['start']:6.1f} s] {clock['last']} done", flush=True)
        clock["last"] = name

    def run(workload, engine, fn, events, **extra):
        return results.run(workload, engine, fn, events, repeat, **extra)

    def duck_count(sql):
        return lambda: con.execute(sql).fetchall()[0][0]

    section("ingress")
    # -- ingress (7.2.1) ------------------------------------------------------------------------
    names = table.column_names
    from_rows = tidal.from_records(all_rows, time="ts", names=names, punctuate_every_events=PUNCTUATE)
    assert from_rows.count() == rows_n and stream.count() == n
    run("ingress from columns (pass-through)", "tidal", lambda: stream.count(), n)
    run("ingress from columns (pass-through)", "polars", lambda: pl.from_arrow(table).height, n)
    run("ingress from columns (pass-through)", "python loop", lambda: sum(1 for _ in rows), py_n)
    run("ingress from rows (pass-through)", "tidal", lambda: from_rows.count(), rows_n)
    run(
        "ingress from rows (pass-through)",
        "polars",
        lambda: pl.DataFrame(all_rows, schema=names, orient="row").height,
        rows_n,
    )
    run("ingress from rows (pass-through)", "python loop", lambda: sum(1 for _ in rows), py_n)

    section("Fig. 4a simple operators")
    # -- Fig. 4a: the simple operators ------------------------------------------------------------
    none = stream.where(lambda e: e.query < 0)
    every = stream.where(lambda e: e.query >= 0)
    project = stream.select(lambda e: {"user": e.user, "q2": e.query * 2})
    window = stream.hopping_window(HOUR, TEN_MIN)
    for q in (none, every, project, window):
        q.count()  # compile the kernels
    assert none.count() == 0 and every.count() == n

    name = "filter (no match)"
    run(name, "tidal", lambda: none.count(), n)
    run(name, "duckdb", duck_count("SELECT count(*) FROM log WHERE query < 0"), n)
    run(name, "polars", lambda: frame.filter(pl.col("query") < 0).height, n)
    run(name, "python loop", lambda: sum(1 for r in rows if r[2] < 0), py_n)

    name = "filter (all match)"
    run(name, "tidal", lambda: every.count(), n)
    run(name, "duckdb", duck_count("SELECT count(*) FROM log WHERE query >= 0"), n)
    run(name, "polars", lambda: frame.filter(pl.col("query") >= 0).height, n)
    run(name, "python loop", lambda: sum(1 for r in rows if r[2] >= 0), py_n)

    name = "project"
    run(name, "tidal", lambda: project.to_arrow(), n)
    run(name, "duckdb", lambda: con.sql("SELECT ts, user, query * 2 AS q2 FROM log").to_arrow_table(), n)
    run(name, "polars", lambda: frame.select("ts", "user", (pl.col("query") * 2).alias("q2")), n)
    run(name, "python loop", lambda: [(t, u, q * 2) for t, u, q in rows], py_n)

    name = "alter-lifetime (1h window, 10min hop)"
    run(name, "tidal", lambda: window.to_arrow(), n)
    run(
        name,
        "duckdb",
        lambda: con.sql(
            f"SELECT ts - ts % {TEN_MIN} AS vs, ts - ts % {TEN_MIN} + {HOUR} AS ve, user, query FROM log"
        ).to_arrow_table(),
        n,
    )
    start = pl.col("ts") - pl.col("ts") % TEN_MIN
    run(name, "polars", lambda: frame.select(start.alias("vs"), (start + HOUR).alias("ve"), "user", "query"), n)
    run(name, "python loop", lambda: [(t - t % TEN_MIN, t - t % TEN_MIN + HOUR, u, q) for t, u, q in rows], py_n)

    section("Fig. 4a windows")
    # -- Fig. 4a: windowed count and grouped windowed sum -----------------------------------------
    hop = (
        "SELECT w, {cols} FROM (SELECT ts - ts % 600 - k * 600 AS w, user, query FROM log, range(6) r(k)) GROUP BY ALL"
    )
    w_count, g_w_sum = windowed(table, None), windowed(table, "query")
    dyn = {"every": f"{TEN_MIN}i", "period": f"{HOUR}i", "offset": f"{TEN_MIN - HOUR}i", "closed": "left"}
    engines = {
        "windowed count 1h/10min (Fig. 4a)": (w_count, "count", None, py_windowed_count),
        "grouped windowed sum 1h/10min (Fig. 4a)": (g_w_sum, "sum", "query", py_grouped_windowed_sum),
    }
    for name, (query, column, key, loop) in engines.items():
        cols = f"count(*) AS {column}" if key is None else f"{key}, sum(user) AS {column}"
        agg_expr = pl.len() if key is None else pl.col("user").sum()
        dyn_key = {} if key is None else {"group_by": key}

        def duck(cols=cols):
            return con.sql(hop.format(cols=cols)).to_arrow_table()

        def polars(agg_expr=agg_expr, dyn_key=dyn_key, column=column):
            return frame.group_by_dynamic("ts", **dyn, **dyn_key).agg(agg_expr.alias(column))

        # every window's value, in all four engines (the loop on its prefix, checked against tidal's)
        want = table_values(duck(), "w", column, key)
        got = {
            "tidal": window_values(query.to_arrow(), column, key),
            "polars": table_values(polars().to_arrow(), "ts", column, key),
        }
        small_want = window_values(windowed(small, key).to_arrow(), column, key)
        got_loop = dict_values(loop(rows), key is not None)
        for engine, answer in got.items():
            if not same(answer, want):
                raise SystemExit(f"{name}: {engine} disagrees with DuckDB ({len(answer[0])} vs {len(want[0])} windows)")
        if not same(got_loop, small_want):
            raise SystemExit(f"{name}: the Python loop disagrees with tidal on its {py_n:,}-event prefix")
        run(name, "tidal", query.to_arrow, n)
        run(name, "duckdb", duck, n)
        run(name, "polars", polars, n)
        run(name, "python loop", lambda loop=loop: loop(rows), py_n)

    # issue 18: the windowed count with Trill's alignment (align="end": starts snap up), which the
    # fused window engines do not take; checked against DuckDB's windows (v - 1h, v]
    name = "windowed count 1h/10min, align=end (unfused)"
    ending = tidal.from_arrow(table, time="ts", punctuate_every_events=PUNCTUATE)
    ending = ending.hopping_window(HOUR, TEN_MIN, align="end").aggregate(agg.count())
    up = (
        f"SELECT w, count(*) AS count FROM (SELECT ts + ({TEN_MIN} - ts % {TEN_MIN}) % {TEN_MIN} + k * {TEN_MIN}"
        f" + {TEN_MIN - HOUR} AS w FROM log, range(6) r(k)) GROUP BY ALL"
    )
    if not same(window_values(ending.to_arrow(), "count"), table_values(con.sql(up).to_arrow_table(), "w", "count")):
        raise SystemExit(f"{name}: tidal disagrees with DuckDB")
    run(name, "tidal", ending.to_arrow, n)

    section("Fig. 4b")
    # -- Fig. 4b: throughput against the punctuation spacing --------------------------------------
    loop_count = run(
        "windowed count 1h/10min (any spacing)", "python loop", lambda: py_windowed_count(rows), py_n, detail=True
    )
    lines: dict[str, list] = {
        "tidal windowed count": [],
        "tidal filter (all match)": [],
        "python loop windowed count": [],
    }
    for spacing in SPACINGS:
        events = min(n, max(100_000, 200 * spacing))
        part = table.slice(0, events)
        src = tidal.from_arrow(part, time="ts", punctuate_every_events=spacing)
        count_q = src.hopping_window(HOUR, TEN_MIN).aggregate(agg.count())
        filter_q = src.where(lambda e: e.query >= 0)
        count_q.to_arrow()
        label = f"every {spacing:,} events"
        r1 = run(f"windowed count 1h/10min, punctuation {label}", "tidal", count_q.to_arrow, events, detail=True)
        r2 = run(f"filter (all match), punctuation {label}", "tidal", filter_q.count, events, detail=True)
        lines["tidal windowed count"].append(r1["events_per_s"])
        lines["tidal filter (all match)"].append(r2["events_per_s"])
        lines["python loop windowed count"].append(loop_count["events_per_s"])
    results.add_series(
        "Fig. 4b: throughput vs punctuation spacing",
        "events between punctuations",
        "events/s",
        SPACINGS,
        lines,
        log_x=True,
        log_y=True,
    )

    section("Fig. 4c")
    # -- Fig. 4c: the windowed join against the window size, with memory --------------------------
    rates: dict[str, list] = {"tidal": [], "python loop": [], "duckdb": []}
    memory: dict[str, list] = {"tidal": [], "python loop": []}
    mib = 2**20
    join_n = min(n, 2_000_000)  # five window sizes, five runs each: the join's first 2M events
    join_table = table.slice(0, join_n)
    con.register("join_log", join_table)
    for w in windows:
        query = tidal_a_then_b(join_table, w)
        query.count()  # compile the kernels before measuring memory
        pairs, tidal_mem = peak_memory(query.count)
        want = con.execute(DUCKDB_JOIN.format(window=w)).fetchall()[0][0]
        if pairs != want:
            raise SystemExit(f"A-then-B within {w} s: tidal found {pairs} pairs, DuckDB {want}")
        py_pairs, py_mem = peak_memory(lambda w=w: py_a_then_b(rows, w))
        small_pairs = tidal_a_then_b(small, w).count()
        if py_pairs != small_pairs:
            raise SystemExit(f"A-then-B within {w} s: Python loop found {py_pairs} pairs, tidal {small_pairs}")
        name = f"A-then-B join within {w:,} s"
        extra = {"peak_traced_mib": round(tidal_mem["traced"] / mib, 2), "pairs": pairs}
        extra["note"] = f"{pairs:,} pairs; peak traced memory {extra['peak_traced_mib']} MiB"
        if tidal_mem["rss"] is not None:
            extra["peak_rss_added_mib"] = round(tidal_mem["rss"] / mib, 2)
            extra["note"] += f", resident +{extra['peak_rss_added_mib']} MiB"
        r = run(name, "tidal", query.count, join_n, detail=True, **extra)
        py_traced = round(py_mem["traced"] / mib, 2)
        note = f"peak traced memory {py_traced} MiB"
        p = run(
            name,
            "python loop",
            lambda w=w: py_a_then_b(rows, w),
            py_n,
            detail=True,
            peak_traced_mib=py_traced,
            note=note,
        )
        d = run(
            name,
            "duckdb",
            duck_count(DUCKDB_JOIN.format(window=w)),
            join_n,
            detail=True,
        )
        rates["tidal"].append(r["events_per_s"])
        rates["python loop"].append(p["events_per_s"])
        rates["duckdb"].append(d["events_per_s"])
        # the loop ran on fewer events: compare memory per input event
        memory["tidal"].append(tidal_mem["traced"] / join_n)
        memory["python loop"].append(py_mem["traced"] / py_n)
    results.add_series(
        "Fig. 4c: windowed join throughput vs window size", "window W (s)", "events/s", windows, rates, True, True
    )
    results.add_series(
        "Fig. 4c: peak traced memory per input event vs window size",
        "window W (s)",
        "bytes per input event (tracemalloc peak)",
        windows,
        memory,
        True,
        True,
    )
    section(None)
    results.note("Fig. 4b/4c rows are in this section only; the A-then-B join (1 h) of Fig. 4a is the joins module's")
    results.note("DuckDB and Polars have no punctuations (Fig. 4b) and DuckDB's join memory is not measured (Fig. 4c)")
    results.report(
        args.out,
        events=n,
        python_events=py_n,
        row_ingress_events=rows_n,
        join_events=join_n,
        punctuate_every=PUNCTUATE,
        users=USERS,
        quick=args.quick,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
