"""The four applications of seed 004: each equals its plain Python implementation on small data."""

from __future__ import annotations

import pytest

import tidal
from tidal import tx
from tidal.tx import runs, split
from tidal.tx.apps import APPS


@pytest.mark.parametrize("scheduler", [*tx.SCHEDULERS, "chains-components", "chains-lists"])
@pytest.mark.parametrize("app", sorted(APPS))
def test_each_application_equals_plain_python(app, scheduler, monkeypatch):
    if scheduler.startswith("chains-"):  # threads however small the run (else small runs walk serially)
        monkeypatch.setattr(runs, "PARALLEL_FROM", 0)
        monkeypatch.setattr(split, "CHAINS", scheduler.split("-")[1])  # components, or owner lists
        scheduler = "chains"
    mod = APPS[app]
    size = 300 if app != "tp" else 100
    data = mod.generate(2_000, size=size, skew=0.9, multi=0.5, partitions=2, seed=7)
    make = (lambda: mod.tables(size, balance=150)) if app == "sl" else (lambda: mod.tables(size))
    want_tables, got_tables = make(), make()
    want = mod.python(data, want_tables)
    got = mod.stream(
        tidal.from_arrow(data, time="t"), got_tables, scheduler=scheduler, interval=97, workers=2
    ).to_arrow()
    assert got.drop_columns(["sync_time", "other_time"]).to_pylist() == want
    for name, table in want_tables.items():
        assert got_tables[name].to_dict() == table.to_dict(), name
    if app == "sl":
        assert 0 < sum(not w["committed"] for w in want) < len(want)  # aborts happen
