"""The egress views (``to_intervals``, ``to_changelog``, ``to_events``) against plain per-row Python.

``intervals_from_table`` is columnar (:mod:`tidal.core.canonical_columnar`); its oracle is
``layers(deltas_from_physical(...))`` of :mod:`tidal.core.canonical`, the reference evaluator's own
canonical form, on random physical streams whose payloads mix nulls, strings, floats, lists,
structs, dictionaries and maps, with duplicates, equal times, unmatched ends and random chunking.
"""

from __future__ import annotations

import math
from itertools import pairwise

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from streams import lifetimes, physical_table

import tidal
from tidal import INFINITY
from tidal.core.canonical import _sort_key, deltas_from_physical, freeze, layers
from tidal.core.canonical_columnar import payload_ids, sort_order
from tidal.io.egress import changelog_from_table, events_from_table, intervals_from_table

floats = st.floats(allow_nan=False) | st.sampled_from([0.0, -0.0, math.inf, -math.inf])
texts = st.text(alphabet=st.characters(codec="utf-8"), max_size=4)

# (arrow type, strategy of non-null Python values); lists and structs hold no nulls: the oracle's tuple order
# cannot compare None with a value
COLUMN_KINDS = {
    "int": (pa.int64(), st.integers(-3, 3)),
    "float": (pa.float64(), floats),
    "string": (pa.string(), texts),
    "large_string": (pa.large_string(), texts),
    "binary": (pa.binary(), st.binary(max_size=3)),
    "bool": (pa.bool_(), st.booleans()),
    "list_int": (pa.list_(pa.int64()), st.lists(st.integers(-2, 2), max_size=3)),  # top_k results
    "list_string": (pa.large_list(pa.string()), st.lists(texts, max_size=3)),  # distinct results
    "list_float": (pa.list_(pa.float64(), 2), st.lists(floats, min_size=2, max_size=2)),
    "struct": (
        pa.struct([("z", pa.int64()), ("a", pa.string())]),
        st.fixed_dictionaries({"z": st.integers(0, 2), "a": texts}),
    ),
    "dictionary": (pa.dictionary(pa.int32(), pa.string()), texts),
    "map": (
        pa.map_(pa.string(), pa.int64()),
        st.lists(st.tuples(st.sampled_from("ab"), st.integers(0, 2)), max_size=2),
    ),
    "date": (pa.date32(), st.dates()),
    "null": (pa.null(), st.none()),
}


@st.composite
def payload_columns(draw, max_columns=3):
    """``[(name, arrow type, pool of values)]``: small pools so that payloads repeat."""
    kinds = draw(
        st.lists(
            st.sampled_from(sorted(COLUMN_KINDS)), min_size=draw(st.sampled_from([0, 1, 1, 1])), max_size=max_columns
        )
    )
    columns = []
    for i, kind in enumerate(kinds):
        arrow_type, values = COLUMN_KINDS[kind]
        pool = draw(st.lists(values, min_size=1, max_size=4)) + [None]
        columns.append((f"c{i}_{kind}", arrow_type, pool))
    return columns


@st.composite
def physical_streams(draw, max_events=30, unmatched_ends=False, only_intervals=False, shuffle=False):
    """A physical table (intervals, start edges, end edges after their starts) with random payloads.
    ``only_intervals``: every row an interval (the fast path of ``layers_table``); ``shuffle``: rows not
    in sync order."""
    columns = draw(payload_columns())
    n = draw(st.integers(0, max_events))
    shapes = ["interval"] * 3 + ["edges"] * 3 + ["open", "empty"] + ["end"] * (unmatched_ends and draw(st.booleans()))
    if only_intervals:
        shapes = ["interval"]
    # times spread past what packs into one int64 key now and then (the sorts fall back to lexsort)
    offset, scale = draw(st.sampled_from([(0, 1), (0, 1), (-(2**61), 1), (0, 2**40)]))
    rows = []  # (sync, other, payload tuple)
    for _ in range(n):
        payload = tuple(draw(st.sampled_from(pool)) for _, _, pool in columns)
        start = offset + scale * draw(st.integers(0, 12))  # a narrow range: many equal times
        shape = draw(st.sampled_from(shapes))
        end = start + scale * draw(st.integers(1, 6))
        if shape == "interval":
            rows.append((start, end, payload))
        elif shape == "edges":
            rows += [(start, INFINITY, payload), (end, start, payload)]
        elif shape == "open":
            rows.append((start, INFINITY, payload))
        elif shape == "empty":  # [t, t): an interval that adds and removes at once
            rows.append((start, start, payload))
        else:  # an end edge whose start is missing (unless another event of the payload covers it)
            rows.append((end, start, payload))
    rows.sort(key=lambda r: r[0])
    if shuffle:
        rows = draw(st.permutations(rows))
    table = _table(rows, columns)
    # arrays with offsets and several chunks, as query output has
    cut = draw(st.integers(1, 8))
    if draw(st.booleans()) and table.num_rows:
        table = pa.concat_tables([_table(rows[:1], columns), table]).slice(1)
    return pa.Table.from_batches(table.to_batches(max_chunksize=cut), table.schema)


def _table(rows, columns) -> pa.Table:
    arrays = {
        "sync_time": pa.array([r[0] for r in rows], pa.int64()),
        "other_time": pa.array([r[1] for r in rows], pa.int64()),
    }
    for i, (name, arrow_type, _) in enumerate(columns):
        values = [r[2][i] for r in rows]
        if pa.types.is_dictionary(arrow_type):
            arrays[name] = pa.array(values, arrow_type.value_type).dictionary_encode()
        else:
            arrays[name] = pa.array(values, arrow_type)
    schema = pa.schema([pa.field(n, a.type) for n, a in arrays.items()])
    return pa.table(arrays, schema=schema)


def oracle_layers(table: pa.Table):
    """The plain-Python canonical form: ``layers(deltas_from_physical(...))`` on Python rows."""
    names = [n for n in table.column_names if n not in ("sync_time", "other_time")]
    cols = [table.column(n).to_pylist() for n in names]
    rows = list(zip(*cols, strict=True)) if cols else [()] * table.num_rows
    sync, other = table.column("sync_time").to_pylist(), table.column("other_time").to_pylist()
    return layers(deltas_from_physical(sync, other, rows))


def as_layers(result: pa.Table):
    payload = result.drop_columns(["start", "end"])
    cols = [payload.column(i).to_pylist() for i in range(payload.num_columns)]
    rows = list(zip(*cols, strict=True)) if cols else [()] * result.num_rows
    return [
        (s, e, freeze(p)) for s, e, p in zip(result["start"].to_pylist(), result["end"].to_pylist(), rows, strict=True)
    ]


def outcome(fn):
    try:
        return fn(), None
    except ValueError as e:
        return None, str(e)


@settings(max_examples=300)
@given(physical_streams(unmatched_ends=True))
def test_intervals_equal_the_python_canonical_form(table):
    want, want_error = outcome(lambda: oracle_layers(table))
    got, got_error = outcome(lambda: intervals_from_table(table))
    assert got_error == want_error  # a negative multiplicity: the same payload and time
    if want_error is None:
        # repr tells -0.0 from 0.0 and 1 from True: the first row's value stands for the payload, as in the oracle
        assert repr(as_layers(got)) == repr(want)
        assert got.column_names == ["start", "end", *table.column_names[2:]]
        assert got.schema.types == [pa.int64(), pa.int64(), *table.schema.types[2:]]


@settings(max_examples=300)
@given(st.data())
def test_intervals_only_tables_equal_the_python_canonical_form(data):
    # all intervals: separate ones take the fast path, touching or overlapping ones the general one
    table = data.draw(physical_streams(max_events=12, only_intervals=True, shuffle=data.draw(st.booleans())))
    got = intervals_from_table(table)
    assert repr(as_layers(got)) == repr(oracle_layers(table))
    assert got.schema.types == [pa.int64(), pa.int64(), *table.schema.types[2:]]


@given(lifetimes(max_events=40))
def test_intervals_of_the_shared_stream_strategy(events):
    table = physical_table(events)
    assert repr(as_layers(intervals_from_table(table))) == repr(oracle_layers(table))


def test_negative_multiplicity_names_the_first_payload_and_time():
    table = pa.table(
        {
            "sync_time": pa.array([1, 3, 5, 6], pa.int64()),
            "other_time": pa.array([INFINITY, 1, 2, 4], pa.int64()),  # start; end; two ends with no start
            "k": ["b", "b", "a", "c"],
        }
    )
    with pytest.raises(ValueError, match=r"payload \('a',\) ends more often than it starts at time 5"):
        intervals_from_table(table)
    # through the Stream API: end edges whose starts were never seen
    stream = tidal.from_arrow(table, time="sync_time", other="other_time")
    with pytest.raises(ValueError, match=r"payload \('a',\) ends more often than it starts at time 5"):
        stream.to_intervals()


def test_layers_of_overlapping_duplicates():
    # payload x: [0,10) twice and [5,20): multiplicity 2,3,1 -> layers [0,20) [0,10) [5,10)
    table = pa.table(
        {
            "sync_time": pa.array([0, 0, 5, 30], pa.int64()),
            "other_time": pa.array([10, 10, 20, INFINITY], pa.int64()),
            "p": pa.array([[1, None], [1, None], [1, None], None], pa.list_(pa.int64())),
        }
    )
    got = intervals_from_table(table).to_pylist()
    assert got == [
        {"start": 0, "end": 10, "p": [1, None]},
        {"start": 0, "end": 20, "p": [1, None]},
        {"start": 5, "end": 10, "p": [1, None]},
        {"start": 30, "end": INFINITY, "p": None},
    ]


def test_nan_payloads_are_one_payload():
    # the Python oracle would see each NaN row as a new payload (distinct objects); here NaN equals NaN
    table = pa.table(
        {
            "sync_time": pa.array([0, 4], pa.int64()),
            "other_time": pa.array([INFINITY, 0], pa.int64()),
            "v": [math.nan, math.nan],
        }
    )
    got = intervals_from_table(table)
    assert got["start"].to_pylist() == [0] and got["end"].to_pylist() == [4] and math.isnan(got["v"][0].as_py())


@given(physical_streams())
def test_payload_ids_follow_the_sort_key_order(table):
    payload = table.drop_columns(["sync_time", "other_time"])
    ids, first_rows = payload_ids(payload)
    rows = (
        [freeze(r) for r in zip(*[c.to_pylist() for c in payload.columns], strict=True)] if payload.num_columns else []
    )
    if not rows:
        assert (ids == 0).all()
        return
    # equal ids exactly for equal payloads, first_rows the first occurrence
    first = {}
    for i, r in enumerate(rows):
        first.setdefault(r, i)
    assert [first[r] for r in rows] == first_rows[ids].tolist()
    assert len(first_rows) == len(first) == int(ids.max()) + 1
    # ids number the payloads in the oracle's sort order
    by_id = [rows[i] for i in first_rows]
    assert by_id == sorted(by_id, key=_sort_key)


def test_payload_ids_of_wide_payloads():
    # four columns of 50k distinct values: their combined codes pass 2**62 and are renumbered on the way
    rng = np.random.default_rng(11)
    n = 100_000
    cols = [rng.integers(-(2**40), 2**40, n) for _ in range(4)]
    cols[3][: n // 2] = cols[3][n // 2 :]  # and rows that repeat
    for c in cols[:3]:
        c[: n // 2] = c[n // 2 :]
    ids, first_rows = payload_ids(pa.table({f"c{i}": c for i, c in enumerate(cols)}))
    order = np.lexsort(cols[::-1])
    ordered = np.stack(cols, axis=1)[order]
    new = np.ones(n, bool)
    new[1:] = (ordered[1:] != ordered[:-1]).any(axis=1)
    want = np.empty(n, np.int64)
    want[order] = np.cumsum(new) - 1
    assert (ids == want).all()
    assert (first_rows[ids[n // 2 :]] == np.arange(n // 2)).all()


def test_many_distinct_values_order_like_python():
    # element codes past one byte: list keys compare element by element, not byte by byte within one
    rng = np.random.default_rng(5)
    n = 3000
    lists = [rng.integers(0, 2000, rng.integers(0, 4)).tolist() for _ in range(n)]
    table = pa.table(
        {
            "sync_time": pa.array(np.zeros(n, np.int64)),
            "other_time": pa.array(rng.integers(1, 3, n)),
            "l": pa.array(lists, pa.list_(pa.int64())),
            "s": pa.array([str(x) for x in rng.integers(0, 5000, n)]),
        }
    )
    assert repr(as_layers(intervals_from_table(table))) == repr(oracle_layers(table))


@given(st.lists(st.tuples(st.integers(-3, 3), st.integers(-(2**62), 2**62), st.integers(0, 1)), max_size=40))
def test_sort_order_is_a_stable_lexicographic_sort(rows):
    keys = [np.array([r[i] for r in rows], np.int64) for i in range(3)]
    for chosen in ([keys[0]], [keys[0], keys[2]], [keys[2], keys[1]]):  # packed, packed, too wide to pack
        order = sort_order(*chosen)
        want = sorted(range(len(rows)), key=lambda i, chosen=chosen: tuple(int(k[i]) for k in chosen))
        assert order.tolist() == want


def python_changelog(table: pa.Table):
    """Per row: an insert at the start of intervals and start edges, a retraction at the end of
    intervals and end edges; sorted by time, retractions first, then inserts and end edges in row order."""
    names = [n for n in table.column_names if n not in ("sync_time", "other_time")]
    rows = table.select(names).to_pylist()
    sync, other = table.column("sync_time").to_pylist(), table.column("other_time").to_pylist()
    inserts = [(s, False, r) for s, o, r in zip(sync, other, rows, strict=True) if o == INFINITY or o >= s]
    end_edges = [(s, True, r) for s, o, r in zip(sync, other, rows, strict=True) if o < s]
    interval_ends = [(o, True, r) for s, o, r in zip(sync, other, rows, strict=True) if s <= o < INFINITY]
    log = sorted(inserts + end_edges + interval_ends, key=lambda x: (x[0], not x[1]))
    return [{"time": t, "undo": u, **r} for t, u, r in log]


@given(physical_streams())
def test_changelog_equals_per_row_python(table):
    got = changelog_from_table(table)
    assert got.schema.types == [pa.int64(), pa.bool_(), *table.schema.types[2:]]
    assert repr(got.to_pylist()) == repr(python_changelog(table))


@given(physical_streams())
def test_events_equal_per_row_python(table):
    names = table.column_names[2:]
    want = [
        (s, o, dict(zip(names, r, strict=True)))
        for s, o, r in zip(
            table.column("sync_time").to_pylist(),
            table.column("other_time").to_pylist(),
            zip(*[table.column(n).to_pylist() for n in names], strict=True) if names else [()] * table.num_rows,
            strict=True,
        )
    ]
    got = events_from_table(table)
    assert repr([tuple(e) for e in got]) == repr(want)


def test_stream_views_agree_at_every_batch_size():
    rng = np.random.default_rng(3)
    n = 2000
    data = pa.table(
        {
            "t": np.sort(rng.integers(0, 500, n)),
            "k": pa.array(rng.choice(["x", "y", None], n).tolist()),
            "v": rng.integers(0, 4, n),
        }
    )
    results = []
    for batch_size in (1, 7, 100_000):
        stream = tidal.from_arrow(data, time="t", batch_size=batch_size).hopping_window(60, 20)
        out = stream.group_aggregate("k", tidal.agg.sum("v"))
        physical = out.to_arrow()
        assert repr(as_layers(out.to_intervals())) == repr(oracle_layers(physical))
        results.append(out.to_intervals())
    assert all(a.equals(b) for a, b in pairwise(results))
