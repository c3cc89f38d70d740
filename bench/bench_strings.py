"""String predicates and functions (Trill paper section 7.5) against DuckDB and Polars, one thread each.

    python bench/bench_strings.py [--quick] [--rows N] [--repeat 3] [--out bench/results/strings.json]

Data: a column of search-phrase-like strings (two to five words from a 5,000-word vocabulary that
includes "free", "vegas" and "download"; about 25 bytes a row), 10M rows (1M with ``--quick``),
read by tidal as start edges at time 0. Operations, after the paper: (1) contains "free",
(2) equals "vegas", (3) starts with "free", (4) ends with "download", (5) the regular expression
``free.*download``, (6) offset of the substring "vegas" (-1 when absent). (1)-(5) are filters
whose matching rows are counted at egress; (6) is a projection materialised as Arrow.

tidal's versions are plain row lambdas (``"free" in e.s``, ``e.s.startswith("free")``,
``e.s.find("vegas")``, ``re.search(...)``); the lambda compiler maps what it knows to Arrow
compute kernels and runs the rest row at a time. Each row of the results says which (``mode``).
DuckDB uses ``threads=1`` and Polars ``POLARS_MAX_THREADS=1``. The answers are checked equal.
"""

from __future__ import annotations

import argparse
import os
import re
import sys

os.environ.setdefault("POLARS_MAX_THREADS", "1")

import duckdb  # noqa: E402
import numpy as np  # noqa: E402
import polars as pl  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.compute as pc  # noqa: E402
from harness import Results, add_common_args  # noqa: E402

import tidal  # noqa: E402

SPECIAL = ["free", "vegas", "download"]


def make_strings(n: int, seed: int = 5) -> pa.Table:
    rng = np.random.default_rng(seed)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    vocab = ["".join(rng.choice(letters, rng.integers(3, 9))) for _ in range(5_000)]
    # the special words are frequent enough that every predicate selects a few percent of the rows
    weights = np.full(len(vocab) + len(SPECIAL), 1.0)
    weights[-len(SPECIAL) :] = 150.0
    words = pa.array(vocab + SPECIAL)
    cols = []
    for i in range(5):
        idx = pa.array(rng.choice(len(weights), n, p=weights / weights.sum()))
        col = words.take(idx)
        if i >= 2:  # words 3-5 are present with decreasing probability: phrases of 2 to 5 words
            col = pc.if_else(pa.array(rng.random(n) < 0.7 ** (i - 1)), col, pa.nulls(n, pa.string()))
        cols.append(col)
    phrase = pc.binary_join_element_wise(*cols, " ", null_handling="skip")
    # a few phrases that are exactly "vegas", so that equality matches something
    exact = pa.array(rng.random(n) < 0.01)
    phrase = pc.if_else(exact, pa.scalar("vegas"), phrase)
    return pa.table({"t": np.zeros(n, np.int64), "s": phrase})


def tidal_mode(stream) -> str:
    first = stream.explain().splitlines()[0]
    return "row mode" if "row mode" in first else "columnar"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=None, help="rows (default 10M, 1M with --quick)")
    add_common_args(ap, "bench/results/strings.json")
    args = ap.parse_args(argv)
    n = args.rows or (1_000_000 if args.quick else 10_000_000)
    table = make_strings(n)
    data_bytes = table.column("s").nbytes
    results = Results()
    con = duckdb.connect()
    con.execute("SET threads=1")
    con.register("t", table)
    df = pl.from_arrow(table)
    s = tidal.from_arrow(table, time="t", kind="start")
    s_col = pl.col("s").str

    def duck_count(where):
        return lambda: con.execute(f"SELECT count(*) FROM t WHERE {where}").fetchall()[0][0]

    def polars_count(expr):
        return lambda: df.filter(expr).height

    filters = [
        (
            "contains 'free'",
            s.where(lambda e: "free" in e.s),
            "contains(s, 'free')",
            s_col.contains("free", literal=True),
        ),
        ("equals 'vegas'", s.where(lambda e: e.s == "vegas"), "s = 'vegas'", pl.col("s") == "vegas"),
        (
            "starts with 'free'",
            s.where(lambda e: e.s.startswith("free")),
            "starts_with(s, 'free')",
            s_col.starts_with("free"),
        ),
        (
            "ends with 'download'",
            s.where(lambda e: e.s.endswith("download")),
            "ends_with(s, 'download')",
            s_col.ends_with("download"),
        ),
        (
            "regex free.*download",
            s.where(lambda e: re.search("free.*download", e.s) is not None),
            "regexp_matches(s, 'free.*download')",
            s_col.contains("free.*download"),
        ),
    ]
    cases = [(name, stream, stream.count, duck_count(sql), polars_count(expr)) for name, stream, sql, expr in filters]
    offset = s.select(lambda e: {"pos": e.s.find("vegas")})
    cases.append(
        (
            "offset of 'vegas'",
            offset,
            lambda: pc.sum(offset.to_arrow().column("pos")).as_py(),
            lambda: pc.sum(
                con.sql("SELECT instr(s, 'vegas') - 1 AS pos FROM t").to_arrow_table().column("pos")
            ).as_py(),
            lambda: df.select(s_col.find("vegas", literal=True).fill_null(-1)).to_series().sum(),
        )
    )
    for name, stream, tidal_fn, duck_fn, polars_fn in cases:
        want = duck_fn()
        for engine, fn in (("tidal", tidal_fn), ("polars", polars_fn)):
            got = fn()
            if got != want:
                raise SystemExit(f"{name}: {engine} answered {got} but DuckDB {want}")
        mode = tidal_mode(stream)
        row = results.run(name, "tidal", tidal_fn, n, args.repeat, mode=mode, matches=want)
        if mode == "row mode":
            row["note"] = "lambda runs row at a time (not compiled to a kernel)"
        results.run(name, "duckdb", duck_fn, n, args.repeat)
        results.run(name, "polars", polars_fn, n, args.repeat)
    for r in results.rows:
        r["mb_per_s"] = data_bytes / r["seconds"] / 1e6
    results.report(args.out, rows=n, string_bytes=data_bytes, threads=1, quick=args.quick)
    return 0


if __name__ == "__main__":
    sys.exit(main())
