"""A growing file read by :class:`tidal.io.live.TextFeed`: stopped after any message, checkpointed and
restored into a new query, it reads exactly the rest (its position is the byte offset after the
last line consumed, plus the punctuations of a batch not yet delivered); a batch is cut by size
and by wall clock; lines appended later are read by a feed that follows the file."""

from __future__ import annotations

import pickle
import threading
import time

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tidal
from tidal import agg
from tidal.core.batch import EventBatch
from tidal.core.messages import Punctuation
from tidal.core.time import INFINITY
from tidal.io.live import FileBytes, LineParser, TextFeed
from tidal.plan.nodes.source import Source
from tidal.plan.properties import Properties
from tidal.state.store import CheckpointStore

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.int64())])


def _messages(table: pa.Table, first_row: int) -> list:
    n = table.num_rows
    sync = np.arange(first_row, first_row + n, dtype=np.int64)
    cols = {name: table.column(name).combine_chunks() for name in table.column_names}
    return [EventBatch(sync, np.full(n, INFINITY, np.int64), cols), Punctuation(int(sync[-1]) + 1)]


def _stream(path, rows: int, stop: str = "eof", latency: float = 0.0) -> tidal.Stream:
    parser = LineParser(str(path), "csv", SCHEMA, ["k", "v"], {}, "fail")
    feed = TextFeed(FileBytes(str(path)), parser, _messages, stop=stop, latency=latency, max_rows=rows)
    source = tidal.Stream(Source(None, SCHEMA, Properties(start_edge_only=True), "tail", feed))
    return source.group_aggregate("k", n=agg.count(), s=agg.sum("v"))


def _rows(table: pa.Table) -> list[tuple]:
    return sorted(zip(*(c.to_pylist() for c in table.columns), strict=True))


@settings(max_examples=60, deadline=None)
@given(
    values=st.lists(st.tuples(st.integers(0, 3), st.integers(-9, 9)), min_size=1, max_size=30),
    rows=st.integers(1, 6),
    cut=st.integers(0, 25),
    newline=st.booleans(),
    crlf=st.booleans(),
)
def test_a_restored_feed_reads_exactly_the_rest(tmp_path_factory, values, rows, cut, newline, crlf):
    path = tmp_path_factory.mktemp("tail") / "f.csv"
    end = "\r\n" if crlf else "\n"
    path.write_bytes(("k,v" + end + end.join(f"{k},{v}" for k, v in values) + (end if newline else "")).encode())
    whole = _stream(path, rows).to_arrow()
    assert whole.num_rows > 0
    first = _stream(path, rows).query()
    first.run(max_messages=cut)
    state = pickle.loads(pickle.dumps(first.checkpoint()))  # positions are plain data
    first.close()
    second = _stream(path, rows).query()
    second.restore(state)
    assert second.run()
    second.close()
    combined = pa.concat_tables([first.sink.table(), second.sink.table()], promote_options="permissive")
    assert _rows(combined) == _rows(whole)
    # and the final values are the relational answer
    final = {}
    for k, v in values:
        n, s = final.get(k, (0, 0))
        final[k] = (n + 1, s + v)
    last = {}
    for row in whole.to_pylist():
        if row["other_time"] == INFINITY:
            last[row["k"]] = (row["n"], row["s"])
    assert last == final


def test_a_batch_is_cut_by_wall_clock_and_appended_lines_are_read(tmp_path):
    path = tmp_path / "g.csv"
    path.write_text("k,v\n1,1\n")
    got: list[tuple[float, int]] = []
    stream = _stream(path, rows=1000, stop="never", latency=0.05)
    q = stream.query()

    def append():
        time.sleep(0.3)
        with path.open("a") as fh:
            fh.write("2,5\n2,")  # a line is read only once its newline has arrived
            fh.flush()
            time.sleep(0.3)
            fh.write("6\n")

    writer = threading.Thread(target=append)
    writer.start()
    start = time.monotonic()
    while time.monotonic() - start < 3 and len(got) < 3:
        q.run(until=time.monotonic() + 0.05)
        table = q.sink.table()
        got = [(r["k"], r["s"]) for r in table.to_pylist() if r["other_time"] == INFINITY]
    writer.join()
    q.stop()
    q.close()
    # the first row is out long before the 1000-row batch is full; the appended rows follow
    assert got[:3] == [(1, 1), (2, 5), (2, 11)]


def _events_file(path, n: int = 500) -> pa.Table:
    rng = np.random.default_rng(3)
    t = np.sort(rng.integers(0, 5_000, n)) + rng.integers(0, 40, n)  # a little out of order
    table = pa.table({"t": t, "k": rng.integers(0, 5, n), "v": rng.integers(-9, 9, n)})
    path.write_text(
        "t,k,v\n"
        + "\n".join(f"{a},{b},{c}" for a, b, c in zip(*(col.to_pylist() for col in table.columns), strict=True))
        + "\n"
    )
    return table


def _windowed(s: tidal.Stream) -> tidal.Stream:
    return s.tumbling_window(500).group_aggregate("k", n=agg.count(), s=agg.sum("v"))


def test_from_tail_equals_the_same_rows_from_arrow(tmp_path):
    table = _events_file(tmp_path / "e.csv")
    tail = _windowed(tidal.from_tail(str(tmp_path / "e.csv"), "t", batch_rows=37, reorder_latency=50))
    arrow = _windowed(tidal.from_arrow(table, time="t", disorder="drop", reorder_latency=50))
    assert _rows(tail.to_arrow()) == _rows(arrow.to_arrow())


def test_from_tail_under_run_durable_resumes_at_its_byte_offset(tmp_path):
    _events_file(tmp_path / "e.csv")
    make = lambda: _windowed(tidal.from_tail(str(tmp_path / "e.csv"), "t", batch_rows=23, reorder_latency=50))  # noqa: E731
    expected = _rows(make().to_arrow())

    class Stop(Exception):
        pass

    def stop_at(seq):
        if seq == 5:
            raise Stop

    out, cp = tmp_path / "out", tmp_path / "cp.sqlite"
    with pytest.raises(Stop):
        make().run_durable(str(out), str(cp), every_messages=3, on_checkpoint=stop_at)
    with CheckpointStore(cp) as store:  # the checkpoint holds the feed's byte offset, part way through the file
        offsets = [p["offset"] for p in store.load("query")["positions"] if isinstance(p, dict)]
    assert offsets and 0 < offsets[0] < (tmp_path / "e.csv").stat().st_size
    assert _rows(make().run_durable(str(out), str(cp), every_messages=3)) == expected
