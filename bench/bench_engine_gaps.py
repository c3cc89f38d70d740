"""Issue 19, the engine side: the workloads where tidal trailed a peer, each beside that peer.

    python bench/bench_engine_gaps.py [--quick] [--rows N] [--repeat 3] [--out bench/results/engine_gaps.json]

Every workload checks that the engines agree before timing, and times them interleaved (one warm-up
round, then ``--repeat`` rounds of every engine) so that a busy machine slows them alike:

* ``disorder end to end``: ``from_arrow(disorder="drop", reorder_latency=1 s).count()`` over times in
  microseconds, 100 us apart, 5% of events delayed by an exponential of mean 200 ms (a few past the
  latency: dropped), three payload columns; peer: numpy's stable argsort of the times and one take of
  every column (a sort with no latency bound, no late events, no punctuations).
* ``disorder end to end, every column read``: the same sort collected with ``to_arrow()`` (every payload
  column gathered into the output, in time order); the same peer.
* ``filter 5% + count``: ``where(c2 % 100 < 5).count()``; peer: Polars' filter and height.
* ``filter 5% + sum`` / ``filter 5% + sum by key``: the same filter, then ``aggregate(sum(c1))`` or
  ``group_aggregate("k", sum(c1))`` over 100 keys (one compiled loop tests and accumulates each row:
  Where+Aggregate; ``tidal, two passes``: the plan without that loop, the filter handing the kept
  positions to the aggregate); peer: Polars' filter then sum / group_by sum.
* ``SQL filter 5% + COUNT, SUM`` (and ``by key``): the same over a Parquet file in SQL, as
  ``plan(sql).result()`` (the relational path), on the stream engine's path, and in the Python API
  (the file read with pyarrow); peer: DuckDB.
* ``temporal join count, 10-min windows``: two inputs of ``--rows`` events each (one day, 10,000
  keys), each in 10-minute tumbling windows, joined on the key and counted; peer: DuckDB's equi-join on
  the key and the 10-minute bucket (the same pairs).
* ``session lifetimes, to_intervals()``: per key, sessions with a 2000-tick timeout
  (``bench_sessions``' data), every event with its session's lifetime, collected with
  ``to_intervals()``; peer: DuckDB's gaps-and-islands query giving each event its session's bounds.
* ``ingress from_records (tuples)`` / ``(dicts)``: Python rows into a stream, counted (Trill's
  ingress figure); peers: Polars' ``from_records`` (rows) and ``from_dicts``. ``tidal, schema given``
  passes ``schema=`` (dicts then convert in one Arrow pass).

DuckDB runs with ``threads=1`` and Polars with ``POLARS_MAX_THREADS=1``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile

os.environ.setdefault("POLARS_MAX_THREADS", "1")

import duckdb  # noqa: E402
import numpy as np  # noqa: E402
import polars as pl  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402
from harness import Results, add_common_args  # noqa: E402

import tidal  # noqa: E402
from tidal import agg  # noqa: E402
from tidal.io.egress import CollectSink  # noqa: E402
from tidal.plan.rules import RULES  # noqa: E402
from tidal.plan.rules.fuse_where_aggregate import fuse_where_aggregate  # noqa: E402
from tidal.sql import plan  # noqa: E402
from tidal.sql.query import final_snapshot  # noqa: E402
from tidal.stream.query import Query  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_sessions import SESSION_LIFETIME_SQL, TIMEOUT  # noqa: E402
from bench_sessions import make_data as session_data  # noqa: E402

DISORDER = "disorder end to end: from_arrow(drop, 1 s latency), 5% late, count"
DISORDER_ALL = "disorder end to end, every column read: to_arrow()"
FILTER = "filter 5% + count"
FILTER_SUM = "filter 5% + sum"
FILTER_GROUP_SUM = "filter 5% + sum by key"
JOIN = "temporal join count, 10-min windows"
SESSIONS = "session lifetimes, to_intervals()"
TUPLES = "ingress from_records (tuples)"
DICTS = "ingress from_records (dicts)"
BUCKET = 600  # seconds
FILTER_SQL = "SQL filter 5% + COUNT, SUM (Parquet file)"
FILTER_GROUP_SQL = "SQL filter 5% + COUNT, SUM by key (Parquet file)"
FILTER_SQL_TEXT = "SELECT COUNT(*) AS n, SUM(c1) AS total FROM '{path}' WHERE c2 % 100 < 5"
FILTER_GROUP_SQL_TEXT = "SELECT k, COUNT(*) AS n, SUM(c1) AS total FROM '{path}' WHERE c2 % 100 < 5 GROUP BY k"


def _sql_runs(sql: str, path: str, api, con, where=lambda e: e.c2 % 100 < 5) -> dict:
    """Issue 19: SQL and the same query in the Python API within 1.3x. ``tidal``: ``plan(sql).result()``
    (the relational path); ``tidal, engine path``: the stream plan's final snapshot (Where+Aggregate);
    ``tidal python api``: the file read with pyarrow, then ``where(lambda ...)`` and the aggregate; DuckDB."""

    def relational():
        return sorted(plan(sql).result().to_pylist(), key=repr)

    def engine_path():
        q = plan(sql)
        return sorted(q.finish(final_snapshot(q.events())).to_pylist(), key=repr)

    def python_api():
        table = pq.read_table(path)
        table = table.append_column("t0", pa.array(np.zeros(table.num_rows, np.int64)))
        out = final_snapshot(api(tidal.from_arrow(table, time="t0", kind="start").where(where)).to_arrow())
        return sorted(out.select([c for c in out.column_names if c in ("k", "n", "total")]).to_pylist(), key=repr)

    def duckdb_sql():
        return sorted(con.sql(sql).to_arrow_table().to_pylist(), key=repr)

    runs = {
        "tidal": relational,
        "tidal, engine path": engine_path,
        "tidal python api": python_api,
        "duckdb": duckdb_sql,
    }
    answers = {engine: fn() for engine, fn in runs.items()}
    assert all(a == answers["duckdb"] for a in answers.values()), answers
    return runs


def disorder_data(n: int, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    t = np.arange(n, dtype=np.int64) * 100
    late = rng.random(n) < 0.05
    t[late] -= rng.exponential(200_000, int(late.sum())).astype(np.int64)
    return pa.table(
        {"t": t, "a": rng.integers(0, 1000, n, dtype=np.int32), "b": rng.random(n), "c": rng.integers(0, 10**9, n)}
    )


def join_side(n: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    ts = np.sort(rng.integers(0, 86_400, n)).astype(np.int64)
    return pa.table({"ts": ts, "key": rng.integers(0, 10_000, n), "v": rng.integers(0, 100, n)})


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=None, help="events per workload (default 2M, 300k with --quick)")
    add_common_args(ap, "bench/results/engine_gaps.json")
    args = ap.parse_args(argv)
    n = args.rows or (300_000 if args.quick else 2_000_000)
    results = Results()
    con = duckdb.connect()
    con.execute("SET threads=1")

    # -- disorder end to end ------------------------------------------------------------------------
    dis = disorder_data(n)
    times = dis.column("t").to_numpy()

    def tidal_disorder():
        return tidal.from_arrow(dis, time="t", disorder="drop", reorder_latency=1_000_000).count()

    def numpy_sort_take():
        return dis.take(pa.array(np.argsort(times, kind="stable"))).num_rows

    def tidal_disorder_all():
        return tidal.from_arrow(dis, time="t", disorder="drop", reorder_latency=1_000_000).to_arrow().num_rows

    kept = tidal_disorder()
    assert n - kept < 0.01 * n and numpy_sort_take() == n and tidal_disorder_all() == kept, kept
    results.run_interleaved(
        [
            (DISORDER, "tidal", tidal_disorder, n),
            (DISORDER, "numpy argsort + take", numpy_sort_take, n),
            (DISORDER_ALL, "tidal", tidal_disorder_all, n),
            (DISORDER_ALL, "numpy argsort + take", numpy_sort_take, n),
        ],
        args.repeat,
    )

    # -- filter + count -----------------------------------------------------------------------------
    rng = np.random.default_rng(3)
    ft = pa.table({"t": np.zeros(n, np.int64), "c1": rng.integers(0, 1 << 40, n), "c2": rng.integers(0, 1 << 40, n)})
    fs = tidal.from_arrow(ft, time="t", kind="start")
    frame = pl.from_arrow(ft)

    def tidal_filter():
        return fs.where(lambda e: e.c2 % 100 < 5).count()

    def polars_filter():
        return frame.filter(pl.col("c2") % 100 < 5).height

    assert tidal_filter() == polars_filter()
    results.run_interleaved([(FILTER, "tidal", tidal_filter, n), (FILTER, "polars", polars_filter, n)], args.repeat)

    # -- aggregate over a filter ----------------------------------------------------------------------
    ft = ft.append_column("k", pa.array(rng.integers(0, 100, n)))
    fs = tidal.from_arrow(ft, time="t", kind="start")
    frame = pl.from_arrow(ft)

    def tidal_filter_sum():
        out = fs.where(lambda e: e.c2 % 100 < 5).aggregate(total=agg.sum("c1")).to_arrow()
        return out.column("total")[-1].as_py()

    def polars_filter_sum():
        return frame.filter(pl.col("c2") % 100 < 5).select(pl.col("c1").sum()).item()

    def tidal_filter_group_sum():
        out = fs.where(lambda e: e.c2 % 100 < 5).group_aggregate("k", total=agg.sum("c1")).to_arrow()
        return sorted(zip(out.column("k").to_pylist(), out.column("total").to_pylist(), strict=True))

    def polars_filter_group_sum():
        out = frame.filter(pl.col("c2") % 100 < 5).group_by("k").agg(pl.col("c1").sum())
        return sorted(out.iter_rows())

    def two_passes(stream) -> pa.Table:
        """The same plan without the Where+Aggregate loop: the filter hands kept positions to the aggregate."""
        sink = CollectSink(stream.schema)
        Query([stream.node], [sink], rules=tuple(r for r in RULES if r is not fuse_where_aggregate)).run()
        return sink.table()

    def tidal_filter_sum_two_passes():
        out = two_passes(fs.where(lambda e: e.c2 % 100 < 5).aggregate(total=agg.sum("c1")))
        return out.column("total")[-1].as_py()

    def tidal_filter_group_sum_two_passes():
        out = two_passes(fs.where(lambda e: e.c2 % 100 < 5).group_aggregate("k", total=agg.sum("c1")))
        return sorted(zip(out.column("k").to_pylist(), out.column("total").to_pylist(), strict=True))

    assert tidal_filter_sum() == polars_filter_sum() == tidal_filter_sum_two_passes()
    assert tidal_filter_group_sum() == polars_filter_group_sum() == tidal_filter_group_sum_two_passes()
    results.run_interleaved(
        [
            (FILTER_SUM, "tidal", tidal_filter_sum, n),
            (FILTER_SUM, "tidal, two passes (filter, then aggregate)", tidal_filter_sum_two_passes, n),
            (FILTER_SUM, "polars", polars_filter_sum, n),
            (FILTER_GROUP_SUM, "tidal", tidal_filter_group_sum, n),
            (FILTER_GROUP_SUM, "tidal, two passes (filter, then aggregate)", tidal_filter_group_sum_two_passes, n),
            (FILTER_GROUP_SUM, "polars", polars_filter_group_sum, n),
        ],
        args.repeat,
    )

    # -- the same aggregate over a filter in SQL, over a Parquet file -------------------------------
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "filter.parquet")
        pq.write_table(ft.drop_columns(["t"]), path)
        for workload, sql, api in (
            (FILTER_SQL, FILTER_SQL_TEXT, lambda s: s.aggregate(n=agg.count(), total=agg.sum("c1"))),
            (
                FILTER_GROUP_SQL,
                FILTER_GROUP_SQL_TEXT,
                lambda s: s.group_aggregate("k", n=agg.count(), total=agg.sum("c1")),
            ),
        ):
            sql = sql.format(path=path)
            runs = _sql_runs(sql, path, api, con)
            results.run_interleaved([(workload, engine, fn, n) for engine, fn in runs.items()], args.repeat)

    # -- temporal join count ------------------------------------------------------------------------
    left, right = join_side(n, 1), join_side(n, 2)
    con.register("l", left)
    con.register("r", right)

    def tidal_join():
        a = tidal.from_arrow(left, time="ts").tumbling_window(BUCKET)
        b = tidal.from_arrow(right, time="ts").tumbling_window(BUCKET)
        return a.join(b, "key", "key").count()

    join_sql = f"SELECT count(*) FROM l JOIN r ON l.key = r.key AND l.ts // {BUCKET} = r.ts // {BUCKET}"

    def duckdb_join():
        return con.execute(join_sql).fetchall()[0][0]

    assert tidal_join() == duckdb_join()
    results.run_interleaved(
        [(JOIN, "tidal", tidal_join, 2 * n), (JOIN, "duckdb bucketed equi-join", duckdb_join, 2 * n)], args.repeat
    )

    # -- sessions collected as intervals --------------------------------------------------------------
    events = session_data(n)
    con.register("events", events)
    sessions = tidal.from_arrow(events, time="ts").group_apply("key", lambda g: g.session_window(TIMEOUT))

    def tidal_sessions():
        return sessions.to_intervals().num_rows

    def duckdb_sessions():
        return con.sql(SESSION_LIFETIME_SQL).to_arrow_table().num_rows

    assert tidal_sessions() == duckdb_sessions() == n
    results.run_interleaved(
        [(SESSIONS, "tidal", tidal_sessions, n), (SESSIONS, "duckdb gaps-and-islands", duckdb_sessions, n)],
        args.repeat,
    )

    # -- ingress from Python rows ---------------------------------------------------------------------
    m = min(n, 1_000_000)
    names = ["ts", "key", "value"]
    small = events.slice(0, m)
    tuples = list(zip(*(small.column(c).to_pylist() for c in names), strict=True))
    dicts = small.to_pylist()

    def tidal_tuples():
        return tidal.from_records(tuples, time="ts", names=names).count()

    def polars_tuples():
        return pl.from_records(tuples, schema=names, orient="row").height

    def tidal_dicts():
        return tidal.from_records(dicts, time="ts").count()

    def tidal_dicts_schema():
        return tidal.from_records(dicts, time="ts", schema=small.schema).count()

    def polars_dicts():
        return pl.from_dicts(dicts).height

    assert tidal_tuples() == polars_tuples() == tidal_dicts() == tidal_dicts_schema() == polars_dicts() == m
    results.run_interleaved(
        [
            (TUPLES, "tidal", tidal_tuples, m),
            (TUPLES, "polars from_records", polars_tuples, m),
            (DICTS, "tidal", tidal_dicts, m),
            (DICTS, "tidal, schema given", tidal_dicts_schema, m),
            (DICTS, "polars from_dicts", polars_dicts, m),
        ],
        args.repeat,
    )
    results.report(args.out, rows=n, quick=bool(args.quick))
    return 0


if __name__ == "__main__":
    sys.exit(main())
