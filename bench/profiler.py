"""Where tidal's time goes: cProfile of named benchmark workloads, top functions by cumulative and own time.

    python bench/profiler.py core:where+select stateful:'tumbling 1h count+sum by key' [--quick] [--top 30]
                            [--out-dir bench/results/<timestamp>/profiles]
    python bench/profiler.py --list

A workload is ``module:workload`` as the suite's report names it. Known workloads (``PROFILES``)
build their data and query with the module's own functions, run the query once unprofiled (to
compile the kernels), then once under cProfile; any other ``module:...`` profiles the whole module's
``main`` with ``--quick --repeat 1`` (setup and peers included, so read it with care). Each profile is
written to ``<out-dir>/<module>__<workload>.txt``. numba-compiled loops show as one opaque call
(their Python callers are what cProfile can see). The file is not ``profile.py``: that name would
shadow the standard library module that ``cProfile`` imports, for every script run from ``bench/``.
"""

from __future__ import annotations

import argparse
import cProfile
import importlib
import io
import pstats
import re
import sys
import time
from datetime import datetime
from pathlib import Path

BENCH = Path(__file__).resolve().parent
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))
if str(BENCH.parent) not in sys.path:
    sys.path.insert(0, str(BENCH.parent))


# Each entry: (events quick, events full, setup(n) -> (fn, events)). Setup runs unprofiled.
def _core(kind: str):
    def setup(n):
        import run

        import tidal

        stream = tidal.from_arrow(run.make_data(n), time="ts")
        if kind == "pass-through":
            return stream.count, n
        if kind == "where+select":
            q = stream.where(lambda e: e.user_id % 100 < 5).select(lambda e: {"ad_id": e.ad_id, "v2": e.value * 2.0})
            return q.count, n
        q = stream.where(lambda e: run.opaque_sample(e.user_id))
        return q.count, n

    return setup


def _stateful(kind: str):
    def setup(n):
        import bench_stateful as m

        import tidal
        from tidal import agg

        stream = tidal.from_arrow(m.make_data(n), time="ts")
        if kind == "tumbling":
            q = stream.tumbling_window(m.HOUR).group_aggregate("key", agg.count(), agg.sum("value"))
        elif kind == "hop count":
            q = stream.hopping_window(m.HOUR, m.TEN_MIN).aggregate(agg.count())
        else:
            q = stream.hopping_window(m.HOUR, m.TEN_MIN).group_aggregate("key", agg.sum("value"))
        return q.to_arrow, n

    return setup


def _joins(n):
    import bench_joins as m

    q = m.tidal_query(m.make_data(n))
    return q.count, n


def _sql(fmt: str):
    def setup(n):
        import bench_sql as m

        paths = m.ensure_files(n, BENCH / "data")
        return (lambda: m.run_tidal(paths[fmt])), n

    return setup


def _serialization(kind: str):
    def setup(n):
        import bench_serialization as m
        import pyarrow as pa

        batches = m.tidal_batches(m.make_data(n))
        if kind == "serialize":
            return (lambda: m.ipc_write(batches)), n
        buf = m.ipc_write(batches)
        return (lambda: m.ipc_read_and_touch(buf)), pa.ipc.open_stream(buf).read_all().num_rows

    return setup


def _tpch(n_sf):
    import bench_tpch as m

    path, _ = m.ensure_lineitem(n_sf, setup=True)
    return (lambda: m.tidal_q1(path)), None


PROFILES = {
    "core:pass-through": (2_000_000, 10_000_000, _core("pass-through")),
    "core:where+select": (2_000_000, 10_000_000, _core("where+select")),
    "core:where row mode": (200_000, 1_000_000, _core("row")),
    "stateful:tumbling 1h count+sum by key": (2_000_000, 10_000_000, _stateful("tumbling")),
    "stateful:hopping 1h/10min count": (2_000_000, 10_000_000, _stateful("hop count")),
    "stateful:hopping 1h/10min sum by key": (2_000_000, 10_000_000, _stateful("hop sum")),
    "joins:A then B within 1h per user (join)": (1_000_000, 10_000_000, _joins),
    "sql:SQL taxi query (parquet)": (300_000, 2_000_000, _sql("parquet")),
    "sql:SQL taxi query (csv)": (300_000, 2_000_000, _sql("csv")),
    "serialization:serialize": (2_000_000, 10_000_000, _serialization("serialize")),
    "serialization:deserialize": (2_000_000, 10_000_000, _serialization("deserialize")),
    "tpch:TPC-H Q1 (lineitem, Parquet)": (0.1, 1.0, _tpch),
}


def slug(name: str) -> str:
    module, _, workload = name.partition(":")
    return f"{module}__{re.sub(r'[^A-Za-z0-9]+', '-', workload).strip('-').lower() or 'module'}"


def stats_text(profile: cProfile.Profile, sort: str, top: int) -> str:
    out = io.StringIO()
    stats = pstats.Stats(profile, stream=out)
    stats.strip_dirs().sort_stats(sort).print_stats(top)
    return out.getvalue()


def summary(profile: cProfile.Profile, top: int = 5) -> list[tuple[str, float, float]]:
    """The ``top`` functions by own time: (function, own seconds, cumulative seconds)."""
    stats = pstats.Stats(profile)
    rows = []
    for (file, line, func), (_, _, own, cum, _) in stats.stats.items():
        rows.append((f"{Path(file).name}:{line}({func})", own, cum))
    return sorted(rows, key=lambda r: -r[1])[:top]


def profile_workload(name: str, quick: bool) -> tuple[cProfile.Profile, dict]:
    """Profile one workload; returns the profile and facts for the file's header."""
    info: dict = {"workload": name}
    if name in PROFILES:
        small, big, setup = PROFILES[name]
        size = small if quick else big
        fn, events = setup(size)
        fn()  # compile the kernels outside the profile
        start = time.perf_counter()
        fn()
        info["unprofiled_s"] = time.perf_counter() - start
        profile = cProfile.Profile()
        start = time.perf_counter()
        profile.runcall(fn)
        info.update(profiled_s=time.perf_counter() - start, size=size, events=events, scope="the workload alone")
        return profile, info
    module, _, _ = name.partition(":")
    modules = importlib.import_module("suite").discover()
    if module not in modules:
        raise SystemExit(f"unknown module {module!r}; modules are {sorted(modules)}")
    path = modules[module]
    mod = importlib.import_module(path.stem)
    argv = ["--quick", "--repeat", "1", "--out", str(BENCH.parent / "scratch" / f"profile-{module}.json")]
    profile = cProfile.Profile()
    start = time.perf_counter()
    profile.runcall(mod.main, argv) if _takes_argv(mod.main) else profile.runcall(_with_argv, mod.main, path, argv)
    info.update(profiled_s=time.perf_counter() - start, scope=f"the whole module ({path.name} {' '.join(argv[:3])})")
    return profile, info


def _takes_argv(fn) -> bool:
    import inspect

    return bool(inspect.signature(fn).parameters)


def _with_argv(fn, path, argv):
    saved = sys.argv
    sys.argv = [str(path), *argv]
    try:
        return fn()
    finally:
        sys.argv = saved


def write_profile(name: str, profile: cProfile.Profile, info: dict, out_dir: Path, top: int) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{slug(name)}.txt"
    head = [f"# profile of {name} (cProfile; {info['scope']})"]
    if info.get("size") is not None:
        head.append(f"# size {info['size']:,}" + (f", {info['events']:,} events" if info.get("events") else ""))
    if "unprofiled_s" in info:
        head.append(f"# one run: {info['unprofiled_s']:.3f} s unprofiled, {info['profiled_s']:.3f} s profiled")
    else:
        head.append(f"# {info['profiled_s']:.1f} s profiled")
    head.append("# top by own time: " + "; ".join(f"{f} {own:.3f} s" for f, own, _ in summary(profile)))
    body = [
        f"## top {top} by cumulative time",
        stats_text(profile, "cumulative", top),
        f"## top {top} by own time (tottime)",
        stats_text(profile, "tottime", top),
    ]
    path.write_text("\n".join(head) + "\n\n" + "\n".join(body))
    return path


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("workloads", nargs="*", help="module:workload, as the report names them")
    ap.add_argument("--quick", action="store_true", help="the quick-mode sizes")
    ap.add_argument("--top", type=int, default=30, help="functions listed per table")
    ap.add_argument("--out-dir", default=None, help="default bench/results/<timestamp>/profiles")
    ap.add_argument("--list", action="store_true", help="list the workloads profiled on their own")
    args = ap.parse_args(argv)
    if args.list or not args.workloads:
        print("\n".join(PROFILES))
        return 0
    out_dir = Path(args.out_dir or BENCH / "results" / datetime.now().strftime("%Y%m%d-%H%M%S") / "profiles")
    for name in args.workloads:
        if ":" not in name:
            raise SystemExit(f"{name!r}: name a workload as module:workload (see --list)")
        profile, info = profile_workload(name, args.quick)
        path = write_profile(name, profile, info, out_dir, args.top)
        print(f"{name}: {path}")
        for func, own, cum in summary(profile):
            print(f"    {own:8.3f} s own {cum:8.3f} s cumulative  {func}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
