"""A durable API run over a Redis Stream, in its own process (test_redis.py kills it and runs it again).

python redis_child.py URL STREAM STOP_ID OUTPUT STATE [--kill-at-checkpoint N | --kill-in-save N]
"""

from __future__ import annotations

import argparse
import os
import signal

import tidal
from tidal import agg
from tidal.state.store import CheckpointStore


def pipeline(stream: tidal.Stream) -> tidal.Stream:
    return stream.tumbling_window(1_000).group_aggregate("k", agg.count(), agg.sum("v"))


def main() -> None:
    parser = argparse.ArgumentParser()
    for name in ("url", "stream", "stop", "output", "state"):
        parser.add_argument(name)
    parser.add_argument("--kill-at-checkpoint", type=int)
    parser.add_argument("--kill-in-save", type=int)
    args = parser.parse_args()

    def kill() -> None:
        os.kill(os.getpid(), signal.SIGKILL)

    if args.kill_in_save is not None:
        save, calls = CheckpointStore.save, [0]

        def dying_save(self, *a, **k):
            calls[0] += 1
            if calls[0] == args.kill_in_save:
                kill()
            return save(self, *a, **k)

        CheckpointStore.save = dying_save

    saved = [0]  # checkpoints saved by this process (the store's numbers go on across restarts)

    def on_checkpoint(seq: int) -> None:
        saved[0] += 1
        if saved[0] == args.kill_at_checkpoint:
            kill()

    source = tidal.from_redis(args.url, args.stream, time="t", stop=args.stop, batch_size=40, block_ms=50)
    pipeline(source).run_durable(args.output, args.state, every_messages=3, on_checkpoint=on_checkpoint)


if __name__ == "__main__":
    main()
