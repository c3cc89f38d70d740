"""``GROUP BY`` a tumble's or hop's window on the engine's windows (``tidal/sql/windowed.py``).

Each query's answer is checked against DuckDB (windows as ``time_bucket`` arithmetic) and its whole
changelog against the literal translation (the running aggregate per row, switched on by making
``windowed_aggregate`` decline), on random rows in and out of order; the plan must say which ran.
"""

from __future__ import annotations

import contextlib
import datetime as dt
from collections import Counter

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tidal.sql.windowed as windowed
from tidal.sql import plan

SOURCE = """max_diff_watermark(source => TABLE(ev), time_field => DESCRIPTOR(t), offset => INTERVAL 3 SECONDS)"""
TUMBLE = f"tumble(source => TABLE({SOURCE}), time_field => DESCRIPTOR(t), window_length => INTERVAL 10 SECONDS)"
HOP = (
    f"hop(source => TABLE({SOURCE}), time_field => DESCRIPTOR(t), window_length => INTERVAL 10 SECONDS,"
    " hop => INTERVAL 2 SECONDS)"
)

# (tidal SQL, DuckDB SQL over the rows the watermark kept, whether the engine's windows run it)
CASES = {
    "tumble": (
        f"SELECT k, window_start, window_end, count(*) AS n, sum(v) AS s, min(v) AS lo, max(v) AS hi, avg(v) AS a"
        f" FROM {TUMBLE} GROUP BY k, window_start, window_end",
        "SELECT k, time_bucket(INTERVAL 10 SECONDS, t) AS ws,"
        " time_bucket(INTERVAL 10 SECONDS, t) + INTERVAL 10 SECONDS,"
        " count(*), sum(v), min(v), max(v), avg(v) FROM ev GROUP BY k, ws",
        True,
    ),
    # DOUBLE aggregates carry a NaN count beside them (NaN is DuckDB's largest value): a computed argument,
    # computed before the window (tidal/sql/windowed.py)
    "tumble floats": (
        f"SELECT k, window_start, max(f) AS hi, avg(f) AS a FROM {TUMBLE} GROUP BY k, window_start",
        "SELECT k, time_bucket(INTERVAL 10 SECONDS, t) AS ws, max(f), avg(f) FROM ev GROUP BY k, ws",
        True,  # the NaN count beside a floating SUM/AVG is computed before the window
    ),
    "tumble on watermark": (
        f"SELECT window_end, max(v) AS m FROM {TUMBLE} GROUP BY window_end TRIGGER ON WATERMARK",
        "SELECT time_bucket(INTERVAL 10 SECONDS, t) + INTERVAL 10 SECONDS AS we, max(v) FROM ev GROUP BY we",
        True,
    ),
    "tumble distinct": (
        f"SELECT k, window_start FROM {TUMBLE} GROUP BY k, window_start",
        "SELECT DISTINCT k, time_bucket(INTERVAL 10 SECONDS, t) FROM ev",
        True,
    ),
    "hop": (
        f"SELECT k, window_start, window_end, count(*) AS n, sum(v) AS s, avg(v) AS a FROM {HOP}"
        " GROUP BY k, window_start, window_end",
        "SELECT k, time_bucket(INTERVAL 2 SECONDS, t) - j * INTERVAL 2 SECONDS AS ws,"
        " time_bucket(INTERVAL 2 SECONDS, t) - j * INTERVAL 2 SECONDS + INTERVAL 10 SECONDS, count(*), sum(v), avg(v)"
        " FROM ev, range(5) r(j) GROUP BY k, ws",
        True,
    ),
    "hop floats": (  # fused hops add partial sums: a floating sum stays on the literal translation
        f"SELECT window_end, sum(f) AS s FROM {HOP} GROUP BY window_end",
        "SELECT time_bucket(INTERVAL 2 SECONDS, t) - j * INTERVAL 2 SECONDS + INTERVAL 10 SECONDS AS we, sum(f)"
        " FROM ev, range(5) r(j) GROUP BY we",
        False,
    ),
    "hop max": (  # not fused: the literal translation
        f"SELECT k, window_end, max(v) AS m FROM {HOP} GROUP BY k, window_end",
        "SELECT k, time_bucket(INTERVAL 2 SECONDS, t) - j * INTERVAL 2 SECONDS + INTERVAL 10 SECONDS AS we, max(v)"
        " FROM ev, range(5) r(j) GROUP BY k, we",
        False,
    ),
}

BASE = dt.datetime(2024, 6, 1)


def rows_table(seed: int, n: int, disorder_ms: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    t = np.sort(rng.integers(-30_000, 30_000, n))  # a minute across the epoch: negative ticks, windows at -10 s, 0
    arrival = np.argsort(t + rng.integers(0, disorder_ms + 1, n), kind="stable")
    f = rng.integers(-8, 8, n) / 4.0  # exact binary fractions: sums do not depend on their order
    return pa.table(
        {
            "t": pa.array(t[arrival], pa.int64()).cast(pa.timestamp("ms")),
            "k": pa.array(rng.integers(0, 4, n)[arrival]),
            "v": pa.array(rng.integers(-50, 50, n)[arrival]),
            "f": pa.array(f[arrival]),
        }
    )


def literal(monkeypatch):
    monkeypatch.setattr(windowed, "windowed_aggregate", lambda *a, **k: None)


def canonical(table: pa.Table) -> Counter:
    return Counter(tuple(round(v, 9) if isinstance(v, float) else v for v in row.values()) for row in table.to_pylist())


def kept_rows(table: pa.Table, latency_ms: int = 3_000) -> pa.Table:
    """The rows the watermark keeps: a row behind (largest time seen so far - latency) is late."""
    t = table.column("t").cast(pa.int64()).to_numpy()
    high = np.maximum.accumulate(t)
    previous = np.concatenate([[np.iinfo(np.int64).min], high[:-1] - latency_ms])
    return table.filter(pa.array(t >= previous))


@settings(max_examples=6, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(1, 400), disorder=st.sampled_from([0, 2_000, 6_000]))
def test_window_groups_equal_duckdb_and_the_literal_translation(tmp_path_factory, seed, n, disorder):
    directory = tmp_path_factory.mktemp("w")
    table = rows_table(seed, n, disorder)
    pq.write_table(table, directory / "ev.parquet")
    ev = kept_rows(table)  # noqa: F841 (read by DuckDB)
    con = duckdb.connect()
    for name, (sql, oracle, engine) in CASES.items():
        with contextlib.chdir(directory):
            q = plan(sql)
            assert ("WindowRows" in q.explain()) == engine, name
            got, changes = q.result(), plan(sql).changelog()
            with pytest.MonkeyPatch.context() as mp:
                literal(mp)
                want_changes = plan(sql).changelog()
        want = con.sql(oracle).arrow()
        want = want.read_all() if hasattr(want, "read_all") else want
        assert canonical(got) == canonical(want.rename_columns(got.column_names)), name
        assert canonical(changes.drop_columns(["time"])) == canonical(want_changes.drop_columns(["time"])), name
