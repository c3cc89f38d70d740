"""tidal's benchmark suite: every benchmark module, one report.

    python bench/suite.py [--quick] [--only core,strings] [--skip spark] [--repeat 3]
    python bench/suite.py --report-only bench/results/<timestamp>    # re-render plots and REPORT.md

Runs ``bench/run.py`` (as ``core``) and every ``bench/bench_*.py`` as its own process (one module
cannot slow or break another), writes each module's JSON, log, plots and ``REPORT.md`` into
``bench/results/<timestamp>/`` and points ``bench/results/latest`` at it.

The module interface (see ``harness.py``): ``main(argv)`` parses ``--quick``, ``--out`` and
``--repeat``, and writes JSON whose ``results`` rows are ``workload, engine, seconds`` (median),
``spread_s``, ``events``, ``events_per_s``; ``series`` holds curves to plot. Modules written
before the interface keep their own JSON and are read by an adapter in ``ADAPTERS``; those
without ``--quick`` get their quick-mode sizes from ``LEGACY_QUICK_ARGS``.

The report opens with one table: each workload with tidal's throughput, every peer's, tidal's
ratio to them, the goal the issues set (``GOALS``) and whether it passes or falls short.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent

# Sizes for modules that predate --quick (their own argument names).
LEGACY_QUICK_ARGS = {
    "joins": ["--events", "500000", "--python-events", "50000"],
    "sessions": ["--events", "150000"],
}
# Quick mode's budget is 5 minutes for everything; these modules' own --quick sizes are trimmed
# further (their per-event rates hardly change below these sizes; the slow parts are row-at-a-time
# peers and row-mode fallbacks, whose cost grows with the rows).
QUICK_SIZES = {
    "strings": ["--rows", "300000"],
    "relational": ["--rows", "1000000"],
    "serialization": ["--events", "1000000", "--avro-events", "100000"],
    "progressive": ["--events", "500000"],
    "impatience": ["--n", "300000", "--budget", "0.2"],
}
QUICK_TIMEOUT_S = 150.0
# Spark's start-up (JVM, Python workers) alone is a minute on a busy 2-core machine.
QUICK_TIMEOUTS = {"spark": 300.0, "sql": 300.0}  # sql runs at full size in quick mode too (issue 19)
QUICK_BUDGET_S = 300.0  # issue 7: quick mode under 5 minutes
FULL_TIMEOUT_S = 3600.0


# --------------------------------------------------------------------------------------------------
# modules
# --------------------------------------------------------------------------------------------------


def discover(bench: Path = BENCH) -> dict[str, Path]:
    """Benchmark modules by short name: ``core`` (run.py), then ``bench_<name>.py`` in name order."""
    found = {"core": bench / "run.py"} if (bench / "run.py").exists() else {}
    for path in sorted(bench.glob("bench_*.py")):
        found[path.stem.removeprefix("bench_")] = path
    return found


def module_args(name: str, path: Path, quick: bool, out: Path, repeat: int) -> list[str]:
    """Command-line arguments the suite passes to a module."""
    source = path.read_text()
    common = "add_common_args(" in source  # harness.add_common_args gives --quick, --repeat, --out
    args = ["--out", str(out)]
    if common or '"--repeat"' in source:
        args += ["--repeat", str(repeat)]
    if quick:
        if common or '"--quick"' in source:
            args += ["--quick", *QUICK_SIZES.get(name, [])]
        else:
            args += LEGACY_QUICK_ARGS.get(name, [])
    return args


def run_module(name: str, path: Path, args: list[str], log: Path, timeout: float) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(BENCH), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    started = time.perf_counter()
    cpu_before = _children_cpu()
    cmd = [sys.executable, str(path), *args]
    with open(log, "w") as fh:
        fh.write(f"$ {' '.join(cmd)}\n")
        fh.flush()
        try:
            done = subprocess.run(cmd, cwd=ROOT, env=env, stdout=fh, stderr=subprocess.STDOUT, timeout=timeout)
            code, error = done.returncode, None if done.returncode == 0 else f"exit code {done.returncode}"
        except subprocess.TimeoutExpired:
            code, error = None, f"timed out after {timeout:.0f} s"
    seconds = time.perf_counter() - started
    cpu = _children_cpu() - cpu_before if cpu_before is not None else None
    if error:
        tail = [line for line in log.read_text().splitlines() if line.strip()][-3:]
        error += ": " + " | ".join(tail)
    return {"module": name, "seconds": seconds, "cpu_s": cpu, "returncode": code, "error": error, "args": args}


def _children_cpu() -> float | None:
    """CPU seconds (user + system) of the finished child processes: on a shared machine a module's
    wall time grows with the load, its CPU time much less."""
    try:
        import resource
    except ImportError:
        return None
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


# --------------------------------------------------------------------------------------------------
# reading results: the harness format and adapters for older formats
# --------------------------------------------------------------------------------------------------


def row(workload, engine, seconds, events, runs=None, spread=None, **extra) -> dict:
    runs = [r for r in (runs or []) if r is not None]
    if spread is None:
        spread = (max(runs) - min(runs)) if len(runs) > 1 else None
    out = {
        "workload": workload,
        "engine": engine,
        "seconds": seconds,
        "spread_s": spread,
        "events": events,
        "events_per_s": events / seconds if seconds else None,
        "runs_s": runs,
    }
    out.update(extra)
    return out


def _adapt_impatience(doc: dict) -> dict:
    rows, ratios = [], []
    lines: dict[str, dict] = {}
    for r in doc["results"]:
        workload = f"Impatience sort: {r['dataset']}, punctuation every {r['punct_every']:,}"
        for sorter, m in r["sorters"].items():
            rates = m.get("runs_events_per_s") or [m["events_per_s"]]
            runs = [m["events"] / x for x in rates]
            engine = {"impatience": "tidal", "imp-per-call": "tidal, per call"}.get(sorter, sorter)
            rows.append(row(workload, engine, m["events"] / m["events_per_s"], m["events"], runs, detail=True))
            lines.setdefault(r["dataset"], {}).setdefault(engine, []).append((r["punct_every"], m["events_per_s"]))
        ratios.append(r["ratio_impatience_vs_best"])
    if ratios:  # the headline: the geometric mean over configurations of Impatience / best competitor
        geo = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
        summary = {
            "workload": "Impatience sort vs best competitor (geo-mean over configs)",
            "engine": "tidal",
            "ratio_only": geo,
            "note": f"{len(ratios)} configs; min {min(ratios):.2f}x, max {max(ratios):.2f}x; "
            f"{sum(x >= 1.3 for x in ratios)} of {len(ratios)} at 1.3x or more",
        }
        rows.insert(0, summary)
        rows.insert(
            1,
            {
                "workload": "Impatience sort vs best competitor (worst config)",
                "engine": "tidal",
                "ratio_only": min(ratios),
                "note": f"the least of {len(ratios)} configs (issue 19 asks 1.3x in every one)",
            },
        )
    series = []
    for dataset, by_engine in lines.items():
        xs = sorted({x for pts in by_engine.values() for x, _ in pts})
        series.append(
            {
                "name": f"Impatience sort throughput vs punctuation spacing ({dataset})",
                "x_label": "events between punctuations",
                "y_label": "events/s",
                "x": xs,
                "lines": {e: [dict(pts).get(x) for x in xs] for e, pts in by_engine.items()},
                "log_x": True,
                "log_y": True,
            }
        )
    return {"rows": rows, "series": series, "params": {"n": doc.get("n"), "budget_s": doc.get("budget_s")}}


def _adapt_disorder(doc: dict) -> dict:
    rows = []
    for r in doc.get("sort_as_needed", []):
        workload = f"sort as needed: {r['query']}"
        rows.append(row(workload, "tidal", r["sort_as_needed_s"], r["n"], r.get("sort_as_needed_runs_s")))
        rows.append(row(workload, "sort first", r["sort_first_s"], r["n"], r.get("sort_first_runs_s")))
    framework = doc.get("framework", {}).get("results", [])
    by = {r["variant"]: r for r in framework}
    for r in framework:
        engine = "tidal" if r["variant"] == "advanced" else f"tidal {r['variant']}"
        if r["variant"] == "MaxLatency":
            engine = "max-latency buffer-and-sort"
        rows.append(
            row(
                "Impatience framework (tumbling count, 3 latencies)",
                engine,
                r["seconds"],
                r["n"],
                r.get("runs_s"),
                peak_held_bytes=r.get("peak_held_bytes"),
            )
        )
    if "advanced" in by and "MaxLatency" in by and by["advanced"]["peak_held_bytes"]:
        rows.append(
            {
                "workload": "Impatience framework memory: max-latency / advanced",
                "engine": "tidal",
                "ratio_only": by["MaxLatency"]["peak_held_bytes"] / by["advanced"]["peak_held_bytes"],
                "note": "peak bytes held by the max-latency sort over the advanced framework's",
            }
        )
    return {"rows": rows, "series": [], "params": {"n": doc.get("n")}}


def _adapt_sql(doc: dict) -> dict:
    rows = []
    for r in doc.get("results", []):
        workload = f"SQL taxi query ({r['format']})"
        rows.append(row(workload, "tidal", r["tidal_s"], r["rows"], r.get("tidal_runs_s")))
        rows.append(row(workload, "duckdb", r["duckdb_s"], r["rows"], r.get("duckdb_runs_s")))
    return {"rows": rows, "series": [], "params": doc.get("meta", {}) | {"query": doc.get("query")}}


def _seconds_and_runs(value) -> tuple[float, list]:
    if isinstance(value, int | float):
        return float(value), []
    if isinstance(value, dict):
        runs = value.get("runs_s") or []
        return float(value.get("median_s") or value.get("seconds") or statistics.median(runs)), runs
    if isinstance(value, list | tuple):  # (median, spread) or (median, runs)
        if len(value) == 2 and isinstance(value[1], list):
            return float(value[0]), value[1]
        return float(value[0]), []
    raise ValueError(f"cannot read a timing from {value!r}")


def _adapt_sessions(doc: dict) -> dict:
    n = doc.get("events")
    rows = []
    for name, engines in doc.get("results", {}).items():
        for engine, m in engines.items():
            if engine == "ratios":
                continue
            engine = "python loop" if engine == "python" else engine
            seconds, runs = _seconds_and_runs(m["seconds"] if "seconds" in m else m)
            rows.append(row(f"sessions: {name}", engine, seconds, n, runs))
    return {"rows": rows, "series": [], "params": {"events": n}}


ADAPTERS = {
    "impatience": _adapt_impatience,
    "disorder": _adapt_disorder,
    "sql": _adapt_sql,
    "sessions": _adapt_sessions,
}


def is_harness(doc: dict) -> bool:
    rows = doc.get("results")
    return isinstance(rows, list) and all(
        isinstance(r, dict) and {"workload", "engine", "events_per_s"} <= set(r) for r in rows
    )


def normalise(name: str, doc: dict) -> dict:
    """{"rows", "series", "params", "notes", "machine"} from a module's JSON."""
    if is_harness(doc):
        out = {
            "rows": [dict(r) for r in doc["results"]],
            "series": doc.get("series", []),
            "params": doc.get("params") or {k: v for k, v in doc.items() if k not in ("machine", "results")},
        }
    elif name in ADAPTERS:
        out = ADAPTERS[name](doc)
    else:
        raise ValueError(f"{name}: results are neither in the harness format nor read by an adapter")
    out["notes"] = list(doc.get("notes", []))
    out["machine"] = doc.get("machine")
    for r in out["rows"]:
        r["module"] = name
    return out


# --------------------------------------------------------------------------------------------------
# goals
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Goal:
    """One aim from the issues. ``kind``: "rate" (tidal events/s >= target), "ratio" (tidal's rate over
    ``peer``'s >= target; ``peer="best"`` is the fastest other engine), or "value" (the row's
    ``ratio_only`` >= target)."""

    module: str
    workload: str  # the workload name, exactly
    kind: str
    target: float
    text: str
    issue: int
    peer: str | None = None


GOALS = [
    Goal("durable", "windowed aggregate", "ratio", 1 / 1.5, "run_durable at most 1.5x a plain run", 14, "plain run"),
    Goal("durable", "join", "ratio", 1 / 1.5, "run_durable at most 1.5x a plain run", 14, "plain run"),
    Goal("core", "pass-through", "rate", 1e9, ">= 1e9 ev/s", 2),
    Goal("core", "where+select", "rate", 2e8, ">= 200M ev/s", 2),
    Goal("core", "where row mode", "ratio", 0.5, "within 2x of the Python loop", 2, "python loop"),
    Goal("stateful", "tumbling 1h count+sum by key", "rate", 4e7, ">= 40M ev/s", 3),
    Goal("stateful", "tumbling 1h count+sum by key", "ratio", 10, ">= 10x Python loop", 3, "python loop"),
    Goal("stateful", "hopping 1h/10min count", "ratio", 10, ">= 10x Python loop", 3, "python loop"),
    Goal("stateful", "hopping 1h/10min sum by key", "ratio", 10, ">= 10x Python loop", 3, "python loop"),
    Goal("joins", "A then B within 1h per user (join)", "ratio", 10, ">= 10x Python loop", 3, "python loop"),
    Goal(
        "impatience",
        "Impatience sort vs best competitor (geo-mean over configs)",
        "value",
        1.3,
        ">= 1.3x best competitor",
        5,
    ),
    Goal(
        "disorder",
        "Impatience framework memory: max-latency / advanced",
        "value",
        10,
        "memory >= 10x lower than max-latency",
        5,
    ),
    Goal(
        "disorder",
        "Impatience framework (tumbling count, 3 latencies)",
        "ratio",
        0.75,
        "throughput within 25% of max-latency",
        5,
        "max-latency buffer-and-sort",
    ),
    Goal("tx", "gs", "ratio", 1.8, ">= 1.8x serial (2 cores)", 15, "tidal-serial-1w"),
    Goal("tx", "sl", "ratio", 1.8, ">= 1.8x serial (2 cores)", 15, "tidal-serial-1w"),
    Goal("tx", "gs", "ratio", 50, ">= 50x Python loop", 15, "python loop"),
    Goal("tx", "sl", "ratio", 50, ">= 50x Python loop", 15, "python loop"),
    Goal(
        "kafka",
        "kafka json -> files, tumbling count by key",
        "ratio",
        1 / 1.5,
        "durable costs at most 1.5x",
        14,
        "tidal, no durability",
    ),
    Goal("sql", "SQL taxi query (parquet)", "ratio", 0.5, "within 2x of DuckDB", 4, "duckdb"),
    Goal("sql", "SQL taxi query (csv)", "ratio", 1 / 3, "within 3x of DuckDB", 4, "duckdb"),
    Goal("sql", "SQL taxi query (parquet)", "ratio", 1 / 1.5, "in process within 1.5x of DuckDB", 19, "duckdb"),
    Goal("sql", "SQL taxi query (parquet), as a process", "ratio", 0.5, "within 2x of DuckDB in Python", 19, "duckdb"),
    Goal("spark", "tumbling 1h count+sum by key on Spark", "ratio", 1.0, ">= Spark window()", 6, "spark window()"),
    Goal(
        "spark",
        "tumbling 1h count+sum by key on Spark",
        "ratio",
        3.0,
        ">= 3x Structured Streaming",
        6,
        "spark structured streaming",
    ),
    Goal(
        "spark",
        "A then B within 1h per user on Spark (join)",
        "ratio",
        3.0,
        ">= 3x Structured Streaming",
        6,
        "spark structured streaming",
    ),
    Goal("serialization", "serialize", "ratio", 15, ">= 15x Avro (paper: 15-20x)", 7, "avro (fastavro)"),
    Goal("serialization", "deserialize", "ratio", 15, ">= 15x Avro (paper: 15-20x)", 7, "avro (fastavro)"),
]
# issue 19, the engine side: each workload where tidal trailed a peer, beside that peer
GOALS += [
    Goal(
        "engine_gaps",
        "disorder end to end: from_arrow(drop, 1 s latency), 5% late, count",
        "ratio",
        1.0,
        ">= numpy argsort + take",
        19,
        "numpy argsort + take",
    ),
    Goal("engine_gaps", "filter 5% + count", "ratio", 1.0, ">= Polars", 19, "polars"),
    Goal("relational", "filter", "ratio", 1.0, ">= Polars", 19, "polars"),
    Goal(
        "engine_gaps",
        "temporal join count, 10-min windows",
        "ratio",
        1.0,
        ">= DuckDB bucketed equi-join",
        19,
        "duckdb bucketed equi-join",
    ),
    Goal(
        "engine_gaps",
        "session lifetimes, to_intervals()",
        "ratio",
        1.0,
        ">= DuckDB gaps-and-islands",
        19,
        "duckdb gaps-and-islands",
    ),
    Goal(
        "impatience",
        "Impatience sort vs best competitor (worst config)",
        "value",
        1.3,
        ">= 1.3x best competitor in every config",
        19,
    ),
]
# issue 19: the CSV queries a new user tries, at least DuckDB's speed on one thread, and SQL within 1.3x of the
# same query in the Python API (bench/bench_sql.py, full size in quick mode too)
SQL_EVENT_QUERIES = (
    "SQL events: COUNT(DISTINCT user) by category",
    "SQL events: 1h tumble over max_diff_watermark",
    "SQL events: join users, by country",
    "SQL events: ORDER BY amount DESC LIMIT 10",
    "SQL events: GROUP BY user ORDER BY SUM LIMIT 10",
)
for _q in SQL_EVENT_QUERIES:
    GOALS += [
        Goal("sql", _q, "ratio", 1.0, ">= DuckDB (one thread)", 19, "duckdb"),
        Goal("sql", _q, "ratio", 1 / 1.3, "SQL within 1.3x of the Python API", 19, "tidal python api"),
    ]
# issue 17: NEXMark, 20x Flink's published per-core figures (q0 155K/s, q5 22K/s, q7 12K/s)
GOALS += [
    Goal("nexmark", q, "ratio", 20, ">= 20x Flink per core (published)", 17, "flink (published, per core)")
    for q in ("q0", "q5", "q7")
]


# --------------------------------------------------------------------------------------------------
# coverage of issue 7: every workload it names, with every peer that can run it or why one cannot
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Covered:
    """One workload issue 7 asks for: where it is measured (``module``, and the workload names that
    equal or start with ``workload``), the peers that must appear beside tidal, and why the other
    peers cannot run it (``cannot``: peer -> reason)."""

    item: str
    what: str
    module: str
    workload: str
    peers: tuple[str, ...]
    cannot: tuple[tuple[str, str], ...] = ()


_NO_LOOP_REL = ("python loop", "the issue sets no event-at-a-time peer for relational queries")
_NO_PUNCT = ("duckdb, polars", "batch engines: no punctuations, one answer at the end")
_STREAMING = ("bytewax, pyflink", "their drivers run one query, the streaming-engines tumbling count (item 1)")

COVERAGE = [
    Covered(
        "1 temporal",
        "ingress from columns",
        "temporal",
        "ingress from columns",
        ("python loop", "polars"),
        (("duckdb", "it scans the registered Arrow table in place: nothing to ingest"),),
    ),
    Covered(
        "1 temporal",
        "ingress from rows",
        "temporal",
        "ingress from rows",
        ("python loop", "polars"),
        (("duckdb", "no bulk row-object ingestion short of INSERT statements"),),
    ),
    Covered("1 temporal", "filter, no match", "temporal", "filter (no match)", ("duckdb", "polars", "python loop")),
    Covered("1 temporal", "filter, all match", "temporal", "filter (all match)", ("duckdb", "polars", "python loop")),
    Covered("1 temporal", "project", "temporal", "project", ("duckdb", "polars", "python loop")),
    Covered("1 temporal", "alter-lifetime", "temporal", "alter-lifetime", ("duckdb", "polars", "python loop")),
    Covered(
        "1 temporal",
        "windowed count, 1 h window, 10 min hop (Fig. 4a)",
        "temporal",
        "windowed count 1h/10min (Fig. 4a)",
        ("duckdb", "polars", "python loop"),
        (_STREAMING,),
    ),
    Covered(
        "1 temporal",
        "windowed count 1h/10min (issue 3 goal)",
        "stateful",
        "hopping 1h/10min count",
        ("duckdb", "python loop"),
        (("polars", "run in the temporal module's Fig. 4a row"),),
    ),
    Covered(
        "1 temporal",
        "grouped windowed sum (Fig. 4a)",
        "temporal",
        "grouped windowed sum 1h/10min (Fig. 4a)",
        ("duckdb", "polars", "python loop"),
        (_STREAMING,),
    ),
    Covered(
        "1 temporal",
        "A-then-B join within 1 h",
        "joins",
        "A then B within 1h",
        ("duckdb", "python loop"),
        (("polars", "no band join: a join on the user then a filter is quadratic per user"),),
    ),
    Covered(
        "1 temporal",
        "throughput vs punctuation spacing 100..1M (Fig. 4b)",
        "temporal",
        "windowed count 1h/10min, punctuation every",
        (),
        (("python loop", "no punctuation: measured once, drawn flat"), _NO_PUNCT),
    ),
    Covered(
        "1 temporal",
        "throughput and memory vs window size (Fig. 4c)",
        "temporal",
        "A-then-B join within",
        ("python loop", "duckdb"),
        (("polars", "no band join"),),
    ),
    Covered(
        "1 temporal",
        "tumbling count+sum on streaming engines",
        "streaming_peers",
        "tumbling 1h count+sum by key (streaming engines)",
        ("bytewax",),
        (("pyflink", "full mode only: a local mini-cluster job takes minutes here"),),
    ),
]
for _name in ("filter", "sum", "count", "select c1 + c2", "grouped sum by sorted c1", "grouped sum by unsorted c2"):
    COVERAGE.append(
        Covered("2 relational", f"GenData {_name}", "relational", _name, ("duckdb", "polars"), (_NO_LOOP_REL,))
    )
COVERAGE += [
    Covered("2 relational", "GenData equi-join", "relational", "equi-join", ("duckdb", "polars"), (_NO_LOOP_REL,)),
    Covered("2 relational", "TPC-H Q1", "tpch", "TPC-H Q1", ("duckdb", "polars"), (_NO_LOOP_REL,)),
]
for _name in ("contains", "equals", "starts with", "ends with", "regex", "offset of"):
    COVERAGE.append(Covered("3 strings", _name, "strings", _name, ("duckdb", "polars")))
COVERAGE += [
    Covered("4 serialization", "serialize", "serialization", "serialize", ("avro (fastavro)",)),
    Covered("4 serialization", "deserialize", "serialization", "deserialize", ("avro (fastavro)",)),
    Covered(
        "5 progressive",
        "first result and total time vs progress points",
        "progressive",
        "",
        ("duckdb",),
        (("polars", "no progressive mode either: it would repeat DuckDB's single answer"),),
    ),
    Covered("6 disorder", "sort as needed", "disorder", "sort as needed", ("sort first",)),
    Covered(
        "6 disorder",
        "Impatience framework",
        "disorder",
        "Impatience framework (tumbling",
        ("max-latency buffer-and-sort",),
    ),
    Covered("6 disorder", "Impatience sort", "impatience", "Impatience sort", ("heapq", "buffer-sort")),
    Covered(
        "6 Spark",
        "tumbling count+sum on Spark",
        "spark",
        "tumbling 1h count+sum by key on Spark",
        ("spark window()", "spark structured streaming"),
    ),
    Covered(
        "6 Spark",
        "A-then-B join on Spark",
        "spark",
        "A then B within 1h per user on Spark (join)",
        ("spark SQL band join", "spark structured streaming"),
    ),
]


def coverage(modules: dict[str, dict], statuses: dict[str, dict]) -> list[dict]:
    """Each COVERAGE entry with the engines measured for it and what is missing."""
    out = []
    for c in COVERAGE:
        mod = modules.get(c.module)
        rows = [r for r in (mod or {}).get("rows", []) if r["workload"].startswith(c.workload)]
        engines = sorted({r["engine"] for r in rows if r.get("events_per_s") or r.get("ratio_only") is not None})
        if mod is None:
            status = statuses.get(c.module)
            problem = f"module {c.module} " + (f"failed: {status['error'][:120]}" if status else "did not run")
        elif not rows:
            problem = f"no '{c.workload}' rows in {c.module}"
        else:
            missing = [p for p in c.peers if not any(e == p or e.startswith(p + " ") for e in engines)]
            problem = ("peers not measured: " + ", ".join(missing)) if missing else ""
            if "tidal" not in engines:
                problem = "; ".join(x for x in ("tidal not measured", problem) if x)
        out.append({"covered": c, "engines": engines, "problem": problem})
    return out


def coverage_table(entries: list[dict]) -> str:
    lines = [
        "| issue 7 item | workload | module | engines measured | peers that cannot run it | status |",
        "|---|---|---|---|---|---|",
    ]
    for e in entries:
        c = e["covered"]
        cannot = "; ".join(f"{peer}: {why}" for peer, why in c.cannot) or "-"
        status = f"**{e['problem']}**" if e["problem"] else "ok"
        cells = (c.item, c.what, c.module, ", ".join(e["engines"]) or "-", cannot, status)
        lines.append("| " + " | ".join(_cell(x) for x in cells) + " |")
    return "\n".join(lines)


def measure_goal(goal: Goal, rows: list[dict]) -> tuple[float | None, str]:
    """(the measured value compared with ``goal.target``, what was measured as text); None when the
    workload or its peer was not measured."""
    mine = [r for r in rows if r["workload"] == goal.workload and r["engine"] == "tidal"]
    if not mine:
        return None, "not measured"
    r = mine[0]
    if goal.kind == "value":
        value = r.get("ratio_only")
        return (None, "not measured") if value is None else (value, f"{value:.2f}x")
    rate = r.get("events_per_s")
    if rate is None:
        return None, "not measured"
    if goal.kind == "rate":
        return rate, f"{fmt_rate(rate)} ev/s"
    others = [x for x in rows if x["workload"] == goal.workload and x["engine"] != "tidal" and x.get("events_per_s")]
    if goal.peer == "best":
        others = [x for x in others if is_peer(x["engine"])]
    else:  # a named peer may be a variant of tidal ("tidal python api", "tidal, no durability")
        others = [x for x in others if x["engine"] == goal.peer]
    if not others:
        return None, f"{goal.peer} not measured"
    best = max(others, key=lambda x: x["events_per_s"])
    ratio = rate / best["events_per_s"]
    return ratio, f"{ratio:.2f}x {best['engine']}"


def check_goal(goal: Goal, rows: list[dict]) -> tuple[bool | None, str]:
    """(passed, what was measured); passed is None when the workload or its peer was not measured."""
    value, text = measure_goal(goal, rows)
    return (None if value is None else value >= goal.target), text


# cProfile sees only this process: a Spark job's work happens in the JVM and its Python workers, so
# the driver's profile is socket waits. The report names these workloads but profiles the next ones.
UNPROFILED_MODULES = {"spark"}


def furthest_from_goal(
    modules: dict[str, dict], k: int = 3, profiled_only: bool = False
) -> list[tuple[float, Goal, str]]:
    """The ``k`` measured goals with the lowest measured/target (those below 1 fall short)."""
    scored = []
    for goal in GOALS:
        if profiled_only and goal.module in UNPROFILED_MODULES:
            continue
        if goal.module in modules:
            value, text = measure_goal(goal, modules[goal.module]["rows"])
            if value is not None:
                scored.append((value / goal.target, goal, text))
    return sorted(scored, key=lambda x: x[0])[:k]


def is_peer(engine: str) -> bool:
    return not engine.startswith("tidal")


def fmt_rate(x: float | None) -> str:
    if x is None:
        return "-"
    for unit, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if x >= scale:
            return f"{x / scale:.3g}{unit}"
    return f"{x:.3g}"


def fmt_s(x: float | None) -> str:
    return "-" if x is None else (f"{x:.3g} s" if x >= 0.01 else f"{x * 1e3:.3g} ms")


# --------------------------------------------------------------------------------------------------
# the report
# --------------------------------------------------------------------------------------------------


def headline(modules: dict[str, dict], statuses: dict[str, dict]) -> list[dict]:
    """One entry per workload (in module order), with its goals and verdicts; goals whose module did
    not run are listed too."""
    entries = []
    for name, mod in modules.items():
        seen = []
        for r in mod["rows"]:
            if r["workload"] not in seen and not r.get("detail"):  # detail rows: the module's section only
                seen.append(r["workload"])
        for workload in seen:
            rows = [r for r in mod["rows"] if r["workload"] == workload]
            tidal_row = next((r for r in rows if r["engine"] == "tidal"), None)
            goals = [g for g in GOALS if g.module == name and g.workload == workload]
            verdicts = [(g, *check_goal(g, mod["rows"])) for g in goals]
            entries.append(
                {"module": name, "workload": workload, "rows": rows, "tidal": tidal_row, "verdicts": verdicts}
            )
    for goal in GOALS:
        if goal.module in modules:
            if not any(e["module"] == goal.module and e["workload"] == goal.workload for e in entries):
                entries.append(
                    {
                        "module": goal.module,
                        "workload": goal.workload,
                        "rows": [],
                        "tidal": None,
                        "verdicts": [(goal, None, "not measured")],
                    }
                )
            continue
        status = statuses.get(goal.module)
        if status and status.get("error"):
            why = f"not measured: {status['error']}"
        elif goal.module in discover():
            why = "not measured: module not run"
        else:
            why = f"not measured: no bench_{goal.module}.py on this branch"

        entries.append(
            {
                "module": goal.module,
                "workload": goal.workload,
                "rows": [],
                "tidal": None,
                "verdicts": [(goal, None, why)],
            }
        )
    return entries


def verdict_text(verdicts) -> str:
    if not verdicts:
        return "no goal"
    states = [ok for _, ok, _ in verdicts]
    if any(s is None for s in states):
        return "not measured"
    return "**pass**" if all(states) else "**fall short**"


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def headline_table(entries: list[dict]) -> str:
    lines = [
        "| workload | tidal (ev/s) | peers (ev/s) | tidal / peer | goal (issue) | measured | result |",
        "|---|---:|---|---|---|---|---|",
    ]
    for e in entries:
        t = e["tidal"]
        if t is None:
            mine = "-"
        elif t.get("ratio_only") is not None:
            mine = f"{t['ratio_only']:.2f}x"
        else:
            mine = fmt_rate(t.get("events_per_s"))
        peers = [r for r in e["rows"] if r["engine"] != "tidal" and r.get("events_per_s")]
        peer_txt = ", ".join(f"{r['engine']} {fmt_rate(r['events_per_s'])}" for r in peers) or "-"
        rate = t.get("events_per_s") if t else None
        ratios = ", ".join(
            f"{rate / r['events_per_s']:.2f}x {r['engine']}" for r in peers if rate and is_peer(r["engine"])
        )
        goals = "; ".join(f"{g.text} (#{g.issue})" for g, _, _ in e["verdicts"]) or "-"
        measured = "; ".join(m for _, _, m in e["verdicts"]) or "-"
        lines.append(
            "| "
            + " | ".join(
                _cell(x)
                for x in (
                    f"{e['workload']} [{e['module']}]",
                    mine,
                    peer_txt,
                    ratios or "-",
                    goals,
                    measured,
                    verdict_text(e["verdicts"]),
                )
            )
            + " |"
        )
    return "\n".join(lines)


def detail_table(rows: list[dict]) -> str:
    lines = [
        "| workload | engine | events | median | spread (max-min) | runs | events/s | note |",
        "|---|---|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        if r.get("ratio_only") is not None:
            lines.append(
                f"| {_cell(r['workload'])} | {r['engine']} | | | | | {r['ratio_only']:.2f}x "
                f"| {_cell(r.get('note', ''))} |"
            )
            continue
        note = r.get("note") or (r.get("mode") if r.get("mode") == "row mode" else "")
        lines.append(
            "| "
            + " | ".join(
                _cell(x)
                for x in (
                    r["workload"],
                    r["engine"],
                    f"{r['events']:,}" if r.get("events") else "-",
                    fmt_s(r.get("seconds")),
                    fmt_s(r.get("spread_s")),
                    len(r.get("runs_s") or []) or "-",
                    fmt_rate(r.get("events_per_s")),
                    note or "",
                )
            )
            + " |"
        )
    return "\n".join(lines)


def plot_module(name: str, mod: dict, out_dir: Path) -> list[str]:
    """Throughput bars per workload (engines side by side, log scale, spread as error bars) and one
    line chart per series. Returns the PNG file names."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    files = []
    rows = [r for r in mod["rows"] if r.get("events_per_s") and r.get("ratio_only") is None]
    workloads = list(dict.fromkeys(r["workload"] for r in rows))
    if workloads and len(workloads) <= 24:
        engines = list(dict.fromkeys(r["engine"] for r in rows))
        width = 0.8 / len(engines)
        fig, ax = plt.subplots(figsize=(max(6, 1.3 * len(workloads) + 2), 4.5))
        for i, engine in enumerate(engines):
            xs, ys, lo, hi = [], [], [], []
            for j, w in enumerate(workloads):
                r = next((x for x in rows if x["workload"] == w and x["engine"] == engine), None)
                if r is None:
                    continue
                rate = r["events_per_s"]
                runs = [x for x in (r.get("runs_s") or []) if x]
                fast, slow = (r["events"] / min(runs), r["events"] / max(runs)) if runs else (rate, rate)
                xs.append(j + (i - (len(engines) - 1) / 2) * width)
                ys.append(rate)
                lo.append(max(rate - slow, 0))
                hi.append(max(fast - rate, 0))
            ax.bar(xs, ys, width, yerr=[lo, hi], capsize=2, label=engine)
        ax.set_yscale("log")
        ax.set_ylabel("events/s (median; bars: fastest-slowest run)")
        ax.set_xticks(range(len(workloads)))
        ax.set_xticklabels([w if len(w) < 28 else w[:26] + "…" for w in workloads], rotation=25, ha="right")
        ax.set_title(f"{name}: throughput")
        ax.legend(fontsize=8)
        fig.tight_layout()
        fname = f"{name}_throughput.png"
        fig.savefig(out_dir / fname, dpi=90)
        plt.close(fig)
        files.append(fname)
    for k, s in enumerate(mod.get("series", [])):
        fig, ax = plt.subplots(figsize=(6.5, 4))
        for label, ys in s["lines"].items():
            pts = [(x, y) for x, y in zip(s["x"], ys, strict=False) if y is not None]
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=label)
        if s.get("log_x"):
            ax.set_xscale("log")
        if s.get("log_y"):
            ax.set_yscale("log")
        ax.set_xlabel(s["x_label"])
        ax.set_ylabel(s["y_label"])
        ax.set_title(s["name"], fontsize=10)
        ax.legend(fontsize=8)
        fig.tight_layout()
        fname = f"{name}_series{k}.png"
        fig.savefig(out_dir / fname, dpi=90)
        plt.close(fig)
        files.append(fname)
    return files


def render(run_dir: Path, plots: bool = True) -> str:
    """Read every module's JSON in ``run_dir`` and write plots and REPORT.md; returns the report."""
    meta_path = run_dir / "suite.json"
    meta = json.loads(meta_path.read_text()) if meta_path.exists() else {}
    statuses = {s["module"]: s for s in meta.get("modules", [])}
    modules, problems = {}, []
    names = list(statuses) or sorted(p.stem for p in run_dir.glob("*.json") if p.stem != "suite")
    for name in names:
        path = run_dir / f"{name}.json"
        if not path.exists():
            continue
        try:
            modules[name] = normalise(name, json.loads(path.read_text()))
        except (ValueError, KeyError, TypeError) as exc:
            problems.append(f"{name}: could not read results ({exc})")
    entries = headline(modules, statuses)
    machine = next((m["machine"] for m in modules.values() if m.get("machine")), {}) or {}
    out = [f"# tidal benchmark report ({meta.get('mode', '?')} mode, {meta.get('started', '?')})", ""]
    out += [
        headline_table(entries),
        "",
        "Ratios are tidal's throughput over each peer's, measured in the same run on the same data "
        "(a ratio above 1 means tidal is faster). Throughput is events per second of the median run; "
        "a tidal cell ending in x is a ratio, not a rate. A goal is *not measured* when its "
        "module did not run or failed here (see Modules below).",
        "",
    ]
    worst = [x for x in furthest_from_goal(modules) if x[0] < 1]
    profiled = [x for x in furthest_from_goal(modules, profiled_only=True) if x[0] < 1]
    if worst:
        out += ["Furthest from their goals (profiles: `bench/profiler.py`):", ""]
        for a, g, text in worst + [x for x in profiled if x not in worst]:
            link = (
                "not profiled: its work runs in Spark's JVM and Python workers, which cProfile does not see"
                if g.module in UNPROFILED_MODULES
                else profile_link(run_dir, g)
            )
            out.append(f"- {g.workload} [{g.module}]: {text}, {100 * a:.0f}% of '{g.text}'; " + link)
        out.append("")
    total = meta.get("total_s")
    if total is not None:
        over = meta.get("mode") == "quick" and total > QUICK_BUDGET_S
        out.append(
            f"The suite took {total:.0f} s"
            + (
                f" (modules {meta['modules_s']:.0f} s, profiles {meta['profiles_s']:.0f} s)"
                if "profiles_s" in meta
                else ""
            )
            + (f"; **over the quick mode's {QUICK_BUDGET_S / 60:.0f}-minute budget**" if over else "")
            + (
                f"; load average {meta['load'][0]:.1f} at the start, {meta['load'][1]:.1f} at the end"
                if "load" in meta
                else ""
            )
            + "."
        )
        out.append("")
    out += ["## Coverage of issue 7", "", coverage_table(coverage(modules, statuses)), ""]
    out += [
        "## Machine",
        "",
    ]
    versions = machine.get("versions", {})
    out += [
        f"- {machine.get('platform', '?')}, {machine.get('cpus', '?')} CPUs ({machine.get('processor', '?')}), "
        f"Python {machine.get('python', '?')}, tidal commit {machine.get('commit', '?')}",
        "- " + ", ".join(f"{k} {v}" for k, v in sorted(versions.items())),
        "- The machine is shared (other jobs may run at the same time), so figures are noisy: read the "
        "spread column before trusting a small difference.",
        "",
        "## Modules",
        "",
        "| module | status | wall time | CPU time | arguments |",
        "|---|---|---:|---:|---|",
    ]
    for name, s in statuses.items():
        state = "ok" if not s.get("error") else _cell(s["error"][:300])
        cpu = f"{s['cpu_s']:.0f} s" if s.get("cpu_s") is not None else "-"
        out.append(f"| {name} | {state} | {s['seconds']:.0f} s | {cpu} | `{' '.join(s['args'])}` |")
    for p in problems:
        out.append(f"\n- {p}")
    for name, mod in modules.items():
        out += ["", f"## {name}", ""]
        params = {k: v for k, v in (mod.get("params") or {}).items() if k not in ("machine",)}
        if params:
            out.append("Data and settings: " + ", ".join(f"{k}={v}" for k, v in params.items()))
            out.append("")
        out.append(detail_table(mod["rows"]))
        for note in mod.get("notes", []):
            out.append(f"\n- {note}")
        if plots:
            for fname in plot_module(name, mod, run_dir):
                out += ["", f"![{fname}]({fname})"]
    report = "\n".join(out) + "\n"
    (run_dir / "REPORT.md").write_text(report)
    return report


def profile_name(goal: Goal) -> str:
    return f"{goal.module}:{goal.workload}"


def profile_link(run_dir: Path, goal: Goal) -> str:
    """A link to the goal's profile in ``run_dir/profiles`` with its top own-time line, or the command
    that makes it."""
    import profiler

    fname = f"{profiler.slug(profile_name(goal))}.txt"
    path = run_dir / "profiles" / fname
    if not path.exists():
        return f"profile: `python bench/profiler.py '{profile_name(goal)}'`"
    top = next((line for line in path.read_text().splitlines() if line.startswith("# top by own time:")), "")
    return f"[profile](profiles/{fname})" + (f" ({top.removeprefix('# ').strip()})" if top else "")


def run_profiles(run_dir: Path, modules: dict[str, dict], quick: bool, timeout: float) -> dict:
    """Profile the three workloads furthest from their goals into ``run_dir/profiles``."""
    names = [profile_name(g) for a, g, _ in furthest_from_goal(modules, profiled_only=True) if a < 1]
    if not names:
        return {"names": [], "seconds": 0.0, "error": None}
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(BENCH), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    cmd = [sys.executable, str(BENCH / "profiler.py"), *names, "--out-dir", str(run_dir / "profiles")]
    cmd += ["--quick"] if quick else []
    started = time.perf_counter()
    with open(run_dir / "logs" / "profiles.log", "w") as fh:
        try:
            done = subprocess.run(cmd, cwd=ROOT, env=env, stdout=fh, stderr=subprocess.STDOUT, timeout=timeout)
            error = None if done.returncode == 0 else f"exit code {done.returncode}"
        except subprocess.TimeoutExpired:
            error = f"timed out after {timeout:.0f} s"
    return {"names": names, "seconds": time.perf_counter() - started, "error": error}


def point_latest(run_dir: Path) -> None:
    latest = run_dir.parent / "latest"
    if latest.is_symlink() or latest.is_file():
        latest.unlink()
    elif latest.is_dir():
        shutil.rmtree(latest)
    try:
        latest.symlink_to(run_dir.name, target_is_directory=True)
    except OSError:  # filesystems without symlinks get a copy
        shutil.copytree(run_dir, latest)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes, under 5 minutes in all")
    ap.add_argument("--repeat", type=int, default=3, help="runs per measurement (at least 3 for median and spread)")
    ap.add_argument("--only", default=None, help="comma-separated module names to run")
    ap.add_argument("--skip", default="", help="comma-separated module names to leave out")
    ap.add_argument("--results", default=str(BENCH / "results"), help="where run folders go")
    ap.add_argument("--timeout", type=float, default=None, help="seconds per module (default 150 quick, 3600 full)")
    ap.add_argument("--report-only", default=None, help="re-render REPORT.md and plots for an existing run folder")
    ap.add_argument("--list", action="store_true", help="list the modules and the arguments they would get")
    ap.add_argument("--no-profile", dest="profile", action="store_false", help="skip profiling the three worst")
    args = ap.parse_args(argv)

    if args.report_only:
        print(render(Path(args.report_only)))
        return 0
    modules = discover()
    if args.only:
        wanted = args.only.split(",")
        unknown = [w for w in wanted if w not in modules]
        if unknown:
            raise SystemExit(f"unknown module(s) {unknown}; modules are {sorted(modules)}")
        modules = {k: v for k, v in modules.items() if k in wanted}
    modules = {k: v for k, v in modules.items() if k not in args.skip.split(",")}
    started = datetime.now()
    run_dir = Path(args.results) / started.strftime("%Y%m%d-%H%M%S")
    if args.list:
        for name, path in modules.items():
            print(name, " ".join(module_args(name, path, args.quick, run_dir / f"{name}.json", args.repeat)))
        return 0
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "logs").mkdir(exist_ok=True)
    timeout = args.timeout or (QUICK_TIMEOUT_S if args.quick else FULL_TIMEOUT_S)
    meta = {"mode": "quick" if args.quick else "full", "started": started.isoformat(timespec="seconds"), "modules": []}
    meta["load_start"] = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    t0 = time.perf_counter()
    for name, path in modules.items():
        out = run_dir / f"{name}.json"
        margs = module_args(name, path, args.quick, out, args.repeat)
        print(f"[{time.perf_counter() - t0:6.0f} s] {name}: {path.name} {' '.join(margs)}", flush=True)
        limit = QUICK_TIMEOUTS.get(name, timeout) if args.quick and args.timeout is None else timeout
        status = run_module(name, path, margs, run_dir / "logs" / f"{name}.log", limit)
        if status["error"] is None and not out.exists():
            status["error"] = "finished without writing its JSON"
        cpu = f", {status['cpu_s']:.0f} s CPU" if status.get("cpu_s") is not None else ""
        print(f"         {name}: {'ok' if not status['error'] else status['error']} in {status['seconds']:.0f} s{cpu}")
        meta["modules"].append(status)
        (run_dir / "suite.json").write_text(json.dumps(meta, indent=2))
    meta["modules_s"] = time.perf_counter() - t0
    if args.profile:
        modules_read = {}
        for name in modules:
            path = run_dir / f"{name}.json"
            try:
                modules_read[name] = normalise(name, json.loads(path.read_text()))
            except (OSError, ValueError, KeyError, TypeError):
                continue
        print(f"[{time.perf_counter() - t0:6.0f} s] profiling the workloads furthest from their goals", flush=True)
        meta["profiles"] = run_profiles(run_dir, modules_read, args.quick, timeout)
        meta["profiles_s"] = meta["profiles"]["seconds"]
        print(f"         profiles: {meta['profiles']['error'] or 'ok'} in {meta['profiles_s']:.0f} s")
    meta["total_s"] = time.perf_counter() - t0
    meta["cpu_s"] = sum(s.get("cpu_s") or 0.0 for s in meta["modules"])
    meta["load"] = [meta["load_start"], os.getloadavg()[0]] if hasattr(os, "getloadavg") else None
    if meta["load"] is None:
        del meta["load"]
    (run_dir / "suite.json").write_text(json.dumps(meta, indent=2))
    report = render(run_dir)
    point_latest(run_dir)
    print(report.split("\n## Machine")[0])
    print(f"report: {run_dir / 'REPORT.md'} (also {run_dir.parent / 'latest'})")
    minutes, cpu = meta["total_s"] / 60, meta["cpu_s"]
    print(f"total time: {meta['total_s']:.0f} s ({minutes:.1f} min; {cpu:.0f} s of CPU in the modules)")
    if args.quick and meta["total_s"] > QUICK_BUDGET_S:
        print(
            f"WARNING: quick mode took {meta['total_s']:.0f} s, over its {QUICK_BUDGET_S:.0f} s budget "
            f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs: a shared machine runs slower)",
            file=sys.stderr,
        )
    return 0 if all(not s["error"] for s in meta["modules"]) else 1


if __name__ == "__main__":
    sys.exit(main())
