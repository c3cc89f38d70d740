"""Checks a source's promise that its events are sorted by some fields within each sync time.

``from_arrow(..., sorted_by="k")`` declares Trill's snapshot-sorted property: at any one sync
time the events come in non-decreasing lexicographic order of the fields, nulls last. The
plan may then pick variants that rely on it (the merge join), so the promise is checked on
the way in, vectorised per batch and across batch boundaries; the first row breaking it is
an :class:`~tidal.core.errors.InputError` naming the row.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..core.batch import EventBatch
from ..core.errors import InputError, PlanError, describe_row
from ..core.time import MIN_TIME


def sorted_fields(sorted_by, schema: pa.Schema | None) -> tuple[str, ...]:
    """Normalise ``sorted_by`` (a field name or a list of them) and check the fields exist."""
    if sorted_by is None:
        return ()
    fields = (sorted_by,) if isinstance(sorted_by, str) else tuple(sorted_by)
    if not fields or not all(isinstance(f, str) for f in fields):
        raise PlanError(f"sorted_by takes a field name or a list of field names, got {sorted_by!r}")
    if schema is not None:
        missing = [f for f in fields if f not in schema.names]
        if missing:
            raise PlanError(f"sorted_by field(s) {missing} not in the input; fields are {schema.names}")
    return fields


def _order(prev: pa.Array, cur: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """Per position: is ``cur`` before ``prev`` (nulls last), and are they equal (nulls equal)."""
    pn = np.asarray(prev.is_null().to_numpy(zero_copy_only=False))
    cn = np.asarray(cur.is_null().to_numpy(zero_copy_only=False))
    less = np.asarray(pc.fill_null(pc.less(cur, prev), False).to_numpy(zero_copy_only=False))
    equal = np.asarray(pc.fill_null(pc.equal(cur, prev), False).to_numpy(zero_copy_only=False))
    return less | (~cn & pn), equal | (cn & pn)


def check_sorted(messages: Iterator, fields: tuple[str, ...]) -> Iterator:
    """Pass the messages through, raising at the first row out of ``fields`` order within its sync time."""
    last_sync = MIN_TIME
    last_row: dict[str, pa.Array] | None = None  # the previous batch's last row, one-element arrays
    offset = 0
    for msg in messages:
        if not isinstance(msg, EventBatch) or len(msg) == 0:
            yield msg
            continue
        n = len(msg)
        cols = {}
        for f in fields:
            if f not in msg.columns:
                raise PlanError(f"sorted_by field {f!r} not in the stream; fields are {msg.names}")
            col = msg.columns[f]
            cols[f] = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
        sync = np.concatenate([[last_sync], msg.sync]) if last_row is not None else msg.sync
        same = sync[1:] == sync[:-1]
        if same.any():
            bad = np.zeros(len(same), bool)
            tie = np.ones(len(same), bool)
            for f in fields:
                both = pa.concat_arrays([last_row[f], cols[f]]) if last_row is not None else cols[f]
                less, equal = _order(both.slice(0, len(both) - 1), both.slice(1))
                bad |= tie & less
                tie &= equal
            bad &= same
            if bad.any():
                i = int(np.argmax(bad)) + (0 if last_row is not None else 1)  # row index within msg
                row = {k: v[i].as_py() for k, v in msg.columns.items()}
                prev = {f: (cols[f][i - 1] if i > 0 else last_row[f][0]).as_py() for f in fields}
                raise InputError(
                    f"row {offset + i}: sorted_by={list(fields)} promises that order within each sync time, but "
                    f"at sync time {int(msg.sync[i])} this row's {{{describe_row({f: row[f] for f in fields})}}} "
                    f"comes after {{{describe_row(prev)}}}: {{{describe_row(row)}}}"
                )
        last_sync = int(msg.sync[-1])
        last_row = {f: cols[f].slice(n - 1, 1) for f in fields}
        offset += n
        yield msg
