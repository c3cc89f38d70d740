"""Trill's QuantizeLifetime tests, re-expressed for tidal's ``quantize_lifetime``.

Inputs and expected results from Trill's test Sources/Test/SimpleTesting/Streamables/QuantizeLifetimeTests.tt
(generated for row/columnar and small-batch variants), MIT licence (Copyright (c) Microsoft
Corporation). Trill's tests use 50,000 events; the same patterns run here over 2,000 (the formulas
are per event), at several batch sizes.

Which Trill tests are ported here, and which are not and why: tests/trill/README.md.

"Stateless" variants build points with ``ToTemporalStreamable(o => o*10, o => o*10 + 1)``: the
same events as ``CreatePoint``, so they share the case here.

Convention difference (hopping intervals): tidal's ``quantize_lifetime(size, hop)`` gives
``[snap(s), snap(e-1) + size)``: an event lives until the end of the last window of ``size``
that it overlaps (so a quantized interval is alive exactly where ``hopping_window`` would put
events at each of its instants). Trill's moves the end only up to the next hop boundary
(``[snap(s), max(up(e), snap(s) + size))``, as its QuantizeLifetimePipe computes). For tumbling
quantization (``size == hop``) the two agree; for an interval longer than a point under hopping
quantization they differ: Trill keeps ``[10k, 10k + 100)`` as is with ``QuantizeLifetime(100, 10)``,
tidal gives ``[10k, 10k + 190)``. ``align="end"`` (issue 18) snaps up instead of down and is
checked here on the points of Trill's tumbling and hopping tests against Trill's window
convention (``HoppingWindowLifetime``).
"""

from __future__ import annotations

import pytest

from tidal.testing import assert_same_snapshots
from trill.events import BATCH_SIZES, check, interval, point, reference, stream

N = 2_000
R = range(N)

CASES = {  # name: (input, size, hop, offset, Trill's expected output)
    "tumbling_passthrough": ([interval(o * 10, o * 10 + 10, o) for o in R], 10, 10, 0, None),
    "tumbling_points": ([point(o * 10, o) for o in R], 10, 10, 0, [interval(o * 10, o * 10 + 10, o) for o in R]),
    "tumbling_consecutive": (
        [point(o, o) for o in R], 10, 10, 0, [interval(o - o % 10, o - o % 10 + 10, o) for o in R]),
    "hopping_points": ([point(o * 10, o) for o in R], 100, 10, 0, [interval(o * 10, o * 10 + 100, o) for o in R]),
    "hopping_consecutive": (
        [point(o, o) for o in R], 100, 10, 0, [interval(o - o % 10, o - o % 10 + 100, o) for o in R]),
    "tumbling_offset_passthrough": ([interval(o * 10 + 5, o * 10 + 15, o) for o in R], 10, 10, 5, None),
    "tumbling_offset_points": (
        [point(o * 10 + 5, o) for o in R], 10, 10, 5, [interval(o * 10 + 5, o * 10 + 15, o) for o in R]),
    "tumbling_offset_consecutive": (
        [point(o, o) for o in R], 10, 10, 5, [interval(o - (o + 5) % 10, o - (o + 5) % 10 + 10, o) for o in R]),
    "hopping_offset_points": (
        [point(o * 10 + 5, o) for o in R], 100, 10, 5, [interval(o * 10 + 5, o * 10 + 105, o) for o in R]),
    "hopping_offset_consecutive": (
        [point(o, o) for o in R], 100, 10, 5, [interval(o - (o + 5) % 10, o - (o + 5) % 10 + 100, o) for o in R]),
}  # fmt: skip


@pytest.mark.parametrize("batch", [7, None])
@pytest.mark.parametrize("case", sorted(CASES))
def test_quantize(case, batch):
    events, size, hop, offset, expected = CASES[case]
    got = stream(events, batch_size=batch).quantize_lifetime(size, hop, offset)
    check(got, events if expected is None else expected, reference(events).quantize_lifetime(size, hop, offset))


PASSTHROUGH = {  # Trill expects these unchanged
    "hopping_passthrough": ([interval(o * 10, o * 10 + 100, o) for o in R], 100, 10, 0),
    "hopping_offset_passthrough": ([interval(o * 10 + 5, o * 10 + 105, o) for o in R], 100, 10, 5),
}


@pytest.mark.parametrize("case", sorted(PASSTHROUGH))
def test_hopping_passthrough_differs(case):
    events, size, hop, offset = PASSTHROUGH[case]
    got = stream(events).quantize_lifetime(size, hop, offset)
    ref = reference(events).quantize_lifetime(size, hop, offset)
    assert_same_snapshots(got, ref)
    # tidal: each interval stays alive to the end of the last window it overlaps (size - hop later)
    assert_same_snapshots(got, [(s, e + size - hop, p) for s, e, p in reference(events).events])


@pytest.mark.parametrize("batch", BATCH_SIZES)
@pytest.mark.parametrize("case", ["tumbling_consecutive", "hopping_consecutive", "hopping_offset_consecutive"])
def test_align_end_is_trills_window_lifetime(case, batch):
    """On points, ``quantize_lifetime(..., align="end")`` is Trill's ``HoppingWindowLifetime``:
    each start moves up to the grid (``up(t)``, written out here) and lives one window."""
    events, size, hop, offset, _ = CASES[case]
    events = events[:300]

    def up(t):
        return t + (offset - t) % hop

    trill_window = [interval(up(t), up(t) + size, p) for _, t, _, p in events]
    got = stream(events, batch_size=batch).quantize_lifetime(size, hop, offset, align="end")
    check(got, trill_window, reference(events).quantize_lifetime(size, hop, offset, align="end"))
    window = stream(events, batch_size=batch).hopping_window(size, hop, offset, align="end")
    check(window, trill_window)
