"""``scheduler="auto"`` (the default): the rule of ``tidal.tx.schedule.pick``, shown by explain(), and
the serial reference's answer whatever it picks."""

from __future__ import annotations

import numba
import numpy as np
import pyarrow as pa
import pytest

import tidal
from tidal import tx
from tidal.core.errors import PlanError
from tidal.tx.schedule import AUTO, CHAINS_FROM, pick


def test_the_rule():
    assert pick(AUTO, 1)[0] == "serial"
    assert pick(AUTO, CHAINS_FROM - 1)[0] == "serial"
    assert pick(AUTO, CHAINS_FROM)[0] == "chains"
    assert pick(AUTO, 16)[0] == "chains"
    for s in tx.SCHEDULERS:  # a scheduler asked for by name runs as asked
        assert pick(s, 1) == (s, "") and pick(s, 16) == (s, "")


def _table():
    return tx.Table("acc", 8, {"n": np.full(8, 50, dtype=np.int64)})


def _access(acc):
    def access(e, t):
        t.read_modify(acc, e.a, "n", lambda v: v - e.x, condition=lambda v: v >= e.x)
        t.read_modify(acc, e.b, "n", lambda v: v + e.x)
        t.read(acc, e.b, "n", name="nb")  # every event: null only where the transaction aborted
        t.read(acc, e.a, "n", name="na", when=e.x > 10)  # some events: the walk's validity bits

    return access


@pytest.mark.parametrize("workers", [1, 2, 4])
def test_auto_is_the_default_and_gives_the_serial_answer(workers):
    rng = np.random.default_rng(workers)
    n = 4000
    data = pa.table(
        {"t": np.arange(n), "a": rng.integers(0, 8, n), "b": rng.integers(0, 8, n), "x": rng.integers(0, 30, n)}
    )
    ref_acc = _table()
    want = tx.reference(data.rename_columns(["time", "a", "b", "x"]), _access(ref_acc))
    acc = _table()
    s = tidal.from_arrow(data, time="t").transact(_access(acc), workers=workers)
    got = s.to_arrow()
    assert got.select(["committed", "nb", "na"]).to_pylist() == want
    assert acc.to_dict() == ref_acc.to_dict()
    picked, why = pick(AUTO, min(workers, numba.config.NUMBA_NUM_THREADS))
    assert f"Transact [{picked}, interval 500" in s.explain() and why in s.explain()


def test_an_unknown_scheduler_names_the_choices():
    with pytest.raises(PlanError, match="'auto'"):
        tidal.from_arrow(pa.table({"t": [1], "a": [0]}), time="t").transact(_access(_table()), scheduler="fast")
