"""A TRIGGER's per-key state in checkpoints: kept in blocks of keys, only touched blocks pickled again.

A query checkpointed after a few messages (and again later, reusing the blocks no key of which
changed), restored into a new query object and run to its end gives the uninterrupted run's
events; a checkpoint after a quiet stretch shares most of its key blocks with the one before.
"""

from __future__ import annotations

import datetime as dt
import pickle
import random
from collections import Counter

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tidal
from tidal import agg
from tidal.io.egress import changelog_from_table
from tidal.ops import trigger
from tidal.plan.nodes.relational import Trigger
from tidal.sql import plan, planner
from tidal.stream.streamable import Stream

from .test_triggers import model, rows_strategy, spec_strategy

COUNTING = "SELECT k, count(*) AS n, sum(v) AS s FROM 'e.csv' GROUP BY k TRIGGER COUNTING 3"
WINDOWED = (
    "SELECT k, window_end, count(*) AS n FROM tumble(source => TABLE(max_diff_watermark(source => TABLE('e.csv'), "
    "time_field => DESCRIPTOR(t), offset => INTERVAL 5 SECONDS)), time_field => DESCRIPTOR(t), "
    "window_length => INTERVAL 1 MINUTE) GROUP BY k, window_end TRIGGER ON WATERMARK"
)


@pytest.fixture
def events(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(planner, "BATCH_ROWS", 16)  # many messages: many places to checkpoint
    monkeypatch.setattr(trigger, "SNAPSHOT_BLOCK", 5)  # many blocks of keys
    rng = random.Random(7)
    t0 = dt.datetime(2024, 1, 1)
    lines = ["t,k,v"] + [
        f"{t0 + dt.timedelta(seconds=3 * i)},k{rng.randint(0, 40)},{rng.randint(-9, 9)}" for i in range(600)
    ]
    (tmp_path / "e.csv").write_text("\n".join(lines) + "\n")


def _rows(table: pa.Table | None) -> list[tuple]:
    return sorted(zip(*(c.to_pylist() for c in table.columns), strict=True), key=repr) if table is not None else []


def _trigger_state(state: dict) -> dict:
    found = [s for op in state["operators"] for s in (op if isinstance(op, list) else [op])
             if isinstance(s, dict) and "key_blocks" in s]  # fmt: skip
    assert len(found) == 1
    return found[0]


@pytest.mark.parametrize("sql", [COUNTING, WINDOWED], ids=["counting", "watermark"])
@pytest.mark.parametrize("cuts", [(1, 3), (4, 9), (12, 13)])
def test_restored_trigger_continues_exactly(events, sql, cuts):
    stream = plan(sql).stream()
    whole = _rows(_whole(stream))
    first = stream.query()
    first.run(max_messages=cuts[0])
    first.checkpoint()  # an earlier checkpoint: the next one reuses its untouched blocks
    first.run(max_messages=cuts[1] - cuts[0])
    state = pickle.loads(pickle.dumps(first.checkpoint()))
    second = stream.query()
    second.restore(state)
    assert second.run()
    combined = pa.concat_tables([t for t in (first.sink.table(), second.sink.table()) if t is not None])
    assert len(whole) > 40
    assert _rows(combined) == whole


def _whole(stream):
    q = stream.query()
    q.run()
    return q.sink.table()


def test_a_checkpoint_rewrites_only_the_blocks_of_touched_keys(events):
    q = plan(COUNTING).stream().query()
    q.run(max_messages=30)
    before = _trigger_state(q.checkpoint())["key_blocks"]
    q.run(max_messages=3)  # a few more messages: a batch of 16 rows touches at most 16 of the 41 keys
    after = _trigger_state(q.checkpoint())["key_blocks"]
    assert len(before) >= 8 and len(after) == len(before)
    reused = sum(a is b for a, b in zip(after, before, strict=True))
    changed = len(after) - reused
    assert reused >= 1 and changed >= 1  # some blocks kept, the touched ones pickled again


# -- random rows, random rules, a checkpoint anywhere: the restored run follows the rules' model ----------
@given(
    rows=rows_strategy,
    spec=spec_strategy,
    batch_size=st.sampled_from([1, 2, 5, 1000]),
    cut=st.integers(0, 60),
)
def test_restored_trigger_matches_the_reference_model(rows, spec, batch_size, cut):
    table = pa.table({name: pa.array([r[i] for r in rows], pa.int64()) for i, name in enumerate("twkv")})
    s = tidal.from_arrow(table, time="t", kind="start", batch_size=batch_size)
    out = s.group_aggregate(["w", "k"], n=agg.count(), s=agg.sum("v"), rows=agg.count())
    stream = Stream(Trigger(out.node, spec, ("w", "k"), "w", "rows"))
    first = stream.query()
    first.run(max_messages=cut)
    state = pickle.loads(pickle.dumps(first.checkpoint()))
    second = stream.query()
    second.restore(state)
    assert second.run()
    parts = [t for t in (first.sink.table(), second.sink.table()) if t is not None and t.num_rows]
    combined = pa.concat_tables(parts) if parts else None
    log = changelog_from_table(combined).to_pylist() if combined is not None else []
    got = Counter((r["time"], r["undo"], r["w"], r["k"], r["n"], r["s"]) for r in log)
    assert got == model(rows, spec)
