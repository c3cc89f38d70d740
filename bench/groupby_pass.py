"""The compiled GROUP BY pass alone (issue 19): ``hashagg_jit.key_groups_more`` over decoded columns, CPU medians.

* **taxi**: the 2M-row taxi Parquet file's ``passenger_count`` (a nullable DOUBLE key of 8 values) with
  the sum of ``total_amount``, in the pieces ``tidal query`` groups (its row groups, decoded once here);
* **high cardinality**: 2M int64 keys all distinct, 2M ints of 1M values, 2M floats of 1M values, and
  2M floats of 8 values (no nulls, no weights): the table's growth and a new group's path.

Decoding and planning are not measured (``bench/ab_taxi.py`` measures the whole query).

    python bench/groupby_pass.py [--repeat 21]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numba  # noqa: F401  (the compiled passes need it loaded)
import numpy as np


def _median_ms(fn, repeat: int) -> float:
    fn()  # compiled (or loaded from numba's cache) and warm
    times = []
    for _ in range(repeat):
        start = time.process_time()
        fn()
        times.append(time.process_time() - start)
    return statistics.median(times) * 1000


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=21)
    ap.add_argument("--data", default=str(Path(__file__).parent / ".data"))
    args = ap.parse_args(argv)
    sys.path.insert(0, str(Path(__file__).parent))
    import bench_sql

    from tidal.io.parquet_read import column_indices, open_reader
    from tidal.sql import hashagg, hashagg_jit

    path = bench_sql.ensure_files(2_000_000, Path(args.data).resolve())["parquet"]
    reader = open_reader(str(path))
    indices = column_indices(reader, ["passenger_count", "total_amount"])
    pieces = [reader.read_row_groups([g], column_indices=indices) for g in range(reader.metadata.num_row_groups)]

    def taxi():
        acc = hashagg.PieceGroups()
        for piece in pieces:
            acc.add(piece.column(0).chunk(0), piece.column(1).chunk(0))

    print(f"taxi (2M rows, 8 groups and nulls, COUNT and SUM): {_median_ms(taxi, args.repeat):.2f} ms CPU")
    rng = np.random.default_rng(1)
    n = 2_000_000
    cases = {
        "2M distinct ints": (rng.permutation(n).astype(np.int64), False),
        "ints of 1M values": (rng.integers(0, 1_000_000, n), False),
        "floats of 1M values": ((rng.integers(0, 1_000_000, n) / 3.0).view(np.int64), True),
        "floats of 8 values": (rng.integers(0, 8, n).astype(np.float64).view(np.int64), True),
    }
    no_bitmap, no_weights = np.zeros(1, np.uint8), np.zeros(1)
    for name, (bits, is_float) in cases.items():

        def run(bits=bits, is_float=is_float):
            hashagg_jit.key_groups_more(
                bits, is_float, no_bitmap, 0, False, no_weights, False, 0, *hashagg_jit.new_tables()
            )

        print(f"{name} (2M rows): {_median_ms(run, max(3, args.repeat // 4)):.1f} ms CPU")
    return 0


if __name__ == "__main__":
    sys.exit(main())
