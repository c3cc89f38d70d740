"""Durable exactly-once SQL: ``tidal query ... --output PATH --state STATE``.

One atomic commit (:mod:`tidal.state.store`, after the output's own commit) holds the sources'
positions (a growing file's byte offset, a broker's offsets, or the number of messages a file
source delivered), every operator's state and the output's progress. Killed at any instant and
run again with the same command, the query restores the last commit, cuts the output back to
what that commit had written, and continues: the output ends up byte for byte as one
uninterrupted run writes it.

Output per format:

* ``stream-json`` and ``live-csv`` are written to ``--output`` as changes happen (readers see them
  at once); a commit syncs the file and records its length and checksum, with the changelog's
  pending retractions. A restart checks the committed prefix and cuts the rest.
* The batch formats (``batch-csv``, ``batch-json``, ``batch-table``, ``parquet``) keep the result's
  events in Arrow files under ``STATE.events/`` (:class:`~tidal.io.segments.SegmentSink`); at the
  end of input the answer is written to ``--output`` in one rename.
* The late-records file, when asked for, is a committed text file as well.

Refused with an error (not supported): ``--state`` without ``--output`` (what was printed cannot
be taken back after a crash), over standard input (a pipe cannot be re-read; use
``tail(path => ...)``), with ``--progressive`` or ``--engine spark``. A state file made by another
query is refused with both queries and plans shown.

``TIDAL_TEST_COMMIT_HOOK`` (see :mod:`tidal.state.store`) lets tests sleep or die inside a commit.
"""

from __future__ import annotations

import hashlib
import heapq
import json
import os
from pathlib import Path

from ..core.errors import PlanError
from ..io.segments import DurableSink, SegmentSink, TextFileSink
from ..state.store import CheckpointStore
from .logical import Scan
from .output import ChangelogSink, LiveCsv, StreamJson

STREAM_FORMATS = ("stream-json", "live-csv")
# Durable sinks for outputs named by a URL (``kafka://...``, ``postgresql://...``): a connector
# registers ``SINKS[scheme] = factory(sql_query, fmt, output, state_path) -> DurableSink``; the
# sink's ``progress()`` is committed with the query's state and given back to ``resume_at``, and a
# sink with a ``publish()`` method has it called after each checkpoint is saved (a Kafka sink sends
# the messages of the commit then, as tidal.io.kafka_sink does under ``to_kafka``).
SINKS: dict = {}
BATCH_FORMATS = ("batch-csv", "batch-json", "batch-table", "live-table", "parquet")
QUERY_NAME = "query"


class _ChangelogDurable(DurableSink):
    """A durable sink that writes the changelog's changes (``self.changelog``): its pending
    retractions (interval ends) and sequence go into the checkpoint beside the sink's own progress."""

    changelog: ChangelogSink

    def on_batch(self, batch) -> None:
        self.changelog.on_batch(batch)

    def on_punctuation(self, time: int) -> None:
        self.changelog.on_punctuation(time)

    def on_completed(self) -> None:
        self.changelog.on_completed()

    def _changelog_progress(self) -> dict:
        return {"pending": list(self.changelog.pending), "seq": self.changelog._seq}

    def _resume_changelog(self, position: dict) -> None:
        self.changelog.pending = [tuple(p) for p in position["pending"]]
        heapq.heapify(self.changelog.pending)
        self.changelog._seq = position["seq"]


class ChangelogFile(_ChangelogDurable):
    """stream-json or live-csv written to a committed text file; the checkpoint keeps the file's
    committed length and checksum and the changelog's pending retractions (interval ends)."""

    def __init__(self, path: str, fmt: str, names: list[str], labels: list[str]):
        self.file = TextFileSink(path)
        self.fmt, self.labels = fmt, labels
        self.changelog = ChangelogSink(names, labels, self._write)
        self.writer = None

    def _write(self, time: int, undo: bool, row: tuple) -> None:
        self.writer(time, undo, row)

    def commit(self):
        return self.file.commit()

    def progress(self) -> dict:
        return {"file": self.file.progress(), **self._changelog_progress()}

    def resume_at(self, position) -> None:
        fresh = not position
        self.file.resume_at(None if fresh else position["file"])
        if self.fmt == "stream-json":
            self.writer = StreamJson(self.file, self.labels)
        else:
            self.writer = LiveCsv(self.file, self.labels, header=fresh)
        if not fresh:
            self._resume_changelog(position)

    def close(self) -> None:
        self.file.close()


class KafkaChangelog(_ChangelogDurable):
    """``--output kafka://HOST:PORT/TOPIC`` under ``--state``: each change a stream-json message,
    staged with each commit and sent once the checkpoint is saved (:mod:`tidal.io.kafka_sink`), with
    the changelog's pending retractions in the checkpoint."""

    def __init__(self, output: str, names: list[str], labels: list[str], query: str):
        from ..io.kafka_sink import KafkaSink

        address, _, topic = output[len("kafka://") :].partition("/")
        if not address or not topic:
            raise PlanError("--output kafka://HOST:PORT/TOPIC")
        self.kafka = KafkaSink(address, topic, query=query)
        self.changelog = ChangelogSink(names, labels, StreamJson(self, labels))

    # StreamJson writes one JSON line per change: each becomes a message
    def write(self, text: str) -> None:
        for line in text.splitlines():
            self.kafka.write_bytes(line.encode())

    def flush(self) -> None:
        pass

    def commit(self):
        return self.kafka.commit()

    def publish(self) -> None:
        self.kafka.publish()

    def progress(self) -> dict:
        return {"kafka": self.kafka.progress(), **self._changelog_progress()}

    def resume_at(self, position) -> None:
        self.kafka.resume_at(position["kafka"] if position else None)
        if position:
            self._resume_changelog(position)

    def close(self) -> None:
        self.kafka.close()


def _kafka_sink(q, fmt: str, output: str, state: str) -> KafkaChangelog:
    if fmt not in (None, "stream-json"):
        raise PlanError("--output kafka://... writes changes (stream-json); drop --format")
    return KafkaChangelog(output, q.visible_names(), list(q.query.output_names), query=q.text.strip())


SINKS["kafka"] = _kafka_sink


def _postgres_sink(q, fmt: str, output: str, state: str):
    from .postgres_output import durable_sink  # psycopg only when a PostgreSQL output is asked for

    return durable_sink(q, fmt, output, state)


SINKS["postgresql"] = SINKS["postgres"] = _postgres_sink


class LateFile(DurableSink):
    """The late-records file (one JSON object a line), committed with the query's state."""

    def __init__(self, path: str):
        self.file = TextFileSink(path)

    def on_batch(self, batch) -> None:
        import pyarrow as pa

        rows = pa.Table.from_batches([batch.to_record_batch()]).drop_columns(["sync_time", "other_time"])
        for row in rows.to_pylist():
            self.file.write(json.dumps(row, default=str) + "\n")

    def commit(self):
        return self.file.commit()

    def progress(self) -> dict:
        return self.file.progress()

    def resume_at(self, position) -> None:
        self.file.resume_at(position or None)

    def close(self) -> None:
        self.file.close()


def _file_scans(node) -> list[Scan]:
    found = [node] if isinstance(node, Scan) and not node.live else []
    for child in node.inputs:
        found += _file_scans(child)
    return found


def _inputs(q) -> str:
    """The files a restart re-reads from their start, with their size and modification time: a file that
    changed since the state was saved would make the replay wrong, so it makes the plan another one."""
    lines = []
    for path in sorted({s.path for s in _file_scans(q.optimized)}):
        if os.path.isfile(path):
            st = os.stat(path)
            lines.append(f"  {path}: {st.st_size} bytes, modified {st.st_mtime_ns} ns")
    return "inputs read from their start on a restart:\n" + ("\n".join(lines) or "  none")


def _live_scans(node) -> list[Scan]:
    found = [node] if isinstance(node, Scan) and node.live else []
    for child in node.inputs:
        found += _live_scans(child)
    return found


def check_durable(q, fmt: str, output: str | None, progressive: bool = False, engine: str = "embedded") -> None:
    """Refuse what ``--state`` cannot make exactly-once, with the reason."""
    if output is None:
        raise PlanError(
            "--state needs --output PATH: output printed to the terminal or a pipe cannot be taken back "
            "after a crash, so exactly-once output to standard output is not supported"
        )
    if progressive:
        raise PlanError("--state with --progressive is not supported")
    if engine != "embedded":
        raise PlanError("--state with --engine spark is not supported (Spark keeps its own checkpoints)")
    for scan in _live_scans(q.optimized):
        if dict(scan.live).get("kind") == "stdin":
            raise PlanError(
                "--state over standard input is not supported: a pipe cannot be re-read after a restart, so "
                "the rows read since the last commit would be lost; write the input to a file and read it "
                "with tail(path => '...')"
            )


class DurableRun:
    """A SQL query run under ``--state``: :meth:`run` continues from the state file's last commit."""

    def __init__(self, q, fmt: str, output: str, state: str):
        check_durable(q, fmt, output)
        self.q, self.fmt, self.output, self.state = q, fmt, output, state
        scheme = output.split("://", 1)[0].lower() if "://" in output else None
        self.url = scheme is not None
        if scheme is not None:
            if scheme not in SINKS:
                known = ", ".join(f"{k}://" for k in sorted(SINKS)) or "none"
                raise PlanError(
                    f"--state: no exactly-once sink for {scheme}:// outputs (not supported; known: {known})"
                )
            self.sink = SINKS[scheme](q, fmt, output, state)
        elif fmt in STREAM_FORMATS:
            self.sink = ChangelogFile(output, fmt, q.visible_names(), list(q.query.output_names))
        else:
            self.sink = SegmentSink(Path(f"{state}.events"))
        self.late = LateFile(q.late_path) if q.late_path else None
        self.runner = None
        self.sequence = 0

    def summary(self, stream) -> str:
        return f"query: {self.q.text.strip()}\nformat: {self.fmt}\n{_inputs(self.q)}\nstream plan:\n{stream.explain()}"

    def run(self, every_seconds: float | None = 1.0, every_messages: int | None = None) -> bool:
        """Run until the input ends (True) or :meth:`stop` (False), committing as it goes."""
        stream, runner, sorts = self.q.prepare(self.sink, late_sink=self.late)
        self.runner = runner
        summary = self.summary(stream)
        key = f"{stream.explain()}\n{self.fmt}\n{len(sorts)}\n{_inputs(self.q)}"
        fingerprint = hashlib.sha256(key.encode()).hexdigest()[:16]
        try:
            with CheckpointStore(self.state) as store:
                publish = getattr(self.sink, "publish", None)
                self.sequence = runner.run_durably(
                    store,
                    QUERY_NAME,
                    fingerprint,
                    every_messages,
                    on_checkpoint=(lambda seq: publish()) if publish is not None else None,
                    every_seconds=every_seconds,
                    plan=summary,
                )
        finally:
            runner.close()
            for sink in (self.sink, self.late):
                if sink is not None and hasattr(sink, "close"):
                    sink.close()
        self.q.ran(sorts, runner)
        return all(runner.finished)  # (a signal that came after the end of input changes nothing)

    def stop(self) -> None:
        if self.runner is not None:
            self.runner.stop()

    def result(self):
        """The final answer of a batch format (after :meth:`run` returned True)."""
        import pyarrow as pa

        from .query import final_snapshot

        events = self.sink.table()
        if events is None:  # no output events at all: an empty answer of the plan's columns
            schema = self.q.stream().schema
            events = pa.Table.from_arrays(
                [pa.array([], pa.int64()), pa.array([], pa.int64())] + [pa.array([], f.type) for f in schema],
                names=["sync_time", "other_time", *schema.names],
            )
        return self.q.finish(final_snapshot(events))
