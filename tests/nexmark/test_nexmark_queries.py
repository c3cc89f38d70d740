"""Every NEXMark query tidal runs equals DuckDB's answer on generated data, with the tables in event-time
order and out of order (bounded delay) through ``max_diff_watermark``; the ones tidal cannot run are
refused with an error naming the construct."""

from __future__ import annotations

import sys
from datetime import datetime
from decimal import Decimal
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tidal.core.errors import PlanError

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from nexmark import NOT_SUPPORTED, QUERIES, run_sql  # noqa: E402
from nexmark.duckdb_sql import ORACLE, answer  # noqa: E402
from nexmark.generator import Config, generate, write  # noqa: E402

# 5,000 events over 50 s of event time: 100 people, 300 auctions, 4,600 bids; five 10 s windows
SMALL = Config(events=5_000, first_event_rate=100, seed=7)
WATERMARK_OFFSET_MS = 4_000  # the queries' max_diff_watermark offset


def _value(v):
    if isinstance(v, Decimal):
        v = float(v)
    if isinstance(v, float):
        return float(f"{v:.12g}")
    if isinstance(v, datetime):
        return v.replace(tzinfo=None)
    return v


def rows(table: pa.Table) -> list[tuple]:
    columns = [c.to_pylist() for c in table.columns]
    return sorted((tuple(_value(v) for v in row) for row in zip(*columns, strict=True)), key=repr)


@pytest.fixture(scope="module", params=[0, 3_000], ids=["in-order", "out-of-order"])
def data(request, tmp_path_factory):
    config = Config(**{**SMALL.__dict__, "max_delay_ms": request.param})
    directory = tmp_path_factory.mktemp(f"nexmark-{request.param}")
    write(directory, config)
    return directory, {
        name: pq.read_table(directory / f"{name}.parquet") for name in ("person", "auction", "bid", "side_input")
    }


def test_every_query_has_a_file_and_an_oracle_or_a_refusal():
    for name in QUERIES:
        assert (Path(__file__).resolve().parents[2] / "bench" / "nexmark" / "queries" / f"{name}.sql").exists()
        assert (name in ORACLE) != (name in NOT_SUPPORTED), name


@pytest.mark.parametrize("name", sorted(ORACLE, key=lambda q: int(q[1:])))
def test_query_equals_duckdb(name, data):
    directory, tables = data
    got = run_sql(name, directory)
    want = answer(name, tables)
    assert got.num_rows > 0, f"{name}: the test data gives an empty answer; it checks nothing"
    assert got.num_columns == want.num_columns
    assert rows(got) == rows(want), name


@pytest.mark.parametrize("name", sorted(NOT_SUPPORTED))
def test_refused_queries_name_the_construct(name, data):
    directory, _ = data
    with pytest.raises(PlanError, match=f"{NOT_SUPPORTED[name]}.*not supported|not supported.*{NOT_SUPPORTED[name]}"):
        run_sql(name, directory)


def on_time(bid: pa.Table, offset_ms: int) -> pa.Table:
    """The rows of ``bid`` (in arrival order) that a watermark ``offset_ms`` behind the largest time seen
    so far does not make late: a row is late when its time is before the watermark when it arrives."""
    t = bid.column("date_time").cast(pa.int64()).to_numpy()
    seen = np.maximum.accumulate(np.concatenate([[np.iinfo(np.int64).min + offset_ms], t[:-1]]))
    return bid.filter(pa.array(t >= seen - offset_ms))


@pytest.mark.parametrize("name", ["q0", "q5", "q7", "q11", "q17"])
def test_rows_later_than_the_watermark_are_dropped(name, tmp_path):
    # delays up to 9 s against a 4 s watermark: some bids arrive behind the watermark and are left out
    config = Config(**{**SMALL.__dict__, "events": 2_500, "max_delay_ms": 9_000})
    write(tmp_path, config)
    tables = generate(config)
    kept = on_time(tables["bid"], WATERMARK_OFFSET_MS)
    assert 0 < kept.num_rows < tables["bid"].num_rows
    got = run_sql(name, tmp_path)
    assert rows(got) == rows(answer(name, {**tables, "bid": kept}))
