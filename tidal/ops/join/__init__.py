"""The join family: temporal equi-join, outer joins, cross join, semi/anti-joins and clip.

Every operator here is defined per snapshot (CEDR): at each instant ``T`` the output
snapshot is a relational operation applied to the two inputs' snapshots at ``T``. Lifetimes
are half-open ``[s, e)``; ``e = INFINITY`` for a start edge whose end has not come.

* ``join(r, lk, rk, result)`` (inner equi-join): one output per pair ``(l, r)`` whose keys are
  equal and whose lifetimes overlap, alive over the intersection ``[max(ls, rs), min(le, re))``,
  payload ``result(l, r)`` (default: left fields, then right fields, a clashing right name
  gets the suffix ``_right``). A pair of intervals comes out as one interval; a pair with an
  edge comes out as a start edge at ``max(ls, rs)`` and an end edge when either side ends.
* ``cross_join(r, result)``: the join with every pair's keys equal.
* ``left_outer_join``: at every instant ``T``, the inner join of the snapshots at ``T``, plus
  every left row of ``L(T)`` that has no key-equal row in ``R(T)``, with the right fields null.
  A left event is thus padded exactly over the parts of its lifetime where no partner is
  alive. ``full_outer_join`` adds the right rows of ``R(T)`` with no partner in ``L(T)``,
  left fields null. With a ``result`` lambda, the missing side is a row whose fields are all
  None.
* ``where_exists(r, lk, rk)`` (semi-join): a left event is present at ``T`` iff some right
  event with an equal key is alive at ``T``; its lifetime is cut to those instants.
  ``where_not_exists`` (anti-join): present iff no such right event is alive.
* ``clip(r, lk, rk)`` (Trill's ClipEventDuration): each left event's lifetime ends at the start
  of the first right event with an equal key that starts strictly after the left event
  starts: ``[s, min(e, c))``. Right lifetimes' ends play no part.

Keys are a field name, a list of field names, or a row lambda. SQL's null rule applies: a key
with a null field equals nothing, so such a left event never joins, is always present for
``where_not_exists`` and in outer joins, never for ``where_exists``, and is never clipped.
On grouped inputs (``batch.key`` set), events only meet within the same group: the group
key's fields are prepended to the join key (group-key nulls are an ordinary value, as in
GROUP BY); outputs carry the left's group key and hash (the right's, for right-only rows of
a full outer join).

Physically, both inputs are merged in sync-time order: events at time ``t`` are processed only
once both sides have moved past ``t`` (by data or punctuation), ends before starts, so every
output is produced at its own sync time and leaves in order. State is a symmetric hash table:
per side and per key, a linked list of the events alive now (numba kernels over dense key
ids from :class:`~tidal.ops.keys.KeyIndex`), plus an endpoint queue of interval ends chosen
from the side's stream properties: none for start-edge-only inputs, a FIFO for constant
duration, a binary heap otherwise. End edges find their start edge by key, start time and a
64-bit payload hash. ``where_exists``/``where_not_exists`` keep the left events by key and only
a count of alive right events per key; a left event's first output waits until its time step
is complete (a right end and start at the same instant must not produce an empty piece).
``clip`` keeps only the unclipped left events. Output punctuation is the smaller of the two
inputs' punctuations.

Variants (``explain()`` names them): per input, *start edges only* (no endpoint queue, no
end-edge matching), *constant duration* (FIFO endpoint queue) or *general* (binary heap);
and for ``join(..., left_is_small=True)`` the *build-once* join: the right is held until the
finite left completes, the left's lifetimes are resolved and indexed by key once, right
intervals probe that index vectorised and are never stored (their outputs may start in the
future, so they pass through a reorder buffer), and right edges meet the left replayed into
the symmetric kernel as its intervals start. No output punctuation leaves before the left
completes.

The *merge join* (``join`` on one integer-like key field per side, both inputs sorted by it
within each sync time: ``Properties.sorted_by``, Trill's snapshot-sorted streams; or forced
with ``variant="merge"``) hashes nothing: each side keeps its alive rows as a list sorted by
key; a time step's events, already in key order, find their partners in the other side's
list by a forward galloping walk, meet the other side's new events by merging the two runs,
and join their own side's list in one linear merge. An input found out of key order within a
sync time is an error. Each step with new starts costs a pass over its side's alive rows, so
the variant suits many events per sync time (relational, progressive data).

In the hash join a right *point* (``[t, t+1)``) is never stored: the left events at ``t``
come first and those ending at ``t`` are gone, so it meets exactly the left events alive now,
each pair being ``[t, t+1)``. When the properties say so for the whole stream (an inner join
of left intervals of one constant duration ``d`` with right points), the *window join* goes
further: the left's events are ended by their start alone, so there is no endpoint queue and
nothing to remove. Left events are kept in arrival order, each linked to the previous one of
its key; one pass over a chunk's events in time order (choosing the next side arithmetically,
without a branch) links each left event and notes, for each right point, the latest left
event of its key before it; a second pass walks each point's chain, newest first, while
``t - start < d``. That is the hash kernel's output, row for row and in the same order.
An event of another kind on either input is an error (the declared durations are wrong).
When every payload field is 8 bytes wide, that walk writes the pairs' payload columns itself.

A ``result`` lambda is translated into one expression over both sides' columns where the
lambda compiler can (``explain()`` says ``columnar``), so outputs are built column by column;
otherwise (or for a batch needing Python semantics, such as nulls in arithmetic) it runs per
output row.

Partitioning (for a distributed backend): each input must be hash-partitioned by its key
fields; lambda keys name no field and a cross join has no key, so those ask for each whole
input in one partition (``((), ())``).

The package: :func:`JoinOp` (:mod:`.plan`) reads a logical :class:`JoinSpec` and picks one physical
variant, once: :mod:`.hash` (the symmetric hash join, every mode), :mod:`.build_once`, :mod:`.merge` or
:mod:`.window`, each over :class:`JoinBase` (:mod:`.base`). Kernel state lives in :mod:`.cores` (and
each variant's own module); the numba kernels in :mod:`.hash_kernels`, :mod:`.exists_kernel`,
:mod:`.merge_kernel`, :mod:`.window_kernels` and :mod:`.stage_kernels`; payload stores in :mod:`.store`,
keys in :mod:`.keys`, result lambdas in :mod:`.result`.
"""

from __future__ import annotations

from .base import JoinBase, JoinSpec
from .build_once import BuildOnceJoin
from .cores import _ClipCore, _Core, _ExistsCore, _JoinCore
from .hash import HashJoin
from .keys import key_spec, payload_hash
from .merge import MergeJoin, _MergeCore, merge_key_codes
from .plan import JoinOp, physical_join
from .result import null_row, output_names, result_types
from .window import WindowJoin, _WindowCore

__all__ = [
    "BuildOnceJoin",
    "HashJoin",
    "JoinBase",
    "JoinOp",
    "JoinSpec",
    "MergeJoin",
    "WindowJoin",
    "_ClipCore",
    "_Core",
    "_ExistsCore",
    "_JoinCore",
    "_MergeCore",
    "_WindowCore",
    "key_spec",
    "merge_key_codes",
    "null_row",
    "output_names",
    "payload_hash",
    "physical_join",
    "result_types",
]
