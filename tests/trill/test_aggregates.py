"""Trill's aggregate tests, re-expressed for tidal's ``aggregate`` / ``group_aggregate`` (``tidal.agg``).

Inputs and expected results from Trill's tests under Sources/Test/SimpleTesting/Aggregates/
(AverageAggregate.cs, CompoundAggregate.cs, CountAggregate.cs, GroupAggregate.cs, MaxAggregate.cs,
MinAggregate.cs, PerKeyAggregate.cs, PercentileAggregates.cs, SumAggregate.cs, TopKAggregate.cs,
WhereAggregate.cs), MIT licence (Copyright (c) Microsoft Corporation).

Which Trill tests are ported here, and which are not and why: tests/trill/README.md.
"""

from __future__ import annotations

import decimal

import pyarrow as pa
import pytest

from tidal import agg
from tidal.core.errors import TidalTypeError
from trill.events import BATCH_SIZES, check, interval, punct, reference, start, stream

POWERS = [interval(1, 5, 1), interval(1, 3, 2), interval(2, 3, 4), interval(2, 4, 8), interval(3, 4, 16), punct()]
TENS = [interval(1, 5, 10), interval(1, 3, 20), interval(2, 3, 30), interval(2, 4, 40), interval(3, 4, 50), punct()]


def _steps(values):
    """Trill's start/end pairs at 1..2, 2..3, 3..4, 4..5 carrying ``values``."""
    return [interval(t, t + 1, v) for t, v in zip(range(1, 5), values, strict=True)]


INTEGER_TYPES = {
    "int": pa.int32(), "long": pa.int64(), "short": pa.int16(), "uint": pa.uint32(), "ulong": pa.uint64(),
    "ushort": pa.uint16(), "byte": pa.uint8(), "sbyte": pa.int8(),
}  # fmt: skip


def _cast(events, arrow_type, batch):
    """The stream of ``events`` with its payload column of ``arrow_type`` (Trill's payload type)."""
    from trill import events as ev

    original = ev.stream(events, batch_size=batch)
    schema = pa.schema([("v", arrow_type)])
    return type(original)(original.node.but(schema=schema, open_messages=_retyped(original, arrow_type)))


def _retyped(original, arrow_type):
    def messages():
        for m in original.node.open_messages():
            if hasattr(m, "columns"):
                m = m.replace(columns={"v": m.columns["v"].cast(arrow_type)})
            yield m

    return messages


@pytest.mark.parametrize("batch", BATCH_SIZES)
@pytest.mark.parametrize("kind", sorted(INTEGER_TYPES))
def test_sum(kind, batch):
    got = _cast(POWERS, INTEGER_TYPES[kind], batch).aggregate(agg.sum("v"))
    check(got, _steps([3, 15, 25, 1]), reference(POWERS).aggregate(agg.sum("v")))


@pytest.mark.parametrize("kind", ["double", "float"])
def test_sum_floating(kind):
    events = [interval(1, 5, 1.0), interval(1, 3, 2.0), punct()]
    got = _cast(events, pa.float64() if kind == "double" else pa.float32(), None).aggregate(agg.sum("v"))
    check(got, [interval(1, 3, 3.0), interval(3, 5, 1.0)], reference(events).aggregate(agg.sum("v")))


def test_sum_decimal():
    """Not supported: tidal's sum takes numbers, not decimals; it says so (no silent float rounding)."""
    d = decimal.Decimal
    events = [interval(1, 5, d("1.5")), interval(1, 3, d("2")), interval(2, 3, d("3.6")), interval(2, 4, d("8.2")),
              interval(3, 4, d("16")), punct()]  # fmt: skip
    trill_expected = _steps([d("3.5"), d("15.3"), d("25.7"), d("1.5")])
    assert reference(events).aggregate(agg.sum("v")).canonical() == reference(trill_expected).canonical()
    with pytest.raises(TidalTypeError, match=r"sum\(v\): not defined for decimal"):
        stream(events).aggregate(agg.sum("v")).to_arrow()


AVERAGE_TYPES = {**INTEGER_TYPES, "double": pa.float64()}


@pytest.mark.parametrize("batch", BATCH_SIZES)
@pytest.mark.parametrize("kind", sorted(AVERAGE_TYPES))
def test_average(kind, batch):
    got = _cast(POWERS, AVERAGE_TYPES[kind], batch).aggregate(agg.average("v"))
    expected = _steps([3.0 / 2, 15.0 / 4, 25.0 / 3, 1.0])
    check(got, expected, reference(POWERS).aggregate(agg.average("v")), digits=9)


COUNT_INPUTS = {
    "no_nulls": [interval(1, 5, "10"), interval(1, 3, "20"), interval(2, 3, "30"), interval(2, 4, "40"),
                 interval(3, 4, "50"), punct()],
    "with_nulls": [interval(1, 5, "10"), interval(1, 3, None), interval(2, 3, "30"), interval(2, 4, "40"),
                   interval(3, 4, "50"), punct()],
    "all_nulls": [interval(1, 5, None), interval(1, 3, None), interval(2, 3, None), interval(2, 4, None),
                  interval(3, 4, None), punct()],
}  # fmt: skip


@pytest.mark.parametrize("batch", BATCH_SIZES)
@pytest.mark.parametrize("case", ["no_nulls", "with_nulls"])
def test_count(case, batch):
    events = COUNT_INPUTS[case]
    got = stream(events, batch_size=batch).aggregate(agg.count())
    check(got, _steps([2, 4, 3, 1]), reference(events).aggregate(agg.count()))


@pytest.mark.parametrize("batch", BATCH_SIZES)
@pytest.mark.parametrize("case", sorted(COUNT_INPUTS))
def test_count_not_null(case, batch):
    events = COUNT_INPUTS[case]
    expected = {"no_nulls": [2, 4, 3, 1], "with_nulls": [1, 3, 3, 1], "all_nulls": [0, 0, 0, 0]}[case]
    got = stream(events, batch_size=batch).aggregate(agg.count_not_null("v"))
    check(got, _steps(expected), reference(events).aggregate(agg.count_not_null("v")))


@pytest.mark.parametrize("batch", BATCH_SIZES)
def test_max(batch):
    got = stream(TENS, batch_size=batch).aggregate(agg.max("v"))
    check(got, _steps([20, 40, 50, 10]), reference(TENS).aggregate(agg.max("v")))


@pytest.mark.parametrize("batch", BATCH_SIZES)
def test_min(batch):
    events = [interval(1, 5, 50), interval(1, 3, 40), interval(2, 3, 30), interval(2, 4, 20), interval(3, 4, 10)]
    got = stream(events, batch_size=batch).aggregate(agg.min("v"))
    check(got, _steps([40, 20, 10, 50]), reference(events).aggregate(agg.min("v")))


@pytest.mark.parametrize("batch", BATCH_SIZES)
def test_compound_aggregate(batch):
    expected = _steps([(3, 2), (15, 4), (25, 3), (1, 1)])
    got = stream(POWERS, batch_size=batch).aggregate(sum=agg.sum("v"), count=agg.count())
    check(got, expected, reference(POWERS).aggregate(sum=agg.sum("v"), count=agg.count()))
    counts = {f"c{i}": agg.count() for i in range(14)}
    wide = stream(POWERS, batch_size=batch).aggregate(sum=agg.sum("v"), **counts)
    check(wide.select(lambda e: {"sum": e.sum, "count": sum(getattr(e, f"c{i}") for i in range(14)) // 14}), expected)


KEYED = [start(0, v) for v in (100, 105, 104, 200, 201, 300, 302, 303)] + [punct()]


@pytest.mark.parametrize("batch", BATCH_SIZES)
@pytest.mark.parametrize("extra_counts", [0, 13])
def test_group_aggregate(extra_counts, batch):
    counts = {f"c{i}": agg.count() for i in range(extra_counts)}
    got = stream(KEYED, batch_size=batch).group_aggregate(
        lambda e: e.v // 100, count=agg.count(), sum=agg.sum(lambda e: e.v % 100), **counts
    )
    check(
        got.select(lambda e: {"v": e.key * 100 + e.count * 10 + e.sum}), [start(0, 139), start(0, 221), start(0, 335)]
    )


BY_KEY = {  # Trill's TestAggregateByKey 1..3: (aggregates, result) per key
    "1": ({"count": agg.count()}, lambda e: e.key * 100 + e.count * 10, [130, 220, 330]),
    "2": ({"sum": agg.sum(lambda e: e.v & 0xFFFF)}, lambda e: e.key * 100 + e.sum * 10, [3190, 4210, 9350]),
    "3": ({"sum": agg.sum(lambda e: e.v & 0xFFFF), "count": agg.count()}, lambda e: e.key * 100 + e.sum * 10,
          [3190, 4210, 9350]),
}  # fmt: skip


@pytest.mark.parametrize("batch", BATCH_SIZES)
@pytest.mark.parametrize("case", sorted(BY_KEY))
def test_aggregate_by_key(case, batch):
    fns, result, expected = BY_KEY[case]
    s = stream(KEYED, batch_size=batch)
    # Trill declares IsConstantDuration(true, infinity): start edges only, which tidal can be told too
    declared = type(s)(s.node.but(props=s.node.props.but(start_edge_only=True)))
    for source in (s, declared):
        got = source.group_aggregate(lambda e: e.v // 100, **fns).select(lambda e: {"v": result(e)})
        check(got, [start(0, v) for v in expected])


def test_aggregate_by_key_tuple():
    got = stream(KEYED).group_aggregate(lambda e: True, count=agg.count())
    check(got, [start(0, (True, 8))], reference(KEYED).group_aggregate(lambda e: True, count=agg.count()))


@pytest.mark.parametrize("batch", BATCH_SIZES)
@pytest.mark.parametrize("kind", ["disc", "cont"])
def test_percentile(kind, batch):
    fn = agg.percentile_disc("v", 0.6) if kind == "disc" else agg.percentile_cont("v", 0.6)
    expected = [20.0, 30.0, 40.0, 10.0] if kind == "disc" else [16.0, 28.0, 42.0, 10.0]
    got = stream(TENS, batch_size=batch).aggregate(fn)
    check(got, _steps(expected), reference(TENS).aggregate(fn), digits=9)


TOP_3 = [
    interval(1, 2, 20), interval(1, 2, 10), interval(2, 3, 40), interval(2, 3, 30), interval(2, 3, 20),
    interval(3, 4, 50), interval(3, 4, 40), interval(3, 4, 10), interval(4, 5, 10),
]  # fmt: skip


@pytest.mark.parametrize("batch", BATCH_SIZES)
@pytest.mark.parametrize("with_count", [False, True], ids=["alone", "with_count"])
def test_top_k(with_count, batch):
    extra = {"count": agg.count()} if with_count else {}
    got = stream(TENS, batch_size=batch).aggregate(top=agg.top_k("v", 3), **extra)
    check(got.select_many(lambda e: [{"v": x} for x in e.top]), TOP_3)
    ref = reference(TENS).aggregate(top=agg.top_k("v", 3), **extra)
    check(got, [interval(s, e, p) for s, e, p in ref.events])


@pytest.mark.parametrize("batch", BATCH_SIZES)
def test_where_aggregate(batch):
    fns = {
        "a": agg.count(),
        "b": agg.count_not_null(lambda e: e.v if e.v >= 30 else None),
        "c": agg.count_not_null(lambda e: e.v if 30 <= e.v <= 40 else None),
    }
    got = stream(TENS, batch_size=batch).aggregate(**fns)
    ref = reference(TENS).aggregate(**fns)
    check(got.select(lambda e: {"v": e.a * 100 + e.b * 10 + e.c}), _steps([200, 422, 321, 100]))
    check(got, [interval(s, e, p) for s, e, p in ref.events])
