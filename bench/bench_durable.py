"""What durability costs: ``run_durable`` against the same query run plainly, and recovery time.

    python bench/bench_durable.py [--quick] [--repeat R] [--out bench/results/durable.json]

Data: N point events (``t`` increasing, ``k`` in [0, 1000), ``v``), in memory as Arrow, batches of
``BATCH`` rows. Workloads:

* ``windowed aggregate``: ``tumbling_window(100_000).group_aggregate("k", count, sum)`` (10,000 events a
  window, 1,000 keys: about one result row per 10 events).
* ``join``: the A-then-B join of ``bench_joins`` (A events with a lifetime of 5,000 ticks (500 events) joined on
  ``k`` with B points).

Engines: ``tidal`` is ``run_durable(out, state)`` (Arrow IPC output files, a checkpoint in SQLite
every second of wall clock, the default); the peer ``plain run`` is the same query collected in
memory (``to_arrow()``). The ratio column is durable events/s over plain events/s (goal: at least
1/1.5, i.e. durability costs at most 1.5x). ``durable, every N messages`` shows the cost of
checkpointing by message count instead (the API's old default was every 200 messages).

Recovery: a join query is stopped half way, with its state holding S alive events; the series
gives the seconds to load and restore its newest checkpoint (what a restart after ``kill -9``
spends before reading input again) against S, and the bytes of the checkpoint.

Checkpoint stores: the same sequence of checkpoints (the join's state, saved every few messages)
written to SQLite (WAL, synchronous=FULL: tidal's store) and to LMDB (``lmdb``, sync on commit),
median seconds per durable commit; see docs/durability.md for the choice.
"""

from __future__ import annotations

import argparse
import pickle
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness  # noqa: E402

import tidal  # noqa: E402
from tidal import agg  # noqa: E402
from tidal.state.store import CheckpointStore  # noqa: E402

BATCH = 10_000
WINDOW = 100_000  # ticks: 10,000 events a window, about one result row per 10 events
LIFETIME = 5_000


def make_data(n: int, seed: int = 3) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table(
        {"t": np.arange(n, dtype=np.int64) * 10, "k": rng.integers(0, 1000, n), "v": rng.integers(0, 100, n)}
    )


def windowed(table: pa.Table) -> tidal.Stream:
    s = tidal.from_arrow(table, time="t", batch_size=BATCH)
    return s.tumbling_window(WINDOW).group_aggregate("k", agg.count(), agg.sum("v"))


def join(table: pa.Table, lifetime: int = LIFETIME) -> tidal.Stream:
    shared = tidal.from_arrow(table, time="t", batch_size=BATCH).multicast()
    a = shared.where(lambda e: e.v < 25).alter_duration(lifetime)
    b = shared.where(lambda e: e.v >= 25 and e.v < 50)
    return a.join(b, "k", "k")


def durable(make, table, every_messages=None, every_seconds=1.0):
    def run():
        work = Path(tempfile.mkdtemp(prefix="tidal-durable-"))
        try:
            make(table).run_durable(
                str(work / "out"), str(work / "state.db"), every_messages=every_messages, every_seconds=every_seconds
            )
        finally:
            shutil.rmtree(work, ignore_errors=True)

    return run


def recovery(n_events: int, repeat: int) -> tuple[list, list, list]:
    """Seconds to load and restore a half-way checkpoint of the join, by alive events in its state."""
    sizes, seconds, nbytes = [], [], []
    for lifetime in (5_000, 50_000, 500_000, 5_000_000):
        table = make_data(n_events)
        q = join(table, lifetime).query()
        q.run(max_messages=len(table) // BATCH)  # about half the messages (each side's batches)
        state = q.checkpoint()
        work = Path(tempfile.mkdtemp(prefix="tidal-recover-"))
        try:
            with CheckpointStore(work / "state.db") as store:
                store.save("q", "f", state)
                nbytes.append(store.written)
            alive = min(lifetime // 10, n_events // 2) // 4  # A events (v < 25) alive at the cut

            def restore():
                with CheckpointStore(work / "state.db") as store:
                    join(table, lifetime).query().restore(store.load("q", "f"))

            runs = harness.timed_runs(restore, repeat)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        sizes.append(alive)
        seconds.append(statistics.median(runs))
    return sizes, seconds, nbytes


def store_commits(n_events: int, repeat: int) -> dict:
    """Median seconds per durable commit of the join's checkpoints, SQLite (tidal's store) and LMDB."""
    table = make_data(n_events)
    q = join(table).query()
    states = []
    while not q.run(max_messages=4):
        states.append(pickle.loads(pickle.dumps(q.checkpoint())))
    out = {}
    work = Path(tempfile.mkdtemp(prefix="tidal-stores-"))
    try:
        times, written, whole = [], 0, 0
        for r in range(repeat):
            with CheckpointStore(work / f"s{r}.db") as store:
                for st in states:
                    start = time.perf_counter()
                    store.save("q", "f", st)
                    times.append(time.perf_counter() - start)
                    written += store.written
                    whole += len(pickle.dumps(st, protocol=5))
        out["sqlite (chunks, WAL, synchronous=FULL)"] = statistics.median(times)
        out["bytes written by the chunked store / whole states"] = written / max(whole, 1)
        try:
            import lmdb
        except ImportError:
            return out
        times = []
        for r in range(repeat):
            env = lmdb.open(str(work / f"l{r}"), map_size=1 << 32, sync=True, metasync=True)
            try:
                for seq, st in enumerate(states):
                    start = time.perf_counter()
                    blob = pickle.dumps(st, protocol=5)
                    with env.begin(write=True) as txn:
                        txn.put(b"q/%d" % seq, blob)
                        txn.delete(b"q/%d" % (seq - 2))
                    times.append(time.perf_counter() - start)
            finally:
                env.close()
        out["lmdb (whole state, sync)"] = statistics.median(times)
        times = []
        for r in range(repeat):
            with CheckpointStore(work / f"w{r}.db") as store:
                for st in states:
                    start = time.perf_counter()
                    blob = pickle.dumps(st, protocol=5)
                    store._db.execute("BEGIN IMMEDIATE")
                    store._db.execute("INSERT OR REPLACE INTO chunks VALUES (?, ?)", (b"whole", blob))
                    store._db.execute("COMMIT")
                    times.append(time.perf_counter() - start)
        out["sqlite (whole state, WAL, synchronous=FULL)"] = statistics.median(times)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return out


def main(argv=None) -> None:
    ap = harness.add_common_args(argparse.ArgumentParser(description=__doc__), "bench/results/durable.json")
    ap.add_argument("--events", type=int, default=None)
    args = ap.parse_args(argv)
    n = args.events or (400_000 if args.quick else 4_000_000)
    table = make_data(n)
    res = harness.Results()
    for name, make in (("windowed aggregate", windowed), ("join", join)):
        make(table).to_arrow()  # compile kernels once
        entries = [
            ("tidal", durable(make, table)),
            ("plain run", lambda make=make: make(table).to_arrow()),
            ("tidal, every 200 messages", durable(make, table, every_messages=200, every_seconds=None)),
        ]
        wall: dict = {e: [] for e, _ in entries}
        cpu: dict = {e: [] for e, _ in entries}
        for r in range(args.repeat + 1):  # rounds, each engine once per round; the first warms up
            for engine, fn in entries:
                start, start_cpu = time.perf_counter(), time.process_time()
                fn()
                if r:
                    wall[engine].append(time.perf_counter() - start)
                    cpu[engine].append(time.process_time() - start_cpu)
        for engine, _ in entries:
            runs = wall[engine]
            res.record(
                name,
                engine,
                statistics.median(runs),
                max(runs) - min(runs),
                n,
                runs,
                cpu_s=statistics.median(cpu[engine]),
            )
    rows = {(r["workload"], r["engine"]): r for r in res.rows}
    for name in ("windowed aggregate", "join"):
        d, p = rows[(name, "tidal")], rows[(name, "plain run")]
        res.note(
            f"{name}: run_durable takes {d['seconds'] / p['seconds']:.2f}x the plain run's wall time "
            f"({d['cpu_s'] / p['cpu_s']:.2f}x its CPU time; goal: at most 1.5x)"
        )
    sizes, seconds, nbytes = recovery(n // 2, args.repeat)
    res.add_series(
        "recovery after a kill (join state)",
        "alive A events in the state",
        "seconds to load and restore",
        sizes,
        {"load + restore": seconds},
        log_x=True,
    )
    for s, sec, b in zip(sizes, seconds, nbytes, strict=True):
        res.note(f"recovery: {s:,} alive events, checkpoint {b / 1e6:.1f} MB: {sec * 1000:.0f} ms to load and restore")
    commits = store_commits(min(n, 400_000), args.repeat)
    for store, sec in commits.items():
        if store.startswith("bytes"):
            res.note(f"checkpoint store: {store}: {sec:.2f}")
        else:
            res.note(f"checkpoint store: {store}: {sec * 1000:.2f} ms per durable commit (join state)")
    res.report(args.out, events=n, batch=BATCH, checkpoint_every_s=1.0, stores=commits)


if __name__ == "__main__":
    main()
