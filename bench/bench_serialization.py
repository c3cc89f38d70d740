"""Serialization (Trill paper section 7.5): Arrow IPC of tidal's batches against Avro rows (fastavro).

    python bench/bench_serialization.py [--quick] [--events N] [--avro-events N] [--repeat 3]

Data: a stream of events whose payload is two int64 fields (the paper's setting), in memory.
tidal's output batches (``sync_time, other_time, a, b`` as Arrow record batches, collected once
from a query with ``subscribe``) are written to an in-memory Arrow IPC stream and read back;
the peer writes the same events as Avro records (one dict per event, the row form a row-based
engine holds) to an in-memory Avro container with fastavro and reads them back as dicts.

Workloads: ``serialize``, ``deserialize`` and ``query + serialize`` (tidal runs a pass-through
query straight into the IPC writer; the peer turns the same rows into dicts and writes them).
Reading Arrow IPC from memory maps the buffers without copying, as Trill's deserializer reuses
the memory it reads into; the deserialize figure therefore includes touching every value (a sum
of each column) so that both sides look at all the data. Sizes: 10M events for Arrow and 1M
for Avro (2M / 200k with ``--quick``); rates are per event, so the sizes need not match.
"""

from __future__ import annotations

import argparse
import io
import sys

import fastavro
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from harness import Results, add_common_args

import tidal

AVRO_SCHEMA = fastavro.parse_schema(
    {
        "type": "record",
        "name": "Event",
        "fields": [
            {"name": "sync_time", "type": "long"},
            {"name": "other_time", "type": "long"},
            {"name": "a", "type": "long"},
            {"name": "b", "type": "long"},
        ],
    }
)


def make_data(n: int, seed: int = 9) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table(
        {"t": np.arange(n, dtype=np.int64), "a": rng.integers(0, 1 << 40, n), "b": rng.integers(0, 1 << 20, n)}
    )


def tidal_batches(table: pa.Table) -> list[pa.RecordBatch]:
    batches: list[pa.RecordBatch] = []
    tidal.from_arrow(table, time="t").select("a", "b").subscribe(batches.append)
    return batches


def ipc_write(batches: list[pa.RecordBatch]) -> pa.Buffer:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, batches[0].schema) as writer:
        for batch in batches:
            writer.write_batch(batch)
    return sink.getvalue()


def ipc_read_and_touch(buf: pa.Buffer) -> int:
    table = pa.ipc.open_stream(buf).read_all()
    return sum(pc.sum(table.column(c)).as_py() for c in table.column_names)


def avro_write(records: list[dict]) -> bytes:
    out = io.BytesIO()
    fastavro.writer(out, AVRO_SCHEMA, records)
    return out.getvalue()


def avro_read_and_touch(data: bytes) -> int:
    total = 0
    for rec in fastavro.reader(io.BytesIO(data)):
        total += rec["sync_time"] + rec["other_time"] + rec["a"] + rec["b"]
    return total


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=None, help="events for Arrow IPC (default 10M, 2M with --quick)")
    ap.add_argument("--avro-events", type=int, default=None, help="events for Avro (default 1M, 200k with --quick)")
    add_common_args(ap, "bench/results/serialization.json")
    args = ap.parse_args(argv)
    n = args.events or (2_000_000 if args.quick else 10_000_000)
    n_avro = min(n, args.avro_events or (200_000 if args.quick else 1_000_000))
    table = make_data(n)
    batches = tidal_batches(table)
    small = pa.Table.from_batches(tidal_batches(table.slice(0, n_avro)))
    records = small.to_pylist()
    results = Results()

    # both formats must carry the same events: decode each and compare on the Avro-sized prefix
    arrow_back = pa.ipc.open_stream(ipc_write(batches)).read_all().slice(0, n_avro)
    avro_back = list(fastavro.reader(io.BytesIO(avro_write(records))))
    if arrow_back.to_pylist() != avro_back:
        raise SystemExit("Arrow IPC and Avro round trips disagree")

    buf, data = ipc_write(batches), avro_write(records)
    results.run("serialize", "tidal", lambda: ipc_write(batches), n, args.repeat, format="Arrow IPC")
    results.run("serialize", "avro (fastavro)", lambda: avro_write(records), n_avro, args.repeat)
    results.run("deserialize", "tidal", lambda: ipc_read_and_touch(buf), n, args.repeat, format="Arrow IPC")
    results.run("deserialize", "avro (fastavro)", lambda: avro_read_and_touch(data), n_avro, args.repeat)

    def tidal_query_to_ipc():
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, batches[0].schema) as writer:
            tidal.from_arrow(table, time="t").select("a", "b").subscribe(writer.write_batch)
        return sink.getvalue().size

    def rows_query_to_avro():
        out = io.BytesIO()
        rows = ({"sync_time": t, "other_time": t + 1, "a": a, "b": b} for t, a, b in source_rows)
        fastavro.writer(out, AVRO_SCHEMA, rows)
        return out.tell()

    source_rows = list(zip(*(table.slice(0, n_avro).column(c).to_pylist() for c in ("t", "a", "b")), strict=True))
    results.run("query + serialize", "tidal", tidal_query_to_ipc, n, args.repeat, format="Arrow IPC")
    results.run("query + serialize", "avro (fastavro)", rows_query_to_avro, n_avro, args.repeat)
    results.note(f"bytes per event: Arrow IPC {buf.size / n:.1f}, Avro {len(data) / n_avro:.1f}")
    results.report(args.out, events=n, avro_events=n_avro, payload="two int64 fields", quick=args.quick)
    return 0


if __name__ == "__main__":
    sys.exit(main())
