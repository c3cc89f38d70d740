"""A durable query run in its own process by tests/test_durability.py, which kills it part way.

    python tests/durable_child.py OUTPUT_DIR CHECKPOINT_FILE [--kill-at-checkpoint N] [--kill-in-save N]

``--kill-at-checkpoint N`` sends SIGKILL to this process right after checkpoint N is saved;
``--kill-in-save N`` sends it inside the N-th save, after the output was committed but before the
checkpoint reached the database (the window where output must be rolled back on restart).
"""

from __future__ import annotations

import argparse
import os
import signal

import numpy as np
import pyarrow as pa

import tidal
from tidal import agg
from tidal.state.store import CheckpointStore


def make_stream() -> tidal.Stream:
    rng = np.random.default_rng(7)
    n = 20_000
    table = pa.table(
        {
            "t": np.sort(rng.integers(0, 200_000, n)),
            "k": rng.integers(0, 50, n),
            "v": rng.integers(-100, 100, n),
        }
    )
    events = tidal.from_arrow(table, time="t", batch_size=500, punctuate_every=1_000)
    windowed = events.hopping_window(10_000, 2_500).group_aggregate("k", agg.count(), agg.sum("v"), agg.max("v"))
    return windowed.where(lambda e: e.count > 1)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("output")
    parser.add_argument("checkpoints")
    parser.add_argument("--kill-at-checkpoint", type=int)
    parser.add_argument("--kill-in-save", type=int)
    args = parser.parse_args()

    def kill() -> None:
        os.kill(os.getpid(), signal.SIGKILL)

    if args.kill_in_save is not None:
        save = CheckpointStore.save
        calls = [0]

        def dying_save(self, query, fingerprint, state, **kw):
            calls[0] += 1
            if calls[0] == args.kill_in_save:
                kill()
            return save(self, query, fingerprint, state, **kw)

        CheckpointStore.save = dying_save

    def on_checkpoint(seq: int) -> None:
        if seq == args.kill_at_checkpoint:
            kill()

    make_stream().run_durable(args.output, args.checkpoints, every_messages=7, on_checkpoint=on_checkpoint)


if __name__ == "__main__":
    main()
