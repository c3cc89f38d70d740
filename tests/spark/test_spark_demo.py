"""``tidal demo --engine spark``: the demo's query inside Spark tasks gives the embedded engine's answer
(which tests/test_demo.py checks against a plain computation): the clicks that arrived late are the
same ones (the sort runs on the arrival order, before Spark's shuffles)."""

from __future__ import annotations

import numpy as np

from tidal.cli import demo


def test_demo_on_spark_gives_the_embedded_answer(spark, capsys):
    clicks, prices = demo.generate(6_000, late_fraction=0.01, seed=3)
    ordered, query = demo.build(clicks, prices)
    embedded = query.to_arrow()
    assert ordered.late_count() == demo.late_reference(np.asarray(clicks["click_time"])) > 0
    assert demo.on_spark(clicks, prices, embedded, None) is True
    out = capsys.readouterr().out
    assert "the same answer as the embedded engine" in out and "shuffle" in out  # Spark's steps printed
    assert f"{ordered.late_count():,} late clicks dropped" in out
