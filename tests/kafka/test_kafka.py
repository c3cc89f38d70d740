"""The Kafka source and sink against a real broker (tansu): order across partitions, formats, bad
messages, positions, idle feeds, a lost broker, SQL, and the sink's exactly-once resume."""

from __future__ import annotations

import io
import json
import pickle
import random

import pyarrow as pa
import pytest

import tidal
from tidal import agg
from tidal.io.kafka import KafkaFeed

SCHEMA = pa.schema([("t", pa.int64()), ("k", pa.int64()), ("v", pa.int64())])


def _rows(table) -> list[tuple]:
    return sorted(zip(*(c.to_pylist() for c in table.columns), strict=True))


def _fill(broker, topic, partitions=3, n=400, seed=1):
    rng = random.Random(seed)
    broker.create_topic(topic, partitions)
    rows = []
    for p in range(partitions):
        t, part = 0, []
        for _ in range(n):
            t += rng.randint(0, 20)  # in order within the partition, interleaved across them
            part.append({"t": t, "k": rng.randint(0, 9), "v": rng.randint(-9, 9)})
        broker.produce(topic, part, partition=p)
        rows += part
    return rows


def _query(s):
    return s.tumbling_window(100).group_aggregate("k", agg.count(), total=agg.sum("v"))


def test_partitions_merge_in_time_order_and_match_the_same_rows_from_a_table(broker, topic):
    rows = _fill(broker, topic)
    stream = tidal.from_kafka(broker.address, topic, time_field="t", stop="latest", batch_size=97)
    events = stream.to_arrow()
    assert events.column("sync_time").to_pylist() == sorted(r["t"] for r in rows)
    table = pa.Table.from_pylist(sorted(rows, key=lambda r: r["t"]), schema=SCHEMA)
    expected = _query(tidal.from_arrow(table, time="t")).to_arrow()
    got = _query(tidal.from_kafka(broker.address, topic, time_field="t", stop="latest")).to_arrow()
    assert _rows(got) == _rows(expected)


@pytest.mark.parametrize("cut", [1, 4, 9, 17])
def test_a_checkpointed_query_reopens_the_topic_at_its_offsets(broker, topic, cut):
    _fill(broker, topic, n=300, seed=cut)

    def stream():
        return _query(tidal.from_kafka(broker.address, topic, time_field="t", stop="latest", batch_size=50))

    whole = stream().to_arrow()
    first = stream().query()
    first.run(max_messages=cut)
    state = pickle.loads(pickle.dumps(first.checkpoint()))
    second = stream().query()
    second.restore(state)
    assert second.run()
    combined = pa.concat_tables([t for t in (first.sink.table(), second.sink.table()) if t is not None])
    assert _rows(combined) == _rows(whole)


def test_formats_csv_avro_raw(broker, topic):
    from fastavro import schemaless_writer

    broker.create_topic(topic + "-csv")
    broker.produce(topic + "-csv", [b"1,a,2.5", b"2,b,3.5"])
    csv_rows = tidal.from_kafka(broker.address, topic + "-csv", format="csv", time_field="column0", stop="latest")
    assert csv_rows.to_arrow().select(["column1", "column2"]).to_pylist() == [
        {"column1": "a", "column2": 2.5},
        {"column1": "b", "column2": 3.5},
    ]
    avro = {"type": "record", "name": "r", "fields": [{"name": "t", "type": "long"}, {"name": "s", "type": "string"}]}
    values = []
    for rec in ({"t": 5, "s": "x"}, {"t": 9, "s": "y"}):
        buf = io.BytesIO()
        schemaless_writer(buf, avro, rec)
        values.append(buf.getvalue())
    broker.create_topic(topic + "-avro")
    broker.produce(topic + "-avro", values)
    got = tidal.from_kafka(
        broker.address, topic + "-avro", format="avro", avro_schema=avro, time_field="t", stop="latest"
    )
    assert got.to_arrow().select(["sync_time", "s"]).to_pylist() == [
        {"sync_time": 5, "s": "x"},
        {"sync_time": 9, "s": "y"},
    ]
    broker.create_topic(topic + "-raw")
    broker.produce(topic + "-raw", [b"\x00\x01", b"hello"])
    raw = tidal.from_kafka(broker.address, topic + "-raw", format="raw", stop="latest").to_arrow()
    assert raw.column("value").to_pylist() == [b"\x00\x01", b"hello"]


def test_a_malformed_message_is_named_or_skipped_to_the_dead_letter_file(broker, topic, tmp_path):
    broker.create_topic(topic)
    broker.produce(topic, [{"t": 1, "k": 1, "v": 1}, b"{not json", {"t": 2, "k": 1, "v": 2}])
    with pytest.raises(tidal.InputError, match=rf"kafka topic {topic} partition 0 offset 1: malformed json"):
        tidal.from_kafka(broker.address, topic, time_field="t", schema=SCHEMA, stop="latest").to_arrow()
    dead = tmp_path / "dead.json"
    stream = tidal.from_kafka(broker.address, topic, time_field="t", schema=SCHEMA, stop="latest",
                              on_error="skip", dead_letter=str(dead), report=lambda m: None)  # fmt: skip
    assert stream.to_arrow().column("v").to_pylist() == [1, 2]
    (rec,) = [json.loads(line) for line in dead.read_text().splitlines()]
    assert (rec["topic"], rec["partition"], rec["offset"], rec["value"]) == (topic, 0, 1, "{not json")


def test_a_row_behind_the_last_punctuation_is_late_counted_and_dropped(broker, topic):
    from tidal.core.messages import Completed, Punctuation

    broker.create_topic(topic, 2)
    broker.produce(topic, [{"t": 10, "k": 0, "v": 0}, {"t": 50, "k": 0, "v": 0}], partition=0)
    broker.produce(topic, [{"t": 60, "k": 0, "v": 0}], partition=1)
    reports, released = [], []
    feed = KafkaFeed(broker.address, topic, time_field="t", schema=SCHEMA, stop={0: 3, 1: 1}, batch_ms=50,
                     report=reports.append)  # fmt: skip
    for msg in feed.open():
        if isinstance(msg, Punctuation) and msg.time == 50:  # partition 1 is done: partition 0's watermark
            broker.produce(topic, [{"t": 5, "k": 0, "v": 0}], partition=0)
        elif isinstance(msg, Completed):
            break
        elif not isinstance(msg, Punctuation):
            released += msg.sync.tolist()
    assert released == [10, 50, 60]
    assert feed.late == 1 and any("late" in r and "offset 2" in r for r in reports), reports


def test_an_unbounded_feed_yields_while_idle(broker, topic):
    import itertools
    import time

    broker.create_topic(topic)
    feed = KafkaFeed(broker.address, topic, time_field="t", schema=SCHEMA, batch_ms=100)
    started = time.monotonic()
    first = list(itertools.islice(feed.open(), 3))
    feed.close()
    assert len(first) == 3 and time.monotonic() - started < 10
    assert all(len(m) == 0 for m in first)  # empty batches: no watermark yet


def test_a_lost_broker_is_reported_and_retried(tmp_path):
    import itertools

    from .broker import Broker

    b = Broker(tmp_path / "b.log").start()
    try:
        b.create_topic("t")
        b.produce("t", [{"t": 1, "k": 1, "v": 1}])
        reports = []
        feed = KafkaFeed(b.address, "t", time_field="t", schema=SCHEMA, batch_ms=100, report=reports.append)
        it = feed.open()
        next(it)
        b.stop()
        for _ in itertools.islice(it, 60):  # the feed keeps yielding (no stall) and reports the loss
            if any("lost brokers" in r for r in reports):
                break
        assert any("lost brokers" in r and b.address in r for r in reports), reports
        feed.close()
    finally:
        b.stop()


def test_sql_kafka_equals_the_same_query_over_a_file(broker, topic, tmp_path, monkeypatch):
    from tidal.sql import plan

    rows = _fill(broker, topic, partitions=2, n=200)
    path = tmp_path / "rows.json"
    path.write_text("".join(json.dumps(r) + "\n" for r in sorted(rows, key=lambda r: r["t"])))
    monkeypatch.chdir(tmp_path)
    over = (
        "SELECT k, COUNT(*) AS n, SUM(v) AS s, window_end FROM tumble(source => TABLE({}), "
        "time_field => DESCRIPTOR(t), window_length => INTERVAL 100 MICROSECONDS) GROUP BY k, window_end"
    )
    kafka = f"kafka(brokers => '{broker.address}', topic => '{topic}', time_field => DESCRIPTOR(t), stop => 'latest')"
    got = plan(over.format(kafka)).result()
    expected = plan(
        over.format("max_diff_watermark(source => TABLE('rows.json'), time_field => DESCRIPTOR(t))")
    ).result()
    assert _rows(got) == _rows(expected)
    filtered = plan(f"SELECT k, SUM(v) AS s FROM {kafka} WHERE v > 0 GROUP BY k").result()
    assert _rows(filtered) == _rows(plan("SELECT k, SUM(v) AS s FROM 'rows.json' WHERE v > 0 GROUP BY k").result())


def test_cli_output_kafka_writes_each_change_with_sys_undo(broker, topic, tmp_path, monkeypatch):
    from tidal.cli.main import main

    rows = _fill(broker, topic, partitions=2, n=50)
    monkeypatch.chdir(tmp_path)
    src = f"kafka(brokers => '{broker.address}', topic => '{topic}', time_field => DESCRIPTOR(t), stop => 'latest')"
    sql = f"SELECT k, COUNT(*) AS n FROM {src} GROUP BY k TRIGGER COUNTING 3"
    assert main(["query", sql, "--format", "stream-json", "--output", "expected.json"]) == 0
    broker.create_topic(topic + "-out")
    assert main(["query", sql, "--output", f"kafka://{broker.address}/{topic}-out"]) == 0
    got = [json.loads(v) for _, v, _ in broker.read(topic + "-out")]
    expected = [json.loads(line) for line in (tmp_path / "expected.json").read_text().splitlines()]
    assert any(r.get("sys.undo") for r in got) and len(rows) == 100
    key = lambda r: json.dumps(r, sort_keys=True)  # noqa: E731
    assert sorted(got, key=key) == sorted(expected, key=key)


def test_start_committed_resumes_where_the_group_left_off(broker, topic):
    broker.create_topic(topic)
    broker.produce(topic, [{"t": t, "k": 0, "v": t} for t in range(5)])
    first = tidal.from_kafka(broker.address, topic, time_field="t", schema=SCHEMA, stop="latest", group="g")
    assert first.to_arrow().column("v").to_pylist() == [0, 1, 2, 3, 4]
    broker.produce(topic, [{"t": t, "k": 0, "v": t} for t in range(5, 8)])
    again = tidal.from_kafka(
        broker.address, topic, time_field="t", schema=SCHEMA, start="committed", stop="latest", group="g"
    )
    assert again.to_arrow().column("v").to_pylist() == [5, 6, 7]
    with pytest.raises(tidal.InputError, match="consumer group"):
        tidal.from_kafka(broker.address, topic, schema=SCHEMA, start="committed")


def test_sql_on_error_skip_counts_and_writes_the_dead_letter_file(broker, topic, tmp_path, monkeypatch, capsys):
    from tidal.cli.main import main

    broker.create_topic(topic)
    broker.produce(topic, [{"t": 1, "k": 1, "v": 1}, b"oops", {"t": 2, "k": 1, "v": 2}])
    monkeypatch.chdir(tmp_path)
    src = f"kafka(brokers => '{broker.address}', topic => '{topic}', stop => 'latest', dead_letter => 'dead.json', "
    sql = f"SELECT SUM(v) AS s FROM {src} schema => 't BIGINT, k BIGINT, v BIGINT')"
    assert main(["query", sql, "--format", "batch-csv"]) == 2  # fails, naming the message
    assert f"kafka topic {topic} partition 0 offset 1" in capsys.readouterr().err
    assert main(["query", sql, "--format", "batch-csv", "--on-error", "skip"]) == 0
    out = capsys.readouterr()
    assert out.out.splitlines()[-1] == "3" and "skipped rows: 1" in out.err
    assert json.loads((tmp_path / "dead.json").read_text())["offset"] == 1


def test_positions_with_disorder_inside_partitions_resume_exactly(broker):
    """Rows out of order within a partition (by less than max_delay): a query stopped after any number
    of messages, checkpointed and restored, ends with the answer of the sorted rows (hypothesis)."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    topic = "disorder-positions"
    rng = random.Random(3)
    broker.create_topic(topic, 3)
    rows = []
    for p in range(3):
        part = [{"t": max(0, i * 10 + rng.randint(-15, 15)), "k": rng.randint(0, 5), "v": i} for i in range(150)]
        broker.produce(topic, part, partition=p)
        rows += part
    table = pa.Table.from_pylist(sorted(rows, key=lambda r: r["t"]), schema=SCHEMA)
    expected = _rows(_query(tidal.from_arrow(table, time="t")).to_arrow())

    def stream(batch):
        return _query(
            tidal.from_kafka(broker.address, topic, time_field="t", max_delay=40, stop="latest", batch_size=batch)
        )

    @settings(max_examples=12, deadline=None)
    @given(cut=st.integers(0, 30), batch=st.integers(5, 120), batch2=st.integers(5, 120))
    def check(cut, batch, batch2):
        first = stream(batch).query()
        first.run(max_messages=cut)
        state = pickle.loads(pickle.dumps(first.checkpoint()))
        first.close()
        second = stream(batch2).query()
        second.restore(state)
        assert second.run()
        second.close()
        # rows handed on before the checkpoint are skipped on re-reading, not taken for late ones
        assert [node.feed.late for node, _ in first.sources + second.sources] == [0, 0]
        parts = [t for t in (first.sink.table(), second.sink.table()) if t is not None]
        assert _rows(pa.concat_tables(parts)) == expected

    check()


@pytest.mark.parametrize("sent_before_crash", [0, 3, "all"])
def test_the_sink_resumes_a_commit_cut_short_by_a_crash_without_loss_or_repeats(broker, topic, tmp_path,
                                                                                  sent_before_crash):  # fmt: skip
    from tidal.io.kafka_sink import KafkaSink
    from tidal.state.store import CheckpointStore
    from tidal.stream.query import Query

    rng = random.Random(2)
    rows = [{"t": i * 7, "k": rng.randint(0, 4), "v": rng.randint(0, 9)} for i in range(400)]
    table = pa.Table.from_pylist(rows, schema=SCHEMA)
    stream = _query(tidal.from_arrow(table, time="t", batch_size=16, punctuate_every=50))
    expected = _rows(stream.to_arrow())
    broker.create_topic(topic)

    class Crash(Exception):
        pass

    def run(crash_at):
        sink = KafkaSink(broker.address, topic, query="q")

        def on_checkpoint(seq):
            staged = sink.committed["messages"]
            if crash_at is not None and seq >= crash_at and len(staged) > 3:
                # the checkpoint holding these messages is saved; they were not all sent
                if sent_before_crash == "all":
                    sink.publish()
                elif sent_before_crash:
                    sink.committed["messages"] = staged[:sent_before_crash]
                    sink.publish()
                raise Crash
            sink.publish()

        with CheckpointStore(tmp_path / "cp.sqlite") as store:
            Query([stream.node], [sink]).run_durably(store, "q", "plan", 4, on_checkpoint=on_checkpoint)

    with pytest.raises(Crash):
        run(crash_at=3)
    run(crash_at=None)
    messages = broker.read(topic)
    ids = [(h[1], h[2], h[3]) for _, _, h in messages]
    assert len(set(ids)) == len(ids)
    got = pa.Table.from_pylist([json.loads(v) for _, v, _ in messages])
    assert _rows(got.select(["sync_time", "other_time", "k", "count", "total"])) == expected


def test_json_messages_may_span_lines_but_hold_one_object_each(broker, topic):
    broker.create_topic(topic)
    broker.produce(
        topic, [b'{"t": 1,\n "k": 2, "v": 3}', {"t": 2, "k": 0, "v": 1}, b'{"t": 3, "k": 0, "v": 1}\n{"t": 4}']
    )
    with pytest.raises(tidal.InputError, match=rf"{topic} partition 0 offset 2: malformed json"):
        tidal.from_kafka(broker.address, topic, time_field="t", schema=SCHEMA, stop="latest").to_arrow()
    ok = tidal.from_kafka(broker.address, topic, time_field="t", schema=SCHEMA, stop={0: 2}).to_arrow()
    assert ok.select(["k", "v"]).to_pylist() == [{"k": 2, "v": 3}, {"k": 0, "v": 1}]


def test_times_before_1970_merge_in_order_and_times_out_of_range_are_named(broker, topic):
    """Negative times (-1 and 0 are no markers) merge across partitions like any others; a time outside the
    range of event times (int64's ends included: the largest is INFINITY) is an error naming its message
    (it was taken as is: 2**63 - 1 became an event ending before it started)."""
    broker.create_topic(topic, 2)
    p0 = [{"t": t, "k": 0, "v": i} for i, t in enumerate([-(2**40), -1, -1, 0, 3])]
    p1 = [{"t": t, "k": 1, "v": 10 + i} for i, t in enumerate([-(2**62), -5, -1, 0])]
    broker.produce(topic, p0, partition=0)
    broker.produce(topic, p1, partition=1)
    out = tidal.from_kafka(broker.address, topic, time_field="t", schema=SCHEMA, stop="latest", batch_size=2)
    got = out.to_arrow()
    assert got.column("sync_time").to_pylist() == sorted(r["t"] for r in p0 + p1)
    assert _rows(got.select(["t", "k", "v"])) == sorted((r["t"], r["k"], r["v"]) for r in p0 + p1)
    for bad in (2**63 - 1, 2**62, -(2**62) - 1, -(2**63)):
        name = f"{topic}-{bad < 0}-{abs(bad) % 1000}"
        broker.create_topic(name, 1)
        broker.produce(name, [{"t": 1, "k": 0, "v": 0}, {"t": bad, "k": 0, "v": 1}], partition=0)
        with pytest.raises(
            tidal.InputError, match=rf"kafka topic {name} partition 0 offset 1: time field 't' is {bad}"
        ):
            tidal.from_kafka(broker.address, name, time_field="t", schema=SCHEMA, stop="latest").to_arrow()
