"""The ``pipeline`` scheduler (``tidal.tx.pipeline``): the serial walk of a batch on the walker thread
while the operator goes on. Outputs and tables equal the serial reference (also in the hypothesis
tests over every scheduler); here: a batch is in flight between messages, a checkpoint taken then
restores exactly, an error in a batch in flight names the event and leaves the tables as before."""

from __future__ import annotations

import pickle

import numpy as np
import pyarrow as pa
import pytest

import tidal
from tidal import tx

from .test_postfuse import fused_post
from .test_postfuse import make_access as fused_access
from .test_postfuse import make_tables as fused_tables
from .test_postfuse import to_table as fused_table
from .test_transact import make_access, make_tables, post, to_table


def rows(count):
    return [(1, k % 5, k % 6, (k * 5) % 6, k % 4, (k * 7) % 26, 1.5) for k in range(count)]


@pytest.mark.parametrize("cut", [0, 1, 2, 3, 5, 8, 13])
@pytest.mark.parametrize("fused", [False, True])
def test_a_checkpoint_with_a_batch_in_flight_restores_exactly(cut, fused):
    if fused:  # the post-process in the walk (tidal.tx.postfuse)
        data = fused_table([(1, k % 3, k % 5, (k * 3) % 8, (k * 7) % 5, k % 11, 0.25) for k in range(90)])
        tabs, access, fn = fused_tables, fused_access, fused_post
    else:  # aborts, reads under a when: the serial walk with the output built after it
        data, tabs, access, fn = to_table(rows(90)), make_tables, make_access, post
    ref_tables = tabs()
    whole = tidal.from_arrow(data, time="t", batch_size=8).transact(access(*ref_tables), fn, scheduler="serial")
    whole = whole.to_arrow()
    final = [t.to_dict() for t in ref_tables]
    tables = tabs()
    start = [t.to_dict() for t in tables]
    s = tidal.from_arrow(data, time="t", batch_size=8).transact(
        access(*tables), fn, scheduler="pipeline", workers=2, interval=5
    )
    first = s.query()
    first.run(max_messages=cut)
    op = next(o for o in first.operators if type(o).__name__ == "TransactOp")
    in_flight = op.flight is not None
    state = pickle.loads(pickle.dumps(first.checkpoint()))
    for t, values in zip(tables, start, strict=True):  # whatever happened since, the checkpoint wins
        t.restore({c: np.asarray(v) * 0 - 1 for c, v in values.items()})
    second = s.query()
    second.restore(state)
    assert second.run()
    combined = pa.concat_tables([first.sink.table(), second.sink.table()], promote_options="permissive")
    assert combined.to_pylist() == whole.to_pylist()
    assert [t.to_dict() for t in tables] == final
    if cut in (2, 5):  # between messages after the first batch: one is in flight
        assert in_flight
    assert op.engine.stats.get("pipelined", 0) > 0 or not in_flight


def test_the_pipeline_walks_on_the_walker_thread_and_equals_serial():
    data = fused_table([(1, k % 3, k % 5, (k * 3) % 8, (k * 7) % 5, k % 11, 0.25) for k in range(5000)])
    outs, dicts = [], []
    for scheduler in ("serial", "pipeline"):
        tables = fused_tables()
        s = tidal.from_arrow(data, time="t", batch_size=700).transact(
            fused_access(*tables), fused_post, scheduler=scheduler, workers=2
        )
        outs.append(s.to_arrow())
        dicts.append([t.to_dict() for t in tables])
    assert outs[0].equals(outs[1]) and dicts[0] == dicts[1]
    stats = s.node.box["last"].stats
    assert stats["pipelined"] == stats["batches"] > 1 and stats["post_fused"] == stats["batches"]


@pytest.mark.parametrize("fail", ["key", "division"])
def test_an_error_in_a_batch_in_flight_names_the_event(fail):
    a, b = fused_tables()

    def access(e, t):
        t.read_modify(a, e.k1, "n", lambda v: v + e.amt, when=e.kind == 0)
        t.read_modify(a, e.k3, "f", (lambda v: v / e.amt) if fail == "division" else (lambda v: v + 1.0))
        t.read(a, e.k1, "n", name="n1")

    good = [(1, 0, 1, 0, 1, 3, 0.0)] * 20
    bad = (1, 1, 9 if fail == "key" else 3, 0, 1, 0, 0.0)
    data = fused_table(good + [bad] + good)
    s = tidal.from_arrow(data, time="t", batch_size=10).transact(
        access, lambda e, r: {"y": r.n1 + 1}, scheduler="pipeline", workers=2, interval=10
    )
    q = s.query()
    with pytest.raises(tx.TransactionError, match="event 20 \\(time 21\\)"):
        q.run()
    # the two batches before it landed; the failing one left nothing behind
    assert a.to_dict()["n"][1] == 100 * 0 + 3 + 3 * 20


def test_two_transacts_over_one_table_walk_in_the_serial_order():
    """The second reads what the first wrote: the first's next batch must not walk before the second
    has taken the batch before (``pipeline.alone``: both walk as ``serial``)."""
    data = to_table(rows(3000))
    outs = []
    for scheduler in ("serial", "pipeline"):
        a, b = make_tables()

        def first(e, t):
            t.read_modify(a, e.k1, "n", lambda v: v + e.amt)

        def second(e, t):
            t.read(a, e.k1, "n", name="seen")
            t.write(a, e.k2, "m", e.amt)

        s = tidal.from_arrow(data, time="t", batch_size=64).transact(first, scheduler=scheduler, workers=2)
        s = s.select("t", "k1", "k2", "amt").transact(second, scheduler=scheduler, workers=2, interval=7)
        outs.append((s.to_arrow().to_pylist(), a.to_dict()))
    assert outs[0] == outs[1]
