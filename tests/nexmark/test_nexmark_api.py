"""The stateful NEXMark queries in tidal's Python API (bench/nexmark/api.py) equal DuckDB's answers, in
order and out of order through the sources' watermark."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from test_nexmark_queries import SMALL, on_time, rows

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from nexmark import api  # noqa: E402
from nexmark.duckdb_sql import API_ORACLE, answer  # noqa: E402
from nexmark.generator import Config, generate  # noqa: E402

SECOND = api.SECOND


@pytest.fixture(scope="module", params=[0, 3_000], ids=["in-order", "out-of-order"])
def tables(request):
    return generate(Config(**{**SMALL.__dict__, "max_delay_ms": request.param}))


def run(name: str, t: dict):
    if name == "q4":
        return api.final(api.q4(t["auction"], t["bid"]))
    if name == "q5":
        return api.windows(api.q5(t["bid"]), 10 * SECOND, 2 * SECOND)
    if name == "q7":
        return api.windows(api.q7(t["bid"]), 10 * SECOND, 10 * SECOND)
    return api.windows(api.q8(t["person"], t["auction"]), 10 * SECOND, 10 * SECOND)


@pytest.mark.parametrize("name", ["q4", "q5", "q7", "q8"])
def test_api_query_equals_duckdb(name, tables):
    got = run(name, tables)
    assert got.num_rows > 0
    assert rows(got) == rows(answer(name, tables, API_ORACLE))


@pytest.mark.parametrize("name", ["q5", "q7"])
def test_api_drops_rows_behind_the_watermark(name):
    t = generate(Config(**{**SMALL.__dict__, "events": 2_500, "max_delay_ms": 9_000}))
    kept = on_time(t["bid"], api.WATERMARK_MS)
    assert 0 < kept.num_rows < t["bid"].num_rows
    assert rows(run(name, t)) == rows(answer(name, {**t, "bid": kept}, API_ORACLE))
