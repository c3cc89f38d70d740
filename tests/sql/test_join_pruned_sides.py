"""Joins whose one side keeps no payload column (``ON o.k > 0``, ``SEMI JOIN ... ON o.k > 0``, a cross
join counted): that side's rows are only numbered in the join's store, and the kernels size their per-row
arrays by the store's count. An Arrow batch without columns has no rows, so storing one left the count at 0
while the kernels wrote rows 0, 1, ...: out of bounds, a native crash (``free(): invalid next size``) or
wrong rows, most often with an empty other side. Checked against DuckDB on the same files; the queries run
several times in one child process, so a crash fails the test instead of killing pytest."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tidal.core.batch import EventBatch
from tidal.ops.join.store import _Store

ROOT = Path(__file__).resolve().parents[2]

QUERIES = [
    "SELECT o.id FROM 'o.parquet' o LEFT JOIN 'i.parquet' i ON o.k > 0",
    "SELECT o.id FROM 'o.parquet' o LEFT JOIN 'i.parquet' i ON o.k > 0 AND i.k > 0",
    "SELECT o.id FROM 'o.parquet' o SEMI JOIN 'i.parquet' i ON o.k > 0",
    "SELECT o.id FROM 'o.parquet' o SEMI JOIN 'i.parquet' i ON o.k > i.k",
    "SELECT o.id FROM 'o.parquet' o ANTI JOIN 'i.parquet' i ON o.k > i.k",
    "SELECT o.id FROM 'o.parquet' o WHERE EXISTS (SELECT 1 FROM 'i.parquet' i WHERE o.k > i.k)",
    "SELECT o.id FROM 'o.parquet' o WHERE NOT EXISTS (SELECT 1 FROM 'i.parquet' i WHERE o.k > i.k)",
    "SELECT i.v FROM 'o.parquet' o RIGHT JOIN 'i.parquet' i ON i.k > 0",
    "SELECT o.id, i.v FROM 'o.parquet' o FULL JOIN 'i.parquet' i ON o.k > i.k",
    "SELECT count(*) AS n FROM 'o.parquet' o CROSS JOIN 'i.parquet' i",
]

# (left rows, right rows): empty left, empty right, both empty, and a right far longer than the left
SIZES = [(0, 3), (3, 0), (0, 0), (0, 2000), (3, 2000)]

CHILD = """
import json, sys
from tidal.sql import plan
out = []
for rep in range(3):
    for sql in json.loads(sys.argv[1]):
        out.append([list(r.values()) for r in plan(sql).result().to_pylist()])
print(json.dumps(out))
"""


def _write(directory: Path, n_left: int, n_right: int) -> None:
    pq.write_table(
        pa.table({"id": pa.array(range(n_left), pa.int64()), "k": pa.array([i % 3 - 1 for i in range(n_left)])}),
        directory / "o.parquet",
    )
    pq.write_table(
        pa.table({"k": pa.array([i % 5 - 2 for i in range(n_right)]), "v": pa.array(range(n_right), pa.int64())}),
        directory / "i.parquet",
    )


def _canonical(rows) -> list[str]:
    return sorted(json.dumps(list(r)) for r in rows)


@pytest.mark.parametrize(("n_left", "n_right"), SIZES)
def test_join_with_a_side_without_payload_columns_as_in_duckdb(tmp_path, n_left, n_right):
    _write(tmp_path, n_left, n_right)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps(QUERIES)], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert proc.returncode == 0, f"exit {proc.returncode}: {proc.stderr[-2000:]}"
    results = json.loads(proc.stdout)
    with contextlib.chdir(tmp_path), duckdb.connect() as con:
        want = [_canonical(con.sql(sql).fetchall()) for sql in QUERIES]
    for j, got in enumerate(results):
        sql = QUERIES[j % len(QUERIES)]
        assert _canonical(got) == want[j % len(QUERIES)], sql


def test_a_store_of_rows_without_columns_counts_them():
    store = _Store()
    batch = EventBatch(pa.array([0, 0, 1], pa.int64()).to_numpy(), pa.array([9] * 3, pa.int64()).to_numpy(), {})
    assert store.append(batch) == 0
    assert store.append(batch) == 3
    present = pa.array([0, 2], pa.int64()).to_numpy()
    assert store.append_present(batch, present) == (6, True)
    assert store.rows == 8
    snap = store.snapshot()
    fresh = _Store()
    fresh.restore(snap)
    assert fresh.rows == 8
    assert fresh.append(batch) == 8
