"""What a parallel walk of Grep and Sum could cost per thread: hand-written kernels, no tidal engine.

Usage::

    python bench/tx_bound.py [--events 200000] [--repeat 9]

Three numba kernels over the GS events of ``tidal.tx.apps.gs`` (10 reads or 10 writes per
event), each timed by the CPU time of the thread running it (median of ``--repeat``):

- ``serial``: one loop, every operation applied in timestamp order (what ``scheduler="serial"``
  compiles to, without the engine around it);
- ``owner scan``: the same loop applying only the operations on records that thread 0 owns (a hash
  of the record's block of 16, as the owner lists use): with two threads each would run this, so
  it is the per-thread cost of a parallel walk that needs no placement pass at all;
- ``read merge``: putting the two threads' read values back into one output row per read.

On the project's 2-core machine (23 Nov): serial 10.6 ns/event, owner scan 56 ns/event, read
merge 35 ns/event. The owner test is a branch the CPU cannot predict (each record is either
thread's, at random), which costs more than the operation it skips: with per-record owners, each
thread pays more than the whole serial walk. This is the bound on ``chains`` over ``serial`` on
two cores that ``docs/transactions.md`` discusses.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numba
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tidal.tx.apps import gs  # noqa: E402

KEYS = ", ".join(f"k{s}" for s in range(gs.LENGTH))
OWN = "((((k >> 4) * 2654435761) & 0xFFFFFFFF) >> 31) == me"


def _source() -> str:
    serial = [f"def serial(kind, w, {KEYS}, v, out):", "    for i in range(len(kind)):", "        if kind[i] == 0:"]
    serial += [f"            out[{s}, i] = v[k{s}[i]]" for s in range(gs.LENGTH)] + ["        else:"]
    serial += [f"            v[k{s}[i]] = w[i] + {s}" for s in range(gs.LENGTH)]
    owned = [f"def owned(me, kind, w, {KEYS}, v, out):", "    for i in range(len(kind)):", "        if kind[i] == 0:"]
    for s in range(gs.LENGTH):
        owned += [f"            k = k{s}[i]", f"            if {OWN}:", f"                out[{s}, i] = v[k]"]
    owned.append("        else:")
    for s in range(gs.LENGTH):
        owned += [f"            k = k{s}[i]", f"            if {OWN}:", f"                v[k] = w[i] + {s}"]
    merge = [f"def merge({KEYS}, out0, out1, out):", "    me = 1"]
    for s in range(gs.LENGTH):
        merge += [f"    for i in range(len(k{s})):", f"        k = k{s}[i]"]
        merge += [f"        out[{s}, i] = out1[{s}, i] if {OWN} else out0[{s}, i]"]
    deco = "@numba.njit(nogil=True)\n"
    return "\n\n".join(deco + "\n".join(f) for f in (serial, owned, merge)) + "\n"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--events", type=int, default=200_000)
    ap.add_argument("--repeat", type=int, default=9)
    args = ap.parse_args(argv)
    n = args.events
    scope: dict = {"numba": numba, "np": np}
    exec(compile(_source(), "<tx_bound>", "exec"), scope)
    data = gs.generate(n, partitions=2)
    kind, w = data["kind"].to_numpy(), data["w"].to_numpy()
    keys = [data[f"k{s}"].to_numpy() for s in range(gs.LENGTH)]
    v = np.arange(10_000, dtype=np.int64)
    out = np.zeros((gs.LENGTH, n), np.int64)
    runs = {
        "serial": lambda: scope["serial"](kind, w, *keys, v, out),
        "owner scan": lambda: scope["owned"](0, kind, w, *keys, v, out),
        "read merge": lambda: scope["merge"](*keys, out, out, out),
    }
    for fn in runs.values():
        fn()  # compile
    for name, fn in runs.items():
        times = []
        for _ in range(args.repeat):
            start = time.thread_time()
            fn()
            times.append(time.thread_time() - start)
        print(f"{name:<11} {statistics.median(times) / n * 1e9:6.1f} ns/event (CPU of its thread)")


if __name__ == "__main__":
    main()
